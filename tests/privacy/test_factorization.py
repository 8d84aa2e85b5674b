"""The square-root factorization counter: A·A = L, the sensitivity factor s_n, the prefix noise
Σ_j c_{t−j} z_j drawn through the noise source, and its one Gaussian event."""

import math

import numpy as np
import pytest
from scipy.special import comb

from privrl.privacy import ConstantNoise, Ledger, NoiseSource, NumpyNoise
from privrl.privacy.factorization import (
    FactorizationCounter,
    prefix_variance_factor,
    sqrt_coefficients,
    sqrt_factor_matrix,
    sqrt_sensitivity_factor,
)


class _SequenceNoise(NoiseSource):
    """Standard draws 1, 2, 3, … in C order (distinct values: checks where each z_j lands)."""

    def _standard(self, kind, shape):
        return np.arange(1, int(np.prod(shape)) + 1, dtype=float).reshape(shape)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 33])
def test_a_squared_is_the_prefix_sum_matrix(n):
    A = sqrt_factor_matrix(n)
    np.testing.assert_allclose(A @ A, np.tril(np.ones((n, n))), rtol=0, atol=1e-12)


def test_coefficients_and_sensitivity_factor_closed_forms():
    n = 40
    c = sqrt_coefficients(n)
    np.testing.assert_allclose(c, [comb(2 * k, k, exact=True) / 4**k for k in range(n)], rtol=1e-13)
    A = sqrt_factor_matrix(n)
    # s_n² = Σ_{k<n} c_k² is the largest column norm² of A (column 0)
    assert prefix_variance_factor(n) == pytest.approx(float(np.max(np.sum(A * A, axis=0))), rel=1e-13)
    assert prefix_variance_factor(n) == pytest.approx(float(np.sum(c**2)), rel=1e-13)
    assert sqrt_sensitivity_factor(n) == pytest.approx(math.sqrt(np.sum(c**2)), rel=1e-13)
    # ≈ 1 + ln(n)/π for large n (c_k² ≈ 1/(πk)); K = 2·10⁴: s² ≈ 4.22 against the tree's m = 15
    n = 19_999
    assert prefix_variance_factor(n) == pytest.approx(1 + math.log(n) / math.pi, rel=0.05)
    assert prefix_variance_factor(n) == pytest.approx(4.2186, abs=1e-3)


@pytest.mark.parametrize("symmetric", [False, True])
def test_prefix_noise_is_the_convolution_of_c_with_z(symmetric):
    """Release after t inserts = exact prefix sum + Σ_{j≤t} c_{t−j} σ_h z_j (z_j the source's draws, in
    order; symmetric: the upper triangle mirrored); rows with σ = 0 get none."""
    n, shape = 9, (3, 2, 2)
    sigma = np.array([0.5, 0.0, 2.0])
    counter = FactorizationCounter(shape, n_items=n, sigma=sigma, symmetric=symmetric, source=_SequenceNoise())
    # the draws the counter makes: one call of shape (n, rows with σ > 0, ...) (upper triangle if symmetric)
    on = np.flatnonzero(sigma > 0)
    if symmetric:
        rr, cc = np.triu_indices(2)
        up = np.arange(1, n * len(on) * 3 + 1, dtype=float).reshape(n, len(on), 3)
        z = np.zeros((n, len(on), 2, 2))
        z[:, :, rr, cc] = up
        z[:, :, cc, rr] = up
    else:
        z = np.arange(1, n * len(on) * 4 + 1, dtype=float).reshape(n, len(on), 2, 2)
    full = np.zeros((n, *shape))
    full[:, on] = sigma[on][None, :, None, None] * z
    A = sqrt_factor_matrix(n)
    rng = np.random.default_rng(0)
    exact = np.zeros(shape)
    for t in range(1, n + 1):
        x = rng.normal(size=shape)
        if symmetric:
            x = x + np.swapaxes(x, -1, -2)
        exact += x
        counter.insert(x)
        expected_noise = np.tensordot(A[t - 1, :t], full[:t], axes=1)        # Σ_{j≤t} c_{t−j} z_j
        np.testing.assert_allclose(counter.noise_sum(), expected_noise, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(counter.release(), exact + expected_noise, rtol=1e-10, atol=1e-9)
        assert np.all(counter.noise_sum()[1] == 0)
        if symmetric:
            assert np.array_equal(counter.release(), np.swapaxes(counter.release(), -1, -2))
    with pytest.raises(Exception, match="n_items"):
        counter.insert(np.zeros(shape))


def test_constant_noise_gives_c_sigma_times_the_partial_sums_and_zero_noise_the_plain_sum():
    n, sigma, value = 7, 1.5, 0.25
    counter = FactorizationCounter((2,), n_items=n, sigma=sigma, source=ConstantNoise(value))
    plain = FactorizationCounter((2,), n_items=n, sigma=sigma, source=ConstantNoise(0.0))
    c = sqrt_coefficients(n)
    total = np.zeros(2)
    for t in range(1, n + 1):
        x = np.array([t, -t / 3])
        total = total + x
        counter.insert(x)
        plain.insert(x)
        np.testing.assert_allclose(counter.release(), total + value * sigma * c[:t].sum(), rtol=1e-12)
        assert np.array_equal(plain.release(), total)                         # bit for bit


def test_event_is_one_gaussian_release_with_sensitivity_s_n_delta():
    n, sigma, delta = 100, np.array([2.0, 3.0]), np.array([0.5, 0.0])
    counter = FactorizationCounter((2, 3), n_items=n, sigma=sigma, source=NumpyNoise(0), sensitivity=delta)
    s = math.sqrt(sum(float(x) ** 2 for x in sqrt_coefficients(n)))
    nm = counter.noise_multiplier()
    assert nm[0] == pytest.approx(2.0 / (0.5 * s), rel=1e-12) and math.isinf(nm[1])
    leaves = Ledger([counter.event()]).leaves()
    mu2 = sum(k / e.noise_multiplier**2 for e, k in leaves if hasattr(e, "noise_multiplier"))
    assert mu2 == pytest.approx((0.5 * s / 2.0) ** 2, rel=1e-12)


def test_seeded_noise_has_the_stated_variance():
    """Empirical per-entry variance of n_t is σ² Σ_{k<t} c_k² (seeded NumPy, 4000 entries)."""
    n, sigma = 64, 3.0
    counter = FactorizationCounter((4000,), n_items=n, sigma=sigma, source=NumpyNoise(1))
    seq = counter.noise_sequence()
    for t in (1, 8, 64):
        assert seq[t - 1].var() == pytest.approx(sigma**2 * prefix_variance_factor(t), rel=0.08)


def test_both_counters_validate_their_settings_alike():
    """One validation (tree.counter_settings) serves both counters; only the scalar stream differs:
    the tree counts scalars, the factorization needs an array shape."""
    from privrl.errors import InvalidParameterError
    from privrl.privacy.factorization import FactorizationCounter
    from privrl.privacy.tree import BinaryCounter

    assert BinaryCounter((), n_items=3).shape == ()
    with pytest.raises(InvalidParameterError, match="non-empty tuple of positive ints"):
        FactorizationCounter((), n_items=3)
    for cls in (BinaryCounter, FactorizationCounter):
        with pytest.raises(InvalidParameterError, match=r"\(\.\.\., n, n\) when symmetric=True"):
            cls((2, 3), n_items=3, symmetric=True)
        with pytest.raises(InvalidParameterError, match="0 for vector streams"):
            cls((3,), n_items=3, shift=1.0)
