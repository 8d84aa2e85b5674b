"""The example family's ``privrl bench`` entry: ``example-mean``, the private mean return as Ĵ, the
value of the logging policy, on the undiscounted policy-evaluation tasks (γ = 1: the mean return of
the logged episodes estimates J); a discounted task is refused, with the reason.

The record names this module (``bench=("bench",)``); privrl's own families keep their entries in
``src/privrl/bench/entries/<family>.py`` (the benchmark sits on top of the families) and name them
in full.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._validation import param_error
from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, TaskInput
from privrl.privacy import PrivacyBudget, PrivacyUnit

from .estimators import PrivateMeanReturn


def _read(est: PrivateMeanReturn) -> Output:
    return Output(value=est.mean_, release=np.array([est.mean_]))


def _fit(task_input: TaskInput, budget: PrivacyBudget, rng: Any, noise: Any = None) -> Fitted:
    gamma = float(task_input["gamma"])
    if gamma != 1.0:   # a refusal: the benchmark lists the entry as refused on this task
        raise param_error("gamma", "the example-mean entry", "1 (an undiscounted task)", gamma)
    est = PrivateMeanReturn(budget=budget, return_bound=float(task_input["return_bound"]))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset, rng=rng), _read, noise=noise)


register_entry(Entry("example-mean", "private mean return (example family)", ("policy-evaluation",), "private",
                     _fit, budgets=("eps", "rho"), calibration="tight", privacy_unit=PrivacyUnit.TRAJECTORY,
                     description="the Gaussian mean of the episodes' bounded returns, as Ĵ (γ = 1 tasks)"))
