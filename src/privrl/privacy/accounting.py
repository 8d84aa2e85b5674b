"""The privacy ledger and the accountants behind it (ARCHITECTURE.md §1.1).

Sensitivity convention
----------------------
A mechanism's ``sensitivity`` Δ is the largest distance (ℓ2 for Gaussian noise, ℓ1 for Laplace
noise) between the query's values on two neighbouring inputs *under the algorithm's own
neighbouring relation* (for replace-one neighbours: the worst replacement of one unit). Its event
carries ``noise_multiplier = σ/Δ`` (Gaussian) or ``b/Δ`` (Laplace), so the privacy curve is that of
``N(0, σ²)`` against ``N(Δ, σ²)`` — a property of the pair of output distributions, whatever the
relation that produced it.

The ledger therefore always asks dp-accounting's accountants with
``NeighboringRelation.ADD_OR_REMOVE_ONE``, whose Gaussian and Laplace privacy-loss distributions
are exactly those curves. dp-accounting's ``REPLACE_ONE`` relation instead assumes the event's
sensitivity-1 query may move by 2 under replacement (upstream issue #378): using it on top of a Δ
already computed for replacement would double the sensitivity. ``tests/privacy`` checks both facts.

Events
------
All of dp-accounting's events are accepted. :class:`ApproxDpEvent` adds an (ε, δ)-DP release
whose mechanism is not one of dp-accounting's (e.g. DP-LSW's smooth-sensitivity Gaussian,
Balle et al. 2016, Lemma 1): the PLD accountant represents it by the worst-case privacy-loss
distribution of an (ε, δ)-DP mechanism; the RDP accountant cannot (δ > 0 has no finite RDP curve)
and says so.
"""

from __future__ import annotations

import collections
import importlib
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import attr
import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.common import DifferentialPrivacyParameters

from privrl._validation import check_option, check_scalar, param_error
from privrl.errors import InvalidParameterError

__all__ = ["ApproxDpEvent", "Ledger", "ACCOUNTANTS", "event_from_json", "event_to_json",
           "make_accountant", "epsilon_of", "delta_of"]

ACCOUNTANTS = ("pld", "rdp", "auto")
_RELATION = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
@attr.define(frozen=True)
class ApproxDpEvent(dp_event.DpEvent):
    """An (ε, δ)-DP release of a mechanism that has no closer description."""

    epsilon: float
    delta: float


class _PLDAccountant(pld_privacy_accountant.PLDAccountant):
    """dp-accounting's PLD accountant plus :class:`ApproxDpEvent`."""

    def _maybe_compose(self, event, count, do_compose):  # type: ignore[override]
        if isinstance(event, ApproxDpEvent):
            if do_compose:
                pld = pld_lib.from_privacy_parameters(
                    DifferentialPrivacyParameters(event.epsilon, event.delta),
                    value_discretization_interval=self._value_discretization_interval,
                )
                self._pld = self._pld.compose(pld if count == 1 else pld.self_compose(count))
            return None
        if isinstance(event, (dp_event.SelfComposedDpEvent,)) and isinstance(event.event, ApproxDpEvent):
            return self._maybe_compose(event.event, event.count * count, do_compose)
        return super()._maybe_compose(event, count, do_compose)


def make_accountant(kind: str = "pld") -> dp_accounting.PrivacyAccountant:
    """A fresh accountant (``"pld"`` or ``"rdp"``) with privrl's neighbouring convention."""
    check_option(kind, "accountant", ("pld", "rdp"))
    if kind == "pld":
        return _PLDAccountant(neighboring_relation=_RELATION, value_discretization_interval=1e-4)
    return dp_accounting.rdp.RdpAccountant(neighboring_relation=_RELATION)


def _resolve(kind: str, event: dp_event.DpEvent) -> str:
    check_option(kind, "accountant", ACCOUNTANTS)
    if kind != "auto":
        return kind
    return "pld" if make_accountant("pld").supports(event) else "rdp"


