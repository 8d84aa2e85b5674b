"""The compiled kernels of the stacked Q-networks (numba, cached on disk).

The NumPy learner of :mod:`privrl.q_learning.networks` spends its time on small matrix products of
``R`` runs' networks over a minibatch: every layer's activations of every run are materialised,
several megabytes per update. These kernels take one sample of one run at a time through the whole
network — forward pass, TD error (Alg. 1 line 20), backward pass, gradient sums — keeping its
activations in a scratch vector, so nothing but the inputs and the ``(R, P)`` gradient sums touches
memory. Each run is computed on its own (its result does not depend on the batch it is in). The
OU path queries of :mod:`privrl.q_learning.ou_batch` (the functional noise: plan, values, store
merge; the normals are drawn by the caller, from the fits' noise sources) and the replay
minibatches of :mod:`privrl.q_learning.replay` (Floyd's algorithm) have their kernels here too.

Parameters are the learner's flat rows (per run: W1, b1, W2, b2, ... in PyTorch's order, ``W``
row-major ``(out, in)``); ``layout`` is one row per layer: offset of W, offset of b, inputs,
outputs (:func:`layout_of`). Arithmetic is plain IEEE (no fastmath); the sums run in another order
than NumPy's matrix products, so the results agree with the NumPy path up to rounding.

Imported on the first fit (numba takes a few tenths of a second to load): ``import privrl`` never
loads it. Without numba, or with ``PRIVRL_NO_JIT=1`` in the environment when this module is first
imported, the same functions run as plain Python (:data:`JIT` is then False): the same operations in
the same order, so the same results, but orders of magnitude slower (for tests of small fits).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privrl._jit import compilers

__all__ = ["JIT", "layout_of", "forward", "td_gradients", "floyd_minibatches"]


_jit, _inline, JIT = compilers()


def layout_of(sizes: Sequence[int]) -> np.ndarray:
    """``(L, 4)`` int64: per layer the offsets of its W and b in a parameter row, its inputs and
    its outputs."""
    rows, off = [], 0
    for a, b in zip(sizes[:-1], sizes[1:]):
        rows.append((off, off + a * b, a, b))
        off += a * b + b
    return np.array(rows, dtype=np.int64)


@_jit
def _forward_run(p: np.ndarray, layout: np.ndarray, h: np.ndarray) -> int:
    """The forward pass of one run's minibatch, batch-major: ``h[:d]`` holds the inputs (one row per
    input coordinate, one column per sample); every layer's outputs are written in the rows after
    its inputs (post-ReLU for hidden layers). Returns the first row of the network's output. Output
    ``j`` of a layer sums ``W[j, k] x[k]`` over ``k`` in order, then adds the bias."""
    n = h.shape[1]
    start = 0
    last = layout.shape[0] - 1
    for layer in range(layout.shape[0]):
        w_off, b_off, n_in, n_out = layout[layer, 0], layout[layer, 1], layout[layer, 2], layout[layer, 3]
        out = start + n_in
        for j in range(n_out):
            row = h[out + j]
            for i in range(n):
                row[i] = 0.0
            for k in range(n_in):
                w = p[w_off + j * n_in + k]
                src = h[start + k]
                for i in range(n):
                    row[i] += w * src[i]
            b = p[b_off + j]
            if layer < last:
                for i in range(n):
                    v = row[i] + b
                    row[i] = v if v > 0.0 else 0.0
            else:
                for i in range(n):
                    row[i] += b
        start = out
    return start


@_jit
def _rows(layout: np.ndarray, d: int) -> int:
    width = d
    for layer in range(layout.shape[0]):
        width += layout[layer, 3]
    return width


@_jit
def forward(params: np.ndarray, layout: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out[r, i] = net_r(x[r, i])``: ``x`` ``(R, n, d)``, ``out`` ``(R, n, m)``."""
    R, n, d = x.shape
    m = out.shape[2]
    h = np.empty((_rows(layout, d), n))
    for r in range(R):
        for k in range(d):
            for i in range(n):
                h[k, i] = x[r, i, k]
        top = _forward_run(params[r], layout, h)
        for i in range(n):
            for j in range(m):
                out[r, i, j] = h[top + j, i]


