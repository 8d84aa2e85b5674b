"""Real-shaped grid: today's APVI / DP-APVI routes on every instance of privrl.envs.real_shaped.

For each instance of the grid (:data:`privrl.envs.real_shaped.INSTANCES`), n and seed, one logged
dataset (the logging policy, episodes padded to H) is fitted by the non-private routes (APVI) and by
every private route at every ε (DP-APVI, ``constants="practical"``, δ = 10⁻⁶), and each policy is
valued exactly on the model. One JSON line per fit (``name: real-shaped``): instance, route, n, ε,
seed, ``value``, ``gain`` = value − logging value, ``fraction_of_best_gain`` = gain / the best
non-private gain on the same data (the best APVI route's, ``best_nonprivate_gain``),
``fraction_of_optimal_gain`` = gain / (optimum − logging), ``utility_warning`` (a UtilityWarning
fired), ``cpu_seconds`` and ``seconds`` of the fit, ``peak_mb`` of the process so far. One line per
instance (``real-shaped-instance``) with its measured knobs, and with ``--summary`` one line per
(instance, route, n, ε) (``real-shaped-summary``: mean and standard error over the seeds).

Routes: a DP-APVI route is states or groups × per-step or pooled (``stationary``) × ``max_visits``
(pooled only) × ``cell_threshold`` × ``fallback``; ``--routes default`` runs the eight of
:data:`DEFAULT_ROUTES`, ``--routes all`` the whole product (24) and ``dp/auto``. ``dp/auto`` and
``apvi/auto`` are the recommended route (``route="auto"``, the instance's groups the one candidate;
the row's ``chosen`` names the route it played); ``dp/share<s>/auto`` is it with ``logging_share=s`` (the
per-state logging counts, :data:`SHARES`) and ``dp/public-logging/auto`` with the instance's logging policy
given as public (``behaviour_policy``: docs/offline.md, "Never below the logging policy");
``--apvi-routes`` limits the APVI routes to the
reference ones plus those named, and ``--auto-summary FILES`` prints the auto routes' summary.
``--seed-start k`` runs seeds k, k + 1, ...; ``--warn-summary FILES [--warn-seeds 5-9]`` prints the
UtilityWarning's rates (losing fits that warned, gaining fits that warned, the silent losers) per
scope (the routes docs/offline.md recommends, the auto routes, the plain references, all) and
privacy, as JSON lines (``real-shaped-warn-summary``); each fit row carries ``evidence_gain`` (G) and
``evidence_bound`` (the bound the warning reads).

    python benchmarks/bench_real_shaped.py --seeds 10 --routes dp/auto --apvi-routes apvi/auto --summary

    python benchmarks/bench_real_shaped.py --quick                      # 2 instances, 2 seeds (minutes)
    python benchmarks/bench_real_shaped.py --seeds 5 --summary          # the grid, n ∈ {1e4, 1e5}, ε ∈ {1, 10}

``--streaming`` instead measures the streamed statistics (privrl.data.streaming): a log of
``--stream-n`` transitions of the real-like instance written to Parquet piece by piece, then
streamed into DP-APVI's per-step statistics and into the grouped/pooled/capped ones, each in a fresh
process (peak RSS of the process, ``ru_maxrss``; ``real-shaped-stream`` lines), after a check on a
small log that the streamed counts are identical to the in-memory ones (``real-shaped-stream-check``);
when the largest size is below the 10⁸-transition target, the target is projected linearly from the
measured sizes (``--stream-n 1e8`` runs it: about 5 minutes to write the log, 3 to stream it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

DELTA = 1e-6
ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
QUICK_INSTANCES = ("high-agreement/sparse/narrow/good-clone", "low-agreement/dense/wide/weak-clone")

#: the non-private routes: name -> APVI keyword arguments (the best of them is the reference gain)
APVI_ROUTES: dict[str, dict[str, Any]] = {
    "apvi/states/per-step": {},
    "apvi/states/pooled": {"stationary": True, "fallback": "behaviour"},
    "apvi/groups/pooled": {"groups": True, "stationary": True, "fallback": "behaviour"},
}
#: the reference routes (their best gain is the "best non-private gain"): the three above
REFERENCE_ROUTES = tuple(APVI_ROUTES)


def safe(name: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route with the baseline (``baseline="logging"``; per-state routes shrink the estimated
    logging policy toward the public groups: ``baseline_groups``): name + ``/safe``."""
    return f"{name}/safe", {**kwargs, "baseline": "logging", "baseline_groups": not kwargs.get("groups", False)}


