"""The broken copies used by the negative controls do what their names say, and only that."""

import numpy as np
import pytest

from privrl.audit.broken import DiagonalNoiseFreeMatrixMechanism, divide_noise
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


def test_diagonal_noise_free_matrix_mechanism():
    mech = DiagonalNoiseFreeMatrixMechanism(sensitivity=1.0, noise_std=1.0, shift=2.0)
    value = np.array([[1.0, 0.5], [0.5, 3.0]])
    out, _ = mech.release(value, rng=1)
    assert np.allclose(np.diag(out), np.diag(value) + 2.0)       # diagonal exact (+ shift)
    assert out[0, 1] == out[1, 0] and out[0, 1] != value[0, 1]   # off-diagonal noisy, symmetric
