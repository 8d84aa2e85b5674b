"""The lockstep kernel of LinOpt-VI / LinOpt-PO (Zhou 2022, Algorithms 1 and 2).

:func:`fit_many` advances R independent runs — R estimators, each on its own model with its own
``rng`` — one episode at a time *together*; ``LinOptVI.fit`` / ``LinOptPO.fit`` are ``fit_many``
with R = 1. The episodes run in compiled code (:mod:`privrl.linear_mixture._kernels`, numba):
one call advances every run through as many episodes as it can before Python is needed (fresh
pre-drawn randomness, a callback, a gym env, a regularizer of the user's).

Per episode k and run, from the regularizer's current ``(Λ, u)`` (Algorithm 1 lines 5–11):

    θ̂ = Λ⁻¹u,  ϕ_h^k(s,a) = Σ_{s'} ψ(s'|s,a) V_{h+1}^k(s'),
    Q_h^k = clip_[0, H−h+1]( φᵀθ̂_r + ϕᵀθ̂_p + β_p‖ϕ‖_{Λ_p⁻¹} + β_r‖φ‖_{Λ_r⁻¹} ),

then ``V_h^k = max_a Q_h^k`` (VI) or ``⟨π_h^k, Q_h^k⟩`` (PO, line 12). The episode is rolled out,
its exact pseudo-regret ``V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` is computed by dynamic programming on the
true model, its contributions ``(ϕ_h^k(s_h,a_h), V_{h+1}^k(s_{h+1}), φ(s_h,a_h), r_h)`` — with the
``ϕ`` and ``V`` of episode k, frozen (spec A1) — go to the regularizer, and PO sets
``π_h^{k+1} ∝ π_h^k exp(η Q_h^k)`` (line 15). Episode K's data is never sent (A9).

Runs are independent: each keeps its own ``env`` / ``policy`` / ``privacy`` streams (children of
its ``rng``, drawn in blocks that are bit-identical to drawing episode by episode), and the compiled
loops treat one run at a time, so a run's result does not depend on the batch it is in (tested).
The built-in regularizers are advanced by
:class:`~privrl.linear_mixture.regularizers.BatchedStatistics` (bit-identical to their own
updates); any other regularizer (a user's instance, a custom node-noise source) by its own
``update``, one run at a time.

Work saved without changing the algorithm: ``ϕ`` sums over the successors of ``(s, a)`` only (the
states where ``ψ(·|s,a) ≠ 0`` for some run); state–action columns with identical features in every
run (e.g. all actions at an absorbing state) are planned once; ``ϕ_H ≡ 0``; the Gram inverses are
the adjugate (d ≤ 3) or Gauss–Jordan elimination. ``reachable_only=True`` also plans
only at the states reachable at step h from the initial distribution through that support (plus
the last state): regret, data and releases equal the full computation's — values at unreachable
states never feed back — but ``policy_`` then holds action 0 / the uniform policy there, and no
callback is allowed. The experiments use it; ``fit`` does not.

The greedy policy (Algorithm 1 line 12) takes the lowest-index action among those within
``TIE_TOL·H`` of ``max_a Q``: actions tied in exact arithmetic are not separated by round-off.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._progress import loop_progress
from privrl._rng import RngLike
from privrl._validation import param_error
from privrl.envs.linear_mixture import LinearMixtureMDP, random_mixture
from privrl.errors import UtilityWarning
from privrl.linear_mixture import calibration as cal
from privrl.linear_mixture.regularizers import BatchedStatistics, Stats, check_contributions, empty_counters, kernels
from privrl.online.episodes import GymRollout, run_streams
from privrl.online.regret import optimal_values

__all__ = ["compile_planning", "fit_many", "plan_once", "softmax", "spd_inverse"]

#: episodes of pre-drawn env / policy randomness per block
_BLOCK = 256
#: actions within TIE_TOL·H of max_a Q count as maximisers (tie-break, Algorithm 1 line 12)
TIE_TOL = 1e-12
#: a PO learner whose last policy is within this total variation of uniform at every step and state
#: still plays (about) uniformly: the stuck learner, whose regret it then shares (UtilityWarning)
NEAR_UNIFORM_TV = 0.1
_I = np.int64


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the last axis with the log-sum-exp shift (stable for large logits)."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def spd_inverse(Lam: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Λ⁻¹, Λ⁻¹u)`` for a stack ``(..., d, d)`` of symmetric positive definite matrices, as the
    planning kernel computes them (the adjugate for d ≤ 3, exactly symmetric for a symmetric input;
    Gauss–Jordan elimination without pivoting above: every pivot is a Schur complement, at least
    ``λ_min(Λ)``), in the layout ``(d, d, ...)`` and ``(d, ...)`` (stack axes last)."""
    lead, d = Lam.shape[:-2], Lam.shape[-1]
    flat_L = np.ascontiguousarray(Lam, dtype=float).reshape(-1, 1, d, d)
    flat_u = np.ascontiguousarray(u, dtype=float).reshape(-1, 1, d)
    n = len(flat_L)
    inv, theta = np.empty((d, d, n)), np.empty((d, n))
    kernels().spd_inverses(flat_L, flat_u, 0, inv, theta, np.empty((3, d, n)), n)
    return inv.reshape(d, d, *lead), theta.reshape(d, *lead)


