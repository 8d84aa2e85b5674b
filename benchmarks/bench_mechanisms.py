"""Benchmarks of the privacy layer. Prints one JSON line per measurement.

Run: ``.venv/bin/python benchmarks/bench_mechanisms.py`` (``make bench`` runs every bench_*.py);
add ``--before`` to also time the ledger's previous algorithm (grouping only, no Gaussian merging).
Timings run without tracemalloc (it slows PLD's array code ~10×); ``peak_mb`` comes from one extra
traced call (skipped, ``null``, for the slow ``--before`` runs).
"""

from __future__ import annotations

import math
import os
import sys

import dp_accounting
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import emit, measure  # noqa: E402

from privrl.privacy import Ledger, SymmetricGaussianMatrixMechanism  # noqa: E402
from privrl.privacy.accounting import epsilon_of  # noqa: E402


def bench_symmetric_release(d: int = 100, repeat: int = 200, secure: bool = False) -> None:
    mech = SymmetricGaussianMatrixMechanism(sensitivity=1.0, noise_multiplier=2.0, secure=secure)
    value = np.eye(d)
    rng = None if secure else np.random.default_rng(0)
    m = measure(lambda: mech.release(value, rng=rng), repeat=repeat)
    emit("symmetric_gaussian_release", d=d, repeat=repeat, secure=secure, seconds=m["seconds"],
         cpu_seconds=m["cpu_seconds"], releases_per_second=repeat / m["seconds"], peak_mb=m["peak_mb"])


def _events(kind: str, n: int) -> list:
    if kind == "3_kinds":  # two Gaussian multipliers and one Laplace, interleaved
        cycle = [dp_accounting.GaussianDpEvent(20.0), dp_accounting.GaussianDpEvent(50.0),
                 dp_accounting.LaplaceDpEvent(2000.0)]
        return [cycle[i % 3] for i in range(n)]
    if kind == "distinct_gaussians":  # every release its own noise multiplier
        return [dp_accounting.GaussianDpEvent(50.0 + 0.01 * i) for i in range(n)]
    if kind == "identical_gaussian":
        return [dp_accounting.GaussianDpEvent(50.0)] * n
    raise ValueError(kind)


def _epsilon_grouped_only(ledger: Ledger, delta: float, accountant: str) -> float:
    """The ledger's previous algorithm (identical events grouped, no Gaussian merging, no exact
    shortcut), kept here to report before/after numbers."""
    return epsilon_of(ledger.composed_event(), delta, accountant)


def bench_ledger_epsilon(kind: str, n: int = 10_000, delta: float = 1e-5, accountant: str = "pld",
                         method: str = "ledger") -> None:
    ledger = Ledger(_events(kind, n))
    out = {}
    if method == "ledger":
        def query():
            out["eps"] = ledger.epsilon(delta, accountant=accountant)
    else:
        def query():
            out["eps"] = _epsilon_grouped_only(ledger, delta, accountant)
    m = measure(query, repeat=1, memory=method == "ledger")
    emit("ledger_epsilon", events=n, kinds=kind, delta=delta, accountant=accountant, method=method,
         epsilon=out["eps"], seconds=m["seconds"], cpu_seconds=m["cpu_seconds"],
         peak_mb=None if math.isnan(m["peak_mb"]) else m["peak_mb"])


def main() -> None:
    bench_symmetric_release(d=100, repeat=200)
    bench_symmetric_release(d=100, repeat=5, secure=True)
    for kind in ("identical_gaussian", "3_kinds", "distinct_gaussians"):
        for accountant in ("pld", "rdp"):
            bench_ledger_epsilon(kind, accountant=accountant)
    if "--before" in sys.argv:  # the pre-merging algorithm (distinct_gaussians with PLD takes hours)
        for kind in ("identical_gaussian", "3_kinds"):
            bench_ledger_epsilon(kind, accountant="pld", method="grouped_only")


if __name__ == "__main__":
    main()
