"""``deep-offline-bc-cartpole``: behaviour cloning against DP behaviour cloning on CartPole-v1 data.

Each seed draws ``n`` episodes of the ε-greedy scripted expert (:func:`~privrl.deep_offline.datasets.
cartpole_dataset`, at most 200 steps) from the seed's shared data stream (every budget sees the same
data) and fits DP-BC at ε ∈ {1, 3, 8} (δ = 1e-5) and the infinite budget (BC exactly). Metrics: the
greedy policy's agreement with the expert's noiseless action on the states of fresh expert episodes
(``agreement``), and its mean return over fresh episodes (``return``, at most 200).

Not a paper figure: the first experiment of the family, unlisted (``privrl list``, ``reproduce`` and the
report skip it; ``privrl run deep-offline-bc-cartpole`` runs it) until a paper-scale run commits its metrics
and claims.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl.deep_offline.datasets import CARTPOLE_OBS_BOUNDS, cartpole_dataset, mean_return
from privrl.deep_offline.estimators import DPBC
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.privacy import PrivacyBudget

DELTA = 1e-5
MAX_STEPS = 200
#: per scale: episodes n, gradient steps T, evaluation episodes
_SIZES = {"smoke": (20, 10, 2), "quick": (200, 100, 10), "paper": (2000, 500, 50)}


def settings(scale: str) -> list[dict[str, Any]]:
    n, steps, evals = _SIZES[scale]
    return [{"epsilon": eps, "n": n, "n_steps": steps, "eval_episodes": evals} for eps in (1.0, 3.0, 8.0, math.inf)]


def expert_agreement(predict: Any, states: np.ndarray) -> float:
    """Share of ``states`` where ``predict`` takes the expert's noiseless action ``1[θ + 0.5 θ̇ > 0]``."""
    expert = (states[:, 2] + 0.5 * states[:, 3] > 0).astype(int)
    return float(np.mean(predict(states) == expert))


def run(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    n, epsilon = int(params["n"]), float(params["epsilon"])
    data = cartpole_dataset(n, max_steps=MAX_STEPS, rng=ctx.shared_rng("data"))
    held_out = cartpole_dataset(10, max_steps=MAX_STEPS, rng=ctx.shared_rng("evaluation"))
    budget = PrivacyBudget.non_private() if math.isinf(epsilon) else PrivacyBudget(epsilon=epsilon, delta=DELTA)
    low, high = CARTPOLE_OBS_BOUNDS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the smoke scale's δ ≥ 1/n warning
        est = DPBC(budget=budget, n_steps=int(params["n_steps"]), obs_low=low, obs_high=high).fit(data, rng=ctx.rng)
    rows = [{"n": n, "metric": "agreement", "value": expert_agreement(est.predict, np.asarray(held_out.observations))},
            {"n": n, "metric": "return", "value": mean_return(est.predict, "CartPole-v1", int(params["eval_episodes"]),
                                                              max_steps=MAX_STEPS, rng=ctx.rng)}]
    return RunResult.from_estimator(est, rows)


EXPERIMENT = register(Experiment(
    id="deep-offline-bc-cartpole",
    paper="privrl deep offline (DP-SGD per trajectory)",
    figure="cartpole-bc",
    description="BC against DP-BC (ε = 1, 3, 8) on ε-greedy scripted-expert CartPole-v1 data.",
    settings=settings,
    seeds={"smoke": 1, "quick": 3, "paper": 5},
    run=run,
    deviations=("Not a paper figure: trajectory-level DP-SGD behaviour cloning on locally generated data.",),
    listed=False,   # unlisted until its paper-scale metrics are committed (docs/results/metrics)
))
