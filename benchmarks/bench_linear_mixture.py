"""Speed of LinOptVI / LinOptPO and of the Zhou (2022) paper grid (issue #6 §6, issue #12 §1).

Prints one JSON line per measurement (``name``, parameters, ``seconds`` = wall, ``cpu_seconds`` =
process CPU time; the machine is shared, so CPU time is the steadier figure):

* ``linear_mixture_fit`` — one ``fit`` (one run, the lockstep kernel with R = 1) per algorithm ×
  privatizer on E2 (S=6, A=4, H=5, d1=d2=3) and E1 (d=5, H=6), at ``--episodes K`` (default 2000)
  with ``extrapolated_cpu_seconds_at_1e5`` (the per-episode cost does not grow with k: the tree
  keeps O(log K) nodes and every statistic is d×d); ``--full`` runs K = 10⁵ itself.
* ``zhou2022_batch`` — one lockstep batch of the ``zhou2022-regret`` sweep: every paper setting of
  one environment and algorithm (6 privacy levels × 2 panels) × ``--seeds`` seeds (``fit_many``,
  reachable-state planning), timed at ``--batch-episodes`` (default 1000) and a fifth of it: the
  difference gives the CPU cost per batched episode, the rest the set-up; reports the CPU seconds
  per (setting, seed) run extrapolated to K = 10⁵.
* ``frontier_linear_mixture_batch`` — the ``frontier-linear-mixture`` paper sweep (10 settings × 10
  seeds, K = 2·10⁴) as one lockstep batch, timed at ``--batch-episodes`` and a fifth of it;
* ``zhou2022_grid_projection`` — the paper grid (44 settings × 10 seeds, K = 10⁵) projected from
  the batch rows: total CPU seconds, and wall seconds on 2 cores (the sweep's 2 tasks, one per
  algorithm, each its E2 and E1 batches, one per worker), with and without the frontier sweep
  (a third task, on the less loaded worker).

* ``counter_memory`` — peak memory of the central privatizer's counters over a K-episode stream
  (``--counter-episodes``, default 2·10⁴; 10⁵ for the rows quoted in ``docs/linear_mixture.md``)
  for the binary tree, the BLT and the square-root factorization, at
  d = 3 (H = 5) and d = 30 (H = 10); the square root at d = 30 would need GBs: its row gives the
  size of its noise store instead (``measured: false``).

* ``tight_noise_plan`` — the tight calibration's noise split (one L-BFGS-B optimisation over the 4H
  stream std's, E2 sizes, JDP tree, ε = 1) per plan, with every BLAS pool limited to one thread (the
  library's setting) and with the pools as loaded (``--only-calibration``: these rows only).

``peak_mb`` (tracemalloc) comes from a separate 200-episode run: tracing slows allocation.

    .venv/bin/python benchmarks/bench_linear_mixture.py [--episodes 2000] [--full] [--seeds 5] [--only-fits]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import cpu_seconds, emit, measure  # noqa: E402

from privrl import PrivacyBudget  # noqa: E402
from privrl.envs.linear_mixture import hard_instance, random_mixture  # noqa: E402
from privrl.linear_mixture import LinOptPO, LinOptVI  # noqa: E402
from privrl.linear_mixture.engine import fit_many  # noqa: E402

TARGET_K = 10**5


def bench_fit(env_name: str, model, cls, privatizer: str, K: int) -> None:
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5) if privatizer != "none" else PrivacyBudget.non_private()
    est = cls(n_episodes=K, privatizer=privatizer, budget=budget)
    start, cpu = time.perf_counter(), time.process_time()   # no tracemalloc here (it slows numpy allocation)
    est.fit(model, rng=0)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    peak = measure(lambda: cls(n_episodes=min(K, 200), privatizer=privatizer, budget=budget).fit(model, rng=0))
    emit("linear_mixture_fit", algorithm=cls.__name__, privatizer=privatizer, env=env_name, S=model.n_states,
         A=model.n_actions, H=model.horizon, d1=model.d1, d2=model.d2, episodes=K, seconds=seconds,
         cpu_seconds=cpu_seconds, ms_per_episode=cpu_seconds / K * 1e3,
         extrapolated_cpu_seconds_at_1e5=cpu_seconds * TARGET_K / K, peak_mb=peak["peak_mb"])


def bench_counter_memory(d: int, horizon: int, K: int, counter: str) -> None:
    """Peak memory (tracemalloc) of the central privatizer's four counters over a K-episode stream
    (K − 1 inserts, each followed by the release, as a fit makes them) with ``counter`` ('tree',
    'blt', 'factorization' = the square root), d1 = d2 = d. The square root keeps every noise draw
    (``(K − 1) × prod(shape)`` floats per stream): past 2 GB it is not run and its row carries that
    size as ``state_mb`` (``measured: false``)."""
    from privrl.linear_mixture import LinOptVI
    from privrl.privacy import Ledger, NumpyNoise, Releaser

    model = random_mixture(2, 2, horizon, d, d, rng=0)                   # the counters see only H, d1, d2
    est = LinOptVI(n_episodes=K, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), counter=counter)
    state_mb = (K - 1) * horizon * (2 * d * d + 2 * d) * 8 / 2**20
    if counter == "factorization" and state_mb > 2000:
        emit("counter_memory", counter=counter, d=d, H=horizon, episodes=K, measured=False, seconds=float("nan"),
             state_mb=state_mb, peak_mb=float("nan"))
        return
    est.regularizer(model).start(n_episodes=K, horizon=horizon, d1=d, d2=d,      # warm the caches (plan, BLT,
                                 rel=Releaser(NumpyNoise(0), Ledger()))          # constants) before tracing

    def stream() -> None:
        reg = est.regularizer(model)
        reg.start(n_episodes=K, horizon=horizon, d1=d, d2=d, rel=Releaser(NumpyNoise(0), Ledger()))
        items = [np.zeros(c.shape) for c in reg._counters]
        for _ in range(K - 1):
            for c, x in zip(reg._counters, items):
                c.insert(x)
                c.release()

    start = time.perf_counter()                                           # one run, traced (the peak is the point)
    tracemalloc.start()
    stream()
    _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    emit("counter_memory", counter=counter, d=d, H=horizon, episodes=K, measured=True,
         seconds=time.perf_counter() - start, peak_mb=peak_bytes / 2**20)


def _batch_cpu(env_name: str, algorithm: str, n_seeds: int, K: int) -> tuple[float, float, int, int]:
    from privrl.linear_mixture import experiments as z

    settings = [s for s in z.settings("paper") if s["env"] == env_name and s["algorithm"] == algorithm]
    ests, models, rngs = [], [], []
    for seed in range(n_seeds):
        model = z._model({**settings[0], "K": TARGET_K}, np.random.default_rng(seed))   # the paper-K instance
        for i, params in enumerate(settings):
            ests.append(z._estimator(params, K))
            models.append(model)
            rngs.append(np.random.default_rng([seed, i]))
    start, cpu = time.perf_counter(), time.process_time()
    fit_many(ests, models, rngs, reachable_only=True)
    return time.perf_counter() - start, time.process_time() - cpu, len(ests), len(settings)


def bench_batch(env_name: str, algorithm: str, n_seeds: int, K: int) -> dict:
    """One lockstep batch of the paper sweep: every paper setting of ``env_name`` and ``algorithm``
    × ``n_seeds``, timed at K and K/5; the per-episode cost is the slope, the set-up the intercept."""
    _batch_cpu(env_name, algorithm, 1, 5)                                  # warm caches (Υ, imports)
    _, cpu_short, _, _ = _batch_cpu(env_name, algorithm, n_seeds, K // 5)
    seconds, cpu_seconds, runs, n_settings = _batch_cpu(env_name, algorithm, n_seeds, K)
    per_episode = max(cpu_seconds - cpu_short, 0.0) / (K - K // 5)
    setup = max(cpu_seconds - per_episode * K, 0.0)
    per_run = (setup + per_episode * TARGET_K) / runs
    return emit("zhou2022_batch", env=env_name, algorithm=algorithm, runs=runs, seeds=n_seeds, settings=n_settings,
                episodes=K, seconds=seconds, cpu_seconds=cpu_seconds, cpu_ms_per_batched_episode=per_episode * 1e3,
                setup_cpu_seconds=setup, cpu_seconds_per_run_at_1e5=per_run, peak_mb=float("nan"))


def _frontier_cpu(K: int, n_seeds: int = 10) -> float:
    from privrl.linear_mixture import experiments as z

    ests, models, rngs = [], [], []
    for seed in range(n_seeds):
        model = random_mixture(6, 4, 5, 3, 3, rng=np.random.default_rng([99, seed]))
        for i, params in enumerate(z.frontier_settings("paper")):
            ests.append(z._estimator(params, K))
            models.append(model)
            rngs.append(np.random.default_rng([seed, i]))
    cpu = time.process_time()
    fit_many(ests, models, rngs, reachable_only=True)
    return time.process_time() - cpu


def bench_frontier(K: int) -> float:
    """The frontier's paper sweep (10 settings × 10 seeds, one batch) at K and K/5 episodes,
    extrapolated to its K = 2·10⁴; returns the projected CPU seconds."""
    from privrl.linear_mixture import experiments as z

    target = z.frontier_settings("paper")[0]["K"]
    short, full = _frontier_cpu(K // 5), _frontier_cpu(K)
    per_episode = max(full - short, 0.0) / (K - K // 5)
    total = max(full - per_episode * K, 0.0) + per_episode * target
    emit("frontier_linear_mixture_batch", runs=10 * len(z.frontier_settings("paper")), episodes=K, seconds=full,
         cpu_seconds=full, cpu_ms_per_batched_episode=per_episode * 1e3, cpu_seconds_at_paper_k=total,
         peak_mb=float("nan"))
    return total


def bench_calibration(plans: int = 20) -> None:
    """CPU per tight noise plan (distinct K, so no cache hit), BLAS limited to one thread or not."""
    import privrl._threads as threads
    from privrl.linear_mixture import calibration as cal

    single = threads.single_threaded_blas
    for mode in ("one BLAS thread", "BLAS pools as loaded"):
        if mode != "one BLAS thread":
            cal.single_threaded_blas = contextlib.nullcontext
        cal._noise_plan.cache_clear()
        cal._noise_plan("central", (1.0, 1e-5, None), "tight", 999, 5, 3, 3, 5.0)   # imports, first call
        cpu, wall = cpu_seconds(), time.perf_counter()
        for K in range(1000, 1000 + plans):
            cal._noise_plan("central", (1.0, 1e-5, None), "tight", K, 5, 3, 3, 5.0)
        emit("tight_noise_plan", blas=mode, plans=plans, seconds=(time.perf_counter() - wall) / plans,
             cpu_seconds=(cpu_seconds() - cpu) / plans, peak_mb=float("nan"))
    cal.single_threaded_blas = single


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--batch-episodes", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=10, help="seeds per batch (the paper sweep: all 10)")
    ap.add_argument("--full", action="store_true", help="time K = 1e5 fits instead of extrapolating")
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--counter-episodes", type=int, default=20_000,
                    help="K of the counter memory rows (d = 3, H = 5 and d = 30, H = 10; the issue's rows: 100000)")
    ap.add_argument("--only-counters", action="store_true", help="the counter memory rows only")
    ap.add_argument("--only-fits", action="store_true", help="the single-fit rows only")
    ap.add_argument("--only-calibration", action="store_true", help="the tight noise-split rows only")
    args = ap.parse_args()
    bench_calibration()
    if args.only_calibration:
        return
    if not args.only_fits:
        for d, horizon in ((3, 5), (30, 10)):
            for counter in ("tree", "blt", "factorization"):
                bench_counter_memory(d, horizon, args.counter_episodes, counter)
    if args.only_counters:
        return
    envs = {"E2": random_mixture(6, 4, 5, 3, 3, rng=0), "E1": hard_instance(5, 6, TARGET_K, rng=0)}
    if not args.skip_fit:
        for env_name, model in envs.items():
            for cls in (LinOptVI, LinOptPO):
                for privatizer in ("central", "local", "none"):
                    bench_fit(env_name, model, cls, privatizer, TARGET_K if args.full else args.episodes)
    if args.only_fits:
        return
    rows = [bench_batch(env, alg, args.seeds, args.batch_episodes) for env in ("E2", "E1") for alg in ("VI", "PO")]
    # paper grid: one task per algorithm (its E2 and E1 batches, 10 seeds each), one per worker
    per_batch = {(r["env"], r["algorithm"]): r["cpu_seconds_per_run_at_1e5"] * r["settings"] * 10 for r in rows}
    tasks = [sum(v for (_, alg), v in per_batch.items() if alg == a) for a in ("VI", "PO")]
    emit("zhou2022_grid_projection", runs=sum(r["settings"] for r in rows) * 10, episodes=TARGET_K,
         cpu_seconds=sum(tasks), seconds=max(tasks), cores=2, peak_mb=float("nan"))
    frontier = bench_frontier(args.batch_episodes)
    with_frontier = sorted(tasks)
    with_frontier[0] += frontier
    emit("zhou_paper_projection", experiments="zhou2022-regret + frontier-linear-mixture",
         cpu_seconds=sum(tasks) + frontier, seconds=max(with_frontier), cores=2, peak_mb=float("nan"))

if __name__ == "__main__":
    main()
