"""Planning DP Monte Carlo, DP-LSW and DP-LSL (privrl.policy_evaluation.plan): the noise is the
estimators' own release step, the worst case and the stated visitation are labelled, and on the
clinic task the predictions are within 2x of the measured noise-to-signal."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privrl import DPLSL, DPLSW, PrivacyBudget, plan
from privrl.policy_evaluation import MonteCarloMechanism

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-6)


def test_monte_carlo_noise_is_the_estimators_mechanism():
    p = plan("dp-monte-carlo", n=10**4, F_max=1.0, groups=22, horizon=20, visits=4, budget=BUDGET, knobs=False)
    mech = MonteCarloMechanism.create(BUDGET, 1.0, n_groups=22, max_groups=21)   # k = H + 1 (terminal state)
    assert p.row("J").noise_std == mech.stds[0] / 10**4 and p.row("J").signal == 1.0
    assert p.row("V_g").noise_std == pytest.approx(math.sqrt(2) * mech.stds[1] / (10**4 * 4 / 22))
    alone = plan("dp-monte-carlo", n=10**4, F_max=1.0, budget=BUDGET, knobs=False)
    assert [r.name for r in alone.rows] == ["J"]
    assert alone.row("J").noise_std == MonteCarloMechanism.create(BUDGET, 1.0).stds[0] / 10**4


def test_monte_carlo_F_max_defaults_like_the_estimator():
    """Without F_max the return bound is R_max·H (γ = 1), as DPMonteCarlo's default."""
    p = plan("dp-monte-carlo", n=1000, horizon=20, r_max=0.5, budget=BUDGET, knobs=False)
    assert p.row("J").signal == 10.0
    with pytest.raises(Exception, match="F_max"):
        plan("dp-monte-carlo", n=1000, budget=BUDGET, knobs=False)   # γ = 1 and no length bound


def test_monte_carlo_verdict_flips_with_n_and_epsilon():
    def verdict(n: int, eps: float) -> str:
        return plan("dp-monte-carlo", n=n, F_max=1.0, groups=22, horizon=20, epsilon=eps, delta=1e-6,
                    knobs=False).verdict

    assert [verdict(n, 1.0) for n in (100, 2000, 10**5)] == ["hopeless", "marginal", "useful"]
    assert [verdict(2000, eps) for eps in (0.05, 1.0, 10.0)] == ["hopeless", "marginal", "useful"]


def test_lsw_plans_the_worst_case_unless_a_visitation_is_stated():
    est = DPLSW(budget=BUDGET, gamma=1.0, F_max=1.0)
    mech = est.release_mechanism(10**4, 1.0, 50)
    worst = plan("dp-lsw", n=10**4, states=50, F_max=1.0, budget=BUDGET, knobs=False)
    assert worst.row("V(s)").noise_std == mech.noise_bound(10**4) and "worst case" in worst.row("V(s)").basis
    assert plan("dp-lsw", n=10**6, states=50, F_max=1.0, budget=BUDGET, knobs=False).ratio == worst.ratio
    typical = plan("dp-lsw", n=10**4, states=50, F_max=1.0, visits=5, budget=BUDGET, knobs=False)
    assert typical.row("V(s)").noise_std == mech.noise_scale(np.full(50, 1000), 10**4)
    assert "|X_s| = n·m/S = 1000" in typical.row("V(s)").basis and typical.ratio < worst.ratio


def test_lsw_groups_are_one_hot_group_features():
    p = plan("dp-lsw", n=10**4, states=50, groups=5, F_max=1.0, visits=5, budget=BUDGET, knobs=False)
    phi = np.zeros((50, 5))
    phi[np.arange(50), np.arange(50) * 5 // 50] = 1.0
    mech = DPLSW(budget=BUDGET, gamma=1.0, F_max=1.0, features=phi).release_mechanism(10**4, 1.0)
    assert p.row("V(s)").noise_std == pytest.approx(mech.noise_scale(np.full(50, 1000), 10**4))


def test_lsl_states_its_ridge_shrinkage():
    """DP-LSL's practical lambda shrinks the values of a 750-state task: the ridge row says so."""
    p = plan("dp-lsl", n=10**4, states=750, F_max=1.0, visits=6, budget=BUDGET, params={"constants": "practical"},
             knobs=False)
    mech = DPLSL(budget=BUDGET, gamma=1.0, F_max=1.0, constants="practical").release_mechanism(10**4, 1.0, 750)
    ridge = p.row("ridge")
    assert ridge.noise_std == mech.lam / (2 * 10**4)
    assert ridge.signal == pytest.approx(6 / 750 / 750)          # Σ_s ρ_s |X_s|/m / d, ρ = 1/S, one-hot
    assert ridge.verdict == "hopeless" and p.verdict == "hopeless"


def test_a_visit_profile_sets_the_counts(tmp_path, capsys):
    """A public visit profile p (e.g. from a simulator): σ_X at |X_s| = n·p_s; the command line
    reads it from a .npy file; a profile of the wrong length is a one-line error."""
    from privrl import cli

    profile = np.linspace(0.01, 0.2, 50)
    p = plan("dp-lsw", n=10**4, states=50, F_max=1.0, visit_profile=profile, budget=BUDGET, knobs=False)
    mech = DPLSW(budget=BUDGET, gamma=1.0, F_max=1.0).release_mechanism(10**4, 1.0, 50)
    assert p.row("V(s)").noise_std == mech.noise_scale(np.round(10**4 * profile).astype(int), 10**4)
    assert p.public["visit_profile"] == {"states": 50, "visits": pytest.approx(profile.sum())}
    np.save(tmp_path / "profile.npy", profile)
    argv = ["plan", "dp-lsw", "--n", "1e4", "--states", "50", "--F-max", "1", "--epsilon", "1", "--delta", "1e-6",
            "--no-knobs", "--visit-profile", str(tmp_path / "profile.npy")]
    assert cli.main(argv) == 0 and p.text() in capsys.readouterr().out
    assert cli.main([*argv[:5], "40", *argv[6:]]) == 1
    err = capsys.readouterr().err
    assert "'--visit-profile' option must be an array of 40 shares" in err and err.count("\n") == 1
    with pytest.raises(Exception, match="one visitation assumption"):
        plan("dp-lsw", n=10**4, states=50, F_max=1.0, visits=3, visit_profile=profile, budget=BUDGET, knobs=False)