class _Geometry:
    """The states planned at each step (``X[h]``, with ``pos[h]`` mapping a state to its index),
    the successors summed over in ``ϕ`` and the distinct state–action columns, stacked over runs;
    :meth:`compiled` lays them out for the kernels (:class:`~privrl.linear_mixture._kernels.Geometry`).

    Per step, the planned state–action pairs are the ``N = n_h·A`` columns ``i·A + a`` (state
    ``X[h][i]``, action ``a``); ``ψ`` is kept as ``(R, d1, k, U)`` over the successors and the distinct
    columns."""

    def __init__(self, psi: np.ndarray, phi: np.ndarray, initial: np.ndarray, horizon: int,
                 reachable_only: bool) -> None:
        R, S, A, _, d1 = psi.shape
        H = horizon
        self.R, self.H, self.S, self.A, self.d1, self.d2 = R, H, S, A, d1, phi.shape[-1]
        support = np.any(psi != 0, axis=(0, 4))                         # (S, A, S')
        if reachable_only:
            X = [np.union1d(np.flatnonzero(np.any(initial > 0, axis=0)), [S - 1])]
            for _ in range(H):
                X.append(np.union1d(np.flatnonzero(support[X[-1]].any(axis=(0, 1))), [S - 1]))
        else:
            X = [np.arange(S)] * (H + 1)
        self.X = X
        self.n = [len(x) for x in X]
        self.pos = np.full((H + 1, S), -1, dtype=_I)                    # state -> index in X[h]
        for h in range(H + 1):
            self.pos[h, X[h]] = np.arange(len(X[h]))
        self.offn = np.cumsum([0] + self.n)                             # planned (h, s) of all steps
        self.nsum = int(self.offn[H])
        self.hcat = np.repeat(np.arange(H), self.n[:H])
        self.scat = np.concatenate(X[:H]) if H else np.zeros(0, dtype=_I)
        cols = [(X[h][:, None] * A + np.arange(A)).ravel() for h in range(H)]
        # successors summed over in ϕ = Σ_j ψ(s_j|s,a) V(s_j): those of X[h] (ascending)
        self.succ = [X[h + 1][support[X[h]][:, :, X[h + 1]].any(axis=(0, 1))] for h in range(H)]
        self.succ_at = [self.offn[h + 1] + self.pos[h + 1][self.succ[h]] for h in range(H)]
        d2 = self.d2
        # columns with the same features in every run (ψ(·|s,a) on the successors and φ(s,a); e.g.
        # every action at an absorbing state) have the same Q: plan each distinct one once
        self.psi, self.ucols, self.uinv = [], [], []
        for h in range(H):
            sub = psi[:, X[h]][:, :, :, self.succ[h]].reshape(R, len(cols[h]), -1)   # (R, N, k·d1)
            key = np.concatenate([sub, phi[:, X[h]].reshape(R, len(cols[h]), d2)], axis=2)
            _, first, inverse = np.unique(key.transpose(1, 0, 2).reshape(len(cols[h]), -1), axis=0,
                                          return_index=True, return_inverse=True)
            order = np.argsort(first)                                   # distinct columns in natural order
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            ucols = first[order]
            self.ucols.append(ucols)
            self.uinv.append(rank[inverse.ravel()])
            u = psi[:, X[h]][:, :, :, self.succ[h]].reshape(R, len(cols[h]), len(self.succ[h]), d1)[:, ucols]
            self.psi.append(np.ascontiguousarray(u.transpose(0, 3, 2, 1)))          # (R, d1, k, U)
        self.U = [len(u) for u in self.ucols]
        ids = [c[u] for c, u in zip(cols, self.ucols)]
        phi_cols = phi.reshape(R, S * A, d2)[:, np.concatenate(ids) if H else []]
        self.phi_u = np.ascontiguousarray(np.moveaxis(phi_cols, 2, 1))                  # (R, d2, ΣU)
        self.phi = phi

    def compiled(self, *, models: Sequence[LinearMixtureMDP] | None, bp: np.ndarray, br: np.ndarray,
                 is_po: np.ndarray, random_ties: np.ndarray, model_row: np.ndarray, eta: np.ndarray,
                 v_star: np.ndarray, n_episodes: int, batched: bool, step: bool) -> Any:
        """The kernels' :class:`~privrl.linear_mixture._kernels.Geometry` (``models``: the true
        models' tables for the rollout and the exact regret; None: planning only)."""
        H, S, A, R = self.H, self.S, self.A, self.R
        cum = lambda xs: np.cumsum([0] + list(xs)).astype(_I)  # noqa: E731
        if models is not None:
            P = np.ascontiguousarray(np.stack([m.transitions() for m in models]))      # (R, H, S, A, S)
            mean = np.ascontiguousarray(np.stack([m.mean_rewards() for m in models]))  # (R, H, S, A)
            cum_init = np.stack([np.cumsum(m.initial) for m in models])
            bernoulli = np.array([m.reward_noise == "bernoulli" for m in models])
        else:
            P, mean = np.zeros((R, H, S, A, S)), np.zeros((R, H, S, A))
            cum_init, bernoulli = np.zeros((R, S)), np.zeros(R, dtype=bool)
        ksucc = [len(s) for s in self.succ]
        return kernels().Geometry(
            dims=np.array([H, S, A, self.d1, self.d2, n_episodes, batched, step], dtype=_I),
            n=np.array(self.n, dtype=_I), offn=self.offn.astype(_I), U=np.array(self.U, dtype=_I),
            uoff=cum(self.U), foff=cum(self.d1 * u for u in self.U), ksucc=np.array(ksucc, dtype=_I),
            soff=cum(ksucc), poff=cum(p[0].size for p in self.psi),
            succ_at=np.concatenate(self.succ_at + [np.zeros(0)]).astype(_I),
            succ_state=np.concatenate(self.succ + [np.zeros(0)]).astype(_I),
            uinv=np.concatenate(self.uinv + [np.zeros(0)]).astype(_I), pos=self.pos, scat=self.scat.astype(_I),
            psi=np.ascontiguousarray(np.concatenate([p.reshape(R, -1) for p in self.psi] + [np.zeros((R, 0))], axis=1)),
            phi_u=self.phi_u, bp=np.ascontiguousarray(bp, dtype=float), br=np.ascontiguousarray(br, dtype=float),
            cum_P=np.ascontiguousarray(np.cumsum(P, axis=-1)), mean=mean, P=P, cum_init=np.ascontiguousarray(cum_init),
            bernoulli=np.ascontiguousarray(bernoulli, dtype=bool), phi=np.ascontiguousarray(self.phi, dtype=float),
            v_star=np.ascontiguousarray(v_star, dtype=float), is_po=np.ascontiguousarray(is_po, dtype=bool),
            random_ties=np.ascontiguousarray(random_ties, dtype=bool),
            model_row=np.ascontiguousarray(model_row, dtype=bool), eta=np.ascontiguousarray(eta, dtype=float),
            tie=np.array([TIE_TOL * H]))

    def state(self, stats: Stats, n_episodes: int, block: int, random_ties: bool) -> Any:
        """A fresh :class:`~privrl.linear_mixture._kernels.State` on the statistics ``stats`` (used in place)."""
        R, H, S, A, n = self.R, self.H, self.S, self.A, self.nsum
        return kernels().State(
            *stats, Q=np.zeros((R, n * A)), feat=np.zeros((R, int(sum(self.d1 * u for u in self.U)))),
            V=np.zeros((R, int(self.offn[-1]))), Vmax=np.zeros((R, int(self.offn[-1]))),
            greedy=np.zeros((R, n), dtype=_I), logits=np.zeros((R, n, A)), pi=np.full((R, n, A), 1.0 / A),
            s=np.zeros((R, H + 1), dtype=_I), a=np.zeros((R, H), dtype=_I), rew=np.zeros((R, H)),
            j=np.zeros((R, H + 1), dtype=_I), x_p=np.zeros((R, H, self.d1)), y_p=np.zeros((R, H)),
            x_r=np.zeros((R, H, self.d2)), regret=np.zeros((R, n_episodes)), u_env=np.zeros((block, R, H + 1, 2)),
            u_act=np.zeros((block, R, H)), u_tie=np.zeros((block, R, H, S, A) if random_ties else (0, R, H, S, A)),
            clock=np.zeros(2, dtype=_I), v_pi=np.zeros((R, int(self.offn[-1]))))

    def full(self, cat: np.ndarray, fill: float | int = 0) -> np.ndarray:
        """A ``(R, Σ_h n_h, ...)`` array over the planned (h, s) as ``(R, H, S, ...)`` (``fill`` elsewhere)."""
        out = np.full((cat.shape[0], self.H, self.S, *cat.shape[2:]), fill, dtype=cat.dtype)
        out[:, self.hcat, self.scat] = cat[:, :self.nsum]
        return out


