"""The release seam (privrl.privacy.noise / release): pluggable noise sources, (value, event) pairs,
one ledger per fit."""

import math
import subprocess
import sys

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent, NonPrivateDpEvent, NoOpDpEvent

from privrl.errors import InvalidParameterError
from privrl.privacy import (
    ApproxDpEvent,
    ConstantNoise,
    GaussianMechanism,
    Ledger,
    NumpyNoise,
    Releaser,
    ScaledNoise,
    SecureNoise,
    SymmetricGaussianMatrixMechanism,
    make_noise,
    release_gaussian,
    release_laplace,
)


def test_constant_noise_is_standardised_and_lands_where_the_derivation_says():
    noise = ConstantNoise([1.0, -2.0])
    value, event = release_gaussian(np.zeros(3), sensitivity=2.0, std=3.0, noise=noise)
    np.testing.assert_array_equal(value, [3.0, 3.0, 3.0])       # first draw: 1 · σ
    assert event == GaussianDpEvent(1.5)                          # σ/Δ
    value, event = release_laplace([10.0], sensitivity=1.0, scale=0.5, noise=noise)
    np.testing.assert_array_equal(value, [9.0])                   # second draw: −2 · b
    assert event == LaplaceDpEvent(0.5)
    assert noise.calls == 2


def test_symmetric_release_is_symmetric_with_single_variance_diagonal():
    value, _ = release_gaussian(np.eye(3), sensitivity=1.0, std=1.0, noise=ConstantNoise(0.5), symmetric=True)
    np.testing.assert_array_equal(value, np.eye(3) + 0.5)
    draws = np.stack([release_gaussian(np.zeros((4, 4)), sensitivity=1.0, std=2.0, noise=NumpyNoise(s),
                                       symmetric=True).value for s in range(4000)])
    assert np.all(draws == np.swapaxes(draws, 1, 2))
    # diagonal and off-diagonal entries both have variance σ² = 4 (not 2σ² on the diagonal)
    assert np.var(draws[:, 0, 0]) == pytest.approx(4.0, rel=0.1)
    assert np.var(draws[:, 0, 1]) == pytest.approx(4.0, rel=0.1)


def test_numpy_source_matches_the_generator_draws():
    a = release_gaussian(np.zeros(5), sensitivity=1.0, std=2.0, noise=NumpyNoise(7)).value
    np.testing.assert_array_equal(a, np.random.default_rng(7).normal(0.0, 2.0, size=5))


def test_scaled_noise_divides_the_noise_but_not_the_claim():
    base, scaled = NumpyNoise(3), ScaledNoise(NumpyNoise(3), 0.1)
    full, ev_full = release_gaussian(np.zeros(4), sensitivity=1.0, std=5.0, noise=base)
    tenth, ev_tenth = release_gaussian(np.zeros(4), sensitivity=1.0, std=5.0, noise=scaled)
    np.testing.assert_allclose(tenth, 0.1 * full)
    assert ev_full == ev_tenth == GaussianDpEvent(5.0)


def test_zero_std_and_zero_sensitivity_events():
    assert release_gaussian([1.0], sensitivity=1.0, std=0.0, noise=NumpyNoise(0)).event == NonPrivateDpEvent()
    assert release_gaussian([1.0], sensitivity=0.0, std=1.0, noise=NumpyNoise(0)).event == NoOpDpEvent()


def test_releaser_appends_every_event_to_one_ledger():
    led = Ledger()
    rel = Releaser(ConstantNoise(0.0), led)
    rel.gaussian([1.0], sensitivity=1.0, std=2.0)
    rel.laplace([1.0], sensitivity=1.0, scale=4.0)
    rel.with_event([1.0], std=3.0, event=ApproxDpEvent(1.0, 1e-6))
    rel.mechanism(GaussianMechanism(sensitivity=1.0, noise_std=1.0), [0.0])
    rel.record(GaussianDpEvent(9.0))
    assert list(led) == [GaussianDpEvent(2.0), LaplaceDpEvent(4.0), ApproxDpEvent(1.0, 1e-6),
                         GaussianDpEvent(1.0), GaussianDpEvent(9.0)]


def test_mechanisms_take_any_noise_source():
    mech = SymmetricGaussianMatrixMechanism(sensitivity=1.0, noise_std=2.0, shift=1.0)
    value, event = mech.release(np.zeros((2, 2)), noise=ConstantNoise(1.0))
    np.testing.assert_array_equal(value, [[3.0, 2.0], [2.0, 3.0]])
    assert event == GaussianDpEvent(2.0)
    with pytest.raises(InvalidParameterError, match="'rng' parameter of GaussianMechanism.release"):
        GaussianMechanism(noise_std=1.0).release(0.0, rng=1, noise=ConstantNoise())


