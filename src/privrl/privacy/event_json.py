"""DpEvents as JSON (a ledger's ``to_json``/``from_json``): dp-accounting's ``to_named_tuple``
layout, built back only from classes of dp-accounting or privrl."""

from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING, Any

from privrl.errors import InvalidParameterError
from privrl.privacy import events as _events

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["event_from_json", "event_to_json"]


def _to_plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {k: _to_plain(getattr(value, k)) for k in value._fields}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


def event_to_json(event: DpEvent) -> dict[str, Any]:
    """A JSON-ready dict of ``event`` (dp-accounting's ``to_named_tuple`` layout)."""
    return _to_plain(event.to_named_tuple())


def event_from_json(data: object) -> DpEvent:
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
    if cls is None or not (isinstance(cls, type) and issubclass(cls, _events.dp().DpEvent)):
        raise InvalidParameterError(f"Unknown DpEvent class {module}.{name}.")
    fields = {k: event_from_json(v) for k, v in data.items() if k not in ("module_name", "class_name")}
    if "events" in fields and isinstance(fields["events"], list):
        fields["events"] = list(fields["events"])
    return cls(**fields)