def plan_once(stats: Stats, psi: np.ndarray, phi: np.ndarray, beta_p: ArrayLike, beta_r: ArrayLike,
              policy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The planning kernel for one run at every state: ``psi`` ``(S, A, S, d1)``, ``phi`` ``(S, A, d2)``,
    ``beta_p``/``beta_r`` one radius or one per step, ``policy`` ``(H, S, A)`` for PO. Returns
    ``(Q (H,S,A), V (H+1,S), ϕ (H,S,A,d1))``."""
    H, (S, A, _, d1) = stats[0].shape[0], psi.shape
    geo = _Geometry(np.asarray(psi, dtype=float)[None], np.asarray(phi, dtype=float)[None], np.full((1, S), 1.0 / S),
                    H, reachable_only=False)
    bp = np.broadcast_to(np.asarray(beta_p, dtype=float), (H,))[None]
    br = np.broadcast_to(np.asarray(beta_r, dtype=float), (H,))[None]
    po = policy is not None
    G = geo.compiled(models=None, bp=bp, br=br, is_po=np.array([po]), random_ties=np.zeros(1, dtype=bool),
                     model_row=np.zeros(1, dtype=bool), eta=np.zeros(1), v_star=np.zeros((1, S)), n_episodes=1,
                     batched=False, step=True)
    Lp, up, Lr, ur = (np.ascontiguousarray(np.asarray(x, dtype=float)[None]) for x in stats)
    state = geo.state((Lp, up, Lr, ur), 1, 1, False)
    if po:
        state.pi[0] = np.asarray(policy, dtype=float).reshape(H * S, A)
    kernels().plan_all(G, state, 0, kernels().scratch(G))
    f = np.stack([np.moveaxis(state.feat[0, G.foff[h]:G.foff[h + 1]].reshape(d1, -1)[:, geo.uinv[h]]
                              .reshape(d1, S, A), 0, -1) for h in range(H)])
    return state.Q[0].reshape(H, S, A), state.V[0].reshape(H + 1, S), f



def compile_planning() -> None:
    """Compile the planning kernel (``plan_all``, ``scratch``) by planning once on a small random
    model: numba caches it, and the engine's ``advance``, which calls it, loads it instead of
    compiling it (a warm-up of ``privrl bench``'s pool: :mod:`privrl.experiments.scheduling`)."""
    if not kernels().JIT:
        return
    m = random_mixture(4, 3, 3, 2, 2, rng=0)
    d1, d2, H = m.psi.shape[-1], m.phi.shape[-1], 3
    stats = (np.tile(np.eye(d1), (H, 1, 1)), np.zeros((H, d1)), np.tile(np.eye(d2), (H, 1, 1)), np.zeros((H, d2)))
    plan_once(stats, m.psi, m.phi, 1.0, 1.0)


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


class _Run:
    """One estimator's set-up: what ``fit`` computes before the first episode (parameters validated,
    the fit's releaser opened, the regularizer started, the constants and radii per step)."""

    def __init__(self, est: Any, env: object, rng: RngLike, features: LinearMixtureMDP | None) -> None:
        p = est._checked()
        rng = est._fit_rng(rng)
        self.est = est
        self.model, self.gym_env = resolve_model(env, features)
        model = self.model
        self.streams = run_streams(rng)
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
        self.v_star = optimal_values(model.transitions(), model.mean_rewards())
        est._begin(model, self.K, p)
        self.is_po = est._algorithm == "linopt-po"
        self.eta = float(getattr(est, "eta_", 0.0))
        self.random_ties = not self.is_po and p.get("tie_break", "lowest") == "random"
        self.sizes = (self.K, self.H, model.n_states, model.n_actions, model.d1, model.d2)


def fit_many(estimators: Sequence[object], envs: Sequence[object], rngs: Sequence[RngLike], *,
             features: LinearMixtureMDP | None = None, callback: Callable[..., object] | None = None,
             reachable_only: bool = False) -> list[object]:
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
    def __init__(self, runs: list[_Run], reachable_only: bool, callback: Callable[..., object] | None) -> None:
        self.runs, self.callback = runs, callback
        self.R = len(runs)
        self.K, self.H, self.S, self.A, self.d1, self.d2 = runs[0].sizes
        models = [run.model for run in runs]
        self.geo = geo = _Geometry(np.stack([m.psi for m in models]), np.stack([m.phi for m in models]),
                                   np.stack([m.initial for m in models]), self.H, reachable_only)
        regs = [run.reg for run in runs]
        self.batched = BatchedStatistics(regs) if all(BatchedStatistics.supports(g) for g in regs) else None
        if self.batched is not None:
            stats = self.batched.statistics()
        else:
            Lp, up, Lr, ur = (np.ascontiguousarray(np.stack(x)) for x in zip(*[run.initial for run in runs]))
            stats = (Lp, up, Lr, ur)
        self.is_po = np.array([run.is_po for run in runs])
        self.gym_rows = [r for r, run in enumerate(runs) if run.gym_env is not None]
        self.model_rows = [r for r, run in enumerate(runs) if run.gym_env is None]
        random_ties = np.array([run.random_ties for run in runs])
        self.random_rows = np.flatnonzero(random_ties)
        step = callback is not None or bool(self.gym_rows)            # Python between planning and rollout
        self.G = geo.compiled(models=models, bp=np.array([run.est.beta_p_ for run in runs]),
                              br=np.array([run.est.beta_r_ for run in runs]), is_po=self.is_po,
                              random_ties=random_ties, model_row=np.array([run.gym_env is None for run in runs]),
                              eta=np.array([run.eta for run in runs]), v_star=np.stack([run.v_star for run in runs]),
                              n_episodes=self.K, batched=self.batched is not None, step=step)
        self.block = min(_BLOCK, self.K)
        self.state = geo.state(stats, self.K, self.block, bool(len(self.random_rows)))
        if self.gym_rows:
            self.rollouts = {r: GymRollout(runs[r].model.horizon, runs[r].gym_env, runs[r].streams["env"])
                             for r in self.gym_rows}

    # -- pre-drawn randomness (bit-identical to per-episode draws)
    def _draws(self, k: int) -> None:
        st, n = self.state, min(self.block, self.K - k)
        H, S, A = self.H, self.S, self.A
        for r in self.model_rows:
            run = self.runs[r]
            st.u_env[:n, r] = run.streams["env"].random((n, H + 1, 2))
            if run.is_po:
                st.u_act[:n, r] = run.streams["policy"].random((n, H))
            elif run.random_ties:
                st.u_tie[:n, r] = run.streams["policy"].random((n, H, S, A))
        st.clock[:] = (k, k + n)

    def play_policy(self, r: int) -> np.ndarray:
        """Run r's policy of this episode as a full ``(H, S)`` int / ``(H, S, A)`` array."""
        st = self.state
        if self.is_po[r]:
            return self.geo.full(st.pi[r:r + 1], fill=1.0 / self.A)[0]
        return self.geo.full(st.greedy[r:r + 1], fill=0)[0]

    def _between(self, k: int) -> None:
        """After planning, before the rollout: the callback, the gym runs' episodes."""
        st, geo, H = self.state, self.geo, self.H
        if self.callback is not None:
            full_V = np.zeros((H + 1, self.S))
            full_V[:H] = geo.full(st.V[:1])[0]
            Q = st.Q.reshape(self.R, geo.nsum, self.A)
            self.callback(k, Q=geo.full(Q[:1])[0], V=full_V, policy=self.play_policy(0),
                          stats=tuple(x[0].copy() for x in st[:4]))
        for r in self.gym_rows:
            s, a, rew = self.rollouts[r].episode(self.play_policy(r), self.runs[r].streams["policy"])
            st.s[r], st.a[r], st.rew[r] = s, a, rew
            st.j[r] = geo.offn[:H + 1] + geo.pos[np.arange(H + 1), s]

    def _check(self) -> None:
        """The contributions' bounds decided exactly (:func:`check_contributions`: raise, or clip
        the users who asked for it)."""
        st, b = self.state, self.batched
        assert b is not None
        bufs = (st.x_p, st.y_p, st.x_r, st.rew)
        out = check_contributions(*bufs, x_bound=b.x_bound, y_bound=b.y_bound, clip=b.clip, owner=b.owners)
        for buf, new in zip(bufs, out):
            if new is not buf:
                buf[...] = new

    def _per_run(self) -> None:
        st = self.state
        outs = [run.reg.update(st.x_p[r], st.y_p[r], st.x_r[r], st.rew[r]) for r, run in enumerate(self.runs)]
        for arr, parts in zip(st[:4], zip(*outs)):
            arr[...] = np.stack(parts)

    def _before_plan(self, k: int) -> None:
        """Draw what episode ``k``'s planning reads: the next block of draws, and a gym run's tie-break
        uniforms (drawn as ``fit`` did)."""
        st = self.state
        if k >= st.clock[1]:
            self._draws(k)
        for r in self.gym_rows:
            if self.runs[r].random_ties:
                st.u_tie[k - st.clock[0], r] = self.runs[r].streams["policy"].random((self.H, self.S, self.A))

    def run(self) -> None:
        k_ = kernels()
        st, K = self.state, self.K
        counters = self.batched.counters if self.batched is not None else empty_counters(self.H)
        k, phase, checked = 0, k_.PLAN, False
        work = k_.scratch(self.G)
        with loop_progress(K, "episode") as bar:
            while True:
                if phase == k_.PLAN and k < K:
                    self._before_plan(k)
                k, phase, why = k_.advance(self.G, st, counters, work, k, phase, checked)
                bar.update(k - bar.n)
                checked = False
                if why == k_.DONE:
                    break
                if why == k_.NEED_NOISE:
                    assert self.batched is not None
                    counters = self.batched.refill()
                elif why == k_.PLANNED:
                    self._between(k)
                elif why == k_.CHECK:
                    self._check()
                    checked = True
                elif why == k_.PER_RUN:
                    self._per_run()
                    k, phase = k + 1, k_.PLAN
                elif why == k_.FLOOR:
                    assert self.batched is not None
                    self.batched.floor()
        self._finish(st.regret, tuple(st[:4]), st.greedy, st.pi, st.Q.reshape(self.R, self.geo.nsum, self.A))

    def pi_full(self, pi: np.ndarray, r: int) -> np.ndarray:
        return self.geo.full(pi[r:r + 1], fill=1.0 / self.A)[0]

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
            # PO: the total variation of the last policy from uniform, max over (h, s) — post-processing
            # of the policy the released statistics produced (unreached states keep the uniform fill)
            est.policy_tv_from_uniform_ = (float(0.5 * np.abs(est.policy_ - 1.0 / self.A).sum(axis=-1).max())
                                           if run.is_po else math.nan)
            est.near_uniform_ = bool(run.is_po and not est.saturated_
                                     and est.policy_tv_from_uniform_ <= NEAR_UNIFORM_TV)
            if est.near_uniform_:
                warnings.warn(
                    f"{type(est).__name__}: weak output: the last policy is within total variation "
                    f"{est.policy_tv_from_uniform_:.2g} of uniform play at every step and state, so the learner "
                    "played about as the uniform (stuck) learner does and its regret is no better. The "
                    "mirror-descent steps on the noisy Q estimates cancelled out (the action gaps are small next to "
                    "the privacy noise and the bonus): use more episodes or a larger budget; LinOpt-VI's greedy step "
                    "commits to the estimated best action instead.",
                    UtilityWarning, stacklevel=5)
