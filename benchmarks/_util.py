"""Tiny timing helpers shared by the ``benchmarks/bench_*.py`` scripts.

Every benchmark prints one JSON line per measurement with at least ``name``, its parameters,
``seconds`` and ``peak_mb`` (see CONTRIBUTING.md).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any


def measure(fn: Callable[[], Any], repeat: int = 1, *, memory: bool = True) -> dict[str, float]:
    """Time ``repeat`` calls of ``fn()``, then (``memory=True``) one more call under tracemalloc.

    Returns ``{"seconds": total wall-clock seconds of the timed calls, "seconds_per_call",
    "peak_mb": peak Python-heap MB of one call (NumPy arrays included; NaN if memory=False)}``.
    The timed calls run *without* tracemalloc, which slows allocation-heavy code several-fold.
    """
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"The 'repeat' parameter of measure must be an int in [1, inf). Got {repeat!r} instead.")
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    seconds = time.perf_counter() - start
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
    return {"seconds": seconds, "seconds_per_call": seconds / repeat, "peak_mb": peak_mb}


def emit(name: str, **fields: Any) -> dict[str, Any]:
    """Print one JSON line ``{"name": name, **fields}`` and return the record."""
    record = {"name": name, **fields}
    print(json.dumps(record, default=str), flush=True)
    return record