def _composed(event: dp_event.DpEvent, kind: str) -> dp_accounting.PrivacyAccountant:
    acc = make_accountant(kind)
    if not acc.supports(event):
        raise InvalidParameterError(
            f"The '{kind}' accountant cannot account for this ledger ({_describe(event)}). "
            "Use accountant='pld' for (epsilon, delta) events and 'rdp' for zCDP events."
        )
    acc.compose(event)
    return acc


def epsilon_of(event: dp_event.DpEvent, delta: float, accountant: str = "auto") -> float:
    """ε(δ) of one (possibly composed) event."""
    delta = check_scalar(delta, "delta", low=0.0, high=1.0, closed="neither")
    kind = _resolve(accountant, event)
    return float(_composed(event, kind).get_epsilon(delta))


def delta_of(event: dp_event.DpEvent, epsilon: float, accountant: str = "auto") -> float:
    """δ(ε) of one (possibly composed) event."""
    epsilon = check_scalar(epsilon, "epsilon", low=0.0)
    kind = _resolve(accountant, event)
    return float(_composed(event, kind).get_delta(epsilon))


def _describe(event: dp_event.DpEvent) -> str:
    return type(event).__name__


# --------------------------------------------------------------------------- serialisation
def _to_plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {k: _to_plain(getattr(value, k)) for k in value._fields}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


def event_to_json(event: dp_event.DpEvent) -> dict[str, Any]:
    """A JSON-ready dict of ``event`` (dp-accounting's ``to_named_tuple`` layout)."""
    return _to_plain(event.to_named_tuple())


def event_from_json(data: Any) -> Any:
    """Inverse of :func:`event_to_json`. Only classes from dp-accounting or privrl are built."""
    if isinstance(data, list):
        return [event_from_json(v) for v in data]
    if data == "inf":
        return math.inf
    if not isinstance(data, dict):
        return data
    module, name = data.get("module_name"), data.get("class_name")
    if not (isinstance(module, str) and isinstance(name, str)):
        raise InvalidParameterError(f"Not a serialised DpEvent: {data!r}")
    if not (module.startswith("dp_accounting.") or module.startswith("privrl.")):
        raise InvalidParameterError(f"Refusing to build event class from module {module!r}.")
    cls = getattr(importlib.import_module(module), name, None)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, dp_event.DpEvent)):
        raise InvalidParameterError(f"Unknown DpEvent class {module}.{name}.")
    fields = {k: event_from_json(v) for k, v in data.items() if k not in ("module_name", "class_name")}
    if "events" in fields and isinstance(fields["events"], list):
        fields["events"] = list(fields["events"])
    return cls(**fields)


