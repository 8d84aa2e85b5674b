"""DP-LSW / DP-LSL on the release seam (issue #14): the release has exactly the structure of its
derivation under constant noise, the audits' scaled noise scales only the noise, secure noise
works, nothing else in the family draws privacy noise, the utility knobs leave the ledger alone,
and degenerate releases raise a UtilityWarning."""

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import privrl.policy_evaluation as family
from privrl.data.features import state_aggregation
from privrl.envs.chain import sample_chain
from privrl.errors import InvalidParameterError, UtilityWarning
from privrl.policy_evaluation import DPLSL, DPLSW, LSL, LSW, DPLSLMechanism, DPLSWMechanism
from privrl.privacy import ConstantNoise, NumpyNoise, PrivacyBudget, ScaledNoise
from privrl.testing import use_noise

DATA = sample_chain(3000, n_states=10, rng=4)
PHI = state_aggregation(10, 2)
BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
W = np.full(10, 0.1)


def _stats(est):
    p = est._validated()
    return est._prepare(DATA, p)[0]


@pytest.mark.parametrize("kind", ["lsw", "lsl"])
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_constant_noise_gives_theta_plus_c_sigma(kind, calibration):
    """θ̂ = θ_X + c·σ_X in every coordinate, σ_X = α C √ψ_X as derived by the mechanism (Algorithms
    1–2, line 4); one draw, one event equal to the mechanism's."""
    if kind == "lsw":
        est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, calibration=calibration)
        mech = DPLSWMechanism.create(features=PHI, weights=W, F_max=1.0, epsilon=1.0, delta=1e-5,
                                     calibration=calibration)
    else:
        est = DPLSL(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, lam=40.0, calibration=calibration)
        mech = DPLSLMechanism.create(features=PHI, relevance=W, lam=40.0, F_max=1.0, epsilon=1.0, delta=1e-5,
                                     calibration=calibration)
    source = ConstantNoise(-1.5)
    use_noise(est, source).fit(DATA, rng=0)
    stats = _stats(est)
    theta, sigma = mech.solve(stats), mech.noise_scale(stats.counts, stats.n_trajectories)
    np.testing.assert_allclose(est.theta_, theta - 1.5 * sigma, rtol=1e-12, atol=1e-15)
    assert source.calls == 1
    assert est.privacy_ledger_.events == (mech.event,)
    sg = mech.smoothed
    if kind == "lsw":   # σ_X = α F_max ‖(Γ^{1/2}Φ)^†‖ √ψ (ψ rounded up to e^{jβ} under tight)
        from privrl.least_squares.smooth_sensitivity import psi_w

        psi = sg.round_psi(psi_w(stats.counts, W, sg.beta))
        assert sigma == pytest.approx(sg.alpha * 1.0 * math.sqrt(1 / 0.2) * math.sqrt(psi), rel=1e-12)


def test_infinite_budget_draws_nothing_and_equals_the_baseline():
    source = ConstantNoise(3.0)
    est = use_noise(DPLSW(budget=PrivacyBudget.non_private(), gamma=0.9, features=PHI, F_max=1.0), source)
    est.fit(DATA, rng=0)
    assert source.calls == 0
    np.testing.assert_array_equal(est.theta_, LSW(gamma=0.9, features=PHI, F_max=1.0).fit(DATA).theta_)
    lsl = DPLSL(budget=PrivacyBudget.non_private(), gamma=0.9, features=PHI, F_max=1.0, lam=3.0).fit(DATA, rng=0)
    np.testing.assert_array_equal(lsl.theta_, LSL(gamma=0.9, lam=3.0, features=PHI, F_max=1.0).fit(DATA).theta_)


def test_scaled_noise_scales_only_the_noise():
    """The audits' negative control: ScaledNoise(·, 0.1) gives a tenth of the same noise, same claim."""
    base = DPLSW(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0)
    plain = use_noise(DPLSW(**base.get_params()), NumpyNoise(5)).fit(DATA, rng=0)
    scaled = use_noise(DPLSW(**base.get_params()), ScaledNoise(NumpyNoise(5), 0.1)).fit(DATA, rng=0)
    exact = LSW(gamma=0.9, features=PHI, F_max=1.0).fit(DATA).theta_
    np.testing.assert_allclose(scaled.theta_ - exact, 0.1 * (plain.theta_ - exact), rtol=1e-10, atol=1e-15)
    assert scaled.privacy_ledger_.events == plain.privacy_ledger_.events
    mech = DPLSWMechanism.create(features=PHI, weights=W, F_max=1.0, epsilon=1.0, delta=1e-5)
    stats = _stats(base)
    theta = mech.solve(stats)
    a = mech.release(theta, stats.counts, 3000, noise=NumpyNoise(2))
    b = mech.release(theta, stats.counts, 3000, noise=ScaledNoise(NumpyNoise(2), 0.01))
    np.testing.assert_allclose(b.value - theta, 0.01 * (a.value - theta), rtol=1e-10, atol=1e-15)
    assert a.event == b.event == mech.event


