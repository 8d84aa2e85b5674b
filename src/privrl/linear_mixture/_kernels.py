"""The compiled kernels of the LinOpt lockstep engine (numba, cached on disk).

One call of :func:`advance` runs whole episodes of R runs — planning (Algorithm 1 lines 5–12 /
Algorithm 2 lines 4–12), the rollout on the true model, the exact pseudo-regret, the contributions,
PO's policy update (line 15) and the insert of the batched statistics — until it needs Python: a new
block of pre-drawn uniforms or normals, a callback or a gym episode (``step`` mode), a regularizer
that updates itself, a contribution or a PD floor near its bound (decided exactly by NumPy, as the
regularizers' own code decides it). The planning and the batched statistics work on every run at
once, the run index innermost (the runs share their geometry and their statistics' sizes, so the
loops vectorise across runs; the statistics' runs grouped by kind of noise); every other loop runs
over one run at a time. Either way each run's arithmetic is the same sequence of operations as that
run alone, so a run's result does not depend on the others in the batch. Arithmetic is plain IEEE
(no fastmath: no reassociation, no fused multiply–add); the statistics (:func:`insert`,
:func:`release`) make exactly the elementwise operations of the regularizers' own NumPy updates, in
the same order, so they are bit-identical.

Imported on the first fit only (numba takes a few tenths of a second to load): ``import privrl``
and ``privrl --help`` never load it. Without numba, or with ``PRIVRL_NO_JIT=1`` in the environment
when this module is first imported, the same functions run as plain Python over NumPy arrays
(:data:`JIT` is then False): the same operations in the same order, so the same results up to the
last bit of ``exp``/``sqrt`` (tested), but one to two orders of magnitude slower.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from privrl._jit import compilers, literal_dispatch

_jit, _inlined, JIT = compilers()
_literally = literal_dispatch(JIT)

#: the phases of an episode
PLAN, ROLLOUT, INSERT = 0, 1, 2
#: why :func:`advance` returned
DONE, NEED_DRAWS, NEED_NOISE, PLANNED, STEP, CHECK, PER_RUN, FLOOR = range(8)
#: dims fields
_H, _S, _A, _D1, _D2, _K, _BATCHED, _STEP = range(8)
#: contribution bounds: relative tolerance of ``check_contributions``, and the margin under which the
#: kernel's own sums (another summation order) pass without asking NumPy
_TOL = 1e-9
_MARGIN = 1e-12


class Geometry(NamedTuple):
    """What a fit knows before its first episode (read-only). Planned (h, s) are numbered among all
    steps (``offn[h] + i`` for the i-th planned state of step h); step h's columns ``i·A + a``
    map to distinct columns ``uinv`` (columns with the same features in every run are planned once)."""

    dims: np.ndarray        # int64 [H, S, A, d1, d2, K, batched, step]
    n: np.ndarray           # (H+1,) planned states per step
    offn: np.ndarray        # (H+2,) their offsets
    U: np.ndarray           # (H,) distinct columns per step
    uoff: np.ndarray        # (H+1,)
    foff: np.ndarray        # (H+1,) step h's features ϕ (d1 × U_h, row-major) in feat
    ksucc: np.ndarray       # (H,) successors summed over in ϕ
    soff: np.ndarray        # (H+1,)
    poff: np.ndarray        # (H+1,) step h's ψ (d1 × k_h × U_h) in psi
    succ_at: np.ndarray     # (Σ k_h,) a successor's planned index (in V)
    succ_state: np.ndarray  # (Σ k_h,) its state
    uinv: np.ndarray        # (offn[H]·A,) column -> distinct column of its step
    pos: np.ndarray         # (H+1, S) state -> index among step h's planned states (−1: not planned)
    scat: np.ndarray        # (offn[H],) the state of each planned (h, s)
    psi: np.ndarray         # (R, poff[H]) ψ(s_j | s, a) at the distinct columns (step h: (d1, k_h, U_h))
    phi_u: np.ndarray       # (R, d2, uoff[H]) φ at the distinct columns
    bp: np.ndarray          # (R, H) β_p
    br: np.ndarray          # (R, H) β_r
    cum_P: np.ndarray       # (R, H, S, A, S) cumulative kernels (rollout)
    mean: np.ndarray        # (R, H, S, A) mean rewards
    P: np.ndarray           # (R, H, S, A, S) kernels (exact regret)
    cum_init: np.ndarray    # (R, S)
    bernoulli: np.ndarray   # (R,) bool
    phi: np.ndarray         # (R, S, A, d2)
    v_star: np.ndarray      # (R, S) V_1^*
    is_po: np.ndarray       # (R,) bool
    random_ties: np.ndarray  # (R,) bool
    model_row: np.ndarray   # (R,) bool: rolled out here (not a gym env)
    eta: np.ndarray         # (R,) PO step size
    tie: np.ndarray         # (1,) TIE_TOL·H


class State(NamedTuple):
    """A fit's per-episode state (mutated in place)."""

    Lp: np.ndarray          # (R, H, d1, d1) the statistics of the current episode
    up: np.ndarray          # (R, H, d1)
    Lr: np.ndarray          # (R, H, d2, d2)
    ur: np.ndarray          # (R, H, d2)
    Q: np.ndarray           # (R, offn[H]·A)
    feat: np.ndarray        # (R, foff[H])
    V: np.ndarray           # (R, offn[H+1]) (step H: 0)
    Vmax: np.ndarray        # (R, offn[H+1])
    greedy: np.ndarray      # (R, offn[H]) int64
    logits: np.ndarray      # (R, offn[H], A) PO
    pi: np.ndarray          # (R, offn[H], A) PO: the policy of the current episode
    s: np.ndarray           # (R, H+1) int64 the episode's states
    a: np.ndarray           # (R, H) int64 actions
    rew: np.ndarray         # (R, H) rewards
    j: np.ndarray           # (R, H+1) int64 the path's planned indices
    x_p: np.ndarray         # (R, H, d1) contributions
    y_p: np.ndarray         # (R, H)
    x_r: np.ndarray         # (R, H, d2)
    regret: np.ndarray      # (R, K)
    u_env: np.ndarray       # (B, R, H+1, 2) pre-drawn: next states (…, h, 0), rewards (…, h, 1), first state (…, H, 0)
    u_act: np.ndarray       # (B, R, H) PO actions
    u_tie: np.ndarray       # (B, R, H, S, A) random tie-breaks (B = 0 without)
    clock: np.ndarray       # int64 [first episode of the block, end of the block]
    v_pi: np.ndarray        # (R, offn[H+1]) scratch: the played policy's values


