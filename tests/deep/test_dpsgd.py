"""The shared DP-SGD step (privrl.deep.dpsgd): per-unit sums and clipping bound every unit's
contribution, the release's event and sensitivity, and the subsampled accounting against dp-accounting."""

import math

import numpy as np
import pytest

from privrl.deep.dpsgd import (
    SubsampledGaussianSteps,
    calibrate_noise_multiplier,
    clip_factors,
    clipped_sum,
    clipped_sum_sensitivity,
    dpsgd_epsilon,
    dpsgd_event,
    poisson_sample,
    release_clipped_sum,
    unit_sums,
)
from privrl.errors import InvalidParameterError
from privrl.privacy import ConstantNoise, Ledger, NumpyNoise, Releaser
from privrl.privacy.draws import release_problems


def test_unit_sums_add_each_units_rows():
    g = np.arange(12.0).reshape(6, 2)
    out = unit_sums(g, np.array([0, 2, 0, 2, 2, 1]), 4)
    np.testing.assert_array_equal(out, [[4, 6], [10, 11], [16, 19], [0, 0]])
    with pytest.raises(InvalidParameterError, match="'units'"):
        unit_sums(g, np.array([0, 1, 2, 3, 4, 5]), 4)


def test_clipping_bounds_every_units_contribution():
    rng = np.random.default_rng(0)
    grads = rng.normal(0.0, 5.0, (200, 7))
    units = rng.integers(0, 20, 200)
    per_unit = unit_sums(grads, units, 20)
    clipped = per_unit * clip_factors((per_unit ** 2).sum(1), 1.5)[:, None]
    assert np.all(np.linalg.norm(clipped, axis=1) <= 1.5 * (1 + 1e-12))
    small = per_unit / 100.0                                         # inside the ball: unchanged
    np.testing.assert_allclose(small * clip_factors((small ** 2).sum(1), 1.5)[:, None], small, rtol=1e-10)
    # removing one unit moves the clipped sum by at most C, replacing it by at most 2C
    total = clipped_sum(per_unit, 1.5)
    for u in range(20):
        assert np.linalg.norm(total - clipped_sum(np.delete(per_unit, u, 0), 1.5)) <= 1.5 + 1e-9
        swapped = per_unit.copy()
        swapped[u] = -per_unit[u] * 10
        assert np.linalg.norm(total - clipped_sum(swapped, 1.5)) <= 3.0 + 1e-9
    assert clipped_sum_sensitivity(1.5, "replace_one") == 3.0


def test_the_release_adds_the_multiplier_times_the_sensitivity():
    ledger = Ledger()
    rel = Releaser(ConstantNoise(1.0), ledger)
    grads = np.ones((3, 4))
    out = release_clipped_sum(grads, 1.0, 2.0, rel, neighboring="replace_one")
    np.testing.assert_allclose(out, clipped_sum(grads, 1.0) + 2.0 * 2.0)      # z Δ, Δ = 2C
    assert ledger.events[0].noise_multiplier == 2.0


def test_subsampled_accounting_matches_dp_accounting():
    import dp_accounting

    z, q, T, delta = 1.1, 0.01, 1000, 1e-5
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), T)
    assert dpsgd_epsilon(z, q, T, delta) == pytest.approx(acc.get_epsilon(delta), rel=1e-9)
    assert dpsgd_event(z, 1.0, 3) == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), 3)
    # amplification: a smaller sampling rate spends less
    assert dpsgd_epsilon(z, 0.001, T, delta) < dpsgd_epsilon(z, q, T, delta)


def test_calibration_is_the_least_multiplier_that_meets_the_budget():
    z = calibrate_noise_multiplier(3.0, 1e-5, 0.05, 20, tol=1e-2)
    assert dpsgd_epsilon(z, 0.05, 20, 1e-5) <= 3.0
    assert dpsgd_epsilon(z * (1 - 2e-2), 0.05, 20, 1e-5) > 3.0
    assert calibrate_noise_multiplier(math.inf, 1e-5, 0.05, 20) == 0.0


def test_a_seeded_release_is_reproducible():
    grads = np.random.default_rng(1).normal(size=(5, 3))
    a = release_clipped_sum(grads, 1.0, 1.0, Releaser(NumpyNoise(3), Ledger()))
    b = release_clipped_sum(grads, 1.0, 1.0, Releaser(NumpyNoise(3), Ledger()))
    np.testing.assert_array_equal(a, b)


def test_poisson_sample_joins_each_unit_with_probability_q():
    rng = np.random.default_rng(0)
    sizes = [poisson_sample(1000, 0.1, rng).size for _ in range(200)]
    assert abs(np.mean(sizes) - 100.0) < 1.0                        # mean q n; its std error is 0.21
    assert poisson_sample(5, 1.0, rng).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(InvalidParameterError, match="'sampling_rate'"):
        poisson_sample(5, 1.5, rng)


def test_subsampled_steps_record_one_subsampled_event_and_declare_every_draw():
    import dp_accounting

    ledger = Ledger()
    steps = SubsampledGaussianSteps(Releaser(NumpyNoise(np.random.default_rng(0)), ledger), clip=2.0,
                                    noise_multiplier=1.3, sampling_rate=0.05, steps=40, size=3)
    for _ in range(40):
        steps.release(np.zeros(3))
    assert release_problems(ledger) == []
    assert len(ledger.events) == 1 and steps.std == pytest.approx(2.6)
    # the ledger's ε is the Poisson-subsampled composition's, computed by dp-accounting directly
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.3)), 40)
    assert ledger.epsilon(1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert ledger.epsilon(1e-5) < 0.5 * dp_accounting.pld.PLDAccountant().compose(
        dp_accounting.GaussianDpEvent(1.3), 40).get_epsilon(1e-5)   # amplification is counted
    with pytest.raises(InvalidParameterError, match="'steps'"):
        steps.release(np.zeros(3))                                 # one step more than the ledger records


def test_subsampled_steps_draw_their_declared_scale():
    noise = ConstantNoise(1.0)
    steps = SubsampledGaussianSteps(Releaser(noise, Ledger()), clip=0.5, noise_multiplier=3.0, sampling_rate=0.5,
                                    steps=2, size=2, neighboring="replace_one")
    np.testing.assert_allclose(steps.release(np.array([1.0, -1.0])), [4.0, 2.0])   # σ = z · 2C = 3
    empty = Ledger()
    off = SubsampledGaussianSteps(Releaser(ConstantNoise(1.0), empty), clip=0.5, noise_multiplier=0.0,
                                  sampling_rate=0.5, steps=2, size=2)
    np.testing.assert_array_equal(off.release(np.ones(2)), np.ones(2))
    assert empty.is_empty
