"""Tiny timing helpers shared by the ``benchmarks/bench_*.py`` scripts.

Every benchmark prints one JSON line per measurement with at least ``name``, its parameters,
``seconds`` (wall), ``cpu_seconds`` and ``peak_mb`` (see CONTRIBUTING.md).
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any


def measure(fn: Callable[[], Any], repeat: int = 1, *, memory: bool = True) -> dict[str, float]:
    """Time ``repeat`` calls of ``fn()``, then (``memory=True``) one more call under tracemalloc.

    Returns ``{"seconds": total wall-clock seconds of the timed calls, "seconds_per_call",
    "cpu_seconds": CPU seconds of the timed calls (this process and its finished children: the
    steadier figure on a shared machine), "peak_mb": peak Python-heap MB of one call (NumPy arrays
    included; NaN if memory=False)}``. The timed calls run *without* tracemalloc, which slows
    allocation-heavy code several-fold.
    """
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"The 'repeat' parameter of measure must be an int in [1, inf). Got {repeat!r} instead.")
    start, cpu = time.perf_counter(), cpu_seconds()
    for _ in range(repeat):
        fn()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    peak_mb = float("nan")
    if memory:
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
        if not was_tracing:
            tracemalloc.stop()
        peak_mb = (peak - base) / 2**20
    return {"seconds": seconds, "seconds_per_call": seconds / repeat, "cpu_seconds": cpu, "peak_mb": peak_mb}


def emit(name: str, **fields: Any) -> dict[str, Any]:
    """Print one JSON line ``{"name": name, **fields}`` and return the record."""
    record = {"name": name, **fields}
    print(json.dumps(record, default=str), flush=True)
    return record


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the runner's git subprocesses)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def paper_seed_projection(experiments: Sequence[str], label: str, *, target_seconds: float, cores: int = 2) -> None:
    """One paper-scale seed of each experiment through the runner (``run_sweep``, one job, a
    temporary output): a ``paper-seed`` line each, then ``paper-projected`` — CPU × the paper's seed
    count, over ``cores`` — for the family ``label``."""
    import tempfile

    from privrl.experiments.registry import get_experiment
    from privrl.experiments.runner import plan_runs, run_sweep

    total_cpu = 0.0
    for exp_id in experiments:
        seeds = get_experiment(exp_id).n_seeds("paper")
        with tempfile.TemporaryDirectory() as out:
            specs = plan_runs(exp_id, "paper", seeds=[0])
            wall, cpu = time.perf_counter(), cpu_seconds()
            summary = run_sweep(specs, out, jobs=1, quiet=True)
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        total_cpu += cpu * seeds
        emit("paper-seed", experiment=exp_id, scale="paper", runs=len(specs), ok=summary.ok, seconds=wall,
             cpu_seconds=cpu, seeds_at_paper_scale=seeds)
    emit("paper-projected", experiment=label, scale="paper", seconds=total_cpu / cores,
         cpu_seconds=total_cpu, cores=cores, target_seconds=target_seconds)