class Counters(NamedTuple):
    """The batched statistics of R runs (see :class:`~privrl.linear_mixture.regularizers.BatchedStatistics`),
    the run index last, the runs grouped by kind (``order``: tree runs, BLT runs, local runs, runs
    without noise, each group in run order; the noisy runs first): the 4 streams packed along the
    axis ``P``, the exact sums, the tree's live nodes (levels are common to every run: the counters
    advance together), the BLT buffers, the local messages' sums."""

    ints: np.ndarray        # int64 [t, n_items, depth, zpos, zfilled]
    sizes: np.ndarray       # int64 [d1, d2, P, n_tree, n_blt, n_noisy]
    order: np.ndarray       # (R,) int64: the run at each grouped position
    exact: np.ndarray       # (H, P, R)
    z: np.ndarray           # (R_noisy, Bz, W+1) pre-drawn standard normals (each run's block contiguous)
    scale: np.ndarray       # (W+1, R_noisy)
    draw_at: np.ndarray     # (H·P, R_noisy) int64
    levels: np.ndarray      # (L,) int64 live node levels (decreasing)
    stack: np.ndarray       # (L, H, P, R_tree) running noise totals from the top node down
    theta: np.ndarray       # (d_blt, R_blt)
    omega: np.ndarray       # (d_blt, R_blt)
    blt_state: np.ndarray   # (d_blt, H, P, R_blt)
    blt_total: np.ndarray   # (H, P, R_blt)
    local_total: np.ndarray  # (H, P, R_local)
    shift_p: np.ndarray     # (H, d1·d1, R) shift·I
    shift_r: np.ndarray     # (H, d2·d2, R)
    screen_p: np.ndarray    # (H, R) the floor's screen on ‖N_p‖²_F (inf: never floored)
    screen_r: np.ndarray    # (H, R)
    x_bound: np.ndarray     # (R, H) (run order)
    y_bound: np.ndarray     # (R, H)
    runs: np.ndarray        # (H, d1 + d2 + 2, R) scratch: the contributions, run-last
    per_run: np.ndarray     # (6, R) scratch: item, noise, rel, tot, ‖N_p‖², ‖N_r‖²
    pairs: np.ndarray       # (2, P) int64: item q is runs[h, pairs[0, q]] · runs[h, pairs[1, q]]


class Work(NamedTuple):
    """A fit's work arrays (:func:`scratch`, made once per fit), the run index last: the runs' ψ, φ
    at the distinct columns, β's, mean rewards and kernels, then the scratch of :func:`plan_all` and
    :func:`played_values`."""

    psi: np.ndarray         # (poff[H], R)
    phi: np.ndarray         # (d2, uoff[H], R)
    bp: np.ndarray          # (H, R)
    br: np.ndarray          # (H, R)
    mean: np.ndarray        # (H, S, A, R)
    P: np.ndarray           # (H, S, A, S, R)
    inv_p: np.ndarray       # (d1, d1, R) Λ_p⁻¹ of the step
    th_p: np.ndarray        # (d1, R) θ̂_p
    gj_p: np.ndarray        # (3, d1, R) Gauss–Jordan scratch
    inv_r: np.ndarray       # (d2, d2, R)
    th_r: np.ndarray        # (d2, R)
    gj_r: np.ndarray        # (3, d2, R)
    f: np.ndarray           # (d1, m, R) ϕ at the step's columns
    val: np.ndarray         # (m, R) the optimistic Q before clipping
    bonus: np.ndarray       # (m, R) the reward bonus
    qd: np.ndarray          # (m, R) a quadratic form
    dp: np.ndarray          # (m, R) ϕᵀθ̂_p
    row: np.ndarray         # (R,)
    V: np.ndarray           # (offn[H+1], R) the planned values
    V_played: np.ndarray    # (offn[H+1], R) the played policy's values
    q: np.ndarray           # (R,)
    v: np.ndarray           # (R,)


