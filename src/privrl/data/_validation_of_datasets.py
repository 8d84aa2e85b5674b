"""Validation of the fields of a :class:`~privrl.data.trajectories.TrajectoryDataset`: each
function checks one field (shape, dtype, finiteness, ranges, declared reward bounds, episode
structure) and returns it in the dataset's layout, or raises :class:`~privrl.errors.InvalidDataError`
(a bad array) / :class:`~privrl.errors.InvalidParameterError` (a bad declaration)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl._validation import check_bounds, check_scalar, param_error
from privrl.errors import InvalidDataError

_OWNER = "TrajectoryDataset"
#: the wording of a bad ``reward_bounds`` (None is also accepted where a dataset declares no bound)
BOUNDS_ALLOWED = "None or a pair (low, high) of finite floats with low <= high"


def _field_error(name: str, problem: str) -> InvalidDataError:
    return InvalidDataError(f"The '{name}' field of {_OWNER} {problem}")


def _as_int_array(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise _field_error(name, f"must have an integer dtype. Got dtype {arr.dtype} instead.")
    return arr.astype(np.int64, copy=False)  # copied once, by _readonly


def _check_finite(arr: np.ndarray, name: str) -> None:
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1))[0])
        raise _field_error(
            name,
            f"must contain only finite values. Got {int(np.sum(~np.isfinite(arr)))} NaN/inf "
            f"entries (first at transition {bad}) instead.",
        )


def _check_range(arr: np.ndarray, name: str, n: int | None, what: str) -> None:
    if arr.min() < 0 or (n is not None and arr.max() >= n):
        bad = int(np.flatnonzero((arr < 0) | ((arr >= n) if n is not None else False))[0])
        allowed = f"[0, {n - 1}]" if n is not None else "[0, inf)"
        raise _field_error(
            name, f"must hold {what} in {allowed}. Got {int(arr[bad])} at transition {bad} instead."
        )


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr


def checked_settings(n_states: Any, n_actions: Any, horizon: Any, reward_bounds: Any, clip_rewards: Any,
                     metadata: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """The declarations ``(n_states, n_actions, horizon, reward_bounds, metadata)`` validated
    (``metadata`` as a JSON round trip)."""
    if n_states is not None:
        n_states = check_scalar(n_states, "n_states", owner=_OWNER, kind=int, low=1)
    if n_actions is not None:
        n_actions = check_scalar(n_actions, "n_actions", owner=_OWNER, kind=int, low=1)
    if horizon is not None:
        horizon = check_scalar(horizon, "horizon", owner=_OWNER, kind=int, low=1)
    if not isinstance(clip_rewards, (bool, np.bool_)):
        raise param_error("clip_rewards", _OWNER, "a bool", clip_rewards)
    if reward_bounds is not None:
        reward_bounds = check_bounds(reward_bounds, "reward_bounds", _OWNER, allowed=BOUNDS_ALLOWED)
    elif clip_rewards:
        raise param_error("reward_bounds", _OWNER, "a pair (low, high) when clip_rewards=True", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise param_error("metadata", _OWNER, "a dict (JSON-serialisable)", type(metadata).__name__)
    try:
        metadata = json.loads(json.dumps(dict(metadata)))
    except (TypeError, ValueError) as exc:
        raise param_error("metadata", _OWNER, "a JSON-serialisable dict", f"{exc}") from None
    return n_states, n_actions, horizon, reward_bounds, metadata


def validated_observations(observations: object, next_observations: object, n_states: int | None
                           ) -> tuple[np.ndarray, np.ndarray, int]:
    """``(observations, next_observations, n)``: int states in ``[0, n_states)`` ``(n,)`` or
    finite float features ``(n, k)``."""
    obs = np.asarray(observations)
    nxt = np.asarray(next_observations)
    if obs.ndim not in (1, 2):
        raise _field_error(
            "observations", f"must have shape (n,) (tabular) or (n, k) (features). Got shape {obs.shape} instead."
        )
    n = obs.shape[0]
    if n == 0:
        raise InvalidDataError(
            "The dataset is empty: a TrajectoryDataset needs at least one transition. Got 0 "
            "transitions instead."
        )
    if nxt.shape != obs.shape:
        raise _field_error(
            "next_observations", f"must have the shape of observations {obs.shape}. Got shape {nxt.shape} instead."
        )
    if obs.ndim == 1:
        obs = _as_int_array(obs, "observations")
        nxt = _as_int_array(nxt, "next_observations")
        _check_range(obs, "observations", n_states, "states")
        _check_range(nxt, "next_observations", n_states, "states")
    else:
        if n_states is not None:
            raise param_error(
                "n_states", _OWNER, "None for feature observations of shape (n, k)", n_states
            )
        for name, arr in (("observations", obs), ("next_observations", nxt)):
            if arr.dtype.kind not in "iuf":
                raise _field_error(name, f"must have a numeric dtype. Got dtype {arr.dtype} instead.")
        obs, nxt = obs.astype(float, copy=False), nxt.astype(float, copy=False)
        _check_finite(obs, "observations")
        _check_finite(nxt, "next_observations")
    return obs, nxt, n


def validated_actions(actions: object, n: int, n_actions: int | None) -> np.ndarray:
    """``(n,)`` int actions in ``[0, n_actions)``."""
    act = np.asarray(actions)
    if act.shape != (n,):
        raise _field_error("actions", f"must have shape ({n},). Got shape {act.shape} instead.")
    act = _as_int_array(act, "actions")
    _check_range(act, "actions", n_actions, "actions")
    return act


def validated_rewards(rewards: object, n: int, reward_bounds: tuple[float, float] | None,
                      clip_rewards: bool) -> np.ndarray:
    """``(n,)`` finite float rewards inside ``reward_bounds`` (clipped into them when
    ``clip_rewards``; outside them an error that names the broken bound, never the value)."""
    rew = np.asarray(rewards)
    if rew.shape != (n,):
        raise _field_error("rewards", f"must have shape ({n},). Got shape {rew.shape} instead.")
    if rew.dtype.kind not in "iuf":
        raise _field_error("rewards", f"must have a numeric dtype. Got dtype {rew.dtype} instead.")
    rew = rew.astype(float, copy=False)
    _check_finite(rew, "rewards")
    if reward_bounds is not None:
        low, high = reward_bounds
        if clip_rewards:
            rew = np.clip(rew, low, high)
        else:
            below, above = bool(np.any(rew < low)), bool(np.any(rew > high))
            if below or above:
                # which bound was broken, never the value or where (private data)
                which = " and ".join(w for w, bad in (("below the lower bound", below),
                                                      ("above the upper bound", above)) if bad)
                raise _field_error(
                    "rewards",
                    f"must lie inside reward_bounds [{low!r}, {high!r}]. Got rewards {which} "
                    "instead. Pass clip_rewards=True to clip, or declare wider public bounds.",
                )
    return rew


def validated_starts(episode_starts: object, n: int, horizon: int | None) -> np.ndarray:
    """CSR offsets ``(E+1,)``: ``[0] = 0``, ``[-1] = n``, strictly increasing, every episode
    ``horizon`` steps when one is declared."""
    starts = np.asarray(episode_starts)
    if starts.ndim != 1 or starts.shape[0] < 2:
        raise _field_error(
            "episode_starts", f"must have shape (E+1,) with E >= 1. Got shape {starts.shape} instead."
        )
    starts = _as_int_array(starts, "episode_starts")
    if starts[0] != 0 or starts[-1] != n:
        raise _field_error(
            "episode_starts",
            f"must start at 0 and end at n={n}. Got first {int(starts[0])} and last {int(starts[-1])} instead.",
        )
    if np.any(np.diff(starts) <= 0):
        i = int(np.flatnonzero(np.diff(starts) <= 0)[0])
        raise _field_error(
            "episode_starts",
            f"must be strictly increasing (no empty episode). Got {int(starts[i])} followed by "
            f"{int(starts[i + 1])} at position {i} instead.",
        )
    lengths = np.diff(starts)
    if horizon is not None and np.any(lengths != horizon):
        i = int(np.flatnonzero(lengths != horizon)[0])
        raise _field_error(
            "episode_starts",
            f"must describe episodes of exactly horizon={horizon} steps. Got episode {i} with "
            f"{int(lengths[i])} steps instead.",
        )
    return starts


def validated_terminals(terminals: object, n: int, starts: np.ndarray) -> np.ndarray | None:
    """``(n,)`` bool (or None), True only on the last transition of an episode."""
    term = None
    if terminals is not None:
        term = np.asarray(terminals)
        if term.shape != (n,):
            raise _field_error("terminals", f"must have shape ({n},). Got shape {term.shape} instead.")
        if term.dtype != bool:
            if term.dtype.kind not in "iu" or not np.isin(term, (0, 1)).all():
                raise _field_error(
                    "terminals", f"must be bool (or 0/1 integers). Got dtype {term.dtype} instead."
                )
            term = term.astype(bool)
        last = np.zeros(n, dtype=bool)
        last[starts[1:] - 1] = True
        if np.any(term & ~last):
            i = int(np.flatnonzero(term & ~last)[0])
            raise _field_error(
                "terminals",
                f"may be True only on the last transition of an episode. Got a terminal "
                f"transition {i} in the middle of an episode instead.",
            )
    return term
