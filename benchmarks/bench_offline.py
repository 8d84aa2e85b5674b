"""Speed of the offline algorithms and of the Qiao & Wang paper-scale experiments.
Prints one JSON line per measurement (``name``, ``seconds``, parameters).

Targets on one core: DP-VAPVI K=1000, H=20, d=10, |A|=100 < 0.5 s; K=10⁵ < 20 s;
DP-APVI S=100, A=10, H=20, n=10⁵ < 5 s. Data generation is not timed. With ``--paper``: ``paper-seed``
rows run seed 0 of each Qiao experiment at paper scale in this process (one core; the whole K / n grid
of every configuration); ``paper-projected`` projects all seeds on 2 cores (CPU time per seed × seeds
/ 2). Target: all Qiao paper-scale experiments together ≤ ~3 min wall on 2 cores.

    .venv/bin/python benchmarks/bench_offline.py [--paper]
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit, measure, paper_seed_projection  # noqa: E402

from privrl import PrivacyBudget  # noqa: E402
from privrl.envs.linear import sample_episodes  # noqa: E402
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp  # noqa: E402
from privrl.offline import APVI, DPAPVI, DPVAPVI, VAPVI  # noqa: E402


def bench_linear() -> None:
    mdp = synthetic_linear_mdp(horizon=20, rng=0)
    for K, repeat in ((1000, 5), (100_000, 1)):
        data = mdp.sample(synthetic_behaviour_policy(), K, rng=0)
        for name, make in (("dp-vapvi", lambda: DPVAPVI(budget=PrivacyBudget(rho=1.0), split=False)),
                           ("vapvi", lambda: VAPVI(split=False))):
            make().fit(data, mdp.features, rng=1)   # warm-up: lazy imports (dp-accounting) are not timed
            stats = measure(lambda make=make, data=data: make().fit(data, mdp.features, rng=1), repeat=repeat)
            emit(name, K=K, H=20, d=10, n_actions=100, repeat=repeat, seconds=stats["seconds_per_call"],
                 cpu_seconds=stats["cpu_seconds"] / repeat, peak_mb=stats["peak_mb"],
                 target_seconds=0.5 if K == 1000 else 20.0)


def bench_tabular() -> None:
    S, A, H, n = 100, 10, 20, 100_000
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(S, 0.5), size=(H, S, A))
    r = rng.random((H, S, A))
    data = sample_episodes(P, r, np.full(S, 1.0 / S), np.full((S, A), 1.0 / A), n, rng=1)
    for name, make in (("dp-apvi", lambda: DPAPVI(budget=PrivacyBudget(rho=1.0))),
                       ("dp-apvi-laplace", lambda: DPAPVI(budget=PrivacyBudget(epsilon=1.0))),
                       ("apvi", APVI)):
        stats = measure(lambda make=make: make().fit(data, r, rng=2), repeat=2)
        emit(name, S=S, A=A, H=H, n=n, repeat=2, seconds=stats["seconds_per_call"],
             cpu_seconds=stats["cpu_seconds"] / 2, peak_mb=stats["peak_mb"],
             target_seconds=5.0)


def bench_paper_scale() -> None:
    paper_seed_projection(("qiao2023-fig1a", "qiao2023-fig1b", "qiao2023-tabular", "frontier-offline-tabular",
                           "frontier-offline-linear"), "qiao (all five)", target_seconds=180.0)


if __name__ == "__main__":
    bench_linear()
    bench_tabular()
    if "--paper" in sys.argv:
        bench_paper_scale()
