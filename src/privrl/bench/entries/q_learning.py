"""Entries of Wang & Hegde (2019): DP Q-learning with functional noise and its baselines.

* ``q-learning`` — non-private Q-learning with the authors' DQN-style loop (the reference of the
  control tasks); ``q-learning[alg1]`` — Algorithm 1's plain loop, DP Q-learning's exact counterpart;
* ``dp-q-learning`` — Algorithm 1 with functional (Gaussian-process) noise, tight calibration;
  ``dp-q-learning[paper]`` — the paper's calibration (not certified: its ledger records the ε its
  noise truly spends);
* ``input-perturbation``, ``dp-sgd`` (and their ``[paper]`` rows) — the paper's private baselines;
* ``balle-q-learning`` — the Balle-style baseline of the paper's Figure 2, on the paper's task as an
  *uncertified reference*: its guarantee protects one transition (a one-step trajectory of a DP-LSW
  regression), not the reward function, and not the values released at newly visited states
  (Wang & Hegde §4), so the control tasks score it but certify and audit nothing (its ε cell says
  why). It answers with its own Q-table: ``release`` is the table (one row per state bin), ``act``
  its greedy action.

The learners act on the task's environment for its T samples; the released policy is the greedy
policy of the released Q-function (``greedy_action``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, TaskInput
from privrl.privacy.budget import PrivacyUnit
from privrl.q_learning import DPQLearning, DPSGDQLearning, InputPerturbationQLearning, QLearning
from privrl.q_learning.balle import BalleQLearning

__all__: list[str] = []

_CC = ("continuous-control",)


#: the states at which the released Q-function is compared by the audit (its release)
AUDIT_GRID = 21


def _read(est: Any) -> Output:
    grid = np.linspace(est.obs_low_, est.obs_high_, AUDIT_GRID)
    return Output(act=est.greedy_action, release=np.asarray(est.release_q(grid), dtype=float))


def _read_balle(est: BalleQLearning) -> Output:
    """The Balle-style baseline's answer: its Q-table (``release_q`` at its own bin centres) and its
    greedy action; it has no observation bounds of its own (its states are [0, 1], binned)."""
    return Output(act=est.greedy_action, release=np.asarray(est.release_q(est.bin_centres()), dtype=float))


def _fit(cls: type, read: Any = _read, **fixed: Any):
    def fit(task_input: TaskInput, budget: Any, rng: Any, noise: Any = None) -> Fitted:
        kwargs = dict(fixed)
        if cls is not QLearning:
            kwargs["budget"] = budget
        est = cls(n_samples=int(task_input["n_samples"]), **kwargs)
        make_env = task_input.make_env
        assert make_env is not None, "a continuous-control task gives make_env"
        return estimator_fit(est, lambda e: e.fit(make_env(), rng=rng), read, noise=noise)
    return fit


_REWARD = PrivacyUnit.REWARD_FUNCTION
register_entry(Entry("q-learning", "Q-learning (DQN-style loop)", _CC, "non-private", _fit(QLearning),
                     description="non-private deep Q-learning, the authors' released loop"))
register_entry(Entry("q-learning[alg1]", "Q-learning (Algorithm 1 loop)", _CC, "non-private",
                     _fit(QLearning, config="paper"),
                     description="non-private Q-learning on Algorithm 1's plain SGD loop (DP Q-learning without "
                                 "noise)"))
for _cal in ("tight", "paper"):
    _sfx, _lsfx = ("", "") if _cal == "tight" else ("[paper]", " [paper]")
    register_entry(Entry(f"dp-q-learning{_sfx}", f"DP Q-learning{_lsfx}", _CC, "private",
                         _fit(DPQLearning, calibration=_cal), budgets=("eps",), calibration=_cal,
                         counterpart="q-learning[alg1]", privacy_unit=_REWARD,
                         description=f"Algorithm 1, functional noise, {_cal} calibration"))
    register_entry(Entry(f"input-perturbation{_sfx}", f"Input perturbation{_lsfx}", _CC, "private",
                         _fit(InputPerturbationQLearning, calibration=_cal), budgets=("eps",), calibration=_cal,
                         counterpart="q-learning", privacy_unit=_REWARD,
                         description=f"Gaussian noise on every reward, {_cal} calibration"))
    register_entry(Entry(f"dp-sgd{_sfx}", f"DP-SGD{_lsfx}", _CC, "private",
                         _fit(DPSGDQLearning, calibration=_cal), budgets=("eps",), calibration=_cal,
                         counterpart="q-learning", privacy_unit=_REWARD,
                         description=f"DP-SGD Q-learning (q = 1), {_cal} calibration"))
register_entry(Entry("balle-q-learning", "Balle-style Q-learning", _CC, "private",
                     _fit(BalleQLearning, read=_read_balle), budgets=("eps",), calibration="tight",
                     counterpart="q-learning", privacy_unit=BalleQLearning.privacy_unit,
                     uncertified_units=(_REWARD,),
                     uncertified_reason="its ε protects one transition, not the reward function, nor the values "
                                        "released at newly visited states (Wang & Hegde §4)",
                     description="DP-LSW regressions on one-step trajectories (the paper's Figure 2 baseline, "
                                 "uncertified on the control tasks)"))