APVI_ROUTES.update(dict(safe(k, v) for k, v in list(APVI_ROUTES.items())))
#: the recommended route (``route="auto"``, the instance's groups the one public candidate); its
#: choice is in the row's ``chosen``
AUTO: dict[str, Any] = {"route": "auto", "groups": True}
APVI_ROUTES["apvi/auto"] = AUTO


def dp_route(groups: bool, pooled: bool, max_visits: int | None, threshold: float, fallback: str
             ) -> tuple[str, dict[str, Any]]:
    """(name, DPAPVI keyword arguments) of one private route; ``groups`` is resolved per instance."""
    name = "/".join(["dp", "groups" if groups else "states", "pooled" if pooled else "per-step"]
                    + ([f"mv{max_visits}" if max_visits else "all-visits"] if pooled else [])
                    + [f"{threshold:g}sigma", fallback])
    kwargs: dict[str, Any] = {"groups": groups, "stationary": pooled, "cell_threshold": threshold,
                              "fallback": fallback}
    if pooled and max_visits:
        kwargs["max_visits"] = max_visits
    return name, kwargs


ALL_ROUTES = dict(dp_route(g, p, mv, t, f) for g, p, mv, t, f in itertools.product(
    (False, True), (False, True), (None, 1), (0.0, 3.0), ("tie-break", "behaviour")) if p or mv is None)