# --------------------------------------------------------------------------- planning
@_inlined
def spd_inverses(L, u, h, inv, theta, gj, R):  # pragma: no cover - compiled
    """Every run's ``Λ⁻¹ = L[r, h]⁻¹`` and ``θ = Λ⁻¹ u[r, h]`` for SPD ``d × d`` matrices, stored
    run-last: ``inv[i, j, r]``, ``theta[i, r]``; the run index innermost, each run's arithmetic the
    same sequence as alone. The adjugate over the determinant for d ≤ 3 (exactly symmetric for a
    symmetric input), Gauss–Jordan elimination without pivoting above (stable for SPD matrices:
    every pivot is a Schur complement, at least ``λ_min(Λ)``). ``inv`` C-contiguous; ``gj``: scratch
    ``(3, d, R)``; ``R``: the number of runs (``inv.shape[2]``, passed so that a constant specialises
    the loops)."""
    d = inv.shape[0]
    if d == 1:
        for r in range(R):
            inv[0, 0, r] = 1.0 / L[r, h, 0, 0]
    elif d == 2:
        for r in range(R):
            m00, m01, m10, m11 = L[r, h, 0, 0], L[r, h, 0, 1], L[r, h, 1, 0], L[r, h, 1, 1]
            det = m00 * m11 - m01 * m10
            inv[0, 0, r] = m11 / det
            inv[0, 1, r] = -m01 / det
            inv[1, 0, r] = -m10 / det
            inv[1, 1, r] = m00 / det
    elif d == 3:
        for r in range(R):
            m = L[r, h]
            a00, a01, a02 = m[0, 0], m[0, 1], m[0, 2]
            a10, a11, a12 = m[1, 0], m[1, 1], m[1, 2]
            a20, a21, a22 = m[2, 0], m[2, 1], m[2, 2]
            c00 = (a11 * a22) - (a12 * a21)                              # the adjugate
            c01 = (a02 * a21) - (a01 * a22)
            c02 = (a01 * a12) - (a02 * a11)
            c10 = (a12 * a20) - (a10 * a22)
            c11 = (a00 * a22) - (a02 * a20)
            c12 = (a02 * a10) - (a00 * a12)
            c20 = (a10 * a21) - (a11 * a20)
            c21 = (a01 * a20) - (a00 * a21)
            c22 = (a00 * a11) - (a01 * a10)
            det = a00 * c00 + a01 * c10 + a02 * c20
            inv[0, 0, r], inv[0, 1, r], inv[0, 2, r] = c00 / det, c01 / det, c02 / det
            inv[1, 0, r], inv[1, 1, r], inv[1, 2, r] = c10 / det, c11 / det, c12 / det
            inv[2, 0, r], inv[2, 1, r], inv[2, 2, r] = c20 / det, c21 / det, c22 / det
    else:
        flat = inv.reshape(d * d, R)                                    # entry (i, c) at row i·d + c (2-D: the
        row, col, piv = gj[0], gj[1], gj[2, 0]                          # run loops vectorise)
        for i in range(d):
            for j in range(d):
                for r in range(R):
                    flat[i * d + j, r] = L[r, h, i, j]
        for k in range(d):                                              # NumPy's elimination, entry by entry
            kk = k * d + k
            for r in range(R):
                piv[r] = 1.0 / flat[kk, r]
            for c in range(d):
                for r in range(R):
                    row[c, r] = flat[k * d + c, r] * piv[r]
                    col[c, r] = flat[c * d + k, r] * -piv[r]
            for i in range(d):
                if i != k:
                    for c in range(d):
                        if c != k:
                            for r in range(R):
                                flat[i * d + c, r] -= flat[i * d + k, r] * row[c, r]
            for c in range(d):
                for r in range(R):
                    flat[k * d + c, r] = row[c, r]
                    flat[c * d + k, r] = col[c, r]
            for r in range(R):
                flat[kk, r] = piv[r]
    for i in range(d):                                                  # θ = Λ⁻¹u, row by row
        for r in range(R):
            theta[i, r] = inv[i, 0, r] * u[r, h, 0]
        for c in range(1, d):
            for r in range(R):
                theta[i, r] += inv[i, c, r] * u[r, h, c]


@_inlined
def _dot_quad(theta, inv, x, xo, dot, quad, row, U, R):  # pragma: no cover - compiled
    """For the columns ``u < U`` of ``x[:, xo + u, :]``, every run at once (run-last arrays):
    ``dot[u] = θᵀx_u`` and ``quad[u] = x_uᵀ inv x_u``, each run's in the order of one run's
    loops (``Σ_c θ_c x_c`` from c = 0; ``Σ_i x_i (Σ_c inv_ic x_c)``), so bit for bit a run's own.
    Several runs at 2 ≤ d ≤ 5: the dimension a constant of its own loop (:func:`_dot_quad_small`);
    otherwise the sums go through ``dot``, ``quad`` and ``row`` one coordinate at a time."""
    d = theta.shape[0]
    if R == 1:                                                           # (one run: no run loop to vectorise)
        _dot_quad_passes(theta, inv, x, xo, dot, quad, row, U, R)
    elif d == 2:
        _dot_quad_small(theta, inv, x, xo, dot, quad, U, R, 2)
    elif d == 3:
        _dot_quad_small(theta, inv, x, xo, dot, quad, U, R, 3)
    elif d == 4:
        _dot_quad_small(theta, inv, x, xo, dot, quad, U, R, 4)
    elif d == 5:
        _dot_quad_small(theta, inv, x, xo, dot, quad, U, R, 5)
    else:
        _dot_quad_passes(theta, inv, x, xo, dot, quad, row, U, R)


