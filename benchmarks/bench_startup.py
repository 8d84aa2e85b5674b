"""Start-up costs: ``import privrl``, ``privrl --help`` and the sweep runner's overhead.

* ``import-privrl`` — ``python -X importtime -c "import privrl"`` in a fresh process: ``seconds`` is
  the cumulative import time of ``privrl`` that ``-X importtime`` reports (target ≤ 0.3 s), plus
  the process's wall and CPU time;
* ``privrl-help`` — ``privrl --help`` in a fresh process (wall and CPU seconds);
* ``runner-per-run`` — a sweep of the trivial ``example-gaussian`` experiment (one job, in this
  process): the runner's own cost per run (plan, execute, manifest, atomic writes);
* ``runner-pool`` — the same sweep with ``--jobs 2``: spawning and importing the worker processes.

Each row is the best of ``--repeat`` (default 3) tries: the machine is shared.

    .venv/bin/python benchmarks/bench_startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import cpu_seconds, emit  # noqa: E402


def _child(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak MB, stderr) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024.0, proc.stderr


def bench_import(repeat: int) -> None:
    best = None
    for _ in range(repeat):
        wall, cpu, peak, err = _child([sys.executable, "-X", "importtime", "-c", "import privrl"])
        cumulative = [int(m.group(1)) for m in re.finditer(r"\|\s*(\d+)\s*\|\s*privrl\s*$", err, re.M)]
        row = dict(seconds=cumulative[-1] / 1e6, process_seconds=wall, cpu_seconds=cpu, peak_mb=peak)
        best = row if best is None or row["seconds"] < best["seconds"] else best
    assert best is not None
    emit("import-privrl", repeat=repeat, target_seconds=0.3, seconds=best["seconds"],
         process_seconds=best["process_seconds"], cpu_seconds=best["cpu_seconds"], peak_mb=best["peak_mb"])


def bench_help(repeat: int) -> None:
    exe = Path(sys.executable).with_name("privrl")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "privrl", "--help"]
    runs = [_child(cmd) for _ in range(repeat)]
    wall, cpu, peak, _ = min(runs)
    emit("privrl-help", repeat=repeat, seconds=wall, cpu_seconds=cpu, peak_mb=peak)


def bench_runner(repeat: int, scale: str = "quick") -> None:
    from privrl.experiments.runner import plan_runs, run_sweep

    specs = plan_runs("example-gaussian", scale)
    for name, jobs in (("runner-per-run", 1), ("runner-pool", 2)):
        best = None
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as out:
                wall, cpu = time.perf_counter(), cpu_seconds()
                summary = run_sweep(specs, out, jobs=jobs, quiet=True)
                wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            assert summary.ok == len(specs)
            best = (wall, cpu) if best is None or wall < best[0] else best
        wall, cpu = best
        emit(name, experiment="example-gaussian", scale=scale, runs=len(specs), jobs=jobs, repeat=repeat,
             seconds=wall, cpu_seconds=cpu, seconds_per_run=wall / len(specs),
             peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
             note="driver CPU only" if jobs > 1 else "runs in this process")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    bench_import(args.repeat)
    bench_help(args.repeat)
    bench_runner(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
