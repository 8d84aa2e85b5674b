"""Mechanisms: noise statistics (fixed seeds, stated tolerances), events, construction, bad input,
and the secure (OpenDP) path."""

import math

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent, NonPrivateDpEvent
from scipy import stats

from privrl.errors import InvalidParameterError
from privrl.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    Ledger,
    SymmetricGaussianMatrixMechanism,
    calibrate_gaussian,
)

N = 200_000  # samples for variance checks: relative s.e. of a variance estimate ≈ √(2/N) ≈ 0.3%


# --------------------------------------------------------------------------- construction and events
def test_noise_multiplier_and_noise_std_construct_the_same_mechanism():
    a = GaussianMechanism(sensitivity=2.0, noise_multiplier=3.0)
    b = GaussianMechanism(sensitivity=2.0, noise_std=6.0)
    assert a.noise_multiplier == b.noise_multiplier == 3.0
    assert a.scale == b.scale == 6.0
    assert a.event() == b.event() == GaussianDpEvent(3.0)
    assert a.rho == pytest.approx(1 / 18)
    la = LaplaceMechanism(sensitivity=0.5, noise_multiplier=4.0)
    lb = LaplaceMechanism(sensitivity=0.5, noise_scale=2.0)
    assert la.scale == lb.scale == 2.0
    assert la.event() == lb.event() == LaplaceDpEvent(4.0)
    assert la.epsilon == pytest.approx(0.25)
    assert "noise_multiplier=3.0" in repr(a)


def test_release_returns_the_event():
    for mech, event in [(GaussianMechanism(noise_multiplier=2.0), GaussianDpEvent(2.0)),
                        (LaplaceMechanism(noise_multiplier=5.0), LaplaceDpEvent(5.0)),
                        (SymmetricGaussianMatrixMechanism(noise_multiplier=1.5), GaussianDpEvent(1.5))]:
        _, e = mech.release(np.eye(3), rng=0)
        assert e == event


def test_zero_noise_is_non_private_and_exact():
    for mech in (GaussianMechanism(noise_multiplier=0.0), LaplaceMechanism(noise_scale=0.0),
                 SymmetricGaussianMatrixMechanism(noise_std=0.0, shift=1.0)):
        value = np.array([[1.0, 2.0], [2.0, 5.0]])
        out, event = mech.release(value, rng=0)
        expected = value + (np.eye(2) if isinstance(mech, SymmetricGaussianMatrixMechanism) else 0.0)
        np.testing.assert_array_equal(out, expected)
        assert event == NonPrivateDpEvent()
        assert Ledger([event]).epsilon(1e-5) == math.inf
    assert GaussianMechanism(noise_multiplier=0.0).rho == math.inf
    assert LaplaceMechanism(noise_multiplier=0.0).epsilon == math.inf


def test_calibrated_mechanism_spends_the_target():
    """Derivation check: σ from calibrate_gaussian → event → ledger ε ≤ target (and ≈ target)."""
    sigma = calibrate_gaussian(1.0, 1e-5, sensitivity=2.0, compositions=4)
    mech = GaussianMechanism(sensitivity=2.0, noise_std=sigma)
    led = Ledger(mech.release(0.0, rng=i)[1] for i in range(4))
    assert 0.999 <= led.epsilon(1e-5) <= 1.0


# --------------------------------------------------------------------------- statistics
def test_gaussian_noise_statistics():
    mech = GaussianMechanism(sensitivity=0.5, noise_multiplier=4.0)  # σ = 2
    value = np.full(N, 3.0)
    out, _ = mech.release(value, rng=np.random.default_rng(1))
    noise = out - value
    assert noise.var() == pytest.approx(4.0, rel=0.015)  # ≈ 5 s.e.
    assert abs(noise.mean()) < 5 * 2.0 / math.sqrt(N)
    assert stats.kstest(noise / 2.0, "norm").pvalue > 1e-3


def test_laplace_noise_statistics():
    mech = LaplaceMechanism(sensitivity=2.0, noise_multiplier=1.5)  # b = 3
    out, _ = mech.release(np.zeros(N), rng=np.random.default_rng(2))
    assert out.var() == pytest.approx(2 * 9.0, rel=0.03)  # Var Lap(b) = 2b²; kurtosis 6 -> s.e. ≈ 0.6%
    assert np.mean(np.abs(out)) == pytest.approx(3.0, rel=0.01)
    assert stats.kstest(out, "laplace", args=(0, 3.0)).pvalue > 1e-3