# --------------------------------------------------------------------------- ledger
class Ledger:
    """An ordered record of every :class:`~dp_accounting.DpEvent` an algorithm released.

    ``epsilon(delta)`` composes them with the PLD (default where supported) or RDP accountant;
    identical events are grouped into one ``SelfComposedDpEvent`` first, so a ledger of 10⁴
    identical Gaussian releases costs one PLD self-composition.

    >>> from dp_accounting import GaussianDpEvent
    >>> led = Ledger([GaussianDpEvent(10.0)] * 100)
    >>> round(led.epsilon(1e-5, accountant="pld"), 2)
    4.38
    """

    def __init__(self, events: Iterable[dp_event.DpEvent] = ()) -> None:
        self._events: list[dp_event.DpEvent] = []
        for e in events:
            self.append(e)

    # -- recording
    def append(self, event: dp_event.DpEvent, label: str | None = None) -> None:
        if not isinstance(event, dp_event.DpEvent):
            raise param_error("event", "Ledger.append", "a dp_accounting DpEvent", event)
        self._events.append(event)

    def extend(self, events: Iterable[dp_event.DpEvent]) -> None:
        for e in events:
            self.append(e)

    @property
    def events(self) -> tuple[dp_event.DpEvent, ...]:
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self):
        return iter(self._events)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ledger) and self._events == other._events

    def __repr__(self) -> str:
        return f"Ledger({len(self)} events)"

    # -- queries
    @property
    def is_empty(self) -> bool:
        return all(isinstance(e, dp_event.NoOpDpEvent) for e in self._events)

    @property
    def is_non_private(self) -> bool:
        """True when some release was made without noise (ε = ∞)."""
        return any(_contains(e, dp_event.NonPrivateDpEvent) or _zero_noise(e) for e in self._events)

    def composed_event(self) -> dp_event.DpEvent:
        """All events as one ``ComposedDpEvent`` with identical events grouped."""
        counts: collections.Counter = collections.Counter()
        order: list[dp_event.DpEvent] = []
        for e in self._events:
            base, n = (e.event, e.count) if isinstance(e, dp_event.SelfComposedDpEvent) else (e, 1)
            if base not in counts:
                order.append(base)
            counts[base] += n
        grouped = [b if counts[b] == 1 else dp_event.SelfComposedDpEvent(b, counts[b]) for b in order]
        return dp_event.ComposedDpEvent(grouped)

    def epsilon(self, delta: float, accountant: str = "auto") -> float:
        """The ε at which every release so far is jointly (ε, δ)-DP.

        ``accountant`` is ``"pld"`` (tight numerical composition), ``"rdp"`` (Rényi DP, needed for
        zCDP events) or ``"auto"`` (PLD when it supports every event, else RDP). An empty ledger
        spends 0; a ledger with a noiseless release spends ∞.
        """
        delta = check_scalar(delta, "delta", owner="Ledger.epsilon", low=0.0, high=1.0, closed="neither")
        if self.is_empty:
            return 0.0
        if self.is_non_private:
            return math.inf
        return epsilon_of(self.composed_event(), delta, accountant)

    def delta(self, epsilon: float, accountant: str = "auto") -> float:
        """The δ at which every release so far is jointly (ε, δ)-DP."""
        epsilon = check_scalar(epsilon, "epsilon", owner="Ledger.delta", low=0.0)
        if self.is_empty:
            return 0.0
        if self.is_non_private:
            return 1.0
        return delta_of(self.composed_event(), epsilon, accountant)

    def zcdp_rho(self) -> float:
        """Total ρ when every event is ρ-zCDP (ZCDp, Gaussian: ρ = 1/(2·multiplier²)); zCDP
        composes additively (Bun & Steinke 2016, Lemma 2.3)."""
        total = 0.0
        for e in self._events:
            total += _rho(e)
        return total

    # -- serialisation
    def to_json(self) -> str:
        return json.dumps({"format": "privrl.Ledger", "version": 1,
                           "events": [event_to_json(e) for e in self._events]})

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        try:
            data = json.loads(text)
        except (TypeError, json.JSONDecodeError) as exc:
            raise InvalidParameterError(f"Not a privrl ledger: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != "privrl.Ledger":
            raise InvalidParameterError("Not a privrl ledger: missing format marker.")
        return cls(event_from_json(e) for e in data.get("events", []))


def _contains(event: dp_event.DpEvent, kind: type) -> bool:
    if isinstance(event, kind):
        return True
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _contains(event.event, kind)
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(_contains(e, kind) for e in event.events)
    return False


def _zero_noise(event: dp_event.DpEvent) -> bool:
    if isinstance(event, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)):
        return event.noise_multiplier == 0
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _zero_noise(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(_zero_noise(e) for e in event.events)
    return False


def _rho(event: dp_event.DpEvent) -> float:
    if isinstance(event, dp_event.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_event.ZCDpEvent):
        return float(event.rho)
    if isinstance(event, dp_event.GaussianDpEvent):
        return math.inf if event.noise_multiplier == 0 else 1.0 / (2.0 * event.noise_multiplier**2)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return event.count * _rho(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return sum(_rho(e) for e in event.events)
    raise InvalidParameterError(
        f"The ledger holds a {type(event).__name__}, which is not zCDP; use Ledger.epsilon(delta)."
    )


def compose_all(events: Sequence[dp_event.DpEvent]) -> dp_event.DpEvent:
    """One event for a sequence of events."""
    return Ledger(events).composed_event()
