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

import io
import json
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privrl._io import atomic_write_bytes
from privrl._rng import RngLike, as_generator
from privrl._validation import check_bounds, check_scalar, param_error
from privrl.errors import InvalidDataError, InvalidParameterError

__all__ = ["TrajectoryDataset", "collect", "pad_to_horizon", "truncate_to_horizon", "max_episode_length",
           "MAX_EPISODE_LENGTH", "rescale_rewards",
           "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "privrl.TrajectoryDataset"
FORMAT_VERSION = 1
_HEADER_KEY = "__privrl_header__"
_ARRAY_FIELDS = ("observations", "actions", "rewards", "next_observations", "episode_starts")
_OWNER = "TrajectoryDataset"
#: Safety cap on the length of one collected episode when neither the environment nor
#: ``max_steps`` bounds it.
_MAX_UNBOUNDED_STEPS = 1_000_000


def _field_error(name: str, problem: str) -> InvalidDataError:
    return InvalidDataError(f"The '{name}' field of {_OWNER} {problem}")


def _as_int_array(value: Any, name: str) -> np.ndarray:
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


class TrajectoryDataset:
    """Validated flat transition arrays grouped into episodes.

    Parameters
    ----------
    observations, next_observations
        ``(n,)`` int (tabular states) or ``(n, k)`` float (feature observations).
    actions
        ``(n,)`` int.
    rewards
        ``(n,)`` float, inside ``reward_bounds``.
    episode_starts
        CSR offsets ``(E+1,)``: ``[0] = 0``, ``[-1] = n``, strictly increasing.
    terminals
        Optional ``(n,)`` bool: the transition entered a terminal state (only the last transition
        of an episode may be terminal).
    n_states, n_actions
        Sizes of the state (tabular data only) and action sets; values must lie in ``[0, n)``.
    horizon
        When given, every episode has exactly ``horizon`` steps (fixed-horizon data).
    reward_bounds
        Declared ``(low, high)``; ``None`` declares no bound (algorithms whose privacy relies on
        bounded rewards refuse such data).
    clip_rewards
        Clip rewards into ``reward_bounds`` instead of raising.
    metadata
        A JSON-serialisable dict saved with the dataset.
    """

    def __init__(
        self,
        observations: Any,
        actions: Any,
        rewards: Any,
        next_observations: Any,
        episode_starts: Any,
        *,
        terminals: Any = None,
        n_states: int | None = None,
        n_actions: int | None = None,
        horizon: int | None = None,
        reward_bounds: tuple[float, float] | None = (0.0, 1.0),
        clip_rewards: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
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

        # --- observations
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

        # --- actions
        act = np.asarray(actions)
        if act.shape != (n,):
            raise _field_error("actions", f"must have shape ({n},). Got shape {act.shape} instead.")
        act = _as_int_array(act, "actions")
        _check_range(act, "actions", n_actions, "actions")

        # --- rewards
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

        # --- episodes
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

        # --- terminals
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

        self._obs = _readonly(obs)
        self._act = _readonly(act)
        self._rew = _readonly(rew)
        self._next = _readonly(nxt)
        self._starts = _readonly(starts)
        self._term = None if term is None else _readonly(term)
        self._n_states = n_states
        self._n_actions = n_actions
        self._horizon = horizon
        self._reward_bounds = reward_bounds
        self.clip_rewards = bool(clip_rewards)
        self.metadata: dict[str, Any] = dict(metadata)

    # ------------------------------------------------------------------ arrays and sizes
    # Read-only: the validated arrays and the declarations they were validated against
    # (privacy relies on reward_bounds, so it cannot be changed after validation).
    observations = property(lambda self: self._obs, doc="``(n,)`` int or ``(n, k)`` float.")
    actions = property(lambda self: self._act, doc="``(n,)`` int.")
    rewards = property(lambda self: self._rew, doc="``(n,)`` float.")
    next_observations = property(lambda self: self._next, doc="Same layout as observations.")
    episode_starts = property(lambda self: self._starts, doc="CSR offsets ``(E+1,)``.")
    terminals = property(lambda self: self._term, doc="``(n,)`` bool or None.")
    n_states = property(lambda self: self._n_states, doc="Size of the state set (tabular) or None.")
    n_actions = property(lambda self: self._n_actions, doc="Size of the action set or None.")
    horizon = property(lambda self: self._horizon, doc="Steps per episode (fixed-horizon data) or None.")
    reward_bounds = property(lambda self: self._reward_bounds, doc="Declared ``(low, high)`` or None.")

    @property
    def is_tabular(self) -> bool:
        """True when observations are integer states ``(n,)``."""
        return self._obs.ndim == 1

    @property
    def n_transitions(self) -> int:
        return int(self._obs.shape[0])

    def __len__(self) -> int:
        return self.n_transitions

    @property
    def n_episodes(self) -> int:
        return int(self._starts.shape[0] - 1)

    @property
    def episode_lengths(self) -> np.ndarray:
        """``(E,)`` number of transitions of each episode."""
        return np.diff(self._starts)

    @property
    def episode_index(self) -> np.ndarray:
        """``(n,)`` the episode each transition belongs to."""
        return np.repeat(np.arange(self.n_episodes), self.episode_lengths)

    @property
    def steps(self) -> np.ndarray:
        """``(n,)`` the step index of each transition within its episode (0-based)."""
        return np.arange(self.n_transitions) - np.repeat(self._starts[:-1], self.episode_lengths)

    def __repr__(self) -> str:
        kind = "tabular" if self.is_tabular else f"features k={self._obs.shape[1]}"
        h = f", horizon={self.horizon}" if self.horizon is not None else ""
        return (
            f"TrajectoryDataset({self.n_episodes} episodes, {self.n_transitions} transitions, "
            f"{kind}{h}, reward_bounds={self.reward_bounds})"
        )

    def _settings(self) -> dict[str, Any]:
        return {
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "horizon": self.horizon,
            "reward_bounds": self.reward_bounds,
            "metadata": self.metadata,
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        out = {
            "observations": self._obs,
            "actions": self._act,
            "rewards": self._rew,
            "next_observations": self._next,
        }
        if self._term is not None:
            out["terminals"] = self._term
        return out

    # ------------------------------------------------------------------ episode operations
    def _check_episode_index(self, i: Any, name: str = "i") -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n_episodes:
            raise param_error(name, _OWNER, f"an episode index in [0, {self.n_episodes - 1}]", i)
        return int(i)

    def episode(self, i: int) -> TrajectoryDataset:
        """Episode ``i`` as a one-episode dataset."""
        return self.subset([self._check_episode_index(i)])

    def subset(self, indices: Any) -> TrajectoryDataset:
        """The episodes ``indices`` (in that order; repeats allowed, e.g. for a bootstrap)."""
        idx = np.asarray(indices)
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            raise param_error("indices", f"{_OWNER}.subset", "a non-empty 1-D int array of episode indices", indices)
        if idx.min() < 0 or idx.max() >= self.n_episodes:
            bad = int(idx.min() if idx.min() < 0 else idx.max())
            raise param_error("indices", f"{_OWNER}.subset", f"episode indices in [0, {self.n_episodes - 1}]", bad)
        lengths = self.episode_lengths[idx]
        rows = np.concatenate([np.arange(self._starts[i], self._starts[i + 1]) for i in idx])
        starts = np.concatenate([[0], np.cumsum(lengths)])
        arrays = {k: v[rows] for k, v in self._arrays().items()}
        return self._rebuild(arrays, starts)

    def _rebuild(self, arrays: dict[str, np.ndarray], starts: np.ndarray, **overrides: Any) -> TrajectoryDataset:
        settings = {**self._settings(), **overrides}
        terminals = arrays.pop("terminals", None)
        return TrajectoryDataset(
            arrays["observations"], arrays["actions"], arrays["rewards"], arrays["next_observations"],
            starts, terminals=terminals, **settings,
        )

    def replace_episode(self, i: int, other: TrajectoryDataset) -> TrajectoryDataset:
        """A new dataset with episode ``i`` replaced by the one episode of ``other``.

        The neighbouring dataset under "one trajectory replaced" (used by audits).
        """
        i = self._check_episode_index(i)
        if not isinstance(other, TrajectoryDataset) or other.n_episodes != 1:
            raise param_error("other", f"{_OWNER}.replace_episode", "a one-episode TrajectoryDataset", other)
        parts = []
        if i > 0:
            parts.append(self.subset(np.arange(i)))
        parts.append(other)
        if i < self.n_episodes - 1:
            parts.append(self.subset(np.arange(i + 1, self.n_episodes)))
        return TrajectoryDataset.concatenate(parts, _like=self)

    @staticmethod
    def concatenate(datasets: Sequence[TrajectoryDataset], *,
                    _like: TrajectoryDataset | None = None) -> TrajectoryDataset:
        """The episodes of every dataset in order. All must agree on observation layout,
        ``n_states``, ``n_actions``, ``horizon`` and ``reward_bounds``, and either all or none
        carry ``terminals``. Metadata comes from the first dataset."""
        owner = f"{_OWNER}.concatenate"
        datasets = list(datasets) if not isinstance(datasets, TrajectoryDataset) else [datasets]
        if not datasets or not all(isinstance(d, TrajectoryDataset) for d in datasets):
            raise param_error("datasets", owner, "a non-empty list of TrajectoryDataset", datasets)
        ref = _like or datasets[0]
        for d in datasets:
            for key in ("n_states", "n_actions", "horizon", "reward_bounds"):
                if getattr(d, key) != getattr(ref, key):
                    raise InvalidDataError(
                        f"The '{key}' of every dataset passed to {owner} must agree. Got "
                        f"{getattr(ref, key)!r} and {getattr(d, key)!r} instead."
                    )
            if d._obs.shape[1:] != ref._obs.shape[1:] or d._obs.dtype != ref._obs.dtype:
                raise InvalidDataError(
                    f"The 'observations' of every dataset passed to {owner} must have the same "
                    f"layout. Got {ref._obs.shape[1:]}/{ref._obs.dtype} and "
                    f"{d._obs.shape[1:]}/{d._obs.dtype} instead."
                )
            if (d._term is None) != (ref._term is None):
                raise InvalidDataError(
                    f"The 'terminals' field must be present in all or none of the datasets passed "
                    f"to {owner}. Got a mix instead."
                )
        arrays = {k: np.concatenate([d._arrays()[k] for d in datasets]) for k in ref._arrays()}
        lengths = np.concatenate([d.episode_lengths for d in datasets])
        starts = np.concatenate([[0], np.cumsum(lengths)])
        return ref._rebuild(arrays, starts, clip_rewards=False)

    @classmethod
    def from_episodes(cls, episodes: Sequence[Mapping[str, Any]], **kwargs: Any) -> TrajectoryDataset:
        """Build from a list of per-episode dicts with keys ``observations``, ``actions``,
        ``rewards``, ``next_observations`` and optionally ``terminals`` (all or none). Keyword
        arguments are passed to the constructor."""
        owner = f"{_OWNER}.from_episodes"
        episodes = list(episodes)
        if not episodes or not all(isinstance(e, Mapping) for e in episodes):
            raise param_error("episodes", owner, "a non-empty list of dicts", type(episodes).__name__)
        required = ("observations", "actions", "rewards", "next_observations")
        for j, ep in enumerate(episodes):
            missing = [k for k in required if k not in ep]
            if missing:
                raise InvalidDataError(f"Episode {j} passed to {owner} lacks the fields {missing}.")
        has_term = ["terminals" in ep for ep in episodes]
        if any(has_term) and not all(has_term):
            raise InvalidDataError(
                f"The 'terminals' field must be present in all or none of the episodes passed to {owner}."
            )
        lengths = [len(np.asarray(ep["actions"])) for ep in episodes]
        if 0 in lengths:
            raise InvalidDataError(
                f"Episode {lengths.index(0)} passed to {owner} is empty: every episode needs at "
                "least one transition."
            )
        fields = {k: np.concatenate([np.asarray(ep[k]) for ep in episodes]) for k in required}
        terminals = np.concatenate([np.asarray(ep["terminals"]) for ep in episodes]) if all(has_term) else None
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return cls(
            fields["observations"], fields["actions"], fields["rewards"], fields["next_observations"],
            starts, terminals=terminals, **kwargs,
        )

    def with_reward_bounds(self, reward_bounds: tuple[float, float] | None, *,
                           clip_rewards: bool = False) -> TrajectoryDataset:
        """The same episodes declaring other ``reward_bounds`` (validated as at construction:
        rewards outside raise unless ``clip_rewards``)."""
        return self._rebuild(self._arrays(), self._starts, reward_bounds=reward_bounds,
                             clip_rewards=clip_rewards)

    def as_padded(self) -> dict[str, np.ndarray]:
        """Fixed-horizon data as ``(E, H)`` arrays (``(E, H, k)`` for feature observations)."""
        if self.horizon is None:
            raise InvalidDataError(
                "as_padded needs fixed-horizon data: the 'horizon' of this TrajectoryDataset is None."
            )
        E, H = self.n_episodes, self.horizon
        return {k: v.reshape(E, H, *v.shape[1:]) for k, v in self._arrays().items()}

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an ``.npz`` archive atomically (temporary file in the same directory, then
        ``os.replace``). Returns the path written (exactly ``path``; no suffix is added)."""
        path = Path(path)
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, **self._settings()}
        header["reward_bounds"] = None if self.reward_bounds is None else list(self.reward_bounds)
        arrays = {**self._arrays(), "episode_starts": self._starts}
        arrays[_HEADER_KEY] = np.array(json.dumps(header))
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        atomic_write_bytes(path, buffer.getvalue(), make_parents=False)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrajectoryDataset:
        """Read a file written by :meth:`save`. A missing file raises ``FileNotFoundError``; a
        corrupt, truncated or foreign file raises ``InvalidDataError``."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No dataset file at {str(path)!r}.")

        def bad(problem: str) -> InvalidDataError:
            return InvalidDataError(f"The file {str(path)!r} is not a valid {FORMAT_NAME} archive: {problem}.")

        try:
            archive = np.load(path, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise bad("it is a single .npy array, not an .npz archive")
            with archive:
                contents = {k: archive[k] for k in archive.files}
        except InvalidDataError:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
            raise bad(f"cannot read it ({type(exc).__name__}: {exc})") from None
        if _HEADER_KEY not in contents:
            raise bad("it has no privrl header (a foreign .npz file?)")
        try:
            header = json.loads(str(contents.pop(_HEADER_KEY)[()]))
        except (ValueError, TypeError) as exc:
            raise bad(f"its header is not valid JSON ({exc})") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            raise bad(f"its format is {header.get('format') if isinstance(header, dict) else header!r}")
        if header.get("version") != FORMAT_VERSION:
            raise bad(f"format version {header.get('version')!r} is not supported (this privrl reads version "
                      f"{FORMAT_VERSION})")
        missing = [k for k in _ARRAY_FIELDS if k not in contents]
        if missing:
            raise bad(f"the arrays {missing} are missing")
        bounds = header.get("reward_bounds")
        try:
            return cls(
                contents["observations"], contents["actions"], contents["rewards"],
                contents["next_observations"], contents["episode_starts"],
                terminals=contents.get("terminals"),
                n_states=header.get("n_states"), n_actions=header.get("n_actions"),
                horizon=header.get("horizon"),
                reward_bounds=None if bounds is None else tuple(bounds),
                metadata=header.get("metadata") or {},
            )
        except (InvalidDataError, InvalidParameterError) as exc:
            raise bad(f"its contents fail validation ({exc})") from None


#: the wording of a bad ``reward_bounds`` (None is also accepted where a dataset declares no bound)
BOUNDS_ALLOWED = "None or a pair (low, high) of finite floats with low <= high"


# ---------------------------------------------------------------------- fixed-horizon form
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


def _samples_itself(obj: Any) -> bool:
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
