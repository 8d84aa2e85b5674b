"""Random number generation without global state (ARCHITECTURE.md §4).

Every public function takes ``rng: numpy.random.Generator | int | None``. Inside ``fit``,
:func:`child_rngs` derives *named* child streams (``"env"``, ``"policy"``, ``"privacy"``...) from
the seed, so that a sweep over the privacy budget sees exactly the same data at every level: the
data stream does not depend on how much noise was drawn.

NumPy's PCG64 is not a cryptographically secure generator and floating-point noise is not
hardened against the attacks of Mironov (2012); for deployment use ``secure=True`` on the
mechanisms (OpenDP samplers), which refuses seeds.
"""

from __future__ import annotations

import warnings
import zlib
from typing import Any, Union

import numpy as np

from privrl.errors import InvalidParameterError

RngLike = Union[np.random.Generator, int, np.random.SeedSequence, None]

__all__ = ["RngLike", "as_generator", "child_rngs", "seed_sequence", "derive_seed", "rng_or_deprecated_seed"]


def seed_sequence(rng: RngLike) -> np.random.SeedSequence:
    """A :class:`~numpy.random.SeedSequence` derived from ``rng``.

    * int / SeedSequence: a pure function of the value (same seed, same sequence);
    * ``None``: fresh OS entropy;
    * Generator: a *fresh child* of the generator's seed sequence (``SeedSequence.spawn``, as
      ``Generator.spawn`` does), so calling this twice with the same generator object gives two
      independent sequences — exactly like drawing from it twice — while the generator's own
      stream is not advanced. Two generators built from the same seed give the same children in
      the same order. (Reusing one sequence for two calls would give two releases the *same*
      noise, and their difference would reveal the difference of the data exactly.)
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, np.random.Generator):
        ss = getattr(rng.bit_generator, "seed_seq", None)
        if isinstance(ss, np.random.SeedSequence):
            return ss.spawn(1)[0]
        return np.random.SeedSequence(int(rng.integers(0, 2**63)))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise InvalidParameterError(
                f"The 'rng' parameter must be a numpy Generator, an int seed in [0, inf), a SeedSequence "
                f"or None. Got {rng!r} instead.")
        return np.random.SeedSequence(int(rng))
    raise InvalidParameterError(
        "The 'rng' parameter must be a numpy.random.Generator, a non-negative int, a SeedSequence "
        f"or None. Got {type(rng).__name__} instead."
    )


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a Generator: the one passed, or a new one seeded from an int / SeedSequence / entropy."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.Generator(np.random.PCG64(seed_sequence(rng)))


def _name_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def child_rngs(rng: RngLike, *names: str) -> dict[str, np.random.Generator]:
    """Independent named child generators, stable under adding or reordering names.

    The child for ``name`` depends only on the parent seed and ``name``: ``child_rngs(7, "env")``
    and ``child_rngs(7, "privacy", "env")`` give the same ``"env"`` stream. With a Generator,
    each call derives from a fresh child of its seed sequence (see :func:`seed_sequence`): a
    fresh ``default_rng(7)`` always gives the same children, but calling twice with one generator
    object gives new, independent noise.
    """
    for name in names:
        if not isinstance(name, str) or not name:
            raise InvalidParameterError(
                f"The 'names' parameter of child_rngs must be non-empty strings. Got {name!r} instead.")
    if len(set(names)) != len(names):
        raise InvalidParameterError(
            f"The 'names' parameter of child_rngs must be distinct strings. Got {names!r} instead.")
    parent = seed_sequence(rng)
    out = {}
    for name in names:
        ss = np.random.SeedSequence(entropy=parent.entropy, spawn_key=(*parent.spawn_key, _name_key(name)))
        out[name] = np.random.Generator(np.random.PCG64(ss))
    return out


def derive_seed(*parts: object) -> int:
    """A deterministic 63-bit seed from any printable parts, e.g. (experiment id, setting, seed)."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    words = [zlib.crc32(text, salt) for salt in (0x9E3779B9, 0x85EBCA6B, 0xC2B2AE35, 0x27D4EB2F)]
    return int(np.random.SeedSequence(words).generate_state(2, np.uint64)[0] >> np.uint64(1))


def rng_or_deprecated_seed(rng: RngLike, seed: Any, owner: str, *, default: RngLike = None) -> RngLike:
    """``rng``, or the value of the deprecated ``seed=`` keyword of ``owner`` (with a
    ``DeprecationWarning``: ``seed`` is accepted for one release). ``seed`` together with an
    ``rng`` other than ``default`` is an error."""
    if seed is None:
        return rng
    warnings.warn(f"{owner}(seed=...) is deprecated and will be removed in the next release: use rng= "
                  "(an int seed or a numpy Generator).", DeprecationWarning, stacklevel=3)
    if not (rng is default or (isinstance(rng, int) and isinstance(default, int) and rng == default)):
        raise InvalidParameterError(f"The 'seed' parameter of {owner} is a deprecated alias of 'rng': give "
                                    f"only rng. Got seed={seed!r} and rng={rng!r}.")
    return seed
