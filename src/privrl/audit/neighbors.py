"""Neighbouring-input generators, one per privacy unit (ARCHITECTURE.md §1.2).

An audit is only as strong as its pair of inputs: the generators below pick *worst-case*
neighbours (the replacement that moves the released statistic most), not only random ones.

* ``TRAJECTORY`` (replace one trajectory; Balle et al. 2016, Qiao & Wang 2023):
  :func:`replace_one_trajectory` with ``strategy="rarest"`` (the replacement visits, at every
  step, the least-visited state–action pair of the dataset and earns the maximal reward),
  ``"max_return"`` (the episode of lowest return is replaced by one of maximal return through the
  rarest states), or ``"random"`` (a random episode by a random one).
* ``USER_EPISODE`` (replace one user's responses in an online run; Zhou 2022):
  :func:`replace_one_user` on a ``(K, ...)`` array of per-user contributions, with the replaced
  user chosen and the replacement given (e.g. the extreme of the declared feature/reward bounds).
* ``REWARD_FUNCTION`` (sup-norm ≤ 1; Wang & Hegde 2019): :func:`reward_neighbour`, a reward
  function differing by a constant shift, a bump or a sign pattern of size at most ``radius``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_option, check_scalar, param_error

__all__ = [
    "TRAJECTORY_STRATEGIES",
    "rarest_pairs",
    "rarest_episode",
    "replace_one_trajectory",
    "replace_one_user",
    "reward_neighbour",
]

TRAJECTORY_STRATEGIES = ("rarest", "max_return", "random")


def rarest_pairs(counts: object) -> tuple[np.ndarray, np.ndarray]:
    """For step-wise visit counts ``counts`` of shape ``(H, S, A)`` return the ``(H,)`` states and
    actions of the least-visited pair at each step (ties: the first in row-major order)."""
    c = check_array(counts, "counts", owner="rarest_pairs", ndim=3, low=0.0)
    H, S, A = c.shape
    flat = c.reshape(H, S * A).argmin(axis=1)
    return flat // A, flat % A


def _step_counts(dataset: Any, n_states: int, n_actions: int, horizon: int) -> np.ndarray:
    obs = np.asarray(dataset.observations)
    if obs.ndim != 1:
        raise param_error("dataset", "replace_one_trajectory", "a tabular dataset (integer observations)",
                          f"observations of shape {obs.shape}")
    counts = np.zeros((horizon, n_states, n_actions))
    steps = np.minimum(np.asarray(dataset.steps), horizon - 1)
    np.add.at(counts, (steps, obs.astype(int), np.asarray(dataset.actions, int)), 1.0)
    return counts


def rarest_episode(counts: Any, *, reward: float, next_state: str = "rarest") -> dict[str, np.ndarray]:
    """A one-episode dict (``observations, actions, rewards, next_observations``) that visits the
    rarest pair of each step of ``counts`` ``(H, S, A)`` and earns ``reward`` at every step.

    ``next_observations[h]`` is the next step's rarest state (``next_state="rarest"``), so the
    transition counts n_{s,a,s'} it adds are rare too."""
    check_option(next_state, "next_state", ("rarest",), owner="rarest_episode")
    reward = check_scalar(reward, "reward", owner="rarest_episode")
    s, a = rarest_pairs(counts)
    nxt = np.append(s[1:], s[-1])
    return {"observations": s.astype(int), "actions": a.astype(int),
            "rewards": np.full(len(s), reward), "next_observations": nxt.astype(int)}


def replace_one_trajectory(
    dataset: Any,
    *,
    strategy: str = "rarest",
    n_states: int | None = None,
    n_actions: int | None = None,
    reward_bounds: tuple[float, float] | None = None,
    rng: RngLike = None,
) -> tuple[object, int, object]:
    """A neighbour of a (tabular, fixed-horizon) ``TrajectoryDataset`` with one trajectory replaced.

    Returns ``(neighbour, index, replacement)``. Strategies (see module docstring): ``"rarest"``
    replaces an episode by one through the rarest pairs with the maximal reward everywhere (moves
    counts and values where they are smallest); the replaced episode is one that differs from it at
    the most steps (so every step's counts move), of *highest* return among those;
    ``"max_return"`` does the same but replaces the episode of *lowest* return (the largest change
    of any return);
    ``"random"`` replaces a random episode by a copy of another random episode with rewards
    reflected in the reward interval.
    """
    owner = "replace_one_trajectory"
    check_option(strategy, "strategy", TRAJECTORY_STRATEGIES, owner=owner)
    S = n_states if n_states is not None else getattr(dataset, "n_states", None)
    A = n_actions if n_actions is not None else getattr(dataset, "n_actions", None)
    H = getattr(dataset, "horizon", None)
    if H is None and hasattr(dataset, "episode_lengths"):
        lengths = np.asarray(dataset.episode_lengths)
        if len(set(lengths.tolist())) == 1:
            H = int(lengths[0])  # every episode has the same length
    if S is None or A is None or H is None:
        raise param_error("dataset", owner, "a tabular fixed-horizon dataset with n_states, n_actions, horizon",
                          {"n_states": S, "n_actions": A, "horizon": H})
    lo, hi = reward_bounds if reward_bounds is not None else getattr(dataset, "reward_bounds", (0.0, 1.0))
    E = int(dataset.n_episodes)
    starts = np.asarray(dataset.episode_starts)
    returns = np.add.reduceat(np.asarray(dataset.rewards, float), starts[:-1])
    gen = as_generator(rng)
    if strategy == "random":
        index, donor = (int(x) for x in gen.integers(0, E, size=2))
        ep = dataset.episode(donor)
        episode = {"observations": np.asarray(ep.observations), "actions": np.asarray(ep.actions),
                   "rewards": lo + hi - np.asarray(ep.rewards, float),
                   "next_observations": np.asarray(ep.next_observations)}
    else:
        counts = _step_counts(dataset, int(S), int(A), int(H))
        episode = rarest_episode(counts, reward=hi)
        padded = dataset.as_padded()
        differ = ((np.asarray(padded["observations"]) != episode["observations"][None, :])
                  | (np.asarray(padded["actions"]) != episode["actions"][None, :])).sum(axis=1)
        # replace an episode that differs from the rare one at every step it can; among those,
        # the one of highest ("rarest") or lowest ("max_return") return
        key = returns if strategy == "rarest" else -returns
        index = int(np.lexsort((key, differ))[-1])
    if getattr(dataset, "terminals", None) is not None:  # all or none of the episodes carry them
        episode["terminals"] = np.zeros(len(episode["actions"]), dtype=bool)
    replacement = type(dataset).from_episodes([episode], n_states=int(S), n_actions=int(A),
                                              horizon=getattr(dataset, "horizon", None), reward_bounds=(lo, hi))
    return dataset.replace_episode(index, replacement), index, replacement


def replace_one_user(responses: Any, user: int, replacement: Any) -> np.ndarray:
    """Copy of the per-user array ``responses`` ``(K, ...)`` with row ``user`` set to
    ``replacement`` (one user = one episode; Zhou 2022). The caller picks the extreme replacement
    allowed by the declared bounds (e.g. features of norm 1 and the largest value target)."""
    arr = np.array(responses, dtype=float, copy=True)
    if arr.ndim < 1 or len(arr) == 0:
        raise param_error("responses", "replace_one_user", "an array with one row per user", f"shape {arr.shape}")
    user = check_scalar(user, "user", owner="replace_one_user", kind=int, low=0, high=len(arr) - 1)
    rep = np.asarray(replacement, dtype=float)
    if rep.shape != arr.shape[1:]:
        raise param_error("replacement", "replace_one_user", f"an array of shape {arr.shape[1:]}", f"shape {rep.shape}")
    arr[user] = rep
    return arr


def reward_neighbour(reward: Callable[[np.ndarray], np.ndarray], *, kind: str = "shift", radius: float = 1.0,
                     center: float = 0.5, width: float = 0.1) -> Callable[[np.ndarray], np.ndarray]:
    """A reward function r' with ``sup |r − r'| ≤ radius`` (Wang & Hegde 2019's neighbouring
    relation). ``kind="shift"``: r + radius everywhere (the worst case for a value that sums
    rewards); ``"bump"``: r + radius · max(0, 1 − |x − center|/width) (a local change — the worst
    case for a release that is smooth in the state); ``"sign"``: r + radius · sign(x − center)."""
    check_option(kind, "kind", ("shift", "bump", "sign"), owner="reward_neighbour")
    radius = check_scalar(radius, "radius", owner="reward_neighbour", low=0.0, closed="neither")
    width = check_scalar(width, "width", owner="reward_neighbour", low=0.0, closed="neither")
    if kind == "shift":
        return lambda x: np.asarray(reward(x), float) + radius
    if kind == "bump":
        return lambda x: (np.asarray(reward(x), float)
                          + radius * np.maximum(0.0, 1.0 - np.abs(np.asarray(x, float) - center) / width))
    return lambda x: np.asarray(reward(x), float) + radius * np.sign(np.asarray(x, float) - center)
