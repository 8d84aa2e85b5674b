"""The sort kernel shared by the compiled kernels of the offline and the tabular online families (the
water-level projections of their released counts: DP-APVI's Eq. 3 and the private UCB's consistent counts),
compiled with the library's decorators (:mod:`privrl._jit`) and inlined into its callers."""

from __future__ import annotations

import numpy as np

from privrl._jit import compilers

_jit, inlined, COMPILED = compilers()

__all__ = ["sorted_down", "INSERTION_MAX"]

#: rows up to this length are sorted in place by insertion (no allocation); longer ones by ``np.sort``
INSERTION_MAX = 32


@inlined
def sorted_down(u: np.ndarray, c: int) -> np.ndarray:
    """``u[:c]`` sorted from the largest down: in place by insertion for a short row (``c ≤ INSERTION_MAX``,
    returning the view ``u[:c]``), else a sorted copy (``u`` untouched)."""
    if c > INSERTION_MAX:
        return np.sort(u[:c])[::-1].copy()
    for i in range(1, c):
        key = u[i]
        j = i - 1
        while j >= 0 and u[j] < key:
            u[j + 1] = u[j]
            j -= 1
        u[j + 1] = key
    return u[:c]
