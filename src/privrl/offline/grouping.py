"""Public state groups, pooling over steps and per-trajectory caps: the statistics APVI / DP-APVI
learn from when the per-state, per-step counts are too thin for the noise (coverage-limited data).

Three public, data-independent choices, each a map applied to the trajectories before any release:

* **state groups** ``g = groups[s]`` (an ``(S,)`` int array fixed without looking at the data): the
  counts ``n(g, a, g')`` of the grouped transitions. Learning on them treats the grouped process as
  a Markov decision process — a practical approximation (exact when the states of a group share
  their dynamics over groups and their rewards); the policy is mapped back, state ``s`` playing its
  group's action;
* **pooling over the steps** (``stationary``): ``n(g, a, g') = Σ_h n_h(g, a, g')`` — valid for
  time-homogeneous dynamics (and H times the count per cell);
* **a per-trajectory cap** ``c`` (``max_visits``; pooled counts only): a trajectory keeps only its
  first ``c`` visits of each (group, action) pair, the later ones are dropped (their transitions and
  rewards). This is clipping the user asks for; it bounds every cell one trajectory adds to by c
  (the sensitivity: :func:`~privrl.offline.calibration.count_sensitivity`). Per step a trajectory
  visits a pair at most once, so the cap changes nothing there.

The first visits of a pair are an unbiased sample of its transitions in a Markov model (a first
visit is a stopping time); a cap per (g, a, g') cell instead would drop repeated transitions of one
kind only and bias P̂ towards the others.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl._validation import check_array, check_group_map, check_scalar, param_error
from privrl.data import streaming
from privrl.errors import InvalidDataError
from privrl.offline._common import Route, Statistics, padded_episodes

__all__ = ["check_state_groups", "grouped_statistics", "group_reward", "first_visits", "route_statistics",
           "stream_statistics", "check_route"]


def check_state_groups(value: object, name: str, owner: str) -> np.ndarray | list[np.ndarray]:
    """A declared ``state_groups``: a non-empty 1-d array of non-negative integers (its length is
    checked against S at fit time), or a non-empty list (or tuple) of such arrays — the candidates
    of ``route="auto"`` (the estimator refuses a list with any other route)."""
    if isinstance(value, (list, tuple)) and value and all(np.ndim(v) == 1 for v in value):
        return [_one_group_map(v, name, owner) for v in value]
    return _one_group_map(value, name, owner)


def _one_group_map(value: object, name: str, owner: str) -> np.ndarray:
    arr = check_array(value, name, owner=owner, ndim=1, low=0.0)
    if arr.size == 0 or not np.all(arr == np.floor(arr)):
        raise param_error(name, owner, "a non-empty (n_states,) array of group indices (ints >= 0)", "other values")
    return arr.astype(np.int64)


def first_visits(pairs: np.ndarray, cap: int) -> np.ndarray:
    """Mask ``(K, H)``: True for the first ``cap`` visits of each value of ``pairs`` ``(K, H)`` (ints
    ``>= 0``) within each trajectory (row), in step order. ``O(K·H log(K·H))``."""
    K, H = pairs.shape
    key = (np.arange(K, dtype=np.int64)[:, None] * (int(pairs.max(initial=0)) + 1) + pairs).ravel()
    order = np.argsort(key, kind="stable")                 # stable: step order within a key
    sorted_key = key[order]
    start = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    rank = np.arange(key.size) - np.repeat(start, np.diff(np.r_[start, key.size]))
    keep = np.empty(key.size, dtype=bool)
    keep[order] = rank < cap
    return keep.reshape(K, H)


def grouped_statistics(data: Mapping[str, np.ndarray] | Statistics, groups: np.ndarray | None, n_states: int,
                       n_actions: int, *,
                       stationary: bool = False, max_visits: int | None = None, owner: str = "grouped_statistics"
                       ) -> Statistics:
    """:class:`~privrl.offline._common.Statistics` of the grouped (``groups`` None: the states
    themselves), optionally pooled and capped transitions (module docstring) — one step when
    ``stationary``. ``data``: validated ``(K, H)`` arrays, or per-step Statistics (then no cap:
    it needs the trajectories). ``max_visits`` applies only when ``stationary``."""
    cap = max_visits if stationary else None
    if isinstance(data, Statistics):
        if cap is not None:
            raise InvalidDataError(f"{owner}: max_visits needs the trajectories (a TrajectoryDataset or (K, H) "
                                   "arrays), not Statistics: a cap is per trajectory.")
        return _group_statistics(data, groups, stationary)
    obs, act, nxt = data["observations"], data["actions"], data["next_observations"]
    rew = np.asarray(data["rewards"], dtype=float)
    K, H = act.shape
    A = int(n_actions)
    g, g_next = (obs, nxt) if groups is None else (groups[obs], groups[nxt])
    G = int(groups.max()) + 1 if groups is not None else int(n_states)
    keep = np.ones((K, H), dtype=bool) if cap is None or cap >= H else first_visits(g * A + act, int(cap))
    steps = np.zeros((1, H), dtype=np.int64) if stationary else np.arange(H, dtype=np.int64)[None, :]
    H_out = 1 if stationary else H
    cell = (steps * G + g) * A + act
    flat = cell * G + g_next
    keys, counts = np.unique(flat[keep], return_counts=True)
    sums = np.bincount(cell[keep], weights=rew[keep], minlength=H_out * G * A).reshape(H_out, G, A)
    route = Route(groups, bool(stationary), None if cap is None else int(cap), H, int(n_states))
    visits = None if groups is None else np.bincount((obs * A + act)[keep], minlength=int(n_states) * A
                                                     ).reshape(int(n_states), A)
    return Statistics(keys, counts, sums, n_states=G, n_actions=A, n_episodes=K, max_reward=float(rew.max()),
                      max_return=float(rew.sum(axis=1).max()), route=route, state_visits=visits)


def _group_statistics(stats: Statistics, groups: np.ndarray | None, stationary: bool) -> Statistics:
    """Grouped / pooled :class:`Statistics` from per-step statistics (sums of their cells)."""
    H, S, A = stats.shape
    g_of = np.arange(S) if groups is None else groups
    G = int(g_of.max()) + 1
    s_next = stats.keys % S
    cell = stats.keys // S
    a, s, h = cell % A, (cell // A) % S, cell // (A * S)
    h_out = np.zeros_like(h) if stationary else h
    H_out = 1 if stationary else H
    flat = ((h_out * G + g_of[s]) * A + a) * G + g_of[s_next]
    keys, inverse = np.unique(flat, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=stats.values, minlength=keys.size)
    sums = np.zeros((H_out, G, A))
    hh = np.zeros(H, dtype=np.int64) if stationary else np.arange(H)
    np.add.at(sums, (hh[:, None, None], g_of[None, :, None], np.arange(A)[None, None, :]), stats.reward_sums)
    route = Route(groups, bool(stationary), None, H, S)
    return Statistics(keys, counts, sums, n_states=G, n_actions=A, n_episodes=stats.n_episodes,
                      max_reward=stats.max_reward, max_return=stats.max_return, route=route,
                      state_visits=None if groups is None else stats.n_sa.sum(axis=0))


def group_reward(reward: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The public reward ``(H, S, A)`` of the groups: the unweighted mean over each group's states (a
    public choice: no visit frequencies, which are data); an empty group gets 0."""
    G = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=G).astype(float)
    out = np.zeros((reward.shape[0], G, reward.shape[2]))
    np.add.at(out.transpose(1, 0, 2), groups, reward.transpose(1, 0, 2))     # a view: sums into out
    return out / np.maximum(sizes, 1.0)[None, :, None]


