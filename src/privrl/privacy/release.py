"""The release seam: ``value → (value + noise, DpEvent)`` (ARCHITECTURE.md §1.1).

Every privacy-noise draw of every private algorithm goes through this module: the functions draw
from a :class:`~privrl.privacy.noise.NoiseSource` and return a :class:`Release` (the noisy value and
the event that describes it), and a :class:`Releaser` does the same while appending each event to
one :class:`~privrl.privacy.accounting.Ledger` — the estimator base class gives every ``fit`` one.

Sensitivity convention (see :mod:`privrl.privacy.accounting`): Δ is measured under the algorithm's
own neighbouring relation; a Gaussian release of std σ has the event ``GaussianDpEvent(σ/Δ)``
(ρ-zCDP with ρ = Δ²/(2σ²)); a Laplace release of scale b on an ℓ1-sensitivity-Δ query has
``LaplaceDpEvent(b/Δ)`` ((Δ/b)-DP).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from privrl._validation import check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.accounting import Ledger
from privrl.privacy.draws import HIDDEN_SCALE, NoiseDeclaration, triu_size
from privrl.privacy.noise import KeyedNoise, NoiseSource, guarded_keyed

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["Release", "release_gaussian", "release_laplace", "release_with_event", "Releaser", "StreamedRelease"]


class Release(NamedTuple):
    """A noisy value and the privacy event of producing it."""

    value: np.ndarray
    event: DpEvent


def _finite(value: object, owner: str) -> np.ndarray:
    arr = np.array(value, dtype=float)  # a copy: the caller's array is never modified
    if not np.all(np.isfinite(arr)):
        raise param_error("value", owner, "finite", "an array with non-finite entries")
    return arr


def _check_source(noise: object, owner: str) -> NoiseSource:
    if not isinstance(noise, NoiseSource):
        raise param_error("noise", owner, "a privrl NoiseSource (see privrl.privacy.make_noise)",
                          type(noise).__name__)
    return noise


def release_gaussian(value: object, *, sensitivity: float, std: float, noise: NoiseSource,
                     symmetric: bool = False) -> Release:
    """``value + N(0, σ² I)`` for a query of ℓ2-sensitivity Δ; event ``GaussianDpEvent(σ/Δ)``.

    ``symmetric=True``: ``value`` is a symmetric matrix (or a stack of them) and the noise is
    symmetric — i.i.d. on the upper triangle, diagonal included, mirrored; Δ is then the
    ℓ2-sensitivity of the upper-triangle vector (at most the Frobenius sensitivity). ``std = 0``
    is a non-private release; Δ = 0 (the query ignores the data) is a no-op event.
    """
    owner = "release_gaussian"
    sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0)
    std = check_scalar(std, "std", owner=owner, low=0.0)
    noise = _check_source(noise, owner)
    arr = _finite(value, owner)
    if symmetric:
        if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
            raise param_error("value", owner, "a square matrix (or a stack of them) when symmetric=True",
                              f"shape {arr.shape}")
        arr += noise.symmetric_gaussian(arr.shape, std)
    else:
        arr += noise.gaussian(arr.shape, std)
    nm = math.inf if sensitivity == 0 else std / sensitivity
    return Release(arr, events.gaussian(nm))


def release_laplace(value: object, *, sensitivity: float, scale: float, noise: NoiseSource) -> Release:
    """``value + Lap(b)`` i.i.d. for a query of ℓ1-sensitivity Δ; (Δ/b)-DP, event
    ``LaplaceDpEvent(b/Δ)``. ``scale = 0`` is a non-private release."""
    owner = "release_laplace"
    sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0)
    scale = check_scalar(scale, "scale", owner=owner, low=0.0)
    noise = _check_source(noise, owner)
    arr = _finite(value, owner)
    arr += noise.laplace(arr.shape, scale)
    nm = math.inf if sensitivity == 0 else scale / sensitivity
    return Release(arr, events.laplace(nm))


def release_with_event(value: object, *, std: float, event: object, noise: NoiseSource) -> Release:
    """``value + N(0, σ² I)`` whose privacy is stated by ``event`` rather than by a sensitivity —
    for mechanisms whose guarantee is a lemma of their own (DP-LSW's smoothed, data-dependent σ_X
    is (ε, δ)-DP by Balle et al. 2016, Lemma 1). σ itself is never part of the release."""
    owner = "release_with_event"
    std = check_scalar(std, "std", owner=owner, low=0.0)
    noise = _check_source(noise, owner)
    if not events.is_event(event):
        raise param_error("event", owner, "a dp_accounting DpEvent", type(event).__name__)
    arr = _finite(value, owner)
    arr += noise.gaussian(arr.shape, std)
    return Release(arr, event)


class StreamedRelease:
    """One Gaussian or Laplace release of a vector too large to hold, drawn block by block where it
    is consumed: :meth:`release` returns ``block + noise`` for the block ``key`` (an int), the noise
    from the source's :meth:`~privrl.privacy.noise.NoiseSource.keyed` streams. A block read again
    returns the same noise (:class:`~privrl.privacy.noise.KeyedNoise`). Its privacy is that of
    releasing the whole vector at once with the same scale — one event, recorded when the release
    is opened (:meth:`Releaser.gaussian_stream`)."""

    def __init__(self, noise: KeyedNoise, kind: str, scale: float) -> None:
        self._noise, self._kind, self.scale = noise, kind, scale

    def noise(self, key: int, shape: object) -> np.ndarray:
        """The noise of block ``key``."""
        if self._kind == "gaussian":
            return self._noise.gaussian(key, shape, self.scale)
        return self._noise.laplace(key, shape, self.scale)

    def release(self, key: int, block: object) -> np.ndarray:
        """``block + noise`` of block ``key`` (a new array)."""
        arr = _finite(block, "StreamedRelease.release")
        arr += self.noise(key, arr.shape)
        return arr


def _size(value: Any, symmetric: bool = False) -> int:
    shape = np.shape(value)
    return triu_size(shape) if symmetric else int(np.prod(shape, dtype=np.int64))


def _declared(kind: str, scale: float, size: int, sensitivity: float | None) -> NoiseDeclaration:
    return NoiseDeclaration(kind, float(scale), int(size), None if sensitivity is None else float(sensitivity))


class Releaser:
    """One fit's privacy: draws from ``noise`` and appends every event to ``ledger``.

    The methods mirror the release functions and return only the noisy value; :meth:`record`
    appends the event of noise that a streaming privatizer drew through :attr:`noise` itself (the
    binary tree counter draws its node noise from the same source and states its event once).

    The release invariant (:mod:`privrl.privacy.draws`): the source counts what it draws in the
    ledger's :attr:`~privrl.privacy.accounting.Ledger.draws`, and each event is recorded with the
    declaration of what its release drew.
    """

    def __init__(self, noise: NoiseSource, ledger: Ledger | list[DpEvent]) -> None:
        self.noise = _check_source(noise, "Releaser")
        self.ledger = ledger
        draws = getattr(ledger, "draws", None)
        if draws is not None:
            self.noise.log = draws

    def _keep(self, release: Release, declared: NoiseDeclaration | None = None) -> np.ndarray:
        self._append(release.event, declared)
        return release.value

    def _append(self, event: DpEvent, declared: NoiseDeclaration | None) -> None:
        # a plain list (a run that keeps no ledger) takes the event alone
        if isinstance(self.ledger, Ledger):
            self.ledger.append(event, noise=declared)
        else:
            self.ledger.append(event)

    def gaussian(self, value: object, *, sensitivity: float, std: float, symmetric: bool = False) -> np.ndarray:
        out = release_gaussian(value, sensitivity=sensitivity, std=std, noise=self.noise, symmetric=symmetric)
        return self._keep(out, _declared("gaussian", std, _size(value, symmetric), sensitivity))

    def laplace(self, value: object, *, sensitivity: float, scale: float) -> np.ndarray:
        out = release_laplace(value, sensitivity=sensitivity, scale=scale, noise=self.noise)
        return self._keep(out, _declared("laplace", scale, _size(value), sensitivity))

    def with_event(self, value: object, *, std: float, event: object) -> np.ndarray:
        """A release whose σ may be data-dependent (DP-LSW's smoothed σ_X): σ is never recorded — the
        draws are counted under :data:`~privrl.privacy.draws.HIDDEN_SCALE`, in the draw log as in the
        declaration."""
        log, self.noise.log = self.noise.log, None
        try:
            out = release_with_event(value, std=std, event=event, noise=self.noise)
        finally:
            self.noise.log = log
        size = _size(value)
        if log is not None and std > 0:
            log.drew("gaussian", HIDDEN_SCALE, size)
        return self._keep(out, _declared("gaussian", HIDDEN_SCALE if std > 0 else 0.0, size, None))

    def _stream(self, kind: str, sensitivity: float, scale: float, size: int, reread: bool,
                owner: str) -> StreamedRelease:
        sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0)
        scale = check_scalar(scale, "std" if kind == "gaussian" else "scale", owner=owner, low=0.0)
        size = check_scalar(size, "size", owner=owner, kind=int, low=0)
        nm = math.inf if sensitivity == 0 else scale / sensitivity
        self._append(events.gaussian(nm) if kind == "gaussian" else events.laplace(nm),
                     _declared(kind, scale, size, sensitivity))
        return StreamedRelease(guarded_keyed(self.noise, reread=reread), kind, scale)

    def gaussian_stream(self, *, sensitivity: float, std: float, size: int, reread: bool = False) -> StreamedRelease:
        """Open a :class:`StreamedRelease` of a vector of ``size`` entries and ℓ2-sensitivity Δ with
        ``N(0, σ²)`` per entry; its event ``GaussianDpEvent(σ/Δ)`` (as :func:`release_gaussian`) is
        recorded now. ``reread=True`` when the consumer reads some blocks more than once (each block
        is then kept by a source that cannot re-derive it: one release, however often read)."""
        return self._stream("gaussian", sensitivity, std, size, reread, "Releaser.gaussian_stream")

    def laplace_stream(self, *, sensitivity: float, scale: float, size: int, reread: bool = False) -> StreamedRelease:
        """Open a :class:`StreamedRelease` of a vector of ``size`` entries and ℓ1-sensitivity Δ with
        ``Lap(b)`` per entry; its event ``LaplaceDpEvent(b/Δ)`` (as :func:`release_laplace`) is
        recorded now; ``reread`` as for :meth:`gaussian_stream`."""
        return self._stream("laplace", sensitivity, scale, size, reread, "Releaser.laplace_stream")

    def mechanism(self, mechanism: Any, value: Any) -> np.ndarray:
        """Release ``value`` through a :mod:`privrl.privacy.mechanisms` object."""
        kind = getattr(mechanism, "kind", "gaussian")
        sensitivity = float(mechanism.sensitivity)
        scale = float(mechanism.scale)
        declared = _declared(kind, scale, _size(value, getattr(mechanism, "symmetric", False)), sensitivity)
        return self._keep(Release(*mechanism.release(value, noise=self.noise)), declared)

    def record(self, event: object, *, noise: NoiseDeclaration | None = None) -> None:
        """Append the event of noise drawn from :attr:`noise` by a streaming privatizer, with the
        declaration of what it drew."""
        self._append(event, noise)
