"""How right is ``privrl plan dp-apvi``'s route model? Predicted against measured on the real-shaped grid.

Two checks (``docs/real_shaped.md``, "The plan"):

1. **Noise-to-signal** (``plan-route-ratio`` lines): for every instance of
   :data:`privrl.envs.real_shaped.INSTANCES`, n and route of ``bench_real_shaped.ALL_ROUTES``, the
   plan's ratio (:func:`privrl.offline.routes.plan_route`: the estimator's noise std over the modelled
   typical count) against the measured one — the same noise std over the *real* typical released count
   on the instance's data (the logging policy's episodes, padded, as ``bench_real_shaped`` draws them
   for seed 0): the count of the released cell a logged visit falls in, Σc²/Σc over the live cells
   (the absorbing states' cells excluded: they carry no decision), for the visit counts ``n_sa`` and
   the transition counts ``n_sas'``. No fit: the statistics only. The plan is given what a user
   would state from a public simulator of the task: L = the logging policy's expected live steps,
   A_u = the instance's actions per state (its label), k = the effective number of next states
   (groups) of a live pair, 1/Σp² averaged over the logging policy's visits (the counts spread evenly
   over k cells have the same Σc²/Σc).
2. **Verdict** (``plan-route-verdict`` lines, then ``plan-route-agreement``): for every (instance,
   route, n, ε) cell fitted in ``benchmarks/results/real_shaped_*.jsonl`` (the committed fits, read
   only), the plan's verdict against the measured gain: useful ⇔ the mean fraction of the best
   non-private gain over the seeds ≥ 0.25. Twice: without ``group_quality`` (grouped routes are
   undecided: counted apart) and with the two non-public qualities stated: ``group_quality`` as the
   non-private grouped APVI's measured share and ``clone_quality`` as the share of the behaviour
   fallback's clone on the route's grid (each state's, or each group's, most logged action; valued
   on the model) — what a pilot study or a public simulator would state; an oracle for the groups
   and the habit, not for the noise. Routes with the safe baseline (``/safe``) are planned with
   its support (SPIBB's N∧ = 10, :mod:`privrl.offline.routes`, "Support") and also counted apart
   (``which`` ending in ``/safe``; ``--noise-only`` plans them without it); ``dp/auto`` fits are
   skipped (their route is the plan's choice).

    python benchmarks/bench_plan_routes.py > benchmarks/results/plan_routes.jsonl
    python benchmarks/bench_plan_routes.py --table benchmarks/results/plan_routes.jsonl   # the docs' tables
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _util import cpu_seconds, emit  # noqa: E402
from bench_real_shaped import ALL_ROUTES, DELTA, peak_mb  # noqa: E402

RESULTS = os.path.join(os.path.dirname(__file__), "results")
EPSILONS = (1.0, 10.0)
NS = (10_000, 100_000)


def route_of(name: str, G: int) -> Any:
    """The :class:`~privrl.offline.routes.Route` of a ``bench_real_shaped`` route name (None for
    ``dp/auto``: its route is the plan's own choice, not a fixed route to check)."""
    from privrl.offline.routes import Route

    kw = ALL_ROUTES[name]
    if kw.get("route") == "auto":
        return None
    return Route(G if kw["groups"] else None, 0 if kw["groups"] else None, kw["stationary"],
                 kw.get("max_visits"), kw["cell_threshold"], kw["fallback"])


#: plan the /safe routes without the baseline's support model (``--noise-only``: the comparison)
NOISE_ONLY = False


def is_safe(name: str) -> bool:
    return ALL_ROUTES[name].get("baseline") == "logging"


def support_count(name: str) -> float | None:
    """SPIBB's N∧ of a route with the safe baseline (``/safe``: the estimator's default 10), else None."""
    return 10.0 if is_safe(name) and not NOISE_ONLY else None


def noise_of(epsilon: float, H: int, S: int, A: int, n: int) -> Any:
    """The estimator's own noise plan of a route (``constants="practical"``, as the committed fits)."""
    from privrl import PrivacyBudget
    from privrl.offline import DPAPVI

    def noise(route: Any) -> Any:
        est = DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=DELTA), constants="practical", **route.params())
        return est.count_noise(H, route.groups or S, A, n)
    return noise


