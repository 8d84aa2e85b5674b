"""The registry of audit targets: one per private release of privrl, each with its negative controls.

A target builds, for a claimed budget and an optional broken variant, an :class:`AuditPair`: two
vectorised samplers (the release on D and on a worst-case neighbour D') and the ε the *library's
own accounting* claims for that release. Target modules register themselves at import; they are
imported lazily (a module that fails to import is an error, :class:`privrl.registry.RegistryImportError`).

Two audits per target:

* the *black-box* audit (``sharp=False``): every candidate statistic of
  :mod:`privrl.audit.core`, the best chosen on the selection half, at the target's ``trials``;
* the *release-point* audit (``sharp=True``, for a target with an ``optimal`` statistic): the
  release's optimal test alone — its likelihood ratio on the worst-case pair (``"lda"``, the
  projection on ``Σ⁻¹Δ``, for Gaussian noise; ``"laplace-llr"`` for Laplace noise) — on
  ``sharp_trials`` (10⁵–10⁶) releases per input. It must be *sharp*: ε_lower ≥ :data:`SHARPNESS` ×
  the claimed ε at the claimed noise; and it must catch the ``noise-div-2`` control (a variant with
  ``sharp=True``: noise ÷ 2, same claim), so a calibration off by a factor 2 cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from privrl import registry as _registry
from privrl._rng import RngLike, as_generator, derive_seed
from privrl._validation import check_option, check_scalar, param_error
from privrl.audit.core import (
    DEFAULT_STATISTICS,
    RELEASE_POINT,
    AuditResult,
    Sampler,
    StatisticLike,
    audit_mechanism,
)

__all__ = ["SHARPNESS", "AuditPair", "AuditTarget", "BrokenVariant", "register_target", "get_target",
           "all_targets", "run_target", "reaches_sharpness", "audit_seed"]

#: A release-point audit at the claimed noise must reach ε_lower ≥ SHARPNESS × the claimed ε.
SHARPNESS = 0.3

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
    variant must stay *consistent*, which tests that the audit does not cry wolf). ``sharp``: the
    variant is audited at the release point (the target's ``optimal`` statistic and
    ``sharp_trials``), as the ``noise-div-2`` controls are."""

    name: str
    description: str
    caught: bool = True
    trials: int | None = None
    fast_trials: int | None = None
    sharp: bool = False


@dataclass(frozen=True)
class AuditTarget:
    """``build(epsilon, delta, broken) -> AuditPair``; ``broken`` is ``None`` or a variant name.

    ``optimal``: the release's optimal statistic (a name of :data:`privrl.audit.core.STATISTICS`)
    for the release-point audit, ``None`` when the target has none (its release is audited by
    another target's); ``sharp_trials`` / ``sharp_fast_trials``: its releases per input."""

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
    optimal: str | None = None
    sharp_trials: int = 200_000
    sharp_fast_trials: int = 50_000

    def default_trials(self, broken: str | None = None, *, fast: bool = False, sharp: bool = False) -> int:
        """Trials per input for the full (or ``fast``) black-box (or ``sharp``: release-point) audit of
        this target or one of its variants."""
        if sharp:
            return self.sharp_fast_trials if fast else self.sharp_trials
        n = self.fast_trials if fast else self.trials
        if broken is not None:
            v = self.variant(broken)
            n = (v.fast_trials if fast else v.trials) or n
        return n

    def is_sharp(self, broken: str | None) -> bool:
        """Whether the variant ``broken`` (a name) is audited at the release point."""
        return broken is not None and self.variant(broken).sharp

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
    sharp: bool = False,
    rng: RngLike = None,
) -> AuditResult:
    """Audit the registered target ``name`` (with its default budget and trials unless given;
    ``fast`` picks the smaller trial count used by the default test suite). ``sharp``: the
    release-point audit (module docstring); a variant with ``sharp=True`` is always audited so."""
    target = get_target(name)
    owner = f"audit target {name!r}"
    sharp = sharp or target.is_sharp(broken)
    statistics: Sequence[StatisticLike] = target.statistics
    if sharp:
        if target.optimal is None:
            raise param_error("sharp", owner, "False for a target without an optimal statistic", sharp)
        statistics = (target.optimal,)
    eps = target.epsilon if epsilon is None else check_scalar(epsilon, "epsilon", owner=owner, low=0.0,
                                                               closed="neither")
    dlt = target.delta if delta is None else check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="left")
    n = target.default_trials(broken, fast=fast, sharp=sharp) if trials is None else check_scalar(
        trials, "trials", owner=owner, kind=int, low=8)
    pair = target.build(eps, dlt, broken)
    result = audit_mechanism(pair.sample_a, pair.sample_b, epsilon=pair.claimed_epsilon, delta=pair.delta,
                             trials=n, confidence=confidence, statistics=statistics, rng=as_generator(rng),
                             algorithm=name, broken=broken, note=pair.note)
    return replace(result, mode=RELEASE_POINT) if sharp else result


def audit_seed(seed: int, name: str, broken: str | None, sharp: bool = False) -> int:
    """The seed of one row of ``privrl audit --seed SEED`` (the tests use the same)."""
    return derive_seed(seed, name, broken, "sharp") if sharp else derive_seed(seed, name, broken)


def reaches_sharpness(result: AuditResult) -> bool:
    """A release-point audit of a real (not broken) target reaching ε_lower ≥ SHARPNESS × claimed ε."""
    return result.epsilon_lower >= SHARPNESS * result.claimed_epsilon


def stack(fn: Callable[[np.random.Generator], np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent outputs of a release that cannot be vectorised, stacked on axis 0."""
    return np.stack([np.asarray(fn(rng), dtype=float) for _ in range(n)])
