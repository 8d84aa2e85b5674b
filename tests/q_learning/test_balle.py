"""The Balle-style baseline's regressions (privrl.q_learning.balle) are DP-LSW's: on the same
one-step data and the same noise stream, :func:`lsw_regression` releases exactly what the
policy-evaluation family's DPLSW (and, without a budget, LSW) fitted there does, with the same
ledger event. Both stand on the shared layer ``privrl.least_squares``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privrl._rng import child_rngs
from privrl.data import TrajectoryDataset
from privrl.policy_evaluation import DPLSW, LSW
from privrl.privacy import PrivacyBudget
from privrl.privacy.noise import make_noise
from privrl.q_learning.balle import lsw_regression

BINS, F_MAX, SEED = 6, 5.0, 7


def _one_step_data(rng: np.random.Generator, m: int = 80) -> tuple[np.ndarray, np.ndarray, TrajectoryDataset]:
    states = rng.integers(BINS, size=m)
    targets = rng.uniform(0.0, F_MAX, size=m)
    data = TrajectoryDataset(states, np.zeros(m, int), targets, states, np.arange(m + 1), n_states=BINS,
                             n_actions=1, reward_bounds=(0.0, F_MAX))
    return states, targets, data


@pytest.mark.parametrize("calibration", ["tight", "sound", "paper"])
def test_a_private_regression_is_dplsw_on_one_step_trajectories(calibration):
    states, targets, data = _one_step_data(np.random.default_rng(0))
    budget = PrivacyBudget(epsilon=0.9, delta=1e-4)
    noise = make_noise(child_rngs(np.random.default_rng(SEED), "privacy")["privacy"])
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        theta, ledger = lsw_regression(states, targets, BINS, F_MAX, budget, calibration, noise, "test")
    est = DPLSW(budget=budget, gamma=0.0, r_max=F_MAX, F_max=F_MAX, record_terminal=False, calibration=calibration)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        est.fit(data, rng=np.random.default_rng(SEED))
    np.testing.assert_array_equal(theta, est.values_)   # the same draws: equal to the last bit
    assert ledger.events == est.privacy_ledger_.events and len(ledger.events) == 1
    # the same warnings (the bench flags a cell by them), each naming its own owner
    said = [(w.category, str(w.message).split(": ", 1)[1]) for w in ours]
    assert said and said == [(w.category, str(w.message).split(": ", 1)[1]) for w in theirs]
    assert not np.allclose(theta, lsw_regression(states, targets, BINS, F_MAX, PrivacyBudget.non_private(),
                                                 calibration, None, "test")[0])   # noise was added


def test_a_non_private_regression_is_lsw():
    states, targets, data = _one_step_data(np.random.default_rng(1))
    theta, ledger = lsw_regression(states, targets, BINS, F_MAX, PrivacyBudget.non_private(), "tight", None, "test")
    est = LSW(gamma=0.0, r_max=F_MAX, F_max=F_MAX, record_terminal=False).fit(data)
    np.testing.assert_array_equal(theta, est.values_)
    assert ledger.events == ()
    means = [targets[states == s].mean() for s in range(BINS)]   # one-hot, uniform weights: the bins' means
    np.testing.assert_allclose(theta, means, rtol=1e-12)
