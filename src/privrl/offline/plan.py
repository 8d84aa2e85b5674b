"""Planning DP-APVI and DP-VAPVI before touching the data (``privrl plan``; :mod:`privrl.planning`).

Both planning functions build the estimator with the public parameters and read the noise from its
own calibration — :meth:`DPAPVI.count_noise <privrl.offline.DPAPVI.count_noise>` and
:meth:`DPVAPVI.linear_noise <privrl.offline.DPVAPVI.linear_noise>`, the plans a fit draws its noise
with (:mod:`privrl.offline.calibration`) — and set it against the typical value of each released
statistic under a stated assumption.

**DP-APVI** releases, at every step h, the visit counts ``n_sa`` of the S·A cells (h, s, a) and the
transition counts ``n_sas'`` of the S·A·S cells (h, s, a, s'), each entry with noise of std σ_sa
and σ_sas — zero cells included (privacy needs it). A fixed-horizon episode makes exactly one visit
per step, so the n·H visits of the data fill the H·S·A cells with n/(S·A) visits on average: the
typical count of an ``n_sa`` cell, assuming visits spread evenly over the cells of a step. Two
stated assumptions sharpen it: the logging policy uses A_u of the A actions (``admissible``) and an
episode takes L steps before it ends (``visits``; the rest of the horizon is spent absorbed, or
padded, in cells of their own): n·L/(H·S·A_u) over the cells that carry the episodes' visits. (On
the clinic task, 4 of 25 actions and about 6 of 20 steps: the cells carrying the patients' visits
average 1.9 times n/(S·A), and n·L/(H·S·A_u) within 2%.) A pair's visits spread evenly over its k
reachable next states (``next_states``; default 1, the most favourable case) give the typical
transition count, divided by k. With G public groups (``groups``) the algorithm runs on the G·A
cells of the aggregated states: S becomes G.

**DP-VAPVI** releases at each step two Gram matrices and three vectors (``LINEAR_STREAMS``). A Gram
matrix Σ φφᵀ over the K regression trajectories (K = ⌈n/2⌉ with ``split=True``) of features of norm
at most B has eigenvalues K·B²/d when the features spread evenly over the d directions; its noise is
set against that by the shift E/2 (``LinearNoise.shift``: the operator norm the noise stays below
with probability 1 − δ_fail/(5H)). A vector Σ φ·y with y in [0, c] (c = Δ/(2B) from the stream's
sensitivity Δ) has coordinates of typical size K·(B/√d)·(c/2) = K·Δ/(4√d); its per-coordinate noise
is the stream's σ. Each row reports the step with the worst ratio.
"""

from __future__ import annotations

import math

from privrl._validation import param_error
from privrl.offline.calibration import LINEAR_STREAMS, MATRIX_STREAMS, linear_noise_to_signal
from privrl.offline.estimators import DPAPVI, DPVAPVI
from privrl.planning import Assessment, Planner, Public, Released, count_cells, register_plan

__all__ = ["plan_dp_apvi", "plan_dp_vapvi"]


def _states(pub: Public, owner: str) -> int:
    """S, or G when the states are aggregated into G public groups (G ≤ S)."""
    S = int(pub.states)  # type: ignore[arg-type]
    if pub.groups is None:
        return S
    if pub.groups > S:
        raise param_error("groups", owner, f"at most the number of states ({S})", pub.groups)
    return int(pub.groups)