@_jit
def td_gradients(params: np.ndarray, layout: np.ndarray, s: np.ndarray, a: np.ndarray, g_sa: np.ndarray,
                 y: np.ndarray, huber: bool, grad: np.ndarray) -> None:
    """The gradient of the mean TD loss of every run (Alg. 1 line 20) into ``grad`` ``(R, P)``:
    per sample ``td = (Q(s, a) + g_a(s)) - y``, its loss derivative (``td``, or ``clip(td, -1, 1)``
    for the Huber loss) divided by the batch size, back-propagated through the network; every
    parameter's gradient summed over the samples in order."""
    R, n, d = s.shape
    L = layout.shape[0]
    width = _rows(layout, d)
    h = np.empty((width, n))
    delta = np.empty((width, n))
    inv_n = 1.0 / n
    for r in range(R):
        p = params[r]
        g = grad[r]
        for k in range(d):
            for i in range(n):
                h[k, i] = s[r, i, k]
        top = _forward_run(p, layout, h)
        for j in range(layout[L - 1, 3]):
            for i in range(n):
                delta[top + j, i] = 0.0
        for i in range(n):
            taken = a[r, i]
            td = (h[top + taken, i] + g_sa[r, i]) - y[r, i]
            if huber:
                td = min(max(td, -1.0), 1.0)
            delta[top + taken, i] = td * inv_n
        out = top
        for layer in range(L - 1, -1, -1):
            w_off, b_off, n_in, n_out = layout[layer, 0], layout[layer, 1], layout[layer, 2], layout[layer, 3]
            start = out - n_in
            d_out = delta[out:out + n_out]
            gw = np.dot(d_out, h[start:start + n_in].T)          # sum over the samples: (out, in)
            g[w_off:w_off + n_out * n_in] = gw.ravel()
            for j in range(n_out):
                gb = 0.0
                for i in range(n):
                    gb += d_out[j, i]
                g[b_off + j] = gb
            if layer > 0:
                weights = p[w_off:w_off + n_out * n_in].reshape((n_out, n_in))
                d_in = np.dot(weights.T, d_out)                  # (in, n)
                for k in range(n_in):
                    act = h[start + k]
                    row = delta[start + k]
                    for i in range(n):
                        row[i] = d_in[k, i] if act[i] > 0.0 else 0.0
            out = start


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


# ------------------------------------------------------------------------------ replay minibatches
_TOP = (1 << 63) - 1       # the largest of the words a minibatch reads


@_inline
def _uniform_below(bits: np.ndarray, c: int, m: int) -> tuple[int, int]:
    """A uniform integer on ``[0, m)`` from the words ``bits[c:]`` (uniform on ``[0, 2^63)``) and the
    position after the words read, ``-1`` when they ran out. A word ``x`` below ``2^63 - (2^63 mod m)``
    gives ``x mod m`` (every value from the same number of words: exact); a word above is rejected
    and the next one read (probability below ``m / 2^63``)."""
    while c < bits.shape[0]:
        x = bits[c]
        c += 1
        if x <= _TOP - m or x <= _TOP - (_TOP % m + 1) % m:     # the exact bound only near the top
            return x % m, c
    return 0, -1


@_jit
def floyd_minibatches(bits: np.ndarray, sizes: np.ndarray, out: np.ndarray, used: np.ndarray) -> None:
    """Uniform minibatches of distinct indices by Floyd's algorithm: ``out[r, b]`` (``k`` indices) is
    a uniformly random ``k``-subset of ``range(sizes[b])`` — each of the ``C(n, k)`` subsets equally
    likely — drawn from run ``r``'s words ``bits[r]`` (uniform on ``[0, 2^63)``, read in order). For
    ``j = n - k, ..., n - 1``: ``t`` uniform on ``[0, j]`` (:func:`_uniform_below`), and ``j`` is
    taken instead when ``t`` is in already. ``used[r]``: the words run ``r`` read, or ``-1`` when
    ``bits[r]`` ran out (``out[r]`` then incomplete). Each run is computed on its own."""
    R, B, k = out.shape
    top = 1
    for b in range(B):
        top = max(top, sizes[b])
    taken = np.zeros(top, np.bool_)
    for r in range(R):
        row = bits[r]
        c = 0
        for b in range(B):
            n = sizes[b]
            pick = out[r, b]
            filled = 0
            while filled < k:
                j = n - k + filled
                t, c = _uniform_below(row, c, j + 1)
                if c < 0:
                    break
                if taken[t]:
                    t = j
                taken[t] = True
                pick[filled] = t
                filled += 1
            for i in range(filled):
                taken[pick[i]] = False
            if c < 0:
                break
        used[r] = c