def test_symmetric_matrix_noise_is_symmetric_with_the_right_variances():
    d, reps = 6, 3000
    mech = SymmetricGaussianMatrixMechanism(sensitivity=1.0, noise_std=2.0)
    gen = np.random.default_rng(3)
    value = np.arange(d * d, dtype=float).reshape(d, d)
    value = value + value.T
    noises = np.empty((reps, d, d))
    for k in range(reps):
        out, _ = mech.release(value, rng=gen)
        np.testing.assert_array_equal(out, out.T)  # exactly symmetric
        noises[k] = out - value
    var = noises.var(axis=0)
    diag, off = var[np.diag_indices(d)], var[np.triu_indices(d, 1)]
    # every entry ~ N(0, 4): s.e. of each variance ≈ 4·√(2/3000) ≈ 0.10 (tolerance 5 s.e.);
    # pooled over the 6 diagonal / 15 off-diagonal entries: s.e. ≈ 1% / 0.7% (tolerance 3%)
    assert np.all(np.abs(diag - 4.0) < 0.5) and np.all(np.abs(off - 4.0) < 0.5)
    assert diag.mean() == pytest.approx(4.0, rel=0.03) and off.mean() == pytest.approx(4.0, rel=0.03)
    # distinct upper-triangle entries are independent
    upper = noises[:, np.triu_indices(d)[0], np.triu_indices(d)[1]]
    corr = np.corrcoef(upper.T)
    assert np.max(np.abs(corr - np.eye(corr.shape[0]))) < 0.08  # s.e. 1/√3000 ≈ 0.018


def test_symmetric_matrix_shift_is_applied():
    mech = SymmetricGaussianMatrixMechanism(noise_std=1.0, shift=5.0)
    value = np.zeros((4, 4))
    reps = np.stack([mech.release(value, rng=i)[0] for i in range(2000)])
    mean = reps.mean(axis=0)
    np.testing.assert_allclose(np.diag(mean), 5.0, atol=0.12)  # s.e. 1/√2000 ≈ 0.022
    np.testing.assert_allclose(mean[np.triu_indices(4, 1)], 0.0, atol=0.12)
    # same seed, with and without the shift: differ by exactly shift·I
    no_shift = SymmetricGaussianMatrixMechanism(noise_std=1.0)
    np.testing.assert_allclose(mech.release(value, rng=9)[0] - no_shift.release(value, rng=9)[0], 5.0 * np.eye(4))


def test_nearly_symmetric_input_gives_exactly_symmetric_output():
    value = np.array([[1.0, 2.0], [2.0 + 1e-14, 3.0]])
    out, _ = SymmetricGaussianMatrixMechanism(noise_std=1.0).release(value, rng=0)
    np.testing.assert_array_equal(out, out.T)


