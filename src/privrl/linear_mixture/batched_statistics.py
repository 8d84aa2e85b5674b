"""R started built-in regularizers of :mod:`privrl.linear_mixture.regularizers` advanced together
(:class:`BatchedStatistics`): the speed path of the lockstep learners, bit-identical to each
regularizer's own ``update``. A regularizer class opts in by declaring its ``_batch_kind``."""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.linear_mixture.statistics import Stats, _floor_eigenvalues, _item_pairs, check_contributions, kernels
from privrl.privacy.factorization import BLTCounter
from privrl.privacy.noise import NoiseSource, NumpyNoise
from privrl.privacy.tree import NodeNoise, gaussian_round_layout

__all__ = ["BatchedStatistics"]


def _exact_kind(reg: object) -> str | None:
    """The ``_batch_kind`` a regularizer's class declares itself (``"plain"``, ``"tree"``, ``"blt"``,
    ``"local"``), None for any other class: a subclass does not inherit it."""
    return type(reg).__dict__.get("_batch_kind")


def _batched_privatizer(reg: Any) -> Any:
    """``reg`` when it is exactly a :class:`CentralTreePrivatizer`, :class:`LocalPrivatizer` or
    :class:`CentralFactorizationPrivatizer` (the privatizers whose noise :class:`BatchedStatistics`
    draws itself; not their subclasses), else None."""
    return reg if _exact_kind(reg) in ("tree", "blt", "local") else None


