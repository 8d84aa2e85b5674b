"""Instances of the benchmark's tasks: data drawn from public simulators, the exact truth, scores.

One builder per setting turns a simulator, a logging policy and the profile's sizes into an
:class:`~privrl.bench.spec.Instance` — the :class:`~privrl.bench.spec.TaskInput` entries see and
the truth only the score reads — and one score per setting reads an entry's
:class:`~privrl.bench.spec.Output` against that truth:

* policy evaluation — ``value_rmse`` (RMSE of V̂ over the states, Balle et al. 2016 §6) or
  ``value_error`` (|Ĵ − J| at the start distribution), with J and V exact;
* offline learning — ``gap`` = V* − V^π̂ at the start distribution, both exact;
* online learning — ``regret``: the cumulative pseudo-regret Σ_k V₁*(s₁) − V₁^{π_k}(s₁), exact;
* continuous control — ``return``: the mean undiscounted return of the released policy over a
  fixed set of evaluation episodes (seeded; the same for every entry of a seed).

Every builder is a pure function of its sizes and generator. Models are cached per process
(they are public and deterministic); data never are.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from privrl.bench.spec import Instance, Output, TaskInput
from privrl.data import TrajectoryDataset
from privrl.envs.sparse_tabular import SparseTabularMDP
from privrl.envs.tabular import TabularMDP
from privrl.errors import InvalidDataError
from privrl.privacy.budget import Neighboring, PrivacyUnit

__all__ = ["PETruth", "OfflineTruth", "OnlineTruth", "ControlTruth", "policy_evaluation_instance",
           "offline_instance", "online_instance", "control_instance", "score_values", "score_policy",
           "score_regret", "score_return", "sparse_from_toy_text", "rescaled", "policy_regret",
           "evaluate_returns", "RewardShift"]


# --------------------------------------------------------------------------- policy evaluation
@dataclass(frozen=True)
class PETruth:
    """The exact value of the evaluation (logging) policy: ``values`` V(s) and ``J`` = initial·V."""

    values: np.ndarray
    initial: np.ndarray

    @property
    def J(self) -> float:
        return float(self.initial @ self.values)


def policy_evaluation_instance(task: str, dataset: TrajectoryDataset, truth: PETruth, *, gamma: float,
                               return_bound: float, groups: np.ndarray | None = None,
                               horizon: int | None = None, target: str = "values") -> Instance:
    """A policy-evaluation instance: on-policy logs, public γ, F_max, start distribution, groups
    (default one per state) and ``target``: ``"values"`` (the task scores V̂ per state) or
    ``"value"`` (it scores Ĵ only)."""
    if dataset.n_states is None or dataset.reward_bounds is None:
        raise InvalidDataError(f"Task {task!r}: policy-evaluation data must be tabular with declared reward bounds.")
    S = int(dataset.n_states)
    public = {"n_states": S, "n_actions": dataset.n_actions, "gamma": float(gamma),
              "reward_bounds": tuple(dataset.reward_bounds), "return_bound": float(return_bound),
              "initial": truth.initial, "groups": np.arange(S) if groups is None else np.asarray(groups),
              "horizon": horizon, "target": target}
    return Instance(TaskInput(task, "policy-evaluation", PrivacyUnit.TRAJECTORY, Neighboring.REPLACE_ONE,
                              n_units=int(dataset.n_episodes), delta=math.nan, dataset=dataset, public=public),
                    truth)


def _pe_estimates(truth: PETruth, out: Output) -> tuple[np.ndarray | None, float | None]:
    values = None if out.values is None else np.asarray(out.values, dtype=float).ravel()
    if values is not None and values.shape != truth.values.shape:
        raise InvalidDataError(f"An entry returned {values.size} state values for a task with "
                               f"{truth.values.size} states.")
    J = float(out.value) if out.value is not None else (None if values is None else float(truth.initial @ values))
    return values, J


def score_values(primary: str) -> Callable[[PETruth, Output], dict[str, float]]:
    """The policy-evaluation score with primary metric ``value_rmse`` or ``value_error``."""

    def score(truth: PETruth, out: Output) -> dict[str, float]:
        values, J = _pe_estimates(truth, out)
        rmse = math.nan if values is None else float(np.sqrt(np.mean((values - truth.values) ** 2)))
        error = math.nan if J is None else abs(J - truth.J)
        metrics = {"value_rmse": rmse, "value_error": error, "value_estimate": math.nan if J is None else J}
        return {primary: metrics[primary], **{k: v for k, v in metrics.items() if k != primary}}
    return score


# --------------------------------------------------------------------------- offline learning
@dataclass(frozen=True)
class OfflineTruth:
    """The exact model (``value(policy)``, ``optimal_value()``) and the logging policy."""

    model: Any
    logging: np.ndarray


def offline_instance(task: str, model: Any, logging: np.ndarray, n: int, rng: np.random.Generator, *,
                     features: np.ndarray | None = None, reward_bounds: tuple[float, float] = (0.0, 1.0)
                     ) -> Instance:
    """``n`` fixed-horizon episodes of ``logging`` on ``model`` (a TabularMDP, SparseTabularMDP or
    LinearMDP), with the public reward table ``(H, S, A)`` and, where given, public features."""
    H, S, A = int(model.horizon), int(model.n_states), int(model.n_actions)
    dataset = offline_dataset(model, logging, n, rng)
    reward = np.asarray(_reward_table(model), dtype=float)
    public = {"n_states": S, "n_actions": A, "horizon": H, "reward": np.broadcast_to(reward, (H, S, A)),
              "reward_bounds": reward_bounds, "initial": np.asarray(model.initial, dtype=float),
              "features": features, "groups": getattr(model, "groups", None), "logging_policy": logging}
    return Instance(TaskInput(task, "offline-learning", PrivacyUnit.TRAJECTORY, Neighboring.REPLACE_ONE,
                              n_units=n, delta=math.nan, dataset=dataset, public=public),
                    OfflineTruth(model, logging))


def _reward_table(model: Any) -> np.ndarray:
    if hasattr(model, "rewards"):          # LinearMDP
        return model.rewards
    return model.r


def offline_dataset(model: Any, logging: np.ndarray, n: int, rng: np.random.Generator) -> TrajectoryDataset:
    """Fixed-horizon episodes of ``logging`` on ``model`` as a :class:`TrajectoryDataset`."""
    H = int(model.horizon)
    if isinstance(model, (TabularMDP, SparseTabularMDP)):
        return model.sample(logging, n, rng=rng, pad_to_horizon=H)
    from privrl.envs.linear import to_dataset

    return to_dataset(model.sample(logging, n, rng=rng), n_states=model.n_states, n_actions=model.n_actions)


def score_policy(truth: OfflineTruth, out: Output) -> dict[str, float]:
    """``gap`` = V* − V^π̂ and ``policy_value`` V^π̂ (exact, at the start distribution)."""
    if out.policy is None:
        raise InvalidDataError("An offline-learning entry returned no policy.")
    value = float(truth.model.value(np.asarray(out.policy)))
    return {"gap": float(truth.model.optimal_value()) - value, "policy_value": value}


# --------------------------------------------------------------------------- online learning
@dataclass(frozen=True)
class OnlineTruth:
    """The linear mixture model and the number of episodes K."""

    model: Any
    n_episodes: int


def online_instance(task: str, model: Any, n_episodes: int) -> Instance:
    """An online task: K users, one episode each, from ``model`` (its features are public)."""
    public = {"n_states": model.n_states, "n_actions": model.n_actions, "horizon": model.horizon,
              "n_episodes": int(n_episodes), "d1": model.d1, "d2": model.d2}
    return Instance(TaskInput(task, "online-learning", PrivacyUnit.USER_EPISODE, Neighboring.REPLACE_ONE,
                              n_units=int(n_episodes), delta=math.nan, model=model, public=public),
                    OnlineTruth(model, int(n_episodes)))


@functools.lru_cache(maxsize=16)
def _tabular_of(model: Any) -> TabularMDP:
    return model.to_tabular()


def policy_regret(model: object, policy: object) -> float:
    """V₁*(s₁) − V₁^π(s₁) at the model's start distribution (exact, dynamic programming)."""
    tab = _tabular_of(model)
    return float(tab.optimal_value() - tab.value(policy))