ALL_ROUTES.update(dict(safe(k, v) for k, v in list(ALL_ROUTES.items())))
ALL_ROUTES["dp/auto"] = AUTO
#: the auto route with a declared share of the budget for the per-state logging counts (``logging_share``; the
#: name ends in ``auto`` so ``--auto-summary`` reads it), and with a public logging policy (``behaviour_policy``)
SHARES = (0.0, 0.02, 0.03, 0.05, 0.1, 0.2)
ALL_ROUTES.update({f"dp/share{s:g}/auto": {**AUTO, "logging_share": s} for s in SHARES})
ALL_ROUTES["dp/public-logging/auto"] = {**AUTO, "behaviour_policy": True}
DEFAULT_ROUTES = [
    "dp/states/per-step/3sigma/behaviour",
    "dp/states/pooled/all-visits/3sigma/behaviour",
    "dp/states/pooled/mv1/3sigma/behaviour",          # the per-state pooled route
    "dp/states/pooled/mv1/3sigma/tie-break",
    "dp/groups/per-step/3sigma/behaviour",
    "dp/groups/pooled/mv1/3sigma/behaviour",          # the real-size route
    "dp/groups/pooled/mv1/3sigma/tie-break",
    "dp/groups/pooled/mv1/0sigma/behaviour",
]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def fit(make: Callable[[], Any], data: Any, reward: Any, seed: int) -> tuple[Any, float, float, list[str]]:
    """(fitted estimator, wall s, CPU s, warning categories) of one fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start, cpu = time.perf_counter(), time.process_time()
        est = make().fit(data, reward, rng=seed)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return est, seconds, cpu, sorted({w.category.__name__ for w in caught})


def estimator(model: Any, kwargs: dict[str, Any], epsilon: float | None) -> Callable[[], Any]:
    from privrl import PrivacyBudget
    from privrl.offline import APVI, DPAPVI

    args = dict(kwargs)
    groups = model.groups if args.pop("groups", False) else None
    if args.get("route") == "auto":
        groups = [groups]                     # the list of candidate groupings
    if "baseline_groups" in args:
        args["baseline_groups"] = model.groups if args["baseline_groups"] else None
    if args.pop("behaviour_policy", False):
        args["behaviour_policy"] = model.logging_policy
    if epsilon is None:
        return lambda: APVI(constants="practical", state_groups=groups, **args)
    return lambda: DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=DELTA), constants="practical",
                          state_groups=groups, **args)


def chosen(est: Any) -> str | None:
    """The route a fit played, named as :func:`dp_route` names it without ``dp/`` (APVI: 0sigma; ``/safe`` with the
    baseline); None for an estimator without ``route_``."""
    route = getattr(est, "route_", None)
    if route is None:
        return None
    name = dp_route(route["state_groups"] is not None, route["stationary"], route["max_visits"],
                    route.get("cell_threshold", 0.0), route["fallback"])[0]
    return name.removeprefix("dp/") + ("/safe" if route.get("baseline") == "logging" else "")


def run_dataset(name: str, model: Any, knobs: dict[str, float], n: int, seed: int, routes: list[str],
                epsilons: list[float], apvi_routes: list[str] | None = None) -> list[dict[str, Any]]:
    """Every route on one dataset: the APVI routes first (``apvi_routes``, default all; the best of the
    reference routes' gains is the reference), then DP-APVI's; the fits are emitted as they finish
    (the APVI ones once all of them have)."""
    data = model.sample(model.logging_policy, n, rng=10_000 + seed, pad_to_horizon=model.horizon)
    logging, optimal = knobs["logging_value"], knobs["optimal_value"]
    fits = [(route, None, *fit(estimator(model, APVI_ROUTES[route], None), data, model, seed))
            for route in apvi_routes or APVI_ROUTES]
    best = max(model.value(est.policy_probs_) - logging for route, _, est, _, _, _ in fits
               if route in REFERENCE_ROUTES)
    rows: list[dict[str, Any]] = []
    for route, eps, est, seconds, cpu, caught in itertools.chain(fits, (
            (r, e, *fit(estimator(model, ALL_ROUTES[r], e), data, model, seed)) for r in routes for e in epsilons)):
        value = model.value(est.policy_probs_)
        gain = value - logging
        rows.append(emit("real-shaped", instance=name, route=route, n=n, epsilon=eps, chosen=chosen(est),
                         baseline=getattr(est, "route_", {}).get("baseline", est.baseline),
                         evidence_gain=est.improvement_evidence_.gain,
                         evidence_bound=est.improvement_evidence_.bound,
                         logging_estimate_gain=model.value(est.logging_policy_) - logging,
                         delta=None if eps is None else DELTA, seed=seed, value=value, gain=gain,
                         best_nonprivate_gain=best, fraction_of_best_gain=gain / best if best > 0 else None,
                         fraction_of_optimal_gain=gain / (optimal - logging),
                         utility_warning="UtilityWarning" in caught, warnings=caught, seconds=seconds,
                         cpu_seconds=cpu, peak_mb=peak_mb()))
    return rows


def summarise(rows: list[dict[str, Any]]) -> None:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["instance"], r["route"], r["n"], r["epsilon"]), []).append(r)
    for (inst, route, n, eps), runs in groups.items():
        stats: dict[str, Any] = {}
        for key in ("value", "gain", "fraction_of_best_gain", "fraction_of_optimal_gain", "cpu_seconds"):
            xs = [r[key] for r in runs if r.get(key) is not None]
            if xs:
                mean = sum(xs) / len(xs)
                stats[key] = mean
                stats[f"{key}_se"] = (math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))
                                      if len(xs) > 1 else None)
        emit("real-shaped-summary", instance=inst, route=route, n=n, epsilon=eps, seeds=len(runs),
             warned=sum(r["utility_warning"] for r in runs), seconds=sum(r["seconds"] for r in runs),
             peak_mb=max(r["peak_mb"] for r in runs), **stats)


def warning_summary(rows: list[dict[str, Any]], tolerance: float = 0.005) -> None:
    """The two warning rates over every fit (private and not) — the share of fits that do not beat
    the logging policy (gain <= 0) that warned, and of those that gain at least a quarter of the best
    non-private gain that warned — and, per baseline route and (n, ε), the share of fits whose value
    is at least the logging value − ``tolerance`` (``real-shaped-warnings`` / ``real-shaped-safety``)."""
    rates = {k: v for k, v in warning_rates(rows).items() if k != "silent_losers"}
    emit("real-shaped-warnings", **rates, seconds=0.0, cpu_seconds=0.0, peak_mb=peak_mb())
    cells: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        if r["baseline"] == "logging":
            cells.setdefault((r["route"], r["n"], r["epsilon"]), []).append(r["gain"])
    for (route, n, eps), gains in cells.items():
        emit("real-shaped-safety", route=route, n=n, epsilon=eps, fits=len(gains), tolerance=tolerance,
             at_least_logging=sum(g >= -tolerance for g in gains), worst_gain=min(gains), seconds=0.0,
             cpu_seconds=0.0, peak_mb=peak_mb())


def main(args: argparse.Namespace) -> None:
    from privrl.envs.real_shaped import INSTANCES, measure_knobs

    names = list(QUICK_INSTANCES) if args.quick and not args.instances else (
        args.instances.split(",") if args.instances else list(INSTANCES))
    seeds = 2 if args.quick and args.seeds is None else (args.seeds or 5)
    routes = list(ALL_ROUTES) if args.routes == "all" else (
        DEFAULT_ROUTES if args.routes == "default" else args.routes.split(","))
    unknown = [r for r in routes if r not in ALL_ROUTES]
    if unknown:
        raise SystemExit(f"unknown routes {unknown}; known: {sorted(ALL_ROUTES)}")
    apvi_routes = list(APVI_ROUTES) if args.apvi_routes == "all" else (
        list(REFERENCE_ROUTES) + [r for r in args.apvi_routes.split(",") if r and r not in REFERENCE_ROUTES])
    unknown = [r for r in apvi_routes if r not in APVI_ROUTES]
    if unknown:
        raise SystemExit(f"unknown APVI routes {unknown}; known: {sorted(APVI_ROUTES)}")
    epsilons = [float(e) for e in args.epsilon.split(",")]
    rows: list[dict[str, Any]] = []
    for name in names:
        model = INSTANCES[name].build()
        knobs = measure_knobs(model)
        emit("real-shaped-instance", instance=name, labels=dict(INSTANCES[name].labels), n_states=model.n_states,
             n_actions=model.n_actions, horizon=model.horizon, seconds=0.0, cpu_seconds=0.0, peak_mb=peak_mb(),
             **knobs)
        for n in (int(x) for x in args.n.split(",")):
            for seed in range(args.seed_start, args.seed_start + seeds):
                rows += run_dataset(name, model, knobs, n, seed, routes, epsilons, apvi_routes)
    if args.summary:
        summarise(rows)
        warning_summary(rows)


# --------------------------------------------------------------------------- streaming rows
STREAM_EPISODES_PER_PIECE = 20_000


def _route(kind: str, groups: Any) -> dict[str, Any]:
    """The route of a streamed statistic: per-step counts, or groups pooled with one visit per pair."""
    return {} if kind == "per-step" else {"state_groups": groups, "stationary": True, "max_visits": 1}


def stream_child(args: argparse.Namespace) -> None:
    """In a fresh process: stream the Parquet log into one statistic (privrl.offline.stream_statistics,
    the statistics DP-APVI fits on that route); print its JSON line."""
    from privrl.data.streaming import parquet_chunks, parquet_declarations
    from privrl.envs.real_shaped import REAL_LIKE, real_shaped_instance
    from privrl.offline import stream_statistics

    model = real_shaped_instance(REAL_LIKE)
    declared = {k: v for k, v in parquet_declarations(args.stream_file).items() if k in ("horizon", "reward_bounds")}
    start, cpu = time.perf_counter(), time.process_time()
    stats = stream_statistics(parquet_chunks(args.stream_file, batch_rows=args.stream_batch), model.n_states,
                              model.n_actions, **_route(args.stream_child, model.groups), **declared)
    print(json.dumps({"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
                      "peak_mb": peak_mb(), "nnz": stats.nnz, "n_episodes": stats.n_episodes}))


def stream_check(tmp: str, n_transitions: int = 100_000, batch_rows: int = 977) -> None:
    """On a small log: the streamed statistics (read batches of ``batch_rows`` rows, cutting
    episodes) against the in-memory ones of the same episodes — keys and counts identical."""
    import numpy as np

    from privrl.data.streaming import parquet_chunks
    from privrl.envs.real_shaped import REAL_LIKE, real_shaped_instance
    from privrl.offline import route_statistics, stream_statistics

    model = real_shaped_instance(REAL_LIKE)
    path = os.path.join(tmp, "check.parquet")
    episodes = write_log(path, n_transitions, seed=0)
    data = model.sample(model.logging_policy, episodes, rng=0, pad_to_horizon=model.horizon)   # write_log's piece
    for kind in ("per-step", "groups-pooled-mv1"):
        route = _route(kind, model.groups)
        got = stream_statistics(parquet_chunks(path, batch_rows=batch_rows), model.n_states, model.n_actions,
                                horizon=model.horizon, **route)
        want = route_statistics(data, model.n_states, model.n_actions, **route)
        emit("real-shaped-stream-check", statistic=kind, transitions=episodes * model.horizon, batch_rows=batch_rows,
             identical_counts=bool(np.array_equal(got.keys, want.keys) and np.array_equal(got.values, want.values)),
             reward_sums_max_difference=float(np.abs(got.reward_sums - want.reward_sums).max()),
             seconds=float("nan"), cpu_seconds=float("nan"), peak_mb=peak_mb())


def write_log(path: str, n_transitions: int, seed: int) -> int:
    """Write a padded log of about ``n_transitions`` transitions of the real-like instance to Parquet,
    piece by piece (never all in memory); returns the number of episodes."""
    from privrl.data.streaming import write_parquet
    from privrl.envs.real_shaped import REAL_LIKE, real_shaped_instance

    model = real_shaped_instance(REAL_LIKE)
    episodes = max(1, n_transitions // model.horizon)
    sizes = [STREAM_EPISODES_PER_PIECE] * (episodes // STREAM_EPISODES_PER_PIECE)
    sizes += [episodes - sum(sizes)] if episodes > sum(sizes) else []
    pieces = (model.sample(model.logging_policy, k, rng=seed + i, pad_to_horizon=model.horizon)
              for i, k in enumerate(sizes))
    write_parquet(pieces, path, row_group_size=1 << 20)
    return episodes


def streaming(args: argparse.Namespace) -> None:
    sizes = [int(float(x)) for x in args.stream_n.split(",")]
    measured: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stream_check(tmp)
        for size in sizes:
            path = os.path.join(tmp, f"log_{size}.parquet")
            start = time.perf_counter()
            episodes = write_log(path, size, seed=0)
            written = time.perf_counter() - start
            for kind in ("per-step", "groups-pooled-mv1"):
                cmd = [sys.executable, __file__, "--stream-child", kind, "--stream-file", path,
                       "--stream-batch", str(args.stream_batch)]
                done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ONE_CORE})
                if done.returncode != 0:
                    emit("real-shaped-stream", statistic=kind, transitions=episodes * 20, error=done.stderr[-500:],
                         seconds=float("nan"), cpu_seconds=float("nan"), peak_mb=float("nan"))
                    continue
                out = json.loads(done.stdout.strip().splitlines()[-1])
                measured.setdefault(kind, []).append((episodes * 20, out))
                emit("real-shaped-stream", statistic=kind, transitions=episodes * 20, seconds=out.pop("seconds"),
                     file_mb=os.path.getsize(path) / 2**20, write_seconds=written, batch_rows=args.stream_batch, **out)
    for kind, runs in measured.items():
        (n0, a), (n1, b) = runs[0], runs[-1]
        target = 10**8
        if target > n1 > n0:
            per = (b["cpu_seconds"] - a["cpu_seconds"]) / (n1 - n0)
            emit("real-shaped-stream-projection", statistic=kind, transitions=target,
                 cpu_seconds=b["cpu_seconds"] + per * (target - n1), seconds=float("nan"),
                 peak_mb_measured=[r["peak_mb"] for _, r in runs], peak_mb=float("nan"),
                 note="CPU projected linearly from the two largest measured sizes; peak memory is set by the "
                      "count table (nnz grows with the visited cells, bounded by the reachable ones) and one batch")


def table(paths: list[str]) -> None:
    """Markdown tables of the fits (``real-shaped`` lines) of result files: one table per (n, ε), a
    row per route, a column per instance: the mean over seeds of the fraction of the best non-private
    gain (recomputed from the lines: the best APVI route's gain on the same dataset), its standard
    error and, in brackets, how many of the seeds' fits warned. A fit seen in several files counts once."""
    from privrl.envs.real_shaped import INSTANCES

    fits: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        with open(path) as f:
            for r in map(json.loads, f):
                if r.get("name") == "real-shaped":
                    fits[(r["instance"], r["route"], r["n"], r["epsilon"], r["seed"])] = r
    best: dict[tuple[Any, ...], float] = {}
    for (inst, _route, n, eps, seed), r in fits.items():
        if eps is None:
            best[(inst, n, seed)] = max(best.get((inst, n, seed), -math.inf), r["gain"])
    cells: dict[tuple[Any, ...], list[tuple[float, bool]]] = {}
    for (inst, route, n, eps, seed), r in fits.items():
        ref = best.get((inst, n, seed), -math.inf)
        if ref > 0:
            cells.setdefault((route, inst, n, eps), []).append((r["gain"] / ref, bool(r["utility_warning"])))
    present = {k[1] for k in cells}
    instances = [name for name in INSTANCES if name in present]
    short = {name: "/".join(part[0].upper() for part in name.split("/")) for name in instances}
    print("Columns: agreement (High/Mid/Low) / density (Sparse/Mid/Dense) / spread (Narrow/Mid/Wide) / clone "
          "(Good/Mid/Weak): " + ", ".join(f"{short[n]} = `{n}`" for n in instances) + ".")
    for n, eps in sorted({(k[2], k[3]) for k in cells}, key=lambda k: (k[0], k[1] or 0.0)):
        print(f"\n**n = {n}, ε = {eps if eps is not None else '∞ (APVI)'}** — fraction of the best non-private "
              "gain, mean (s.e.) [fits warned / seeds]\n")
        print("| route | " + " | ".join(short[i] for i in instances) + " |")
        print("|---" * (len(instances) + 1) + "|")
        for route in dict.fromkeys(k[0] for k in cells if (k[2], k[3]) == (n, eps)):
            out = []
            for inst in instances:
                xs = cells.get((route, inst, n, eps), [])
                if not xs:
                    out.append("")
                    continue
                vals = [x for x, _ in xs]
                mean = sum(vals) / len(vals)
                se = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) / len(vals)) if len(vals) > 1 else 0
                out.append(f"{mean:.2f} ({se:.2f}) [{sum(w for _, w in xs)}/{len(xs)}]")
            print(f"| {route} | " + " | ".join(out) + " |")