@_jit
def _dot_quad_small(theta, inv, x, xo, dot, quad, U, R, d):  # pragma: no cover - compiled
    """:func:`_dot_quad` for a constant ``d``: the coordinate loops unroll, so each run's sums stay
    in registers and the run loop vectorises (the same operations in the same order: the results
    are bit for bit those of :func:`_dot_quad_passes`, tested). About 2–3× faster at d = 3 and 5."""
    _literally(d)
    for u in range(U):
        for r in range(R):
            acc = theta[0, r] * x[0, xo + u, r]
            for c in range(1, d):
                acc += theta[c, r] * x[c, xo + u, r]
            dot[u, r] = acc
            q = 0.0
            for i in range(d):
                rw = 0.0
                for c in range(d):
                    rw += inv[i, c, r] * x[c, xo + u, r]
                q += x[i, xo + u, r] * rw
            quad[u, r] = q


@_inlined
def _dot_quad_passes(theta, inv, x, xo, dot, quad, row, U, R):  # pragma: no cover - compiled
    """:func:`_dot_quad` for any ``d``, one pass over the runs per coordinate."""
    d = theta.shape[0]
    for u in range(U):
        for r in range(R):
            dot[u, r] = theta[0, r] * x[0, xo + u, r]
        for c in range(1, d):
            for r in range(R):
                dot[u, r] += theta[c, r] * x[c, xo + u, r]
        for r in range(R):
            quad[u, r] = 0.0
        for i in range(d):
            for r in range(R):
                row[r] = 0.0
            for c in range(d):
                for r in range(R):
                    row[r] += inv[i, c, r] * x[c, xo + u, r]
            for r in range(R):
                quad[u, r] += x[i, xo + u, r] * row[r]


@_inlined
def _features(psi, V, f, c, base, succ, U, R):  # pragma: no cover - compiled
    """``f[c, u] = Σ_j ψ_j(u) V[succ_j]`` for every run (``ψ_j(u) = psi[base + j·U + u]``): the sum
    from j = 0 in order (``0 + ψ_0 V_0``, then one term at a time), as one run alone adds it, two
    successors a pass so that each pass reads and writes ``f`` once for two terms."""
    if succ.shape[0] == 0:
        for u in range(U):
            for r in range(R):
                f[c, u, r] = 0.0
        return
    j0 = succ[0]
    for u in range(U):
        for r in range(R):
            f[c, u, r] = 0.0 + psi[base + u, r] * V[j0, r]
    jj = 1
    while jj + 1 < succ.shape[0]:
        j0, j1 = succ[jj], succ[jj + 1]
        b0 = base + jj * U
        for u in range(U):
            for r in range(R):
                f[c, u, r] = (f[c, u, r] + psi[b0 + u, r] * V[j0, r]) + psi[b0 + U + u, r] * V[j1, r]
        jj += 2
    if jj < succ.shape[0]:
        j0 = succ[jj]
        b0 = base + jj * U
        for u in range(U):
            for r in range(R):
                f[c, u, r] += psi[b0 + u, r] * V[j0, r]


@_jit
def plan_all(G, S, b, w):  # pragma: no cover - compiled
    """Every run's planning (:func:`_plan`) for episode ``b`` of the block (``w``: :func:`scratch`);
    a single run gets its own specialisation, whose loops run over the columns."""
    if S.Q.shape[0] == 1:
        _plan(G, S, b, w, 1)
    else:
        _plan(G, S, b, w, S.Q.shape[0])


