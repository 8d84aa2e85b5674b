"""The lockstep kernel of LinOpt-VI / LinOpt-PO (Zhou 2022, Algorithms 1 and 2).

:func:`fit_many` advances R independent runs — R estimators, each on its own model with its own
``rng`` — one episode at a time *together*: every step of an episode is a few NumPy operations over
a leading run axis, so the Python overhead is paid once per episode for all runs.
``LinOptVI.fit`` / ``LinOptPO.fit`` are ``fit_many`` with R = 1.

Per episode k and run, from the regularizer's current ``(Λ, u)`` (Algorithm 1 lines 5–11):

    θ̂ = Λ⁻¹u,  ϕ_h^k(s,a) = Σ_{s'} ψ(s'|s,a) V_{h+1}^k(s'),
    Q_h^k = clip_[0, H−h+1]( φᵀθ̂_r + ϕᵀθ̂_p + β_p‖ϕ‖_{Λ_p⁻¹} + β_r‖φ‖_{Λ_r⁻¹} ),

then ``V_h^k = max_a Q_h^k`` (VI) or ``⟨π_h^k, Q_h^k⟩`` (PO, line 12). The episode is rolled out,
its exact pseudo-regret ``V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` is computed by dynamic programming on the
true model, its contributions ``(ϕ_h^k(s_h,a_h), V_{h+1}^k(s_{h+1}), φ(s_h,a_h), r_h)`` — with the
``ϕ`` and ``V`` of episode k, frozen (spec A1) — go to the regularizer, and PO sets
``π_h^{k+1} ∝ π_h^k exp(η Q_h^k)`` (line 15). Episode K's data is never sent (A9).

Runs are independent: each keeps its own ``env`` / ``policy`` / ``privacy`` streams (children of
its ``rng``, drawn in blocks that are bit-identical to drawing episode by episode), and every
per-run quantity comes from elementwise operations or per-run matrix products, so a run's result
does not depend on the batch it is in (tested). The built-in regularizers are advanced by
:class:`~privrl.linear_mixture.regularizers.BatchedStatistics`; any other regularizer
(a user's instance, a custom node-noise source) by its own ``update``, one run at a time.

Work saved without changing the algorithm: ``ϕ`` sums over the successors of ``(s, a)`` only (the
states where ``ψ(·|s,a) ≠ 0`` for some run); state–action columns with identical features in every
run (e.g. all actions at an absorbing state) are planned once; ``ϕ_H ≡ 0``; the Gram inverses are
one vectorised adjugate (d ≤ 3) or Gauss–Jordan elimination (:func:`spd_inverse`); the rollout draws
the action and next state at every planned (h, s) at once and walks the path through them; the exact
regret is evaluated in blocks of episodes. ``reachable_only=True`` also plans
only at the states reachable at step h from the initial distribution through that support (plus
the last state, the rollout's round-off fallback): regret, data and releases equal the full
computation's up to round-off — values at unreachable states never feed back — but ``policy_``
then holds action 0 / the uniform policy there, and no callback is allowed. The experiments use
it; ``fit`` does not.

The greedy policy (Algorithm 1 line 12) takes the lowest-index action among those within
``TIE_TOL·H`` of ``max_a Q``: actions tied in exact arithmetic are not separated by round-off.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privrl._rng import RngLike, child_rngs
from privrl._validation import param_error
from privrl.envs.finite import backward_induction, inverse_cdf
from privrl.envs.linear_mixture import LinearMixtureMDP
from privrl.errors import UtilityWarning
from privrl.linear_mixture import calibration as cal
from privrl.linear_mixture.regularizers import BatchedStatistics, Stats

__all__ = ["fit_many", "plan_once", "softmax"]

#: episodes of pre-drawn env / policy randomness per block
_BLOCK = 256
#: actions within TIE_TOL·H of max_a Q count as maximisers (tie-break, Algorithm 1 line 12)
TIE_TOL = 1e-12


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the last axis with the log-sum-exp shift (stable for large logits)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax0(logits: np.ndarray) -> np.ndarray:
    """:func:`softmax` over the first axis (the same arithmetic per entry)."""
    z = logits - logits.max(axis=0)
    e = np.exp(z)
    return e / e.sum(axis=0)


class _Geometry:
    """The states planned at each step (``X[h]``, with ``pos[h]`` mapping a state to its index),
    the successors summed over in ``ϕ`` and the features restricted to them, stacked over runs.

    Per step, the planned state–action pairs are the ``N = n_h·A`` columns ``i·A + a`` (state
    ``X[h][i]``, action ``a``); ``ψ`` is kept as ``(R, d1·N, k)`` so that ``ϕ`` is one matrix–vector
    product per run."""

    # the true models' tables, set by of_models: P and r for exact evaluation of the played policy
    # (per step, in the planned layout) and the cdfs / means / reward kinds the rollout samples from
    P_T: list[np.ndarray]
    r: list[np.ndarray]
    cum_P: np.ndarray
    mean: np.ndarray
    cum_init: np.ndarray
    bernoulli: np.ndarray
    # the rollout over every planned (h, s) at once (of_models)
    cum_P_cat: np.ndarray
    mean_cat: np.ndarray
    next_at: np.ndarray
    jall: np.ndarray
    col_of: np.ndarray

    def __init__(self, psi: np.ndarray, phi: np.ndarray, initial: np.ndarray, horizon: int,
                 reachable_only: bool) -> None:
        R, S, A, _, d1 = psi.shape
        H = horizon
        self.H, self.S, self.A, self.d1 = H, S, A, d1
        support = np.any(psi != 0, axis=(0, 4))                         # (S, A, S')
        if reachable_only:
            X = [np.union1d(np.flatnonzero(np.any(initial > 0, axis=0)), [S - 1])]
            for _ in range(H):
                X.append(np.union1d(np.flatnonzero(support[X[-1]].any(axis=(0, 1))), [S - 1]))
        else:
            X = [np.arange(S)] * (H + 1)
        self.X = X
        self.n = [len(x) for x in X]
        self.pos = np.full((H + 1, S), -1, dtype=np.intp)              # state -> index in X[h]
        for h in range(H + 1):
            self.pos[h, X[h]] = np.arange(len(X[h]))
        # concatenated layouts: states of all steps (offn), columns (off), features (foff)
        self.offn = np.cumsum([0] + self.n)
        self.nsum = int(self.offn[H])                                   # planned (h, s), h < H
        self.hcat = np.repeat(np.arange(H), self.n[:H])
        self.scat = np.concatenate(X[:H])
        self.jpos = [self.offn[h] + self.pos[h] for h in range(H)]      # state -> index among all (h, s)
        self.cols = [(X[h][:, None] * A + np.arange(A)).ravel() for h in range(H)]
        # successors summed over in ϕ = Σ_j ψ(s_j|s,a) V(s_j): those of X[h] (ascending)
        self.succ = [X[h + 1][support[X[h]][:, :, X[h + 1]].any(axis=(0, 1))] for h in range(H)]
        self.succ_at = [self.offn[h + 1] + self.pos[h + 1][self.succ[h]] for h in range(H)]
        self.phi = phi
        d2 = phi.shape[-1]
        # columns with the same features in every run (ψ(·|s,a) on the successors and φ(s,a); e.g.
        # every action at an absorbing state) have the same Q: plan each distinct one once
        self.psi, self.ucols, self.uinv = [], [], []
        for h in range(H):
            sub = psi[:, X[h]][:, :, :, self.succ[h]].reshape(R, len(self.cols[h]), -1)   # (R, N, k·d1)
            key = np.concatenate([sub, phi[:, X[h]].reshape(R, len(self.cols[h]), d2)], axis=2)
            _, first, inverse = np.unique(key.transpose(1, 0, 2).reshape(len(self.cols[h]), -1), axis=0,
                                          return_index=True, return_inverse=True)
            order = np.argsort(first)                                   # distinct columns in natural order
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            ucols = first[order]
            self.ucols.append(ucols)
            self.uinv.append(rank[inverse.ravel()])
            u = psi[:, X[h]][:, :, :, self.succ[h]].reshape(R, len(self.cols[h]), len(self.succ[h]), d1)[:, ucols]
            self.psi.append(np.ascontiguousarray(np.moveaxis(u, 3, 1).reshape(R, d1 * len(ucols), -1)))
        self.U = [len(u) for u in self.ucols]
        self.dedup = [len(u) < len(c) for u, c in zip(self.ucols, self.cols)]
        self.foff = np.cumsum([0] + [d1 * u for u in self.U])
        self.iu, self.ju = np.triu_indices(d2)
        # the planned columns of all steps side by side: step h owns [off[h], off[h+1]); the distinct
        # ones [uoff[h], uoff[h+1])
        self.off = np.cumsum([0] + [len(c) for c in self.cols])
        self.uoff = np.cumsum([0] + self.U)
        self.uinv_cat = np.concatenate(self.uinv)
        self.N = [len(c) for c in self.cols]
        self.hcol = np.repeat(np.arange(H), self.U)
        self.d2 = phi.shape[-1]
        flat = phi.reshape(R, S * A, d2)[:, np.concatenate([c[u] for c, u in zip(self.cols, self.ucols)])]
        self.phi_cat = np.ascontiguousarray(np.moveaxis(flat, -1, 0))    # (d2, R, Ucat)
        # φ_i φ_j (i ≤ j), off-diagonal doubled: ‖φ‖²_M = Σ_{i≤j} c_ij φ_i φ_j M_ij for symmetric M
        w = np.where(self.iu == self.ju, 1.0, 2.0)[:, None, None]
        self.pairs_cat = np.ascontiguousarray(self.phi_cat[self.iu] * self.phi_cat[self.ju] * w)
        # d2 > 1: the reward part of every step on the union of the steps' distinct columns, by one
        # matrix product per run; step h takes its columns (a slice when they are contiguous)
        self.d2 = d2
        ids = [c[u] for c, u in zip(self.cols, self.ucols)]
        union = np.unique(np.concatenate(ids))
        self.ucol_at = []
        for x in ids:
            at = np.searchsorted(union, x)
            contiguous = len(at) and np.array_equal(at, np.arange(at[0], at[0] + len(at)))
            self.ucol_at.append(slice(int(at[0]), int(at[0]) + len(at)) if contiguous else at)
        flat_u = phi.reshape(R, S * A, d2)[:, union]                     # (R, Un, d2)
        self.phi_T = np.ascontiguousarray(flat_u.transpose(0, 2, 1))      # (R, d2, Un)
        pu = flat_u[:, :, self.iu] * flat_u[:, :, self.ju] * np.where(self.iu == self.ju, 1.0, 2.0)
        self.pairs_T = np.ascontiguousarray(pu.transpose(0, 2, 1))        # (R, np, Un)
        # step h's distinct columns in the reward-part arrays of _plan: (R, Ucat) or (R, H, Un)
        self.reward_at = [np.s_[:, self.uoff[h]:self.uoff[h + 1]] if d2 == 1 else np.s_[:, h, self.ucol_at[h]]
                          for h in range(H)]

    @classmethod
    def of_models(cls, models: Sequence[LinearMixtureMDP], reachable_only: bool) -> _Geometry:
        geo = cls(np.stack([m.psi for m in models]), np.stack([m.phi for m in models]),
                  np.stack([m.initial for m in models]), models[0].horizon, reachable_only)
        X, H, R = geo.X, geo.H, len(models)
        P = np.stack([m.transitions() for m in models])                 # (R, H, S, A, S)
        r = np.stack([m.mean_rewards() for m in models])                # (R, H, S, A)
        # exact evaluation of the played policy: P as (R, n_{h+1}, N), r as (R, N)
        geo.P_T = [np.ascontiguousarray(P[:, h][:, X[h]][:, :, :, X[h + 1]].reshape(R, -1, len(X[h + 1]))
                                        .transpose(0, 2, 1)) for h in range(H)]
        geo.r = [np.ascontiguousarray(r[:, h][:, X[h]].reshape(R, -1)) for h in range(H)]
        geo.cum_P = np.cumsum(P, axis=-1)
        geo.mean = r
        # the rollout over every planned (h, s) at once: cumulative kernels and mean rewards there, and
        # where a next state of step h sits among the planned states of step h + 1
        geo.cum_P_cat = np.ascontiguousarray(geo.cum_P[:, geo.hcat, geo.scat])      # (R, Σ n_h, A, S)
        geo.mean_cat = np.ascontiguousarray(r[:, geo.hcat, geo.scat])               # (R, Σ n_h, A)
        geo.next_at = geo.offn[geo.hcat + 1][:, None] + geo.pos[geo.hcat + 1]       # (Σ n_h, S)
        geo.jall = np.arange(geo.nsum)[None, :]
        geo.col_of = geo.off[geo.hcat] + (np.arange(geo.nsum) - geo.offn[geo.hcat]) * geo.A   # (h, s) -> column i·A
        geo.cum_init = np.stack([np.cumsum(m.initial) for m in models])
        geo.bernoulli = np.array([m.reward_noise == "bernoulli" for m in models])
        return geo

    def full(self, cat: np.ndarray, fill: float | int = 0) -> np.ndarray:
        """A ``(R, Σ_h n_h, ...)`` array over the planned (h, s) as ``(R, H, S, ...)`` (``fill`` elsewhere)."""
        out = np.full((cat.shape[0], self.H, self.S, *cat.shape[2:]), fill, dtype=cat.dtype)
        out[:, self.hcat, self.scat] = cat[:, :self.nsum]
        return out


#: the adjugate of a 3×3 matrix, entry by entry (row-major): ``m[P1] m[P2] − m[N1] m[N2]``
_ADJ3 = np.array([[4, 2, 1, 5, 0, 2, 3, 1, 0], [8, 7, 5, 6, 8, 3, 7, 6, 4],
                  [5, 1, 2, 3, 2, 0, 4, 0, 1], [7, 8, 4, 8, 6, 5, 6, 7, 3]]).ravel()


def spd_inverse(Lam: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Λ⁻¹, Λ⁻¹u)`` for a stack ``(..., d, d)`` of symmetric positive definite matrices, in the
    layout ``(d, d, ...)`` and ``(d, ...)`` (stack axes last).

    ``d ≤ 3``: the adjugate over the determinant (a few array operations; exactly symmetric for a
    symmetric input). Larger ``d``: Gauss–Jordan elimination without pivoting (stable for SPD
    matrices: every pivot is a Schur complement, at least ``λ_min(Λ)``), vectorised over the stack:
    ``d`` elimination steps of a few array operations. Every matrix is treated alike, so the result
    for one matrix does not depend on the others in the stack.
    """
    lead, d = Lam.shape[:-2], Lam.shape[-1]
    B = int(np.prod(lead, dtype=np.int64))
    if d <= 3:
        m = Lam.reshape(B, d * d).T                                     # (d², B): the entries, row-major
        if d == 3:
            g = m[_ADJ3].reshape(4, 9, B)
            adj = g[0] * g[1] - g[2] * g[3]
            det = (m[:3] * adj[[0, 3, 6]]).sum(0)
        elif d == 2:
            adj = m[[3, 1, 2, 0]] * np.array([1.0, -1.0, -1.0, 1.0])[:, None]
            det = m[0] * m[3] - m[1] * m[2]
        else:
            adj, det = np.ones((1, B)), m[0]
        M = (adj / det).reshape(d, d, B)
    else:
        M = Lam.reshape(B, d, d).transpose(1, 2, 0).copy()               # (d, d, B)
        for k in range(d):
            piv = 1.0 / M[k, k]
            row = M[k] * piv                                            # row k / pivot (row[k] = 1)
            new_col = M[:, k] * -piv
            M -= M[:, k, None, :] * row[None, :, :]                      # the product is formed first
            M[k] = row
            M[:, k] = new_col
            M[k, k] = piv
    theta = (M * u.reshape(B, d).T[None, :, :]).sum(1)                   # (d, B)
    return M.reshape(d, d, *lead), theta.reshape(d, *lead)


