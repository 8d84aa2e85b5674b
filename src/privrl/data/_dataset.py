"""The dataset type :class:`TrajectoryDataset` (its public home: :mod:`privrl.data.trajectories`,
whose docstring describes the layout, the validation and the file format); its fields are
validated by :mod:`privrl.data._validation_of_datasets`."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._io import atomic_write_bytes
from privrl._validation import param_error
from privrl.data._validation_of_datasets import (
    _OWNER,
    _readonly,
    checked_settings,
    validated_actions,
    validated_observations,
    validated_rewards,
    validated_starts,
    validated_terminals,
)
from privrl.errors import InvalidDataError, InvalidParameterError

FORMAT_NAME = "privrl.TrajectoryDataset"
FORMAT_VERSION = 1
_HEADER_KEY = "__privrl_header__"
_ARRAY_FIELDS = ("observations", "actions", "rewards", "next_observations", "episode_starts")


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
        observations: ArrayLike,
        actions: ArrayLike,
        rewards: ArrayLike,
        next_observations: ArrayLike,
        episode_starts: ArrayLike,
        *,
        terminals: ArrayLike | None = None,
        n_states: int | None = None,
        n_actions: int | None = None,
        horizon: int | None = None,
        reward_bounds: tuple[float, float] | None = (0.0, 1.0),
        clip_rewards: bool = False,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        n_states, n_actions, horizon, reward_bounds, metadata = checked_settings(
            n_states, n_actions, horizon, reward_bounds, clip_rewards, metadata)
        obs, nxt, n = validated_observations(observations, next_observations, n_states)
        act = validated_actions(actions, n, n_actions)
        rew = validated_rewards(rewards, n, reward_bounds, clip_rewards)
        starts = validated_starts(episode_starts, n, horizon)
        term = validated_terminals(terminals, n, starts)

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
        self.metadata: dict[str, object] = dict(metadata)

    # ------------------------------------------------------------------ arrays and sizes
    # Read-only: the validated arrays and the declarations they were validated against
    # (privacy relies on reward_bounds, so it cannot be changed after validation).
    @property
    def observations(self) -> np.ndarray:
        """``(n,)`` int or ``(n, k)`` float."""
        return self._obs

    @property
    def actions(self) -> np.ndarray:
        """``(n,)`` int."""
        return self._act

    @property
    def rewards(self) -> np.ndarray:
        """``(n,)`` float."""
        return self._rew

    @property
    def next_observations(self) -> np.ndarray:
        """Same layout as observations."""
        return self._next

    @property
    def episode_starts(self) -> np.ndarray:
        """CSR offsets ``(E+1,)``."""
        return self._starts

    @property
    def terminals(self) -> np.ndarray | None:
        """``(n,)`` bool or None."""
        return self._term

    @property
    def n_states(self) -> int | None:
        """Size of the state set (tabular) or None."""
        return self._n_states

    @property
    def n_actions(self) -> int | None:
        """Size of the action set or None."""
        return self._n_actions

    @property
    def horizon(self) -> int | None:
        """Steps per episode (fixed-horizon data) or None."""
        return self._horizon

    @property
    def reward_bounds(self) -> tuple[float, float] | None:
        """Declared ``(low, high)`` or None."""
        return self._reward_bounds

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
    def _check_episode_index(self, i: object, name: str = "i") -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n_episodes:
            raise param_error(name, _OWNER, f"an episode index in [0, {self.n_episodes - 1}]", i)
        return int(i)

    def episode(self, i: int) -> TrajectoryDataset:
        """Episode ``i`` as a one-episode dataset."""
        return self.subset([self._check_episode_index(i)])

    def subset(self, indices: object) -> TrajectoryDataset:
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
