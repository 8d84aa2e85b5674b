"""Public bounds and validated arrays of logged trajectories, shared by the estimators that read
logged rewards (the policy-evaluation family's LSW, LSL and Monte Carlo estimators and their
private versions; the offline family's DP-OneStep).

Privacy rests on two public bounds: every reward lies in [0, R_max] and every (first-visit) return
in [0, F_max]. R_max is ``r_max`` or the dataset's declared upper reward bound; F_max is ``F_max``
or, by default, the largest return such rewards allow: R_max·(1 − γ^L)/(1 − γ) (R_max·L at γ = 1)
when every episode has at most L steps by a public declaration (the dataset's ``horizon``, or
``metadata["max_episode_length"]`` set by :func:`privrl.data.truncate_to_horizon`), else
R_max/(1 − γ) for γ < 1. At γ = 1 without such a bound the return is unbounded and F_max must be
given. The calibrations use F_max only, never 1/(1 − γ). Out-of-bound data raise
:class:`~privrl.errors.InvalidDataError` (naming the bound, never the value) unless the user asked
for clipping (a per-trajectory, data-independent map that keeps the guarantee).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from privrl._validation import param_error
from privrl.data.trajectories import max_episode_length
from privrl.errors import InvalidDataError

__all__ = ["dataset_arrays", "reward_bound", "return_bound", "checked_rewards", "terminal_states",
           "distinct_states_bound"]


class DatasetArrays(TypedDict):
    """What :func:`dataset_arrays` reads from a dataset: its arrays and public declarations."""

    observations: np.ndarray
    rewards: np.ndarray
    episode_starts: np.ndarray
    terminals: np.ndarray | None
    next_observations: np.ndarray | None
    n_states: int | None
    reward_bounds: Sequence[float] | None
    max_length: int | None


def dataset_arrays(dataset: Any, owner: str, *, tabular: bool = True) -> DatasetArrays:
    """The arrays and public declarations of a :class:`~privrl.data.TrajectoryDataset`.
    ``tabular``: the observations must be integer states, one per transition."""
    try:
        obs = np.asarray(dataset.observations)
        rewards = np.asarray(dataset.rewards, dtype=np.float64)
        starts = np.asarray(dataset.episode_starts, dtype=np.int64)
    except AttributeError:
        raise param_error("dataset", f"{owner}.fit", "a privrl.data.TrajectoryDataset",
                          type(dataset).__name__) from None
    if tabular and (obs.ndim != 1 or obs.dtype.kind not in "iu"):
        raise InvalidDataError(f"{owner} needs tabular (integer) observations, one per transition; got "
                               f"dtype {obs.dtype} with {obs.ndim} dimension(s).")
    if starts.size < 2:
        raise InvalidDataError(f"{owner} needs at least one trajectory.")
    terminals = getattr(dataset, "terminals", None)
    nxt = getattr(dataset, "next_observations", None)
    return {"observations": obs, "rewards": rewards, "episode_starts": starts,
            "terminals": None if terminals is None else np.asarray(terminals, dtype=bool),
            "next_observations": None if nxt is None else np.asarray(nxt),
            "n_states": getattr(dataset, "n_states", None),
            "reward_bounds": getattr(dataset, "reward_bounds", None),
            "max_length": max_episode_length(dataset)}


def reward_bound(r_max: float | None, declared: Sequence[float] | None, owner: str) -> float:
    """R_max: ``r_max`` when given, else the dataset's declared upper reward bound (whose lower
    bound must be ≥ 0: the privacy proofs use r ≥ 0)."""
    if r_max is not None:
        return float(r_max)
    if declared is None:
        raise param_error("r_max", owner, "a positive float (the dataset declares no reward bounds)", None)
    if float(declared[0]) < 0:
        raise InvalidDataError(f"{owner} needs rewards in [0, R_max] (the privacy proofs use r ≥ 0); "
                               f"the dataset declares reward bounds {tuple(declared)}. Shift the rewards.")
    value = float(declared[1])
    if not value > 0:
        raise param_error("r_max", owner, "a positive float (the dataset's declared upper reward bound "
                          "is not positive)", value)
    return value


def return_bound(r_max: float, gamma: float, f_max: float | None, max_length: int | None, owner: str) -> float:
    """F_max: ``f_max`` when given, else the largest return of rewards in [0, R_max] (module
    docstring); at γ = 1 without a public episode-length bound, an error asking for F_max."""
    if f_max is not None:
        return float(f_max)
    if max_length is not None:
        steps = float(max_length) if gamma == 1.0 else (1.0 - gamma ** max_length) / (1.0 - gamma)
        return r_max * steps
    if gamma >= 1.0:
        raise param_error("F_max", owner, "a positive float when gamma = 1 and the dataset declares no "
                          "episode-length bound (an undiscounted return is bounded only by R_max times the "
                          "episode length: give the public F_max, or truncate the episodes with "
                          "privrl.data.truncate_to_horizon)", None)
    return r_max / (1.0 - gamma)


def checked_rewards(rewards: np.ndarray, r_max: float, clip: bool, owner: str) -> np.ndarray:
    """The rewards, checked against [0, R_max] (an error naming the bound, or clipped when ``clip``)."""
    if rewards.size and (rewards.min() < 0.0 or rewards.max() > r_max):
        if not clip:
            # never print the observed rewards: they are private
            raise InvalidDataError(
                f"A reward of the dataset lies outside the public bounds [0, r_max = {r_max!r}] of {owner}. "
                "Declare bounds that hold for every reward (r_max, or the dataset's reward_bounds), or "
                "pass clip_returns=True to clip rewards into them.")
        rewards = np.clip(rewards, 0.0, r_max)
    return rewards


def terminal_states(arrays: DatasetArrays, n_states: int, owner: str) -> np.ndarray | None:
    """Per episode, the terminal state its last transition entered (−1 when none), or None when
    the dataset records no terminals."""
    if arrays["terminals"] is None or arrays["next_observations"] is None:
        return None
    starts = arrays["episode_starts"]
    last = starts[1:] - 1
    done = arrays["terminals"][last]
    nxt = np.asarray(arrays["next_observations"])[last].astype(np.int64)
    if np.any(done & ((nxt < 0) | (nxt >= n_states))):
        raise InvalidDataError(f"A terminal state of the dataset is outside the states of {owner}.")
    return np.where(done, nxt, -1)


def distinct_states_bound(max_length: int | None, n_states: int, record_terminal: bool) -> int:
    """A public bound on the number of distinct states one trajectory visits: its length bound
    (plus its recorded terminal state), at most the number of states."""
    if max_length is None:
        return n_states
    return int(min(n_states, max_length + (1 if record_terminal else 0)))
