"""Speed of the lazy OU sampler and of one DP Q-learning run (issue #7 §7).

Rows (JSON lines): ``ou-sampler-scalar`` / ``ou-sampler-batch`` (1e5 fresh points; target >= 1e5
queries/s), ``ou-vs-dense`` (lazy sampler vs exact dense conditional sampling at 5000 points,
target >= 10x), ``dpql-reference-run`` (5000 samples, reference configuration, one core, target
< 10 s). Run: ``.venv/bin/python benchmarks/bench_q_learning.py``.
"""

from __future__ import annotations

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


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    import torch

    from privrl.algorithms.q_learning import DPQLearning
    from privrl.privacy.gaussian_process import OUPath

    torch.set_num_threads(1)
    n = 100_000
    xs = np.random.default_rng(0).random(n)
    for beta in (1.0, 1e5):
        lst = xs.tolist()
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        seconds = timed(lambda path=path, lst=lst: [path(x) for x in lst])
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        peak = measure(lambda path=path, lst=lst: [path(x) for x in lst])["peak_mb"]
        emit("ou-sampler-scalar", n_points=n, beta=beta, seconds=seconds, peak_mb=peak,
             queries_per_second=n / seconds)
        path = OUPath(beta=beta, sigma=1.0, rng=1)
        chunks = np.array_split(xs, 100)  # 100 batches of 1000 into a growing path
        seconds = timed(lambda path=path, chunks=chunks: [path.query(c) for c in chunks])
        emit("ou-sampler-batch", n_points=n, batch=1000, beta=beta, seconds=seconds, peak_mb=peak,
             queries_per_second=n / seconds)
    k = 5000
    pts = xs[:k]
    path = OUPath(beta=1.0, sigma=1.0, rng=2)
    lazy = timed(lambda: [path(x) for x in pts.tolist()])
    dense = timed(lambda: dense_joint(pts, 1.0, 1.0, np.random.default_rng(3)))
    peak = measure(lambda: dense_joint(pts, 1.0, 1.0, np.random.default_rng(3)))["peak_mb"]
    emit("ou-vs-dense", n_points=k, seconds=lazy, dense_seconds=dense, peak_mb=peak,
         queries_per_second=k / lazy, dense_queries_per_second=k / dense, speedup=dense / lazy)
    for sigma in (0.0, 0.4):
        est = DPQLearning(noise_std=sigma, kernel_beta=1.0, config="reference", reset="iteration", n_samples=5000)
        cpu = time.process_time()
        seconds = timed(lambda est=est: est.fit(rng=0))
        cpu = time.process_time() - cpu   # CPU seconds: robust to other processes sharing the cores
        emit("dpql-reference-run", n_samples=5000, sigma=sigma, reset="iteration", threads=1,
             seconds=seconds, cpu_seconds=cpu, peak_mb=peak_rss_mb(), peak_mb_kind="process max RSS",
             n_updates=int(est.n_updates_), final_return=float(np.mean(est.returns_[-10:])))

if __name__ == "__main__":
    main()
