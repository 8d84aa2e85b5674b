"""The numba kernels of the tabular online family: post-processing, the counters' noise, planning,
evaluation, rollouts and the lockstep episode loop (:func:`run_chunk`).

Layout of one user's item (``D = H_c·S·A·(S + 1)`` coordinates): first the ``(h, s, a)`` counts
(index ``(h·S + s)·A + a``), then the ``(h, s, a, s′)`` counts (``H_c·S·A + ((h·S + s)·A + a)·S + s′``).
``H_c = H`` (one count per step, the non-stationary model of the spec) or ``H_c = 1`` (counts pooled
over the steps, for time-homogeneous MDPs: every ``h`` reads index ``h = 0``).

Algorithms (``algo``): 0 — Bernstein optimism with upper and lower values (DP-UCBVI, spec §3);
1 — Hoeffding optimism (UCBVI, Private-UCB-VI); 2 — Hoeffding optimistic policy evaluation with
mirror ascent (Private-UCB-PO). Counters (``counter``): 0 none, 1 binary tree, 2 BLT, 3 local (the
running sum of the users' noisy messages).
"""

from __future__ import annotations

import math

import numpy as np

from privrl._jit import compilers
from privrl._sort_kernels import sorted_down

jit, inlined, COMPILED = compilers()

NONE, TREE, BLT, LOCAL = 0, 1, 2, 3
BERNSTEIN, HOEFFDING, POLICY_OPT = 0, 1, 2


@jit
def project_row(nhat: np.ndarray, total: float, quarter: float, out: np.ndarray, v: np.ndarray) -> float:
    """Qiao & Wang §5.3 for one ``(h, s, a)``: ``x ≥ 0`` minimising ``max_j |x_j − n̂_j|`` subject to
    ``|Σ_j x_j − n̂(s, a)| ≤ E/4`` (``quarter``), written to ``out``; returns the optimal ``t``.

    Closed form: for a given t the feasible ``x_j`` lie in ``[max(0, n̂_j − t), n̂_j + t]`` (needs
    ``t ≥ −n̂_j``), so the sums reachable form ``[Σ max(0, n̂_j − t), Σ n̂_j + S t]``; t* is the least
    t for which that interval meets ``[n̂ − E/4, n̂ + E/4]`` (three monotone conditions). When even
    ``x = 0`` sums above ``n̂ + E/4 < 0`` the constraint is unattainable and ``x = 0`` is returned
    (the nearest feasible sum). ``v`` is scratch of length ≥ S."""
    S = nhat.shape[0]
    lo_sum = total - quarter
    hi_sum = total + quarter
    t = 0.0
    s_n = 0.0
    for j in range(S):
        if -nhat[j] > t:
            t = -nhat[j]
        s_n += nhat[j]
    t2 = (lo_sum - s_n) / S
    if t2 > t:
        t = t2
    if hi_sum < 0.0:
        for j in range(S):
            out[j] = 0.0
        return t
    # t3: the least t with Σ max(0, n̂_j − t) ≤ hi_sum (sorted descending);
    # only when the current t does not meet it already (then t3 ≤ t: the sort is skipped)
    over = 0.0
    for j in range(S):
        e = nhat[j] - t
        over += e if e > 0.0 else 0.0
    if over > hi_sum:
        for j in range(S):
            v[j] = nhat[j]
        w = sorted_down(v, S)
        acc = 0.0
        for j in range(S):
            acc += w[j]
            cand = (acc - hi_sum) / (j + 1)
            nxt = w[j + 1] if j + 1 < S else -np.inf
            if cand >= nxt and cand <= w[j]:
                if cand > t:
                    t = cand
                break
            if j == S - 1 and cand > t:      # (unreached when hi_sum >= 0; kept for safety)
                t = cand
    # x: start from max(n̂, 0) and move toward the box edge until the sum is in range
    s0 = 0.0
    for j in range(S):
        out[j] = nhat[j] if nhat[j] > 0.0 else 0.0
        s0 += out[j]
    if s0 > hi_sum:
        s_lo = 0.0
        for j in range(S):
            e = nhat[j] - t
            s_lo += e if e > 0.0 else 0.0
        lam = (s0 - hi_sum) / (s0 - s_lo) if s0 > s_lo else 1.0
        for j in range(S):
            e = nhat[j] - t
            e = e if e > 0.0 else 0.0
            out[j] = out[j] - lam * (out[j] - e)
    elif s0 < lo_sum:
        s_hi = s_n + S * t
        lam = (lo_sum - s0) / (s_hi - s0) if s_hi > s0 else 1.0
        for j in range(S):
            out[j] = out[j] + lam * (nhat[j] + t - out[j])
    return t


