"""Speed of DP-LSW and DP-LSL (Balle et al. 2016) on the 40-state chain of §6.

One fit = first-visit statistics from the flat transition arrays + solve + smooth bound + noise,
on 10⁵ trajectories (≈ 4·10⁶ transitions). Target: < 1 s per fit on one core.

    .venv/bin/python benchmarks/bench_policy_evaluation.py [--n-trajectories N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import emit, measure  # noqa: E402

from privrl.algorithms.policy_evaluation import DPLSL, DPLSW, sqrt_lambda_schedule  # noqa: E402
from privrl.data.features import one_hot, state_aggregation  # noqa: E402
from privrl.envs.chain import sample_chain  # noqa: E402
from privrl.privacy import PrivacyBudget  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n-trajectories", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    m = args.n_trajectories
    data = sample_chain(m, rng=0)
    budget = PrivacyBudget(epsilon=0.1, delta=0.1)
    uniform = [1.0 / 40] * 40
    for features, phi in (("tabular", one_hot(40)), ("pairs", state_aggregation(40, 2))):
        estimators = {
            "dp_lsw": DPLSW(budget=budget, gamma=0.99, features=phi, F_max=1.0),
            "dp_lsl": DPLSL(budget=budget, gamma=0.99, features=phi, F_max=1.0,
                            lam=sqrt_lambda_schedule(m, phi, uniform, 1.0)),
        }
        for name, est in estimators.items():
            est.fit(data, rng=1)  # warm-up
            cpu0 = time.process_time()
            res = measure(lambda est=est: est.fit(data, rng=1), repeat=args.repeat)
            cpu = (time.process_time() - cpu0) / args.repeat
            emit(name, n_trajectories=m, n_transitions=data.n_transitions, features=features,
                 d=phi.shape[1], repeat=args.repeat, seconds=round(res["seconds_per_call"], 4),
                 cpu_seconds=round(cpu, 4),
                 peak_mb=round(res["peak_mb"], 1), data_mb=round(
                     (data.observations.nbytes + data.rewards.nbytes + data.next_observations.nbytes
                      + data.terminals.nbytes) / 2**20, 1))


if __name__ == "__main__":
    main()
