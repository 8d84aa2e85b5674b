"""Checking ``privrl run --set`` overrides against an experiment's settings before anything runs
(:func:`check_overrides`, used by :func:`privrl.experiments.runner.plan_runs`): every key a
parameter of the experiment, every value of that parameter's type, a budget value in its range."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privrl.errors import InvalidParameterError
from privrl.experiments.registry import get_experiment
from privrl.experiments.results import to_jsonable
from privrl.experiments.spec import SCALES, Experiment
from privrl.privacy.budget import check_budget_value

__all__ = ["BUDGET_KEYS", "check_overrides", "known_params"]


def known_params(experiment: str | Experiment) -> dict[str, list[object]]:
    """Every parameter an experiment takes, with the values it has in the settings of every scale
    (and the example value of each of its ``extra_params``)."""
    exp = experiment if isinstance(experiment, Experiment) else get_experiment(experiment)
    out: dict[str, list[object]] = {}
    for scale in SCALES:
        for setting in exp.settings_for(scale):
            for key, value in setting.items():
                out.setdefault(key, []).append(value)
    for key, value in (exp.extra_params or {}).items():
        out.setdefault(key, []).append(value)
    return out


_FLOAT_WORDS = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "-inf": -math.inf,
                "-infinity": -math.inf}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "dict"
    return type(value).__name__


_KIND_NAMES = {"null": "null", "bool": "a bool", "int": "an int", "float": "a number", "str": "a string",
               "list": "a list", "dict": "an object"}


class _Mismatch(Exception):
    pass


def _conform(value: Any, examples: Sequence[Any]) -> Any:
    """``value`` converted to the type its key has in ``examples`` (int → float where the
    settings hold floats, "inf" → inf, integral floats → int); :class:`_Mismatch` otherwise."""
    kinds = {_kind(e) for e in examples}
    kind = _kind(value)
    if kind in kinds and kind not in ("list", "dict"):
        return value
    if kind == "int" and "float" in kinds:
        return float(value)
    if kind == "float" and "int" in kinds and math.isfinite(value) and float(value).is_integer():
        return int(value)
    if kind == "str" and "float" in kinds and value.strip().lower() in _FLOAT_WORDS:
        return _FLOAT_WORDS[value.strip().lower()]
    if kind == "list" and "list" in kinds:
        items = [item for e in examples if _kind(e) == "list" for item in e]
        return [_conform(v, items) for v in value] if items else list(value)
    if kind == "dict" and "dict" in kinds:
        by_key: dict[str, list[object]] = {}
        for e in examples:
            if _kind(e) == "dict":
                for k, v in e.items():
                    by_key.setdefault(str(k), []).append(v)
        unknown = sorted(set(map(str, value)) - set(by_key))
        if unknown:
            raise _Mismatch(f"an object with keys among {sorted(by_key)} (unknown: {unknown})")
        return {k: _conform(v, by_key[str(k)]) for k, v in value.items()}
    raise _Mismatch(" or ".join(sorted(_KIND_NAMES.get(k, k) for k in kinds)))


#: setting keys that are privacy-budget parameters: an override is checked against the budget's range
BUDGET_KEYS = ("epsilon", "delta", "rho")


def check_overrides(experiment_id: str, overrides: Mapping[str, object] | None) -> dict[str, object]:
    """Validate ``privrl run --set`` overrides before anything runs: every key must be a parameter
    of the experiment (a key of its settings at some scale, or one of its ``extra_params``) and
    every value must have that parameter's type in the settings; a budget parameter
    (:data:`BUDGET_KEYS`) must also lie in the budget's range (δ in [0, 1), ε and ρ > 0:
    :func:`~privrl.privacy.budget.check_budget_value`). Returns the overrides with values
    converted to those types (``1`` → ``1.0`` for a float parameter, ``"inf"`` → ``inf``)."""
    if not overrides:
        return {}
    exp = get_experiment(experiment_id)
    known = known_params(exp)
    out: dict[str, object] = {}
    for key, value in overrides.items():
        if key not in known:
            raise InvalidParameterError(
                f"The '--set' key {key!r} is not a parameter of experiment {exp.id}. Known keys: "
                f"{', '.join(sorted(known))}."
            )
        try:
            converted = _conform(value, known[key])
            json.dumps(to_jsonable(converted), allow_nan=False)
        except _Mismatch as exc:
            raise InvalidParameterError(
                f"The '--set {key}' value of experiment {exp.id} must be {exc} (as in its settings). "
                f"Got {json.dumps(to_jsonable(value))} instead."
            ) from None
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The '--set {key}' value of experiment {exp.id} must be JSON. Got {value!r} instead."
            ) from None
        if key in BUDGET_KEYS and converted is not None:
            number = _FLOAT_WORDS.get(converted.strip().lower(), converted) if isinstance(converted, str) else converted
            check_budget_value(key, number, name=f"--set {key}", owner=f"experiment {exp.id}")
        out[key] = converted
    return out
