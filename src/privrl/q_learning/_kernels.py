"""The compiled kernels of DP Q-learning's functional noise (numba, cached on disk): the OU path
queries of :mod:`privrl.q_learning.ou_batch` (plan, values, store merge; the normals are drawn by the
caller, from the fits' noise sources). The networks' and the replay's kernels are in
:mod:`privrl.deep._kernels`.

Imported on the first fit (numba takes a few tenths of a second to load): ``import privrl`` never
loads it. Without numba, or with ``PRIVRL_NO_JIT=1`` in the environment when this module is first
imported, the same functions run as plain Python (:data:`JIT` is then False): the same operations in
the same order, so the same results, but orders of magnitude slower (for tests of small fits).
"""

from __future__ import annotations

import numpy as np

from privrl._jit import compilers

__all__ = ["JIT", "insert_stores", "ou_plan", "ou_values"]


_jit, _inline, JIT = compilers()


# ------------------------------------------------------------------------------ OU path stores
@_jit
def insert_stores(x: np.ndarray, y: np.ndarray, n: np.ndarray, qs: np.ndarray, z: np.ndarray, new: np.ndarray,
                  pos: np.ndarray) -> None:
    """Merge every run's new states into its sorted store in place: ``qs[r, i]`` (value ``z[r, i]``)
    for each ``new[r, i]``, increasing in ``i``, goes before the stored state ``pos[r, i]`` (the
    arrays have room for them). The stored states move up from the last one down."""
    R, k = qs.shape
    m = y.shape[2]
    for r in range(R):
        src = n[r] - 1
        dst = src
        for i in range(k):
            if new[r, i]:
                dst += 1
        for i in range(k - 1, -1, -1):
            if not new[r, i]:
                continue
            at = pos[r, i]
            while src >= at:
                x[r, dst] = x[r, src]
                for j in range(m):
                    y[r, dst, j] = y[r, src, j]
                dst -= 1
                src -= 1
            x[r, dst] = qs[r, i]
            for j in range(m):
                y[r, dst, j] = z[r, i, j]
            dst -= 1


@_inline
def _doubling_rows(w: np.ndarray, z: np.ndarray) -> None:
    """``z_i += w_i z_{i-1}`` in order (``z`` ``(k, m)``) by recursive doubling, in place: in round
    ``d = 1, 2, 4, ...`` every ``z_i += w_i z_{i-d}`` and ``w_i *= w_{i-d}`` from the previous
    round's values, until no weight at distance ``d`` is left; ``w`` is overwritten."""
    k, m = z.shape
    d = 1
    while d < k:
        more = False
        for i in range(d, k):
            if w[i] != 0.0:
                more = True
                break
        if not more:
            break
        for i in range(k - 1, d - 1, -1):     # downwards: z_{i-d}, w_{i-d} still the previous round's
            for j in range(m):
                z[i, j] += w[i] * z[i - d, j]
            w[i] *= w[i - d]
        d *= 2


@_jit
def ou_plan(q: np.ndarray, order: np.ndarray, x: np.ndarray, n: np.ndarray, beta: np.ndarray, read: np.ndarray,
            filled: np.ndarray, qs: np.ndarray, new: np.ndarray, pos: np.ndarray, counts: np.ndarray, em: np.ndarray,
            up: np.ndarray) -> tuple[int, int]:
    """The geometry of one query of every run's OU paths (:meth:`~privrl.q_learning.ou_batch.OUBatch.query`):
    states ``q`` ``(R, k)``, increasing in the order ``q[r, order[r]]`` (``argsort``), run ``r``'s
    sorted store ``x[r, :n[r]]``. Per run: the sorted states ``qs``, the number of stored states below
    each (``pos``, a merge walk of the two sorted lists), the distinct states not stored (``new``)
    and their number (``counts``: the normals the query takes, of the ``filled[r] - read[r]``
    unread ones).

    When every store is empty (fresh paths), also the exponents of :func:`ou_values`' fresh scans:
    ``em = -beta d_i`` (``d_i`` the step from the previous sorted state, ``+inf`` for the first)
    and ``up = beta (x_i - x_0)``, for NumPy's ``expm1`` and ``exp``.

    Returns ``(short, scan)``: the number of runs with too few unread normals, and ``0`` (stores
    not all empty), ``1`` (fresh, every run within ``beta (x_max - x_0) <= 200``: the closed form)
    or ``2`` (fresh, longer)."""
    R, k = q.shape
    fresh = True
    for r in range(R):
        if n[r]:
            fresh = False
    short = 0
    scan = 1 if fresh else 0
    for r in range(R):
        o = order[r]
        size = n[r]
        j = 0
        count = 0
        for i in range(k):
            v = q[r, o[i]]
            qs[r, i] = v
            while j < size and x[r, j] < v:
                j += 1
            pos[r, i] = j
            is_new = (i == 0 or v != qs[r, i - 1]) and not (j < size and x[r, j] == v)
            new[r, i] = is_new
            count += is_new
        counts[r] = count
        if read[r] + count > filled[r]:
            short += 1
        if fresh:
            b = beta[r]
            nb = -b
            q0 = qs[r, 0]
            em[r, 0] = -np.inf
            for i in range(1, k):
                em[r, i] = nb * (qs[r, i] - qs[r, i - 1])
            for i in range(k):
                up[r, i] = b * (qs[r, i] - q0)
            if not b * (qs[r, k - 1] - q0) <= 200.0:
                scan = 2
    return short, scan


