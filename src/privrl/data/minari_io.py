"""Minari import/export (extra ``minari``; nothing here downloads).

* :func:`to_minari` writes a :class:`~privrl.data.TrajectoryDataset` as a local Minari dataset
  with ``minari.create_dataset_from_buffers`` (the ``DataCollector`` path needs jax). Minari
  stores ``T + 1`` observations per episode, so within each episode ``next_observations[t]`` must
  equal ``observations[t + 1]``. privrl's own settings (``n_states``, ``n_actions``, ``horizon``,
  ``reward_bounds``, metadata) go into the Minari metadata under the key ``"privrl"``.
* :func:`env_spec` is the Gymnasium spec to record with a dataset: the registered one with the
  data's keyword arguments and episode cut (``recover_environment`` then builds the environment the
  returns are on).
* :func:`from_minari` reads a ``MinariDataset`` (or a local dataset id). Datasets written by
  :func:`to_minari` come back identical; for other datasets ``n_states``/``n_actions`` come from
  ``Discrete`` spaces and ``reward_bounds`` must be declared by the caller (bounds inferred from
  the data would depend on private data).

Minari stores datasets under ``$MINARI_DATASETS_PATH`` (default ``~/.minari/datasets``).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_bounds, param_error
from privrl.data.trajectories import BOUNDS_ALLOWED, TrajectoryDataset
from privrl.errors import InvalidDataError

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec
    from minari import MinariDataset

__all__ = ["from_minari", "to_minari", "env_spec", "MinariNotFoundError"]


class MinariNotFoundError(InvalidDataError):
    """No local Minari dataset of that id (privrl never downloads)."""

_META_KEY = "privrl"
_UNSET = object()


def _import_minari() -> ModuleType:
    try:
        import minari
    except ImportError as exc:  # pragma: no cover - the extra is installed in the test env
        raise ImportError("Minari support needs the 'minari' extra: pip install 'privrl[minari]'") from exc
    return minari


def env_spec(env_id: str, *, max_episode_steps: int | None = None,
             kwargs: Mapping[str, object] | None = None) -> EnvSpec:
    """The Gymnasium spec to record with data of ``env_id`` (for ``recover_environment``): the
    registered one with ``kwargs`` added and the time limit ``max_episode_steps`` the data were cut
    at (``None``: the registered limit), so the recovered environment is the one the returns are on."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    spec = gym.spec(env_id)
    steps = spec.max_episode_steps if max_episode_steps is None else max_episode_steps
    return dataclasses.replace(spec, max_episode_steps=steps, kwargs={**spec.kwargs, **(kwargs or {})})


def to_minari(
    dataset: TrajectoryDataset,
    dataset_id: str,
    *,
    env: str | EnvSpec | gym.Env | None = None,
    algorithm_name: str | None = None,
    author: str | None = None,
    author_email: str | None = None,
    code_permalink: str | None = None,
    description: str | None = None,
) -> MinariDataset:
    """Write ``dataset`` as the local Minari dataset ``dataset_id`` and return the
    ``MinariDataset``. ``env`` (an id, spec or env) is recorded for ``recover_environment``.

    Tabular data needs ``n_states`` and every dataset needs ``n_actions`` (they define the
    ``Discrete`` spaces). Raises ``InvalidDataError`` when an episode's ``next_observations`` are
    not its shifted ``observations`` (Minari cannot represent that)."""
    minari = _import_minari()
    owner = "to_minari"
    if not isinstance(dataset, TrajectoryDataset):
        raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
    if not isinstance(dataset_id, str) or not dataset_id:
        raise param_error("dataset_id", owner, "a non-empty str such as 'privrl/frozenlake/random-v0'", dataset_id)
    obs_space, act_space = _spaces_of(dataset, owner)
    _check_shifted_observations(dataset)
    buffers = _episode_buffers(minari, dataset)
    with warnings.catch_warnings():
        # Minari warns for every optional field left empty; those are the caller's choice.
        warnings.simplefilter("ignore", UserWarning)
        out = minari.create_dataset_from_buffers(
            dataset_id,
            buffers,
            env=env,
            algorithm_name=algorithm_name,
            author=author,
            author_email=author_email,
            code_permalink=code_permalink,
            action_space=act_space,
            observation_space=obs_space,
            description=description,
        )
    out.storage.update_metadata({_META_KEY: json.dumps(_header_of(dataset))})
    return out


