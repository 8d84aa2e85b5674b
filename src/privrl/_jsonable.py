"""The JSON form of a scalar, shared by the run results (:func:`privrl.experiments.results.to_jsonable`)
and the privacy certificate (:mod:`privrl.certificate`): one rule for booleans, NumPy scalars and
non-finite floats (written as the strings ``"inf"``, ``"-inf"``, ``"nan"``; JSON has no literal for
them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: returned by :func:`json_scalar` for a value that is not a scalar
NOT_SCALAR: Any = object()


def json_scalar(value: Any) -> Any:
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