def test_secure_noise_runs_and_refuses_a_seed():
    pytest.importorskip("opendp")
    est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, secure=True).fit(DATA)
    assert np.all(np.isfinite(est.theta_)) and len(est.privacy_ledger_) == 1
    with pytest.raises(InvalidParameterError, match="'rng'"):
        DPLSW(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, secure=True).fit(DATA, rng=1)


def test_nothing_else_in_the_family_draws_privacy_noise():
    """Issue #14 §1: the package draws noise only through release_with_event / the Releaser (the
    fit's ``rel.gaussian`` / ``rel.laplace``)."""
    root = Path(family.__file__).parent
    pattern = re.compile(r"standard_normal|\.normal\(|(?<!\brel)\.laplace\(|(?<!\brel)\.gaussian\(")
    hits = [f"{p.name}:{i + 1}" for p in root.glob("*.py")
            for i, line in enumerate(p.read_text().splitlines()) if pattern.search(line)]
    assert hits == []


@pytest.mark.parametrize("cls,knobs", [
    (DPLSW, [{"constants": "theory"}, {"constants": "practical"}, {"smoothing": "appendix_a"}]),
    (DPLSL, [{"constants": "theory"}, {"constants": "practical"}, {"lam": 5.0}, {"lam": 500.0},
             {"constants": "practical", "lam": None}]),
])
def test_ledger_and_epsilon_spent_do_not_depend_on_the_utility_knobs(cls, knobs):
    ledgers, spent = [], []
    for knob in knobs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            est = cls(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, **knob).fit(DATA, rng=0)
        ledgers.append(est.privacy_ledger_.events)
        spent.append(est.privacy_spent())
    assert all(led == ledgers[0] for led in ledgers)
    assert all(s == spent[0] for s in spent) and 0.99 <= spent[0] <= 1.0


def test_practical_lambda_is_public_and_recorded():
    est = DPLSL(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, constants="practical").fit(DATA, rng=0)
    alpha = DPLSLMechanism.create(features=PHI, relevance=W, lam=1.0, F_max=1.0, epsilon=1.0, delta=1e-5,
                                  constants="practical").smoothed.alpha
    lam_min = 2 * 0.1   # ‖Φ‖² ‖ρ‖∞ for pairs
    assert est.lam_ == pytest.approx(lam_min + 5.0 * 0.1 * alpha**0.4 * 3000**0.6, rel=1e-12)
    theory = DPLSL(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0).fit(DATA, rng=0)
    assert theory.lam_ == pytest.approx(lam_min + math.sqrt(3000), rel=1e-12)


def test_degenerate_releases_warn_and_useful_ones_do_not():
    small = sample_chain(20, n_states=10, rng=1)
    with pytest.warns(UtilityWarning, match="no better than the constant F_max/2") as rec:
        DPLSW(budget=PrivacyBudget(epsilon=0.1, delta=1e-5), gamma=0.9, features=PHI, F_max=1.0,
              calibration="paper").fit(small, rng=0)
    assert not any(re.search(r"\d+\.\d{3,}", str(w.message)) for w in rec)  # no σ or data values quoted
    with pytest.warns(UtilityWarning, match="shrunk towards zero by the ridge term"):
        DPLSL(budget=BUDGET, gamma=0.9, features=PHI, F_max=1.0, lam=1e6).fit(DATA, rng=0)
    big = sample_chain(50_000, n_states=10, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est = DPLSW(budget=PrivacyBudget(epsilon=1.0, delta=1e-10), gamma=0.9, features=PHI, F_max=1.0).fit(big, rng=0)
    assert np.all(np.abs(est.values_ - LSW(gamma=0.9, features=PHI, F_max=1.0).fit(big).values_) < 0.1)
