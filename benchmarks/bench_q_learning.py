"""Speed of the lazy OU sampler and of DP Q-learning runs.

Rows (JSON lines, each with ``name`` and ``seconds``; run times also carry ``cpu_seconds``, the
robust figure on a shared machine):

* ``ou-sampler-scalar`` / ``ou-sampler-batch``: 1e5 fresh points (target >= 1e5 queries/s);
* ``ou-vs-dense``: lazy sampler vs exact dense conditional sampling at 5000 points (target >= 10x);
* ``dpql-reference-run``: 5000 samples, reference configuration, one core, sigma = 0 and 0.4
  (target < 5 s), NumPy learner; ``dpql-reference-run-torch``: the same with the PyTorch reference
  learner, for the before/after comparison;
* ``dpql-paper-certified``: DPQLearning, Algorithm 1's loop, paper calibration at (0.9, 1e-4);
* ``input-perturbation-run``, ``dpsgd-run`` (reference configuration, sound calibration) and
  ``balle-run``: the baselines of Figure 2 at 5000 samples;
* ``dpql-vs-torch``: the ratio of the two (CPU seconds), the "≥ 5× the authors' code" figure;
* with ``--paper``: ``wang-paper`` — every paper-scale run of ``wang2019-fig1``/``-fig2a``/``-fig2b``
  and ``frontier-q-learning`` (all seeds), grouped and batched as the runner does (lockstep batches of
  one training loop over all seeds), in this process; ``wang-paper-total`` their CPU seconds and
  the wall time on 2 cores if they split evenly; ``wang-quick`` the same at the quick scale.

Run: ``.venv/bin/python benchmarks/bench_q_learning.py [--paper]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit, measure  # noqa: E402


def dense_joint(xs: np.ndarray, beta: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Exact dense sampling of the same 5000 values: Cholesky of the full kernel matrix (what
    conditioning on *all* stored points amounts to, without the Markov shortcut), O(n^3)."""
    K = np.exp(-beta * np.abs(xs[:, None] - xs[None, :]))
    L = np.linalg.cholesky(K + 1e-12 * np.eye(len(xs)))
    return sigma * (L @ rng.standard_normal(len(xs)))


def timed(fn) -> float:
    """Wall seconds without tracemalloc (which slows Python-level loops several-fold)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_cpu(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process)."""
    cpu = time.process_time()
    wall = timed(fn)
    return wall, time.process_time() - cpu


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_sampler() -> None:
    from privrl.q_learning.gaussian_process import OUPath

    n = 100_000
    xs = np.random.default_rng(0).random(n)
    for beta in (1.0, 1e5):
        lst = xs.tolist()
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        seconds, cpu = timed_cpu(lambda path=path, lst=lst: [path(x) for x in lst])
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        peak = measure(lambda path=path, lst=lst: [path(x) for x in lst])["peak_mb"]
        emit("ou-sampler-scalar", n_points=n, beta=beta, seconds=seconds, cpu_seconds=cpu, peak_mb=peak,
             queries_per_second=n / seconds)
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        chunks = np.array_split(xs, 100)  # 100 batches of 1000 into a growing path
        seconds, cpu = timed_cpu(lambda path=path, chunks=chunks: [path.query(c) for c in chunks])
        emit("ou-sampler-batch", n_points=n, batch=1000, beta=beta, seconds=seconds, cpu_seconds=cpu, peak_mb=peak,
             queries_per_second=n / seconds)
    k = 5000
    pts = xs[:k]
    path = OUPath(beta=1.0, sigma=1.0, rng=2)
    lazy, cpu = timed_cpu(lambda: [path(x) for x in pts.tolist()])
    dense = timed(lambda: dense_joint(pts, 1.0, 1.0, np.random.default_rng(3)))
    peak = measure(lambda: dense_joint(pts, 1.0, 1.0, np.random.default_rng(3)))["peak_mb"]
    emit("ou-vs-dense", n_points=k, seconds=lazy, cpu_seconds=cpu, dense_seconds=dense, peak_mb=peak,
         queries_per_second=k / lazy, dense_queries_per_second=k / dense, speedup=dense / lazy)


