"""The benchmark's entries: privrl's estimators (one module per family, named by the family's record:
``Family(..., bench=("privrl.bench.entries.<family>",))``), the trivial baselines and the plugins,
registered in :mod:`privrl.registry` (kind ``bench-entry``).

Each entry module wraps estimators with :func:`estimator_fit`: build the estimator for the task
and budget, draw its privacy noise from the given source when one is given (the audit, the tests'
broken entries), fit it with the run's generator, record the warnings it raised as notes and
read its output. Names: the family's algorithm (``dp-apvi``), a bracket for a configuration
that differs from the default (``dp-apvi[paper]`` — the paper's calibration; ``linopt-vi[local]``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

from privrl import registry as _registry
from privrl.base import use_noise
from privrl.bench.spec import Entry, Fitted, Output
from privrl.errors import (
    BudgetExceededError,
    CertificationError,
    InvalidDataError,
    InvalidParameterError,
    PrivacyLeakWarning,
    UtilityWarning,
)

__all__ = ["REFUSALS", "register_entry", "get_entry", "all_entries", "estimator_fit", "warning_notes"]

#: the library's errors that mean "this entry cannot certify this budget / run on this task": the
#: benchmark lists the entry as refused, with the error's message as the reason
REFUSALS = (BudgetExceededError, CertificationError, InvalidParameterError, InvalidDataError)


def register_entry(entry: Entry, *, replace: bool = False) -> Entry:
    """Register ``entry`` under its name (kind ``bench-entry``)."""
    return _registry.register("bench-entry", entry.name, entry, replace=replace, stacklevel=2)


def get_entry(name: str) -> Entry:
    """The entry ``name``; an unknown name is a one-line error listing the known ones."""
    return _registry.get("bench-entry", name)


def all_entries() -> dict[str, Entry]:
    """Every registered entry, in registration order."""
    return _registry.entries("bench-entry")


def warning_notes(caught: list[Any]) -> list[str]:
    """One short note per distinct utility or privacy warning a fit raised: its first clause, without
    parentheses and with numbers of two digits or more as ``…`` (so that the same warning on other
    seeds reads the same)."""
    notes = []
    for w in caught:
        if issubclass(w.category, (UtilityWarning, PrivacyLeakWarning)):
            text = " ".join(str(w.message).split())
            text = text.split(": ", 1)[-1].split(". ")[0].rstrip(".")
            text = re.sub(r"\s*\([^()]*\)", "", text)
            text = re.sub(r"(?<![\w./])\d*\.?\d{2,}(e[-+]?\d+)?", "…", text)
            note = f"{w.category.__name__}: {text[:110]}"
            if note not in notes:
                notes.append(note)
    return notes


def estimator_fit(estimator: Any, fit: Callable[[Any], Any], read: Callable[[Any], Output], *,
                  noise: Any = None) -> Fitted:
    """Fit ``estimator`` with ``fit(estimator)`` (its privacy noise from ``noise`` when given),
    and return its :class:`Fitted`: ``read(estimator)``, its ledger (when private), its privacy
    unit and relation, and the warnings it raised as notes."""
    if noise is not None:
        use_noise(estimator, noise)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        warnings.simplefilter("always", PrivacyLeakWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        fit(estimator)
    private = bool(getattr(estimator, "is_private", False))
    return Fitted(read(estimator), estimator=estimator,
                  ledger=estimator.privacy_ledger_ if private else None,
                  privacy_unit=getattr(estimator, "privacy_unit", None),
                  neighboring=getattr(estimator, "neighboring", None), notes=warning_notes(caught))
