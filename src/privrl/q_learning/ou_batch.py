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

A query is two compiled kernels (:mod:`~privrl.q_learning._kernels`): ``ou_plan`` walks each
run's sorted states against its sorted store (positions, duplicates, hits, the number of new
states), the caller draws the next blocks of the runs whose unread normals do not cover their new
states, and ``ou_values`` takes the recursion in order, the ``t``-th new state of a run reading its
``t``-th unread normal, and writes the values back in the query's order. When every store is empty
(fresh paths, e.g. after a reset) the chain is the one-sided OU step from the previous state,
summed in closed form (its ``expm1``/``exp`` factors from NumPy). The new states are merged into
each run's store lazily, at the next query (a reset drops them unmerged). Stores are padded
``(R, C)`` arrays (a run's first ``n`` entries), so runs with small stores pay for the largest one
only in memory. A single run (``R = 1``) is a batch too: the training loop queries its paths here.

Every normal comes from the runs' :class:`~privrl.privacy.noise.NoiseSource` objects (the fits'
releasers); nothing here draws privacy noise otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privrl.privacy.noise import NoiseSource
from privrl.q_learning.gaussian_process import _BLOCK, OUNoise

__all__ = ["OUBatch"]

#: query sizes whose work arrays are kept for reuse
_WORK_SIZES = 4


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
        self._n = np.zeros(R, np.intp)          # stored states per run
        self._x = np.zeros((R, 0))              # sorted stored states (the first _n of each row)
        self._y = np.zeros((R, 0, m))           # their values
        self._buf = np.zeros((R, 0, m))         # unread normals of each run: rows _pos.._filled
        self._pos = np.zeros(R, np.intp)
        self._filled = np.zeros(R, np.intp)
        self._pending: tuple[np.ndarray, ...] | None = None   # the last query, not yet merged
        self._work: dict[int, tuple[np.ndarray, ...]] = {}

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
            self._n[:] = 0
        else:
            self._flush()
            self._n[rows] = 0

    # -- normals: each run reads its own stream, in blocks of _BLOCK per source
    def _refill(self, r: int, k: int) -> None:
        """Make ``k`` unread normals available to run ``r``: its next blocks, drawn from its sources
        in order (a block exactly when the previous one runs out), after its unread ones."""
        pos, filled = int(self._pos[r]), int(self._filled[r])
        unread = filled - pos
        n_blocks = -(-(k - unread) // _BLOCK)
        size = unread + _BLOCK * n_blocks
        if size > self._buf.shape[1]:
            grown = np.zeros((self.n_runs, max(size, 2 * self._buf.shape[1]), self.n_paths))
            grown[:, :self._buf.shape[1]] = self._buf
            self._buf = grown
        row = self._buf[r]
        row[:unread] = row[pos:filled].copy()
        for b in range(n_blocks):
            start = unread + b * _BLOCK
            for j, src in enumerate(self._sources[r]):
                row[start:start + _BLOCK, j] = src.gaussian(_BLOCK, 1.0)
        self._pos[r], self._filled[r] = 0, size

    # -- queries
    def point(self, x: np.ndarray) -> np.ndarray:
        """The ``(R, n_paths)`` values at one state per run."""
        return self.query(np.asarray(x, float)[:, None])[:, 0]

    def query(self, states: np.ndarray) -> np.ndarray:
        """Values ``(R, k, n_paths)`` at ``states`` ``(R, k)``; new states are sampled and stored."""
        q = np.ascontiguousarray(states, dtype=float)
        R, k = q.shape
        kernels = self._kernels
        self._flush()
        if k not in self._work:   # a query's work arrays, reused by the next of its size (once flushed)
            if len(self._work) >= _WORK_SIZES:
                self._work.clear()   # (a loop queries a few sizes: acting, update; never grow without bound)
            self._work[k] = (np.empty((R, k)), np.empty((R, k), bool), np.empty((R, k), np.intp), np.empty(R, np.intp),
                             np.empty((R, k)), np.empty((R, k)), np.empty((R, k, self.n_paths)))
        qs, new, pos, counts, em, up, z = self._work[k]
        order = q.argsort(axis=1) if k > 1 else np.zeros((R, 1), np.intp)
        short, scan = kernels.ou_plan(q, order, self._x, self._n, self.beta, self._pos, self._filled, qs, new, pos,
                                      counts, em, up)
        if short:
            for r in np.flatnonzero(self._pos + counts > self._filled):
                self._refill(int(r), int(counts[r]))
        if scan:                   # fresh paths: rho - 1 and the closed form's factors, by NumPy
            np.expm1(em, out=em)
            if scan == 1:
                np.exp(up, out=up)
            elif R * self.n_paths < 64:
                scan = 3
        out = np.empty((R, k, self.n_paths))
        kernels.ou_values(order, qs, new, pos, self._x, self._y, self._n, self.beta, self.sigma, self._buf,
                          self._pos, em, up, scan, z, out)
        self._pos += counts
        self._pending = (qs, z, new, pos, counts)
        return out

    # -- storage: a query's new states are merged into the stores lazily (a reset drops them)
    def _flush(self) -> None:
        """Merge the last query's new states into each run's store, in place (a compiled kernel; the
        stores keep spare width, doubled when full)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        qs, z, new, pos, counts = pending
        if not counts.any():
            return
        total = self._n + counts
        width = int(total.max())
        if width > self._x.shape[1]:
            grown = max(width, 2 * self._x.shape[1])
            x = np.full((self.n_runs, grown), np.inf)
            y = np.zeros((self.n_runs, grown, self.n_paths))
            x[:, :self._x.shape[1]] = self._x
            y[:, :self._y.shape[1]] = self._y
            self._x, self._y = x, y
        self._kernels.insert_stores(self._x, self._y, self._n, qs, z, new, pos)
        self._n = total
