"""Cost of ``privrl reproduce``: at the quick scale by default (a minute or two), at paper scale with
``--paper`` (projected from one seed; tens of minutes on one core) (issue #12 §1, issue #20).

For each registered experiment (or ``--experiments id1,id2``), one seed (``--seed``, default 0)
of every setting runs sequentially in one fresh process, grouped and batched exactly as the runner
does (``group_runs`` / ``execute_runs``: an experiment with ``run_batch`` runs a group of settings
as one lockstep batch, one unit of work; no files written), and one JSON line is printed:

    {"name": "reproduce-seed", "experiment", "scale", "seconds", "runs", "failed", "peak_mb",
     "seeds", "projected_seconds", "slowest_run_seconds", "cpu_seconds"}

``seconds`` is the wall time of that seed, ``peak_mb`` the process's peak resident memory,
``projected_seconds = seconds × seeds`` (the scale's seed count). An experiment whose lockstep
batches span seeds (``batch_key`` ignores the seed: Zhou's) runs all its seeds at once, as the
runner does, and is measured, not projected (``seeds_run`` = ``seeds``). Then one ``projected_total``
line: ``seconds`` (all experiments, all seeds, one worker), and the wall projection for
``--workers`` (default 2) workers: ``wall_seconds_ideal`` (total ÷ workers) and
``wall_seconds_lpt`` (every run placed on the least-loaded worker, longest first, from the
measured per-run times: the slowest run cannot be split). On a shared, loaded machine wall time
overstates the cost: ``cpu_seconds`` and ``wall_seconds_lpt_from_cpu`` make the same projection
from the process CPU time of each run (what an otherwise idle machine would take).

    .venv/bin/python benchmarks/bench_reproduce.py [--paper | --scale smoke] [--experiments a,b] [--workers 2]

The machine is shared: the JSON lines carry ``load_1min`` (``os.getloadavg``) so a reader can tell.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit  # noqa: E402


def _child(experiment: str, scale: str, seed: int) -> None:
    """Run one seed of ``experiment`` and print a JSON line (internal: ``--child``)."""
    from privrl.experiments import get_experiment
    from privrl.experiments.runner import execute_runs, group_runs, plan_runs

    exp = get_experiment(experiment)
    n_seeds = exp.n_seeds(scale)
    # an experiment whose batches span seeds runs them as one lockstep batch: one seed alone would
    # not show that cost (it is far less than a tenth), so all its seeds run and nothing is projected
    first = exp.settings_for(scale)[0]
    spans = (exp.run_batch is not None and exp.batch_key is not None
             and exp.batch_key(first, 0) == exp.batch_key(first, 1))
    seeds = list(range(n_seeds)) if spans else [seed]
    specs = plan_runs(experiment, scale, seeds)
    times, cpu_times, failed = [], [], 0
    cpu0, start = time.process_time(), time.perf_counter()
    for group in group_runs(specs):       # as the runner executes them: a batch is one unit of work
        t0, c0 = time.perf_counter(), time.process_time()
        outcomes = execute_runs(group)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        failed += sum(o.status != "ok" for o in outcomes)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    print(json.dumps({"experiment": experiment, "scale": scale, "seconds": seconds, "cpu_seconds": cpu,
                      "runs": len(specs), "failed": failed, "peak_mb": peak_mb, "seeds": n_seeds,
                      "repeat": 1 if spans else n_seeds,
                      "run_seconds": times, "run_cpu_seconds": cpu_times}), flush=True)


def lpt_makespan(durations: list[float], workers: int) -> float:
    """Wall time of ``durations`` on ``workers`` workers, longest first to the least-loaded one."""
    loads = [0.0] * max(1, workers)
    heapq.heapify(loads)
    for d in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + d)
    return max(loads)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="quick", choices=("smoke", "quick", "paper"))
    ap.add_argument("--paper", action="store_true", help="the paper scale (the same as --scale paper)")
    ap.add_argument("--experiments", default=None, help="comma-separated ids (default: every registered one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="workers of the wall-time projection")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.paper:
        args.scale = "paper"
    if args.child is not None:
        _child(args.child, args.scale, args.seed)
        return 0

    from privrl.experiments import all_experiments, get_experiment

    ids = [i.strip() for i in args.experiments.split(",") if i.strip()] if args.experiments else list(all_experiments())
    for exp_id in ids:
        get_experiment(exp_id)  # unknown ids fail before anything runs
    total, total_cpu, all_runs, all_cpu, rows = 0.0, 0.0, [], [], []
    for exp_id in ids:
        proc = subprocess.run([sys.executable, __file__, "--child", exp_id, "--scale", args.scale,
                               "--seed", str(args.seed)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            emit("reproduce-seed", experiment=exp_id, scale=args.scale, seconds=None, cpu_seconds=None, peak_mb=None,
                 error=tail)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        repeat = r["repeat"]           # seeds not run (1: every seed ran, batched across seeds)
        projected = r["seconds"] * repeat
        total += projected
        total_cpu += r["cpu_seconds"] * repeat
        all_runs += [t for t in r["run_seconds"] for _ in range(repeat)]
        all_cpu += [t for t in r.get("run_cpu_seconds", r["run_seconds"]) for _ in range(repeat)]
        rows.append(emit("reproduce-seed", experiment=exp_id, scale=args.scale, seconds=round(r["seconds"], 3),
                         cpu_seconds=round(r["cpu_seconds"], 3), runs=r["runs"], failed=r["failed"],
                         peak_mb=round(r["peak_mb"], 1), seeds=r["seeds"], seeds_run=r["seeds"] // repeat,
                         projected_seconds=round(projected, 1),
                         projected_cpu_seconds=round(r["cpu_seconds"] * repeat, 1),
                         slowest_run_seconds=round(max(r["run_seconds"], default=0.0), 3),
                         load_1min=round(os.getloadavg()[0], 2)))
    emit("projected_total", scale=args.scale, seconds=round(total, 1), workers=args.workers,
         peak_mb=max((r["peak_mb"] for r in rows), default=None),
         wall_seconds_ideal=round(total / max(1, args.workers), 1),
         wall_seconds_lpt=round(lpt_makespan(all_runs, args.workers), 1),
         cpu_seconds=round(total_cpu, 1),
         wall_seconds_lpt_from_cpu=round(lpt_makespan(all_cpu, args.workers), 1),
         experiments=[r["experiment"] for r in rows], runs=len(all_runs),
         load_1min=round(os.getloadavg()[0], 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
