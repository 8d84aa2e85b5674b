"""Seeded NumPy noise (``privrl.privacy.noise``): the compiled path of its Laplace sampler draws
NumPy's numbers bit for bit, from the same stream, and falls back to NumPy's own sampler when a
uniform is 0."""

import math

import numpy as np
import pytest

from privrl.privacy import NumpyNoise, ScaledNoise
from privrl.privacy import _kernels as kern
from privrl.privacy import noise as noise_module

pytestmark = pytest.mark.skipif(not noise_module.compiled_laplace_is_numpys(),
                                reason="the compiled path needs numba (without SVML)")

#: sizes below, at and above the compiled path's threshold, and scales (1 and others)
CASES = [((7,), 1.0), ((4096,), 1.0), ((3, 20_000), 2.5), ((512, 84), 1200.0), ((2, 3, 1000), 0.37)]


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=float).view(np.int64)


@pytest.mark.parametrize(("shape", "scale"), CASES)
def test_laplace_draws_are_numpys_bits_and_leave_the_stream_where_numpy_does(shape, scale):
    source, reference = NumpyNoise(11), np.random.default_rng(11)
    for _ in range(3):
        got = source.laplace(shape, scale)
        want = scale * reference.laplace(0.0, 1.0, size=shape)
        assert got.shape == want.shape
        np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(source.rng.random(5), reference.random(5))      # the same state after
    keyed, gen = NumpyNoise(3).keyed(), NumpyNoise(3).keyed()
    np.testing.assert_array_equal(_bits(keyed.laplace(4, shape, scale)), _bits(gen.laplace(4, shape, scale)))
    halved = ScaledNoise(NumpyNoise(5), 0.5).laplace(shape, scale)
    np.testing.assert_array_equal(_bits(halved), _bits(scale * np.random.default_rng(5).laplace(size=shape) * 0.5))


def test_large_draws_take_the_compiled_path(monkeypatch):
    calls = []
    kernel = kern.laplace_from_uniforms

    def spy(u, scale, out):
        calls.append(u.size)
        return kernel(u, scale, out)

    monkeypatch.setattr(kern, "laplace_from_uniforms", spy)
    NumpyNoise(0).laplace((16, 1680), 3.0)
    NumpyNoise(0).laplace(noise_module.FAST_LAPLACE_SIZE - 1, 3.0)
    block = noise_module.LAPLACE_BLOCK
    assert calls == [block, 16 * 1680 - block]        # in blocks of one reused buffer; a small draw: NumPy's


def test_a_zero_uniform_is_drawn_again_by_numpys_sampler(monkeypatch):
    u = np.array([0.0, 0.25, 0.5, 0.75, 1.0 - 2.0**-53])
    out = np.empty(5)
    assert kern.laplace_from_uniforms(u, 2.0, out)                     # NumPy rejects U = 0: reported
    numpys = [2.0 * (0.0 - 1.0 * math.log(2.0 - x - x) if x >= 0.5 else 0.0 + 1.0 * math.log(x + x)) for x in u[1:]]
    np.testing.assert_array_equal(out[1:], numpys)      # random_laplace's expressions (NumPy's distributions.c)
    assert not kern.laplace_from_uniforms(u[1:], 2.0, out[1:])
    monkeypatch.setattr(kern, "laplace_from_uniforms", lambda u, scale, out: True)   # as if a uniform were 0
    source, reference = NumpyNoise(2), np.random.default_rng(2)
    np.testing.assert_array_equal(_bits(source.laplace(10_000, 4.0)),
                                  _bits(4.0 * reference.laplace(0.0, 1.0, size=10_000)))
    np.testing.assert_array_equal(source.rng.random(3), reference.random(3))