def _spaces_of(dataset: TrajectoryDataset, owner: str) -> tuple[object, object]:
    """``(observation space, action space)`` of ``dataset``: ``Discrete`` from ``n_states`` (tabular
    data) or an unbounded ``Box`` of the observations' shape, and ``Discrete(n_actions)``."""
    import gymnasium as gym

    if dataset.n_actions is None:
        raise param_error("dataset", owner, "a dataset with n_actions set (it defines the action space)", dataset)
    if dataset.is_tabular:
        if dataset.n_states is None:
            raise param_error("dataset", owner, "a tabular dataset with n_states set (it defines the observation "
                              "space)", dataset)
        obs_space: gym.Space = gym.spaces.Discrete(dataset.n_states)
    else:
        obs_space = gym.spaces.Box(-np.inf, np.inf, shape=dataset.observations.shape[1:], dtype=np.float64)
    return obs_space, gym.spaces.Discrete(dataset.n_actions)


def _check_shifted_observations(dataset: TrajectoryDataset) -> None:
    """Within each episode ``next_observations[t]`` must be ``observations[t + 1]`` (Minari stores
    ``T + 1`` observations per episode)."""
    obs, nxt, starts = dataset.observations, dataset.next_observations, dataset.episode_starts
    same_episode = np.ones(len(dataset), dtype=bool)
    same_episode[starts[1:] - 1] = False  # last transition of each episode
    if not np.array_equal(nxt[same_episode], obs[np.flatnonzero(same_episode) + 1]):
        raise InvalidDataError(
            "The 'next_observations' field of the TrajectoryDataset passed to to_minari must equal "
            "the next transition's observation within each episode (Minari stores T+1 "
            "observations per episode). Got a mismatch instead."
        )


def _episode_buffers(minari: Any, dataset: TrajectoryDataset) -> list[Any]:
    """One Minari ``EpisodeBuffer`` per episode (``T + 1`` observations; an episode that does not
    end in a terminal is truncated)."""
    obs, nxt, starts = dataset.observations, dataset.next_observations, dataset.episode_starts
    terminals = dataset.terminals if dataset.terminals is not None else np.zeros(len(dataset), dtype=bool)
    buffers = []
    for e in range(dataset.n_episodes):
        lo, hi = int(starts[e]), int(starts[e + 1])
        ep_obs = np.concatenate([obs[lo:hi], nxt[hi - 1 : hi]])
        term = terminals[lo:hi].copy()
        trunc = np.zeros(hi - lo, dtype=bool)
        trunc[-1] = not term[-1]
        buffers.append(
            minari.data_collector.EpisodeBuffer(
                id=e,
                observations=ep_obs,
                actions=dataset.actions[lo:hi].copy(),
                rewards=dataset.rewards[lo:hi].copy(),
                terminations=term,
                truncations=trunc,
                infos={},
            )
        )
    return buffers


def _header_of(dataset: TrajectoryDataset) -> dict[str, object]:
    """privrl's own settings of ``dataset``, stored in the Minari metadata under :data:`_META_KEY`."""
    return {
        "format": "privrl.TrajectoryDataset",
        "n_states": dataset.n_states,
        "n_actions": dataset.n_actions,
        "horizon": dataset.horizon,
        "reward_bounds": None if dataset.reward_bounds is None else list(dataset.reward_bounds),
        "has_terminals": dataset.terminals is not None,
        "metadata": dataset.metadata,
    }