def plan_dp_apvi(pub: Public) -> Assessment:
    """The released counts of DP-APVI against their typical values (module docstring)."""
    owner = "plan dp-apvi"
    S, A, H, n = _states(pub, owner), int(pub.actions), int(pub.horizon), int(pub.n)  # type: ignore[arg-type]
    k = 1 if pub.next_states is None else int(pub.next_states)
    if k > S:
        raise param_error("next_states", owner, f"at most the number of states ({S})", k)
    used = A if pub.admissible is None else int(pub.admissible)
    if used > A:
        raise param_error("admissible", owner, f"at most the number of actions ({A})", used)
    steps = float(H) if pub.visits is None else float(pub.visits)
    if steps > H:
        raise param_error("visits", owner, f"at most the horizon ({H}): the steps an episode takes before it ends",
                          pub.visits)
    est = DPAPVI(budget=pub.budget, **pub.estimator_params)
    noise = est.count_noise(H, S, A, n)
    std_sa, std_sas = noise.noise_std
    cells = "groups" if pub.groups is not None else "states"
    n_sa = count_cells(n, H * S * used, per_episode=steps)
    if pub.visits is None and pub.admissible is None:
        how = (f"n/(S·A) = {n_sa:.3g}: each episode visits one cell per step, spread evenly over the S·A = "
               f"{S * A} cells of a step (S = {S} {cells})")
    else:
        how = (f"n·L/(H·S·A_u) = {n_sa:.3g}: each episode takes L = {steps:g} steps before it ends (then absorbing "
               f"or padded), spread evenly over the H·S·A_u = {H * S * used} cells of the A_u = {used} actions used "
               f"(S = {S} {cells})")
    rows = (
        Released("n_sa", "visits of one (h, s, a) cell", std_sa, n_sa, how),
        Released("n_sas'", "transitions of one (h, s, a, s') cell", std_sas, n_sa / k,
                 f"{n_sa:.3g}/k = {n_sa / k:.3g}: a pair's visits spread evenly over k = {k} next states"
                 + (" (the most favourable case; give next_states)" if pub.next_states is None else "")),
    )
    notes = [f"{noise.mechanism} noise ({est.get_params()['calibration']} calibration) on every one of the "
             f"H·S·A = {H * S * A} visit cells and H·S·A·S = {H * S * A * S:.3g} transition cells, visited or "
             f"not; replace-one sensitivity {noise.sensitivity[0]:.3g} per count family "
             f"({'ℓ2 √(2H)' if noise.mechanism == 'gaussian' else 'ℓ1 2H'})"]
    if pub.groups is not None:
        notes.append(f"with {pub.groups} public groups the fit runs on the aggregated states (map each "
                     "state to its group before fitting): the groups' transitions are an approximation")
    return Assessment(rows, tuple(notes))


def plan_dp_vapvi(pub: Public) -> Assessment:
    """The released Gram matrices and vectors of DP-VAPVI against their typical values (module docstring)."""
    owner = "plan dp-vapvi"
    params = pub.estimator_params
    if pub.feature_norm is not None:
        if "feature_norm_bound" in params:
            raise param_error("feature_norm", owner, "given once (not also as the feature_norm_bound parameter)",
                              pub.feature_norm)
        params["feature_norm_bound"] = pub.feature_norm
    est = DPVAPVI(budget=pub.budget, **params)
    p = est.get_params()
    H, d, n = int(pub.horizon), int(pub.features), int(pub.n)  # type: ignore[arg-type]
    B = float(p["feature_norm_bound"])
    K = math.ceil(n / 2) if p["split"] else n
    noise = est.linear_noise(H, d)
    rows = []
    for sig in linear_noise_to_signal(noise, K, B, d):
        if LINEAR_STREAMS.index(sig.name) in MATRIX_STREAMS:
            rows.append(Released(sig.name, "a Gram matrix Σ φφᵀ (noise: operator norm E/2)", sig.noise, sig.signal,
                                 f"K·B²/d = {sig.signal:.3g}: K = {K} regression trajectories, features of norm "
                                 f"B = {B:g} spread evenly over d = {d} directions"))
        else:
            rows.append(Released(sig.name, f"a vector Σ φ·y (per coordinate; worst step h = {sig.h})", sig.noise,
                                 sig.signal, f"K·Δ/(4√d) = {sig.signal:.3g}: y at half its range Δ/(2B), features "
                                 f"of norm B spread evenly over d = {d} directions"))
    released = sum(noise.released(j, h) for j in range(len(LINEAR_STREAMS)) for h in range(H))
    notes = (f"Gaussian noise ({p['calibration']} calibration) on the {released} statistics released over the "
             f"H = {H} steps",)
    return Assessment(tuple(rows), notes)


register_plan(Planner("dp-apvi", "DPAPVI", "DP-APVI (tabular offline RL): the noisy visit and transition counts",
                      plan_dp_apvi, required=("n", "states", "actions", "horizon"),
                      optional=("groups", "visits", "admissible", "next_states"), knobs=("n", "budget", "groups"),
                      budgets=("epsilon", "epsilon_delta", "rho")))
register_plan(Planner("dp-vapvi", "DPVAPVI", "DP-VAPVI (offline RL in linear MDPs): the noisy Gram matrices and "
                      "vectors", plan_dp_vapvi, required=("n", "horizon", "features"), optional=("feature_norm",),
                      knobs=("n", "budget"), budgets=("epsilon_delta", "rho")))
