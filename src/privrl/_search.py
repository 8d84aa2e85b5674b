"""One bisection for the monotone searches of the calibrations and accountants."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["bisect_boundary"]


def bisect_boundary(ok: Callable[[float], bool], good: float, bad: float, *, rel_tol: float,
                    abs_tol: float = 0.0) -> float:
    """The feasible end of a bisection between ``good`` (``ok(good)``) and ``bad`` (not), for a
    monotone ``ok``: halve the bracket until its width is at most ``max(rel_tol · upper end,
    abs_tol)`` and return the end that still satisfies ``ok`` — so the answer is always certified
    (a calibrated σ never too small, an ε never below the true one). Either end may be the upper."""
    while abs(good - bad) > max(rel_tol * max(good, bad), abs_tol):
        mid = 0.5 * (good + bad)
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good
