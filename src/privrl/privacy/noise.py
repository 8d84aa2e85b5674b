"""Noise sources: where every privacy-noise draw of privrl comes from (ARCHITECTURE.md §1.1).

A :class:`NoiseSource` draws i.i.d. Gaussian or Laplace noise of a given scale. Algorithms never
call a random generator for privacy noise themselves: they pass a source to the release functions
of :mod:`privrl.privacy.release` (or to a streaming privatizer that draws through it), so the noise
is pluggable without touching an algorithm:

* :class:`NumpyNoise` — seeded NumPy (the default; reproducible, not a CSPRNG);
* :class:`SecureNoise` — OpenDP's samplers (OS CSPRNG, exact sampling; refuses seeds);
* :class:`ConstantNoise` — deterministic values, for structure tests;
* :class:`ScaledNoise` — another source's noise times a factor: the one generic "noise ÷ k"
  negative control of the audits (the ledger still claims the unscaled noise).

Draw semantics are *standardised*: ``gaussian(shape, std)`` returns ``std · Z`` where ``Z`` is the
source's standard draw, so a :class:`ConstantNoise` of value ``c`` yields ``c · std`` and a
structure test checks the noise scale as well as where the noise lands.

**Keyed noise** (:meth:`NoiseSource.keyed`): a release too large to hold at once (DP-APVI's
``H·S·A·S`` transition counts) draws its noise block by block where it is consumed. ``keyed()``
opens one such release and returns a :class:`KeyedNoise` whose ``gaussian(key, shape, std)`` is the
noise of block ``key``: for seeded NumPy noise a stream seeded per block (entropy drawn once from
the source, the block's key as NumPy's ``SeedSequence`` spawn key), so a block's noise does not
depend on the order in which blocks are drawn, blocks are independent of one another and of every
other release, and each entry is ``std`` times a standard Gaussian (or Laplace) draw.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.errors import PrivacyError
from privrl.privacy.draws import DrawLog
from privrl.privacy.secure import check_secure_rng, secure_gaussian, secure_laplace

__all__ = ["NoiseSource", "NumpyNoise", "SecureNoise", "ConstantNoise", "ScaledNoise", "KeyedNoise",
           "guarded_keyed", "make_noise", "numpy_laplace", "compiled_laplace_is_numpys", "triu_pairs"]

Shape = tuple[int, ...]


def _shape(shape: Any) -> Shape:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


_TRIU: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def triu_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the upper triangle (diagonal included) of an ``n × n`` matrix and of their
    mirror images (cached)."""
    if n not in _TRIU:
        rows, cols = np.triu_indices(n)
        _TRIU[n] = (rows * n + cols, cols * n + rows)
    return _TRIU[n]


class NoiseSource:
    """Base class. Subclasses implement :meth:`_standard` (``kind`` "gaussian" or "laplace"), or
    :meth:`_draw` for a sampler that draws at a scale directly.

    Every draw is counted in :attr:`log` (a :class:`~privrl.privacy.draws.DrawLog`, set by the
    :class:`~privrl.privacy.release.Releaser` of a fit: the release invariant compares it with the
    ledger)."""

    secure: bool = False
    #: the draw log of the fit drawing from this source (None: not counted)
    log: DrawLog | None = None

    def _standard(self, kind: str, shape: Shape) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, kind: str, shape: Shape, scale: float) -> np.ndarray:
        """``scale`` times i.i.d. standard draws of ``kind`` (not counted: the public methods count)."""
        return float(scale) * self._standard(kind, shape)

    def _counted(self, kind: str, shape: object, scale: float) -> np.ndarray:
        shape = _shape(shape)
        if scale == 0:
            return np.zeros(shape)
        out = self._draw(kind, shape, float(scale))
        if self.log is not None:
            self.log.drew(kind, float(scale), out.size)
        return out

    def gaussian(self, shape: object, std: float) -> np.ndarray:
        """i.i.d. ``N(0, std²)`` of ``shape`` (zeros when ``std == 0``, no draw)."""
        return self._counted("gaussian", shape, std)

    def laplace(self, shape: object, scale: float) -> np.ndarray:
        """i.i.d. ``Lap(scale)`` of ``shape`` (zeros when ``scale == 0``, no draw)."""
        return self._counted("laplace", shape, scale)

    def symmetric_gaussian(self, shape: object, std: float) -> np.ndarray:
        """Symmetric Gaussian matrices of ``shape = (..., n, n)``: the upper triangle (diagonal
        included) i.i.d. ``N(0, std²)``, mirrored below (the diagonal has variance std², not 2std²)."""
        shape = _shape(shape)
        n = shape[-1]
        if len(shape) < 2 or shape[-2] != n:
            raise param_error("shape", "NoiseSource.symmetric_gaussian", "(..., n, n)", shape)
        flat, flat_t = triu_pairs(n)
        upper = self.gaussian((*shape[:-2], flat.size), std)
        out = np.empty((*shape[:-2], n * n))
        out[..., flat] = upper
        out[..., flat_t] = upper
        return out.reshape(shape)

    def keyed(self, *, reread: bool = False) -> KeyedNoise:
        """Noise addressed by block key for one release (module docstring). A subclass that overrides
        it without ``reread`` still gets the read guard (:meth:`guarded_keyed`). The default draws the
        blocks from this source in the order they are asked for (independent, correctly
        distributed, order-dependent), so a block cannot be drawn again: with ``reread=True`` (the
        consumer reads some blocks more than once, e.g. one pooled step planned at every h) each
        block is kept and a second read returns it; otherwise a second read is an error. Seeded
        NumPy noise overrides it with counter-based streams (a block re-derived from its key)."""
        return KeyedNoise(lambda kind, key, shape, scale: self._draw(kind, shape, scale),
                          reproducible=False, keep=reread, log=self.log)


