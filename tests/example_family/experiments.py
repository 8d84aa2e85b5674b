"""``example-family-mean``: the error of the private mean return against the number of episodes.

Each seed draws n one-step episodes with returns uniform in [0, 1] from the seed's shared data
stream (every budget sees the same batch); the metric is |released mean − mean|.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl.data import TrajectoryDataset
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.privacy import PrivacyBudget

from .estimators import PrivateMeanReturn

DELTA = 1e-5
_GRID = {"smoke": [100, 1000], "quick": [100, 1000, 10_000], "paper": [100, 1000, 10_000, 100_000]}


def one_step_episodes(returns: np.ndarray) -> TrajectoryDataset:
    """A dataset of one-step episodes whose rewards are ``returns`` (in [0, 1])."""
    n = len(returns)
    zeros = np.zeros(n, dtype=int)
    return TrajectoryDataset(zeros, zeros, np.asarray(returns, dtype=float), zeros, np.arange(n + 1))


def settings(scale: str) -> list[dict[str, Any]]:
    return [{"epsilon": eps, "n": n} for eps in (1.0, math.inf) for n in _GRID[scale]]


def run(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    n, epsilon = int(params["n"]), float(params["epsilon"])
    returns = ctx.shared_rng("data").uniform(0.0, 1.0, size=n)
    budget = PrivacyBudget.non_private() if math.isinf(epsilon) else PrivacyBudget(epsilon=epsilon, delta=DELTA)
    est = PrivateMeanReturn(budget=budget).fit(one_step_episodes(returns), rng=ctx.rng)
    return RunResult.from_estimator(est, [{"n": n, "metric": "abs_error", "value": abs(est.mean_ - returns.mean())}])


EXPERIMENT = register(Experiment(
    id="example-family-mean",
    paper="example family (Dwork & Roth 2014, Thm 3.22)",
    figure="example",
    description="Private mean return against the number of episodes (the test suite's example family).",
    settings=settings,
    seeds={"smoke": 1, "quick": 3, "paper": 10},
    run=run,
    deviations=("Not a paper figure: the example family of the test suite.",),
))