@inlined
def _already_feasible(nhat: np.ndarray, total: float, quarter: float, out: np.ndarray) -> bool:
    """Writes ``max(n̂, 0)`` to ``out`` and says whether its sum meets ``|Σ x − n̂| ≤ E/4``: then it is
    :func:`project_row`'s ``x`` whatever its t (the same values, summed in the same order), and the
    search for t can be skipped — the common case under the union-bound E."""
    s0 = 0.0
    for j in range(nhat.shape[0]):
        out[j] = nhat[j] if nhat[j] > 0.0 else 0.0
        s0 += out[j]
    return total - quarter <= s0 <= total + quarter


@jit
def postprocess(nhat: np.ndarray, H: int, S: int, A: int, E: float, n_sa: np.ndarray, n_sas: np.ndarray) -> None:
    """§5.3 for every ``(h, s, a)`` of a released item-shaped vector ``nhat`` (layout above):
    ``Ñ(s, a, s′) = x_{s′} + E/(2S)``, ``Ñ(s, a) = Σ x + E/2`` (x of :func:`project_row`, which runs
    only when ``max(n̂, 0)`` is not already feasible)."""
    x = np.empty(S)
    row = np.empty(S)
    scratch = np.empty(S)
    base = H * S * A
    for i in range(H * S * A):
        for j in range(S):
            row[j] = nhat[base + i * S + j]
        if not _already_feasible(row, nhat[i], E / 4.0, x):
            project_row(row, nhat[i], E / 4.0, x, scratch)
        tot = 0.0
        for j in range(S):
            n_sas[i * S + j] = x[j] + E / (2.0 * S)
            tot += x[j]
        n_sa[i] = tot + E / 2.0


@jit
def advance_noise(counter: int, t: int, z: np.ndarray, nodes: np.ndarray, state: np.ndarray, total: np.ndarray,
                  theta: np.ndarray, omega: np.ndarray) -> None:
    """Insert ``t`` (1-based) with fresh draw ``z``: ``total`` becomes the noise of release ``t``.

    Tree (Chan et al. 2011; :class:`privrl.privacy.tree.BinaryCounter`): node ``l = ctz(t)`` gets ``z``
    and the release carries the nodes of the set bits of ``t``. As in ``BinaryCounter``'s stack,
    ``nodes[l]`` keeps the running total of the live nodes of level ≥ l: the new node's total is the
    next live level's plus ``z`` (one addition per coordinate, no subtraction: no drift), and it is
    the release's noise.
    BLT (:func:`privrl.privacy.factorization.blt_advance`): ``y = z − Σ ω_i s_i``, ``s_i ← θ_i s_i + y``,
    ``total += y``. Local: ``total += z`` (the sum of the users' message noise)."""
    D = z.shape[0]
    if counter == TREE:
        level = 0
        while (t >> level) & 1 == 0:
            level += 1
        above = level + 1
        while above < nodes.shape[0] and (t >> above) & 1 == 0:
            above += 1
        if above < nodes.shape[0] and (t >> above) & 1:
            for j in range(D):
                nodes[level, j] = nodes[above, j] + z[j]
        else:
            for j in range(D):
                nodes[level, j] = z[j]
        for j in range(D):
            total[j] = nodes[level, j]
    elif counter == BLT:
        d = theta.shape[0]
        for j in range(D):
            y = z[j]
            for i in range(d):
                y -= omega[i] * state[i, j]
            for i in range(d):
                state[i, j] = theta[i] * state[i, j] + y
            total[j] += y
    elif counter == LOCAL:
        for j in range(D):
            total[j] += z[j]


