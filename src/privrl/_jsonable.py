"""The JSON form of values, shared by the run results, the fit results and the privacy certificate
(:mod:`privrl.certificate`): one rule for booleans, NumPy scalars and non-finite floats (written as
the strings ``"inf"``, ``"-inf"``, ``"nan"``; JSON has no literal for them)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["NOT_SCALAR", "json_scalar", "to_jsonable"]

#: returned by :func:`json_scalar` for a value that is not a scalar
NOT_SCALAR: object = object()


def json_scalar(value: object) -> object:
    """``value`` as a JSON scalar (bool, int, float, str or None; NumPy scalars unwrapped, ±inf and
    nan as strings), or :data:`NOT_SCALAR` when it is not one."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return str(value) if (math.isinf(value) or math.isnan(value)) else value
    if isinstance(value, (int, str)) or value is None:
        return value
    return NOT_SCALAR


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON: numpy scalars/arrays unwrapped, enums by value, ±inf/nan as strings."""
    scalar = json_scalar(value)
    if scalar is not NOT_SCALAR:
        return scalar
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    if hasattr(value, "value") and hasattr(value, "name"):  # enums
        return to_jsonable(value.value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)
