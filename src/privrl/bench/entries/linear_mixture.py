"""Entries of Zhou (2022): Private-LinOpt-VI and -PO on linear mixture MDPs (online).

* ``ucrl-vtr``, ``oppo`` — the non-private learners (privatizer ``"none"``);
* ``linopt-vi``, ``linopt-po`` — central privatizer (JDP), tight calibration, the estimator's
  default counter; ``linopt-vi[local]``, ``linopt-po[local]`` — the local privatizer (LDP, derived);
  ``linopt-vi[paper]``, ``linopt-po[paper]`` — central, the paper's calibration (Thm 6.4, the binary
  tree).

All use the ``practical`` constants. The learners compute their exact per-episode pseudo-regret;
the online run cannot be refitted thousands of times, so the audit of these entries is the
registered audit of their privatizer's releases (``linopt-central``, ``linopt-local``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.bench.entries import REFUSALS, estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, Task, TaskInput
from privrl.linear_mixture import LinOptPO, LinOptVI
from privrl.linear_mixture.engine import fit_many
from privrl.privacy.budget import PrivacyBudget, PrivacyUnit

if TYPE_CHECKING:  # annotations only
    from privrl.privacy.noise import NoiseSource

__all__ = ["MAX_D1"]

_ON = ("online-learning",)
#: the largest transition feature dimension d1 a task may have for the LinOpt entries: their cost
#: grows as d1³ per step (RiverSwim's d1 = 22 takes most of the suite's online time)
MAX_D1 = 100


def _applies(task: Task) -> str | None:
    d1 = task.dims.get("d")
    if d1 is not None and d1 > MAX_D1:
        return f"its features have d1 = {d1} > {MAX_D1} (cost d1³ per step)"
    return None


def _read(est: Any) -> Output:
    return Output(regret=est.regret_)


def _notes(est: object) -> list[str]:
    if getattr(est, "saturated_", False):
        return ["UtilityWarning: degenerate output: the learner's optimistic values saturate (linear regret)"]
    if getattr(est, "near_uniform_", False):
        return ["UtilityWarning: weak output: the last policy is within total variation … of uniform play at every "
                "step and state"]
    return []


def _estimator(cls: type[LinOptVI | LinOptPO], privatizer: str, calibration: str, task_input: TaskInput,
               budget: PrivacyBudget | None) -> LinOptVI | LinOptPO:
    """The learner of an entry for a task, validated (a refusal raises here, before any episode)."""
    kwargs: dict[str, Any] = {"n_episodes": int(task_input["n_episodes"]), "privatizer": privatizer,
                              "constants": "practical"}
    if privatizer == "none":
        kwargs["budget"] = PrivacyBudget.non_private()
    else:
        kwargs.update(budget=budget, calibration=calibration)
        if calibration == "paper":
            kwargs["counter"] = "tree"
    est = cls(**kwargs)
    est.noise_plan(task_input.model)      # validates the parameters and the budget, draws nothing
    return est


_BUILDERS: dict[str, tuple[type[LinOptVI | LinOptPO], str, str]] = {}


def _learner(cls: type[LinOptVI | LinOptPO], privatizer: str, calibration: str):
    def fit(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
            noise: NoiseSource | None = None) -> Fitted:
        est = _estimator(cls, privatizer, calibration, task_input, budget)
        fitted = estimator_fit(est, lambda e: e.fit(task_input.model, rng=rng), _read, noise=noise)
        fitted.notes = _notes(est)
        return fitted
    return fit


def fit_batch(calls: Sequence[tuple]) -> list[Fitted | BaseException]:
    """Every LinOpt cell of one (task, seed) advanced in lockstep
    (:func:`~privrl.linear_mixture.engine.fit_many`, planning at reachable states only: the same
    regret as one fit each up to round-off); a refusal is returned in place of its fit."""
    out: dict[int, Fitted | BaseException] = {}
    runs = []
    for i, (entry, task_input, budget, rng) in enumerate(calls):
        try:
            est = _estimator(*_BUILDERS[entry.name], task_input, budget)
        except REFUSALS as exc:
            out[i] = exc
            continue
        runs.append((i, est, task_input.model, rng))
    if runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # read from each learner's saturated_ / near_uniform_
            fit_many([r[1] for r in runs], [r[2] for r in runs], [r[3] for r in runs], reachable_only=True)
    for i, est, _, _ in runs:
        out[i] = Fitted(_read(est), estimator=est, ledger=est.privacy_ledger_ if est.is_private else None,
                        privacy_unit=est.privacy_unit, neighboring=est.neighboring, notes=_notes(est))
    return [out[i] for i in range(len(calls))]


for _cls, _alg, _base in ((LinOptVI, "vi", "ucrl-vtr"), (LinOptPO, "po", "oppo")):
    _label = f"LinOpt-{_alg.upper()}"
    _BUILDERS[_base] = (_cls, "none", "tight")
    register_entry(Entry(_base, "UCRL-VTR" if _alg == "vi" else "OPPO", _ON, "non-private",
                         _learner(_cls, "none", "tight"), batch_group="linopt", fit_batch=fit_batch, applies=_applies,
                         description=f"the non-private learner of {_label} (practical constants)"))
    for _priv, _cal, _suffix, _target, _budgets in (
            ("central", "tight", "", "linopt-central-factorization", ("eps", "rho")),
            ("local", "tight", "[local]", "linopt-local", ("eps", "rho")),
            ("central", "paper", "[paper]", "linopt-central", ("eps",))):
        _BUILDERS[f"linopt-{_alg}{_suffix}"] = (_cls, _priv, _cal)
        register_entry(Entry(
            f"linopt-{_alg}{_suffix}", f"{_label} {'JDP' if _priv == 'central' else 'LDP'}"
            + (" [paper]" if _cal == "paper" else ""), _ON, "private", _learner(_cls, _priv, _cal),
            budgets=_budgets, calibration=_cal, counterpart=_base, audit_target=_target,
            privacy_unit=PrivacyUnit.USER_EPISODE, batch_group="linopt", fit_batch=fit_batch, applies=_applies,
            description=f"{_label}, {_priv} privatizer ({'JDP' if _priv == 'central' else 'LDP'}), {_cal} "
                        "calibration, practical constants"))