@jit
def noise_releases(counter: int, Z: np.ndarray, levels: int, theta: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """The noise of releases ``1..n`` for the draws ``Z`` ``(n, D)`` (tests and audits)."""
    n, D = Z.shape
    out = np.zeros((n, D))
    nodes = np.zeros((levels, D))
    state = np.zeros((theta.shape[0], D))
    total = np.zeros(D)
    for t in range(n):
        advance_noise(counter, t + 1, Z[t], nodes, state, total, theta, omega)
        out[t] = total
    return out


@jit
def policy_value(P: np.ndarray, r: np.ndarray, init: np.ndarray, pi: np.ndarray, V: np.ndarray) -> float:
    """``V_1^π`` under ``init`` on the true model (``pi`` ``(H, S, A)`` probabilities; ``V`` work
    ``(H + 1, S)``)."""
    H, S, A = r.shape
    for s in range(S):
        V[H, s] = 0.0
    for h in range(H - 1, -1, -1):
        for s in range(S):
            v = 0.0
            for a in range(A):
                p = pi[h, s, a]
                if p > 0.0:
                    q = r[h, s, a]
                    for s2 in range(S):
                        q += P[h, s, a, s2] * V[h + 1, s2]
                    v += p * q
            V[h, s] = v
    out = 0.0
    for s in range(S):
        out += init[s] * V[0, s]
    return out


@jit
def plan(algo: int, n_sa: np.ndarray, n_sas: np.ndarray, r: np.ndarray, c_sqrt: float, c_lin: float,
         c_gap: float, pi: np.ndarray, Q: np.ndarray, Vu: np.ndarray, Vl: np.ndarray, pooled: bool,
         ptil: np.ndarray) -> None:
    """Optimistic backward induction on the released counts (flat ``n_sa`` ``(HSA,)``, ``n_sas``
    ``(HSAS,)``; ``pooled``: one count per ``(s, a)`` for every h): ``P̃ = Ñ(s, a, ·)/Ñ(s, a)`` (eq. 1),
    ``Q̄ = min(r + P̃V̄ + bonus, H − h)``; an ``(h, s, a)``
    with ``Ñ(s, a) ≤ 0`` gets ``Q̄ = H − h``, ``Q̲ = 0``. Values are clipped to the remaining horizon
    ``[0, H − h]`` (0-based h; Azar et al. 2017's ``H − h + 1``), a valid bound on ``Q*_h`` tighter than
    the spec's H. Ties among maximisers go to the action with the least ``Ñ(s, a)`` (then the lowest
    index): with the clip, an unexplored action is often tied with the greedy one.

    * ``BERNSTEIN`` (spec §3): bonus ``γ + Γ``, ``γ = c_gap·P̃(V̄ − V̲)``,
      ``Γ = c_sqrt·√(Var_P̃[(V̄ + V̲)/2]/Ñ) + c_lin/Ñ``; ``Q̲ = max(r + P̃V̲ − γ − Γ, 0)``; greedy π.
    * ``HOEFFDING``: bonus ``c_sqrt/√Ñ + c_lin/Ñ``; greedy π (lowest index among maximisers).
    * ``POLICY_OPT``: the same bonus, ``V̄_h = ⟨π_h, Q̄_h⟩`` with the given ``pi`` (not changed).
    ``Q`` ``(H, S, A)`` receives ``Q̄``; ``ptil`` (scratch, like ``n_sas``) receives ``P̃``, computed once per
    count row — once for all h when ``pooled`` (the same divisions, so the same values as per h)."""
    H, S, A = r.shape
    Hf = float(H)
    for i in range(n_sa.shape[0]):
        if n_sa[i] > 0.0:
            for s2 in range(S):
                ptil[i * S + s2] = n_sas[i * S + s2] / n_sa[i]
    for s in range(S):
        Vu[H, s] = 0.0
        Vl[H, s] = 0.0
    for h in range(H - 1, -1, -1):
        cap = Hf - h
        for s in range(S):
            best = -1.0
            best_a = 0
            best_n = 0.0
            for a in range(A):
                i = ((0 if pooled else h) * S + s) * A + a
                n = n_sa[i]
                if n <= 0.0:
                    Q[h, s, a] = cap
                    if cap > best or (cap == best and n < best_n):
                        best, best_a, best_n = cap, a, n
                    continue
                pu = 0.0
                pl = 0.0
                m1 = 0.0
                m2 = 0.0
                for s2 in range(S):
                    p = ptil[i * S + s2]
                    pu += p * Vu[h + 1, s2]
                    if algo == BERNSTEIN:
                        pl += p * Vl[h + 1, s2]
                        mid = 0.5 * (Vu[h + 1, s2] + Vl[h + 1, s2])
                        m1 += p * mid
                        m2 += p * mid * mid
                if algo == BERNSTEIN:
                    var = m2 - m1 * m1
                    var = var if var > 0.0 else 0.0
                    bonus = c_gap * (pu - pl) + c_sqrt * math.sqrt(var / n) + c_lin / n
                else:
                    bonus = c_sqrt / math.sqrt(n) + c_lin / n
                q = r[h, s, a] + pu + bonus
                Q[h, s, a] = q if q < cap else cap
                if algo == BERNSTEIN:
                    ql = r[h, s, a] + pl - bonus
                    pi[h, s, a] = ql if ql > 0.0 else 0.0   # scratch: Q̲ of action a, read below
                if Q[h, s, a] > best or (Q[h, s, a] == best and n < best_n):
                    best, best_a, best_n = Q[h, s, a], a, n
            if algo == POLICY_OPT:
                v = 0.0
                for a in range(A):
                    v += pi[h, s, a] * Q[h, s, a]
                Vu[h, s] = v
                continue
            lower = 0.0
            if algo == BERNSTEIN:
                i = ((0 if pooled else h) * S + s) * A + best_a
                lower = pi[h, s, best_a] if n_sa[i] > 0.0 else 0.0
            for a in range(A):
                pi[h, s, a] = 1.0 if a == best_a else 0.0
            Vu[h, s] = best
            Vl[h, s] = lower


@jit
def rollout(P: np.ndarray, init: np.ndarray, pi: np.ndarray, u: np.ndarray, item_idx: np.ndarray,
            pooled: bool) -> None:
    """One episode of ``pi`` from ``init`` with uniforms ``u`` ``(2H + 1,)`` (inverse CDFs): writes the
    ``2H`` nonzero coordinates of the user's item (layout above; repeated when ``pooled``) to ``item_idx``."""
    H, S, A, _ = P.shape
    Hc = 1 if pooled else H
    s = _inverse_cdf(init, u[0])
    for h in range(H):
        a = _inverse_cdf(pi[h, s], u[1 + 2 * h])
        s2 = _inverse_cdf(P[h, s, a], u[2 + 2 * h])
        i = ((0 if pooled else h) * S + s) * A + a
        item_idx[2 * h] = i
        item_idx[2 * h + 1] = Hc * S * A + i * S + s2
        s = s2


@inlined
def _inverse_cdf(p: np.ndarray, u: float) -> int:
    acc = 0.0
    n = p.shape[0]
    for j in range(n):
        acc += p[j]
        if u < acc:
            return j
    last = n - 1
    while last > 0 and p[last] <= 0.0:
        last -= 1
    return last


@jit
def run_chunk(algo: int, counter: int, P: np.ndarray, r: np.ndarray, init: np.ndarray, v_star: float,
              k0: int, n_episodes: int, E: np.ndarray, c_sqrt: np.ndarray, c_lin: np.ndarray, c_gap: np.ndarray,
              eta: np.ndarray, exact: np.ndarray, total: np.ndarray, nodes: np.ndarray, state: np.ndarray,
              theta: np.ndarray, omega: np.ndarray, Z: np.ndarray, U: np.ndarray, logits: np.ndarray,
              regret: np.ndarray, gap: np.ndarray, pac_gap: np.ndarray, pac_pi: np.ndarray) -> None:
    """Episodes ``k0 .. k0 + C − 1`` (0-based, ``C = U.shape[1]``) of ``R`` runs in lockstep.

    Per run ``i`` (its own ``exact`` counts, noise ``total``/``nodes``/``state``, draws ``Z[i]`` —
    one row per insert of the chunk — uniforms ``U[i]`` and PO ``logits``): release the counts
    (exact + noise), post-process them when private (E > 0), plan, record the exact pseudo-regret
    ``V*_1 − V^{π_k}_1`` (and DP-UCBVI's gap ``(V̄_1 − V̲_1)(s_1)``), run the episode and insert the
    user's item (not the last episode's: ``K − 1`` inserts), then the PO step
    ``logits += η Q̄`` (``π ∝ exp(logits)``). Bernstein: the PAC output of Algorithm 1 — the policy
    of the first episode whose gap is below every earlier one, starting from Δ = H (``pac_gap``,
    ``pac_pi``)."""
    R = exact.shape[0]
    H, S, A = r.shape
    D = exact.shape[1]
    Hc = D // (S * A * (S + 1))
    pooled = Hc != H
    HSA = Hc * S * A
    C = U.shape[1]
    n_sa = np.empty(HSA)
    n_sas = np.empty(HSA * S)
    ptil = np.empty(HSA * S)
    nhat = np.empty(D)
    pi = np.empty((H, S, A))
    Q = np.empty((H, S, A))
    Vu = np.empty((H + 1, S))
    Vl = np.empty((H + 1, S))
    Vw = np.empty((H + 1, S))
    item = np.empty(2 * H, dtype=np.int64)
    for i in range(R):
        ins = 0
        for c in range(C):
            k = k0 + c
            if k >= n_episodes:
                break
            if counter != NONE and E[i] > 0.0:
                for j in range(D):
                    nhat[j] = exact[i, j] + total[i, j]
                postprocess(nhat, Hc, S, A, E[i], n_sa, n_sas)
            else:
                for j in range(HSA):
                    n_sa[j] = exact[i, j]
                for j in range(HSA * S):
                    n_sas[j] = exact[i, HSA + j]
            if algo == POLICY_OPT:
                for h in range(H):
                    for s in range(S):
                        mx = -np.inf
                        for a in range(A):
                            if logits[i, h, s, a] > mx:
                                mx = logits[i, h, s, a]
                        z = 0.0
                        for a in range(A):
                            pi[h, s, a] = math.exp(logits[i, h, s, a] - mx)
                            z += pi[h, s, a]
                        for a in range(A):
                            pi[h, s, a] /= z
            plan(algo, n_sa, n_sas, r, c_sqrt[i], c_lin[i], c_gap[i], pi, Q, Vu, Vl, pooled, ptil)
            if algo == POLICY_OPT:   # plan left pi as given; evaluate it before the mirror step
                for h in range(H):
                    for s in range(S):
                        for a in range(A):
                            logits[i, h, s, a] += eta[i] * Q[h, s, a]
            regret[i, c] = v_star - policy_value(P, r, init, pi, Vw)
            g = 0.0
            for s in range(S):
                g += init[s] * (Vu[0, s] - Vl[0, s])
            gap[i, c] = g
            if algo == BERNSTEIN and g < pac_gap[i]:
                pac_gap[i] = g
                for h in range(H):
                    for s in range(S):
                        for a in range(A):
                            pac_pi[i, h, s, a] = pi[h, s, a]
            if k < n_episodes - 1:
                rollout(P, init, pi, U[i, c], item, pooled)
                for j in range(2 * H):
                    exact[i, item[j]] += 1.0
                if counter != NONE:
                    advance_noise(counter, k + 1, Z[i, ins], nodes[i], state[i], total[i], theta, omega)
                ins += 1
