"""The benchmark's offline-control tasks: offline RL on multi-dimensional continuous states, the learned
policy's return evaluated online (registered by :mod:`privrl.bench.tasks`).

* ``cartpole-offline`` — CartPole-v1 (4-D states, 2 actions);
* ``acrobot-offline`` — Acrobot-v1 (6-D states, 3 actions);
* ``pendulum-offline`` — Pendulum-v1 (3-D states, a continuous torque in [−2, 2]).

The data are the behaviour datasets of :mod:`privrl.deep_offline.datasets` and
:mod:`privrl.deep_offline.continuous_data` (the same generators, seeded per task and seed), played by
the scripted experts with *more* exploration than the family's defaults, so that the behaviour policy
(the trivial entry, 0 on the normalised scale) is clearly worse than the greedy policy a learner can
recover from its data: CartPole ε-greedy 0.5 (return ≈ 142 of 200; the noiseless expert 200), Acrobot
ε-greedy 0.5 (≈ −165; noiseless ≈ −89), Pendulum torque noise std 2 (≈ −270; noiseless ≈ −146). At the
family's defaults (ε = 0.1, noise 0.3) the behaviour return is within a few points of the best one (200 of
200 on CartPole), and the normalised scale would be degenerate.

Privacy unit: one trajectory, **added or removed** (the relation the DP-SGD learners certify: their
Poisson-subsampling accounting is stated for it). The entries see the dataset and the public parameters
(observation bounds, the number of actions or the action bound, the training schedule T and q, derived
from the task's declared size, not from the data); the environment is used only by the score: the mean
undiscounted return of the released policy over a fixed set of evaluation episodes, seeded per task and
seed (the same episodes for every entry of a seed).

The behaviour policies and observation bounds are public constants of the tasks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl.bench.instances import evaluate_returns
from privrl.bench.spec import Instance, Metric, Output, Task, TaskInput
from privrl.data.trajectories import TrajectoryDataset
from privrl.deep_offline.continuous_data import (
    MAX_TORQUE,
    PENDULUM_OBS_BOUNDS,
    ContinuousTransitions,
    pendulum_dataset,
    pendulum_expert,
)
from privrl.deep_offline.datasets import (
    ACROBOT_OBS_BOUNDS,
    CARTPOLE_OBS_BOUNDS,
    acrobot_dataset,
    acrobot_expert,
    cartpole_dataset,
    cartpole_expert,
)
from privrl.errors import InvalidDataError
from privrl.privacy.budget import Neighboring, PrivacyUnit

__all__ = ["SETTING", "OfflineControlTruth", "offline_control_instance", "score_offline_return", "DEEP_OFFLINE_TASKS"]

#: the setting of these tasks
SETTING = "offline-control"
RETURN = Metric("return", "mean return of the learned policy, evaluated online", lower_is_better=False)


@dataclass(frozen=True)
class OfflineControlTruth:
    """The environment factory and the seeds of the evaluation episodes (only the score reads them)."""

    make_env: Callable[[], object]
    eval_seeds: tuple[int, ...]


def _batched(policy: Callable[..., float], continuous: bool) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    """A scripted behaviour policy of one observation as a policy of ``(n, k)`` observations: ``(n,)``
    actions, or ``(n, 1)`` torques."""
    if continuous:
        return lambda obs, gen: np.array([[policy(o, gen)] for o in obs])
    return lambda obs, gen: np.array([policy(o, 0, gen) for o in obs], dtype=np.int64)


def offline_control_instance(task: str, data: TrajectoryDataset | ContinuousTransitions,
                             make_env: Callable[[], object], eval_seeds: tuple[int, ...],
                             public: Mapping[str, object]) -> Instance:
    """An offline-control instance: the behaviour data (one privacy unit per episode) and the public
    parameters the entries see; the environment and its evaluation seeds are the truth."""
    inp = TaskInput(task, SETTING, PrivacyUnit.TRAJECTORY, Neighboring.ADD_OR_REMOVE_ONE,
                    n_units=int(data.n_episodes), delta=math.nan, dataset=data, public=dict(public))
    return Instance(inp, OfflineControlTruth(make_env, eval_seeds))


def score_offline_return(truth: OfflineControlTruth, out: Output) -> dict[str, float]:
    """``return`` = the mean undiscounted return of the released policy over the evaluation episodes."""
    if out.act is None:
        raise InvalidDataError("An offline-control entry returned no policy (act).")
    return {"return": float(evaluate_returns(truth.make_env, out.act, truth.eval_seeds).mean())}


@dataclass(frozen=True)
class _Env:
    """One environment of the tasks: its Gymnasium id, episode cut, the data generator and its behaviour
    policy (with the task's exploration), the public observation bounds and action description."""

    env_id: str
    max_steps: int
    collect: Callable[..., TrajectoryDataset | ContinuousTransitions]
    behaviour: Callable[..., Callable[..., float]]
    exploration: Mapping[str, float]
    bounds: tuple[np.ndarray, np.ndarray]
    actions: Mapping[str, float]

    def make_env(self) -> object:
        import gymnasium as gym  # lazy, as everywhere: `import privrl` loads no Gymnasium

        return gym.make(self.env_id, max_episode_steps=self.max_steps)


_ENVS = {
    "cartpole-offline": _Env("CartPole-v1", 200, cartpole_dataset, cartpole_expert, {"epsilon": 0.5},
                             CARTPOLE_OBS_BOUNDS, {"n_actions": 2}),
    "acrobot-offline": _Env("Acrobot-v1", 500, acrobot_dataset, acrobot_expert, {"epsilon": 0.5},
                            ACROBOT_OBS_BOUNDS, {"n_actions": 3}),
    "pendulum-offline": _Env("Pendulum-v1", 200, pendulum_dataset, pendulum_expert, {"noise": 2.0},
                             PENDULUM_OBS_BOUNDS, {"max_action": MAX_TORQUE}),
}


def _build(name: str) -> Callable[[Mapping[str, int], np.random.Generator], Instance]:
    """The builder of task ``name``: ``n`` behaviour episodes, the training schedule (``steps`` T, an
    expected ``batch`` of trajectories per step: q = batch / n) and ``eval_episodes`` seeded evaluation
    episodes."""
    env = _ENVS[name]

    def build(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
        n = int(sizes["n"])
        data = env.collect(n, max_steps=env.max_steps, rng=rng, **env.exploration)
        base = int(rng.integers(2**31))
        seeds = tuple(base + i for i in range(int(sizes["eval_episodes"])))
        continuous = "max_action" in env.actions
        public = {"obs_low": env.bounds[0], "obs_high": env.bounds[1], **env.actions,
                  "n_steps": int(sizes["steps"]), "sampling_rate": min(1.0, int(sizes["batch"]) / n),
                  "max_steps": env.max_steps,
                  "behaviour_policy": _batched(env.behaviour(*env.exploration.values()), continuous)}
        return offline_control_instance(name, data, env.make_env, seeds, public)
    return build


_TRAJ = (PrivacyUnit.TRAJECTORY, Neighboring.ADD_OR_REMOVE_ONE)
#: the profiles' sizes, the same for the three tasks (``_SIZES_NOTE`` says why)
_SIZES = {"quick": {"n": 40, "steps": 20, "batch": 10, "eval_episodes": 5, "seeds": 2},
          "full": {"n": 200, "steps": 200, "batch": 20, "eval_episodes": 20, "seeds": 3}}
_SIZES_NOTE = (
    "Sizes: the full profile has n = 200 trajectories, T = 200 DP-SGD steps of an expected 20 trajectories "
    "(q = 0.1), 20 evaluation episodes and 3 seeds; the quick profile (CI) n = 40, T = 20, q = 0.25, 5 "
    "evaluation episodes, 2 seeds. Chosen for time: the whole full leaderboard stays within 15 minutes on 2 "
    "cores, so these tasks get about 4 minutes of it (every private entry runs at 3 budgets, each calibration "
    "of z is a PLD search of seconds, and one T and q for every learner of a profile share it); the issue's "
    "target size (10⁴ trajectories) is measured by benchmarks/bench_deep_offline.py (docs/deep_offline.md).")


def _task(name: str, **fields: Any) -> Task:
    env = _ENVS[name]
    return Task(name=name, setting=SETTING, privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=RETURN,
                trivial="behaviour-policy", build=_build(name), score=score_offline_return,
                env={"id": env.env_id, "max_episode_steps": env.max_steps},
                **fields)


DEEP_OFFLINE_TASKS = (
    _task("cartpole-offline", dims={"k": 4, "A": 2}, title="CartPole-v1, offline (4-D states)",
          source="Gymnasium CartPole-v1, episodes cut at 200 steps (reward 1 per step); data of "
                 "privrl.deep_offline.datasets.cartpole_dataset",
          logging_policy="the scripted expert 1[θ + 0.5 θ̇ > 0], ε-greedy with ε = 0.5",
          reference="bc",
          sizes=_SIZES,
          optimum=200.0, optimum_label="the episode cut (200 steps balanced)",
          notes=(_SIZES_NOTE, "The reference (100) is non-private behaviour cloning; IQL is scored too.")),
    _task("acrobot-offline", dims={"k": 6, "A": 3}, title="Acrobot-v1, offline (6-D states)",
          source="Gymnasium Acrobot-v1, episodes cut at 500 steps (reward −1 per step until the goal); data of "
                 "privrl.deep_offline.datasets.acrobot_dataset",
          logging_policy="energy pumping (torque in the direction of θ̇₂), ε-greedy with ε = 0.5",
          reference="bc",
          sizes=_SIZES,
          notes=(_SIZES_NOTE, "The reference (100) is non-private behaviour cloning; IQL is scored too.")),
    _task("pendulum-offline", dims={"k": 3, "action_dim": 1}, title="Pendulum-v1, offline (continuous torque)",
          source="Gymnasium Pendulum-v1, 200-step episodes; data of "
                 "privrl.deep_offline.continuous_data.pendulum_dataset",
          logging_policy="energy swing-up + PD stabiliser, Gaussian torque noise of std 2 (clipped to [−2, 2])",
          reference="td3bc",
          sizes=_SIZES,
          notes=(_SIZES_NOTE, "The reference (100) is non-private TD3+BC at the same T and q, with Adam 1e-2, an "
                 "actor step every step and α = 0.5 (privrl.bench.entries.deep_offline.TD3BC_SETTINGS: at the "
                 "estimator's defaults 200 steps leave it at random torques). It beats the behaviour policy on 2 of "
                 "the 3 frozen seeds of the full profile; at the quick profile's 20 steps it does not (CI checks "
                 "that the cells run, not the scale).")),
)
