"""Private tabular exploration (``privrl.tabular_online``): speed, and the RiverSwim targets.

Prints one JSON line per measurement (``name``, parameters, ``seconds`` = wall, ``cpu_seconds`` =
process CPU time; the machine is shared, so CPU time is the steadier figure):

* ``tabular_online_fit`` — target (d): one K = 20 000 run of DP-UCBVI-JDP (ε = 1, Laplace tree) on
  RiverSwim (S = 6, H = 20) with pooled and with per-step counts (target ≤ 2 CPU-s), and 20 seeds in
  lockstep (``fit_many``) with pooled counts (target ≤ 20 CPU-s); ``--per-step`` (or ``--paper``) adds
  20 per-step seeds in lockstep (target ≤ 20 CPU-s). ``noise_cpu_seconds`` is the part spent drawing
  the ``(K − 1)·D`` Laplace numbers of the counters (the fit's sampler, seeded NumPy noise, alone:
  timed on the same count in the same chunks).
* ``tabular_online_error_bound`` — target (a)'s derivation: E_{ε,β} of the Laplace tree at K and
  K/10 against the visits per (s, a) pair ``K·H/(S·A)`` (pooled counts).
* ``tabular_online_target`` — targets (a)–(c) as measured in the committed paper-scale evidence
  (``docs/results/metrics/tabular-online-riverswim.csv.gz``: 20 seeds, mean ± s.e.): final regrets,
  the JDP privacy share at K/10 and K, and the stuck learner's regret.
* ``--paper``: ``tabular_online_experiment`` — the whole ``tabular-online-riverswim`` paper sweep
  (every setting and seed, ``run_sweep`` with two jobs) in a temporary directory: its CPU seconds
  (target: at most about 80, i.e. 40 s of wall on 2 cores).

    .venv/bin/python benchmarks/bench_tabular_online.py [--per-step] [--paper]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import cpu_seconds, emit  # noqa: E402

from privrl import DPUCBVI, PrivacyBudget  # noqa: E402
from privrl.envs.river_swim import river_swim  # noqa: E402
from privrl.privacy import NumpyNoise  # noqa: E402
from privrl.tabular_online import count_noise  # noqa: E402
from privrl.tabular_online.engine import chunk_size, fit_many  # noqa: E402

K = 20_000
S, A, H = 6, 2, 20
EVIDENCE = Path(__file__).resolve().parents[1] / "docs" / "results" / "metrics" / "tabular-online-riverswim.csv.gz"


def _estimator(pooled: bool) -> DPUCBVI:
    return DPUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=1.0), pooled=pooled, constants="practical")


def bench_fit(pooled: bool, seeds: int) -> None:
    model = river_swim(S, H)
    fit_many([DPUCBVI(n_episodes=50, budget=PrivacyBudget(epsilon=1.0), pooled=pooled)], model, [0])  # compile
    start, cpu = time.perf_counter(), cpu_seconds()
    fit_many([_estimator(pooled) for _ in range(seeds)], model, list(range(seeds)))
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    D = S * A * (S + 1) * (1 if pooled else H)
    source, step = NumpyNoise(np.random.default_rng(0)), chunk_size(seeds, D)
    noise = cpu_seconds()
    for _ in range(seeds):
        for k0 in range(0, K - 1, step):
            source.laplace((min(step, K - 1 - k0), D), 1.0)
    noise = cpu_seconds() - noise
    emit("tabular_online_fit", algorithm="DPUCBVI", privatizer="central", epsilon=1.0, env="riverswim", S=S, A=A,
         H=H, episodes=K, pooled=pooled, seeds=seeds, seconds=seconds, cpu_seconds=cpu,
         cpu_seconds_per_run=cpu / seeds, noise_cpu_seconds=noise,
         target_cpu_seconds=2.0 if seeds == 1 else 20.0, met=cpu <= (2.0 if seeds == 1 else 20.0))


def bench_error_bound() -> None:
    start = time.perf_counter()        # each row's seconds: the plans computed so far (public, no data)
    for k in (K // 10, K):
        for eps in (0.5, 1.0):
            for privatizer in ("central", "local"):
                plan = count_noise(privatizer, PrivacyBudget(epsilon=eps), n_episodes=k, horizon=H, n_states=S,
                                   n_actions=A, pooled=True)
                emit("tabular_online_error_bound", privatizer=privatizer, epsilon=eps, episodes=k,
                     error_bound=plan.error_bound, visits_per_pair=k * H / (S * A),
                     ratio=plan.error_bound / (k * H / (S * A)), seconds=time.perf_counter() - start)


def bench_targets() -> None:
    """Targets (a)–(c) from the committed metrics (nothing is run; each row's seconds: reading so far)."""
    start = time.perf_counter()
    if not EVIDENCE.is_file():
        emit("tabular_online_target", missing=str(EVIDENCE.name), seconds=time.perf_counter() - start)
        return
    from privrl.experiments.archive import read_manifests, read_table

    archive = EVIDENCE.parent
    params = {int(m["setting"]): m["params"] for m in read_manifests(archive, "tabular-online-riverswim")}
    df = read_table(archive, "tabular-online-riverswim")
    df["instance"] = [params[int(s)]["instance"] for s in df["setting"]]
    df["K"] = [int(params[int(s)]["K"]) for s in df["setting"]]
    main = df[(df["instance"] == "riverswim-6")]
    stuck = main[main["metric"] == "stuck_regret"]
    reg = main[main["metric"] == "cumulative_regret"]
    finals = reg.sort_values("episodes").groupby(["label", "K", "seed"])["value"].last().reset_index()
    for (label, k), g in finals.groupby(["label", "K"]):
        v = g["value"].to_numpy()
        emit("tabular_online_target", label=label, K=int(k), seeds=int(v.size), mean_regret=float(v.mean()),
             se=float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan,
             stuck_regret=float(stuck[stuck["K"] == k]["value"].iloc[0]), seconds=time.perf_counter() - start)
    shares = {}
    for k in sorted(finals["K"].unique()):
        at = finals[finals["K"] == k].groupby("label")["value"].mean()
        priv, base = at.get("dp-ucbvi-JDP (ε=1)"), at.get("dp-ucbvi (non-private)")
        if priv is not None and base is not None:
            shares[int(k)] = (priv - base) / priv
    emit("tabular_online_target", target="b", privacy_share=shares,
         met=bool(len(shares) == 2 and shares[max(shares)] < shares[min(shares)]), seconds=time.perf_counter() - start)
    at_k = finals[finals["K"] == K].groupby("label")["value"].mean()
    for eps in ("0.5", "1"):
        dp, hoeffding = at_k[f"dp-ucbvi-JDP (ε={eps})"], at_k[f"private-ucb-vi-JDP (ε={eps})"]
        emit("tabular_online_target", target="a", epsilon=float(eps), dp_ucbvi=float(dp),
             private_ucb_vi=float(hoeffding),
             met=bool(dp <= hoeffding), seconds=time.perf_counter() - start)
    blt, tree = at_k["dp-ucbvi-JDP (ρ=0.5, blt)"], at_k["dp-ucbvi-JDP (ρ=0.5, tree)"]
    emit("tabular_online_target", target="c", rho=0.5, blt=float(blt), tree=float(tree), met=bool(blt < tree),
         seconds=time.perf_counter() - start)


def bench_experiment() -> None:
    from privrl.experiments.runner import plan_runs, run_sweep

    with tempfile.TemporaryDirectory() as out:
        specs = plan_runs("tabular-online-riverswim", "paper")
        start, cpu = time.perf_counter(), cpu_seconds()
        summary = run_sweep(specs, out, jobs=2, quiet=True)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    emit("tabular_online_experiment", experiment="tabular-online-riverswim", scale="paper", runs=len(specs),
         ok=summary.ok, seconds=seconds, cpu_seconds=cpu, target_cpu_seconds=80.0, met=cpu <= 80.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-step", action="store_true", help="also 20 per-step seeds in lockstep")
    ap.add_argument("--paper", action="store_true", help="also 20 per-step seeds and the whole paper sweep")
    args = ap.parse_args()
    bench_fit(True, 1)
    bench_fit(False, 1)
    bench_fit(True, 20)
    if args.per_step or args.paper:
        bench_fit(False, 20)
    bench_error_bound()
    bench_targets()
    if args.paper:
        bench_experiment()


if __name__ == "__main__":
    main()
