"""Privacy events, built on dp-accounting's public ``DpEvent`` classes, imported on first use.

``import dp_accounting`` costs about a second (it pulls in SciPy's signal and stats packages), so
privrl never imports it at module level: ``import privrl`` and non-private work never pay it. The
constructors below are the only way privrl's algorithms build events.

:class:`ApproxDpEvent` (an (ε, δ)-DP release with no closer description, e.g. DP-LSW's smoothed
Gaussian) is privrl's own subclass of the public ``dp_accounting.DpEvent``; dp-accounting has no
released equivalent. The ledger accounts for it through public PLD constructors
(:mod:`privrl.privacy.accounting`).
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Any

from privrl._validation import check_scalar

if TYPE_CHECKING:  # annotations only
    from types import ModuleType

    from dp_accounting import DpEvent

__all__ = ["dp", "approx_event_class", "gaussian", "laplace", "zcdp", "approx", "non_private",
           "no_op", "composed", "self_composed", "is_event"]


def dp() -> ModuleType:
    """The ``dp_accounting`` module (imported on first call)."""
    import dp_accounting

    return dp_accounting


@cache
def approx_event_class() -> type[DpEvent]:
    """The :class:`ApproxDpEvent` class, defined on first use (it subclasses ``DpEvent``)."""
    import attr

    def _eps(instance: Any, attribute: Any, value: Any) -> None:
        check_scalar(value, "epsilon", owner="ApproxDpEvent", low=0.0, allow_inf=True)

    def _delta(instance: Any, attribute: Any, value: Any) -> None:
        check_scalar(value, "delta", owner="ApproxDpEvent", low=0.0, high=1.0)

    from dp_accounting import DpEvent

    @attr.define(frozen=True)
    class ApproxDpEvent(DpEvent):
        """An (ε, δ)-DP release of a mechanism that has no closer description.

        ``epsilon`` in [0, inf] (``inf``: non-private), ``delta`` in [0, 1]. The PLD accountant
        represents it by the worst-case privacy-loss distribution of an (ε, δ)-DP mechanism;
        RDP has no finite curve for δ > 0.
        """

        epsilon: float = attr.field(validator=_eps)
        delta: float = attr.field(validator=_delta)

    ApproxDpEvent.__module__ = "privrl.privacy.events"
    return ApproxDpEvent


def __getattr__(name: str) -> object:
    if name == "ApproxDpEvent":
        return approx_event_class()
    raise AttributeError(f"module 'privrl.privacy.events' has no attribute {name!r}")


def gaussian(noise_multiplier: float) -> DpEvent:
    """One Gaussian release with multiplier σ/Δ; multiplier 0 is a non-private release."""
    if noise_multiplier == 0:
        return dp().NonPrivateDpEvent()
    if math.isinf(noise_multiplier):
        return dp().NoOpDpEvent()
    return dp().GaussianDpEvent(float(noise_multiplier))


def laplace(noise_multiplier: float) -> DpEvent:
    """One Laplace release with multiplier b/Δ (pure (Δ/b)-DP); 0 is non-private."""
    if noise_multiplier == 0:
        return dp().NonPrivateDpEvent()
    if math.isinf(noise_multiplier):
        return dp().NoOpDpEvent()
    return dp().LaplaceDpEvent(float(noise_multiplier))


def zcdp(rho: float) -> DpEvent:
    """A ρ-zCDP release (Bun & Steinke 2016); ρ = ∞ is non-private, ρ = 0 a no-op."""
    if math.isinf(rho):
        return dp().NonPrivateDpEvent()
    if rho == 0:
        return dp().NoOpDpEvent()
    return dp().ZCDpEvent(float(rho))


def approx(epsilon: float, delta: float) -> DpEvent:
    """An (ε, δ)-DP release; ε = ∞ (or δ ≥ 1) is non-private."""
    if math.isinf(epsilon) or delta >= 1:
        return dp().NonPrivateDpEvent()
    return approx_event_class()(float(epsilon), float(delta))


def non_private() -> DpEvent:
    return dp().NonPrivateDpEvent()


def no_op() -> DpEvent:
    return dp().NoOpDpEvent()


def composed(events: list[DpEvent]) -> DpEvent:
    return dp().ComposedDpEvent(list(events))


def self_composed(event: DpEvent, count: int) -> DpEvent:
    return event if count == 1 else dp().SelfComposedDpEvent(event, int(count))


def is_event(value: object) -> bool:
    return isinstance(value, dp().DpEvent)