def _fit_row(name: str, est, **fields) -> dict:
    wall, cpu = timed_cpu(lambda: est.fit(rng=0))
    return emit(name, n_samples=5000, threads=1, seconds=wall, cpu_seconds=cpu, peak_mb=peak_rss_mb(),
                peak_mb_kind="process max RSS", n_updates=int(getattr(est, "n_updates_", 0)),
                final_return=float(np.mean(est.returns_[-10:])), **fields)


def bench_runs() -> None:
    from privrl.privacy import PrivacyBudget
    from privrl.q_learning import (
        DPQLearning,
        DPSGDQLearning,
        InputPerturbationQLearning,
    )
    from privrl.q_learning.balle import BalleQLearning

    for sigma in (0.0, 0.4):
        ours = _fit_row("dpql-reference-run", DPQLearning(budget=None, noise_std=sigma, kernel_beta=1.0,
                                                          config="reference", reset="iteration", n_samples=5000),
                        sigma=sigma, reset="iteration", backend="numpy")
    import torch

    torch.set_num_threads(1)
    torch_ref = DPQLearning(budget=None, noise_std=0.4, kernel_beta=1.0, config="reference", reset="iteration",
                            n_samples=5000)
    torch_ref._backend = "torch"   # the PyTorch reference learner
    ref = _fit_row("dpql-reference-run-torch", torch_ref, sigma=0.4, reset="iteration", backend="torch")
    emit("dpql-vs-torch", sigma=0.4, seconds=ours["seconds"], cpu_seconds=ours["cpu_seconds"],
         torch_cpu_seconds=ref["cpu_seconds"], peak_mb=ours["peak_mb"],
         speedup=ref["cpu_seconds"] / ours["cpu_seconds"], target_speedup=5.0)
    budget = PrivacyBudget(epsilon=0.9, delta=1e-4)
    _fit_row("dpql-paper-certified", DPQLearning(budget=budget, calibration="paper", config="paper", n_samples=5000),
             epsilon=0.9, delta=1e-4, calibration="paper")
    _fit_row("dpql-tight-certified", DPQLearning(budget=budget, config="paper", n_samples=5000),
             epsilon=0.9, delta=1e-4, calibration="tight")
    _fit_row("input-perturbation-run", InputPerturbationQLearning(budget=budget, config="reference", n_samples=5000),
             epsilon=0.9, delta=1e-4, calibration="tight")
    _fit_row("dpsgd-run", DPSGDQLearning(budget=budget, config="reference", n_samples=5000),
             epsilon=0.9, delta=1e-4, calibration="tight")
    _fit_row("balle-run", BalleQLearning(budget=budget, n_samples=5000, n_rounds=10), epsilon=0.9, delta=1e-4)


WANG_EXPERIMENTS = ("wang2019-fig1", "wang2019-fig2a", "wang2019-fig2b", "frontier-q-learning")


def bench_scale(scale: str) -> None:
    """Every run of the four experiments at ``scale``, grouped and batched as the runner does."""
    import warnings

    from privrl.experiments.runner import execute_runs, group_runs, plan_runs

    total = 0.0
    for eid in WANG_EXPERIMENTS:
        specs = plan_runs(eid, scale)
        cpu, wall = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            groups = group_runs(specs)
            failed = sum(o.status != "ok" for group in groups for o in execute_runs(group))
        cpu = time.process_time() - cpu
        total += cpu
        emit(f"wang-{scale}", experiment=eid, scale=scale, runs=len(specs), groups=len(groups), failed=failed,
             seconds=time.perf_counter() - wall, cpu_seconds=cpu, peak_mb=peak_rss_mb())
    emit(f"wang-{scale}-total", scale=scale, cores=2, cpu_seconds=total, seconds=total / 2, peak_mb=peak_rss_mb(),
         note="wall time if the CPU seconds split evenly over 2 cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", "--projection", action="store_true", dest="paper",
                        help="also run the four Wang & Hegde experiments at quick and paper scale")
    args = parser.parse_args()
    bench_sampler()
    bench_runs()
    if args.paper:
        bench_scale("quick")
        bench_scale("paper")


if __name__ == "__main__":
    main()