class BatchedStatistics:
    """R started built-in regularizers advanced together: the speed path of the lockstep learners.

    ``update`` takes the R users' contributions (leading run axis) and returns the R runs' next
    statistics — exactly (bit for bit, tested) what each regularizer's own ``update`` would return.
    A run's four streams are packed along the last axis; one :class:`BinaryCounter` over
    ``(R, H, P)`` keeps the exact sums and the tree nodes (the same prefix and node arithmetic as
    the runs' own counters), and its node-noise callable hands out each tree run's node noise.
    That noise is drawn from the run's own noise source in blocks of rounds
    (:func:`~privrl.privacy.tree.gaussian_round_layout`: the same standard normals, in the same
    order, as the run's four counters drawing node by node through
    :class:`~privrl.privacy.tree.NodeNoise`). A BLT run (:class:`CentralFactorizationPrivatizer` with
    ``counter="blt"``) draws its ``z_t`` the same way and advances its noise recurrence
    (:func:`~privrl.privacy.factorization.blt_advance`) stacked with the other BLT runs; a local
    run's message noise is drawn the same way and added to its items; a non-private run gets none.
    The privacy semantics are unchanged: every draw is made once, as the run's own counters make it.
    Only seeded NumPy sources (:class:`~privrl.privacy.noise.NumpyNoise`) are batched; any other
    source (constant, scaled, secure) and the square-root counter take each regularizer's own ``update``.
    """

    #: rounds of standard normals pre-drawn per run and block
    block_rounds = 256
    #: the noisy runs' kinds (index into the kind array)
    _TREE, _BLT, _LOCAL = 0, 1, 2

    @staticmethod
    def supports(reg: object) -> bool:
        """True for a freshly started ``NonPrivate`` / ``LocalPrivatizer`` / ``CentralTreePrivatizer`` /
        BLT ``CentralFactorizationPrivatizer`` (exact types) whose noise comes from seeded NumPy through
        the plan's own draws."""
        counters = getattr(reg, "_counters", None)
        if counters is None or any(c.t for c in counters):
            return False
        if _exact_kind(reg) == "plain":
            return True
        noisy = _batched_privatizer(reg)
        if noisy is None:
            return False
        if not noisy.plan.is_private:
            return True
        source = noisy.releaser.noise
        if type(source) is not NumpyNoise:
            return False
        std = noisy.plan.std
        if _exact_kind(reg) == "tree":
            return all(type(c.noise) is NodeNoise and c.noise.source is source
                       and np.array_equal(np.asarray(c.noise.sigma), std[j]) for j, c in enumerate(counters))
        if _exact_kind(reg) == "blt":
            return all(type(c) is BLTCounter and c.source is source and np.array_equal(np.asarray(c.sigma), std[j])
                       for j, c in enumerate(counters))
        return True

    @classmethod
    def _kind(cls, reg: object) -> int | None:
        """The noisy kind of a run (None: no noise)."""
        noisy = _batched_privatizer(reg)
        if noisy is None or not noisy.plan.is_private:
            return None
        if _exact_kind(reg) == "tree":
            return cls._TREE
        return cls._BLT if _exact_kind(reg) == "blt" else cls._LOCAL

    def __init__(self, regs: list[Any]) -> None:
        r0 = regs[0]
        self.R, self.H, self.d1, self.d2 = len(regs), r0.horizon, r0.d1, r0.d2
        if any((g.horizon, g.d1, g.d2, g.n_episodes) != (self.H, self.d1, self.d2, r0.n_episodes) for g in regs):
            raise ValueError("BatchedStatistics needs regularizers started with the same sizes")
        d1, d2, H = self.d1, self.d2, self.H
        edges = np.cumsum([0, d1 * d1, d1, d2 * d2, d2])
        self._slices = [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
        self.P = int(edges[-1])
        self.regs = regs
        zero = np.zeros(H)
        self.shift_p = np.stack([getattr(g, "shift_p", np.full(H, getattr(g, "lam", 0.0))) for g in regs])
        self.shift_r = np.stack([getattr(g, "shift_r", np.full(H, getattr(g, "lam", 0.0))) for g in regs])
        self.floor_p = np.stack([getattr(g, "floor_p", zero) for g in regs])       # (R, H)
        self.floor_r = np.stack([getattr(g, "floor_r", zero) for g in regs])
        bounds = [g.bounds for g in regs]
        self.x_bound = np.stack([b[0] for b in bounds])
        self.y_bound = np.stack([b[1] for b in bounds])
        self.clip = np.array([g.clip_inputs for g in regs])
        self.owners = [type(g).__name__ for g in regs]
        self._layout_noise(regs)
        kind_of = self._group_runs(r0.n_episodes)
        self._build_counters(kind_of)

    def _layout_noise(self, regs: list[Any]) -> None:
        """The noisy runs, their kinds and sources, and each one's round layout (its standard normals
        per round -> the packed ``(H, P)`` noise of its four streams)."""
        H, d1, d2 = self.H, self.d1, self.d2
        shapes = [(H, d1, d1), (H, d1), (H, d2, d2), (H, d2)]
        # runs that draw noise: their round layout (standard normals -> the 4 streams' noise)
        noisy, kinds, scales, layouts = [], [], [], []
        self._sources: list[NoiseSource] = []   # the noisy runs' own noise sources
        for r, reg in enumerate(regs):
            kind, g = self._kind(reg), _batched_privatizer(reg)
            if kind is None or g is None:
                continue
            self._sources.append(g.releaser.noise)
            parts = [(sh, sym, g.plan.std[j]) for j, (sh, sym) in enumerate(zip(shapes, (True, False, True, False)))]
            m, scale, idx = gaussian_round_layout(parts)
            noisy.append(r)
            kinds.append(kind)
            scales.append((m, scale))
            layouts.append(idx)
        self._noisy = np.array(noisy, dtype=np.intp)
        self._kinds = np.array(kinds, dtype=np.intp)
        # rows (among all runs) and positions (among the noisy runs) of each kind
        self._at = [np.flatnonzero(self._kinds == k) for k in (self._TREE, self._BLT, self._LOCAL)]
        self._rows = [self._noisy[at] for at in self._at]
        if len(noisy):
            # runs with the same layout (which steps and streams draw) share one gather; every run
            # draws its own m standard normals per round
            self._m = np.array([m for m, _ in scales])
            width = int(self._m.max())
            self._scale = np.zeros((len(noisy), width + 1))
            self._index = np.empty((len(noisy), H * self.P), dtype=np.intp)
            starts = np.cumsum([0] + [int(np.prod(sh)) for sh in shapes])
            for i, ((m, scale), idx) in enumerate(zip(scales, layouts)):
                self._scale[i, :m] = scale[:m]
                idx = np.where(idx == m, width, idx)                    # the appended zero
                per = [idx[starts[j]:starts[j + 1]].reshape(H, -1) for j in range(4)]
                self._index[i] = np.concatenate(per, axis=1).ravel()    # the packed (H, P) layout
            self._same_layout = bool(np.all(self._index == self._index[0]))

    def _group_runs(self, n_episodes: int) -> np.ndarray:
        """The kernels' order of the runs (grouped by kind) and the noisy runs' positions in it;
        returns each run's kind (−1: no noise)."""
        self.n_items = max(n_episodes - 1, 0)
        tree_rows, blt_rows, local_rows = self._rows
        kind_of = np.full(self.R, -1, dtype=np.int64)
        kind_of[self._noisy] = self._kinds
        # the kernels' order: the runs grouped by kind (tree, BLT, local: the noisy runs), then the others
        self._order = np.concatenate([tree_rows, blt_rows, local_rows, np.flatnonzero(kind_of < 0)]).astype(np.int64)
        self._slot_at = np.searchsorted(self._noisy, self._order[:len(self._noisy)])  # grouped position -> noisy index
        self._position = np.argsort(self._slot_at)                               # noisy index -> grouped position
        return kind_of

    def _build_counters(self, kind_of: np.ndarray) -> None:
        """The kernels' counters (exact sums, tree stack, BLT state, local totals, floor screens) and
        the first statistics."""
        regs, H, d1, d2 = self.regs, self.H, self.d1, self.d2
        tree_rows, blt_rows, local_rows = self._rows
        n_noisy = len(self._noisy)
        # BLT runs: their factorization per buffer (d, R_blt)
        if len(blt_rows):
            blts = [regs[r]._counters[0].blt for r in blt_rows]
            theta, omega = np.array([b.theta for b in blts]).T, np.array([b.omega for b in blts]).T
        else:
            theta = omega = np.zeros((0, 0))
        # the floor's shortcut threshold γ − floor of the noisy runs (floor 0, or no noise: never floored)
        # and a screen on the squared norms that never misses the exact test ‖N‖_F > γ − floor
        screens = []
        for shift, floor in ((self.shift_p, self.floor_p), (self.shift_r, self.floor_r)):
            threshold = np.where(floor > 0, shift - floor, np.inf)
            threshold[kind_of < 0] = np.inf
            screens.append(threshold * threshold * (1 - 1e-9))
        self._threshold_p, self._threshold_r = (
            [np.where(floor > 0, shift - floor, np.inf)[rows] for rows in self._rows]
            for shift, floor in ((self.shift_p, self.floor_p), (self.shift_r, self.floor_r)))
        self._screen_p, self._screen_r = ([x * x * (1 - 1e-9) for x in t]
                                          for t in (self._threshold_p, self._threshold_r))
        shift_p = np.zeros((self.R, H, d1 * d1))                          # shift_h·I, packed (zero off the diagonal)
        shift_p[..., ::d1 + 1] = self.shift_p[:, :, None]
        shift_r = np.zeros((self.R, H, d2 * d2))
        shift_r[..., ::d2 + 1] = self.shift_r[:, :, None]
        depth = self.n_items.bit_length() + 1
        order, slot_at = self._order, self._slot_at

        def run_last(x: np.ndarray) -> np.ndarray:
            """``x`` (runs first, in run order) with its run axis last, in the grouped order."""
            return np.ascontiguousarray(np.moveaxis(x[order], 0, -1))

        self.counters = kernels().Counters(
            ints=np.array([0, self.n_items, 0, 0, 0], dtype=np.int64),
            sizes=np.array([d1, d2, self.P, len(tree_rows), len(blt_rows), n_noisy], dtype=np.int64),
            order=order, exact=np.zeros((H, self.P, self.R)),
            z=np.zeros((n_noisy, 0, self._scale.shape[1] if n_noisy else 1)),
            scale=np.ascontiguousarray(self._scale[slot_at].T) if n_noisy else np.zeros((1, 0)),
            draw_at=(np.ascontiguousarray(self._index[slot_at].T) if n_noisy
                     else np.zeros((H * self.P, 0), dtype=np.int64)),
            levels=np.zeros(depth, dtype=np.int64), stack=np.zeros((depth, H, self.P, len(tree_rows))),
            theta=np.ascontiguousarray(theta), omega=np.ascontiguousarray(omega),
            blt_state=np.zeros((theta.shape[0], H, self.P, len(blt_rows))),
            blt_total=np.zeros((H, self.P, len(blt_rows))),
            local_total=np.zeros((H, self.P, len(local_rows))), shift_p=run_last(shift_p), shift_r=run_last(shift_r),
            screen_p=run_last(screens[0]), screen_r=run_last(screens[1]),
            x_bound=np.ascontiguousarray(self.x_bound, dtype=float),
            y_bound=np.ascontiguousarray(self.y_bound, dtype=float), runs=np.zeros((H, d1 + d2 + 2, self.R)),
            per_run=np.zeros((6, self.R)), pairs=_item_pairs(d1, d2))
        self.stats: Stats = (np.zeros((self.R, H, d1, d1)), np.zeros((self.R, H, d1)), np.zeros((self.R, H, d2, d2)),
                             np.zeros((self.R, H, d2)))
        kernels().release(self.counters, *self.stats)
        self.floor()

    # -- noise, drawn in blocks from each run's own source
    def refill(self) -> Any:
        """The next block of rounds of standard normals of every noisy run (its own source, in the
        order of its own counters' draws); returns the counters' new state."""
        c = self.counters
        n = max(1, min(self.n_items - int(c.ints[0]), self.block_rounds))
        # one contiguous block per run (the kernels' grouped order), reused once read; a run's
        # columns beyond its own draws are never read and stay zero
        z = c.z if c.z.shape[1] == n else np.zeros((len(self._noisy), n, self._scale.shape[1]))
        for j, source in enumerate(self._sources):
            z[self._position[j], :, :self._m[j]] = source.gaussian((n, int(self._m[j])), 1.0)
        c.ints[3], c.ints[4] = 0, n
        self.counters = c._replace(z=z)
        return self.counters

    # -- stream
    def update(self, x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> Stats:
        """Insert the R users' contributions (``(R, H, ·)``) and return the R runs' next statistics
        (arrays reused by the next update)."""
        x_p, y_p, x_r, y_r = check_contributions(x_p, y_p, x_r, y_r, x_bound=self.x_bound, y_bound=self.y_bound,
                                                 clip=self.clip, owner=self.owners)
        c = self.counters
        if len(self._noisy) and c.ints[0] < self.n_items and c.ints[3] == c.ints[4]:
            c = self.refill()
        kernels().insert(c, *(np.ascontiguousarray(x, dtype=float) for x in (x_p, y_p, x_r, y_r)), *self.stats)
        self.floor()
        return self.stats

    def statistics(self) -> Stats:
        """The R runs' current ``(Λ_p, u_p, Λ_r, u_r)``, PD floor included (as each run's own)."""
        return self.stats

    def floor(self) -> None:
        """The PD floor where it applies, decided as each run's own statistics decide it: the
        shortcut on the run's own noise total (tree nodes, BLT or local messages), else the
        eigenvalues (:func:`_floor_eigenvalues`)."""
        c = self.counters
        Lp, _, Lr, _ = self.stats
        tree_rows, blt_rows, local_rows = self._rows
        sp, sr = self._slices[0], self._slices[2]
        totals = []
        if len(tree_rows):
            depth = int(c.ints[2])
            totals.append((self._TREE, tree_rows, c.stack[depth - 1] if depth else np.zeros_like(c.stack[0])))
        if len(blt_rows):
            totals.append((self._BLT, blt_rows, c.blt_total))
        if len(local_rows):
            totals.append((self._LOCAL, local_rows, c.local_total))
        for kind, rows, total in totals:
            noise = np.ascontiguousarray(np.moveaxis(total, -1, 0))         # (R_kind, H, P), as the runs' own
            sq = noise * noise
            for Lam, sl, floor, threshold, screen in ((Lp, sp, self.floor_p, self._threshold_p, self._screen_p),
                                                      (Lr, sr, self.floor_r, self._threshold_r, self._screen_r)):
                norm2 = sq[..., sl].sum(-1)
                if not (norm2 > screen[kind]).any():                     # below every γ − floor: no floor
                    continue
                big = (np.sqrt(norm2) > threshold[kind]).any(-1)
                for r in rows[big]:
                    Lam[r] = _floor_eigenvalues(Lam[r], floor[r])