@_inlined
def _plan(G, S, b, w, R):  # pragma: no cover - compiled
    """Every run's optimistic backward induction and greedy policy (Algorithm 1 lines 5–12 /
    Algorithm 2 lines 4–12) for episode ``b`` of the block (random tie-breaks): ``S.Q``, ``S.feat``,
    ``S.V``, ``S.Vmax``, ``S.greedy`` (``w``: :func:`scratch`). The runs share their geometry, so every
    step works on its distinct columns for all runs side by side, the run index innermost (the
    arithmetic of each run is the same sequence as one run alone: its result does not depend on the
    batch)."""
    psi, phi, bp, br, inv_p, th_p, gj_p = w.psi, w.phi, w.bp, w.br, w.inv_p, w.th_p, w.gj_p
    inv_r, th_r, gj_r, f, val, bonus, qd, dp, row, V = (w.inv_r, w.th_r, w.gj_r, w.f, w.val, w.bonus, w.qd,
                                                         w.dp, w.row, w.V)
    H, A, d1 = G.dims[_H], G.dims[_A], G.dims[_D1]
    tie = G.tie[0]
    for jp in range(G.offn[H], G.offn[H + 1]):                          # V_{H+1} = 0
        for r in range(R):
            V[jp, r] = S.V[r, jp]
    for h in range(H - 1, -1, -1):
        U, k, so, pofs, fo, uo = G.U[h], G.ksucc[h], G.soff[h], G.poff[h], G.foff[h], G.uoff[h]
        spd_inverses(S.Lr, S.ur, h, inv_r, th_r, gj_r, R)
        _dot_quad(th_r, inv_r, phi, uo, val, qd, row, U, R)                  # φᵀθ̂_r, ‖φ‖²_{Λ_r⁻¹}
        for u in range(U):
            for r in range(R):
                bonus[u, r] = br[h, r] * math.sqrt(max(qd[u, r], 0.0))
        if h == H - 1:                                                  # ϕ_H ≡ 0 (V_{H+1} = 0)
            for r in range(R):
                for q in range(d1 * U):
                    S.feat[r, fo + q] = 0.0
        else:
            spd_inverses(S.Lp, S.up, h, inv_p, th_p, gj_p, R)
            for c in range(d1):                                         # line 7: ϕ = Σ_j ψ(s_j|s,a) V_{h+1}(s_j)
                _features(psi, V, f, c, pofs + c * k * U, G.succ_at[so:so + k], U, R)
                for r in range(R):
                    for u in range(U):
                        S.feat[r, fo + c * U + u] = f[c, u, r]
            _dot_quad(th_p, inv_p, f, 0, dp, qd, row, U, R)                    # ϕᵀθ̂_p, ‖ϕ‖²_{Λ_p⁻¹}
            for u in range(U):
                for r in range(R):
                    val[u, r] = val[u, r] + dp[u, r]
                for r in range(R):
                    val[u, r] += bp[h, r] * math.sqrt(max(qd[u, r], 0.0))
        cap = float(H - h)                                              # line 10 (1-based: H − h + 1)
        for u in range(U):
            for r in range(R):
                val[u, r] = max(min(val[u, r] + bonus[u, r], cap), 0.0)
        on = G.offn[h]
        for r in range(R):
            po, ties = G.is_po[r], G.random_ties[r]
            Q = S.Q[r]
            for i in range(G.n[h]):
                jp = on + i
                col = jp * A
                best = -np.inf
                for a in range(A):
                    q = val[G.uinv[col + a], r]
                    Q[col + a] = q
                    if q > best:
                        best = q
                S.Vmax[r, jp] = best
                if po:                                                   # V = ⟨π, Q⟩
                    v = 0.0
                    for a in range(A):
                        v += S.pi[r, jp, a] * Q[col + a]
                    S.V[r, jp] = v
                    V[jp, r] = v
                    continue
                S.V[r, jp] = best                                        # max_a Q
                V[jp, r] = best
                # line 12: the lowest index (or a seeded random one) among the actions within TIE_TOL·H of the max
                thr = best - tie
                g = 0
                if ties:
                    s = G.scat[jp]
                    top = -1.0
                    for a in range(A):
                        wt = S.u_tie[b, r, h, s, a] if Q[col + a] >= thr else 0.0
                        if wt > top:
                            top, g = wt, a
                else:
                    for a in range(A):
                        if Q[col + a] >= thr:
                            g = a
                            break
                S.greedy[r, jp] = g


@_jit
def scratch(G):  # pragma: no cover - compiled
    """A fit's :class:`Work` arrays (made once per fit)."""
    d1, d2 = G.dims[_D1], G.dims[_D2]
    R = G.bp.shape[0]
    m = max(1, int(G.U.max())) if G.U.shape[0] else 1
    n = G.offn[-1]
    return Work(_run_last(G.psi), _run_last(G.phi_u), G.bp.T.copy(), G.br.T.copy(), _run_last(G.mean),
                _run_last(G.P), np.empty((d1, d1, R)), np.empty((d1, R)), np.empty((3, d1, R)),
                np.empty((d2, d2, R)), np.empty((d2, R)), np.empty((3, d2, R)), np.empty((d1, m, R)),
                np.empty((m, R)), np.empty((m, R)), np.empty((m, R)), np.empty((m, R)), np.empty(R),
                np.empty((n, R)), np.empty((n, R)), np.empty(R), np.empty(R))


@_jit
def _run_last(x):  # pragma: no cover - compiled
    """A copy of ``x`` with its first (run) axis moved last, contiguous."""
    R = x.shape[0]
    flat = x.reshape(R, -1)
    out = np.empty((flat.shape[1], R))
    for r in range(R):
        for q in range(flat.shape[1]):
            out[q, r] = flat[r, q]
    return out.reshape(x.shape[1:] + (R,))


# --------------------------------------------------------------------------- the episode
@_jit
def _inverse_cdf(cum, u):  # pragma: no cover - compiled
    """The first index whose cumulative weight exceeds ``u · cum[-1]`` (``privrl.envs.finite.inverse_cdf``)."""
    x = u * cum[-1]
    n = 0
    for i in range(cum.shape[0]):
        if cum[i] <= x:
            n += 1
    return min(n, cum.shape[0] - 1)


@_jit
def _rollout(G, S, r, b, cdf):  # pragma: no cover - compiled
    """Run r's episode on its model: the same draws as the models' samplers (first state, then per
    step the action for PO and the next state, inverse CDF; Bernoulli rewards ``u < r_h(s, a)``).
    ``cdf``: scratch of A entries."""
    H, A = G.dims[_H], G.dims[_A]
    s = _inverse_cdf(G.cum_init[r], S.u_env[b, r, H, 0])
    for h in range(H):
        jp = G.offn[h] + G.pos[h, s]
        S.s[r, h], S.j[r, h] = s, jp
        if G.is_po[r]:
            acc = 0.0
            for a in range(A):
                acc += S.pi[r, jp, a]
                cdf[a] = acc
            a = _inverse_cdf(cdf, S.u_act[b, r, h])
        else:
            a = S.greedy[r, jp]
        S.a[r, h] = a
        mean = G.mean[r, h, s, a]
        if G.bernoulli[r]:
            S.rew[r, h] = 1.0 if S.u_env[b, r, h, 1] < mean else 0.0
        else:
            S.rew[r, h] = mean
        s = _inverse_cdf(G.cum_P[r, h, s, a], S.u_env[b, r, h, 0])
    S.s[r, H], S.j[r, H] = s, G.offn[H] + G.pos[H, s]


