"""A private offline-RL baseline for ``privrl bench``, in one file: certainty-equivalence planning on
Laplace-noised transition counts.

Add it to the benchmark (from the repository root)::

    privrl bench --plugin examples/laplace_planner.py:LaplacePlanner --tasks random-tabular,cliffwalking --audit

Privacy unit: one trajectory, replaced (the dataset size n is public). The released statistic is the
table of counts ``n_h(s, a, s')`` of the fixed-horizon episodes, every cell included (a cell with
count 0 gets noise too). One trajectory adds 1 to exactly one cell per step, so replacing it changes
at most 2H cells by 1: the ℓ1-sensitivity is Δ₁ = 2H. Laplace noise of scale b = Δ₁/ε on every
cell makes the release ε-DP (Dwork & Roth 2014, Theorem 3.6), hence (ε, δ)-DP for every δ ≥ 0; the
fit's ledger records one ``LaplaceDpEvent(b/Δ₁)``. Everything after the release is post-processing:
P̂_h(·|s, a) ∝ max(ñ_h(s, a, ·) + ``prior``, 0) (uniform where that row is all zero), backward
induction with the task's public reward table, and the greedy policy.

The plugin protocol (``docs/bench.md``): the class attributes ``settings`` and ``privacy_unit``, a
keyword constructor taking ``budget``, ``fit(task_input, *, rng)``, a ``privacy_ledger_`` and the
answer of its setting (``policy_``), and ``release_``: the numbers the black-box audit compares,
here the noisy counts themselves — what the mechanism releases (the planned Q-function is
post-processing of them, and moves far less than the noise between neighbouring datasets, which
would hide a miscalibrated noise from the audit). As a :class:`privrl.base.PrivateEstimator` that
draws its noise through its fit's ``Releaser``, the audit can give it its noise source (and
:func:`privrl.bench.audit.broken` can scale that noise).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.base import BUDGET, PrivateEstimator, param
from privrl.envs.finite import backward_induction
from privrl.errors import InvalidParameterError
from privrl.privacy import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["LaplacePlanner"]

#: the largest count table H·S·A·S this dense planner builds (8 bytes per cell)
MAX_CELLS = 20_000_000


def _pure_budget(value: Any, name: str, owner: str) -> PrivacyBudget:
    if value.is_zcdp:
        raise InvalidParameterError(f"The '{name}' parameter of {owner} must be an (epsilon, delta) budget: the "
                                    f"Laplace mechanism gives pure epsilon-DP, not rho-zCDP. Got {value!r} instead.")
    return value


class LaplacePlanner(PrivateEstimator):
    """Certainty-equivalence planning on Laplace-noised transition counts (ε-DP per trajectory)."""

    # the benchmark's plugin attributes
    name = "laplace-planner"
    label = "Laplace-count planner (example plugin)"
    settings = ("offline-learning",)
    budgets = ("eps",)
    counterpart = None
    # the estimator contract
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    budget: PrivacyBudget = param(like=BUDGET, check=_pure_budget)
    prior: float = param("pseudo-count added to every noisy count before normalising (utility only)",
                         default=0.0, low=0.0)

    def fit(self, task_input: Any, *, rng: Any = None) -> LaplacePlanner:
        p = self._validated()
        rng = self._fit_rng(rng)
        H, S, A = int(task_input["horizon"]), int(task_input["n_states"]), int(task_input["n_actions"])
        if H * S * A * S > MAX_CELLS:
            raise InvalidParameterError(f"LaplacePlanner keeps a dense count table of H·S·A·S = {H * S * A * S:,} "
                                        f"cells, more than its limit {MAX_CELLS:,}.")
        data = task_input.dataset
        K = int(data.n_episodes)
        steps = np.tile(np.arange(H), K)
        counts = np.zeros((H, S, A, S))
        np.add.at(counts, (steps, np.asarray(data.observations), np.asarray(data.actions),
                           np.asarray(data.next_observations)), 1.0)
        rel = self._privacy(rng, n_units=K)       # the fit draws no other randomness
        budget = p["budget"]
        if budget.is_private:
            sensitivity = 2.0 * H
            counts = rel.laplace(counts, sensitivity=sensitivity, scale=sensitivity / float(budget.epsilon))
        weights = np.maximum(counts + p["prior"], 0.0)
        totals = weights.sum(axis=-1, keepdims=True)
        P = np.where(totals > 0, weights / np.where(totals > 0, totals, 1.0), 1.0 / S)
        Q, V = backward_induction(P, np.asarray(task_input["reward"], dtype=float))
        self.q_values_ = Q
        self.policy_ = Q.argmax(axis=-1)
        self.release_ = counts                    # the mechanism's release: what the black-box audit compares
        return self
