"""Maps from a :class:`~privrl.data.trajectories.TrajectoryDataset` to another, per trajectory and
with public parameters only (a private algorithm run on the result keeps its guarantee): the
fixed-horizon form (:func:`pad_to_horizon`, :func:`truncate_to_horizon`), the public bound on the
episodes' length (:func:`max_episode_length`) and :func:`rescale_rewards`."""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._validation import check_bounds, check_scalar, param_error
from privrl.data._dataset import TrajectoryDataset
from privrl.data._validation_of_datasets import _OWNER, BOUNDS_ALLOWED
from privrl.errors import InvalidDataError


def pad_to_horizon(dataset: TrajectoryDataset, horizon: int) -> TrajectoryDataset:
    """Variable-length episodes as fixed-horizon data: every episode shorter than ``horizon`` that
    ends in a terminal state is extended with absorbing steps until it has ``horizon`` steps.

    A padding step stays in the terminal state the episode entered (``observation =
    next_observation =`` that state), takes action 0 and gets reward 0: exactly what an absorbing,
    zero-reward terminal state yields under any action, so the fixed-horizon MDP the padded data
    come from has the same values as the original episodic task (the form APVI, PEVI and VAPVI,
    Qiao & Wang 2023, need; :func:`privrl.envs.from_gymnasium_toy_text` builds the matching
    model). The ``terminals`` flag moves to the last step of each padded episode. When
    ``reward_bounds`` exclude 0 they are widened to include it (the absorbing reward).

    Episodes longer than ``horizon`` are cut first with :func:`truncate_to_horizon`.

    Raises :class:`InvalidParameterError` when an episode is longer than ``horizon`` and
    :class:`InvalidDataError` when a shorter episode does not end in a terminal state (a
    truncated episode cannot be completed) or the dataset has no ``terminals``. Episodes of
    exactly ``horizon`` steps are kept as they are. The result has ``horizon`` set.
    """
    owner = "pad_to_horizon"
    if not isinstance(dataset, TrajectoryDataset):
        raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
    horizon = check_scalar(horizon, "horizon", owner=owner, kind=int, low=1)
    lengths = dataset.episode_lengths
    if int(lengths.max()) > horizon:
        raise param_error("horizon", owner, "at least the length of the longest episode", horizon)
    short = lengths < horizon
    if not short.any():
        return dataset if dataset.horizon == horizon else dataset._rebuild(
            dataset._arrays(), dataset.episode_starts, horizon=horizon)
    last = dataset.episode_starts[1:] - 1
    terminals = dataset.terminals
    if terminals is None:
        raise InvalidDataError(
            f"{owner} needs a dataset with 'terminals': only episodes that end in a terminal state "
            "can be padded."
        )
    if np.any(short & ~terminals[last]):
        raise InvalidDataError(
            f"{owner} can only pad episodes that end in a terminal state: some episode shorter than "
            f"horizon={horizon} was truncated instead (its missing steps are unknown)."
        )
    E, n = dataset.n_episodes, dataset.n_transitions
    starts = dataset.episode_starts
    # transition t of episode e goes to row e·H + (its step); the other rows of e are padding
    rows = np.arange(n) + np.repeat(np.arange(E) * horizon - starts[:-1], lengths)
    pad = np.ones(E * horizon, dtype=bool)
    pad[rows] = False
    pad_rows = np.flatnonzero(pad)
    src = last[pad_rows // horizon]  # the terminal transition of the padded row's episode
    nxt = dataset.next_observations

    def place(values: np.ndarray, fill: np.ndarray) -> np.ndarray:
        out = np.empty((E * horizon, *values.shape[1:]), dtype=values.dtype)
        out[rows], out[pad_rows] = values, fill
        return out

    obs = place(dataset.observations, nxt[src])
    new_next = place(nxt, nxt[src])
    actions = place(dataset.actions, np.zeros(src.size, dtype=dataset.actions.dtype))
    rewards = place(dataset.rewards, np.zeros(src.size))
    term = np.zeros(E * horizon, dtype=bool)
    term[np.arange(1, E + 1) * horizon - 1] = terminals[last]
    bounds = dataset.reward_bounds
    if bounds is not None and not bounds[0] <= 0.0 <= bounds[1]:
        bounds = (min(bounds[0], 0.0), max(bounds[1], 0.0))
    metadata = {**dataset.metadata, "padded_to_horizon": horizon}
    return TrajectoryDataset(
        obs, actions, rewards, new_next, np.arange(E + 1, dtype=np.int64) * horizon, terminals=term,
        n_states=dataset.n_states, n_actions=dataset.n_actions, horizon=horizon,
        reward_bounds=bounds, metadata=metadata,
    )


#: metadata key of a public bound on every episode's length (set by :func:`truncate_to_horizon`)
MAX_EPISODE_LENGTH = "max_episode_length"


def truncate_to_horizon(dataset: TrajectoryDataset, horizon: int) -> TrajectoryDataset:
    """Every episode longer than ``horizon`` steps cut after its first ``horizon`` transitions;
    shorter episodes are kept as they are.

    A cut episode keeps its first ``horizon`` observations, actions and rewards, so its return is
    the ``horizon``-step return (the rewards after step ``horizon`` are dropped, as in a
    finite-horizon task that stops there); its last kept transition is *not* terminal (the
    episode was truncated, not ended: its ``terminals`` flag is False, and a terminal state it
    reached later is not recorded). Episodes of at most ``horizon`` steps keep their terminal flag.

    The map is per trajectory and uses only the public ``horizon``, so a private algorithm run on
    the result keeps its guarantee (with the trajectory as privacy unit). The result records the
    public bound in ``metadata["max_episode_length"] = horizon`` (return bounds such as
    F_max = R_max·horizon at γ = 1 use it) and declares ``horizon`` when every episode then has
    exactly ``horizon`` steps (a shorter declared horizon is kept). :func:`pad_to_horizon`
    completes the short episodes that end in a terminal state, for algorithms that need
    fixed-horizon data: ``pad_to_horizon(truncate_to_horizon(data, H), H)``.
    """
    owner = "truncate_to_horizon"
    if not isinstance(dataset, TrajectoryDataset):
        raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
    horizon = check_scalar(horizon, "horizon", owner=owner, kind=int, low=1)
    starts = dataset.episode_starts
    kept = np.minimum(dataset.episode_lengths, horizon)
    new_starts = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
    rows = np.arange(int(new_starts[-1])) + np.repeat(starts[:-1] - new_starts[:-1], kept)
    arrays = {k: v[rows] for k, v in dataset._arrays().items()}
    if "terminals" in arrays:
        cut = dataset.episode_lengths > horizon
        arrays["terminals"][new_starts[1:][cut] - 1] = False  # cut before any terminal transition
    declared = dataset.horizon if dataset.horizon is not None and dataset.horizon <= horizon else None
    fixed = horizon if bool(np.all(kept == horizon)) else declared
    metadata = {**dataset.metadata, MAX_EPISODE_LENGTH: horizon}
    return dataset._rebuild(arrays, new_starts, horizon=fixed, metadata=metadata)


def max_episode_length(dataset: Any) -> int | None:
    """A public bound on the length of every episode: the declared ``horizon``, else
    ``metadata["max_episode_length"]`` (:func:`truncate_to_horizon`), else None. A recorded bound
    that an episode exceeds is an error (the bound would be false)."""
    horizon = getattr(dataset, "horizon", None)
    if horizon is not None:
        return int(horizon)
    bound = (getattr(dataset, "metadata", None) or {}).get(MAX_EPISODE_LENGTH)
    if bound is None:
        return None
    lengths = np.diff(np.asarray(dataset.episode_starts))
    if not isinstance(bound, int) or bound < 1 or int(lengths.max()) > bound:
        raise InvalidDataError(f"The dataset's metadata declares '{MAX_EPISODE_LENGTH}' = {bound!r}, but that is "
                               "not a positive int bounding every episode's length: remove it or truncate the "
                               "episodes with truncate_to_horizon.")
    return bound


def rescale_rewards(dataset: TrajectoryDataset, low: float | None = None,
                    high: float | None = None) -> TrajectoryDataset:
    """Rewards mapped affinely from ``[low, high]`` (default: the declared ``reward_bounds``) onto
    ``[0, 1]``: ``r' = (r - low) / (high - low)``; the result declares ``reward_bounds = (0, 1)``.

    The map uses public bounds only. On fixed-horizon data (every episode has the same number of
    steps) it changes every return by the same affine map, so policies keep their ranking (what
    the offline algorithms, whose analysis assumes rewards in [0, 1], need)."""
    owner = "rescale_rewards"
    if not isinstance(dataset, TrajectoryDataset):
        raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
    if low is None or high is None:
        if dataset.reward_bounds is None:
            raise param_error("reward_bounds", owner, "declared (or give low and high)", None)
        low = dataset.reward_bounds[0] if low is None else low
        high = dataset.reward_bounds[1] if high is None else high
    lo, hi = check_bounds((low, high), "reward_bounds", _OWNER, allowed=BOUNDS_ALLOWED)
    if not hi > lo:
        raise param_error("high", owner, f"a float > low = {lo!r}", hi)
    arrays = dataset._arrays()
    arrays["rewards"] = (arrays["rewards"] - lo) / (hi - lo)
    return dataset._rebuild(arrays, dataset.episode_starts, reward_bounds=(0.0, 1.0))