def test_same_seed_same_noise_different_seed_different_noise():
    mech = GaussianMechanism(noise_multiplier=1.0)
    a, _ = mech.release(np.zeros(5), rng=7)
    b, _ = mech.release(np.zeros(5), rng=np.random.default_rng(7))
    c, _ = mech.release(np.zeros(5), rng=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_scalar_and_shape_preserved():
    out, _ = LaplaceMechanism(noise_multiplier=1.0).release(2.0, rng=0)
    assert np.shape(out) == ()
    out, _ = GaussianMechanism(noise_multiplier=1.0).release(np.ones((2, 3, 4)), rng=0)
    assert out.shape == (2, 3, 4)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls,kwargs,match", [
    (GaussianMechanism, dict(sensitivity=0.0, noise_multiplier=1.0),
     r"The 'sensitivity' parameter of GaussianMechanism must be a float in \(0.0, inf\). Got 0.0 instead."),
    (GaussianMechanism, dict(sensitivity=-1.0, noise_multiplier=1.0), r"'sensitivity' .* Got -1.0"),
    (GaussianMechanism, dict(sensitivity=math.inf, noise_multiplier=1.0), r"'sensitivity' .* Got inf"),
    (GaussianMechanism, dict(noise_multiplier=-0.5),
     r"The 'noise_multiplier' parameter of GaussianMechanism must be a float in \[0.0, inf\). Got -0.5 instead."),
    (GaussianMechanism, dict(noise_multiplier=math.nan), r"'noise_multiplier' .* Got nan"),
    (GaussianMechanism, dict(noise_std=-1.0), r"'noise_std' parameter of GaussianMechanism .* Got -1.0"),
    (GaussianMechanism, dict(), r"'noise_multiplier/noise_std' parameter of GaussianMechanism must be exactly one"),
    (GaussianMechanism, dict(noise_multiplier=1.0, noise_std=1.0), r"exactly one of noise_multiplier or noise_std"),
    (GaussianMechanism, dict(noise_multiplier="1"), r"'noise_multiplier' .* Got '1'"),
    (GaussianMechanism, dict(noise_multiplier=1.0, secure="yes"),
     r"'secure' parameter of GaussianMechanism must be a bool"),
    (LaplaceMechanism, dict(noise_scale=-2.0), r"'noise_scale' parameter of LaplaceMechanism .* Got -2.0"),
    (LaplaceMechanism, dict(), r"exactly one of noise_multiplier or noise_scale"),
    (SymmetricGaussianMatrixMechanism, dict(noise_std=1.0, shift=math.inf),
     r"'shift' parameter of SymmetricGaussianMatrixMechanism .* Got inf"),
])
def test_bad_constructor_arguments(cls, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        cls(**kwargs)


def test_bad_release_arguments():
    mech = GaussianMechanism(noise_multiplier=1.0)
    with pytest.raises(InvalidParameterError,
                       match=r"'rng' parameter of GaussianMechanism.release must be a numpy Generator"):
        mech.release(1.0)
    with pytest.raises(InvalidParameterError, match=r"'value' parameter of GaussianMechanism.release must be finite"):
        mech.release([1.0, np.nan], rng=0)
    with pytest.raises(InvalidParameterError, match="'rng' parameter"):
        mech.release(1.0, rng="seed")
    with pytest.raises(InvalidParameterError, match="'rng' parameter"):
        mech.release(1.0, rng=-3)
    sym = SymmetricGaussianMatrixMechanism(noise_std=1.0)
    with pytest.raises(InvalidParameterError, match=r"'value' .* must be a square matrix. Got 'shape \(2, 3\)'"):
        sym.release(np.zeros((2, 3)), rng=0)
    with pytest.raises(InvalidParameterError, match=r"must be a symmetric matrix"):
        sym.release(np.array([[0.0, 1.0], [0.0, 0.0]]), rng=0)
    with pytest.raises(InvalidParameterError, match=r"'value' .* must be finite"):
        sym.release(np.array([[np.inf, 0.0], [0.0, 0.0]]), rng=0)


# --------------------------------------------------------------------------- secure path
@pytest.mark.parametrize("rng", [0, np.random.default_rng(0), np.random.SeedSequence(1)])
@pytest.mark.parametrize("cls", [GaussianMechanism, LaplaceMechanism, SymmetricGaussianMatrixMechanism])
def test_secure_refuses_seeds(cls, rng):
    mech = cls(noise_multiplier=1.0, secure=True)
    with pytest.raises(InvalidParameterError,
                       match=r"The 'rng' parameter of \w+.release must be None when secure=True"):
        mech.release(np.eye(2), rng=rng)


def test_secure_gaussian_release_has_the_right_scale():
    pytest.importorskip("opendp")
    mech = GaussianMechanism(sensitivity=0.5, noise_std=3.0, secure=True)
    n = 10_000
    out, event = mech.release(np.full(n, 10.0))
    assert event == GaussianDpEvent(6.0)
    noise = out - 10.0
    # OS randomness: not reproducible, so tolerances are ~6 standard errors (failure prob < 1e-8)
    assert noise.std() == pytest.approx(3.0, rel=6 * math.sqrt(0.5 / n))
    assert abs(noise.mean()) < 6 * 3.0 / math.sqrt(n)
    assert stats.kstest(noise / 3.0, "norm").pvalue > 1e-6


def test_secure_laplace_release_has_the_right_scale():
    pytest.importorskip("opendp")
    mech = LaplaceMechanism(sensitivity=1.0, noise_scale=2.0, secure=True)
    n = 10_000
    out, event = mech.release(np.zeros(n))
    assert event == LaplaceDpEvent(2.0)
    assert np.mean(np.abs(out)) == pytest.approx(2.0, rel=6 / math.sqrt(n))  # E|Lap(b)| = b, sd b
    assert stats.kstest(out, "laplace", args=(0, 2.0)).pvalue > 1e-6


def test_secure_symmetric_release():
    pytest.importorskip("opendp")
    mech = SymmetricGaussianMatrixMechanism(noise_std=1.0, shift=2.0, secure=True)
    d = 60
    out, _ = mech.release(np.zeros((d, d)))
    np.testing.assert_array_equal(out, out.T)
    noise = out - 2.0 * np.eye(d)
    upper = noise[np.triu_indices(d)]
    assert upper.var() == pytest.approx(1.0, rel=6 * math.sqrt(2 / upper.size))
    assert not np.array_equal(out, mech.release(np.zeros((d, d)))[0])  # fresh OS randomness


def test_secure_helpers_handle_empty_and_shapes():
    pytest.importorskip("opendp")
    from privrl.privacy.secure import secure_gaussian, secure_laplace

    assert secure_gaussian(np.zeros((0, 3)), 1.0).shape == (0, 3)
    assert secure_laplace(np.zeros((2, 3)), 1.0).shape == (2, 3)