def gain_table(paths: list[str]) -> None:
    """Markdown: per route, value − logging value per instance × (n, ε) (mean over seeds, worst in
    brackets, ``*`` when a seed warned), then the warning rates recomputed over the files' fits."""
    from privrl.envs.real_shaped import INSTANCES

    fits: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        with open(path) as f:
            for r in map(json.loads, f):
                if r.get("name") == "real-shaped" and "baseline" in r:
                    fits[(r["instance"], r["route"], r["n"], r["epsilon"], r["seed"])] = r
    instances = [i for i in INSTANCES if any(k[0] == i for k in fits)]
    short = {name: "/".join(part[0].upper() for part in name.split("/")) for name in instances}
    settings = sorted({(k[2], k[3]) for k in fits}, key=lambda k: (k[0], k[1] or 0.0))
    for route in dict.fromkeys(k[1] for k in fits):
        print(f"\n**{route}** — value − logging value, mean [worst] over seeds (* a seed warned)\n")
        print("| n, ε | " + " | ".join(short[i] for i in instances) + " |")
        print("|---" * (len(instances) + 1) + "|")
        for n, eps in settings:
            out = []
            for inst in instances:
                rs = [r for k, r in fits.items() if k[:4] == (inst, route, n, eps)]
                gains = [r["gain"] for r in rs]
                out.append(f"{sum(gains) / len(gains):+.4f} [{min(gains):+.4f}]"
                           + ("*" if any(r["utility_warning"] for r in rs) else "") if rs else "")
            if any(out):
                print(f"| {n:.0e}, {eps if eps is not None else '∞'} | " + " | ".join(out) + " |")
    rows = list(fits.values())
    losing = [r for r in rows if r["gain"] <= 0]
    gaining = [r for r in rows if r["best_nonprivate_gain"] > 0 and r["gain"] >= 0.25 * r["best_nonprivate_gain"]]
    print(f"\nWarnings: {sum(r['utility_warning'] for r in losing)}/{len(losing)} fits that do not beat the logging "
          f"policy warned; {sum(r['utility_warning'] for r in gaining)}/{len(gaining)} fits gaining >= 25 % of the "
          "best non-private gain warned.")


