"""Validated trajectory datasets: :class:`TrajectoryDataset`, :func:`collect` (loading from files:
:mod:`privrl.data.sources`).

A dataset is a set of flat transition arrays of length ``n`` plus CSR episode offsets
``episode_starts`` (``(E+1,)``, ``[0] = 0``, ``[-1] = n``, strictly increasing). Every array is
checked at construction (shape, dtype, finiteness, action/state ranges, declared reward bounds,
episode structure) and stored read-only; methods that "modify" a dataset return a new one.

Rewards outside the declared ``reward_bounds`` raise :class:`~privrl.errors.InvalidDataError`:
privacy guarantees rely on these bounds, so values are clipped only when the caller asks for it
with ``clip_rewards=True`` (ARCHITECTURE.md §3).

Files (``save``/``load``) are ``.npz`` archives holding the arrays and a JSON header with the
format name and version. Writes are atomic (temporary file in the same directory, then
``os.replace``); loading a corrupt, truncated or foreign file raises ``InvalidDataError`` and never
returns a partial dataset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_bounds, check_scalar, param_error
from privrl.data._dataset import FORMAT_NAME, FORMAT_VERSION, TrajectoryDataset
from privrl.data._dataset_transforms import (
    MAX_EPISODE_LENGTH,
    max_episode_length,
    pad_to_horizon,
    rescale_rewards,
    truncate_to_horizon,
)
from privrl.data._validation_of_datasets import _OWNER, BOUNDS_ALLOWED

__all__ = ["TrajectoryDataset", "collect", "pad_to_horizon", "truncate_to_horizon", "max_episode_length",
           "MAX_EPISODE_LENGTH", "rescale_rewards",
           "FORMAT_NAME", "FORMAT_VERSION"]

#: Safety cap on the length of one collected episode when neither the environment nor
#: ``max_steps`` bounds it.
_MAX_UNBOUNDED_STEPS = 1_000_000


# ---------------------------------------------------------------------- collection
def collect(
    env_or_model: Any,
    policy: Any,
    n_trajectories: int,
    *,
    rng: RngLike,
    max_steps: int | None = None,
    reward_bounds: tuple[float, float] | None = None,
    pad_to_horizon: int | None = None,
) -> TrajectoryDataset:
    """Collect ``n_trajectories`` episodes of ``policy``.

    * A :class:`~privrl.envs.tabular.TabularMDP` is sampled exactly and fast with
      :meth:`~privrl.envs.tabular.TabularMDP.sample` (``policy`` an array or a callable).
    * Any ``gymnasium.Env`` is stepped episode by episode; ``policy`` is a callable
      ``(obs, step, rng) -> action``, or an array policy (as for tabular models) when the
      observation space is ``Discrete``. Episode ``j`` is reset with a seed drawn from ``rng``, so
      the same ``rng`` gives the same dataset. Episodes end on ``terminated``/``truncated`` or after
      ``max_steps`` steps.

    ``reward_bounds`` declares the bounds of the collected rewards; by default the model's bounds,
    or the environment's own ``reward_bounds`` attribute if it has one, else ``None`` (undeclared).

    ``pad_to_horizon=H`` returns fixed-horizon data: episodes that end in a terminal state before
    ``H`` steps are padded with absorbing zero-reward steps (:func:`pad_to_horizon`); give
    ``max_steps <= H`` so that no episode is longer.
    """
    n_trajectories = check_scalar(n_trajectories, "n_trajectories", owner="collect", kind=int, low=1)
    if pad_to_horizon is not None:
        pad_to_horizon = check_scalar(pad_to_horizon, "pad_to_horizon", owner="collect", kind=int, low=1)
    gen = as_generator(rng)
    if _samples_itself(env_or_model):  # a model (TabularMDP): no import of privrl.envs here
        data = env_or_model.sample(policy, n_trajectories, rng=gen, max_steps=max_steps)
        if reward_bounds is not None and tuple(reward_bounds) != data.reward_bounds:
            bounds = check_bounds(reward_bounds, "reward_bounds", _OWNER, allowed=BOUNDS_ALLOWED)
            data = data._rebuild(data._arrays(), data.episode_starts, reward_bounds=bounds)
    else:
        import gymnasium as gym

        if not isinstance(env_or_model, gym.Env):
            raise param_error("env_or_model", "collect", "a TabularMDP or a gymnasium.Env", type(env_or_model).__name__)
        data = _collect_gym(env_or_model, policy, n_trajectories, gen, max_steps, reward_bounds, gym)
    return data if pad_to_horizon is None else _pad_or_explain(data, pad_to_horizon, max_steps, "collect")


def _pad_or_explain(data: TrajectoryDataset, horizon: int, max_steps: int | None, owner: str) -> TrajectoryDataset:
    """:func:`pad_to_horizon` for the collectors: an episode longer than ``horizon`` is a bad
    ``max_steps`` (which bounds the episodes), not bad data."""
    if int(data.episode_lengths.max()) > horizon:
        raise param_error("max_steps", owner, f"an int <= pad_to_horizon = {horizon}, so that no episode "
                          "runs longer than the horizon", max_steps)
    return pad_to_horizon(data, horizon)


def _samples_itself(obj: object) -> bool:
    """A model that samples its own episodes into a dataset (``sample(policy, n, *, rng, max_steps)``,
    e.g. :class:`~privrl.envs.tabular.TabularMDP`), told apart by duck typing so that this module
    never imports :mod:`privrl.envs` (which imports it)."""
    return (callable(getattr(obj, "sample", None)) and callable(getattr(obj, "policy_probabilities", None))
            and not callable(getattr(obj, "step", None)))


def _collect_gym(env, policy, n_trajectories, gen, max_steps, reward_bounds, gym) -> TrajectoryDataset:
    if max_steps is not None:
        max_steps = check_scalar(max_steps, "max_steps", owner="collect", kind=int, low=1)
    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(act_space, gym.spaces.Discrete):
        raise param_error("env_or_model", "collect", "an environment with a Discrete action space", act_space)
    tabular = isinstance(obs_space, gym.spaces.Discrete)
    if not tabular and not isinstance(obs_space, gym.spaces.Box):
        raise param_error("env_or_model", "collect", "an environment with a Discrete or Box observation space",
                          obs_space)
    act_fn = _policy_callable(policy, obs_space, act_space, tabular)
    start = int(getattr(act_space, "start", 0))
    obs_start = int(getattr(obs_space, "start", 0)) if tabular else 0
    limit = max_steps if max_steps is not None else _MAX_UNBOUNDED_STEPS
    obs_l, act_l, rew_l, next_l, term_l, lengths = [], [], [], [], [], []
    for _ in range(n_trajectories):
        obs, _info = env.reset(seed=int(gen.integers(0, 2**31 - 1)))
        step = 0
        while True:
            action = act_fn(obs, step, gen)
            if not act_space.contains(action):
                raise param_error("policy", "collect", f"a callable returning actions in {act_space}", action)
            nxt, reward, terminated, truncated, _info = env.step(action)
            obs_l.append(obs)
            act_l.append(int(action) - start)
            rew_l.append(float(reward))
            next_l.append(nxt)
            term_l.append(bool(terminated))
            obs = nxt
            step += 1
            if terminated or truncated or step >= limit:
                break
        if max_steps is None and step >= limit and not (terminated or truncated):
            raise param_error(
                "max_steps", "collect", "an int >= 1 for an environment whose episodes need not end",
                f"None (an episode ran {limit} steps)",
            )
        lengths.append(step)
    if tabular:
        observations = np.asarray(obs_l, dtype=np.int64) - obs_start
        next_obs = np.asarray(next_l, dtype=np.int64) - obs_start
    else:
        observations = np.asarray(obs_l, dtype=float).reshape(len(obs_l), -1)
        next_obs = np.asarray(next_l, dtype=float).reshape(len(next_l), -1)
    if reward_bounds is None:
        declared = getattr(env.unwrapped, "reward_bounds", None)
        reward_bounds = tuple(declared) if declared is not None else None
    spec = getattr(env, "spec", None)
    # every episode truncated after the same number of steps: fixed-horizon data
    horizon = lengths[0] if len(set(lengths)) == 1 and not any(term_l) else None
    return TrajectoryDataset(
        observations, np.asarray(act_l, dtype=np.int64), np.asarray(rew_l, dtype=float), next_obs,
        np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        terminals=np.asarray(term_l, dtype=bool),
        n_states=int(obs_space.n) if tabular else None, n_actions=int(act_space.n),
        horizon=horizon, reward_bounds=reward_bounds,
        metadata={"source": "collect", "env": getattr(spec, "id", None) or type(env.unwrapped).__name__},
    )


def _policy_callable(policy, obs_space, act_space, tabular) -> Callable[[Any, int, np.random.Generator], Any]:
    if callable(policy):
        return policy
    if not tabular:
        raise param_error("policy", "collect", "a callable (obs, step, rng) -> action for a Box observation space",
                          type(policy).__name__)
    arr = np.asarray(policy)
    S, A = int(obs_space.n), int(act_space.n)
    o0, a0 = int(obs_space.start), int(act_space.start)
    def row(step: int) -> np.ndarray:
        # the policy's row for this step (a non-stationary policy covers only its own horizon)
        if arr.ndim == stationary_ndim:
            return arr
        if step >= arr.shape[0]:
            raise param_error(
                "max_steps", "collect",
                f"at most {arr.shape[0]} (the number of steps the non-stationary policy covers)",
                f"an episode reaching step {step}",
            )
        return arr[step]

    if (arr.dtype.kind in "iu" and arr.ndim in (1, 2) and arr.shape[-1] == S and arr.size and arr.min() >= 0
            and arr.max() < A):
        stationary_ndim = 1
        return lambda obs, step, rng: a0 + int(row(step)[int(obs) - o0])
    if (arr.dtype.kind == "f" and arr.ndim in (2, 3) and arr.shape[-2:] == (S, A) and np.all(arr >= 0)
            and np.allclose(arr.sum(-1), 1.0, atol=1e-6)):
        stationary_ndim = 2

        def stochastic(obs, step, rng):
            p = row(step)[int(obs) - o0]
            return a0 + int(rng.choice(A, p=p / p.sum()))

        return stochastic
    raise param_error(
        "policy", "collect",
        f"a callable, an int array (S,)/(H, S) with actions in [0, {A - 1}] or a float array (S, A)/(H, S, A) of "
        f"probabilities (S={S}, A={A})",
        f"array of dtype {arr.dtype} and shape {arr.shape}",
    )