@_jit
def _collect(G, S, r):  # pragma: no cover - compiled
    """Run r's contributions: ``ϕ_h(s_h, a_h)`` (this episode's, frozen), ``V_{h+1}(s_{h+1})``, ``φ(s_h, a_h)``."""
    H, A, d1, d2 = G.dims[_H], G.dims[_A], G.dims[_D1], G.dims[_D2]
    for h in range(H):
        jp, a = S.j[r, h], S.a[r, h]
        u = G.uinv[jp * A + a]
        for c in range(d1):
            S.x_p[r, h, c] = S.feat[r, G.foff[h] + c * G.U[h] + u]
        S.y_p[r, h] = S.V[r, S.j[r, h + 1]]
        for c in range(d2):
            S.x_r[r, h, c] = G.phi[r, S.s[r, h], a, c]


@_jit
def played_values(G, S, w):  # pragma: no cover - compiled
    """``S.v_pi = V^{π^k}`` of every run's played policy on its true model (backward induction),
    every run at once, the run index innermost, each run's arithmetic the same sequence as alone
    (``w``: :func:`scratch`). A batch of VI and PO runs makes both passes, each writing its own runs."""
    n_po = 0
    for r in range(S.Q.shape[0]):
        n_po += G.is_po[r]
    if n_po > 0:
        _played(G, S, w, S.Q.shape[0], True)
    if n_po < S.Q.shape[0]:
        _played(G, S, w, S.Q.shape[0], False)


@_inlined
def _played(G, S, w, R, po):  # pragma: no cover - compiled
    """:func:`played_values` for the PO runs (``⟨π, r + PV⟩``) or the VI runs (the greedy action's)."""
    mean, P, V, q, v = w.mean, w.P, w.V_played, w.q, w.v
    H, A = G.dims[_H], G.dims[_A]
    for jp in range(G.offn[H], G.offn[H + 1]):                          # V_{H+1} = 0
        for r in range(R):
            V[jp, r] = S.v_pi[r, jp]
    for h in range(H - 1, -1, -1):
        so, k_h = G.soff[h], G.ksucc[h]
        for i in range(G.n[h]):
            jp = G.offn[h] + i
            s = G.scat[jp]
            if po:
                for r in range(R):
                    v[r] = 0.0
                for a in range(A):
                    for r in range(R):
                        q[r] = mean[h, s, a, r]
                    for jj in range(k_h):
                        sj, vj = G.succ_state[so + jj], G.succ_at[so + jj]
                        for r in range(R):
                            q[r] += P[h, s, a, sj, r] * V[vj, r]
                    for r in range(R):
                        v[r] += S.pi[r, jp, a] * q[r]
            else:
                for r in range(R):
                    v[r] = mean[h, s, S.greedy[r, jp], r]
                for jj in range(k_h):
                    sj, vj = G.succ_state[so + jj], G.succ_at[so + jj]
                    for r in range(R):
                        v[r] += P[h, s, S.greedy[r, jp], sj, r] * V[vj, r]
            for r in range(R):
                V[jp, r] = v[r]
                if G.is_po[r] == po:
                    S.v_pi[r, jp] = v[r]


@_jit
def _policy_update(G, S, r, e):  # pragma: no cover - compiled
    """PO line 15 at every planned state: ``logits += η Q``, ``π = softmax(logits)`` (``e``: scratch
    of A entries). The first maximal logit's weight is ``exp(0) = 1`` exactly: not computed."""
    A, eta = G.dims[_A], G.eta[r]
    for jp in range(S.pi.shape[1]):
        top, at = -np.inf, 0
        for a in range(A):
            x = S.logits[r, jp, a] + eta * S.Q[r, jp * A + a]
            S.logits[r, jp, a] = x
            if x > top:
                top, at = x, a
        for a in range(at):
            e[a] = math.exp(S.logits[r, jp, a] - top)
        e[at] = 1.0
        for a in range(at + 1, A):
            e[a] = math.exp(S.logits[r, jp, a] - top)
        tot = 0.0
        for a in range(A):
            tot += e[a]
        for a in range(A):
            S.pi[r, jp, a] = e[a] / tot


@_jit
def _contributions_pass(C, S):  # pragma: no cover - compiled
    """True when every contribution is within its bound with a margin (these sums are not NumPy's,
    so a contribution near a bound is left to ``check_contributions``)."""
    R, H = S.x_p.shape[0], S.x_p.shape[1]
    for r in range(R):
        for h in range(H):
            n2 = 0.0
            for c in range(S.x_p.shape[2]):
                n2 += S.x_p[r, h, c] * S.x_p[r, h, c]
            if not math.sqrt(n2) <= C.x_bound[r, h] * (1 + _TOL) * (1 - _MARGIN):
                return False
            n2 = 0.0
            for c in range(S.x_r.shape[2]):
                n2 += S.x_r[r, h, c] * S.x_r[r, h, c]
            if not math.sqrt(n2) <= (1 + _TOL) * (1 - _MARGIN):
                return False
            y = S.y_p[r, h]
            if not (y >= -_TOL and y <= C.y_bound[r, h] * (1 + _TOL)):
                return False
            y = S.rew[r, h]
            if not (y >= -_TOL and y <= 1 + _TOL):
                return False
    return True