def test_make_noise_refuses_seeds_when_secure_and_requires_one_otherwise():
    with pytest.raises(InvalidParameterError, match="'rng' parameter of fit must be None when secure=True"):
        make_noise(3, secure=True, owner="fit")
    with pytest.raises(InvalidParameterError, match="'rng' parameter of fit must be a numpy Generator"):
        make_noise(None, owner="fit")
    source = ConstantNoise()
    assert make_noise(source) is source


def test_secure_noise_draws_from_opendp():
    pytest.importorskip("opendp")
    value, event = release_gaussian(np.zeros(2000), sensitivity=1.0, std=2.0, noise=make_noise(secure=True))
    assert event == GaussianDpEvent(2.0)
    assert np.std(value) == pytest.approx(2.0, rel=0.1)


def test_import_privrl_does_not_import_dp_accounting():
    code = "import sys, privrl, privrl.privacy; print('dp_accounting' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_approx_event_is_accounted_exactly():
    """Two (0.5, 1e-6) releases: the worst-case pair puts loss +1 on mass 0.387, so δ(ε) for ε < 1 is
    at least 0.387(1 − e^{ε−1}); at δ = 1e-5 the ledger's ε is just below basic composition's 1.0."""
    eps = Ledger([ApproxDpEvent(0.5, 1e-6)] * 2).epsilon(1e-5)
    assert 0.9999 < eps <= 1.0
    assert math.isinf(Ledger([ApproxDpEvent(math.inf, 0.0)]).epsilon(1e-5))


# ----------------------------------------------------------------------------- keyed (streamed) releases
def test_every_source_draws_keyed_blocks_with_its_own_semantics():
    """NumPy: a block is a function of (release, key), whatever the order; Constant: one value per
    release (as a dense release of the whole vector); Scaled: the base's blocks times the factor."""
    a, b = NumpyNoise(5).keyed(), NumpyNoise(5).keyed()
    first = [a.gaussian(k, (2, 3), 2.0) for k in (0, 1, 2)]
    np.testing.assert_array_equal(b.gaussian(2, (2, 3), 2.0), first[2])
    np.testing.assert_array_equal(b.gaussian(0, (2, 3), 2.0), first[0])
    assert not np.array_equal(first[0], first[1])
    assert np.all(a.laplace(3, 4, 0.0) == 0) and np.all(a.gaussian(3, 4, 0.0) == 0)
    source = NumpyNoise(5)
    one, two = source.keyed(), source.keyed()                     # two releases: independent entropy
    assert not np.array_equal(one.gaussian(0, 5, 1.0), two.gaussian(0, 5, 1.0))
    const = ConstantNoise([2.0, -1.0])
    k1, k2 = const.keyed(), const.keyed()
    assert np.all(k1.gaussian(0, 3, 0.5) == 1.0) and np.all(k1.laplace(9, 3, 2.0) == 4.0)
    assert np.all(k2.gaussian(7, 3, 1.0) == -1.0) and const.calls == 2
    scaled = ScaledNoise(NumpyNoise(5), 0.1).keyed()
    np.testing.assert_allclose(scaled.gaussian(1, (2, 3), 2.0), 0.1 * first[1])


def test_streamed_release_records_the_dense_event():
    dense, stream = Ledger(), Ledger()
    Releaser(NumpyNoise(0), dense).gaussian(np.zeros(4), sensitivity=2.0, std=3.0)
    Releaser(NumpyNoise(0), dense).laplace(np.zeros(4), sensitivity=2.0, scale=3.0)
    rel = Releaser(NumpyNoise(0), stream)
    out = rel.gaussian_stream(sensitivity=2.0, std=3.0, size=4).release(4, np.ones((2, 2)))
    rel.laplace_stream(sensitivity=2.0, scale=3.0, size=4)
    assert stream.events == dense.events and out.shape == (2, 2)
    with pytest.raises(InvalidParameterError, match="'std'"):
        rel.gaussian_stream(sensitivity=1.0, std=-1.0, size=1)


def test_secure_noise_draws_keyed_blocks():
    pytest.importorskip("opendp")
    z = SecureNoise().keyed().gaussian(0, 4000, 2.0) / 2.0
    assert abs(z.var() - 1.0) < 0.1 and abs(z.mean()) < 0.1