def auto_summary(paths: list[str], tolerance: float = 0.005, real: str = "low-agreement/dense/wide/weak-clone"
                 ) -> None:
    """Markdown: per route whose name ends in ``auto`` and per (n, ε), from the fits (``real-shaped``
    lines) of result files: the median over instances of the fraction of the best non-private gain
    (each instance's mean over seeds), that fraction on the real task's shape (mean, s.e.), the share
    of fits with value >= logging value − ``tolerance``, the two warning rates (fits with gain <= 0
    that warned; fits gaining >= 25 % of the best non-private gain that warned) and the routes chosen
    (fits per route)."""
    import statistics

    fits: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        with open(path) as f:
            for r in map(json.loads, f):
                if r.get("name") == "real-shaped" and str(r["route"]).endswith("auto"):
                    fits[(r["route"], r["n"], r["epsilon"], r["instance"], r["seed"])] = r
    for route in dict.fromkeys(k[0] for k in fits):
        print(f"\n**{route}** — fraction of the best non-private gain; seeds per instance in brackets\n")
        print("| n | ε | median over instances | real shape (mean, s.e.) | value ≥ logging − 0.005 | "
              "gain ≤ 0: warned | gain ≥ 25 %: warned | route chosen (fits) |")
        print("|---" * 8 + "|")
        for n, eps in sorted({k[1:3] for k in fits if k[0] == route}, key=lambda k: (k[0], k[1] or 0.0)):
            rs = [r for k, r in fits.items() if k[:3] == (route, n, eps)]
            per: dict[str, list[float]] = {}
            for r in rs:
                if r["fraction_of_best_gain"] is not None:
                    per.setdefault(r["instance"], []).append(r["fraction_of_best_gain"])
            median = statistics.median(sum(xs) / len(xs) for xs in per.values())
            xs = per.get(real, [])
            shape = (f"{statistics.mean(xs):.2f} ({statistics.stdev(xs) / math.sqrt(len(xs)):.2f})"
                     if len(xs) > 1 else "")
            losing = [r for r in rs if r["gain"] <= 0]
            gaining = [r for r in rs if r["best_nonprivate_gain"] > 0
                       and r["gain"] >= 0.25 * r["best_nonprivate_gain"]]
            safe_share = sum(r["gain"] >= -tolerance for r in rs)
            choices = {}
            for r in rs:
                choices[r["chosen"]] = choices.get(r["chosen"], 0) + 1
            seeds = sorted({len(v) for v in per.values()})
            print(f"| {n:.0e} | {eps if eps is not None else '∞'} | {median:.2f} [{'/'.join(map(str, seeds))}] | "
                  f"{shape} | {safe_share}/{len(rs)} | {sum(r['utility_warning'] for r in losing)}/{len(losing)} | "
                  f"{sum(r['utility_warning'] for r in gaining)}/{len(gaining)} | "
                  + ", ".join(f"`{c}` ({k})" for c, k in choices.items()) + " |")