def measured_counts(model: Any, arrays: dict[str, np.ndarray], route: Any) -> tuple[float, float]:
    """(typical n_sa, typical n_sas') of the route's released statistics: Σc²/Σc over the live cells."""
    from privrl.offline.grouping import grouped_statistics

    S, A = model.n_states, model.n_actions
    groups = model.groups if route.groups is not None else None
    stats = grouped_statistics(arrays, groups, S, A, stationary=route.stationary, max_visits=route.max_visits)
    Hs, Ss, As = stats.shape
    dead = model.terminal_states if groups is None else np.isin(np.arange(Ss), groups[model.terminal_states])
    live_state = ~dead[(stats.keys // Ss // As) % Ss]
    sas = stats.values[live_state].astype(float)
    sa = np.bincount(stats.keys[live_state] // Ss, weights=sas, minlength=Hs * Ss * As)
    sa = sa[sa > 0]
    return float((sa**2).sum() / sa.sum()), float((sas**2).sum() / sas.sum())


def public_assumptions(model: Any, grouped: bool) -> dict[str, float]:
    """L, A_u and k as a user would state them from a public simulator (module docstring)."""
    from privrl.envs.real_shaped import occupancy

    d = occupancy(model, model.logging_policy)                   # (H, S), live mass
    pi = model.logging_policy                                    # (S, A)
    live = ~model.terminal_states
    used = (pi > 0).sum(axis=1)
    nxt = model.next_states if not grouped else model.groups[model.next_states]     # (S, A, k)
    simpson = np.zeros(pi.shape)                                 # Σ_s' P(s'|s, a)² over the (grouped) s'
    for s in np.flatnonzero(live):
        for a in np.flatnonzero(pi[s] > 0):
            p = np.bincount(nxt[s, a], weights=model.probs[s, a])
            simpson[s, a] = float(p @ p)
    w = d.sum(axis=0)[:, None] * pi                              # visits per pair
    w[~live] = 0.0
    return {"visits": float(d.sum()), "admissible": int(round(float((d.sum(axis=0) * live) @ used
                                                                     / (d.sum(axis=0) * live).sum()))),
            "next_states": max(1, int(round(float(w.sum() / (w * simpson).sum()))))}


def clone_value(model: Any, grouped: bool) -> float:
    """The value of the behaviour fallback's clone on the route's grid: each state's most logged
    action, or (grouped) each group's most logged action over its states, weighted by the logging
    policy's occupancy (what a user would state from a public simulator)."""
    from privrl.envs.real_shaped import occupancy

    pi = model.logging_policy
    if not grouped:
        return float(model.value(pi.argmax(axis=1)))
    weights = occupancy(model, pi).sum(axis=0)[:, None] * pi                    # (S, A) visits
    votes = np.zeros((int(model.groups.max()) + 1, pi.shape[1]))
    np.add.at(votes, model.groups, weights)
    return float(model.value(votes.argmax(axis=1)[model.groups]))


def ratios(names: list[str]) -> list[dict[str, Any]]:
    from privrl.envs.real_shaped import INSTANCES
    from privrl.offline._common import padded_episodes
    from privrl.offline.routes import Shape, plan_route

    rows = []
    for name in names:
        model = INSTANCES[name].build()
        S, A, H = model.n_states, model.n_actions, model.horizon
        G = int(model.groups.max()) + 1
        assume = {g: public_assumptions(model, g) for g in (False, True)}
        for n in NS:
            data = model.sample(model.logging_policy, n, rng=10_000, pad_to_horizon=H)
            arrays = padded_episodes(data, "bench", n_states=S, n_actions=A)
            for rname in ALL_ROUTES:
                route = route_of(rname, G)
                if route is None:
                    continue
                start, cpu = time.perf_counter(), cpu_seconds()
                sa, sas = measured_counts(model, arrays, route)
                shape = Shape(n, S, A, H, **assume[route.groups is not None])
                for eps in EPSILONS:
                    p = plan_route(noise_of(eps, H, S, A, n), shape, route, threshold_multiplier=0.25, c2=0.0)
                    rows.append(emit("plan-route-ratio", instance=name, route=rname, n=n, epsilon=eps,
                                     assumptions=assume[route.groups is not None],
                                     predicted_sa=p.ratio_sa, measured_sa=p.noise_sa / sa,
                                     predicted_sas=p.ratio_sas, measured_sas=p.noise_sas / sas,
                                     typical_sa=sa, modelled_sa=p.count_sa, typical_sas=sas, modelled_sas=p.count_sas,
                                     seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu,
                                     peak_mb=peak_mb()))
    return rows


def measured_gains() -> tuple[dict[tuple[Any, ...], float], dict[tuple[str, int], float], dict[tuple[str, int], float]]:
    """Mean fraction of the best non-private gain per (instance, route, n, ε) over the committed fits
    (a fit in two files counts once), the grouped APVI's per (instance, n) and the mean best
    non-private gain per (instance, n)."""
    fits: dict[tuple[Any, ...], float] = {}
    best: dict[tuple[Any, ...], float] = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "real_shaped_*.jsonl"))):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("name") == "real-shaped" and r.get("fraction_of_best_gain") is not None:
                    fits[(r["instance"], r["route"], r["n"], r["epsilon"], r["seed"])] = r["fraction_of_best_gain"]
                    best[(r["instance"], r["n"], r["seed"])] = r["best_nonprivate_gain"]
    cells: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for (inst, route, n, eps, _), frac in fits.items():
        cells[(inst, route, n, eps)].append(frac)
    mean = {k: sum(v) / len(v) for k, v in cells.items()}
    grouped = {(k[0], k[2]): v for k, v in mean.items() if k[1] == "apvi/groups/pooled"}
    gains: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (inst, n, _), g in best.items():
        gains[(inst, n)].append(g)
    return ({k: v for k, v in mean.items() if k[3] is not None}, grouped,
            {k: sum(v) / len(v) for k, v in gains.items()})


