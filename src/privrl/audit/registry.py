"""The registry of audit targets: one per private release of privrl, each with its negative controls.

A target builds, for a claimed budget and an optional broken variant, an :class:`AuditPair`: two
vectorised samplers (the release on D and on a worst-case neighbour D') and the ε the *library's
own accounting* claims for that release. Target modules register themselves at import; they are
imported lazily, and an area whose algorithm module is not importable is simply absent
(:func:`unavailable_areas` says which and why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from privrl import registry as _registry
from privrl._rng import RngLike, as_generator
from privrl._validation import check_option, check_scalar
from privrl.audit.core import (
    DEFAULT_STATISTICS,
    AuditResult,
    Sampler,
    StatisticLike,
    audit_mechanism,
)

__all__ = ["AuditPair", "AuditTarget", "BrokenVariant", "register_target", "get_target", "all_targets",
           "run_target", "unavailable_areas"]

@dataclass(frozen=True)
class AuditPair:
    """Samplers of the release on two neighbouring inputs and the ε(δ) the library claims."""

    sample_a: Sampler
    sample_b: Sampler
    claimed_epsilon: float
    delta: float
    note: str = ""


@dataclass(frozen=True)
class BrokenVariant:
    """A deliberately broken copy of a release. ``caught`` says whether a sound audit must flag
    it (``False`` for changes that do not affect privacy, e.g. removing a public shift: such a
    variant must stay *consistent*, which tests that the audit does not cry wolf)."""

    name: str
    description: str
    caught: bool = True
    trials: int | None = None
    fast_trials: int | None = None


@dataclass(frozen=True)
class AuditTarget:
    """``build(epsilon, delta, broken) -> AuditPair``; ``broken`` is ``None`` or a variant name."""

    name: str
    description: str
    privacy_unit: str
    build: Callable[[float, float, str | None], AuditPair]
    epsilon: float = 1.0
    delta: float = 1e-5
    variants: Sequence[BrokenVariant] = field(default_factory=tuple)
    statistics: Sequence[StatisticLike] = DEFAULT_STATISTICS
    trials: int = 20_000
    fast_trials: int = 4_000

    def default_trials(self, broken: str | None = None, *, fast: bool = False) -> int:
        """Trials per input for the full (or ``fast``) audit of this target or one of its variants."""
        n = self.fast_trials if fast else self.trials
        if broken is not None:
            v = self.variant(broken)
            n = (v.fast_trials if fast else v.trials) or n
        return n

    def variant(self, name: str) -> BrokenVariant:
        names = [v.name for v in self.variants]
        check_option(name, "broken", names, owner=f"audit target {self.name!r}")
        return self.variants[names.index(name)]


#: the live store of audit targets (kept under this name for tests that patch it)
_REGISTRY: dict[str, AuditTarget] = _registry.storage("audit")


def register_target(target: AuditTarget) -> AuditTarget:
    """Add ``target`` to the registry (re-registering the same name replaces it)."""
    return _registry.register("audit", target.name, target, replace=True, stacklevel=2)


def all_targets() -> list[AuditTarget]:
    """Every registered target, in registration order."""
    return list(_registry.entries("audit").values())


def unavailable_areas() -> dict[str, str]:
    """Target modules that could not be imported: always empty, since such a module is now an
    error (:class:`privrl.registry.RegistryImportError`); kept for callers of the old API."""
    _registry.load("audit")
    return {}


def get_target(name: str) -> AuditTarget:
    """The target ``name``; an unknown name is a one-line error listing the known ones."""
    return _registry.get("audit", name, parameter="algorithm", owner="privrl audit")


def run_target(
    name: str,
    *,
    trials: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    broken: str | None = None,
    confidence: float = 0.95,
    fast: bool = False,
    rng: RngLike = None,
) -> AuditResult:
    """Audit the registered target ``name`` (with its default budget and trials unless given;
    ``fast`` picks the smaller trial count used by the default test suite)."""
    target = get_target(name)
    owner = f"audit target {name!r}"
    eps = target.epsilon if epsilon is None else check_scalar(epsilon, "epsilon", owner=owner, low=0.0,
                                                               closed="neither")
    dlt = target.delta if delta is None else check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="left")
    if broken is not None:
        target.variant(broken)
    n = target.default_trials(broken, fast=fast) if trials is None else check_scalar(
        trials, "trials", owner=owner, kind=int, low=8)
    pair = target.build(eps, dlt, broken)
    gen = as_generator(rng)
    return audit_mechanism(pair.sample_a, pair.sample_b, epsilon=pair.claimed_epsilon, delta=pair.delta,
                           trials=n, confidence=confidence, statistics=target.statistics, rng=gen,
                           algorithm=name, broken=broken, note=pair.note)


def stack(fn: Callable[[np.random.Generator], np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent outputs of a release that cannot be vectorised, stacked on axis 0."""
    return np.stack([np.asarray(fn(rng), dtype=float) for _ in range(n)])
