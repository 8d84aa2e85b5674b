"""The 'no better than the zero estimate' UtilityWarning of the private value estimates, on
FrozenLake 8×8 (γ = 0.99, most true values below 0.1: the zero estimate's RMSE is 0.118) — the
bench's ``frozenlake-pe`` task — and its diagnostics (post-processing of the release only)."""

import functools
import math
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.errors import UtilityWarning
from privrl.least_squares.diagnostics import clipped_error_floor, noise_exceeds_signal
from privrl.policy_evaluation import DPLSL, DPMonteCarlo

ZERO_MSG = "no better than the zero estimate"


@functools.lru_cache(maxsize=2)
def _frozenlake(n: int):
    from privrl.bench.tasks import get_task

    inst = get_task("frozenlake-pe").build({"n": n}, np.random.default_rng(0))
    return inst.input.dataset, inst.truth.values


def _fit(est, data, seed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        est.fit(data, rng=seed)
    return est, [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]


def _rmse(values, truth):
    return math.sqrt(np.mean((values - truth) ** 2))


def test_clipped_error_floor_limits_and_monte_carlo():
    f = 2.0
    floor = clipped_error_floor(np.array([0.0, 1e-3, 1.0, 1e9]), f)
    assert floor[0] == 0.0
    assert floor[1] == pytest.approx(0.5e-6, rel=1e-3)          # s ≪ F: s²/2 (a value at an edge)
    assert floor[3] == pytest.approx(f * f / 4, rel=1e-3)       # s → ∞: 0 or F half the time each, V = F/2
    rng = np.random.default_rng(0)                                 # s = F/2: the minimum over V, by simulation
    e = rng.normal(0.0, 1.0, 400_000)
    sims = [np.mean((np.clip(v + e, 0, f) - v) ** 2) for v in np.linspace(0, f, 41)]
    assert floor[2] == pytest.approx(min(sims), rel=0.02)


def test_noise_exceeds_signal():
    values = np.array([0.5, 0.5, 0.0, 0.0])
    assert not noise_exceeds_signal(values, 0.01)        # signal (0.25 − 0.01)/2 ≫ noise 0.01
    assert noise_exceeds_signal(values, 0.2)             # signal 0.025 < noise 0.2
    assert noise_exceeds_signal(values, 0.2, error=0.03) and not noise_exceeds_signal(values, 0.2, error=0.02)


def test_dp_monte_carlo_warns_when_no_better_than_zero():
    """n = 2000 trajectories, (1, 1e-5): the rare states' group values are near-random in [0, 1]
    (RMSE 0.25–0.30 > the zero estimate's 0.118) and the warning says so; n = 10⁴ at ε = 10 is
    better than zero (RMSE ≤ 0.07) and quiet."""
    for seed in range(3):
        data, truth = _frozenlake(2000)
        est, msgs = _fit(DPMonteCarlo(budget=PrivacyBudget(1.0, 1e-5), gamma=0.99, F_max=1.0, groups=np.arange(64)),
                         data, seed)
        assert _rmse(est.values_, truth) > _rmse(0.0, truth)
        assert any(ZERO_MSG in m for m in msgs) and est.utility_["groups_no_better_than_zero"]
        data, truth = _frozenlake(10_000)
        est, msgs = _fit(DPMonteCarlo(budget=PrivacyBudget(10.0, 1e-5), gamma=0.99, F_max=1.0, groups=np.arange(64)),
                         data, seed)
        assert _rmse(est.values_, truth) < 0.75 * _rmse(0.0, truth)
        assert msgs == [] and not est.utility_["groups_no_better_than_zero"]


def test_dp_lsl_warns_when_no_better_than_zero():
    """n = 10⁴: the paper calibration at ε = 0.3 (RMSE 0.29 > 0.118) warns — its values below 0
    reveal the noise; the tight calibration at ε = 10 (RMSE 0.077) is quiet."""
    data, truth = _frozenlake(10_000)
    bad, msgs = _fit(DPLSL(budget=PrivacyBudget(0.3, 1e-5), calibration="paper", constants="practical", gamma=0.99,
                           F_max=1.0), data, 1)
    assert _rmse(bad.values_, truth) > 2 * _rmse(0.0, truth)
    assert any(ZERO_MSG in m for m in msgs) and bad.utility_["no_better_than_zero"]
    good, msgs = _fit(DPLSL(budget=PrivacyBudget(10.0, 1e-5), constants="practical", gamma=0.99, F_max=1.0), data, 0)
    assert _rmse(good.values_, truth) < 0.75 * _rmse(0.0, truth)
    assert msgs == [] and not good.utility_["no_better_than_zero"]
