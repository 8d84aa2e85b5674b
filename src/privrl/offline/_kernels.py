"""The numba kernel of DP-APVI's released rows (Qiao & Wang 2023, Algorithm 1, Eq. 2–3), one block at a time.

:func:`release_block` does in one pass over a block of rows what :mod:`privrl.offline.tabular` does with
NumPy (:func:`~privrl.offline.tabular._noisy_rows`, :func:`~privrl.offline.tabular._consistent_rows` and
the cell threshold): it adds the sparse counts to the block's noise, takes ``{·}^+``, solves Eq. (3) in
closed form and zeroes the cells at most the threshold. It is post-processing of the released noise and
reproduces NumPy's arithmetic operation for operation, so its result is bit-identical:

* row sums are NumPy's pairwise summation (:func:`pairwise_sum`: blocks of 128 summed with 8
  accumulators, halves split at multiples of 8), which ``ndarray.sum`` uses along a contiguous row;
* the water levels of the rows above ``hi`` follow :func:`~privrl.offline.tabular._water_levels`: when
  at most a quarter of the entries are candidates (``x > max(x) − hi``), the candidates of all those
  rows are summed in one running sum (the NumPy code's ``cumsum`` over the block) and each row's level
  is ``(running − before − hi)/rank``; otherwise each row's sorted entries have their own running sum.

Without numba (``PRIVRL_NO_JIT=1``) the module is plain Python: the NumPy path is used instead.
"""

from __future__ import annotations

import numpy as np

from privrl._jit import compilers
from privrl._sort_kernels import sorted_down

jit, inlined, COMPILED = compilers()

#: NumPy's pairwise summation block (``PW_BLOCKSIZE``)
_PW_BLOCK = 128


@jit
def _pairwise_leaf(a: np.ndarray, start: int, n: int) -> float:
    """NumPy's pairwise sum of at most 128 entries: 8 accumulators (one at a time below 8 entries)."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        j = start + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@jit
def pairwise_sum(a: np.ndarray, start: int, n: int) -> float:
    """``a[start:start + n].sum()`` with NumPy's pairwise summation of contiguous float64, bit for bit:
    above 128 entries the sum of the two halves, split at a multiple of 8. The recursion is unrolled
    on an explicit stack (numba's cache cannot reload a recursive function)."""
    if n <= _PW_BLOCK:
        return _pairwise_leaf(a, start, n)
    starts = np.empty(128, dtype=np.int64)
    sizes = np.empty(128, dtype=np.int64)
    merge = np.zeros(128, dtype=np.bool_)
    values = np.empty(128)
    sp, nv = 0, 0
    starts[0], sizes[0] = start, n
    while sp >= 0:
        s0, m = starts[sp], sizes[sp]
        if m <= _PW_BLOCK:
            values[nv] = _pairwise_leaf(a, s0, m)
            nv += 1
            sp -= 1
        elif merge[sp]:                          # both halves done: left + right
            values[nv - 2] = values[nv - 2] + values[nv - 1]
            nv -= 1
            merge[sp] = False
            sp -= 1
        else:                                    # the right half below the left: the left is summed first
            half = m // 2
            half -= half % 8
            merge[sp] = True
            starts[sp + 1], sizes[sp + 1], merge[sp + 1] = s0 + half, m - half, False
            starts[sp + 2], sizes[sp + 2], merge[sp + 2] = s0, half, False
            sp += 2
    return values[0]


@jit
def _level(row: np.ndarray, hi: float, top: float, dense: bool, u: np.ndarray, levels: np.ndarray, acc: float
           ) -> tuple[float, float]:
    """The water level ``t`` of one row (Eq. 3: ``Σ max(0, x − t) = hi``) and the block's running sum.

    ``dense``: every entry sorted, the row's own running sum (``_dense_water_levels``); else the
    candidates ``> top − hi`` sorted, their running sum continued from ``acc`` and the level
    ``(running − before − hi)/rank`` (``_water_levels``'s sums over the block). The level is the one
    of the last rank ``k`` with ``u_j > level_j`` counted over all ranks, ``top`` when there is none."""
    S = row.shape[0]
    c = 0
    cut = top - hi
    for j in range(S):
        if dense or row[j] > cut:
            u[c] = row[j]
            c += 1
    cand = sorted_down(u, c)
    before = 0.0 if dense else acc
    run = before
    k = 0
    for j in range(c):
        run += cand[j]
        levels[j] = (run - hi) / (j + 1) if dense else (run - before - hi) / (j + 1)
        if cand[j] > levels[j]:
            k += 1
    return (levels[k - 1] if k > 0 else top), (acc if dense else run)


@jit
def release_block(x: np.ndarray, S: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                  noisy_sa: np.ndarray, bound: float, floor: float) -> np.ndarray:
    """The released rows of one block, in place in ``x`` (flat ``m·S``, holding the block's noise on
    entry): ``{noise + counts}^+`` (Eq. 2; CSR counts ``indptr, indices, data``), Eq. (3) with the
    bound ``bound`` around ``noisy_sa`` ``(m,)``, cells ``<= floor`` set to 0 when ``floor > 0``.
    Returns the row sums ``ñ_sa`` ``(m,)`` of the result. Two sweeps, a row at a time: the first
    releases each row and finds its total (and, for a row above ``hi``, its largest entry and number
    of candidates); the second lowers the rows above ``hi`` to their water level, thresholds and sums."""
    m = noisy_sa.shape[0]
    hi = np.empty(m)
    top = np.empty(m)
    high = np.zeros(m, dtype=np.bool_)
    candidates = 0
    n_high = 0
    for r in range(m):
        row = x[r * S:(r + 1) * S]
        for k in range(indptr[r], indptr[r + 1]):
            row[indices[k]] += data[k]
        t = 0.0
        for j in range(S):
            y = row[j]
            y = y if y >= 0.0 else 0.0     # np.maximum(x, 0.0): x when x >= 0 (-0.0 too), else 0
            row[j] = y
            t = t if t >= y else y
        top[r] = t                         # the largest entry (0 for a row of zeros)
        total = pairwise_sum(row, 0, S)
        lo = noisy_sa[r] - bound / 2.0
        hi[r] = noisy_sa[r] + bound / 2.0
        if total < lo:
            shift = (lo - total) / S
            for j in range(S):
                row[j] += shift
        if total > hi[r]:
            high[r] = True
            n_high += 1
            if total < lo:                 # (bound < 0 only) the shift moved the largest entry too
                top[r] = row[0]
                for j in range(1, S):
                    top[r] = max(top[r], row[j])
            cut = top[r] - hi[r]
            for j in range(S):
                if row[j] > cut:
                    candidates += 1
    dense = 4 * candidates > n_high * S
    u = np.empty(S)
    levels = np.empty(S)
    acc = 0.0
    n = np.empty(m)
    for r in range(m):
        row = x[r * S:(r + 1) * S]
        if high[r]:
            t, acc = _level(row, hi[r], top[r], dense, u, levels, acc)
            if floor > 0:                  # {x − t}^+, then cells <= floor to 0: kept iff x − t > floor
                for j in range(S):
                    y = row[j] - t
                    row[j] = y if y > floor else 0.0
            else:
                for j in range(S):
                    y = row[j] - t
                    row[j] = y if y >= 0.0 else 0.0
        elif floor > 0:
            for j in range(S):
                y = row[j]
                row[j] = y if y > floor else 0.0
        n[r] = pairwise_sum(row, 0, S)
    return n