def _reward_radius(geo: _Geometry, br: np.ndarray) -> np.ndarray:
    """β_r per run and step ``(R, H)`` laid out like the reward part's columns: ``(R, Ucat)`` (d2 = 1:
    step h's radius at each of its columns) or ``(R, H, 1)``. A precomputed layout is passed through."""
    if br.ndim == 2 and br.shape[1] == geo.H:
        return br[:, geo.hcol] if geo.d2 == 1 else br[:, :, None]
    return br


def _plan(geo: _Geometry, stats: Stats, bp: np.ndarray, br: np.ndarray, pi: np.ndarray | None,
          is_po: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 lines 5–11 / Algorithm 2 lines 4–12 for R runs at once.

    Returns, over the planned states of all steps side by side, ``Q`` ``(R, Σ_h n_h, A)``, ``ϕ``
    (step h's ``(d1, U_h)`` block at ``foff[h]``, distinct columns), ``V`` and ``max_a Q``
    ``(R, Σ_{h≤H} n_h)``.
    ``is_po`` marks the runs whose ``V`` is ``⟨π, Q⟩`` (``pi`` ``(A, R, Σ_h n_h)``); ``None``: all VI.
    When every run is PO, ``max_a Q`` is not computed (the returned one is ``V``)."""
    Lp, up, Lr, ur = stats
    R, H, d1 = Lp.shape[0], geo.H, Lp.shape[-1]
    A = geo.A
    # ϕ_H ≡ 0 (V_{H+1} = 0): step H's Λ_p is not needed; both Grams in one elimination when d1 = d2
    if d1 == Lr.shape[-1]:
        inv, theta = spd_inverse(np.concatenate([Lp[:, :H - 1], Lr], axis=1),
                                 np.concatenate([up[:, :H - 1], ur], axis=1))
        inv_p, theta_p, inv_r, theta_r = inv[..., :H - 1], theta[..., :H - 1], inv[..., H - 1:], theta[..., H - 1:]
    else:
        inv_p, theta_p = spd_inverse(Lp[:, :H - 1], up[:, :H - 1])       # (d1, d1, R, H−1), (d1, R, H−1)
        inv_r, theta_r = spd_inverse(Lr, ur)
    # per step, [Λ_p⁻¹; θ̂_pᵀ] so that one product gives Λ_p⁻¹ϕ (rows) and θ̂_pᵀϕ (last row)
    aug = np.ascontiguousarray(np.concatenate([inv_p, theta_p[None]], axis=0).transpose(3, 2, 0, 1))
    # reward part φᵀθ̂_r and ‖φ‖²_{Λ_r⁻¹} at every planned column of every step
    if geo.d2 == 1:                                                      # (R, Ucat): step h's θ̂_r U_h times
        reward = (np.repeat(theta_r, geo.U, axis=-1) * geo.phi_cat).sum(0)
        quad_r = (np.repeat(inv_r[geo.iu, geo.ju], geo.U, axis=-1) * geo.pairs_cat).sum(0)
    else:                                                                # (R, H, Un), one product per run
        reward = np.ascontiguousarray(theta_r.transpose(1, 2, 0)) @ geo.phi_T
        quad_r = np.ascontiguousarray(inv_r[geo.iu, geo.ju].transpose(1, 2, 0)) @ geo.pairs_T
    # β per run and step (R, H): the reward bonus at every planned column of every step
    bonus = _reward_radius(geo, br) * np.sqrt(np.maximum(quad_r, 0.0, out=quad_r), out=quad_r)

    V = np.zeros((R, int(geo.offn[-1])))
    all_po = is_po is not None and bool(is_po.all())
    Vmax = V if is_po is None or all_po else np.zeros_like(V)
    Q = np.empty((R, int(geo.off[-1])))
    feat = np.empty((R, int(geo.foff[-1])))
    feat[:, geo.foff[H - 1]:] = 0.0                                      # ϕ_H ≡ 0
    def policy_value(on: int, n: int, Q3: np.ndarray) -> np.ndarray:
        """⟨π, Q⟩ at step h's planned states (``pi`` is given whenever ``is_po`` is)."""
        assert pi is not None
        return np.einsum("arn,rna->rn", pi[:, :, on:on + n], Q3)

    for h in range(H - 1, -1, -1):
        n, U = geo.n[h], geo.U[h]
        on = geo.offn[h]
        Qh = Q[:, geo.off[h]:geo.off[h + 1]]
        Qu = np.empty((R, U)) if geo.dedup[h] else Qh                    # Q at the distinct columns
        at = geo.reward_at[h]                                            # step h's columns of the reward part
        if h == H - 1:                                                   # ϕ = 0: Q = clip(φᵀθ̂_r + bonus)
            np.add(reward[at], bonus[at], out=Qu)
        else:
            Vn = V[:, geo.succ_at[h]]                                    # (R, k)
            f = feat[:, geo.foff[h]:geo.foff[h + 1]].reshape(R, d1 * U, 1)
            np.matmul(geo.psi[h], Vn[:, :, None], out=f)                 # line 7
            f = f.reshape(R, d1, U)
            W = aug[h] @ f                                               # (R, d1+1, U)
            quad = (W[:, :d1] * f).sum(axis=1)
            np.sqrt(np.maximum(quad, 0.0, out=quad), out=quad)
            quad *= bp[:, h, None]
            np.add(reward[at], W[:, d1], out=Qu)
            Qu += quad
            Qu += bonus[at]
        np.maximum(np.minimum(Qu, H - h, out=Qu), 0.0, out=Qu)           # line 10 (1-based: H − h + 1)
        if geo.dedup[h]:
            np.take(Qu, geo.uinv[h], axis=1, out=Qh)
        Q3 = Qh.reshape(R, n, A)
        if all_po:                                                       # V = ⟨π, Q⟩ (no max needed)
            V[:, on:on + n] = policy_value(on, n, Q3)
            continue
        if is_po is None:
            np.max(Q3, axis=-1, out=V[:, on:on + n])                     # max_a Q
            continue
        v = Q3.max(axis=-1)
        Vmax[:, on:on + n] = v
        V[:, on:on + n] = np.where(is_po[:, None], policy_value(on, n, Q3), v)
    return Q.reshape(R, geo.nsum, A), feat, V, Vmax


def plan_once(stats: Stats, psi: np.ndarray, phi: np.ndarray, beta_p: Any, beta_r: Any,
              policy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_plan` for one run at every state: ``psi`` ``(S, A, S, d1)``, ``phi`` ``(S, A, d2)``,
    ``beta_p``/``beta_r`` one radius or one per step, ``policy`` ``(H, S, A)`` for PO. Returns
    ``(Q (H,S,A), V (H+1,S), ϕ (H,S,A,d1))``."""
    H, (S, A, _, d1) = stats[0].shape[0], psi.shape
    geo = _Geometry(psi[None], phi[None], np.full((1, S), 1.0 / S), H, reachable_only=False)
    pi = None if policy is None else np.moveaxis(policy.reshape(1, H * S, A), -1, 0)
    bp = np.broadcast_to(np.asarray(beta_p, dtype=float), (H,))[None]
    br = np.broadcast_to(np.asarray(beta_r, dtype=float), (H,))[None]
    Lp, up, Lr, ur = stats
    Q, feat, V, _ = _plan(geo, (Lp[None], up[None], Lr[None], ur[None]), bp, br, pi,
                          None if policy is None else np.array([True]))
    f = np.stack([np.moveaxis(feat[0, geo.foff[h]:geo.foff[h + 1]].reshape(d1, -1)[:, geo.uinv[h]].reshape(d1, S, A),
                              0, -1) for h in range(H)])
    return Q[0].reshape(H, S, A), V[0].reshape(H + 1, S), f


class _PerRun:
    """Statistics of arbitrary regularizers: each run's own ``update``."""

    def __init__(self, regs: list[Any], initial: list[Stats]) -> None:
        self.regs = regs
        self.stats = tuple(np.stack(x) for x in zip(*initial))

    def statistics(self) -> Stats:
        return self.stats  # type: ignore[return-value]

    def update(self, x_p, y_p, x_r, y_r) -> Stats:
        outs = [g.update(x_p[r], y_p[r], x_r[r], y_r[r]) for r, g in enumerate(self.regs)]
        self.stats = tuple(np.stack(x) for x in zip(*outs))
        return self.stats  # type: ignore[return-value]


def resolve_model(env_or_model: Any, features: LinearMixtureMDP | None = None) -> tuple[LinearMixtureMDP, Any]:
    """``(linear mixture model with the known features, gym env or None)``.

    Accepts a :class:`LinearMixtureMDP`, or a gymnasium env whose ``unwrapped`` carries the known
    ``linear_mixture`` (the ``privrl/...LinearMixture...`` ids) or whose ``model`` is one; otherwise
    pass ``features=``.
    """
    if isinstance(env_or_model, LinearMixtureMDP):
        return env_or_model, None
    unwrapped = getattr(env_or_model, "unwrapped", None)
    if unwrapped is None or not hasattr(env_or_model, "step"):
        raise param_error("env", "LinOpt fit", "a LinearMixtureMDP or a gymnasium env", type(env_or_model).__name__)
    model = features or getattr(unwrapped, "linear_mixture", None)
    if model is None and isinstance(getattr(unwrapped, "model", None), LinearMixtureMDP):
        model = unwrapped.model
    if not isinstance(model, LinearMixtureMDP):
        raise param_error("features", "LinOpt fit",
                          "a LinearMixtureMDP with the env's known features (env.unwrapped.linear_mixture)",
                          model)
    return model, env_or_model


class _Rollout:
    """The user's side on a gym env: runs one episode of a policy (the models use the engine's
    vectorised rollout)."""

    def __init__(self, model: LinearMixtureMDP, env: Any, rng: np.random.Generator) -> None:
        self.model, self.env = model, env
        self._reset_seed: int | None = int(rng.integers(2**31))

    def episode(self, policy: np.ndarray, prng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        H = self.model.horizon
        stochastic = policy.ndim == 3
        act_u = prng.random(H) if stochastic else None
        s = np.empty(H + 1, dtype=np.intp)
        a = np.empty(H, dtype=np.intp)
        rew = np.empty(H)
        obs, _ = self.env.reset(seed=self._reset_seed)
        self._reset_seed = None
        s[0] = int(obs)
        for h in range(H):
            a[h] = _act(policy, h, s[h], act_u)
            obs, reward, _, _, _ = self.env.step(int(a[h]))
            s[h + 1], rew[h] = int(obs), float(reward)
        return s, a, rew


def _act(policy: np.ndarray, h: int, x: int, act_u: np.ndarray | None) -> int:
    if act_u is None:
        return int(policy[h, x])
    cdf = np.cumsum(policy[h, x])
    return min(int(np.searchsorted(cdf, act_u[h] * cdf[-1], side="right")), len(cdf) - 1)


class _Run:
    """One estimator's set-up: what ``fit`` computes before the first episode (parameters validated,
    the fit's releaser opened, the regularizer started, the constants and radii per step)."""

    def __init__(self, est: Any, env: Any, rng: RngLike, features: Any) -> None:
        p = est._checked()
        rng = est._fit_rng(rng)
        self.est = est
        self.model, self.gym_env = resolve_model(env, features)
        model = self.model
        self.streams = child_rngs(rng, "env", "policy", "privacy")
        self.K, self.H = int(p["n_episodes"]), model.horizon
        self.reg = est.regularizer(model)
        # every privacy-noise draw of the fit goes through this releaser (its ledger is the estimator's)
        self.rel = est._privacy(None if p["secure"] else self.streams["privacy"], n_units=self.K)
        self.initial = self.reg.start(n_episodes=self.K, horizon=self.H, d1=model.d1, d2=model.d2, rel=self.rel)
        knobs = est.knobs()
        self.alpha = p["alpha"]
        self.consts = self.reg.constants(self.alpha)
        beta_p, beta_r = cal.confidence_radii(self.consts, d1=model.d1, d2=model.d2, n_episodes=self.K,
                                              horizon=self.H, alpha=self.alpha, value_feature_bound=self.reg.bounds[0],
                                              noise_term_scale=knobs["noise_term_scale"])
        self.beta_p = np.broadcast_to(np.asarray(beta_p, dtype=float), (self.H,))
        self.beta_r = np.broadcast_to(np.asarray(beta_r, dtype=float), (self.H,))
        est.beta_p_, est.beta_r_ = knobs["beta_scale"] * self.beta_p, knobs["beta_scale"] * self.beta_r
        self.v_star = backward_induction(model.transitions(), model.mean_rewards())[1][0]
        est._begin(model, self.K, p)
        self.is_po = est._algorithm == "linopt-po"
        self.eta = float(getattr(est, "eta_", 0.0))
        self.random_ties = not self.is_po and p.get("tie_break", "lowest") == "random"
        self.sizes = (self.K, self.H, model.n_states, model.n_actions, model.d1, model.d2)


def fit_many(estimators: Sequence[Any], envs: Sequence[Any], rngs: Sequence[RngLike], *,
             features: LinearMixtureMDP | None = None, callback: Callable[..., Any] | None = None,
             reachable_only: bool = False) -> list[Any]:
    """Fit ``estimators[i]`` (``LinOptVI`` / ``LinOptPO``) on ``envs[i]`` with ``rngs[i]``, in lockstep.

    Every run must have the same ``n_episodes`` and model sizes (H, S, A, d1, d2). Each estimator
    ends exactly as ``estimators[i].fit(envs[i], rng=rngs[i])`` leaves it (``reachable_only``: see
    the module doc). ``callback`` (one run only) is ``fit``'s. Returns the estimators.
    """
    if not (len(estimators) == len(envs) == len(rngs)) or not estimators:
        raise ValueError("fit_many needs as many envs and rngs as estimators (at least one)")
    runs = [_Run(est, env, rng, features) for est, env, rng in zip(estimators, envs, rngs)]
    if len({run.sizes for run in runs}) > 1:
        raise ValueError("fit_many runs must share n_episodes and the model sizes (H, S, A, d1, d2)")
    if callback is not None and (len(runs) > 1 or reachable_only):
        raise ValueError("fit_many takes a callback only for one run without reachable_only")
    if reachable_only and any(run.gym_env is not None for run in runs):
        raise ValueError("fit_many: reachable_only needs models, not gym envs")
    _Lockstep(runs, reachable_only, callback).run()
    return list(estimators)


class _Lockstep:
    def __init__(self, runs: list[_Run], reachable_only: bool, callback: Callable[..., Any] | None) -> None:
        self.runs, self.callback = runs, callback
        self.R = R = len(runs)
        self.K, self.H, self.S, self.A, self.d1, self.d2 = runs[0].sizes
        self.geo = _Geometry.of_models([run.model for run in runs], reachable_only)
        regs = [run.reg for run in runs]
        if all(BatchedStatistics.supports(g) for g in regs):
            self.stats_source: Any = BatchedStatistics(regs)
        else:
            self.stats_source = _PerRun(regs, [run.initial for run in runs])
        self.is_po = np.array([run.is_po for run in runs])
        self.po_rows = np.flatnonzero(self.is_po)
        self.random_rows = np.flatnonzero([run.random_ties for run in runs])
        self.gym_rows = [r for r, run in enumerate(runs) if run.gym_env is not None]
        self.model_rows = np.array([r for r, run in enumerate(runs) if run.gym_env is None], dtype=np.intp)
        self.bp = np.array([run.est.beta_p_ for run in runs])
        self.br = np.array([run.est.beta_r_ for run in runs])
        self.br_cols = _reward_radius(self.geo, self.br)                # constant over the run: laid out once
        self.eta = np.array([run.eta for run in runs])
        self.v_star = np.stack([run.v_star for run in runs])
        self.ar = np.arange(R)
        A, n = self.A, self.geo.nsum
        # PO's policy and logits over the planned (h, s), layout (A, R, Σ_h n_h): fast reductions over actions
        self.logits = np.zeros((A, R, n))
        self.pi = np.full((A, R, n), 1.0 / A)
        self.all_bernoulli, self.no_bernoulli = bool(self.geo.bernoulli.all()), not self.geo.bernoulli.any()
        if self.gym_rows:
            self.rollouts = {r: _Rollout(runs[r].model, runs[r].gym_env, runs[r].streams["env"]) for r in self.gym_rows}
        self._block_start = self._block_end = 0
        geo = self.geo
        self._rewards = [geo.r[h].reshape(R, geo.n[h], self.A) for h in range(self.H)]

    # -- pre-drawn randomness (bit-identical to per-episode draws)
    def _draws(self, k: int) -> None:
        if k < self._block_end:
            return
        n = min(_BLOCK, self.K - k)
        H, S, A = self.H, self.S, self.A
        self.u_env = np.zeros((n, self.R, H + 1, 2))
        for r in self.model_rows:
            self.u_env[:, r] = self.runs[r].streams["env"].random((n, H + 1, 2))
        self.u_act = np.zeros((n, self.R, H))
        self.u_tie = np.zeros((n, self.R, H, S, A) if len(self.random_rows) else (0,))  # read by random ties only
        for r in range(self.R):
            if r in self.gym_rows:
                continue
            if self.runs[r].is_po:
                self.u_act[:, r] = self.runs[r].streams["policy"].random((n, H))
            elif self.runs[r].random_ties:
                self.u_tie[:, r] = self.runs[r].streams["policy"].random((n, H, S, A))
        geo = self.geo
        # what the rollout needs of them: the first state's position, the transitions' uniforms at
        # every planned (h, s), the rewards' uniforms
        self.j0 = geo.jpos[0][inverse_cdf(geo.cum_init, self.u_env[:, :, H, 0])]          # (n, R)
        self.u_next = np.ascontiguousarray(self.u_env[:, :, geo.hcat, 0])                 # (n, R, Σ_h n_h)
        self.u_reward = np.ascontiguousarray(self.u_env[:, :, :H, 1])                     # (n, R, H)
        self.u_act_cat = np.ascontiguousarray(self.u_act[:, :, geo.hcat])
        self._block_start, self._block_end = k, k + n

    def plan(self, stats: Stats) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _plan(self.geo, stats, self.bp, self.br_cols, self.pi, self.is_po if len(self.po_rows) else None)

    def greedy(self, Q: np.ndarray, Vmax: np.ndarray, k: int) -> np.ndarray:
        """Algorithm 1 line 12: an action maximising Q, the lowest index (or a seeded random one)
        among the maximisers. Maximisers are the actions within ``TIE_TOL·H`` of the maximum: actions
        tied in exact arithmetic (symmetric features, e.g. E1's ± action vectors) differ by
        round-off, which would otherwise decide between them."""
        geo = self.geo
        ties = Q >= Vmax[:, :geo.nsum, None] - TIE_TOL * self.H
        g = ties.argmax(axis=-1)                                         # (R, Σ_h n_h)
        if len(self.random_rows):
            rows = self.random_rows
            u = self.u_tie[k - self._block_start][rows][:, geo.hcat, geo.scat]
            g[rows] = np.argmax(ties[rows] * u, axis=-1)
        return g

    def rollout(self, greedy: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The users' side: one episode of every run's policy on its model (vectorised): the action
        and the inverse-CDF next state at every planned (h, s) at once (the same draws as step by
        step), then the H-step path through them. Returns states, actions, rewards and the path's
        positions among the planned (h, s) of all steps ``(R, H + 1)``."""
        geo, R, H, ar = self.geo, self.R, self.H, self.ar
        i = k - self._block_start
        act = greedy
        if len(self.po_rows):                                           # π_h(·|s)'s cdf at every planned (h, s)
            cpi = np.cumsum(self.pi, axis=0).transpose(1, 2, 0)         # (R, Σ_h n_h, A)
            pick = inverse_cdf(cpi, self.u_act_cat[i])
            act = pick if len(self.po_rows) == R else np.where(self.is_po[:, None], pick, greedy)
        nxt = inverse_cdf(geo.cum_P_cat[ar[:, None], geo.jall, act], self.u_next[i])       # (R, Σ_h n_h)
        jnext = geo.next_at[geo.jall, nxt]
        path = [self.j0[i]]                                             # the path among the planned (h, s)
        for _ in range(H):
            path.append(jnext[ar, path[-1]])
        j = np.stack(path, axis=1)                                      # (R, H + 1)
        s = np.empty((R, H + 1), dtype=np.intp)
        s[:, :H] = geo.scat[j[:, :H]]
        s[:, H] = nxt[ar, j[:, H - 1]]
        a = act[ar[:, None], j[:, :H]]
        mean = geo.mean_cat[ar[:, None], j[:, :H], a]
        if self.no_bernoulli:
            rew = mean
        elif self.all_bernoulli:
            rew = (self.u_reward[i] < mean).astype(float)
        else:
            rew = np.where(geo.bernoulli[:, None], (self.u_reward[i] < mean).astype(float), mean)
        for r in self.gym_rows:
            play = self.play_policy(greedy, r)
            s[r], a[r], rew[r] = self.rollouts[r].episode(play, self.runs[r].streams["policy"])
            j[r] = geo.offn[:H + 1] + geo.pos[np.arange(H + 1), s[r]]
        return s, a, rew, j

    def pi_full(self, pi: np.ndarray, r: int) -> np.ndarray:
        return self.geo.full(np.moveaxis(pi[:, r:r + 1], 0, -1), fill=1.0 / self.A)[0]

    def play_policy(self, greedy: np.ndarray, r: int) -> np.ndarray:
        """Run r's policy of this episode as a full ``(H, S)`` int / ``(H, S, A)`` array."""
        if self.is_po[r]:
            return self.pi_full(self.pi, r)
        return self.geo.full(greedy[r:r + 1], fill=0)[0]

    def regret(self, greedy: list[np.ndarray], pi: list[np.ndarray], s0: list[np.ndarray]) -> np.ndarray:
        """``V_1^*(s_1) − V_1^{π^k}(s_1)`` of a block of B episodes ``(B, R)``: backward induction on the
        true model (the shared kernel over the planned states of each step, all runs and the block's
        episodes at once; ``P_h V`` in the engine's transposed layout) of each episode's played policy
        (``greedy`` ``(R, Σ_h n_h)`` and PO's ``pi`` ``(A, R, Σ_h n_h)`` per episode) from its ``s0``."""
        geo, R, A = self.geo, self.R, self.A
        po, vi = len(self.po_rows) > 0, len(self.po_rows) < R
        G = np.stack(greedy) if vi else np.zeros((0,), dtype=np.intp)     # (B, R, Σ_h n_h)
        Pi = np.stack(pi) if po else np.zeros(0)                          # (B, A, R, Σ_h n_h)
        starts = np.stack(s0)                                            # (B, R)
        B = len(starts)

        def value(h: int, q: np.ndarray) -> np.ndarray:
            on, n = geo.offn[h], geo.n[h]
            if not po:
                return np.take_along_axis(q, G[:, :, on:on + n, None], axis=-1)[..., 0]
            w_po = np.einsum("barn,brna->brn", Pi[:, :, :, on:on + n], q)
            if not vi:
                return w_po
            w = np.take_along_axis(q, G[:, :, on:on + n, None], axis=-1)[..., 0]
            return np.where(self.is_po[:, None], w_po, w)

        steps = [(lambda W, h=h: (W[:, :, None, :] @ geo.P_T[h])[:, :, 0].reshape(B, R, geo.n[h], A))
                 for h in range(self.H)]
        rewards = [np.broadcast_to(x, (B, *x.shape)) for x in self._rewards]
        _, V = backward_induction(steps, rewards, value=value)
        return self.v_star[self.ar, starts] - np.take_along_axis(V[0], geo.pos[0][starts][..., None], axis=2)[..., 0]

    def run(self) -> None:
        R, H, K, geo, ar, A = self.R, self.H, self.K, self.geo, self.ar, self.A
        regret = np.empty((R, K))
        stats = self.stats_source.statistics()
        greedy = np.zeros((R, geo.nsum), dtype=np.intp)
        play_pi = self.pi
        U = np.array(geo.U)
        # (1, H, d1): where step h's feature row i starts in feat (plus the distinct column)
        dcols = geo.foff[:H][None, :, None] + np.arange(self.d1)[None, None, :] * U[None, :, None]
        # the played policies and first states of the episodes whose regret is pending (at most ~32 MB)
        played: tuple[list, list, list] = ([], [], [])
        block = max(1, min(_BLOCK, 4_000_000 // (R * geo.nsum * (A if len(self.po_rows) else 1))))
        for k in range(K):
            self._draws(k)
            for r in self.gym_rows:                      # a gym run draws its policy randomness as fit did
                if self.runs[r].random_ties:
                    self.u_tie[k - self._block_start][r] = self.runs[r].streams["policy"].random((H, self.S, A))
            Q, feat, V, Vmax = self.plan(stats)
            if len(self.po_rows) < R:                                   # PO runs play π, no argmax
                greedy = self.greedy(Q, Vmax, k)
            if self.callback is not None:
                full_V = np.zeros((H + 1, self.S))
                full_V[:H] = geo.full(V[:1])[0]
                self.callback(k, Q=geo.full(Q[:1])[0], V=full_V, policy=self.play_policy(greedy, 0),
                              stats=tuple(x[0] for x in stats))
            s, a, rew, j = self.rollout(greedy, k)
            played[0].append(greedy)
            played[1].append(self.pi)
            played[2].append(s[:, 0])
            if len(played[2]) == block or k == K - 1:                   # the regret, in blocks of episodes
                regret[:, k + 1 - len(played[2]):k + 1] = self.regret(*played).T
                played = ([], [], [])
            if k < K - 1:
                u = geo.uinv_cat[geo.col_of[j[:, :H]] + a]               # (R, H) distinct column
                x_p = feat[ar[:, None], (dcols + u[:, :, None]).reshape(R, -1)].reshape(R, H, self.d1)
                y_p = V[ar[:, None], j[:, 1:]]
                x_r = geo.phi[ar[:, None], s[:, :H], a]
                stats = self.stats_source.update(x_p, y_p, x_r, rew)
            play_pi = self.pi
            if len(self.po_rows):                                        # line 15, every planned state
                Qt = Q.transpose(2, 0, 1)                                # (A, R, Σ_h n_h)
                if len(self.po_rows) == R:
                    self.logits = self.logits + self.eta[None, :, None] * Qt
                    self.pi = softmax0(self.logits)
                else:
                    rows = self.po_rows
                    lg = self.logits[:, rows] + self.eta[None, rows, None] * Qt[:, rows]
                    self.logits[:, rows] = lg
                    self.pi = self.pi.copy()
                    self.pi[:, rows] = softmax0(lg)
        self._finish(regret, stats, greedy, play_pi, Q)

    def _finish(self, regret: np.ndarray, stats: Stats, greedy: np.ndarray, play_pi: np.ndarray, Q: np.ndarray) -> None:
        geo = self.geo
        # the last episode's optimistic Q clipped at its cap H − h (1-based H − h + 1) everywhere: the
        # bonus exceeds the value range and the played policy is the tie-break rule (VI) or uniform (PO)
        cap = (self.H - geo.hcat)[None, :, None]
        saturated = np.all(Q >= cap * (1.0 - 1e-12), axis=(1, 2))
        for r, run in enumerate(self.runs):
            est, model, reg = run.est, run.model, run.reg
            est.regret_ = regret[r]
            est.cumulative_regret_ = np.cumsum(regret[r])
            if run.is_po:
                est.policy_ = self.pi_full(play_pi, r)
            else:
                est.policy_ = geo.full(greedy[r:r + 1], fill=0)[0]
            Lp, up, Lr, ur = (x[r] for x in stats)
            est.theta_p_ = np.linalg.solve(Lp, up[..., None])[..., 0]
            est.theta_r_ = np.linalg.solve(Lr, ur[..., None])[..., 0]
            est.constants_ = run.consts.as_dict()
            est.regret_bound_ = est._bound(run.consts, run.beta_p, run.beta_r, model, run.K, run.alpha)
            est.privatizer_parameters_ = reg.public_parameters()
            plan = getattr(reg, "plan", None)
            est.noise_std_ = plan.noise_std if plan is not None else 0.0
            eps, delta = est.budget.epsilon, est.budget.delta
            est.paper_epsilon_ = (cal.paper_epsilon_total(eps, delta, run.H)
                                  if reg.guarantee and est.budget.is_private and eps and delta else math.inf)
            est.saturated_ = bool(saturated[r])
            if est.saturated_:
                warnings.warn(
                    f"{type(est).__name__}: degenerate output: in the last episode every optimistic Q-value is "
                    "clipped at its maximum H - h + 1 (the bonus beta * ||phi||_(Lambda^-1) exceeds the value "
                    "range), so the played policy is the tie-break rule (uniform for PO) and the regret is "
                    "linear. The shift 2*Upsilon*I of the private Gram and the radii beta swamp the data: use "
                    "constants='practical' (or a smaller beta_scale or noise_term_scale), a larger budget, or more "
                    "episodes.",
                    UtilityWarning, stacklevel=5)
