"""Entries of Qiao & Wang (2023): APVI / DP-APVI (tabular) and PEVI / VAPVI / DP-VAPVI (linear).

* ``apvi``, ``dp-apvi``, ``dp-apvi[paper]`` — on every offline task, with the task's public reward
  table ``(H, S, A)``;
* ``pevi``, ``vapvi``, ``dp-vapvi``, ``dp-vapvi[paper]`` — on the tasks that give features: the
  linear MDP's own, or one-hot state-action features on a small tabular task (a tabular MDP is a
  linear MDP with d = S·A); left out where d is too large for the time budget.

* ``one-step``, ``dp-one-step`` — one step of policy improvement on the logging policy from
  first-visit value sums (:class:`~privrl.offline.DPOneStep`; the logged rewards, not the reward
  table; the non-private entry is the same estimator with an infinite budget);
* ``apvi[auto]``, ``dp-apvi[auto]`` — the recommended route of docs/offline.md ("From logs to a
  private policy"): ``route="auto"`` (the route plan chooses groups or states, pooling, the visit
  cap, the threshold and the fallback from public sizes and the budget only; the task's public state
  groups are the candidate grouping where it has them), which also sets ``baseline="logging"`` (safe
  improvement over the logging policy estimated from the released counts). The policy scored is
  ``policy_probs_``, the stochastic policy to deploy.

All use the ``practical`` constants (privacy-neutral utility presets) and, for the linear ones,
no split (all data in both stages, as in the paper's experiments). The tabular estimators run on
every offline task: their statistics are sparse (memory grows with the data, not with H·S·A·S).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, Task, TaskInput
from privrl.offline import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI, DPOneStep
from privrl.privacy.budget import PrivacyBudget, PrivacyUnit

if TYPE_CHECKING:  # annotations only
    from privrl.privacy.noise import NoiseSource

__all__ = ["MAX_FEATURE_DIM", "MAX_PAPER_COUNT_CELLS"]

_OFF = ("offline-learning",)
#: the largest feature dimension the linear entries run with (their cost grows as d³ per step)
MAX_FEATURE_DIM = 64


def _read(est: APVI | DPAPVI | PEVI | VAPVI | DPVAPVI) -> Output:
    return Output(policy=np.asarray(est.policy_), release=np.asarray(est.q_values_, dtype=float))


def _read_counts(est: DPAPVI) -> Output:
    """DP-APVI's output; the audit compares its released noisy visit counts ñ_h(s, a): on a small
    audit instance the pessimistic Q-function is clipped to 0 everywhere, the same on both inputs,
    which would audit nothing."""
    return Output(policy=np.asarray(est.policy_), release=np.asarray(est.counts_, dtype=float))


def _linear_applies(task: Task) -> str | None:
    d = task.dims.get("d")
    if d is None:
        return "the task gives no features"
    if d > MAX_FEATURE_DIM:
        return f"its features have d = {d} > {MAX_FEATURE_DIM} (cost d³ per step)"
    return None


#: the largest noisy count table H·S·A·S on which the paper calibration of DP-APVI runs: its
#: projection (Eq. 3) sorts most of every noisy row there (a fit on the clinic's 2.8·10⁸ cells: ~20 CPU-s)
MAX_PAPER_COUNT_CELLS = 10**9


def _paper_apvi_applies(task: Task) -> str | None:
    cells = math.prod(task.dims.get(k, 1) for k in ("H", "S", "A", "S"))
    if cells > MAX_PAPER_COUNT_CELLS:
        return (f"its noisy count table has H·S·A·S = {cells:.2g} cells > {MAX_PAPER_COUNT_CELLS:.0e}: the paper "
                "calibration's noise and projection over that table take minutes per fit (the tight row runs)")
    return None


def _apvi(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
          noise: NoiseSource | None = None) -> Fitted:
    return estimator_fit(APVI(constants="practical"), lambda e: e.fit(task_input.dataset, task_input["reward"]), _read)


def _dp_apvi(calibration: str):
    def fit(task_input: TaskInput, budget: PrivacyBudget, rng: np.random.Generator,
            noise: NoiseSource | None = None) -> Fitted:
        est = DPAPVI(budget=budget, calibration=calibration, constants="practical")
        return estimator_fit(est, lambda e: e.fit(task_input.dataset, task_input["reward"], rng=rng), _read_counts,
                             noise=noise)
    return fit


def _candidate_groups(task_input: TaskInput) -> list[np.ndarray] | None:
    """The recommended route's candidate groupings: the task's public state groups (None: the
    states alone)."""
    groups = task_input.get("groups")
    return None if groups is None else [np.asarray(groups)]


def _read_deployed(est: APVI | DPAPVI) -> Output:
    """The auto route's output: the policy to deploy (``policy_probs_``: the safe baseline's
    stochastic policy); the audit compares the released noisy visit counts (as for ``dp-apvi``)."""
    counts = getattr(est, "counts_", None)
    return Output(policy=np.asarray(est.policy_probs_, dtype=float),
                  release=None if counts is None else np.asarray(counts, dtype=float))


def _apvi_auto(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
               noise: NoiseSource | None = None) -> Fitted:
    est = APVI(constants="practical", route="auto", state_groups=_candidate_groups(task_input))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset, task_input["reward"]),
                         _read_deployed)


def _dp_apvi_auto(task_input: TaskInput, budget: PrivacyBudget, rng: np.random.Generator,
                  noise: NoiseSource | None = None) -> Fitted:
    est = DPAPVI(budget=budget, constants="practical", route="auto", state_groups=_candidate_groups(task_input))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset, task_input["reward"], rng=rng), _read_deployed,
                         noise=noise)


def _one_step(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
              noise: NoiseSource | None = None) -> Fitted:
    est = DPOneStep(budget=PrivacyBudget.non_private() if budget is None else budget)
    return estimator_fit(est, lambda e: e.fit(task_input.dataset, rng=rng), _read_deployed, noise=noise)


def _linear(cls: type, **kwargs: str):
    def fit(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
            noise: NoiseSource | None = None) -> Fitted:
        private = {"budget": budget, "calibration": kwargs["calibration"]} if "calibration" in kwargs else {}
        extra = {"split": False} if cls is not PEVI else {}
        est = cls(constants="practical", **private, **extra)
        call = (lambda e: e.fit(task_input.dataset, task_input["features"], rng=rng)) if private else \
            (lambda e: e.fit(task_input.dataset, task_input["features"]))
        return estimator_fit(est, call, _read, noise=noise)
    return fit


_TRAJ = PrivacyUnit.TRAJECTORY
register_entry(Entry("apvi", "APVI", _OFF, "non-private", _apvi,
                     description="adaptive pessimistic value iteration (Yin & Wang 2021), practical constants"))
for _cal in ("tight", "paper"):
    register_entry(Entry("dp-apvi" if _cal == "tight" else "dp-apvi[paper]",
                         "DP-APVI" if _cal == "tight" else "DP-APVI [paper]", _OFF, "private", _dp_apvi(_cal),
                         budgets=("eps", "rho"), calibration=_cal, counterpart="apvi",
                         privacy_unit=_TRAJ, audit_target=None,
                         applies=None if _cal == "tight" else _paper_apvi_applies,
                         description=f"Qiao & Wang Algorithm 1 (noisy counts), {_cal} calibration, "
                                     "practical constants"))
register_entry(Entry("apvi[auto]", "APVI [auto route]", _OFF, "non-private", _apvi_auto,
                     description="APVI on the recommended route (route='auto', baseline='logging'), practical "
                                 "constants"))
register_entry(Entry("dp-apvi[auto]", "DP-APVI [auto route]", _OFF, "private", _dp_apvi_auto, budgets=("eps", "rho"),
                     calibration="tight", counterpart="apvi[auto]", privacy_unit=_TRAJ,
                     description="Qiao & Wang Algorithm 1 on the recommended route (route='auto': public-only route "
                                 "plan; baseline='logging': safe improvement), tight calibration, practical constants"))
register_entry(Entry("one-step", "One-step", _OFF, "non-private", _one_step,
                     description="one step of policy improvement on the logging policy (Brandfonbrener et al. "
                                 "2021) from first-visit value sums, SPIBB-style baseline"))
register_entry(Entry("dp-one-step", "DP-OneStep", _OFF, "private", _one_step, budgets=("eps", "rho"),
                     calibration="tight", counterpart="one-step", privacy_unit=_TRAJ,
                     description="one private step of policy improvement on the logging policy: first-visit "
                                 "value sums released as three Gaussian streams, tight calibration"))
register_entry(Entry("pevi", "PEVI", _OFF, "non-private", _linear(PEVI), applies=_linear_applies,
                     description="pessimistic value iteration (Jin et al. 2021), practical constants"))
register_entry(Entry("vapvi", "VAPVI", _OFF, "non-private", _linear(VAPVI), applies=_linear_applies,
                     description="variance-aware PEVI (Yin et al. 2022), practical constants, no split"))
for _cal in ("tight", "paper"):
    register_entry(Entry("dp-vapvi" if _cal == "tight" else "dp-vapvi[paper]",
                         "DP-VAPVI" if _cal == "tight" else "DP-VAPVI [paper]", _OFF, "private",
                         _linear(DPVAPVI, calibration=_cal), budgets=("eps", "rho"), calibration=_cal,
                         counterpart="vapvi", applies=_linear_applies, privacy_unit=_TRAJ,
                         description=f"Qiao & Wang Algorithm 2 (noisy regressions), {_cal} calibration, practical "
                                     "constants, no split"))
