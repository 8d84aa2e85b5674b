"""Planning DP-APVI and DP-VAPVI before touching the data (``privrl plan``; :mod:`privrl.planning`).

Both planning functions build the estimator with the public parameters and read the noise from its
own calibration — :meth:`DPAPVI.count_noise <privrl.offline.DPAPVI.count_noise>` and
:meth:`DPVAPVI.linear_noise <privrl.offline.DPVAPVI.linear_noise>`, the plans a fit draws its noise
with (:mod:`privrl.offline.calibration`) — and set it against the typical value of each released
statistic under a stated assumption.

**DP-APVI** releases, at every released step, the visit counts ``n_sa`` of the S_r·A cells and the
transition counts ``n_sas'`` of the S_r·A·S_r cells, each entry with noise of std σ_sa and σ_sas —
zero cells included (privacy needs it); S_r is S, or G with G public groups (``groups``). The plan
is that of the estimator's own route (its ``stationary``, ``max_visits``, ``cell_threshold``,
``fallback`` and constants, :mod:`privrl.offline.routes`): the sensitivity is the route's (√(2H) per
step, √2·H pooled, √(2m) capped), the typical count of a visited cell n/(S_r·A_u) per step and
n·κ/(S_r·A_u) pooled (κ ≤ L the visits an episode keeps under the cap; stated assumptions: L live
steps, ``visits``, default H; A_u actions used, ``admissible``, default A), a transition cell n_sa/k
(``next_states``, default 1). The rows set that noise against those counts; the plan's **verdict** is
the route's (:attr:`~privrl.offline.routes.RoutePlan.verdict`: the pair threshold, the cell
threshold, the privacy penalty and the fallback read too; with ``baseline="logging"`` the modelled
share of pairs the safe baseline supports, which is what such a fit can move), ``undecided`` where it
depends on what is not public — how well the groups describe the dynamics (``group_quality``) or what the behaviour
clone is worth (``clone_quality``), both assumptions the user may state. The notes rank every
candidate route (the states and the G groups × per step / pooled / capped × threshold × fallback)
and recommend the best; the knobs search the rows. Measured against the real-shaped grid in
``docs/real_shaped.md`` ("The plan").

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
from privrl.offline.one_step import BASELINE_ERROR, DPOneStep, stream_stds, support_level
from privrl.offline.routes import Route, RoutePlan, Shape, candidate_routes, plan_route, rank_routes
from privrl.planning import Assessment, Planner, Public, Released, register_plan

__all__ = ["plan_dp_apvi", "plan_dp_vapvi", "plan_dp_one_step"]


def _shape(pub: Public, owner: str) -> Shape:
    """The public sizes and stated assumptions of a DP-APVI or DP-OneStep plan, checked against each other."""
    S, A, H, n = int(pub.states), int(pub.actions), int(pub.horizon), int(pub.n)  # type: ignore[arg-type]
    if pub.groups is not None and pub.groups > S:
        raise param_error("groups", owner, f"at most the number of states ({S})", pub.groups)
    if pub.next_states is not None and pub.next_states > S:
        raise param_error("next_states", owner, f"at most the number of states ({S})", pub.next_states)
    if pub.admissible is not None and pub.admissible > A:
        raise param_error("admissible", owner, f"at most the number of actions ({A})", pub.admissible)
    if pub.visits is not None and pub.visits > H:
        raise param_error("visits", owner, f"at most the horizon ({H}): the steps an episode takes before it ends",
                          pub.visits)
    return Shape(n, S, A, H, visits=pub.visits, admissible=pub.admissible, next_states=pub.next_states,
                 group_quality=pub.group_quality, clone_quality=pub.clone_quality)


def _route_table(plans: list[RoutePlan]) -> list[str]:
    """One note per candidate route, best first."""
    out = []
    for i, rp in enumerate(plans):
        share = "?" if rp.share is None else f"{rp.share:.2f}"
        support = f"; modelled support of the safe baseline {rp.support:.2g}" if rp.baseline else ""
        out.append(f"route {i + 1}: {rp.route.name}: {rp.verdict} (predicted share of the best non-private gain "
                   f"{share}; n_sa noise/signal {rp.ratio_sa:.3g}, n_sas' {rp.ratio_sas:.3g}, sensitivity "
                   f"{rp.sensitivity:.3g}{support}) — {rp.reason}")
    return out


def plan_dp_apvi(pub: Public) -> Assessment:
    """The released counts of DP-APVI's route against their typical values, the route's verdict and
    every candidate route ranked (:mod:`privrl.offline.routes`; module docstring)."""
    owner = "plan dp-apvi"
    shape = _shape(pub, owner)
    params = pub.estimator_params
    if isinstance(params.get("state_groups"), (list, tuple)) or params.get("route") == "auto":
        raise param_error("params", owner, "explicit route parameters (the plan ranks the routes itself: give "
                          "the candidates' sizes as groups)", "route='auto' or a list of state_groups")
    est = DPAPVI(budget=pub.budget, **params)
    p = est._routes()
    if p["state_groups"] is not None:
        raise param_error("params", owner, "no state_groups array (give the number of public groups as groups)",
                          "state_groups")
    noise_of = est._route_noise(p, shape.horizon, shape.states, shape.actions, shape.n)
    k = est._constants(p)
    threshold = float(k["threshold_multiplier"])
    penalty = {"c2": float(k["c2"]), "delta_fail": float(p["delta_fail"])}
    support = float(p["support_count"]) if p["baseline"] == "logging" else None     # SPIBB's N∧: the safe baseline
    mine = Route(pub.groups, None if pub.groups is None else 0, bool(p["stationary"]), p["max_visits"],
                 float(p["cell_threshold"]), p["fallback"])
    this = plan_route(noise_of, shape, mine, threshold, support_count=support, **penalty)
    ranked = rank_routes(noise_of, shape, candidate_routes([] if pub.groups is None else [pub.groups],
                                                            variants=True), threshold, support, **penalty)
    rows = (
        Released("n_sa", "visits of one released (h, s, a) cell", this.noise_sa, this.count_sa, this.basis),
        Released("n_sas'", "transitions of one released (h, s, a, s') cell", this.noise_sas, this.count_sas,
                 f"n_sa/k = {this.count_sas:.3g}: a pair's visits spread evenly over k = "
                 f"{1 if pub.next_states is None else pub.next_states} next states"
                 + (" (k = 1: the most favourable case; give next_states)" if pub.next_states is None else "")),
    )
    noise = est._count_noise({**p, **mine.params()}, shape.horizon, pub.groups or shape.states, shape.actions,
                             shape.n)
    notes = [f"route {mine.name}: {noise.mechanism} noise ({p['calibration']} calibration), replace-one sensitivity "
             f"{this.sensitivity:.3g} per count family ({_sensitivity_words(mine)}); every released cell gets "
             "its noise, visited or not",
             f"verdict of the route: {this.verdict} — {this.reason}",
             "group quality and clone quality are not public: a grouped route (or one that falls back to the "
             "behaviour clone) is undecided unless you state them (group_quality, clone_quality: the share of the "
             "best non-private gain the groups / the clone keep, e.g. from a pilot or a simulator)",
             f"recommended: {ranked[0].route.name} ({ranked[0].verdict})", *_route_table(ranked)]
    if this.penalty >= shape.horizon:
        notes.insert(2, "the privacy penalty c2·S·H·Ē·ι/ñ of the 'constants' preset swamps the values: "
                        "constants='practical' sets c2 = 0 (docs/offline.md)")
    return Assessment(rows, tuple(notes), verdict=this.verdict, reason=this.reason)


def _sensitivity_words(route: Route) -> str:
    if not route.stationary:
        return "per step: ℓ2 √(2H)"
    if route.max_visits is None:
        return "pooled: ℓ2 √2·H"
    return f"pooled, capped at {route.max_visits} visits per pair: ℓ2 √(2m), m = c²⌊H/c⌋ + (H − c⌊H/c⌋)²"


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


def plan_dp_one_step(pub: Public) -> Assessment:
    """DP-OneStep's released first-visit counts against their typical values, and its verdict.

    A pair's released count N̂ = Ŷ + F̂ has noise std √2·σ₂; its typical value is m = n·L/(S·A_u)
    (L = ``visits``, default H, first visits an episode makes; A_u = ``admissible``, default A). The
    fit moves only on pairs whose count clears the family-wise support level z·√2·σ₂
    (:func:`~privrl.offline.one_step.support_level`): **hopeless** when the typical pair does not
    (the fit returns its baseline), **useful** when it clears twice the level, else marginal. The
    logging policy estimated from the counts is off by about ½·A·σ₂·√(2/π)/(n·L/S) in total
    variation (the fit warns above :data:`~privrl.offline.one_step.BASELINE_ERROR`). Checked on the
    real-shaped grid (docs/offline.md, "One private step of policy improvement")."""
    shape = _shape(pub, "plan dp-one-step")
    S, A, H, n = shape.states, shape.actions, shape.horizon, shape.n
    est = DPOneStep(budget=pub.budget, **pub.estimator_params)
    p = est.get_params()
    L = float(H if shape.visits is None else shape.visits)
    A_u = A if shape.admissible is None else int(shape.admissible)
    stds = stream_stds(pub.budget, H, p["value_share"], p["variance_share"])
    pair, state = n * L / (S * A_u), n * L / S
    level = support_level(p["support"], S * A) * math.sqrt(2.0) * stds[1]
    rows = (Released("N(s,a)", "released first visits of one pair", math.sqrt(2.0) * stds[1], pair,
                     f"n·L/(S·A_u) = {pair:.3g}: L = {L:g} first visits per episode over S = {S} states and "
                     f"A_u = {A_u} actions"),
            Released("V(s)", "released first visits of one state (its value's count)", math.sqrt(2.0) * stds[0],
                     state, f"n·L/S = {state:.3g}"))
    if pair < level:
        decided, reason = "hopeless", (f"a typical pair's {pair:.3g} first visits are below the support level "
                                       f"{level:.3g}: the fit returns its baseline")
    elif pair >= 2 * level:
        decided, reason = "useful", (f"a typical pair's {pair:.3g} first visits clear twice the support level "
                                     f"{level:.3g}")
    else:
        decided, reason = "marginal", (f"a typical pair's {pair:.3g} first visits barely clear the support level "
                                       f"{level:.3g}")
    error = min(1.0, 0.5 * A * stds[1] * math.sqrt(2.0 / math.pi) / state) if stds[1] > 0 else 0.0
    notes = (f"Gaussian noise (tight calibration): σ = {stds[0]:.3g} (state values), {stds[1]:.3g} (pair sums), "
             f"{stds[2]:.3g} (variance scalar); replace-one sensitivity √(2H) = {math.sqrt(2 * H):.3g}",
             f"verdict: {decided} — {reason}",
             f"without a public behaviour_policy the logging policy estimated from the counts is off by about "
             f"{error:.2g} in total variation per visit" + (f" (above {BASELINE_ERROR:g}: the fit will warn and may "
                                                           "play below the logging policy; give the public policy)"
                                                           if error > BASELINE_ERROR else ""))
    return Assessment(rows, notes, verdict=decided, reason=reason)


register_plan(Planner("dp-apvi", "DPAPVI", "DP-APVI (tabular offline RL): the noisy visit and transition counts",
                      plan_dp_apvi, required=("n", "states", "actions", "horizon"),
                      optional=("groups", "visits", "admissible", "next_states", "group_quality", "clone_quality"),
                      knobs=("n", "budget", "groups"),
                      budgets=("epsilon", "epsilon_delta", "rho")))
register_plan(Planner("dp-vapvi", "DPVAPVI", "DP-VAPVI (offline RL in linear MDPs): the noisy Gram matrices and "
                      "vectors", plan_dp_vapvi, required=("n", "horizon", "features"), optional=("feature_norm",),
                      knobs=("n", "budget"), budgets=("epsilon_delta", "rho")))
register_plan(Planner("dp-one-step", "DPOneStep", "DP-OneStep (tabular offline RL): the noisy first-visit value sums",
                      plan_dp_one_step, required=("n", "states", "actions", "horizon"),
                      optional=("visits", "admissible"), knobs=("n", "budget"), budgets=("epsilon_delta", "rho")))