def guarded_keyed(source: NoiseSource, *, reread: bool = False) -> KeyedNoise:
    """``source.keyed(reread=reread)``; for a source whose ``keyed`` predates ``reread`` (a user's
    subclass), its stream behind a guard that keeps every block read when ``reread`` and refuses a
    second read otherwise — a block is never drawn twice."""
    if "reread" in inspect.signature(source.keyed).parameters:
        return source.keyed(reread=reread)
    inner = source.keyed()
    return KeyedNoise(lambda kind, key, shape, scale: inner.gaussian(key, shape, scale) if kind == "gaussian"
                      else inner.laplace(key, shape, scale), reproducible=False, keep=reread, log=source.log)


class KeyedNoise:
    """The noise of one release, block by block: :meth:`gaussian` / :meth:`laplace` of block ``key``
    (an int >= 0). ``draw(kind, key, shape, scale)`` returns ``scale`` times the source's standard
    draw for the block.

    A block is one part of *one* release: reading it again must return the same numbers, never a
    fresh draw (that would be a second release the ledger does not count). So a second read is
    re-derived when the source is ``reproducible`` (counter-based streams), returned from the kept
    copy when ``keep``, and refused otherwise; a second read with another kind, shape or scale is
    refused too. ``log`` counts each block's numbers once."""

    def __init__(self, draw: Any, *, reproducible: bool = False, keep: bool = False,
                 log: DrawLog | None = None) -> None:
        self._draw = draw
        self._reproducible, self._keep, self._log = bool(reproducible), bool(keep), log
        self._seen: dict[int, tuple[str, Shape, float]] = {}
        self._kept: dict[int, np.ndarray] = {}
        self._stream = log.new_stream() if log is not None else 0

    def _read(self, kind: str, key: int, shape: object, scale: float) -> np.ndarray:
        shape, key, scale = _shape(shape), int(key), float(scale)
        if key < 0:
            raise param_error("key", "KeyedNoise", "an int >= 0", key)
        if scale == 0:
            return np.zeros(shape)
        first = self._seen.get(key)
        if first is not None and first != (kind, shape, scale):
            raise param_error("key", "KeyedNoise", f"read again as {first} (one block, one release)",
                              f"block {key} as {(kind, shape, scale)}")
        if first is not None and key in self._kept:
            out = self._kept[key].copy()
        elif first is not None and not self._reproducible:
            raise PrivacyError(
                f"Block {key} of a keyed release was read twice from a noise source that cannot draw it again: "
                "a fresh draw would be a second release that the ledger does not count. Open the release "
                "with reread=True to keep its blocks.")
        else:
            out = self._draw(kind, key, shape, scale)
            if self._keep and first is None:
                self._kept[key] = out.copy()
        if self._log is not None:
            if first is None:
                self._log.drew(kind, scale, out.size)
            self._log.read_block(self._stream, key, out, fresh=first is None)
        self._seen[key] = (kind, shape, scale)
        return out

    def gaussian(self, key: int, shape: object, std: float) -> np.ndarray:
        """i.i.d. ``N(0, std²)`` for block ``key`` (zeros, no draw, when ``std == 0``)."""
        return self._read("gaussian", key, shape, std)

    def laplace(self, key: int, shape: object, scale: float) -> np.ndarray:
        """i.i.d. ``Lap(scale)`` for block ``key`` (zeros, no draw, when ``scale == 0``)."""
        return self._read("laplace", key, shape, scale)


