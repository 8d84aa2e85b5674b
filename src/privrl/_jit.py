"""The compilers of the library's numba kernels, chosen when a kernel module is first imported.

``compilers()`` gives numba's ``njit`` — plain IEEE arithmetic (no fastmath), compiled once per
machine and cached next to the module that uses it — the same inlined into its callers (so that a
constant argument specialises the body), and ``True``; or, without numba or with ``PRIVRL_NO_JIT=1``
in the environment, the functions as they are (plain Python over NumPy arrays) and ``False``. The
environment is read at each call, so a module imported again under ``PRIVRL_NO_JIT=1`` (the
fallback's tests) gets plain functions. When the command line asked for it
(:func:`privrl._progress.request_compile_notice`), a kernel about to compile because numba's cache
has nothing for it first prints a one-line notice to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from privrl._progress import listen_for_compiles, notice_requested

__all__ = ["compilers", "literal_dispatch"]


def compilers() -> tuple[Callable[[Any], Any], Callable[[Any], Any], bool]:
    """``(jit, inlined, compiled)``: the decorators of a kernel module and whether they compile."""
    if os.environ.get("PRIVRL_NO_JIT", "") not in ("", "0"):
        return (lambda f: f), (lambda f: f), False
    try:
        import numba
    except ImportError:
        return (lambda f: f), (lambda f: f), False
    if notice_requested():
        listen_for_compiles()
    return (numba.njit(cache=True, nogil=True, error_model="numpy"),
            numba.njit(cache=True, nogil=True, error_model="numpy", inline="always"), True)


def literal_dispatch(compiled: bool) -> Callable[[object], object]:
    """numba's ``literally`` when the kernels compile (called on an argument of a compiled function,
    it makes the argument's value a compile-time constant: one cached specialisation per value),
    else the identity (plain Python has nothing to specialise)."""
    if not compiled:
        return lambda x: x
    from numba import literally

    return literally
