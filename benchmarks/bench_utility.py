"""The privacy–utility benchmark: one JSON line per (algorithm, calibration,
constants, budget), side by side paper / sound / tight calibration and theory / practical constants,
with each algorithm's non-private counterpart on the same data.

Each family contributes a module ``benchmarks/utility_<family>.py`` defining
``rows(seeds: int) -> list[dict]``; every row carries ``name``, ``algorithm``, ``calibration``
(``paper``/``sound``/``tight``, ``none`` for non-private rows), ``constants``
(``theory``/``practical``), ``epsilon``, ``delta``, ``rho``, ``noise_std`` (the largest stream's),
``epsilon_spent``, ``metric``, ``value`` (mean over seeds), ``seeds`` and ``seconds``. Budgets are
(ε, δ) = (1, 10⁻⁵) unless a row says otherwise.

    .venv/bin/python benchmarks/bench_utility.py [--seeds N] [--only policy_evaluation,offline]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

REQUIRED = ("name", "algorithm", "calibration", "constants", "epsilon", "delta", "rho", "noise_std",
            "epsilon_spent", "metric", "value", "seeds", "seconds")


def families() -> list[str]:
    return sorted(p.stem.removeprefix("utility_") for p in Path(__file__).parent.glob("utility_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per row (default 5)")
    parser.add_argument("--only", default=None, help="comma-separated families (default: all)")
    args = parser.parse_args(argv)
    chosen = families() if args.only is None else [f.strip() for f in args.only.split(",")]
    for family in chosen:
        module = importlib.import_module(f"utility_{family}")
        start = time.perf_counter()
        rows = module.rows(args.seeds)
        for row in rows:
            missing = [k for k in REQUIRED if k not in row]
            if missing:
                raise SystemExit(f"utility_{family}: a row lacks {missing}: {row}")
            emit(row.pop("name"), family=family, **row)
        emit("family_total", family=family, seconds=time.perf_counter() - start, rows=len(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
