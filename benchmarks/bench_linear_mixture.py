"""Speed of LinOptVI / LinOptPO (issue #6 §6). Prints one JSON line per measurement.

Episodes per second for each algorithm × privatizer on E2 (S=6, A=4, H=5, d1=d2=3) and E1 (d=5, H=6),
measured at ``--episodes K`` (default 5000) in process CPU time (``episodes_per_second = K / cpu_seconds``;
the machine is shared, so wall time ``seconds`` is also printed) and extrapolated linearly to K = 10⁵ (the per-episode cost
does not grow with k: the tree keeps O(log K) nodes and every statistic is d×d); ``peak_mb`` comes from a
separate 500-episode run under tracemalloc (tracing slows allocation, so it is not timed). Target: LinOptVI
with the central tree privatizer on E2, K = 10⁵ in < 60 s on one core. Model construction is not timed.

    .venv/bin/python benchmarks/bench_linear_mixture.py [--episodes 5000] [--full]

``--full`` also times the K = 10⁵ LinOptVI/central/E2 run itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import emit, measure  # noqa: E402

from privrl import PrivacyBudget  # noqa: E402
from privrl.algorithms.linear_mixture import LinOptPO, LinOptVI  # noqa: E402
from privrl.envs.linear_mixture import hard_instance, random_mixture  # noqa: E402

TARGET_K = 10**5


def bench(env_name: str, model, cls, privatizer: str, K: int, extrapolate: bool = True) -> None:
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5) if privatizer != "none" else PrivacyBudget.non_private()
    est = cls(n_episodes=K, privatizer=privatizer, budget=budget)
    start, cpu = time.perf_counter(), time.process_time()   # no tracemalloc here (it slows numpy allocation)
    est.fit(model, rng=0)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    peak = measure(lambda: cls(n_episodes=min(K, 500), privatizer=privatizer, budget=budget).fit(model, rng=0))
    eps = K / cpu_seconds
    row = dict(algorithm=cls.__name__, privatizer=privatizer, env=env_name, S=model.n_states,
               A=model.n_actions, H=model.horizon, d1=model.d1, d2=model.d2, episodes=K,
               seconds=seconds, cpu_seconds=cpu_seconds, peak_mb=peak["peak_mb"], episodes_per_second=eps)
    if extrapolate:
        row["extrapolated_seconds_at_1e5"] = TARGET_K / eps
    emit("linear_mixture_online", **row)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=5000)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    envs = {"E2": random_mixture(6, 4, 5, 3, 3, rng=0), "E1": hard_instance(5, 6, TARGET_K, rng=0)}
    for env_name, model in envs.items():
        for cls in (LinOptVI, LinOptPO):
            for privatizer in ("central", "local", "none"):
                bench(env_name, model, cls, privatizer, args.episodes)
    if args.full:
        bench("E2", envs["E2"], LinOptVI, "central", TARGET_K, extrapolate=False)


if __name__ == "__main__":
    main()
