"""The compiled kernels of the stacked networks and the replay minibatches (numba, cached on disk).

The NumPy learner of :mod:`privrl.deep.networks` spends its time on small matrix products of
``R`` runs' networks over a minibatch: every layer's activations of every run are materialised,
several megabytes per update. These kernels take one sample of one run at a time through the whole
network — forward pass, TD error (Wang & Hegde 2019, Alg. 1 line 20), backward pass, gradient sums —
keeping its activations in a scratch vector, so nothing but the inputs and the ``(R, P)`` gradient
sums touches memory. Each run is computed on its own (its result does not depend on the batch it is
in). The replay minibatches of :mod:`privrl.deep.replay` (Floyd's algorithm) have their kernel here.

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