# ---------------------------------------------------------------------------------------- routes
def _route_parameters(n_states: int, n_actions: int, state_groups: object, stationary: bool, max_visits: object,
                      owner: str) -> tuple[int, int, np.ndarray | None, int | None]:
    """Validated ``(S, A, groups, max_visits)`` of a route, with the estimators' rule: ``max_visits``
    only with ``stationary=True`` (per step the cap would change nothing)."""
    S = check_scalar(n_states, "n_states", owner=owner, kind=int, low=1)
    A = check_scalar(n_actions, "n_actions", owner=owner, kind=int, low=1)
    groups = None if state_groups is None else check_group_map(
        _one_group_map(state_groups, "state_groups", owner), S, "state_groups", owner)
    cap = None if max_visits is None else check_scalar(max_visits, "max_visits", owner=owner, kind=int, low=1)
    if cap is not None and not stationary:
        raise param_error("max_visits", owner, "left unset unless stationary=True (the cap applies to counts pooled "
                          "over the steps)", cap)
    return S, A, groups, cap


def route_statistics(dataset: object, n_states: int, n_actions: int, *, state_groups: object = None,
                     stationary: bool = False, max_visits: int | None = None,
                     owner: str = "route_statistics") -> Statistics:
    """:class:`~privrl.offline.Statistics` of fixed-horizon trajectories (a
    :class:`~privrl.data.TrajectoryDataset` or ``(K, H)`` arrays, validated as a fit validates them)
    on a route — grouped by ``state_groups``, pooled over the steps (``stationary``), capped at
    ``max_visits`` visits of a pair per trajectory (module docstring) — recording it
    (``Statistics.route``), so that APVI / DP-APVI with the same parameters fit them."""
    S, A, groups, cap = _route_parameters(n_states, n_actions, state_groups, stationary, max_visits, owner)
    data = padded_episodes(dataset, owner, n_states=S, n_actions=A)
    return grouped_statistics(data, groups, S, A, stationary=bool(stationary), max_visits=cap, owner=owner)


