"""Exact Gaussian calibration and the optimal split of a Gaussian composition across streams
(privrl.privacy.calibration: gaussian_multiplier, gaussian_mu, split_gaussian_streams)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privrl import PrivacyBudget
from privrl.errors import InvalidParameterError
from privrl.privacy import Ledger, Releaser, make_noise
from privrl.privacy.accounting import gaussian_delta
from privrl.privacy.calibration import (
    calibrate_gaussian,
    gaussian_mu,
    gaussian_multiplier,
    split_gaussian_streams,
)


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(1e-3, 50.0), delta=st.floats(1e-12, 0.1), k=st.integers(1, 500))
def test_exact_calibration_spends_between_99_and_100_percent(eps, delta, k):
    """k releases at the calibrated σ: the ledger's ε is in [0.99, 1.0] of the target, never above."""
    sigma = calibrate_gaussian(eps, delta, compositions=k)
    led = Ledger()
    rel = Releaser(make_noise(0), led)
    for _ in range(k):
        rel.gaussian(0.0, sensitivity=1.0, std=sigma)
    spent = led.epsilon(delta)
    assert 0.99 * eps <= spent <= eps


@pytest.mark.parametrize("eps", [1e-300, 1e-12, 0.1, 1.0, 1000.0, 1e6])
def test_calibration_answers_at_any_epsilon_and_never_overshoots(eps):
    nm = gaussian_multiplier(eps, 1e-5)
    assert math.isfinite(nm) and nm > 0
    assert gaussian_delta(nm, eps) <= 1e-5
    assert gaussian_delta(nm * (1 - 1e-6), eps * (1 - 1e-6)) > 1e-5  # tight: slightly less noise fails
    spent = Ledger([_gaussian_event(nm)]).epsilon(1e-5)
    assert spent <= eps


def _gaussian_event(nm):
    from dp_accounting import GaussianDpEvent

    return GaussianDpEvent(nm)


def test_gaussian_mu_exact_for_both_budget_types():
    # ρ-zCDP: the Gaussian mechanism with μ = Δ/σ is (μ²/2)-zCDP exactly (Bun & Steinke 2016)
    assert gaussian_mu(PrivacyBudget(rho=0.5)) == pytest.approx(1.0)
    # (1, 1e-5): the analytic Gaussian σ = 3.7306 (Balle & Wang 2018), so μ = 1/3.7306
    assert gaussian_mu(PrivacyBudget(epsilon=1.0, delta=1e-5)) == pytest.approx(1 / 3.7306, rel=1e-4)
    assert gaussian_mu(PrivacyBudget.non_private()) == math.inf
    with pytest.raises(InvalidParameterError, match="'budget' parameter of gaussian_mu"):
        gaussian_mu(PrivacyBudget(epsilon=1.0))


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_split_meets_mu_exactly_and_minimises_the_weighted_noise(data):
    k = data.draw(st.integers(1, 5))
    sens = np.array(data.draw(st.lists(st.floats(0.01, 10.0), min_size=k, max_size=k)))
    w = np.array(data.draw(st.lists(st.floats(0.01, 10.0), min_size=k, max_size=k)))
    n = np.array(data.draw(st.lists(st.integers(1, 20), min_size=k, max_size=k)), dtype=float)
    mu = data.draw(st.floats(0.05, 5.0))
    stds = split_gaussian_streams(mu, sens, weights=w, counts=n)
    used = np.sum(n * sens**2 / stds**2)
    assert used <= mu**2 * (1 + 1e-9) and used >= mu**2 * (1 - 1e-9)
    # any other split meeting the same μ has a weighted noise Σ w σ at least as large
    other = sens * data.draw(st.lists(st.floats(0.1, 10.0), min_size=k, max_size=k))
    other = other * math.sqrt(np.sum(n * sens**2 / other**2)) / mu  # rescaled onto the constraint
    assert np.dot(w, stds) <= np.dot(w, other) * (1 + 1e-9)


def test_split_equal_weights_goes_as_sensitivity_to_two_thirds_and_zero_sensitivity_is_free():
    stds = split_gaussian_streams(1.0, [1.0, 8.0, 0.0])
    assert stds[1] / stds[0] == pytest.approx(8.0 ** (2 / 3))
    assert stds[2] == 0.0
    assert np.all(split_gaussian_streams(math.inf, [1.0, 2.0]) == 0.0)
    with pytest.raises(InvalidParameterError, match="'weights' parameter of split_gaussian_streams"):
        split_gaussian_streams(1.0, [1.0], weights=[0.0])
