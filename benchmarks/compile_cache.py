"""Does a second ``privrl bench --quick`` pay the numba compilation again?

Runs ``privrl bench --quick`` twice, each time in a fresh process and a fresh ``--out`` folder, with
``NUMBA_CACHE_DIR`` set to one new, empty folder: the first run compiles every kernel it uses and
writes numba's cache there (cold), the second reads it (warm). Prints one ``compile-cache`` line per
run (wall and CPU seconds of the process and its workers, the number of cache index files) and one
``compile-cache-ratio`` line: warm CPU / cold CPU (the target: at most 0.30).

Where numba keeps its cache: ``__pycache__`` next to each kernel module when that folder is writable
(an editable or user install), else numba's user-wide cache folder; ``NUMBA_CACHE_DIR`` overrides
both (docs/bench.md, "Compilation"). Not part of ``make bench`` (a cold run costs minutes of CPU):

    .venv/bin/python benchmarks/compile_cache.py [--tasks e2-random,clinic] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit  # noqa: E402


def run_once(cache: Path, out: Path, tasks: str | None, jobs: int) -> tuple[float, float]:
    """(wall s, CPU s of the child and its workers) of one ``privrl bench --quick``."""
    cmd = [sys.executable, "-m", "privrl", "bench", "--quick", "--quiet", "--out", str(out), "--jobs", str(jobs)]
    if tasks:
        cmd += ["--tasks", tasks]
    before = os.times()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "NUMBA_CACHE_DIR": str(cache)}, stdout=subprocess.DEVNULL)
    after = os.times()
    return time.perf_counter() - start, (after.children_user - before.children_user
                                         + after.children_system - before.children_system)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=None, help="comma-separated bench tasks (default: all of --quick)")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "numba-cache"
        cache.mkdir()
        cpu = {}
        for run in ("cold", "warm"):
            seconds, cpu[run] = run_once(cache, Path(tmp) / f"out-{run}", args.tasks, args.jobs)
            emit("compile-cache", run=run, tasks=args.tasks or "all", jobs=args.jobs, seconds=round(seconds, 1),
                 cpu_seconds=round(cpu[run], 1), cache_index_files=sum(1 for _ in cache.rglob("*.nbi")),
                 load_average=os.getloadavg()[0])
        emit("compile-cache-ratio", warm_over_cold_cpu=round(cpu["warm"] / cpu["cold"], 3), target=0.30)


if __name__ == "__main__":
    main()
