"""Real-sized problems: fits on the clinic-shaped benchmark task (``privrl.envs.sparse_tabular``,
S = 750, A = 25, H = 20), each in a fresh process on one core.

One JSON line per row: ``name``, ``algorithm``, ``n`` (logged episodes), ``epsilon``, ``delta``,
``seconds`` (the fit, wall clock), ``cpu_seconds`` (its CPU time: the measure on a shared machine),
``peak_mb`` (the fitting process's peak resident memory, ``ru_maxrss``: interpreter, imports and the
loaded data included), ``data_mb`` (that peak before the fit, reached while loading the data),
``rss_before_fit_mb`` (resident memory when the fit starts: the fit itself needs at most
``peak_mb − rss_before_fit_mb``), ``metric``, ``value`` and ``reference`` (the optimal value, the
logging policy's value and, for private rows, the non-private row's value on the same data).
Policy values are exact, computed on the model.

Targets: APVI and DP-APVI at n = 10⁵, ε = 1, δ = 10⁻⁶: ``peak_mb <= 1024`` and a fit of at most
60 s on one core.

    .venv/bin/python benchmarks/bench_real_size.py [--rows apvi,dp-apvi,apvi-logged,dp-apvi-logged]
        [--n 10000,100000] [--epsilon 1] [--states 750] [--horizon 20] [--seeds 1] [--summary]

Rows: ``apvi`` / ``dp-apvi`` with the public reward table, ``apvi-logged`` / ``dp-apvi-logged``
with the logged outcome reward (``F_max = 1``), all with ``constants="practical"``. The routes for
coverage-limited data (the model's public ``groups``; ``docs/offline.md``): ``apvi-groups``
(grouped counts pooled over the steps, behaviour fallback: the non-private reference),
``dp-apvi-groups`` / ``dp-apvi-groups-logged`` (also capped at one visit per pair and trajectory,
cell threshold 3σ), ``dp-apvi-groups-perstep`` (grouped per-step counts, cell threshold 3σ,
fallback), ``dp-vapvi-groups`` (DP-VAPVI with one-hot group × action features; fitted on the grouped
per-step statistics, which is the same fit: every feature is constant on a group). The default
``--rows`` (what ``make bench`` runs) are the first four and ``apvi-groups``, ``dp-apvi-groups``,
``dp-apvi-groups-logged``; ``dp-apvi-groups-perstep``, ``dp-vapvi-groups`` and ``vapvi-groups`` on
request.

Every row also reports ``gain`` (value − logging value) and, when a non-private row ran before it
on the same data, ``fraction_of_best_gain`` (its gain over the best non-private gain so far).
``--summary`` adds one ``real-size-summary`` line per (row, n, ε): mean and standard error over the
seeds of ``value``, ``gain``, ``fraction_of_best_gain``, ``seconds``, ``cpu_seconds`` and ``peak_mb``.

Adding a row: write ``def row_NAME(model, data, n, epsilon, seed) -> dict`` returning ``algorithm``,
``metric``, ``value`` (and optional fields), register it in :data:`ROWS`; it runs in the child
process with the data already loaded and the fit timed by :func:`timed`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

DELTA = 1e-6
#: fields every row function (with the child's memory fields) returns; checked before emitting
REQUIRED = ("algorithm", "seconds", "peak_mb", "metric", "value")
ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def peak_mb() -> float:
    """This process's peak resident memory (``ru_maxrss``, KiB on Linux) in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_mb() -> float:
    """This process's resident memory now (Linux ``/proc/self/statm``; NaN elsewhere) in MiB."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def timed(fit: Callable[[], Any]) -> tuple[Any, float]:
    """``(fit(), wall seconds)``; the CPU seconds of the last call are in :data:`LAST_CPU`."""
    global LAST_CPU
    start, cpu = time.perf_counter(), time.process_time()
    out = fit()
    LAST_CPU = time.process_time() - cpu
    return out, time.perf_counter() - start


LAST_CPU = float("nan")


def task(states: int, horizon: int) -> Any:
    from privrl.envs import sparse_tabular

    return sparse_tabular(n_states=states, horizon=horizon, rng=0)


# --------------------------------------------------------------------------- rows (run in the child)
def row_apvi(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    from privrl.offline import APVI

    est, seconds = timed(lambda: APVI(constants="practical").fit(data, model.r))
    return {"algorithm": "APVI", "seconds": seconds, "metric": "policy_value", "value": model.value(est.policy_)}


def row_dp_apvi(model: Any, data: Any, n: int, epsilon: float | None, seed: int, *,
                logged: bool = False) -> dict[str, Any]:
    import warnings

    from privrl import PrivacyBudget
    from privrl.offline import DPAPVI

    est = DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=DELTA), constants="practical",
                 F_max=1.0 if logged else None)
    reward = None if logged else model.r
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est, seconds = timed(lambda: est.fit(data, reward, rng=seed))
    return {"algorithm": "DPAPVI", "seconds": seconds, "metric": "policy_value", "value": model.value(est.policy_),
            "reward": "logged" if logged else "public", "warnings": sorted({w.category.__name__ for w in caught})}


def row_apvi_logged(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    from privrl.offline import APVI

    est, seconds = timed(lambda: APVI(constants="practical", F_max=1.0).fit(data))
    return {"algorithm": "APVI", "seconds": seconds, "metric": "policy_value", "value": model.value(est.policy_),
            "reward": "logged"}


def row_dp_apvi_logged(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    return row_dp_apvi(model, data, n, epsilon, seed, logged=True)


#: the private group route: grouped counts pooled over the steps, one visit per pair and trajectory,
#: cells at most 3σ dropped, the behaviour-cloned action where nothing is confident
GROUP_ROUTE = {"stationary": True, "max_visits": 1, "cell_threshold": 3.0, "fallback": "behaviour"}


def _warnings_of(fit: Callable[[], Any]) -> tuple[Any, float, list[str]]:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, seconds = timed(fit)
    return out, seconds, sorted({w.category.__name__ for w in caught})


def row_apvi_groups(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    from privrl.offline import APVI

    est = APVI(constants="practical", state_groups=model.groups, stationary=True, fallback="behaviour")
    est, seconds, caught = _warnings_of(lambda: est.fit(data, model.r))
    return {"algorithm": "APVI", "route": "groups, stationary", "seconds": seconds, "metric": "policy_value",
            "value": model.value(est.policy_), "warnings": caught}


def row_dp_apvi_groups(model: Any, data: Any, n: int, epsilon: float | None, seed: int, *, logged: bool = False,
                       route: dict[str, Any] | None = None) -> dict[str, Any]:
    from privrl import PrivacyBudget
    from privrl.offline import DPAPVI

    route = GROUP_ROUTE if route is None else route
    est = DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=DELTA), constants="practical",
                 F_max=1.0 if logged else None, state_groups=model.groups, **route)
    est, seconds, caught = _warnings_of(lambda: est.fit(data, None if logged else model.r, rng=seed))
    return {"algorithm": "DPAPVI", "route": ", ".join(f"{k}={v}" for k, v in route.items()), "seconds": seconds,
            "metric": "policy_value", "value": model.value(est.policy_), "reward": "logged" if logged else "public",
            "noise_std": est.noise_std_[1], "epsilon_spent": est.privacy_spent(), "warnings": caught}


def row_dp_apvi_groups_logged(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    return row_dp_apvi_groups(model, data, n, epsilon, seed, logged=True)


def row_dp_apvi_groups_perstep(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    return row_dp_apvi_groups(model, data, n, epsilon, seed, route={"cell_threshold": 3.0, "fallback": "behaviour"})


def _group_features(model: Any, data: Any) -> tuple[Any, Any]:
    """(grouped per-step statistics, one-hot group × action features (G, A, G·A)): DP-VAPVI with the
    features φ(s, a) = e_{g(s)·A + a} on the states fits exactly this (every sum over transitions
    sees s only through g(s), and Ṽ(s') only through g(s'))."""
    import numpy as np

    from privrl.offline._common import padded_episodes
    from privrl.offline.grouping import grouped_statistics

    S, A, G = model.n_states, model.n_actions, model.n_groups
    arrays = padded_episodes(data, "bench_real_size", n_states=S, n_actions=A)
    return grouped_statistics(arrays, model.groups, S, A), np.eye(G * A).reshape(G, A, G * A)


def row_vapvi_groups(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    from privrl.offline import DPVAPVI, VAPVI

    stats, phi = _group_features(model, data)
    est = (VAPVI(constants="practical", split=False) if epsilon is None else
           DPVAPVI(budget=_budget(epsilon), constants="practical", split=False))
    est, seconds, caught = _warnings_of(lambda: est.fit(stats, phi, rng=seed))
    return {"algorithm": type(est).__name__, "route": "one-hot group x action features", "seconds": seconds,
            "metric": "policy_value", "value": model.value(est.policy_[:, model.groups]), "warnings": caught}


def row_dp_vapvi_groups(model: Any, data: Any, n: int, epsilon: float | None, seed: int) -> dict[str, Any]:
    return row_vapvi_groups(model, data, n, epsilon, seed)


def _budget(epsilon: float) -> Any:
    from privrl import PrivacyBudget

    return PrivacyBudget(epsilon=epsilon, delta=DELTA)


#: name -> (row function, private?); a private row's reference has the value of the last
#: non-private row before it in --rows order
ROWS: dict[str, tuple[Callable[..., dict[str, Any]], bool]] = {
    "apvi": (row_apvi, False),
    "dp-apvi": (row_dp_apvi, True),
    "apvi-logged": (row_apvi_logged, False),
    "dp-apvi-logged": (row_dp_apvi_logged, True),
    "apvi-groups": (row_apvi_groups, False),
    "dp-apvi-groups": (row_dp_apvi_groups, True),
    "dp-apvi-groups-logged": (row_dp_apvi_groups_logged, True),
    "dp-apvi-groups-perstep": (row_dp_apvi_groups_perstep, True),
    "dp-vapvi-groups": (row_dp_vapvi_groups, True),
    "vapvi-groups": (row_vapvi_groups, False),
}
#: the rows of a plain run (``make bench``: kept quick); the others on request with --rows
DEFAULT_ROWS = ["apvi", "dp-apvi", "apvi-logged", "dp-apvi-logged", "apvi-groups", "dp-apvi-groups",
                "dp-apvi-groups-logged"]
#: fields averaged over the seeds by --summary
SUMMARY = ("value", "gain", "fraction_of_best_gain", "seconds", "cpu_seconds", "peak_mb")


def child(args: argparse.Namespace) -> None:
    from privrl.data import TrajectoryDataset

    model = task(args.states, args.horizon)
    data = TrajectoryDataset.load(args.data)
    before, resident = peak_mb(), current_mb()
    fn, _ = ROWS[args.row]
    out = fn(model, data, args.n_one, args.epsilon_one, args.seed)
    out.update(cpu_seconds=LAST_CPU, data_mb=before, rss_before_fit_mb=resident, peak_mb=peak_mb())
    print(json.dumps(out))


# --------------------------------------------------------------------------- parent
def run_row(row: str, n: int, epsilon: float | None, seed: int, data_path: str, args: argparse.Namespace
            ) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", row, "--data", data_path, "--n-one", str(n), "--seed", str(seed),
           "--states", str(args.states), "--horizon", str(args.horizon)]
    if epsilon is not None:
        cmd += ["--epsilon-one", str(epsilon)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ONE_CORE})
    if done.returncode != 0:
        error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return {"algorithm": row, "error": error, "peak_mb": float("nan"), "seconds": float("nan"),
                "metric": "policy_value", "value": float("nan")}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    missing = [k for k in REQUIRED if k not in out]
    if missing:
        raise RuntimeError(f"row {row} returned no {missing}")
    return out


def main(args: argparse.Namespace) -> None:
    model = task(args.states, args.horizon)
    optimal, logging = model.optimal_value(), model.value(model.logging_policy)
    rows = args.rows.split(",")
    results: dict[tuple[str, int, float | None], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.n.split(",")):
            for seed in range(args.seeds):
                path = os.path.join(tmp, f"data_{n}_{seed}.npz")
                model.sample(model.logging_policy, n, rng=1000 + seed, pad_to_horizon=model.horizon).save(path)
                nonprivate: float | None = None
                best: float | None = None                  # the best non-private value on these data
                for row in rows:
                    _, private = ROWS[row]
                    for eps in ([float(e) for e in args.epsilon.split(",")] if private else [None]):
                        out = run_row(row, n, eps, seed, path, args)
                        reference = {"optimal": optimal, "logging": logging}
                        if private and nonprivate is not None:
                            reference["nonprivate"] = nonprivate
                        if not private:
                            nonprivate = out["value"]
                            best = out["value"] if best is None else max(best, out["value"])
                        out.update(gain=out["value"] - logging)
                        if best is not None and best > logging:
                            reference["best_nonprivate"] = best
                            out.update(fraction_of_best_gain=out["gain"] / (best - logging))
                        results.setdefault((row, n, eps), []).append(
                            {k: out[k] for k in SUMMARY if k in out})
                        emit("real-size", row=row, n=n, epsilon=eps, delta=DELTA if private else None, seed=seed,
                             n_states=model.n_states, n_actions=model.n_actions, horizon=model.horizon,
                             reference=reference, target_seconds=60.0, target_peak_mb=1024.0, **out)
    if args.summary:
        import math

        for (row, n, eps), runs in results.items():
            stats: dict[str, Any] = {}
            for key in SUMMARY:
                xs = [r[key] for r in runs if key in r and not math.isnan(r[key])]
                if xs:
                    mean = sum(xs) / len(xs)
                    se = (math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) if len(xs) > 1
                          else float("nan"))
                    stats[key], stats[f"{key}_se"] = mean, se
            emit("real-size-summary", row=row, n=n, epsilon=eps, seeds=len(runs), logging=logging, optimal=optimal,
                 seconds=stats.get("seconds", float("nan")), peak_mb=stats.get("peak_mb", float("nan")),
                 **{k: v for k, v in stats.items() if k not in ("seconds", "peak_mb")})


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=",".join(DEFAULT_ROWS))
    p.add_argument("--n", default="10000,100000")
    p.add_argument("--epsilon", default="1.0")
    p.add_argument("--states", type=int, default=750)
    p.add_argument("--horizon", type=int, default=20)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--summary", action="store_true", help="also print the mean and standard error over seeds")
    # child process
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--n-one", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--epsilon-one", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    ns = parse()
    if ns.child:
        ns.row = ns.child
        child(ns)
    else:
        main(ns)
