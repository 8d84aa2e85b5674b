"""The sampler of every tabular model (:meth:`TabularMDP.sample <privrl.envs.tabular.TabularMDP.sample>`,
:meth:`SparseTabularMDP.sample <privrl.envs.sparse_tabular.SparseTabularMDP.sample>`): episodes of a
policy, an array run in lockstep or a callable ``(obs, step, rng) -> action``, as a
:class:`~privrl.data.TrajectoryDataset` (optionally padded to a fixed horizon)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.data.trajectories import TrajectoryDataset, _pad_or_explain
from privrl.envs.finite import sample_paths
from privrl.errors import InvalidParameterError

__all__ = ["resolve_max_steps", "sample_dataset"]

class SampledModel(Protocol):
    """What :func:`sample_dataset` reads of a tabular model."""

    @property
    def n_states(self) -> int: ...
    @property
    def n_actions(self) -> int: ...
    @property
    def horizon(self) -> int | None: ...
    @property
    def is_episodic(self) -> bool: ...
    @property
    def initial(self) -> np.ndarray: ...
    @property
    def terminal_states(self) -> np.ndarray: ...
    @property
    def reward_bounds(self) -> tuple[float, float]: ...
    @property
    def name(self) -> str | None: ...
    def policy_probabilities(self, policy: object) -> np.ndarray: ...


#: Safety cap on episode length when ``max_steps`` is None and episodes end only on termination.
_MAX_UNBOUNDED_STEPS = 100_000


def resolve_max_steps(model: SampledModel, max_steps: int | None, owner: str) -> int | None:
    """The step limit of a model's sampler: ``max_steps`` (at most the horizon of an episodic model),
    the horizon by default, or None (until termination) for a discounted model with terminal states."""
    if model.is_episodic:
        if max_steps is None:
            return model.horizon
        return check_scalar(max_steps, "max_steps", owner=owner, kind=int, low=1, high=model.horizon)
    if max_steps is None:
        if not model.terminal_states.any():
            raise InvalidParameterError(
                f"The 'max_steps' parameter of {owner} must be an int >= 1 for a discounted "
                "model without terminal states (its episodes never end). Got None instead."
            )
        return None
    return check_scalar(max_steps, "max_steps", owner=owner, kind=int, low=1)


def sample_dataset(model: SampledModel, policy: object, n_episodes: int, kernel: dict[str, Any], *,
                   rng: RngLike, max_steps: int | None, pad_to_horizon: int | None, owner: str) -> TrajectoryDataset:
    """The sampler of every tabular model (``TabularMDP.sample``): ``n_episodes`` episodes of
    ``policy`` from ``model`` (its ``n_states, n_actions, horizon, is_episodic, initial,
    terminal_states, reward_bounds, name`` and ``policy_probabilities``) as a
    :class:`~privrl.data.TrajectoryDataset`; ``kernel`` holds the keyword arguments of
    :func:`~privrl.envs.finite.sample_paths` that describe the dynamics and rewards (``cum_P``,
    ``reward_at``, and for sparse kernels ``next_states``, for outcome rewards ``entry_reward``)."""
    n_episodes = check_scalar(n_episodes, "n_episodes", owner=owner, kind=int, low=1)
    if pad_to_horizon is not None:
        pad_to_horizon = check_scalar(pad_to_horizon, "pad_to_horizon", owner=owner, kind=int, low=1)
        if max_steps is None and not model.is_episodic:
            max_steps = pad_to_horizon
        if max_steps is None and model.is_episodic and model.horizon is not None and pad_to_horizon < model.horizon:
            max_steps = pad_to_horizon
    gen = as_generator(rng)
    T = resolve_max_steps(model, max_steps, owner)
    S, A = model.n_states, model.n_actions
    terminal = np.asarray(model.terminal_states)
    call = policy if callable(policy) else None
    use_callable = call is not None
    # array policies: deterministic actions (H, S) or probabilities (H, S, A), per step h
    actions_at: np.ndarray | None = None
    cum_policy: np.ndarray | None = None
    if not use_callable:
        probs = model.policy_probabilities(policy)
        if np.asarray(policy).dtype.kind in "iu":
            actions_at = np.asarray(policy, dtype=np.int64)
            actions_at = actions_at[None] if actions_at.ndim == 1 else actions_at
        else:
            cum_policy = np.cumsum(probs[None] if probs.ndim == 2 else probs, axis=-1)

    limit = _MAX_UNBOUNDED_STEPS if T is None else T

    def act(state: np.ndarray, h: int, active: np.ndarray) -> np.ndarray:
        action = np.zeros(n_episodes, dtype=np.int64)
        for i in np.flatnonzero(active):
            action[i] = _check_action(call(int(state[i]), h, gen), A, owner)  # type: ignore[misc]  # act runs only with a callable policy
        return action

    def too_long() -> Exception:
        return InvalidParameterError(
            f"The 'max_steps' parameter of {owner} must be given when episodes "
            f"need not terminate. Got None and some episodes ran {limit} steps instead.")

    paths = sample_paths(cum_initial=np.cumsum(model.initial), n=n_episodes, rng=gen,
                         actions_at=actions_at, cum_policy=cum_policy, act=act if use_callable else None,
                         terminal=terminal, limit=limit, stop_at=T, on_limit=too_long, **kernel)
    mask = paths["active"]  # (E, T): the steps each episode took
    observations, actions = paths["observations"][mask], paths["actions"][mask]
    rewards, next_obs = paths["rewards"][mask].astype(float), paths["next_observations"][mask]
    terminals = terminal[next_obs]
    lengths = mask.sum(axis=1)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    fixed = model.is_episodic and bool(np.all(lengths == model.horizon))
    data = TrajectoryDataset(
        observations, actions, rewards, next_obs, starts,
        terminals=terminals, n_states=S, n_actions=A,
        horizon=model.horizon if fixed else None,
        reward_bounds=model.reward_bounds,
        metadata={"source": owner, "model": model.name},
    )
    if pad_to_horizon is None:
        return data
    return _pad_or_explain(data, pad_to_horizon, max_steps, owner)


def _check_action(action: object, n_actions: int, owner: str) -> int:
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) or not 0 <= action < n_actions:
        raise param_error("policy", owner, f"a callable returning an int action in [0, {n_actions - 1}]", action)
    return int(action)