@_jit
def advance(G, S, C, w, k, phase, checked):  # pragma: no cover - compiled
    """Run episodes from ``(k, phase)`` until the end or until Python is needed; returns the new
    ``(k, phase, reason)``. ``checked``: the pending contributions were checked by NumPy; ``w``: the
    fit's :func:`scratch`."""
    K, step, batched = G.dims[_K], G.dims[_STEP] != 0, G.dims[_BATCHED] != 0
    R = S.Q.shape[0]
    per_action = np.empty(G.dims[_A])
    while k < K:
        b = k - S.clock[0]
        if phase == PLAN:
            if k >= S.clock[1]:
                return k, phase, NEED_DRAWS
            plan_all(G, S, b, w)
            phase = ROLLOUT
            if step:
                return k, phase, PLANNED
        if phase == ROLLOUT:
            played_values(G, S, w)
            for r in range(R):
                if G.model_row[r]:
                    _rollout(G, S, r, b, per_action)
                _collect(G, S, r)
                s0 = S.s[r, 0]                                           # V_1^*(s_1) − V_1^{π^k}(s_1)
                S.regret[r, k] = G.v_star[r, s0] - S.v_pi[r, G.pos[0, s0]]
                if G.is_po[r] and k < K - 1:
                    _policy_update(G, S, r, per_action)
            phase = INSERT
        if k == K - 1:                                                   # episode K's data is never sent (A9)
            return K, PLAN, DONE
        if not batched:
            return k, phase, PER_RUN
        if not checked and not _contributions_pass(C, S):
            return k, phase, CHECK
        if C.sizes[5] > 0 and C.ints[3] == C.ints[4]:
            return k, phase, NEED_NOISE
        floor = insert(C, S.x_p, S.y_p, S.x_r, S.rew, S.Lp, S.up, S.Lr, S.ur)
        checked = False
        k, phase = k + 1, PLAN
        if floor:
            return k, phase, FLOOR
        if step:
            return k, phase, STEP
    return k, phase, DONE


# --------------------------------------------------------------------------- batched statistics
@_jit
def insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur):  # pragma: no cover - compiled
    """Insert the R users' contributions and write the next statistics (:func:`release`); True
    when a noisy run's noise total may exceed its floor's screen (then NumPy decides the PD floor
    exactly).

    The operations of ``BatchedStatistics``' NumPy update, entry by entry: items
    ``x_p x_pᵀ, x_p y_p, x_r x_rᵀ, x_r y_r``; this round's noise ``scale · z`` (a local run adds it to
    its items and to its total; a BLT run advances its recurrence ``y = z − Σ_i ω_i s_i``,
    ``s_i ← θ_i s_i + y``, ``n ← n + y``; a tree run's node closes at level ``ctz(t)`` with running
    total ``below + noise``); ``exact ← exact + item``. Every entry (h, q) is done for all runs at
    once, the (kind-grouped) run index innermost."""
    nt, nb, nn = C.sizes[3], C.sizes[3] + C.sizes[4], C.sizes[5]
    if x_p.shape[0] > 1:
        return _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, x_p.shape[0], nt, nb, nn)
    if nt == 1:                                                          # a single run: one specialisation per kind
        return _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, 1, 1, 1, 1)
    if nb == 1:
        return _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, 1, 0, 1, 1)
    if nn == 1:
        return _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, 1, 0, 0, 1)
    return _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, 1, 0, 0, 0)


@_inlined
def _insert(C, x_p, y_p, x_r, y_r, Lp, up, Lr, ur, R, nt, nb, nn):  # pragma: no cover - compiled
    """:func:`insert` for ``R`` runs grouped at ``nt ≤ nb ≤ nn`` (constants for a single run)."""
    H = x_p.shape[1]
    d1, d2 = C.sizes[0], C.sizes[1]
    noisy = nn > 0 and C.ints[0] < C.ints[1]
    zpos = C.ints[3]
    t = C.ints[0] + 1
    level = 0
    while (t >> level) & 1 == 0:
        level += 1
    depth = C.ints[2]
    while depth > 0 and C.levels[depth - 1] < level:
        depth -= 1
    xs = C.runs                                                         # the contributions, run-last
    for k in range(R):
        r = C.order[k]
        for h in range(H):
            for c in range(d1):
                xs[h, c, k] = x_p[r, h, c]
            xs[h, d1, k] = y_p[r, h]
            for c in range(d2):
                xs[h, d1 + 1 + c, k] = x_r[r, h, c]
            xs[h, d1 + d2 + 1, k] = y_r[r, h]
    item, noise = C.per_run[0], C.per_run[1]
    for k in range(nn):
        noise[k] = 0.0                                                  # (stays 0 in a round without noise)
    for h in range(H):
        for q in range(C.sizes[2]):                                     # item q = xs[a_q] · xs[b_q]
            a, b = C.pairs[0, q], C.pairs[1, q]
            for k in range(R):
                item[k] = xs[h, a, k] * xs[h, b, k]
            _advance(C, h, q, item, noise, zpos, depth, noisy, nt, nb, nn, R)
    C.levels[depth] = level
    C.ints[2] = depth + 1
    C.ints[0] = t
    if noisy:
        C.ints[3] = zpos + 1
    return _release(C, Lp, up, Lr, ur, R, nt, nb, nn)


