"""LinOpt on the release seam: the structure of its releases with constant noise, secure noise,
tight calibration (spend, split, noise target), knobs that never touch privacy, UtilityWarning."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linear_mixture_cases import B1, MODEL, check_constant_noise_releases, contributions
from privrl import PrivacyBudget
from privrl.errors import InvalidParameterError, UtilityWarning
from privrl.linear_mixture import LinOptPO, LinOptVI
from privrl.linear_mixture import calibration as cal
from privrl.privacy import ConstantNoise, Ledger, Releaser, SecureNoise
from privrl.testing import use_noise


@pytest.mark.parametrize("calibration", ["tight", "sound"])
def test_central_release_is_prefix_sum_plus_constant_times_sigma_per_covering_node(calibration):
    """With ConstantNoise(c) the estimator's own privatizer releases, after t users, exactly
    ``Σ_{j≤t} item_j + popcount(t)·c·σ_{x,h}`` in every entry of every stream and step (symmetric for
    the Grams: the mirrored upper triangle), plus ``γ_h I`` on the Grams' diagonals; steps with σ = 0
    (tight: the last step's p-streams) get no noise."""
    K, c = 12, 0.75
    est = LinOptVI(n_episodes=K, budget=B1, calibration=calibration, counter="tree")
    reg = est.regularizer(MODEL)
    check_constant_noise_releases(reg, K, c, lambda t: bin(t).count("1"))     # popcount(t) covering nodes
    std = reg.plan.std
    if calibration == "tight":
        assert std[0, -1] == std[1, -1] == 0.0
    # the ledger holds one user's loss in count nodes of every (stream, step): the plan's events
    assert reg.rel.ledger.events == tuple(reg.plan.events())


def test_local_messages_are_items_plus_constant_times_sigma():
    est = LinOptPO(n_episodes=8, privatizer="local", budget=B1)
    reg = est.regularizer(MODEL)
    H, d1, d2 = MODEL.horizon, MODEL.d1, MODEL.d2
    reg.start(n_episodes=8, horizon=H, d1=d1, d2=d2, rel=Releaser(ConstantNoise(-2.0), Ledger()))
    items = reg.items(*contributions(np.random.default_rng(1), H, d1, d2, *reg.bounds))
    sent = reg.local_randomizer(items, ConstantNoise(-2.0))
    for j, (m, x) in enumerate(zip(sent, items)):
        np.testing.assert_allclose(m - x, -2.0 * reg.plan.std[j].reshape(-1, *([1] * (x.ndim - 1)))
                                   * np.ones_like(x), rtol=1e-12, atol=1e-12)


def test_fit_draws_every_noise_sample_from_the_seam():
    """use_noise(ConstantNoise(0)) gives the noiseless statistics with the *private* shift and
    ledger: the fit draws no noise of its own (a fit with zero injected noise and one with the
    default source record the same ledger)."""
    zero = use_noise(LinOptVI(n_episodes=30, budget=B1, constants="practical"), ConstantNoise(0.0))
    zero.fit(MODEL, rng=3)
    real = LinOptVI(n_episodes=30, budget=B1, constants="practical").fit(MODEL, rng=3)
    assert zero.privacy_ledger_ == real.privacy_ledger_
    assert not np.array_equal(zero.theta_p_, real.theta_p_)
    again = use_noise(LinOptVI(n_episodes=30, budget=B1, constants="practical"), ConstantNoise(0.0)).fit(MODEL, rng=3)
    np.testing.assert_array_equal(again.theta_p_, zero.theta_p_)


@pytest.mark.parametrize("counter", ["tree", "factorization"])
def test_secure_fit_runs_on_opendp_noise_and_refuses_a_seed(counter):
    pytest.importorskip("opendp")
    est = LinOptVI(n_episodes=15, budget=B1, secure=True, counter=counter)
    with pytest.raises(InvalidParameterError, match="'rng'"):
        est.fit(MODEL, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(MODEL)
    assert 0.99 <= est.privacy_spent() <= 1.0
    reg = est.regularizer(MODEL)
    reg.start(n_episodes=15, horizon=MODEL.horizon, d1=MODEL.d1, d2=MODEL.d2, rel=Releaser(SecureNoise(), Ledger()))
    first = reg._counters[0]
    assert isinstance(first.noise.source if counter == "tree" else first.source, SecureNoise)


@settings(max_examples=25, deadline=None)
@given(log_eps=st.floats(math.log(0.05), math.log(50.0)), log_delta=st.floats(math.log(1e-9), math.log(1e-3)),
       K=st.integers(2, 5000), central=st.booleans())
def test_tight_spends_between_99_and_100_percent_of_random_budgets(log_eps, log_delta, K, central):
    eps, delta = math.exp(log_eps), math.exp(log_delta)
    plan = cal.noise_plan("central" if central else "local", PrivacyBudget(epsilon=eps, delta=delta), "tight",
                          n_episodes=K, horizon=3, d1=2, d2=3)
    spent = Ledger(plan.events()).epsilon(delta)
    assert 0.99 * eps <= spent <= eps


@settings(max_examples=15, deadline=None)
@given(log_rho=st.floats(math.log(1e-3), math.log(100.0)), K=st.integers(2, 3000))
def test_tight_spends_the_rho_budget(log_rho, K):
    rho = math.exp(log_rho)
    plan = cal.noise_plan("central", PrivacyBudget(rho=rho), "tight", n_episodes=K, horizon=4, d1=3, d2=1)
    spent = Ledger(plan.events()).zcdp_rho()
    assert 0.99 * rho <= spent <= rho


def test_fitted_ledger_spends_the_budget():
    for privatizer in ("central", "local"):
        est = LinOptVI(n_episodes=40, privatizer=privatizer, budget=PrivacyBudget(epsilon=3.0, delta=1e-6),
                       constants="practical").fit(MODEL, rng=0)
        assert 0.99 * 3.0 <= est.privacy_spent() <= 3.0


def test_tight_noise_is_at_most_three_tenths_of_the_sound_noise_at_the_standard_budget():
    """Issue #11 §4 target at (1, 1e-5), E2 sizes (H = 5, d = 3), K = 2·10⁴: the sound rule spends
    μ ≈ 0.04 where μ ≈ 0.27 is allowed; tight uses all of it (and per-step sensitivities)."""
    kw = dict(n_episodes=20_000, horizon=5, d1=3, d2=3)
    tight, sound = (cal.noise_plan("central", B1, c, **kw) for c in ("tight", "sound"))
    assert tight.noise_std <= 0.3 * sound.noise_std
    assert sound.mu == pytest.approx(0.0415, abs=5e-4) and tight.mu == pytest.approx(0.2681, abs=5e-4)


def test_ledger_and_spend_identical_whatever_the_knobs():
    """The utility knobs (presets, β scale, Υ rule, shift, λ, α, tie-break, η) are post-processing:
    the ledger — and so ε spent — of a fit is the same for every choice."""
    knob_sets = [{}, {"constants": "practical"}, {"beta_scale": 0.01, "upsilon": "monte_carlo"},
                 {"noise_term_scale": 0.2}, {"shift_scale": 3.0, "lam": 7.0, "alpha": 0.5},
                 {"constants": "practical", "alpha": 0.001}]
    for cls, extra in ((LinOptVI, {"tie_break": "random"}), (LinOptPO, {"eta": 0.3})):
        for privatizer in ("central", "local"):
            ledgers, spent = [], []
            for knobs in knob_sets + [extra]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UtilityWarning)
                    est = cls(n_episodes=25, privatizer=privatizer, budget=B1, **knobs).fit(MODEL, rng=1)
                ledgers.append(est.privacy_ledger_)
                spent.append(est.privacy_spent())
            assert all(led == ledgers[0] for led in ledgers) and len(set(spent)) == 1


def test_saturated_output_warns_naming_the_knob():
    """Theory constants at ε = 1 and K = 60: every optimistic Q is clipped at H − h + 1 in the last
    episode (the policy is the tie-break rule): UtilityWarning naming constants='practical'. The
    practical preset at ε = 100 learns (no warning)."""
    with pytest.warns(UtilityWarning, match="constants='practical'"):
        est = LinOptVI(n_episodes=60, budget=B1).fit(MODEL, rng=0)
    assert est.saturated_
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        fine = LinOptVI(n_episodes=60, budget=PrivacyBudget(epsilon=100.0, delta=1e-5),
                        constants="practical").fit(MODEL, rng=0)
    assert not fine.saturated_