def score_regret(truth: OnlineTruth, out: Output) -> dict[str, float]:
    """``regret`` = the cumulative pseudo-regret over the K episodes (exact)."""
    if out.regret is not None:
        per_episode = np.asarray(out.regret, dtype=float).ravel()
    elif out.policies is not None:
        cache: dict[bytes, float] = {}    # a learner often plays the same policy for many episodes
        regrets = []
        for policy in np.asarray(out.policies):
            key = policy.tobytes()
            if key not in cache:
                cache[key] = policy_regret(truth.model, policy)
            regrets.append(cache[key])
        per_episode = np.asarray(regrets)
    else:
        raise InvalidDataError("An online-learning entry returned neither its per-episode regret nor its policies.")
    if per_episode.size != truth.n_episodes:
        raise InvalidDataError(f"An online-learning entry played {per_episode.size} episodes instead of "
                               f"{truth.n_episodes}.")
    return {"regret": float(per_episode.sum()), "final_regret": float(per_episode[-max(1, truth.n_episodes // 10):]
                                                                     .mean())}


# --------------------------------------------------------------------------- continuous control
@dataclass(frozen=True)
class ControlTruth:
    """The environment factory and the seeds of the evaluation episodes."""

    make_env: Callable[[], Any]
    eval_seeds: tuple[int, ...]


def control_instance(task: str, make_env: Callable[[], object], n_samples: int, eval_seeds: tuple[int, ...],
                     *, reward_bounds: tuple[float, float] = (-1.0, 1.0)) -> Instance:
    """A continuous-control task: the learner interacts with ``make_env()`` for ``n_samples``
    steps; its reward function is the private input (sup-norm neighbours)."""
    public = {"n_samples": int(n_samples), "reward_bounds": reward_bounds}
    return Instance(TaskInput(task, "continuous-control", PrivacyUnit.REWARD_FUNCTION, Neighboring.SUP_NORM_ONE,
                              n_units=1, delta=math.nan, make_env=make_env, public=public),
                    ControlTruth(make_env, tuple(int(s) for s in eval_seeds)))


def evaluate_returns(make_env: Callable[[], Any], act: Callable[[np.ndarray], Any], seeds: tuple[int, ...]
                     ) -> np.ndarray:
    """Undiscounted returns of ``act`` (observations ``(n, d)`` → actions ``(n,)``, or ``(n, m)``
    continuous actions) on one episode per seed, all episodes stepped together (one call of ``act`` per
    step)."""
    envs = [make_env() for _ in seeds]
    obs = np.stack([np.asarray(env.reset(seed=int(s))[0], dtype=float).ravel() for env, s in zip(envs, seeds)])
    total = np.zeros(len(envs))
    live = np.ones(len(envs), dtype=bool)
    while live.any():
        idx = np.flatnonzero(live)
        actions = np.asarray(act(obs[idx]))
        actions = actions.ravel().astype(np.int64) if actions.ndim <= 1 else actions.astype(np.float32)
        for j, i in enumerate(idx):
            o, r, terminated, truncated, _ = envs[i].step(actions[j] if actions.ndim > 1 else int(actions[j]))
            obs[i] = np.asarray(o, dtype=float).ravel()
            total[i] += float(r)
            live[i] = not (terminated or truncated)
    return total


def score_return(truth: ControlTruth, out: Output) -> dict[str, float]:
    """``return`` = the mean return of the released policy over the evaluation episodes."""
    if out.act is None:
        raise InvalidDataError("A continuous-control entry returned no policy (act).")
    returns = evaluate_returns(truth.make_env, out.act, truth.eval_seeds)
    return {"return": float(returns.mean())}


class RewardShift(gym.RewardWrapper):
    """Every reward plus ``shift``: a neighbouring reward function (sup-norm distance
    ``|shift|`` ≤ 1) for the audit of continuous-control tasks."""

    def __init__(self, env: Any, shift: float) -> None:
        super().__init__(env)
        self.shift = float(shift)

    def reward(self, reward: Any) -> float:
        return float(reward) + self.shift


# --------------------------------------------------------------------------- simulators
def sparse_from_toy_text(env: Any, *, horizon: int) -> tuple[SparseTabularMDP, TabularMDP]:
    """A Gymnasium toy-text environment whose only reward is entering its goal (FrozenLake) as a
    :class:`SparseTabularMDP` with outcome rewards (``horizon`` steps at most) and as the exact
    :class:`TabularMDP` of :func:`~privrl.envs.from_gymnasium_toy_text` (same kernel, expected
    rewards) for its values."""
    from privrl.envs import from_gymnasium_toy_text

    exact = from_gymnasium_toy_text(env, gamma=0.99)
    table = env.unwrapped.P
    S, A = exact.n_states, exact.n_actions
    k = max(len(table[s][a]) for s in range(S) for a in range(A))
    nxt = np.repeat(np.arange(S)[:, None, None], A, axis=1).repeat(k, axis=2)
    probs = np.zeros((S, A, k))
    entry = np.zeros(S)
    for s in range(S):
        for a in range(A):
            if exact.terminal_states[s]:
                probs[s, a, 0] = 1.0
                continue
            for j, (p, s2, reward, _) in enumerate(table[s][a]):
                nxt[s, a, j], probs[s, a, j] = int(s2), float(p)
                if reward:
                    if entry[int(s2)] not in (0.0, float(reward)):
                        raise InvalidDataError("sparse_from_toy_text needs rewards that depend on the entered state "
                                               "only.")
                    entry[int(s2)] = float(reward)
    sparse = SparseTabularMDP(nxt, probs, horizon=horizon, entry_reward=entry, initial=exact.initial,
                              terminal_states=exact.terminal_states, name=f"{exact.name} (H={horizon})")
    return sparse, exact


def rescaled(model: TabularMDP, low: float, high: float, *, name: str) -> TabularMDP:
    """``model`` with rewards mapped affinely from [low, high] to [0, 1]; its terminal states stay
    absorbing but are no longer flagged (they earn the image of 0 at every remaining step, as the
    original earns 0), so every policy's value moves by the same affine map and the optimal
    policies are unchanged."""
    P, r = (model.P[0], model.r[0]) if model.is_stationary else (model.P, model.r)
    return TabularMDP(P, (np.asarray(r, dtype=float) - low) / (high - low), horizon=model.horizon,
                      initial=model.initial, name=name)