@_inlined
def _advance(C, h, q, item, noise, zpos, depth, noisy, nt, nb, nn, R):  # pragma: no cover - compiled
    """Entry (h, q) of every run (kind-grouped order: tree runs ``[0, nt)``, BLT ``[nt, nb)``, local
    ``[nb, nn)``, no noise ``[nn, R)``): this round's noise, the runs' noise state, the exact sum."""
    if noisy:
        for k in range(nn):
            c = C.draw_at[h * C.sizes[2] + q, k]
            noise[k] = C.scale[c, k] * C.z[k, zpos, c]
    for k in range(nt):                                                  # the tree node closed now
        below = C.stack[depth - 1, h, q, k] if depth > 0 else 0.0
        C.stack[depth, h, q, k] = below + noise[k]
    if noisy:
        for k in range(nt, nb):                                          # the BLT recurrence
            j = k - nt
            acc = C.omega[0, j] * C.blt_state[0, h, q, j]
            for i in range(1, C.theta.shape[0]):
                acc += C.omega[i, j] * C.blt_state[i, h, q, j]
            y = noise[k] - acc
            for i in range(C.theta.shape[0]):
                C.blt_state[i, h, q, j] = C.theta[i, j] * C.blt_state[i, h, q, j] + y
            C.blt_total[h, q, j] = C.blt_total[h, q, j] + y
        for k in range(nb, nn):                                          # a local user's message
            n = noise[k]
            item[k] = item[k] + n
            C.local_total[h, q, k - nb] = C.local_total[h, q, k - nb] + n
    for k in range(R):
        C.exact[h, q, k] = C.exact[h, q, k] + item[k]


@_jit
def release(C, Lp, up, Lr, ur):  # pragma: no cover - compiled
    """The statistics ``exact + noise total (+ shift·I)`` per run (the tree's covering nodes, the
    BLT's prefix noise, nothing more for local and non-private runs), written at the runs' own rows
    (``C.order``); True when a noisy run's ``‖N‖²_F`` exceeds its floor's screen (less a margin for
    the summation order)."""
    return _release(C, Lp, up, Lr, ur, C.exact.shape[2], C.sizes[3], C.sizes[3] + C.sizes[4], C.sizes[5])


@_inlined
def _release(C, Lp, up, Lr, ur, R, nt, nb, nn):  # pragma: no cover - compiled
    """:func:`release` for ``R`` runs grouped at ``nt ≤ nb ≤ nn``."""
    H = C.exact.shape[0]
    d1, d2 = C.sizes[0], C.sizes[1]
    depth = C.ints[2]
    rel, tot, n2p, n2r = C.per_run[2], C.per_run[3], C.per_run[4], C.per_run[5]
    order = C.order
    flag = False
    for h in range(H):
        for k in range(R):
            n2p[k], n2r[k] = 0.0, 0.0
        for q in range(C.sizes[2]):
            _total(C, h, q, depth, rel, tot, nt, nb, nn, R)
            a, b = C.pairs[0, q], C.pairs[1, q]
            if q < d1 * d1:
                for k in range(R):
                    Lp[order[k], h, a, b] = rel[k] + C.shift_p[h, q, k]
                    n2p[k] += tot[k] * tot[k]
            elif q < d1 * d1 + d1:
                for k in range(R):
                    up[order[k], h, a] = rel[k]
            elif q < d1 * d1 + d1 + d2 * d2:
                e = q - d1 * d1 - d1
                for k in range(R):
                    Lr[order[k], h, a - d1 - 1, b - d1 - 1] = rel[k] + C.shift_r[h, e, k]
                    n2r[k] += tot[k] * tot[k]
            else:
                for k in range(R):
                    ur[order[k], h, a - d1 - 1] = rel[k]
        for k in range(nn):
            if n2p[k] > C.screen_p[h, k] * (1 - 1e-6) or n2r[k] > C.screen_r[h, k] * (1 - 1e-6):
                flag = True
    return flag


@_inlined
def _total(C, h, q, depth, rel, tot, nt, nb, nn, R):  # pragma: no cover - compiled
    """Entry (h, q) of every run: ``rel = exact + noise total`` (a local run's noise is in its
    exact sum already) and ``tot`` the noise total of the noisy runs (``[0, nn)``)."""
    for k in range(nt):
        n = C.stack[depth - 1, h, q, k] if depth > 0 else 0.0
        rel[k] = C.exact[h, q, k] + n
        tot[k] = n
    for k in range(nt, nb):
        n = C.blt_total[h, q, k - nt]
        rel[k] = C.exact[h, q, k] + n
        tot[k] = n
    for k in range(nb, nn):
        rel[k] = C.exact[h, q, k]
        tot[k] = C.local_total[h, q, k - nb]
    for k in range(nn, R):
        rel[k] = C.exact[h, q, k]