def verdicts(names: list[str]) -> list[dict[str, Any]]:
    from privrl.envs.real_shaped import INSTANCES, measure_knobs
    from privrl.offline.routes import UNDECIDED, Shape, plan_route

    gains, grouped, best = measured_gains()
    rows = []
    models = {name: INSTANCES[name].build() for name in names}
    knobs = {name: measure_knobs(model) for name, model in models.items()}
    clones = {(name, g): clone_value(model, g) for name, model in models.items() for g in (False, True)}
    for (inst, rname, n, eps), frac in sorted(gains.items(), key=lambda kv: str(kv[0])):
        if inst not in models:
            continue
        model = models[inst]
        S, A, H = model.n_states, model.n_actions, model.horizon
        route = route_of(rname, int(model.groups.max()) + 1)
        if route is None:
            continue
        assume = public_assumptions(model, route.groups is not None)
        out = {}
        clone = (clones[(inst, route.groups is not None)] - knobs[inst]["logging_value"]) / best[(inst, n)]
        for label, quality in (("unstated", None), ("stated", grouped[(inst, n)])):
            shape = Shape(n, S, A, H, group_quality=quality, clone_quality=None if quality is None else clone,
                          **assume)
            p = plan_route(noise_of(eps, H, S, A, n), shape, route, threshold_multiplier=0.25, c2=0.0,
                           support_count=support_count(rname))
            out[label] = p.verdict
            out[f"{label}_reason"] = p.reason
        measured = frac >= 0.25
        rows.append(emit("plan-route-verdict", instance=inst, route=rname, n=n, epsilon=eps, measured=frac,
                         measured_useful=measured, group_quality=grouped[(inst, n)], clone_quality=clone,
                         verdict=out["unstated"],
                         verdict_with_quality=out["stated"], reason_with_quality=out["stated_reason"],
                         agrees=None if out["unstated"] == UNDECIDED else (out["unstated"] == "useful") == measured,
                         agrees_with_quality=None if out["stated"] == UNDECIDED else
                         (out["stated"] == "useful") == measured,
                         seconds=0.0, cpu_seconds=0.0, peak_mb=peak_mb()))
    safe = [r for r in rows if is_safe(r["route"])]
    for subset, cells in (("", rows), ("/safe", safe)):      # /safe: the routes with the baseline's support model
        for key in ("agrees", "agrees_with_quality"):
            decided = [r[key] for r in cells if r[key] is not None]
            emit("plan-route-agreement", which=key + subset, cells=len(cells), decided=len(decided),
                 agree=sum(decided), share=sum(decided) / len(decided) if decided else None, seconds=0.0,
                 cpu_seconds=0.0, peak_mb=peak_mb())
    return rows


