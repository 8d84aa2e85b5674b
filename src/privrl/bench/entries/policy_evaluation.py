"""Entries of Balle, Gomrokchi & Precup (2016) and of private Monte Carlo policy evaluation.

* ``lsw``, ``lsl`` — the non-private counterparts (uniform weights/relevance; LSL's λ = λ_min + √m,
  the schedule DP-LSL falls back to without noise);
* ``dp-lsw``, ``dp-lsl`` — tight calibration, the ``practical`` constants (β, and DP-LSL's λ);
  ``dp-lsw[paper]``, ``dp-lsl[paper]`` — the paper's calibration (Lemma 1's printed constants);
* ``monte-carlo``, ``dp-monte-carlo`` — the mean return Ĵ (:class:`privrl.MonteCarlo`,
  :class:`privrl.DPMonteCarlo`) and, on the tasks that ask for state values, the first-visit values
  of the task's public state groups (one group per state on the chain and FrozenLake).

Every entry gets γ, the return bound F_max and the task's public state groups: the least-squares
entries use one-hot features of the groups (tabular features where each state is its own group —
the chain, FrozenLake —, the 20 severity levels of the clinic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from privrl import policy_evaluation as pe
from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, TaskInput
from privrl.policy_evaluation.estimators import sqrt_lambda_schedule
from privrl.privacy.budget import PrivacyUnit

if TYPE_CHECKING:  # annotations only
    from privrl.privacy.budget import PrivacyBudget
    from privrl.privacy.noise import NoiseSource

__all__: list[str] = []

_PE = ("policy-evaluation",)


class _Common(TypedDict):
    gamma: float
    F_max: float


class _MonteCarloKwargs(_Common):
    groups: np.ndarray | None


def _common(task_input: TaskInput) -> _Common:
    return {"gamma": float(task_input["gamma"]), "F_max": float(task_input["return_bound"])}


def _features(task_input: TaskInput) -> np.ndarray:
    """One-hot features of the task's public state groups (one group per state: tabular features)."""
    groups = np.asarray(task_input["groups"])
    return np.eye(int(groups.max()) + 1)[groups]


def _values(est: pe.LSW | pe.LSL) -> Output:
    return Output(values=np.asarray(est.values_, dtype=float), release=np.asarray(est.theta_, dtype=float))


def _lsw(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
         noise: NoiseSource | None = None) -> Fitted:
    est = pe.LSW(features=_features(task_input), **_common(task_input))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset), _values)


def _lsl(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
         noise: NoiseSource | None = None) -> Fitted:
    phi = _features(task_input)
    S = phi.shape[0]
    lam = sqrt_lambda_schedule(task_input.n_units, phi, np.full(S, 1.0 / S), 1.0)
    est = pe.LSL(lam=lam, features=phi, **_common(task_input))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset), _values)


def _private(cls: type, calibration: str):
    def fit(task_input: TaskInput, budget: PrivacyBudget, rng: np.random.Generator,
            noise: NoiseSource | None = None) -> Fitted:
        est = cls(budget=budget, calibration=calibration, constants="practical", features=_features(task_input),
                  **_common(task_input))
        return estimator_fit(est, lambda e: e.fit(task_input.dataset, rng=rng), _values, noise=noise)
    return fit


register_entry(Entry("lsw", "LSW", _PE, "non-private", _lsw, description="first-visit least squares, one-hot "
                     "features, uniform weights (Balle et al. 2016, eq. 8)"))
register_entry(Entry("lsl", "LSL", _PE, "non-private", _lsl, description="ridge regression weighted by visit counts, "
                     "λ = λ_min + √m (eq. 11)"))
for _cls, _name, _label, _ref in ((pe.DPLSW, "dp-lsw", "DP-LSW", "lsw"), (pe.DPLSL, "dp-lsl", "DP-LSL", "lsl")):
    for _cal in ("tight", "paper"):
        register_entry(Entry(
            _name if _cal == "tight" else f"{_name}[paper]", _label if _cal == "tight" else f"{_label} [paper]",
            _PE, "private", _private(_cls, _cal), budgets=("eps",), calibration=_cal, counterpart=_ref,
            privacy_unit=PrivacyUnit.TRAJECTORY,
            description=f"{_label} (smoothed-sensitivity output perturbation), {_cal} calibration, "
                        "practical constants"))


# --------------------------------------------------------------------------- Monte Carlo
def _mc_read(est: pe.MonteCarlo) -> Output:
    values = getattr(est, "values_", None)
    group_values = getattr(est, "group_values_", None)
    release = np.concatenate([[float(est.value_)], [] if group_values is None else np.asarray(group_values, float)])
    return Output(values=None if values is None else np.asarray(values, dtype=float), value=float(est.value_),
                  release=release)


def _mc_kwargs(task_input: TaskInput) -> _MonteCarloKwargs:
    """γ, F_max and, when the task asks for state values, its public groups (else J alone, which
    then gets the whole budget)."""
    groups = task_input["groups"] if task_input.get("target") == "values" else None
    return {**_common(task_input), "groups": groups}


def _mc(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
        noise: NoiseSource | None = None) -> Fitted:
    return estimator_fit(pe.MonteCarlo(**_mc_kwargs(task_input)), lambda e: e.fit(task_input.dataset), _mc_read)


def _dp_mc(task_input: TaskInput, budget: PrivacyBudget, rng: np.random.Generator,
           noise: NoiseSource | None = None) -> Fitted:
    est = pe.DPMonteCarlo(budget=budget, **_mc_kwargs(task_input))
    return estimator_fit(est, lambda e: e.fit(task_input.dataset, rng=rng), _mc_read, noise=noise)


register_entry(Entry("monte-carlo", "Monte Carlo", _PE, "non-private", _mc,
                     description="the mean return Ĵ (and first-visit values of the public state groups where the "
                                 "task asks for state values)"))
register_entry(Entry("dp-monte-carlo", "DP Monte Carlo", _PE, "private", _dp_mc, budgets=("eps", "rho"),
                     calibration="tight", counterpart="monte-carlo", privacy_unit=PrivacyUnit.TRAJECTORY,
                     description="noise on the sums of bounded returns (and group sums and counts), tight "
                                 "calibration"))
