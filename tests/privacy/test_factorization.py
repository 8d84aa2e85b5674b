"""The square-root factorization counter: A·A = L, the sensitivity factor s_n, the prefix noise
Σ_j c_{t−j} z_j drawn through the noise source, and its one Gaussian event; the BLT counter: B·C = L,
its closed-form norms against the matrices, its max error against the square root's, its streamed
noise B z, its event and its memory."""

import math

import numpy as np
import pytest
from scipy.special import comb

from privrl.privacy import ConstantNoise, Ledger, NoiseSource, NumpyNoise
from privrl.privacy.factorization import (
    BLTCounter,
    FactorizationCounter,
    blt_factorization,
    prefix_variance_factor,
    sqrt_coefficients,
    sqrt_factor_matrix,
    sqrt_sensitivity_factor,
)
from privrl.privacy.tree import NodeNoise, max_membership


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
    _check_prefix_releases(counter, n, shape, symmetric,
                           lambda t: np.tensordot(A[t - 1, :t], full[:t], axes=1))   # Σ_{j≤t} c_{t−j} z_j


def _check_prefix_releases(counter, n, shape, symmetric, noise_after):
    """Insert ``n`` random items (symmetric ones if ``symmetric``): after insert t the counter's noise is
    ``noise_after(t)`` (called once per insert, after it) and its release the exact prefix sum plus that
    noise; row 1 (σ = 0) gets none; a symmetric release stays symmetric; an insert past ``n`` is refused."""
    rng = np.random.default_rng(0)
    exact = np.zeros(shape)
    for t in range(1, n + 1):
        x = rng.normal(size=shape)
        if symmetric:
            x = x + np.swapaxes(x, -1, -2)
        exact += x
        counter.insert(x)
        expected = noise_after(t)
        np.testing.assert_allclose(counter.noise_sum(), expected, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(counter.release(), exact + expected, rtol=1e-10, atol=1e-9)
        assert np.all(counter.noise_sum()[1] == 0)
        if symmetric:
            assert np.array_equal(counter.release(), np.swapaxes(counter.release(), -1, -2))
    with pytest.raises(Exception, match="n_items"):
        counter.insert(np.zeros(shape))


@pytest.mark.parametrize("counter_class,n,coefficients", [
    (FactorizationCounter, 7, lambda counter, n: sqrt_coefficients(n)),            # c: the square root's
    (BLTCounter, 9, lambda counter, n: counter.blt.noise_coefficients(n)),          # b: the BLT's
], ids=["sqrt", "blt"])
def test_constant_noise_gives_sigma_times_the_partial_sums_of_the_coefficients_and_zero_noise_the_plain_sum(
        counter_class, n, coefficients):
    sigma, value = 1.5, 0.25
    counter = counter_class((2,), n_items=n, sigma=sigma, source=ConstantNoise(value))
    plain = counter_class((2,), n_items=n, sigma=sigma, source=ConstantNoise(0.0))
    c = coefficients(counter, n)
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
    for cls in (BinaryCounter, FactorizationCounter, BLTCounter):
        with pytest.raises(InvalidParameterError, match=r"\(\.\.\., n, n\) when symmetric=True"):
            cls((2, 3), n_items=3, symmetric=True)
        with pytest.raises(InvalidParameterError, match="0 for vector streams"):
            cls((3,), n_items=3, shift=1.0)


# --------------------------------------------------------------------------- BLT
def _toeplitz(col):
    n = len(col)
    i, j = np.indices((n, n))
    return np.where(i >= j, col[np.clip(i - j, 0, None)], 0.0)


def test_blt_is_a_factorization_of_the_prefix_sums_with_closed_form_norms():
    """B C = L with C = BLT(θ, ω) and B = L C⁻¹ from the streaming recurrence; the closed forms of the
    largest column norm² of C and row norm² of B equal the matrices' (an independent computation)."""
    n = 200
    blt = blt_factorization(n)
    C, B = _toeplitz(blt.coefficients(n)), _toeplitz(blt.noise_coefficients(n))
    np.testing.assert_allclose(B @ C, np.tril(np.ones((n, n))), rtol=0, atol=1e-9)
    np.testing.assert_allclose(B, np.tril(np.ones((n, n))) @ np.linalg.inv(C), rtol=0, atol=1e-9)
    assert blt.column_norm2(n) == pytest.approx(float(np.max(np.sum(C * C, axis=0))), rel=1e-10)
    assert blt.row_norm2(n) == pytest.approx(float(np.max(np.sum(B * B, axis=1))), rel=1e-10)
    assert all(0 < t < 1 for t in blt.theta) and all(w > 0 for w in blt.omega)


@pytest.mark.parametrize("n", [9_999, 99_999])
def test_blt_max_error_matches_the_square_root_within_one_percent(n):
    """Max error s_C·s_B per unit sensitivity: the square root's s_n² (3.998 at n = 10⁴, 4.731 at 10⁵)
    within 1% (it is within 0.2%), far below the binary tree's √(count · max popcount)."""
    blt = blt_factorization(n)
    root = prefix_variance_factor(n)
    assert root <= blt.max_error(n) <= 1.01 * root
    tree = math.sqrt(max_membership(n) * max(bin(t).count("1") for t in range(1, n + 1)))
    assert blt.max_error(n) < 0.4 * tree
    assert blt_factorization(n) is blt                                     # cached: chosen once per n


@pytest.mark.parametrize("symmetric", [False, True])
def test_blt_prefix_noise_is_b_times_the_drawn_noise(symmetric):
    """Release after t inserts = exact prefix sum + Σ_{j≤t} b_{t−j} z_j with z_j the source's draw at
    insert j (σ_h-scaled, as a tree node draws it; symmetric: mirrored); rows with σ = 0 get none."""
    n, shape = 12, (3, 2, 2)
    sigma = np.array([0.5, 0.0, 2.0])
    counter = BLTCounter(shape, n_items=n, sigma=sigma, symmetric=symmetric, source=_SequenceNoise())
    twin = NodeNoise(_SequenceNoise(), sigma)                              # the same draws, one per insert
    b = counter.blt.noise_coefficients(n)
    zs = []

    def noise_after(t):
        zs.append(twin(shape, symmetric))                                  # insert t's draw
        return sum(b[t - 1 - j] * zs[j] for j in range(t))

    _check_prefix_releases(counter, n, shape, symmetric, noise_after)


def test_blt_event_is_one_gaussian_release_with_the_column_norm_of_c():
    """The ledger's μ² of one item is (s_C Δ/σ)², s_C computed here from the matrix C itself."""
    n, sigma, delta = 150, np.array([2.0, 3.0]), np.array([0.5, 0.0])
    counter = BLTCounter((2, 3), n_items=n, sigma=sigma, source=NumpyNoise(0), sensitivity=delta)
    C = _toeplitz(counter.blt.coefficients(n))
    s_c = math.sqrt(float(np.max(np.sum(C * C, axis=0))))
    nm = counter.noise_multiplier()
    assert nm[0] == pytest.approx(2.0 / (0.5 * s_c), rel=1e-10) and math.isinf(nm[1])
    leaves = Ledger([counter.event()]).leaves()
    mu2 = sum(k / e.noise_multiplier**2 for e, k in leaves if hasattr(e, "noise_multiplier"))
    assert mu2 == pytest.approx((0.5 * s_c / 2.0) ** 2, rel=1e-10)


def test_blt_memory_does_not_grow_with_the_stream_and_variance_is_as_stated():
    """The state is d buffers and one total whatever n; the empirical per-entry variance of n_t is
    σ² Σ_{k<t} b_k² (seeded NumPy, 4000 entries)."""
    small, large = (BLTCounter((4000,), n_items=n, sigma=3.0, source=NumpyNoise(1)) for n in (64, 99_999))
    assert small._state.shape[1:] == large._state.shape[1:] == (4000,) and large._state.shape[0] <= 6
    b = small.blt.noise_coefficients(64)
    for t in range(1, 65):
        small.insert(np.zeros(4000))
        if t in (1, 8, 64):
            assert small.noise_sum().var() == pytest.approx(9.0 * float(np.sum(b[:t] ** 2)), rel=0.08)


def test_blt_noise_has_the_square_roots_std_at_every_prefix():
    """Distributional equality with the square root it replaced as the default: at the same noise
    multiplier (σ = μ⁻¹ s Δ), the prefix noise of either counter is a centred Gaussian of entry std
    σ‖B_t‖ — s_C ‖b_{<t}‖ for the BLT, s_n ‖c_{<t}‖ for the square root, per unit μ⁻¹Δ — and the two
    agree within 1% at every t ≤ n (n = K − 1 of the frontier's K = 2·10⁴)."""
    n = 19_999
    blt = blt_factorization(n)
    root = np.sqrt(prefix_variance_factor(n) * np.cumsum(sqrt_coefficients(n) ** 2))
    ours = np.sqrt(blt.column_norm2(n) * np.cumsum(blt.noise_coefficients(n) ** 2))
    np.testing.assert_allclose(ours, root, rtol=0.01)
