"""One BLAS thread for the library's many tiny linear-algebra calls.

OpenBLAS (the BLAS of NumPy's and SciPy's wheels) starts a thread pool and hands each call to it;
on matrices of a few dozen entries waking and spinning the pool costs far more than the arithmetic.
SciPy's L-BFGS-B on the 4H-variable noise split of a LinOpt run spent 97 % of its CPU time
there: about 48 ms of CPU per optimisation against 1.3 ms on one thread
(``benchmarks/bench_linear_mixture.py --only-calibration``). :func:`single_threaded_blas` limits
the BLAS pools to one thread for the duration of a block; the controller is built once (building
it reads the loaded libraries: milliseconds), entering the block costs microseconds.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["single_threaded_blas"]


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