class NumpyNoise(NoiseSource):
    """Seeded NumPy noise (PCG64): reproducible; not a CSPRNG and not hardened against
    floating-point attacks (Mironov 2012)."""

    def __init__(self, rng: RngLike) -> None:
        if rng is None:
            raise param_error("rng", "NumpyNoise", "a numpy Generator or int seed (or use SecureNoise)", rng)
        self.rng = as_generator(rng)

    def _standard(self, kind: str, shape: Shape) -> np.ndarray:
        return _numpy_standard(self.rng, kind, shape)

    def _draw(self, kind: str, shape: Shape, scale: float) -> np.ndarray:
        if kind == "laplace":
            return numpy_laplace(self.rng, shape, scale)     # the product with the scale made in the sampler
        return super()._draw(kind, shape, scale)

    def keyed(self, *, reread: bool = False) -> KeyedNoise:
        """Per-block seeded streams: 128 bits of entropy drawn once from :attr:`rng` (one draw of this
        source per release), block ``key`` from PCG64 seeded by ``SeedSequence(entropy, spawn_key=(key,))``
        — NumPy's independent child streams, so the blocks are independent of one another and of
        every other draw, and their order does not matter."""
        entropy = [int(x) for x in self.rng.integers(0, 2**63, size=2)]

        def draw(kind: str, key: int, shape: Shape, scale: float) -> np.ndarray:
            gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(key,))))
            out = _numpy_standard(gen, kind, shape)
            out *= scale                 # in place: the same products, no second array
            return out

        return KeyedNoise(draw, reproducible=True, log=self.log)


def _numpy_standard(rng: np.random.Generator, kind: str, shape: Shape) -> np.ndarray:
    if kind == "gaussian":
        return rng.standard_normal(shape)
    return numpy_laplace(rng, shape)


#: draws of at least this many numbers take the compiled path of :func:`numpy_laplace`
FAST_LAPLACE_SIZE = 4096
#: uniforms per block of that path: one buffer, reused, that stays in the core's cache (a fresh array
#: of a large draw's size costs page faults comparable to the draw)
LAPLACE_BLOCK = 16_384


def numpy_laplace(rng: np.random.Generator, shape: Shape, scale: float = 1.0) -> np.ndarray:
    """``scale · rng.laplace(0, 1, size=shape)``, bit for bit and from the same stream.

    A draw of at least :data:`FAST_LAPLACE_SIZE` numbers computes NumPy's transform of its uniforms
    in a compiled kernel (:mod:`privrl.privacy._kernels`: the same uniforms, expressions and
    ``log``, block by block; about twice as fast), where the kernel is checked to give NumPy's
    numbers. When a uniform is 0, which NumPy's sampler would have rejected, the stream goes back
    to its state before the draw and NumPy's sampler draws it."""
    size = int(np.prod(shape, dtype=np.int64))
    if size >= FAST_LAPLACE_SIZE:
        from privrl.privacy import _kernels  # here: numba loads on the first large draw, not on import privrl

        if compiled_laplace_is_numpys():
            saved = rng.bit_generator.state
            out, uniforms = np.empty(size), np.empty(min(size, LAPLACE_BLOCK))
            zero = False
            for start in range(0, size, uniforms.size):
                block = uniforms[:min(uniforms.size, size - start)]
                rng.random(out=block)
                zero |= _kernels.laplace_from_uniforms(block, float(scale), out[start:start + block.size])
            if not zero:
                return out.reshape(shape)
            rng.bit_generator.state = saved
    draw = rng.laplace(0.0, 1.0, size=shape)
    return draw if scale == 1.0 else float(scale) * draw


_EXACT: list[bool] = []


