"""One parameter-validation helper with one message format (ARCHITECTURE.md §5).

Every message reads::

    The 'epsilon' parameter of DPLSW must be a float in (0, inf]. Got -1.0 instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.errors import InvalidParameterError, NotFittedError

__all__ = ["check_scalar", "check_option", "check_array", "check_bounds", "check_group_map", "param_error",
           "missing_attribute", "FittedAttributes"]


def _owner_part(owner: str | None) -> str:
    return f" of {owner}" if owner else ""


def param_error(name: str, owner: str | None, allowed: str, value: object) -> InvalidParameterError:
    """Build the standard message: parameter, allowed range, value received."""
    return InvalidParameterError(
        f"The '{name}' parameter{_owner_part(owner)} must be {allowed}. Got {value!r} instead."
    )


def _interval(low: float | None, high: float | None, closed: str, allow_inf: bool = False) -> str:
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    left = "[" if low is not None and closed in ("both", "left") else "("
    closed_high = high is not None and closed in ("both", "right")
    right = "]" if closed_high or (high is None and allow_inf) else ")"
    return f"{left}{lo}, {hi}{right}"


_CLOSED = ("both", "left", "right", "neither")


def check_scalar(
    value: Any,
    name: str,
    *,
    owner: str | None = None,
    kind: type = float,
    low: float | None = None,
    high: float | None = None,
    closed: str = "both",
    allow_inf: bool = False,
) -> Any:
    """Validate a real or integer scalar and return it converted to ``kind``.

    ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"`` and says which of
    ``low``/``high`` are included. ``allow_inf`` admits ``+inf`` (e.g. "non-private") even when
    ``high`` is None; NaN is always rejected.
    """
    if closed not in _CLOSED:
        raise ValueError(f"closed must be both/left/right/neither, got {closed!r}")

    def error(got: object) -> InvalidParameterError:   # the message is built only when it is raised
        type_name = "an int" if kind is int else "a float"
        return param_error(name, owner, f"{type_name} in {_interval(low, high, closed, allow_inf)}", got)

    if type(value) not in (float, int) and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise error(value)                           # (the built-in float and int skip the ABC checks)
    if kind is int:
        if not isinstance(value, numbers.Integral):
            if not (isinstance(value, float) and value.is_integer()):
                raise error(value)
        value = int(value)
    else:
        value = float(value)
        if math.isnan(value) or (math.isinf(value) and not (allow_inf and value > 0)):
            raise error(value)
    inf_ok = allow_inf and value == math.inf
    if low is not None and not inf_ok:
        if value < low or (value == low and closed in ("right", "neither")):
            raise error(value)
    if high is not None and not inf_ok:
        if value > high or (value == high and closed in ("left", "neither")):
            raise error(value)
    return value


def check_option(value: Any, name: str, options: Iterable[Any], *, owner: str | None = None) -> Any:
    """Validate that ``value`` is one of ``options``."""
    options = tuple(options)
    if value not in options:
        raise param_error(name, owner, "one of " + ", ".join(repr(o) for o in options), value)
    return value


def check_array(
    value: Any,
    name: str,
    *,
    owner: str | None = None,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = float,
    finite: bool = True,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """Convert ``value`` to an array and check dimension, shape, finiteness and bounds.

    ``shape`` may contain ``None`` for free axes. Bounds are inclusive. ``dtype=None`` keeps the
    input's dtype. Conversion to an integer dtype refuses non-integral floats (never truncates).
    """
    try:
        raw = np.asarray(value)
        target = raw.dtype if dtype is None else np.dtype(dtype)
        if target.kind in "iu" and raw.dtype.kind in "fc":
            # never truncate silently: 1.5 -> 1 would change the data (e.g. an action index)
            if not np.all(np.isfinite(raw)) or not np.all(np.equal(np.mod(raw.real, 1), 0)) \
                    or (raw.dtype.kind == "c" and np.any(raw.imag != 0)):
                raise InvalidParameterError(
                    f"The '{name}' parameter{_owner_part(owner)} must be an array of integers. "
                    f"Got non-integer values of dtype {raw.dtype} instead.")
        if target.kind in "iub" and raw.dtype.kind in "OSU" or target.kind in "fc" and raw.dtype.kind in "SU":
            raise TypeError          # never parse strings into numbers ("0.5" is not a weight)
        arr = np.asarray(raw, dtype=target)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidParameterError):
            raise
        want = "an array" if dtype is None else f"an array convertible to {np.dtype(dtype).name}"
        got = repr(type(value).__name__) if not isinstance(value, np.ndarray) else f"an array of dtype {value.dtype}"
        raise InvalidParameterError(f"The '{name}' parameter{_owner_part(owner)} must be {want}. "
                                    f"Got {got} instead.") from None
    if ndim is not None and arr.ndim != ndim:
        raise InvalidParameterError(
            f"The '{name}' parameter{_owner_part(owner)} must be a {ndim}-dimensional array. "
            f"Got shape {arr.shape} instead."
        )
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise InvalidParameterError(
                f"The '{name}' parameter{_owner_part(owner)} must have shape {want}. "
                f"Got shape {arr.shape} instead."
            )
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise InvalidParameterError(
            f"The '{name}' parameter{_owner_part(owner)} must contain only finite values. "
            f"Got {int(np.sum(~np.isfinite(arr)))} non-finite entries instead."
        )
    if arr.size and low is not None and arr.min() < low:
        raise InvalidParameterError(
            f"The '{name}' parameter{_owner_part(owner)} must have entries >= {low!r}. "
            f"Got minimum {arr.min().item()!r} instead."
        )
    if arr.size and high is not None and arr.max() > high:
        raise InvalidParameterError(
            f"The '{name}' parameter{_owner_part(owner)} must have entries <= {high!r}. "
            f"Got maximum {arr.max().item()!r} instead."
        )
    return arr


def check_bounds(bounds: Any, name: str, owner: str | None = None, *,
                 allowed: str | None = None) -> tuple[float, float]:
    """A pair ``(low, high)`` of finite floats with ``low <= high`` (e.g. declared reward bounds), as
    floats; ``allowed`` overrides the wording of the error (e.g. when None is also accepted)."""
    allowed = allowed or "a pair (low, high) of finite floats with low <= high"
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise param_error(name, owner, allowed, bounds) from None
    if not (np.isfinite(low) and np.isfinite(high) and low <= high):
        raise param_error(name, owner, allowed, bounds)
    return (low, high)


def check_group_map(groups: np.ndarray, n_states: int, name: str, owner: str | None = None) -> np.ndarray:
    """A public map state → group (``(n_states,)`` ints ``>= 0``, already checked as such) checked
    against the number of states: one entry per state and group ids below ``n_states`` (a group
    without a state is empty, so at most ``n_states`` groups). Every grouped release and
    plan allocates per group, so an id far beyond the states would cost memory and time for
    nothing."""
    if groups.shape != (int(n_states),):
        raise param_error(name, owner, f"an array of shape ({n_states},) (one group per state)",
                          f"shape {groups.shape}")
    if groups.size and int(groups.max()) >= n_states:
        raise param_error(name, owner, f"group ids in [0, {n_states}) (at most one group per state)",
                          int(groups.max()))
    return groups


def missing_attribute(obj: object, name: str) -> AttributeError:
    """The error for reading ``obj.<name>`` that does not exist: a :class:`NotFittedError` (an
    ``AttributeError``: ``hasattr`` keeps working) for a fitted attribute — a public name ending in
    ``_`` — of an estimator not fitted yet (every ``fit`` sets ``privacy_ledger_``), the plain
    ``AttributeError`` otherwise (private and dunder names, a fitted estimator's absent attribute)."""
    owner = type(obj).__name__
    if name.endswith("_") and not name.startswith("_") and "privacy_ledger_" not in vars(obj):
        return NotFittedError(f"This {owner} instance is not fitted yet: call 'fit' before using '{name}'.")
    return AttributeError(f"'{owner}' object has no attribute '{name}'")


class FittedAttributes:
    """Mixin of estimators: a fitted attribute read before ``fit`` raises :class:`NotFittedError`
    (:func:`missing_attribute`) instead of a bare ``AttributeError``. Runtime only: type checkers
    keep checking attribute names (the hook is invisible to them)."""

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> object:
            raise missing_attribute(self, name)
