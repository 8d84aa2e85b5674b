"""The numba kernel of the noise sources: NumPy's Laplace sampler as a transform of its uniforms.

NumPy's ``Generator.laplace(0, 1)`` draws one ``next_double`` ``U`` per number (the bit generator's
53-bit uniform, the same ``Generator.random`` returns) and returns ``0 − 1·log(2 − U − U)`` when
``U ≥ 0.5``, ``0 + 1·log(U + U)`` when ``0 < U < 0.5``, and rejects ``U = 0`` (it draws again).
:func:`laplace_from_uniforms` computes the same expressions, in the same order, with the same C
library ``log`` (numba lowers ``math.log`` to a call of it), from the uniforms of
``Generator.random`` — so the numbers are NumPy's bit for bit — but in three loops (the argument,
the logarithm, the sign and the scale) with no branch per number (the caller passes blocks that
fit in the cache): about twice as fast as NumPy's
per-number sampler for large draws. It reports a ``U = 0`` (probability 2⁻⁵³ per number), which
NumPy would have rejected: the caller then draws again with NumPy's own sampler from the saved
state (:func:`privrl.privacy.noise.numpy_laplace`).

The path is taken only where it is exact (:func:`privrl.privacy.noise.compiled_laplace_is_numpys`):
numba does not vectorise the logarithm with Intel's SVML (whose ``log`` is not the C library's) and
the kernel reproduces NumPy's sampler on a seeded sample of 10⁵ numbers (checked once per process).
"""

from __future__ import annotations

import math

import numpy as np

from privrl._jit import compilers

jit, inlined, COMPILED = compilers()

__all__ = ["COMPILED", "laplace_from_uniforms"]


@jit
def laplace_from_uniforms(u: np.ndarray, scale: float, out: np.ndarray) -> bool:
    """``out = scale · Lap(1)`` from the uniforms ``u`` (flat, same length) as NumPy's
    ``random_laplace`` computes it (module doc); returns whether some ``u`` is 0 (``out`` is then
    not NumPy's: draw again)."""
    n = u.shape[0]
    least = 1.0
    for i in range(n):
        x = u[i]
        least = min(least, x)
        out[i] = (2.0 - x - x) if x >= 0.5 else (x + x)
    for i in range(n):
        out[i] = math.log(out[i])
    for i in range(n):
        log = out[i]
        out[i] = scale * ((0.0 - 1.0 * log) if u[i] >= 0.5 else (0.0 + 1.0 * log))
    return least == 0.0