def compiled_laplace_is_numpys() -> bool:
    """Whether :func:`~privrl.privacy._kernels.laplace_from_uniforms` gives NumPy's numbers here: the
    kernels compile, numba does not vectorise ``log`` with Intel's SVML (whose ``log`` is not the C
    library's), and a seeded sample of 10⁵ numbers (public, not privacy noise) is NumPy's bit for
    bit. Checked once per process."""
    if not _EXACT:
        from privrl.privacy import _kernels  # here: numba loads on the first large draw, not on import privrl

        ok = _kernels.COMPILED
        if ok:
            from numba import config

            ok = not getattr(config, "USING_SVML", False)     # set by numba's config at import
        if ok:
            u, out = np.random.default_rng(0).random(100_000), np.empty(100_000)
            ok = not _kernels.laplace_from_uniforms(u, 1.0, out) and np.array_equal(
                out.view(np.int64), np.random.default_rng(0).laplace(0.0, 1.0, size=100_000).view(np.int64))
        _EXACT.append(bool(ok))
    return _EXACT[0]


class SecureNoise(NoiseSource):
    """OpenDP's samplers (extra ``secure``): OS CSPRNG, exact sampling, never seeded. A block of a
    keyed release cannot be drawn twice (:meth:`NoiseSource.keyed`)."""

    secure = True

    def _draw(self, kind: str, shape: Shape, scale: float) -> np.ndarray:
        sample = secure_gaussian if kind == "gaussian" else secure_laplace
        return sample(np.zeros(shape), float(scale))

    def _standard(self, kind: str, shape: Shape) -> np.ndarray:
        return self._draw(kind, shape, 1.0)


class ConstantNoise(NoiseSource):
    """Deterministic test noise: the ``j``-th draw (call) is filled with ``values[j]`` (standardised:
    times the std/scale), cycling when ``values`` is shorter than the number of draws; a scalar is
    used for every draw. ``calls`` counts draws."""

    def __init__(self, values: float | Sequence[float] = 1.0) -> None:
        self.values = np.atleast_1d(np.asarray(values, dtype=float))
        if self.values.size == 0 or not np.all(np.isfinite(self.values)):
            raise param_error("values", "ConstantNoise", "a non-empty sequence of finite floats", values)
        self.calls = 0

    def _standard(self, kind: str, shape: Shape) -> np.ndarray:
        value = self.values[self.calls % self.values.size]
        self.calls += 1
        return np.full(shape, value)

    def keyed(self, *, reread: bool = False) -> KeyedNoise:
        """One value for the whole release (one draw, as if it were released at once)."""
        value = float(self._standard("gaussian", ()))
        return KeyedNoise(lambda kind, key, shape, scale: np.full(shape, scale * value), reproducible=True,
                          log=self.log)


class ScaledNoise(NoiseSource):
    """``factor`` × the noise of ``base``: a deliberately broken implementation for the audits'
    negative controls ("noise ÷ 10" is ``ScaledNoise(base, 0.1)``). The events still claim the
    unscaled noise, so an audit must find the violation."""

    def __init__(self, base: NoiseSource, factor: float) -> None:
        if not isinstance(base, NoiseSource):
            raise param_error("base", "ScaledNoise", "a NoiseSource", base)
        self.base = base
        self.factor = check_scalar(factor, "factor", owner="ScaledNoise", low=0.0)
        self.secure = base.secure

    def _standard(self, kind: str, shape: Shape) -> np.ndarray:
        return self.factor * self.base._standard(kind, shape)

    def _draw(self, kind: str, shape: Shape, scale: float) -> np.ndarray:
        return self.base._draw(kind, shape, scale) * self.factor

    def keyed(self, *, reread: bool = False) -> KeyedNoise:
        base = self.base.keyed(reread=reread)
        return KeyedNoise(lambda kind, key, shape, scale: self.factor * (
            base.gaussian(key, shape, scale) if kind == "gaussian" else base.laplace(key, shape, scale)),
            reproducible=True, log=self.log)   # the base stream re-derives, keeps or refuses a second read


def make_noise(rng: RngLike | NoiseSource = None, *, secure: bool = False,
               owner: str = "make_noise") -> NoiseSource:
    """The noise source for ``rng``: a :class:`NoiseSource` is used as it is; ``secure=True`` gives
    :class:`SecureNoise` and refuses any seed; otherwise seeded :class:`NumpyNoise` (``rng`` required:
    an unseeded default would make results irreproducible without making them secure)."""
    if isinstance(rng, NoiseSource):
        return rng
    if not isinstance(secure, (bool, np.bool_)):
        raise param_error("secure", owner, "a bool", secure)
    if secure:
        check_secure_rng(rng, owner)
        return SecureNoise()
    if rng is None:
        raise param_error("rng", owner,
                          "a numpy Generator or int seed (or secure=True for unseeded OS randomness)", rng)
    return NumpyNoise(rng)
