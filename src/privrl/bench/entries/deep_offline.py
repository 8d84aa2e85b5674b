"""Entries of the deep offline family (DP-SGD with one trajectory as the unit) on the offline-control tasks.

* ``bc`` / ``dp-bc`` — behaviour cloning and DP behaviour cloning (discrete actions; ``bc`` is the
  reference of the CartPole and Acrobot tasks);
* ``iql`` / ``dp-iql`` — implicit Q-learning, discrete actions (Kostrikov et al. 2022);
* ``td3bc`` / ``dp-td3bc`` — TD3+BC, continuous actions (Fujimoto & Gu 2021; ``td3bc`` is the reference
  of the Pendulum task).

Every learner trains for the task's public schedule (``n_steps`` T, ``sampling_rate`` q, the same for
every learner of a profile, so that each budget's noise multiplier is calibrated once), scales the states
by the task's public observation bounds and keeps the estimators' other defaults. The private entries are
(ε, δ)-DP per trajectory under add/remove-one neighbours at every ε of the grid (DP-SGD's Gaussian steps
take no pure-ε and no ρ budget); their audit is the family's release-point audit of one clipped noisy step
(``dp-bc-step``, ``dp-iql-step``, ``dp-td3bc-step``: refitting a network a few hundred times per cell is out
of reach). The released policy is the greedy action of the fitted policy (``predict``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.bench.entries import estimator_fit, register_entry
from privrl.bench.spec import Entry, Fitted, Output, Task, TaskInput
from privrl.deep_offline import BC, DPBC, DPIQL, DPTD3BC, IQL, TD3BC
from privrl.privacy.budget import PrivacyBudget, PrivacyUnit

if TYPE_CHECKING:
    from privrl.privacy.noise import NoiseSource

__all__: list[str] = []

_OC = ("offline-control",)
#: TD3+BC's settings for the benchmark's short schedule (T = 200): at the estimator's defaults (Adam 1e-3, an
#: actor step every second step, α = 2.5) the actor barely leaves its initialisation in 200 steps (return ≈ −1250
#: on pendulum-offline, random torques); with Adam 1e-2 (BC's and IQL's default), an actor step every step and
#: more weight on the BC term (α = 0.5) it returns −162 against the behaviour policy's −298 (seed 0 of the full
#: profile). Every step is then an actor step of sensitivity √2 C, which the private learner's noise follows.
TD3BC_SETTINGS = {"learning_rate": 1e-2, "policy_delay": 1, "alpha": 0.5}


def _discrete(task: Task) -> str | None:
    return None if "A" in task.dims else "a continuous-action task (this learner takes discrete actions)"


def _continuous(task: Task) -> str | None:
    return None if "A" not in task.dims else "a discrete-action task (TD3+BC takes continuous actions)"


def _settings(task_input: TaskInput, *, discrete: bool) -> dict[str, Any]:
    """The learner's settings from the task's public parameters."""
    kwargs: dict[str, Any] = {"n_steps": int(task_input["n_steps"]),
                              "sampling_rate": float(task_input["sampling_rate"]),
                              "obs_low": task_input["obs_low"], "obs_high": task_input["obs_high"]}
    if discrete:
        kwargs["n_actions"] = int(task_input["n_actions"])
    else:
        kwargs.update(max_action=float(task_input["max_action"]), **TD3BC_SETTINGS)
    return kwargs


def _learner(cls: type, *, private: bool, discrete: bool) -> Callable[..., Fitted]:
    def fit(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
            noise: NoiseSource | None = None) -> Fitted:
        kwargs = _settings(task_input, discrete=discrete)
        if private:
            kwargs["budget"] = budget
        est = cls(**kwargs)
        return estimator_fit(est, lambda e: e.fit(task_input.dataset, rng=rng), lambda e: Output(act=e.predict),
                             noise=noise)
    return fit


_TRAJ = PrivacyUnit.TRAJECTORY
for _plain, _private, _name, _label, _discrete_actions, _what in (
        (BC, DPBC, "bc", "BC", True, "behaviour cloning"),
        (IQL, DPIQL, "iql", "IQL", True, "implicit Q-learning (discrete actions)"),
        (TD3BC, DPTD3BC, "td3bc", "TD3+BC", False, "TD3+BC (continuous actions)")):
    _applies = _discrete if _discrete_actions else _continuous
    register_entry(Entry(_name, _label, _OC, "non-private", _learner(_plain, private=False, discrete=_discrete_actions),
                         applies=_applies, description=f"non-private {_what}, the task's T and q"))
    register_entry(Entry(f"dp-{_name}", f"DP-{_label}", _OC, "private",
                         _learner(_private, private=True, discrete=_discrete_actions), budgets=("eps",),
                         calibration="tight", counterpart=_name, applies=_applies, privacy_unit=_TRAJ,
                         audit_target=f"dp-{_name}-step",
                         description=f"DP-SGD {_what}: per-trajectory clipping, Poisson-sampled trajectories, PLD "
                                     "accounting, tight calibration (add/remove one trajectory)"))
