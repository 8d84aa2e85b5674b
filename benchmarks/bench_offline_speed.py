"""DP-APVI fit speed at real size: CPU seconds per fit of every route on the real-like instance.

The instance is :func:`privrl.envs.real_shaped.real_shaped` with the knobs of the real-like grid
instance (``low-agreement/dense/wide/weak-clone``) at ``--states`` states (default 750; the grid's
own instances have 700), A = 25, H = 20; one logged dataset of ``--n`` episodes of the logging
policy (default 10⁵), padded to H. Every route is DP-APVI with ``constants="practical"``,
ε = 1, δ = 10⁻⁶, ``fallback="behaviour"``: states or the public groups × per-step or pooled
(``stationary=True``) × ``max_visits=1`` (pooled only) × ``cell_threshold`` 0 or 3 (σ), 12 routes.

The fits run in one process on one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1, set here before NumPy
is imported), after one untimed warm-up fit (imports and numba's compilation are not part of a
fit's cost). One JSON line per fit (``name: offline-speed``): the route, ``repeat`` fits,
``cpu_seconds`` per fit (``time.process_time``: the steadier figure on a shared machine), ``seconds``
per fit (wall), ``peak_mb`` (the process's peak resident memory so far, ``ru_maxrss``) and a digest of
the fitted Q-values, counts and policy (seeded: equal digests are bit-identical fits, to compare
two versions of the code).

    python benchmarks/bench_offline_speed.py [--states 750] [--n 100000] [--routes states-pooled-mv1-3,...]
        [--repeat 1] [--seed 7]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

DELTA = 1e-6


def routes() -> dict[str, dict[str, Any]]:
    """``{name: DP-APVI options}``: ``{states|groups}-{perstep|pooled|pooled-mv1}-{0|3}``."""
    out: dict[str, dict[str, Any]] = {}
    for unit, pooling, k in itertools.product(("states", "groups"), ("perstep", "pooled", "pooled-mv1"), (0, 3)):
        options: dict[str, Any] = {"cell_threshold": float(k)}
        if pooling != "perstep":
            options["stationary"] = True
        if pooling == "pooled-mv1":
            options["max_visits"] = 1
        out[f"{unit}-{pooling}-{k}"] = options
    return out


def instance(n_states: int) -> Any:
    """The real-like instance's knobs at ``n_states`` states."""
    from privrl.envs.real_shaped import INSTANCES, REAL_LIKE, real_shaped

    spec = INSTANCES[REAL_LIKE]
    return real_shaped(**{**spec.kwargs, "n_states": n_states}, rng=spec.seed, name=REAL_LIKE)


def fit(model: Any, data: Any, options: dict[str, Any], seed: int) -> Any:
    from privrl import PrivacyBudget
    from privrl.offline import DPAPVI

    groups = options.pop("groups", None)
    est = DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=DELTA), constants="practical", fallback="behaviour",
                 state_groups=groups, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(data, model.r, rng=seed)


def digest(est: Any) -> str:
    parts = (est.q_values_, est.counts_, est.policy_)
    return hashlib.blake2b(b"".join(np.ascontiguousarray(p).tobytes() for p in parts), digest_size=8).hexdigest()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, default=750)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--routes", default="all", help="comma-separated route names, or 'all'")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    table = routes()
    names = list(table) if args.routes == "all" else args.routes.split(",")
    unknown = [r for r in names if r not in table]
    if unknown:
        p.error(f"unknown routes {unknown}; known: {sorted(table)}")
    model = instance(args.states)
    data = model.sample(model.logging_policy, args.n, rng=1000, pad_to_horizon=model.horizon)
    fit(model, data, {"stationary": True, "cell_threshold": 3.0, "groups": model.groups}, args.seed)  # warm-up
    fit(model, data, {"stationary": True, "cell_threshold": 3.0}, args.seed)
    for name in names:
        options = dict(table[name], groups=model.groups if name.startswith("groups") else None)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.repeat):
            est = fit(model, data, dict(options), args.seed)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - start
        emit("offline-speed", route=name, n_states=model.n_states, n_actions=model.n_actions, horizon=model.horizon,
             n=args.n, epsilon=1.0, delta=DELTA, repeat=args.repeat, cpu_seconds=cpu / args.repeat,
             seconds=wall / args.repeat, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
             digest=digest(est))


if __name__ == "__main__":
    main()
