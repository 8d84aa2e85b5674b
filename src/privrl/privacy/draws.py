"""The release invariant: every number a fit's noise source drew belongs to a ledger event.

A fit's :class:`~privrl.privacy.accounting.Ledger` holds, beside its events, the
:class:`NoiseDeclaration` of each event — what the release drew: the kind of noise, the scale of
each coordinate, how many coordinates it released and under which sensitivity — and a
:class:`DrawLog` of what the fit's :class:`~privrl.privacy.noise.NoiseSource` actually drew: the
numbers of *fresh* draws per (kind, scale), and for keyed streams every block read (a block read a
second time must return the numbers of the first read: the same release, not a new one).

:func:`release_problems` compares the two. It is what lets a test see a release that the ledger
does not count — e.g. one pooled step of transition counts drawn again, with fresh noise, at each of
``H`` steps while the ledger records one release (then the fresh draws of the stream's scale are
``H`` times its declared dimension). The checks:

1. every drawn (kind, scale) is declared by some event (no noise drawn outside the ledger);
2. where every event drawing at a (kind, scale) states its dimension, the fresh draws at that
   (kind, scale) equal the sum of the dimensions (no release drawn twice, none skipped);
3. each declared event's noise multiplier times its sensitivity equals its declared scale
   (Gaussian σ/Δ, Laplace b/Δ: the event describes the noise that was drawn);
4. no keyed block was read with two different values (with :func:`verify_releases`, which keeps a
   digest of every block; without it the read guard of :class:`~privrl.privacy.noise.KeyedNoise`
   still refuses a second read it cannot reproduce);
5. every private event (one with a finite noise parameter) carries a declaration.

Privatizers whose number of draws is data-dependent or pre-drawn in blocks (the tree and BLT
counters' node noise, the Gaussian-process paths of functional noise, input perturbation's block of
reward noise) declare ``size=None``; privatizers that draw standard noise and scale it themselves
declare ``scale=None``. For those only checks 1, 4 and 5 apply, and their sizes and scales are
checked by the release-point audits (:mod:`privrl.audit`) instead.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["NoiseDeclaration", "DrawLog", "verify_releases", "release_problems", "ANY_SCALE", "HIDDEN_SCALE",
           "triu_size"]

#: the scale of a declaration whose privatizer draws standard noise and scales it itself
ANY_SCALE = None
#: the scale recorded for a release whose σ is data-dependent (never recorded: it is not part of the release)
HIDDEN_SCALE = -1.0

_VERIFY: contextvars.ContextVar[bool] = contextvars.ContextVar("privrl_verify_releases", default=False)


@contextlib.contextmanager
def verify_releases() -> Iterator[None]:
    """Within this block, every :class:`DrawLog` made keeps a digest of each keyed block it reads, so
    :func:`release_problems` can check that a block read twice returned the same numbers. Costs a
    hash of every keyed block: for tests and audits, not production fits."""
    token = _VERIFY.set(True)
    try:
        yield
    finally:
        _VERIFY.reset(token)


def triu_size(shape: tuple[int, ...]) -> int:
    """Coordinates of a stack of symmetric ``(..., n, n)`` matrices released through their upper
    triangle (diagonal included)."""
    n = shape[-1]
    return int(np.prod(shape[:-2], dtype=np.int64)) * n * (n + 1) // 2


@dataclass(frozen=True)
class NoiseDeclaration:
    """What one ledger event drew: ``kind`` ("gaussian", "laplace", or "none" for an event with no
    draws of its own, e.g. the failure probability of a high-probability bound); ``scale`` the std σ (Gaussian)
    or b (Laplace) of every coordinate, or None (:data:`ANY_SCALE`) when the privatizer draws
    standard noise and scales it itself; ``size`` the number of coordinates released, or None when
    it is data-dependent; ``sensitivity`` Δ (ℓ2 for Gaussian, ℓ1 for Laplace) when the event is
    ``GaussianDpEvent(σ/Δ)`` / ``LaplaceDpEvent(b/Δ)``; ``external`` for an event whose noise was
    drawn by another fit with its own ledger (its draws are checked there)."""

    kind: str
    scale: float | None
    size: int | None
    sensitivity: float | None = None
    external: bool = False
    note: str = ""


class DrawLog:
    """What a noise source drew for one fit: fresh numbers per (kind, scale), keyed block reads."""

    def __init__(self) -> None:
        self.fresh: Counter[tuple[str, float]] = Counter()
        self.rereads = 0
        self.conflicts: list[str] = []
        self._digests: dict[tuple[int, int], str] | None = {} if _VERIFY.get() else None
        self._streams = 0

    @property
    def verifying(self) -> bool:
        return self._digests is not None

    def drew(self, kind: str, scale: float, count: int) -> None:
        """``count`` fresh numbers of ``kind`` at ``scale`` were drawn."""
        if count:
            self.fresh[(kind, float(scale))] += int(count)

    def new_stream(self) -> int:
        """An id for a keyed stream of this fit."""
        self._streams += 1
        return self._streams

    def read_block(self, stream: int, key: int, values: np.ndarray, fresh: bool) -> None:
        """Block ``key`` of keyed stream ``stream`` was read (``fresh``: for the first time)."""
        if not fresh:
            self.rereads += 1
        if self._digests is None:
            return
        digest = hashlib.blake2b(np.ascontiguousarray(values).tobytes(), digest_size=16).hexdigest()
        first = self._digests.setdefault((stream, key), digest)
        if first != digest:
            self.conflicts.append(f"stream {stream}: block {key} read twice with different values")

    def total(self) -> int:
        return sum(self.fresh.values())


def _event_scale(event: DpEvent, sensitivity: float) -> tuple[str, float] | None:
    """(kind, σ or b) that a Gaussian/Laplace event states for sensitivity Δ, else None."""
    dp = _dp()
    if isinstance(event, dp.GaussianDpEvent):
        return "gaussian", float(event.noise_multiplier) * sensitivity
    if isinstance(event, dp.LaplaceDpEvent):
        return "laplace", float(event.noise_multiplier) * sensitivity
    return None


def _dp() -> Any:
    import dp_accounting  # lazy: `import privrl` does not load dp-accounting

    return dp_accounting


def _is_private_event(event: DpEvent) -> bool:
    dp = _dp()
    if isinstance(event, (dp.GaussianDpEvent, dp.LaplaceDpEvent)):
        return math.isfinite(float(event.noise_multiplier)) and float(event.noise_multiplier) > 0
    if isinstance(event, (dp.NoOpDpEvent, dp.NonPrivateDpEvent)):
        return False
    if isinstance(event, dp.ComposedDpEvent):
        return any(_is_private_event(e) for e in event.events)
    if isinstance(event, dp.SelfComposedDpEvent):
        return _is_private_event(event.event)
    return True


def release_problems(ledger: Any) -> list[str]:
    """Every way the ledger's events and its draw log disagree (the module docstring's five checks);
    empty when the invariant holds."""
    log: DrawLog = ledger.draws
    problems = list(log.conflicts)
    exact: Counter[tuple[str, float]] = Counter()
    open_buckets: set[tuple[str, float]] = set()
    any_scale: set[str] = set()
    for i, (event, decl) in enumerate(zip(ledger.events, ledger.declarations)):
        if decl is None:
            if _is_private_event(event):
                problems.append(f"event {i} ({type(event).__name__}) has no noise declaration")
            continue
        if decl.external or decl.kind == "none":
            continue
        if decl.sensitivity is not None and decl.scale is not None:
            stated = _event_scale(event, decl.sensitivity)
            if stated is not None and (stated[0] != decl.kind
                                       or not math.isclose(stated[1], decl.scale, rel_tol=1e-9, abs_tol=0.0)):
                problems.append(f"event {i} states {stated[0]} scale {stated[1]:.6g} but drew {decl.kind} "
                                f"scale {decl.scale:.6g}")
        if decl.scale is None:
            any_scale.add(decl.kind)
        elif decl.size is None:
            open_buckets.add((decl.kind, float(decl.scale)))
        elif decl.scale > 0 or decl.scale == HIDDEN_SCALE:
            exact[(decl.kind, float(decl.scale))] += int(decl.size)
    for bucket, count in sorted(log.fresh.items()):
        kind, scale = bucket
        if bucket in open_buckets or kind in any_scale:
            if bucket in exact and count < exact[bucket]:
                problems.append(f"{kind} noise of scale {scale:.6g}: {count} numbers drawn, fewer than the "
                                f"{exact[bucket]} released")
            continue
        if bucket not in exact:
            problems.append(f"{count} {kind} numbers of scale {scale:.6g} drawn that no ledger event declares")
        elif count != exact[bucket]:
            problems.append(f"{kind} noise of scale {scale:.6g}: {count} numbers drawn for {exact[bucket]} "
                            f"released ({count / exact[bucket]:.3g} releases where the ledger records one)")
    for bucket, size in sorted(exact.items()):
        if bucket not in log.fresh and size and bucket[0] not in any_scale:
            problems.append(f"{bucket[0]} noise of scale {bucket[1]:.6g}: {size} numbers declared, none drawn")
    return problems
