"""Functional noise of many training runs advanced together (Wang & Hegde 2019, App. A).

:class:`OUBatch` holds the Ornstein–Uhlenbeck paths of ``R`` independent runs — per run, one path
per action sharing its geometry, exactly as :class:`~privrl.q_learning.gaussian_process.OUNoise` —
and answers one query per run at once: ``query(states)`` with ``states`` of shape ``(R, k)``.
Each run keeps its own stored points and its own stream of standard normals (blocks of
``_BLOCK`` drawn from its own sources, one per action, when the previous block runs out), and a
query samples a run's distinct new states in increasing order, each conditioned on its nearest
stored neighbours — so a run gets the same normals, in the same order, at the same states as
``OUNoise`` queried alone: the same path, up to floating-point rounding (tested).

The algorithm of ``OUNoise``'s batch query, with a run axis in front. A query's states are sorted
per run; duplicates and states already stored (hits) take no normal. In the merged order a new
state's left neighbour is the element before it (a stored state, or the previous new state when
no stored state lies between them) and its right neighbour the next *stored* state, so the values
of a run's sorted query entries obey one linear recursion ``z_i = w_i z_{i-1} + c_i``:

* a new state linked to the previous new state: ``w_i = w-`` (bridge weight), ``c_i = w+ g(s+) +
  sigma sqrt(var) xi``;
* a new state whose left neighbour is stored (or absent): ``w_i = 0``, the stored value enters
  ``c_i`` through ``w-``; a missing neighbour is at distance ``+inf``, which turns the bridge into
  the one-sided step or the empty-path draw without branches (spec §2.4);
* a stored state: ``w_i = 0``, ``c_i`` its value; a duplicate: ``w_i = 1``, ``c_i = 0``.

The recursion is solved for every run at once by recursive doubling (``ceil(log2 k)`` vector
rounds at most); the new states are then merged into each run's sorted store. Stores are padded
``(R, C)`` arrays (``+inf`` beyond a run's ``n`` stored states), so runs with small stores pay for
the largest one: batch runs whose stores grow alike (the same reset schedule) together.

Every normal comes from the runs' :class:`~privrl.privacy.noise.NoiseSource` objects (the fits'
releasers); nothing here draws privacy noise otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privrl.privacy.noise import NoiseSource
from privrl.q_learning.gaussian_process import _BLOCK, OUNoise

__all__ = ["OUBatch"]

#: a query compares every state with every stored one (one vector operation) when
#: runs x states x stored is at most this; otherwise one binary search per run
_DENSE_SEARCH = 1 << 16
#: stores larger than this (runs x stored states) take a query's new states one run at a time
_ROW_INSERTS = 1 << 15


class OUBatch:
    """The OU paths of ``R`` runs (``n_paths`` per run, a common reset per run), queried in lockstep.

    ``betas``, ``sigmas``: one per run; ``sources[r]``: run ``r``'s ``n_paths`` noise sources (path
    ``i`` draws its normals from ``sources[r][i]``). ``query(states)`` with ``states`` ``(R, k)``
    returns ``(R, k, n_paths)``; ``point(x)`` with ``x`` ``(R,)`` returns ``(R, n_paths)``;
    ``reset(rows)`` starts fresh, independent paths for the runs selected by the boolean mask
    ``rows`` (all runs by default).
    """

    def __init__(self, betas: Sequence[float], sigmas: Sequence[float],
                 sources: Sequence[Sequence[NoiseSource]]) -> None:
        # here, not at the top: numba loads on the first fit only, never on ``import privrl``
        from privrl.q_learning import _kernels

        self._kernels = _kernels
        self.beta = np.asarray(betas, float)
        self.sigma = np.asarray(sigmas, float)
        self._sources = [list(s) for s in sources]
        R, m = len(self._sources), len(self._sources[0])
        if self.beta.shape != (R,) or self.sigma.shape != (R,) or any(len(s) != m for s in self._sources):
            raise ValueError("OUBatch needs one beta, one sigma and n_paths sources per run")
        self.n_runs, self.n_paths = R, m
        self._rows = np.arange(R)[:, None]
        self._n = np.zeros(R, np.intp)          # stored states per run
        self._x = np.full((R, 0), np.inf)       # sorted stored states, +inf beyond _n
        self._y = np.zeros((R, 0, m))           # their values
        self._buf = np.zeros((R, 0, m))         # unread normals of each run: rows _pos.._filled
        self._pos = np.zeros(R, np.intp)
        self._filled = np.zeros(R, np.intp)
        self._pending: tuple[np.ndarray, ...] | None = None   # the last query, not yet merged

    @classmethod
    def from_paths(cls, paths: Sequence[OUNoise]) -> OUBatch:
        """The paths of fresh :class:`OUNoise` objects (nothing stored, no normal drawn yet) as one
        batch: the same parameters and noise sources."""
        for p in paths:
            if len(p) or len(p._buf) or p.seed_endpoints:
                raise ValueError("OUBatch.from_paths takes fresh OUNoise objects without seeded endpoints")
        return cls([p.beta for p in paths], [p.sigma for p in paths], [p._sources for p in paths])

    def __len__(self) -> int:
        return self.n_runs

    def stored(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Run ``r``'s stored states (increasing) and their values ``(n, n_paths)``."""
        self._flush()
        n = int(self._n[r])
        return self._x[r, :n].copy(), self._y[r, :n].copy()

    def reset(self, rows: np.ndarray | None = None) -> None:
        if rows is None or rows.all():
            self._pending = None
            rows = None
        else:
            self._flush()
        if rows is None:
            self._n[:] = 0
            self._x[:] = np.inf
        else:
            self._n[rows] = 0
            self._x[rows] = np.inf

    # -- normals: each run reads its own stream, in blocks of _BLOCK per source
    def _reserve(self, counts: np.ndarray) -> np.ndarray:
        """Make ``counts[r]`` unread normals available to every run; returns where they start in
        ``_buf`` (and marks them read)."""
        for r in np.flatnonzero(self._pos + counts > self._filled):
            self._refill(int(r), int(counts[r]))
        start = self._pos.copy()
        self._pos += counts
        return start

    def _refill(self, r: int, k: int) -> None:
        pos, filled = int(self._pos[r]), int(self._filled[r])
        unread = filled - pos
        blocks: list[np.ndarray] = []
        while unread + _BLOCK * len(blocks) < k:   # a block exactly when the previous one runs out
            blocks.append(np.stack([src.gaussian(_BLOCK, 1.0) for src in self._sources[r]], axis=-1))
        size = unread + _BLOCK * len(blocks)
        if size > self._buf.shape[1]:
            grown = np.zeros((self.n_runs, max(size, 2 * self._buf.shape[1]), self.n_paths))
            grown[:, :self._buf.shape[1]] = self._buf
            self._buf = grown
        self._buf[r, :unread] = self._buf[r, pos:filled].copy()
        self._buf[r, unread:size] = np.concatenate(blocks)
        self._pos[r], self._filled[r] = 0, size

    # -- queries
    def _positions(self, qs: np.ndarray, nmax: int) -> np.ndarray:
        """For every sorted query state, the number of stored states below it (per run)."""
        R, k = qs.shape
        if nmax == 0:
            return np.zeros((R, k), np.intp)
        x = self._x[:, :nmax]
        if R * k * nmax <= _DENSE_SEARCH:   # one comparison of every state with every stored one
            return (x[:, None, :] < qs[:, :, None]).sum(-1)
        out = np.empty((R, k), np.intp)
        self._kernels.search_stores(self._x, self._n, np.ascontiguousarray(qs), out)
        return out

    def point(self, x: np.ndarray) -> np.ndarray:
        """The ``(R, n_paths)`` values at one state per run."""
        return self.query(np.asarray(x, float)[:, None])[:, 0]

    def query(self, states: np.ndarray) -> np.ndarray:
        """Values ``(R, k, n_paths)`` at ``states`` ``(R, k)``; new states are sampled and stored."""
        q = np.asarray(states, float)
        R, k = q.shape
        self._flush()
        rows = self._rows
        order = q.argsort(axis=1)
        qs = q[rows, order]
        first = np.empty((R, k), bool)
        first[:, 0] = True
        np.not_equal(qs[:, 1:], qs[:, :-1], out=first[:, 1:])
        nmax = int(self._n.max())
        if nmax == 0:
            new, pos, z = first, np.zeros((R, k), np.intp), self._fresh(qs, first)
        else:
            new, pos, z = self._conditioned(qs, first, nmax)
        self._pending = (qs, z, new, pos)
        out = np.empty((R, k, self.n_paths))
        out[rows, order] = z
        return out

    def _normals_for(self, new: np.ndarray) -> np.ndarray:
        """The next normals of every run, one per ``new`` entry (in order), ``(R, k, n_paths)``."""
        start = self._reserve(new.sum(1))
        rank = np.cumsum(new, axis=1)
        rank += (start - 1 + np.arange(self.n_runs) * self._buf.shape[1])[:, None]   # flat row of _buf
        return self._buf.reshape(-1, self.n_paths).take(np.where(new, rank, 0), axis=0)

    def _fresh(self, qs: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Fresh paths (nothing stored): each distinct state one OU step from the previous one,
        ``z_i = rho_i z_{i-1} + sigma sqrt(1 - rho_i^2) xi_i`` (spec §2.4; the first at ``rho = 0``);
        duplicates are steps of length 0 (``rho = 1``, no normal)."""
        R, k = qs.shape
        beta = self.beta[:, None]
        step = np.full((R, k), np.inf)
        np.subtract(qs[:, 1:], qs[:, :-1], out=step[:, 1:])
        em = np.expm1(-beta * step)                       # rho - 1
        sd = np.sqrt(-em * (2.0 + em))                    # sqrt(1 - rho^2), accurately
        sd *= self.sigma[:, None]
        c = sd[..., None] * self._normals_for(first)
        span = self.beta * (qs[:, -1] - qs[:, 0])
        if (span <= 200.0).all():   # closed form: z_i = sum_{j <= i} e^{-beta (x_i - x_j)} c_j
            up = np.exp(beta * (qs - qs[:, :1]))[..., None]
            return np.cumsum(up * c, axis=1) / up
        return _scan(1.0 + em, c)

    def _conditioned(self, qs: np.ndarray, first: np.ndarray, nmax: int):
        """Paths with stored states: hits return the stored values, new states are bridge (or
        one-sided) draws chained through the previous new state (module docstring)."""
        R, k = qs.shape
        m, rows = self.n_paths, self._rows
        pos = self._positions(qs, nmax)
        at = np.minimum(pos, nmax - 1)
        has_right = pos < self._n[:, None]
        x_right = np.where(has_right, self._x[rows, at], np.inf)
        flat = self._y.reshape(-1, m)                     # values of run r, state j at row r * W + j
        base = (rows * self._y.shape[1]).astype(np.intp)
        y_right = flat.take(base + at, axis=0)
        hit = first & (x_right == qs)
        new = first & ~hit
        if not new.any():   # stored states only: a duplicate repeats the value before it (no arithmetic)
            last = np.where(first, np.arange(k), 0)
            np.maximum.accumulate(last, axis=1, out=last)
            return new, pos, y_right[rows, last]
        z = np.empty((R, k, m))
        self._kernels.bridge_values(qs, first, new, pos, self._x, self._y, self._n, self.beta, self.sigma,
                                    np.ascontiguousarray(self._normals_for(new)), z)
        return new, pos, z

    # -- storage: a query's new states are merged into the stores lazily (a reset drops them)
    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        qs, z, new, pos = pending
        counts = new.sum(1)
        if not counts.any():
            return
        total = self._n + counts
        if self.n_runs * int(self._n.max()) > _ROW_INSERTS:
            self._insert_rows(qs, z, new, pos, total)
        else:
            self._merge(qs, z, new, pos, total)
        self._n = total

    def _merge(self, qs: np.ndarray, z: np.ndarray, new: np.ndarray, pos: np.ndarray, total: np.ndarray) -> None:
        """Every run's new states merged into its store at once (vector operations on all stores)."""
        R, m = self.n_runs, self.n_paths
        nmax = int(self._n.max())
        width = int(total.max())
        r_new, i_new = np.nonzero(new)                     # row-major: increasing within a run
        slot = pos[r_new, i_new] + (np.cumsum(new, axis=1) - 1)[r_new, i_new]
        is_new = np.zeros((R, width), bool)
        is_new[r_new, slot] = True
        is_old = (np.arange(width) < total[:, None]) & ~is_new
        x = np.full((R, width), np.inf)
        y = np.zeros((R, width, m))
        if nmax:
            was = np.arange(nmax) < self._n[:, None]
            x[is_old] = self._x[:, :nmax][was]
            y[is_old] = self._y[:, :nmax][was]
        x[r_new, slot] = qs[r_new, i_new]
        y[r_new, slot] = z[r_new, i_new]
        self._x, self._y = x, y

    def _insert_rows(self, qs: np.ndarray, z: np.ndarray, new: np.ndarray, pos: np.ndarray,
                     total: np.ndarray) -> None:
        """Large stores: each run's new states merged into its own row in place (a compiled
        kernel; the stores keep spare width, doubled when full)."""
        width = int(total.max())
        if width > self._x.shape[1]:
            grown = max(width, 2 * self._x.shape[1])
            x = np.full((self.n_runs, grown), np.inf)
            y = np.zeros((self.n_runs, grown, self.n_paths))
            x[:, :self._x.shape[1]] = self._x
            y[:, :self._y.shape[1]] = self._y
            self._x, self._y = x, y
        self._kernels.insert_stores(self._x, self._y, self._n, np.ascontiguousarray(qs), np.ascontiguousarray(z),
                                    np.ascontiguousarray(new), np.ascontiguousarray(pos, dtype=np.intp))


def _scan(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """All ``z_i = w_i z_{i-1} + c_i`` along axis 1 (``w`` of shape ``(R, k)``, ``c`` of ``(R, k, m)``,
    ``z_{-1} = 0``; a zero weight starts a chain), written into ``c``. Few runs: recursive doubling
    (``ceil(log2 L)`` vector rounds for chains of length ``L``, re-associating sums of the same
    terms); many runs: the recursion itself, one position at a time over all runs at once."""
    R, k, m = c.shape
    if R * m < 64:
        _doubling_scan(w, c)
        return c
    ct = np.ascontiguousarray(c.transpose(1, 0, 2))
    wt = np.ascontiguousarray(w.T)[:, :, None]
    for i in np.flatnonzero(wt[1:, :, 0].any(1)) + 1:
        ct[i] += wt[i] * ct[i - 1]
    c[:] = ct.transpose(1, 0, 2)
    return c


def _doubling_scan(w: np.ndarray, c: np.ndarray) -> None:
    """:func:`_scan` by recursive doubling, in place."""
    k = w.shape[1]
    w = w.copy()
    d = 1
    while d < k and w[:, d:].any():
        c[:, d:] += w[:, d:, None] * c[:, :-d]
        w[:, d:] *= w[:, :-d]
        d *= 2
