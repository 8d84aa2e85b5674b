"""Entries of the tabular online family (Qiao & Wang 2023's DP-UCBVI; Chowdhury & Zhou 2022's Private-UCB-VI
and -PO): exploration in an episodic tabular MDP, one user per episode.

* ``ucbvi`` — the non-private learner (Azar et al. 2017);
* ``dp-ucbvi``, ``private-ucb-vi``, ``private-ucb-po`` — central privatizer (JDP), tight calibration, the
  estimator's default counter (BLT under Gaussian budgets, the Laplace tree under a pure ε);
  ``…[local]`` — the local privatizer (LDP).

The online tasks' models are linear mixtures of tabular models; the learners run on the tabular model they
cast (the same transitions, mean rewards and initial distribution), with counts pooled over the steps
(the tasks are time-homogeneous). Regret is the exact per-episode pseudo-regret. The audit of these entries is
the registered audit of their count privatizer's releases.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, TaskInput
from privrl.envs.tabular import TabularMDP
from privrl.privacy.budget import PrivacyUnit
from privrl.tabular_online import DPUCBVI, UCBVI, PrivateUCBPO, PrivateUCBVI

__all__: list[str] = []

_ON = ("online-learning",)


def tabular_model(model: Any) -> TabularMDP:
    """The episodic tabular model behind an online task's model (its transitions, mean rewards, start)."""
    P = np.asarray(model.transitions(), dtype=float)
    r = np.asarray(model.mean_rewards(), dtype=float)
    return TabularMDP(P, np.broadcast_to(r, P.shape[:3]).copy(), horizon=P.shape[0],
                      initial=np.asarray(model.initial, dtype=float))


def _learner(cls: type, privatizer: str | None):
    def fit(task_input: TaskInput, budget: Any, rng: Any, noise: Any = None) -> Fitted:
        kwargs: dict[str, Any] = {"n_episodes": int(task_input["n_episodes"]), "pooled": True,
                                  "constants": "practical"}
        if privatizer is not None:
            kwargs.update(budget=budget, privatizer=privatizer)
        est = cls(**kwargs)
        model = tabular_model(task_input.model)
        return estimator_fit(est, lambda e: e.fit(model, rng=rng), lambda e: Output(regret=e.regret_), noise=noise)
    return fit


register_entry(Entry("ucbvi", "UCBVI", _ON, "non-private", _learner(UCBVI, None),
                     description="UCBVI (Azar et al. 2017), counts pooled over the steps, practical constants"))
for _cls, _name, _label in ((DPUCBVI, "dp-ucbvi", "DP-UCBVI"), (PrivateUCBVI, "private-ucb-vi", "Private-UCB-VI"),
                            (PrivateUCBPO, "private-ucb-po", "Private-UCB-PO")):
    for _priv, _suffix, _model in (("central", "", "JDP"), ("local", "[local]", "LDP")):
        register_entry(Entry(
            f"{_name}{_suffix}", f"{_label} {_model}", _ON, "private", _learner(_cls, _priv),
            budgets=("eps", "rho"), calibration="tight", counterpart="ucbvi",
            audit_target="tabular-online-central-blt-pooled" if _priv == "central" else "tabular-online-local-laplace",
            privacy_unit=PrivacyUnit.USER_EPISODE,
            description=f"{_label}, {_priv} privatizer ({_model}), counts pooled over the steps, tight calibration, "
                        "practical constants"))
