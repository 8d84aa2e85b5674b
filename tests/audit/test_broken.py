"""The broken copies used by the negative controls do what their names say, and only that."""

import numpy as np
import pytest

from privrl.audit.broken import DiagonalNoiseFreeMatrixMechanism, divide_noise, divide_noise_scale
from privrl.errors import InvalidParameterError
from privrl.privacy import GaussianMechanism


def test_divide_noise_keeps_the_claimed_event_and_the_original():
    mech = GaussianMechanism(sensitivity=2.0, noise_std=3.0)
    broken = divide_noise(mech)
    assert broken.event() == mech.event() and mech.scale == 3.0
    assert broken.scale == pytest.approx(0.3)
    out, _ = broken.release(np.zeros(200_000), rng=0)
    assert out.std() == pytest.approx(0.3, rel=0.01)  # 200k draws: relative s.e. 0.16 %
    with pytest.raises(InvalidParameterError, match="divisor"):
        divide_noise(mech, 0.5)


def test_divide_noise_scale_on_frozen_release_objects():
    from privrl.algorithms.policy_evaluation import DPLSWMechanism

    mech = DPLSWMechanism.create(features=np.eye(2), weights=np.ones(2), F_max=1.0, epsilon=1.0, delta=1e-5)
    broken = divide_noise_scale(mech, 100.0)
    counts = np.array([5, 7])
    assert broken.noise_scale(counts) == pytest.approx(mech.noise_scale(counts) / 100)
    out = broken.release(np.zeros((100_000, 2)), counts, 12, rng=0)
    assert out.std() == pytest.approx(mech.noise_scale(counts) / 100, rel=0.01)


def test_diagonal_noise_free_matrix_mechanism():
    mech = DiagonalNoiseFreeMatrixMechanism(sensitivity=1.0, noise_std=1.0, shift=2.0)
    value = np.array([[1.0, 0.5], [0.5, 3.0]])
    out, _ = mech.release(value, rng=1)
    assert np.allclose(np.diag(out), np.diag(value) + 2.0)       # diagonal exact (+ shift)
    assert out[0, 1] == out[1, 0] and out[0, 1] != value[0, 1]   # off-diagonal noisy, symmetric