@_jit
def ou_values(order: np.ndarray, qs: np.ndarray, new: np.ndarray, pos: np.ndarray, x: np.ndarray, y: np.ndarray,
              n: np.ndarray, beta: np.ndarray, sigma: np.ndarray, buf: np.ndarray, read: np.ndarray, em: np.ndarray,
              up: np.ndarray, scan: int, z: np.ndarray, out: np.ndarray) -> None:
    """The values of one query planned by :func:`ou_plan`: ``z`` ``(R, k, m)`` in the increasing
    order ``qs``, and ``out`` the same in the query's order (``out[r, order[r, i]] = z[r, i]``). The
    ``t``-th new state of run ``r`` takes the normals ``buf[r, read[r] + t]`` (the caller made them
    available); a duplicate repeats the value before it, a stored state is its stored value.

    * ``scan > 0``, fresh paths (every run's store empty): each distinct state is one OU step of
      length ``d_i`` from the previous one, ``z_i = rho_i z_{i-1} + c_i``, ``c_i = sigma sqrt(1 -
      rho_i^2) xi_i``, ``rho_i = e^{-beta d_i}`` (spec §2.4; the first at ``d = +inf``: ``sigma xi``),
      given ``em = rho - 1`` (``expm1(-beta d)``, ``-1`` for the first state). ``scan == 1``:
      in closed form ``z_i = sum_{j <= i} e^{-beta (x_i - x_j)} c_j``, a running sum of ``up_j c_j``
      divided by ``up_i`` (``up = e^{beta (x - x_0)}``, given; for spans ``beta (x_max - x_0) <= 200``);
      ``2``: the recursion itself, in order; ``3``: recursive doubling (``ceil(log2 k)`` rounds
      re-associating the same terms). ``em`` and ``up`` come from NumPy and these are the vector
      code's operations in its order, so the values are those of :mod:`~privrl.q_learning.ou_batch`'s
      NumPy version bit for bit.
    * ``scan == 0``: a new state is the bridge (or one-sided) draw ``w- g(s-) + w+ g(s+) + sigma
      sqrt(var) xi`` (Claim 12), its left neighbour the previous new state when no stored state lies
      between them, else the stored one, a missing neighbour at distance ``+inf`` (which turns the
      bridge into the one-sided step or the empty-path draw without branches), taken in order:
      ``z_i = c_i + w-_i z_{i-1}``."""
    R, k = qs.shape
    m = z.shape[2]
    inf = np.inf
    w = np.empty(k)
    acc = np.empty(m)
    for r in range(R):
        t = read[r]
        if scan:
            for j in range(m):
                acc[j] = 0.0
            for i in range(k):
                if not new[r, i]:               # a duplicate: a step of length 0, no normal
                    w[i] = 1.0
                    for j in range(m):
                        z[r, i, j] = z[r, i - 1, j] if scan == 1 else 0.0
                    continue
                e = em[r, i]
                sd = np.sqrt(-e * (2.0 + e))    # sqrt(1 - rho^2), accurately
                sd *= sigma[r]
                w[i] = 1.0 + e
                for j in range(m):
                    c = sd * buf[r, t, j]
                    if scan == 1:
                        acc[j] += up[r, i] * c
                        z[r, i, j] = acc[j] / up[r, i]
                    else:
                        z[r, i, j] = c
                t += 1
            if scan == 2:
                for i in range(1, k):
                    for j in range(m):
                        z[r, i, j] += w[i] * z[r, i - 1, j]
            elif scan == 3:
                _doubling_rows(w, z[r])
        else:
            size = n[r]
            nb = -beta[r]
            for i in range(k):
                p = pos[r, i]
                if not new[r, i]:
                    if i > 0 and qs[r, i] == qs[r, i - 1]:
                        for j in range(m):
                            z[r, i, j] = z[r, i - 1, j]
                    else:
                        for j in range(m):
                            z[r, i, j] = y[r, p, j]
                    continue
                has_right = p < size
                link = i > 0 and pos[r, i - 1] == p
                stored_left = (not link) and p > 0
                if link:
                    d1 = qs[r, i] - qs[r, i - 1]
                elif stored_left:
                    d1 = qs[r, i] - x[r, p - 1]
                else:
                    d1 = inf
                d2 = x[r, p] - qs[r, i] if has_right else inf
                em1 = np.expm1(nb * d1)
                em2 = np.expm1(nb * d2)
                a1 = -em1 * (2.0 + em1)
                a2 = -em2 * (2.0 + em2)
                e1 = 1.0 + em1
                den = a1 + a2 * (e1 * e1)
                w_left = e1 * a2 / den
                w_right = (1.0 + em2) * a1 / den
                sd = np.sqrt(max(a1 * a2 / den, 0.0))
                sd *= sigma[r]
                for j in range(m):
                    c = sd * buf[r, t, j]
                    if has_right:
                        c += w_right * y[r, p, j]
                    if stored_left:
                        c += w_left * y[r, p - 1, j]
                    z[r, i, j] = c + w_left * z[r, i - 1, j] if link else c
                t += 1
        for i in range(k):
            o = order[r, i]
            for j in range(m):
                out[r, o, j] = z[r, i, j]
