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

from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl._validation import check_array, param_error
from privrl.errors import InvalidDataError
from privrl.offline._common import Statistics

__all__ = ["check_state_groups", "grouped_statistics", "group_reward", "first_visits"]


def check_state_groups(value: Any, name: str, owner: str) -> np.ndarray | list[np.ndarray]:
    """A declared ``state_groups``: a non-empty 1-d array of non-negative integers (its length is
    checked against S at fit time), or a non-empty list (or tuple) of such arrays — the candidates
    of ``route="auto"`` (the estimator refuses a list with any other route)."""
    if isinstance(value, (list, tuple)) and value and all(np.ndim(v) == 1 for v in value):
        return [_one_group_map(v, name, owner) for v in value]
    return _one_group_map(value, name, owner)


def _one_group_map(value: Any, name: str, owner: str) -> np.ndarray:
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
    return Statistics(keys, counts, sums, n_states=G, n_actions=A, n_episodes=K, max_reward=float(rew.max()),
                      max_return=float(rew.sum(axis=1).max()))


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
    return Statistics(keys, counts, sums, n_states=G, n_actions=A, n_episodes=stats.n_episodes,
                      max_reward=stats.max_reward, max_return=stats.max_return)


def group_reward(reward: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The public reward ``(H, S, A)`` of the groups: the unweighted mean over each group's states (a
    public choice: no visit frequencies, which are data); an empty group gets 0."""
    G = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=G).astype(float)
    out = np.zeros((reward.shape[0], G, reward.shape[2]))
    np.add.at(out.transpose(1, 0, 2), groups, reward.transpose(1, 0, 2))     # a view: sums into out
    return out / np.maximum(sizes, 1.0)[None, :, None]
