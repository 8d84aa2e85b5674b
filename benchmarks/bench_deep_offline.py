"""BC against DP-BC (privrl.deep_offline) on locally generated CartPole-v1 behaviour data.

Rows (JSON lines): ``deep-offline-bc`` for each ε ∈ {1, 3, 8} and ∞ (BC exactly): the fit's ``seconds``
and ``cpu_seconds`` (training; the PLD calibration apart: ``calibration_seconds``), the noise multiplier
``z``, the ledger's ``epsilon_spent`` at δ = 1e-5,
``agreement`` (share of held-out expert states where the greedy policy takes the expert's noiseless
action) and ``return`` (mean return of the greedy policy over ``--eval`` fresh episodes, at most 200).
The data: ``--episodes`` episodes of the ε-greedy scripted expert (ε = 0.1, at most 200 steps), seed 0;
one seed per budget (``--seeds`` for more).

Quick by default (CPU is shared): 200 episodes, 100 steps at q = 0.1. ``--paper`` runs 2000 episodes and
500 steps (minutes per fit). Run: ``.venv/bin/python benchmarks/bench_deep_offline.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit, measure  # noqa: E402

from privrl.deep_offline import DPBC  # noqa: E402
from privrl.deep_offline.datasets import CARTPOLE_OBS_BOUNDS, cartpole_dataset, mean_return  # noqa: E402
from privrl.deep_offline.estimators import noise_multiplier  # noqa: E402
from privrl.deep_offline.experiments import expert_agreement  # noqa: E402
from privrl.privacy import PrivacyBudget  # noqa: E402

DELTA = 1e-5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--eval", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--paper", action="store_true", help="2000 episodes, 500 steps")
    args = parser.parse_args()
    if args.paper:
        args.episodes, args.steps = 2000, 500
    data = cartpole_dataset(args.episodes, max_steps=200, rng=0)
    held_out = np.asarray(cartpole_dataset(20, max_steps=200, rng=1).observations)
    for epsilon in (1.0, 3.0, 8.0, math.inf):
        for seed in range(args.seeds):
            one_fit(data, held_out, epsilon, seed, args)


def one_fit(data, held_out: np.ndarray, epsilon: float, seed: int, args: argparse.Namespace) -> None:
    """Fit DP-BC at ``epsilon`` (∞: BC) and emit its row."""
    budget = PrivacyBudget.non_private() if math.isinf(epsilon) else PrivacyBudget(epsilon=epsilon, delta=DELTA)
    low, high = CARTPOLE_OBS_BOUNDS
    est = DPBC(budget=budget, n_steps=args.steps, sampling_rate=args.rate, obs_low=low, obs_high=high)
    calibration = measure(lambda: noise_multiplier(budget, args.rate, args.steps), memory=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timing = measure(lambda: est.fit(data, rng=seed), memory=False)   # the calibration is cached now
    emit("deep-offline-bc", epsilon=epsilon, seed=seed, episodes=args.episodes,
         transitions=int(data.n_transitions), steps=args.steps, sampling_rate=args.rate,
         z=round(est.noise_multiplier_, 4), epsilon_spent=round(est.privacy_spent(DELTA), 4),
         agreement=round(expert_agreement(est.predict, held_out), 4),
         **{"return": mean_return(est.predict, "CartPole-v1", args.eval, max_steps=200, rng=100 + seed)},
         calibration_seconds=round(calibration["seconds"], 3), seconds=timing["seconds"],
         cpu_seconds=timing["cpu_seconds"])

if __name__ == "__main__":
    main()
