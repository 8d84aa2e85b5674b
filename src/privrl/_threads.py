"""One BLAS thread for the library's many tiny linear-algebra calls, and for every pool worker.

OpenBLAS (the BLAS of NumPy's and SciPy's wheels) starts a thread pool and hands each call to it;
on matrices of a few dozen entries waking and spinning the pool costs far more than the arithmetic.
SciPy's L-BFGS-B on the 4H-variable noise split of a LinOpt run spent 97 % of its CPU time
there: about 48 ms of CPU per optimisation against 1.3 ms on one thread
(``benchmarks/bench_linear_mixture.py --only-calibration``). :func:`single_threaded_blas` limits
the BLAS pools to one thread for the duration of a block; the controller is built once (building
it reads the loaded libraries: milliseconds), entering the block costs microseconds.

A sweep's process pool runs one unit of work per core already; a threaded BLAS in each worker on top
oversubscribes the cores (the small eigh/solve calls of the linear offline estimators ran up to 25×
slower on 2 busy cores). :func:`one_blas_thread_in_workers` sets the BLAS thread counts to 1 in the
environment that spawned workers inherit, unless the user set them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["BLAS_THREADS", "one_blas_thread_in_workers", "single_threaded_blas"]

#: the variables BLAS libraries read for their thread count when they load
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@functools.cache
def _controller() -> Any:
    import scipy.linalg  # noqa: F401 - loads SciPy's own BLAS, so the controller sees it too
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block with every loaded BLAS limited to one thread (restored on exit)."""
    with _controller().limit(limits=1, user_api="blas"):
        yield


@contextmanager
def one_blas_thread_in_workers() -> Iterator[None]:
    """Within the block, processes spawned from this one load their BLAS with one thread (the
    variables the user did not set are set to 1, and removed again on exit)."""
    unset = [k for k in BLAS_THREADS if k not in os.environ]
    os.environ.update({k: "1" for k in unset})
    try:
        yield
    finally:
        for k in unset:
            os.environ.pop(k, None)