def stream_statistics(chunks: Any, n_states: int, n_actions: int, *,
                      state_groups: object = None, stationary: bool = False, max_visits: int | None = None,
                      ray: bool = False, dense_cells: int = 1 << 25, **declared: Any) -> Statistics:
    """The route :class:`~privrl.offline.Statistics` of a log of any size, read as a stream of chunks
    (:mod:`privrl.data.streaming`: ``dataset_chunks``, ``parquet_chunks``, ``minari_chunks``; or, with
    ``ray=True``, the Parquet paths of a Ray Data map/reduce): :func:`route_statistics` of every batch
    of whole episodes (so the cap sees whole trajectories) summed by a ``CountReducer`` — the counts of
    the in-memory :func:`route_statistics` exactly (the reward sums up to the order of the float
    additions: identical for rewards such as 0/1). ``declared``: the stream's public ``horizon`` (required:
    the family needs fixed-horizon data), ``reward_bounds``, ``max_episode_length``
    (``n_states`` / ``n_actions`` are these arguments). APVI / DP-APVI fit the result when their
    ``state_groups``, ``stationary`` and ``max_visits`` equal these (checked: the sensitivity
    depends on them)."""
    owner = "privrl.offline.stream_statistics"
    S, A, groups, cap = _route_parameters(n_states, n_actions, state_groups, stationary, max_visits, owner)
    if declared.get("horizon") is None:
        raise param_error("horizon", owner, "the stream's declared fixed horizon H (an int)", None)
    statistic = functools.partial(route_statistics, n_states=S, n_actions=A, state_groups=groups,
                                  stationary=bool(stationary), max_visits=cap, owner=owner)
    reducer: streaming.CountReducer[Statistics] = streaming.CountReducer(dense_cells)
    if ray:
        stats = streaming.ray_statistics(chunks, statistic, reducer=reducer, n_states=S, n_actions=A, **declared)
    else:
        stats = streaming.stream_statistics(chunks, statistic, reducer=reducer, n_states=S, n_actions=A, **declared)
    return stats.with_route(Route(groups, bool(stationary), cap, int(declared["horizon"]), S))


def check_route(stats: Statistics, state_groups: np.ndarray | None, stationary: bool, max_visits: int | None,
                owner: str) -> bool:
    """Whether given :class:`Statistics` are already on the fit's route (True) or per-step counts
    the fit groups / pools itself (False); refuses (:class:`InvalidDataError`, naming the
    parameters) statistics built on another route — the sensitivity, so the privacy guarantee,
    depends on the route: e.g. uncapped counts released with the noise of ``max_visits=1``'s
    smaller sensitivity would not be private — and per-step statistics with a cap (a cap needs
    the trajectories)."""
    route = stats.route
    if route.per_step and max_visits is None:
        return False
    diff = route.differences(state_groups, stationary, max_visits)
    if diff:
        raise InvalidDataError(
            f"{owner}: the statistics were built on another route than this fit's (built with / asked for: "
            f"{', '.join(diff)}); the sensitivity, so the privacy guarantee, depends on it. Build them with the "
            "fit's state_groups, stationary and max_visits (privrl.offline.stream_statistics or "
            "route_statistics).")
    return True
