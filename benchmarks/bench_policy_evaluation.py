"""Speed of DP-LSW / DP-LSL (Balle et al. 2016) and of the family's paper-scale experiments.
One JSON line per measurement (``name``, ``seconds``, parameters, ``peak_mb``).

* ``dp_lsw`` / ``dp_lsl`` — one fit from a TrajectoryDataset of 10⁵ chain trajectories (≈ 4·10⁶
  transitions): first-visit statistics + solve + smooth bound + release. Target < 1 s on one core.
* ``calibration`` — the certified tight calibration of one (ε, δ, d) (cached per process afterwards).
* ``chain_nested_statistics`` — the statistics of the nested batch grid 10 … 10⁷ of one seed (the
  experiment's data path: histogram sampling, time and memory independent of m).
* with ``--paper``: ``paper-seed`` — seed 0 of each experiment at paper scale, in this process (one core);
  ``paper-projected`` — all seeds on 2 cores (CPU time per seed × seeds / 2). Target: ≤ ~3 min.

    .venv/bin/python benchmarks/bench_policy_evaluation.py [--n-trajectories N] [--repeat R] [--paper]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from _util import emit, measure, paper_seed_projection  # noqa: E402

from privrl.data.features import one_hot, state_aggregation  # noqa: E402
from privrl.envs.chain import sample_chain, sample_chain_statistics_nested  # noqa: E402
from privrl.policy_evaluation import DPLSL, DPLSW, sqrt_lambda_schedule  # noqa: E402
from privrl.privacy import PrivacyBudget  # noqa: E402


def bench_fits(m: int, repeat: int) -> None:
    import warnings

    from privrl.errors import UtilityWarning

    warnings.simplefilter("ignore", UtilityWarning)  # δ = 1e-5 ≥ 1/m here; not what is measured
    data = sample_chain(m, rng=0)
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    uniform = [1.0 / 40] * 40
    for features, phi in (("tabular", one_hot(40)), ("pairs", state_aggregation(40, 2))):
        estimators = {
            "dp_lsw": DPLSW(budget=budget, gamma=0.99, features=phi, F_max=1.0),
            "dp_lsl": DPLSL(budget=budget, gamma=0.99, features=phi, F_max=1.0,
                            lam=sqrt_lambda_schedule(m, phi, uniform, 1.0)),
        }
        for name, est in estimators.items():
            est.fit(data, rng=1)  # warm-up: lazy imports and the cached calibration are not timed
            cpu0 = time.process_time()
            res = measure(lambda est=est: est.fit(data, rng=1), repeat=repeat)
            cpu = (time.process_time() - cpu0) / repeat
            emit(name, n_trajectories=m, n_transitions=data.n_transitions, features=features,
                 d=phi.shape[1], repeat=repeat, seconds=round(res["seconds_per_call"], 4),
                 cpu_seconds=round(cpu, 4), peak_mb=round(res["peak_mb"], 1), target_seconds=1.0)


def bench_calibration() -> None:
    from privrl.least_squares.calibration import _smoothed_gaussian

    for calibration, constants in (("tight", "theory"), ("tight", "practical"), ("sound", "theory")):
        _smoothed_gaussian.cache_clear()
        t0, c0 = time.perf_counter(), time.process_time()
        sg = _smoothed_gaussian(1.0, 1e-5, 40, calibration, "main_text", constants)
        emit("calibration", calibration=calibration, constants=constants, epsilon=1.0, delta=1e-5, d=40,
             alpha=sg.alpha, beta=sg.beta, epsilon_spent=sg.epsilon_spent, seconds=time.perf_counter() - t0,
             cpu_seconds=time.process_time() - c0)


def bench_data() -> None:
    sizes = [10, 50, 100, 500, 1000, 5000, 10**4, 5 * 10**4, 10**5, 5 * 10**5, 10**6, 3 * 10**6, 10**7]
    res = measure(lambda: sample_chain_statistics_nested(sizes, 0.99, rng=0), repeat=3)
    emit("chain_nested_statistics", largest_batch=sizes[-1], batch_sizes=len(sizes), repeat=3,
         seconds=res["seconds_per_call"], cpu_seconds=res["cpu_seconds"] / 3, peak_mb=res["peak_mb"])


def bench_paper_scale() -> None:
    paper_seed_projection(("balle2016-fig1", "frontier-policy-evaluation"), "balle (both)", target_seconds=180.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trajectories", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--paper", action="store_true", help="also project the paper-scale experiments")
    args = parser.parse_args()
    bench_calibration()
    bench_fits(args.n_trajectories, args.repeat)
    bench_data()
    if args.paper:
        bench_paper_scale()


if __name__ == "__main__":
    main()