def from_minari(dataset: Any, *, reward_bounds: Any = _UNSET, n_states: int | None = None,
                n_actions: int | None = None) -> TrajectoryDataset:
    """A :class:`TrajectoryDataset` from a ``MinariDataset`` or a local Minari dataset id.

    ``reward_bounds`` overrides the bounds recorded by :func:`to_minari`; a dataset not written
    by privrl has no recorded bounds, so they must be passed (``None`` declares none).
    ``n_states``/``n_actions`` default to the sizes of ``Discrete`` spaces.
    """
    minari = _import_minari()
    import gymnasium as gym

    owner = "from_minari"
    dataset = _load_local(minari, dataset, owner)
    header = _read_header(dataset)
    reward_bounds = _declared_bounds(reward_bounds, header, owner)
    obs_space, act_space = dataset.observation_space, dataset.action_space
    if not isinstance(act_space, gym.spaces.Discrete):
        raise InvalidDataError(f"The action space of a Minari dataset read by {owner} must be Discrete. Got "
                               f"{act_space} instead.")
    tabular = isinstance(obs_space, gym.spaces.Discrete)
    if not tabular and not isinstance(obs_space, gym.spaces.Box):
        raise InvalidDataError(f"The observation space of a Minari dataset read by {owner} must be Discrete or Box. "
                               f"Got {obs_space} instead.")
    if n_states is None and tabular:
        n_states = header.get("n_states", int(obs_space.n))
    if n_actions is None:
        n_actions = header.get("n_actions", int(act_space.n))
    o0 = int(obs_space.start) if tabular else 0
    episodes = _read_episodes(dataset, tabular, o0, int(act_space.start))
    if header and not header.get("has_terminals", True):
        for ep in episodes:
            del ep["terminals"]
    metadata = dict(header.get("metadata") or {})
    metadata.setdefault("minari_dataset_id", dataset.spec.dataset_id)
    return TrajectoryDataset.from_episodes(
        episodes,
        n_states=n_states if tabular else None,
        n_actions=n_actions,
        horizon=header.get("horizon"),
        reward_bounds=reward_bounds,
        metadata=metadata,
    )


def _load_local(minari: Any, dataset: Any, owner: str) -> Any:
    """``dataset`` itself (a ``MinariDataset``) or the local Minari dataset of that id (never downloaded)."""
    if isinstance(dataset, str):
        try:
            dataset = minari.load_dataset(dataset, download=False)
        except (FileNotFoundError, ValueError):
            raise MinariNotFoundError(
                f"No local Minari dataset {dataset!r} (privrl never downloads): get it with the Minari "
                f"command line, 'minari download {dataset}', into the directory MINARI_DATASETS_PATH "
                "names (default ~/.minari/datasets)."
            ) from None
    if not isinstance(dataset, minari.MinariDataset):
        raise param_error("dataset", owner, "a MinariDataset or a local Minari dataset id", type(dataset).__name__)
    return dataset


def _read_header(dataset: Any) -> dict[str, Any]:
    """The settings :func:`to_minari` recorded (``{}`` for a dataset not written by privrl)."""
    raw = dataset.storage.metadata.get(_META_KEY)
    if raw is None:
        return {}
    try:
        header: dict[str, object] = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(f"The '{_META_KEY}' metadata of Minari dataset {dataset.spec.dataset_id!r} is not "
                               f"valid JSON ({exc}).") from None
    return header


def _declared_bounds(reward_bounds: object, header: dict[str, object], owner: str) -> object:
    """The caller's ``reward_bounds``, else the recorded ones; a dataset not written by privrl must
    have them declared (bounds inferred from the data would depend on private data)."""
    if reward_bounds is _UNSET:
        if "reward_bounds" not in header:
            raise param_error(
                "reward_bounds", owner,
                "declared (a pair (low, high), or None for no bound) for a Minari dataset not written by privrl",
                "nothing",
            )
        reward_bounds = header["reward_bounds"]
    if reward_bounds is not None:
        reward_bounds = check_bounds(reward_bounds, "reward_bounds", "TrajectoryDataset", allowed=BOUNDS_ALLOWED)
    return reward_bounds


def _read_episodes(dataset: Any, tabular: bool, o0: int, a0: int) -> list[dict[str, np.ndarray]]:
    """The dataset's episodes as :meth:`TrajectoryDataset.from_episodes` takes them (states and
    actions shifted to start at 0, non-tabular observations flattened to float)."""
    episodes = []
    for ep in dataset.iterate_episodes():
        o = np.asarray(ep.observations)
        o = (o.astype(np.int64) - o0) if tabular else o.reshape(o.shape[0], -1).astype(float)
        episodes.append(
            {
                "observations": o[:-1],
                "next_observations": o[1:],
                "actions": np.asarray(ep.actions).astype(np.int64).reshape(-1) - a0,
                "rewards": np.asarray(ep.rewards, dtype=float).reshape(-1),
                "terminals": np.asarray(ep.terminations, dtype=bool).reshape(-1),
            }
        )
    if not episodes:
        raise InvalidDataError(f"The Minari dataset {dataset.spec.dataset_id!r} has no episodes.")
    return episodes