#: the routes docs/offline.md recommends ("From logs to a private policy"): route="auto" and the safe explicit ones
RECOMMENDED = ("dp/auto", "apvi/auto", "dp/groups/pooled/mv1/3sigma/behaviour/safe", "apvi/groups/pooled/safe",
               "apvi/states/pooled/safe")
#: the warning's scopes in ``--warn-summary``: name -> which routes' fits it counts
WARN_SCOPES: dict[str, Callable[[str], bool]] = {
    "recommended": lambda route: route in RECOMMENDED,
    "auto": lambda route: route.endswith("auto"),
    "references": lambda route: route in REFERENCE_ROUTES,
    "all": lambda route: True,
}


def parse_seeds(text: str | None) -> set[int] | None:
    """``'5-9'`` or ``'0,1,4'`` -> the set of seeds; None -> every seed."""
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def warning_rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The two rates of the warning's target over fits: of the fits that do not beat the logging
    policy (gain <= 0) the share that warned (``recall``), of the fits gaining at least a quarter of
    the best non-private gain the share that warned (``false_alarm_rate``)."""
    losing = [r for r in rows if r["gain"] <= 0]
    gaining = [r for r in rows if r["best_nonprivate_gain"] > 0 and r["gain"] >= 0.25 * r["best_nonprivate_gain"]]
    lw, gw = sum(r["utility_warning"] for r in losing), sum(r["utility_warning"] for r in gaining)
    return {"fits": len(rows), "not_beating": len(losing), "not_beating_warned": lw,
            "recall": lw / len(losing) if losing else None, "gaining": len(gaining), "gaining_warned": gw,
            "false_alarm_rate": gw / len(gaining) if gaining else None,
            "silent_losers": [f"{r['instance']} {r['route']} n={r['n']} eps={r['epsilon']} seed={r['seed']} "
                              f"gain={r['gain']:+.4f}" for r in losing if not r["utility_warning"]]}


def warn_summary(paths: list[str], seeds: set[int] | None) -> None:
    """JSON lines ``real-shaped-warn-summary``: :func:`warning_rates` of the fits (``real-shaped`` lines
    of result files, a fit seen twice counted once; only ``seeds`` when given) per scope of
    :data:`WARN_SCOPES` and privacy (private, non-private, both)."""
    fits: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        with open(path) as f:
            for r in map(json.loads, f):
                if r.get("name") == "real-shaped" and (seeds is None or r["seed"] in seeds):
                    fits[(r["instance"], r["route"], r["n"], r["epsilon"], r["seed"])] = r
    used = sorted({k[4] for k in fits})
    for scope, member in WARN_SCOPES.items():
        for privacy, keep in (("both", lambda r: True), ("private", lambda r: r["epsilon"] is not None),
                              ("non-private", lambda r: r["epsilon"] is None)):
            rows = [r for r in fits.values() if member(r["route"]) and keep(r)]
            if rows:
                emit("real-shaped-warn-summary", scope=scope, privacy=privacy, seeds=used, **warning_rates(rows),
                     seconds=0.0, cpu_seconds=0.0, peak_mb=peak_mb())


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 instances and 2 seeds")
    p.add_argument("--instances", default=None, help="comma-separated instance names (default: the grid)")
    p.add_argument("--routes", default="default", help="'default', 'all' or comma-separated route names")
    p.add_argument("--n", default="10000,100000")
    p.add_argument("--epsilon", default="1,10")
    p.add_argument("--seeds", type=int, default=None, help="seeds per (instance, n) (default 5; 2 with --quick)")
    p.add_argument("--seed-start", type=int, default=0, help="the first seed (seeds seed_start, seed_start + 1, ...)")
    p.add_argument("--apvi-routes", default="all", help="'all' or comma-separated APVI routes to run besides the "
                   "reference routes (always run): e.g. 'apvi/auto', or '' for the references only")
    p.add_argument("--summary", action="store_true")
    p.add_argument("--streaming", action="store_true", help="measure the streamed statistics instead")
    p.add_argument("--stream-n", default="1e5,1e6", help="log sizes in transitions (the target is 1e8)")
    p.add_argument("--stream-batch", type=int, default=1 << 20, help="rows per Parquet batch read")
    p.add_argument("--table", nargs="+", default=None, help="print markdown tables of result files' summaries")
    p.add_argument("--gain-table", nargs="+", default=None, help="print value − logging tables of result files")
    p.add_argument("--auto-summary", nargs="+", default=None, help="print the auto routes' summary of result files")
    p.add_argument("--warn-summary", nargs="+", default=None, help="print the UtilityWarning's rates over result "
                   "files' fits (JSON lines), per scope (the recommended routes, the plain references, all)")
    p.add_argument("--warn-seeds", default=None, help="with --warn-summary: only these seeds, e.g. '5-9' or '0,1'")
    p.add_argument("--stream-child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--stream-file", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    ns = parse()
    if ns.table:
        table(ns.table)
    elif ns.gain_table:
        gain_table(ns.gain_table)
    elif ns.auto_summary:
        auto_summary(ns.auto_summary)
    elif ns.warn_summary:
        warn_summary(ns.warn_summary, parse_seeds(ns.warn_seeds))
    elif ns.stream_child:
        stream_child(ns)
    elif ns.streaming:
        streaming(ns)
    else:
        main(ns)