def _short(route: str) -> str:
    return route.removeprefix("dp/")


def table(path: str) -> None:
    """The markdown tables of ``docs/real_shaped.md`` ("The plan") from a run's JSON lines."""
    rows = [json.loads(line) for line in open(path)]
    ratio = [r for r in rows if r["name"] == "plan-route-ratio"]
    print("| route | n_sa predicted / measured (min–max) | n_sas' predicted / measured (min–max) | n_sa within 2x |")
    print("|---|---|---|---|")
    for route in dict.fromkeys(r["route"] for r in ratio if r["epsilon"] == EPSILONS[0]):
        rs = [r for r in ratio if r["route"] == route and r["epsilon"] == EPSILONS[0]]
        sa = [r["predicted_sa"] / r["measured_sa"] for r in rs]
        sas = [r["predicted_sas"] / r["measured_sas"] for r in rs]
        ok = sum(0.5 <= x <= 2 for x in sa)
        print(f"| {_short(route)} | {min(sa):.2f}–{max(sa):.2f} | {min(sas):.2f}–{max(sas):.2f} | {ok}/{len(sa)} |")
    verdict = [r for r in rows if r["name"] == "plan-route-verdict"]
    print("\n| route | cells | decided (unstated) | agree (unstated) | agree (qualities stated) |")
    print("|---|---|---|---|---|")
    for route in sorted({r["route"] for r in verdict}):
        rs = [r for r in verdict if r["route"] == route]
        decided = [r["agrees"] for r in rs if r["agrees"] is not None]
        print(f"| {_short(route)} | {len(rs)} | {len(decided)} | {sum(decided)} | "
              f"{sum(bool(r['agrees_with_quality']) for r in rs)} |")
    print("\nDisagreeing cells (qualities stated):\n")
    for r in verdict:
        if r["agrees_with_quality"] is False:
            print(f"- `{r['instance']}` {_short(r['route'])}, n = {r['n']}, ε = {r['epsilon']:g}: measured "
                  f"{r['measured']:.2f}, plan {r['verdict_with_quality']} ({r['reason_with_quality']})")


def main() -> None:
    from privrl.envs.real_shaped import INSTANCES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=None, help="comma-separated instance names (default: all)")
    ap.add_argument("--skip-ratios", action="store_true", help="only the verdicts (no statistics drawn)")
    ap.add_argument("--noise-only", action="store_true", help="plan the /safe routes on noise alone (no support "
                    "model): the comparison")
    ap.add_argument("--table", default=None, help="print the markdown tables of a run's JSON lines, nothing else")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return
    global NOISE_ONLY
    NOISE_ONLY = args.noise_only
    names = args.instances.split(",") if args.instances else list(INSTANCES)
    if not args.skip_ratios:
        ratios(names)
    verdicts(names)


if __name__ == "__main__":
    main()
