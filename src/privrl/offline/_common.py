"""Helpers shared by the tabular and linear offline algorithms (Qiao & Wang 2023).

* :func:`padded_episodes` reads fixed-horizon data (a :class:`privrl.data.TrajectoryDataset`
  through ``as_padded()``, or a mapping of ``(K, H)`` arrays) and validates it;
* :func:`transition_statistics` — the sufficient statistics of every algorithm of the family
  (:class:`Statistics`, sparse): per-step transition counts ``n_h(s, a, s')``, visit counts and
  reward sums (optionally for several prefixes of the data at once);
* :func:`public_reward` / :func:`public_features` — the public model knowledge (an array or a model);
* :func:`greedy` is line 8 of Algorithm 1 / line 14 of Algorithm 2 (lowest-index tie-break);
* :func:`degenerate_output` — the UtilityWarning of a trivial output (all-zero values, one action).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import numpy as np

from privrl._validation import check_array, param_error
from privrl.errors import InvalidDataError, UtilityWarning

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

__all__ = ["padded_episodes", "greedy", "Route", "Statistics", "transition_statistics", "offline_statistics",
           "check_statistics", "check_reward_bounds", "check_public_shape", "public_reward",
           "public_features", "degenerate_output", "warn_degenerate", "one_hot_features"]

_KEYS = ("observations", "actions", "rewards", "next_observations")

_PAD_HINT = ("pad episodes that end in a terminal state with absorbing zero-reward steps up to the horizon "
             "(privrl.data's padding helper), or sample from the model without terminal states")


def padded_episodes(data: object, owner: str, *, n_states: int, n_actions: int,
                    horizon: int | None = None, reward_bounds: tuple[float, float] = (0.0, 1.0)
                    ) -> dict[str, np.ndarray]:
    """``(K, H)`` arrays ``observations, actions, rewards, next_observations`` of fixed-horizon data.

    Raises :class:`InvalidDataError` for variable-length episodes, an empty dataset, a horizon
    mismatch, states/actions outside ``[0, n_states) x [0, n_actions)`` or rewards outside
    ``reward_bounds`` (privacy of the linear algorithms relies on ``0 <= r <= 1``; rewards are
    never clipped silently). Messages say which bound was broken, never the private values.
    """
    if hasattr(data, "as_padded"):
        if getattr(data, "horizon", 0) is None:
            raise InvalidDataError(f"{owner} needs fixed-horizon data (every episode exactly H steps); this "
                                   f"TrajectoryDataset has episodes of different lengths: {_PAD_HINT}.")
        try:
            arrays = data.as_padded()
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            raise InvalidDataError(f"{owner} needs fixed-horizon data (as_padded() failed: {exc})") from None
    elif isinstance(data, Mapping):
        arrays = data
    else:
        raise param_error("dataset", owner, "a TrajectoryDataset or a mapping of (K, H) arrays",
                          type(data).__name__)
    missing = [k for k in _KEYS if k not in arrays]
    if missing:
        raise InvalidDataError(f"{owner}: the dataset lacks the arrays {missing}.")
    out: dict[str, np.ndarray] = {}
    for key in _KEYS:
        arr = np.asarray(arrays[key])
        if arr.ndim != 2:
            raise InvalidDataError(f"{owner}: '{key}' must be a (K, H) array of tabular indices/rewards. "
                                   f"Got shape {arr.shape} instead.")
        out[key] = arr
    K, H = out["actions"].shape
    if K == 0 or H == 0:
        raise InvalidDataError(f"{owner}: the dataset is empty (shape {(K, H)}).")
    for key in _KEYS:
        if out[key].shape != (K, H):
            raise InvalidDataError(f"{owner}: '{key}' has shape {out[key].shape}, expected {(K, H)}.")
    if horizon is not None and H != horizon:
        raise InvalidDataError(f"{owner}: the dataset has horizon {H} but the public model (reward "
                               f"function) has horizon {horizon}.")
    for key, n in (("observations", n_states), ("next_observations", n_states), ("actions", n_actions)):
        arr = out[key]
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                raise InvalidDataError(f"{owner}: '{key}' must hold integer indices.")
        elif arr.dtype.kind not in "iu":
            raise InvalidDataError(f"{owner}: '{key}' must hold integer indices. Got dtype {arr.dtype}.")
        arr = arr.astype(np.int64, copy=False)
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidDataError(f"{owner}: '{key}' must lie in [0, {n}) (the public model's size: the reward "
                                   "or feature table's, check its shape); some entries do not.")
        out[key] = arr
    rewards = out["rewards"].astype(float)
    lo, hi = reward_bounds
    if not np.all(np.isfinite(rewards)) or rewards.min() < lo or rewards.max() > hi:
        raise InvalidDataError(f"{owner}: rewards must lie in [{lo}, {hi}] (privacy relies on it); some do not. "
                               "Rescale them by a public affine map.")
    out["rewards"] = rewards
    return out


@dataclass(frozen=True, eq=False)
class Route:
    """The route :class:`Statistics` were built with (:mod:`privrl.offline.grouping`): the public
    ``state_groups`` (an ``(n_states,)`` int array, or None: the states themselves), ``stationary``
    (counts pooled over the steps), ``max_visits`` (the per-trajectory cap of pooled counts, or
    None), the trajectories' ``horizon`` H (the planning horizon; pooled statistics have one step)
    and their ``n_states`` S. The sensitivity of a release depends on it (pooling and the cap change
    what one trajectory adds to a cell), so a fit checks it against its own parameters."""

    state_groups: np.ndarray | None
    stationary: bool
    max_visits: int | None
    horizon: int
    n_states: int

    @property
    def per_step(self) -> bool:
        """Per-state, per-step counts (no group, no pooling, no cap): the route every other derives from."""
        return self.state_groups is None and not self.stationary and self.max_visits is None

    def differences(self, state_groups: np.ndarray | None, stationary: bool, max_visits: int | None) -> list[str]:
        """The parameters (``name=built with / asked for``) in which this route differs from the given one."""
        out = []
        mine, theirs = self.state_groups, state_groups
        if (mine is None) != (theirs is None) or (mine is not None and theirs is not None
                                                  and not np.array_equal(mine, theirs)):
            label = "a different group map" if mine is not None and theirs is not None else "None"
            out.append(f"state_groups ({'None' if mine is None else 'a group map'} / "
                       f"{'a group map' if theirs is not None and mine is None else label})")
        if bool(self.stationary) != bool(stationary):
            out.append(f"stationary ({self.stationary} / {stationary})")
        if self.max_visits != max_visits:
            out.append(f"max_visits ({self.max_visits} / {max_visits})")
        return out


class Statistics:
    """Sufficient statistics of fixed-horizon data, stored sparsely.

    Per-step transition counts ``n_h(s, a, s')`` as the sorted flat keys ``((h·S + s)·A + a)·S + s'``
    of the visited cells and their counts; per-``(h, s, a)`` visit counts :attr:`n_sa` and reward
    sums :attr:`reward_sums` ``(H, S, A)``; the number of trajectories. Every quantity of
    Algorithms 1 and 2 is a function of them (sums over trajectories are sums over (s, a, s')
    weighted by the counts; the rewards enter through their per-(h, s, a) sums). Memory
    ``O(nnz + H·S·A)`` with ``nnz <= K·H`` visited cells — never ``H·S·A·S``.

    ``max_reward`` / ``max_return``: the largest logged reward of a visit and the largest return of a
    trajectory, recorded when the statistics are built from the trajectories and kept only to check
    the public bounds a fit declares (never released); None when unknown (statistics built by hand):
    a fit from logged rewards then refuses them (:func:`check_reward_bounds`), since the reward sums
    alone cannot show that every reward lies within the declared bound.

    ``route``: the :class:`Route` the statistics were built with — None for per-step counts of the
    states themselves (then ``n_states`` are the states); grouped statistics have the groups as
    their states and pooled ones one step (``route.horizon`` keeps the trajectories' H).

    ``state_visits``: on public groups, the per-*state* action visit counts pooled over the steps
    ``(S, A)`` of the visits the route kept (the per-trajectory cap applied) — what
    ``DPAPVI(logging_share=...)`` releases; None otherwise.
    """

    def __init__(self, keys: np.ndarray, counts: np.ndarray, reward_sums: np.ndarray, *, n_states: int,
                 n_actions: int, n_episodes: int, max_reward: float | None = None,
                 max_return: float | None = None, route: Route | None = None,
                 state_visits: np.ndarray | None = None) -> None:
        self.reward_sums = np.asarray(reward_sums, dtype=float)
        H = self.reward_sums.shape[0]
        self.shape = (H, int(n_states), int(n_actions))
        self.keys = np.asarray(keys, dtype=np.int64)
        self.values = np.asarray(counts, dtype=float)
        self.n_episodes = int(n_episodes)
        self.max_reward = None if max_reward is None else float(max_reward)
        self.max_return = None if max_return is None else float(max_return)
        S = self.shape[1]
        self.n_sa = np.bincount(self.keys // S, weights=self.values, minlength=H * S * self.shape[2]
                                ).reshape(self.shape)
        self._bounds = np.searchsorted(self.keys, np.arange(H + 1) * (S * self.shape[2] * S))
        self._steps: dict[int, csr_matrix] = {}
        self.route = Route(None, False, None, H, S) if route is None else route
        self.state_visits = None if state_visits is None else np.asarray(state_visits, dtype=float)

    def with_route(self, route: Route) -> Statistics:
        """The same counts and sums, recorded as built with ``route`` (e.g. after a reducer rebuilt them)."""
        return Statistics(self.keys, self.values, self.reward_sums, n_states=self.shape[1], n_actions=self.shape[2],
                          n_episodes=self.n_episodes, max_reward=self.max_reward, max_return=self.max_return,
                          route=route, state_visits=self.state_visits)

    @property
    def horizon(self) -> int:
        return self.shape[0]

    @property
    def nnz(self) -> int:
        return int(self.keys.size)

    def step(self, h: int) -> csr_matrix:
        """The counts of step ``h`` as a ``scipy.sparse`` CSR matrix ``(S·A, S)`` (row ``s·A + a``),
        built once per step and kept (read-only: every fit on these statistics reads the same one)."""
        matrix = self._steps.get(h)
        if matrix is None:
            from scipy.sparse import csr_matrix

            _, S, A = self.shape
            lo, hi = self._bounds[h], self._bounds[h + 1]
            local = self.keys[lo:hi] - h * (S * A * S)
            indptr = np.concatenate([[0], np.cumsum(np.bincount(local // S, minlength=S * A))])
            matrix = csr_matrix((self.values[lo:hi], local % S, indptr), shape=(S * A, S))
            for part in (matrix.data, matrix.indices, matrix.indptr):
                part.flags.writeable = False
            self._steps[h] = matrix
        return matrix

    @property
    def counts(self) -> np.ndarray:
        """The dense ``(H, S, A, S)`` counts — materialised on each call: for small problems only."""
        H, S, A = self.shape
        out = np.zeros(H * S * A * S)
        out[self.keys] = self.values
        return out.reshape(H, S, A, S)

    @classmethod
    def from_dense(cls, counts: np.ndarray, reward_sums: np.ndarray | None = None, *,
                   max_reward: float | None = None, max_return: float | None = None) -> Statistics:
        """Statistics of dense ``(H, S, A, S)`` counts (and ``(H, S, A)`` reward sums, default 0);
        ``max_reward`` / ``max_return`` as recorded from the trajectories (None: unknown, and a fit
        from logged rewards refuses the statistics)."""
        counts = np.asarray(counts, dtype=float)
        H, S, A, _ = counts.shape
        flat = counts.ravel()
        keys = np.flatnonzero(flat)
        rewards = np.zeros((H, S, A)) if reward_sums is None else np.asarray(reward_sums, dtype=float)
        return cls(keys, flat[keys], rewards, n_states=S, n_actions=A,
                   n_episodes=int(round(float(counts[0].sum()))), max_reward=max_reward, max_return=max_return)


@overload
def transition_statistics(data: Mapping[str, np.ndarray], n_states: int, n_actions: int,
                          sizes: None = None) -> Statistics: ...


@overload
def transition_statistics(data: Mapping[str, np.ndarray], n_states: int, n_actions: int,
                          sizes: Sequence[int]) -> list[Statistics]: ...


def transition_statistics(data: Mapping[str, np.ndarray], n_states: int, n_actions: int,
                          sizes: Sequence[int] | None = None) -> Statistics | list[Statistics]:
    """:class:`Statistics` of ``(K, H)`` arrays; with ``sizes``, a list: the statistics of the first
    ``k`` trajectories for every ``k`` in ``sizes``. ``O(k·H + H·S·A·S)`` time each when the
    ``H·S·A·S`` cells number at most four times the data's ``K·H`` visits (every cell counted, no
    sort), else ``O(k·H log(k·H))``."""
    obs, act, nxt = data["observations"], data["actions"], data["next_observations"]
    K, H = act.shape
    S, A = n_states, n_actions
    steps = np.arange(H, dtype=np.int64)[None, :]
    flat = ((steps * S + obs) * A + act) * S + nxt
    cell = flat // S
    rew = np.asarray(data["rewards"], dtype=float)
    returns = rew.sum(axis=1)

    n_cells = H * S * A * S
    dense = n_cells <= 4 * flat.size      # few possible cells: count them all, no sort

    def stats(k: int) -> Statistics:
        if dense:
            every = np.bincount(flat[:k].ravel(), minlength=n_cells)
            keys = np.flatnonzero(every)
            counts = every[keys]
        else:
            keys, counts = np.unique(flat[:k].ravel(), return_counts=True)
        sums = np.bincount(cell[:k].ravel(), weights=rew[:k].ravel(), minlength=H * S * A).reshape(H, S, A)
        return Statistics(keys, counts, sums, n_states=S, n_actions=A, n_episodes=k,
                          max_reward=float(rew[:k].max()), max_return=float(returns[:k].max()))

    if sizes is None:
        return stats(K)
    out: list[Statistics] = []
    for k in (int(s) for s in sizes):
        if not 0 < k <= K:
            raise param_error("sizes", "transition_statistics", f"ints in [1, {K}]", k)
        out.append(stats(k))
    return out


@overload
def offline_statistics(dataset: object, n_states: int, n_actions: int, sizes: None = None, *,
                       owner: str = ...) -> Statistics: ...


@overload
def offline_statistics(dataset: object, n_states: int, n_actions: int, sizes: Sequence[int], *,
                       owner: str = ...) -> list[Statistics]: ...


def offline_statistics(dataset: object, n_states: int, n_actions: int, sizes: Sequence[int] | None = None,
                       *, owner: str = "offline_statistics") -> Statistics | list[Statistics]:
    """Validated :class:`Statistics` of a fixed-horizon dataset (see :func:`padded_episodes`), or of
    its first ``k`` trajectories for every ``k`` in ``sizes``. Every estimator of the family accepts
    them in place of the dataset."""
    data = padded_episodes(dataset, owner, n_states=n_states, n_actions=n_actions)
    return transition_statistics(data, n_states, n_actions, sizes)


def check_public_shape(dataset: object, n_states: int, n_actions: int, name: str, shape: str, got: tuple[int, ...],
                       owner: str) -> None:
    """The public table ``name`` (the reward function, the features) sized ``(n_states, n_actions)``
    against the data's own declaration — :class:`Statistics`' shape, a dataset's ``n_states`` /
    ``n_actions`` — so that a table of the wrong shape is named, not the data's indices. ``shape``
    is the allowed form, e.g. ``"(H, {S}, {A}) or ({S}, {A})"``, ``got`` the table's shape."""
    if isinstance(dataset, Statistics):
        declared: tuple[int | None, int | None] = (dataset.route.n_states, dataset.shape[2])
    else:
        declared = (getattr(dataset, "n_states", None), getattr(dataset, "n_actions", None))
    want = tuple(int(d) if d is not None else size for d, size in zip(declared, (n_states, n_actions)))
    if want != (n_states, n_actions):
        raise param_error(name, owner, "an array of shape " + shape.format(S=want[0], A=want[1])
                          + " (the data's n_states, n_actions)", f"shape {got}")


def check_statistics(stats: Statistics, owner: str, *, n_states: int, n_actions: int,
                     horizon: int | None = None, routes: bool = False) -> int:
    """Validate :class:`Statistics` given in place of a dataset (shapes, non-negative integer counts,
    the same number K of trajectories at every step — for pooled statistics a total of K·H visits,
    at most K·H with a cap —, reward sums within [0, counts]); returns K. ``n_states``: the states'
    number (the route's; grouped statistics have the groups as states); ``horizon``: the
    trajectories' (the route's). Statistics should come from :func:`offline_statistics` or
    :func:`privrl.offline.stream_statistics`, which validate every reward. Grouped or pooled
    statistics (``stats.route``) only with ``routes=True`` (a fit that checked their route)."""
    H, G, A = stats.shape
    route = stats.route
    if not (routes or route.per_step):
        raise InvalidDataError(f"{owner}: these statistics are grouped, pooled or capped (their route); {owner} "
                               "needs per-step statistics of the states (privrl.offline.offline_statistics).")
    if (route.n_states, A) != (n_states, n_actions) or (route.state_groups is None and G != n_states):
        raise InvalidDataError(f"{owner}: the statistics must be built for {n_states} states and {n_actions} actions. "
                               f"Got {route.n_states} states and {A} actions instead.")
    if horizon is not None and route.horizon != horizon:
        raise InvalidDataError(f"{owner}: the statistics have horizon {route.horizon} but the public model "
                               f"(reward function) has horizon {horizon}.")
    counts, n_sa, rewards = stats.values, stats.n_sa, stats.reward_sums
    per_step = n_sa.reshape(H, -1).sum(axis=1)
    visits = stats.n_episodes * route.horizon
    totals_ok = (np.all(per_step == stats.n_episodes) if not route.stationary
                 else np.all(per_step <= visits) if route.max_visits is not None else np.all(per_step == visits))
    if (not np.all(np.isfinite(counts)) or counts.min(initial=0.0) < 0 or not np.all(counts == np.round(counts))
            or stats.keys.size and (stats.keys.min() < 0 or stats.keys.max() >= H * G * A * G
                                    or np.any(np.diff(stats.keys) <= 0))
            or not totals_ok or stats.n_episodes < 1 or H != (1 if route.stationary else route.horizon)):
        raise InvalidDataError(f"{owner}: the statistics' counts must be non-negative integers with the same "
                               "positive total at every step (build them with privrl.offline.offline_statistics "
                               "or privrl.offline.stream_statistics).")
    if rewards.shape != (H, G, A) or not np.all(np.isfinite(rewards)) or rewards.min() < 0 or np.any(rewards > n_sa):
        raise InvalidDataError(f"{owner}: the statistics' reward sums must lie in [0, counts] (rewards in [0, 1]; "
                               "privacy relies on it).")
    return stats.n_episodes


def check_reward_bounds(stats: Statistics, owner: str, *, r_max: float, F_max: float | None = None) -> None:
    """Check the logged rewards behind :class:`Statistics` against the declared bounds privacy relies
    on — every reward in [0, ``r_max``] and, when ``F_max`` is declared, every trajectory's return at
    most ``F_max`` — from ``max_reward`` / ``max_return`` recorded when the statistics were built.
    Statistics that do not record a bound that matters (None, e.g. built by hand) are refused: the
    reward sums cannot show it (one sum of 1 per visit may hide a reward above ``r_max``, a return
    above ``F_max``). Raises :class:`InvalidDataError` naming the parameter."""
    hint = "build the statistics with privrl.offline.offline_statistics, which records it"
    if stats.max_reward is None:
        raise InvalidDataError(f"{owner}: the 'r_max' bound on the logged rewards cannot be checked: these "
                               f"Statistics do not record their largest reward (max_reward is None); {hint}.")
    if stats.max_reward > r_max:
        raise InvalidDataError(f"{owner}: the logged rewards must lie in [0, r_max={r_max!r}] (privacy relies on "
                               "it); some do not.")
    if F_max is None:
        return
    if stats.max_return is None:
        raise InvalidDataError(f"{owner}: the 'F_max' bound on each trajectory's total reward cannot be checked: "
                               f"these Statistics do not record their largest return (max_return is None); {hint}.")
    if stats.max_return > F_max * (1 + 1e-12):
        raise InvalidDataError(f"{owner}: every trajectory's total logged reward must be at most F_max={F_max!r} "
                               "(privacy relies on it); some trajectory's is larger.")


def public_reward(reward: object, owner: str) -> np.ndarray:
    """The public reward function: an ``(H,S,A)``/``(S,A)`` array in [0, 1], or a model carrying it
    (a :class:`~privrl.envs.linear.LinearMDP`'s ``rewards``, an episodic
    :class:`~privrl.envs.tabular.TabularMDP`'s or :class:`~privrl.envs.SparseTabularMDP`'s ``r`` —
    e.g. from ``from_gymnasium_toy_text(env, horizon=H)``)."""
    if not isinstance(reward, np.ndarray):
        if hasattr(reward, "rewards") and hasattr(reward, "features"):
            reward = reward.rewards
        elif hasattr(reward, "r") and hasattr(reward, "horizon"):
            if getattr(reward, "horizon", None) is None:
                raise param_error("reward", owner, "an episodic model (give from_gymnasium_toy_text a horizon) "
                                  "or an (H, S, A) array", "a discounted model")
            r = np.asarray(reward.r, dtype=float)
            reward = np.broadcast_to(r, (reward.horizon, *r.shape[-2:])) if r.ndim == 2 else r
    r = check_array(reward, "reward", owner=owner)
    if r.min(initial=0.0) < 0 or r.max(initial=0.0) > 1:
        raise param_error("reward", owner, "rewards in [0, 1] (rescale the public reward function by an affine "
                          "map, e.g. (r - r_min)/(r_max - r_min))", "values outside [0, 1]")
    if r.ndim not in (2, 3):
        raise param_error("reward", owner, "an (H, S, A) or (S, A) array", f"shape {r.shape}")
    return r


def one_hot_features(n_states: int, n_actions: int) -> np.ndarray:
    """``φ(s, a) = e_{sA+a}`` ``(S, A, S·A)``: a tabular MDP as a linear MDP (‖φ‖ = 1)."""
    return np.eye(n_states * n_actions).reshape(n_states, n_actions, n_states * n_actions)


def public_features(features: object, owner: str) -> np.ndarray:
    """The public feature table ``(S, A, d)``: an array, a model with ``.features`` (LinearMDP) or a
    :class:`~privrl.envs.tabular.TabularMDP` (one-hot features)."""
    if not isinstance(features, np.ndarray):
        if hasattr(features, "features"):
            features = features.features
        elif hasattr(features, "P") and hasattr(features, "n_states") and hasattr(features, "n_actions"):
            features = one_hot_features(features.n_states, features.n_actions)
    return check_array(features, "features", owner=owner, ndim=3)


def greedy(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy deterministic policy over the last axis (lowest index wins ties) and its value."""
    policy = np.argmax(q, axis=-1)
    return policy, np.take_along_axis(q, policy[..., None], axis=-1)[..., 0]


def degenerate_output(q_values: np.ndarray, policy: np.ndarray) -> str | None:
    """The cause when an offline output is trivial: every pessimistic Q̄ is 0 (the value function is
    identically zero), or at every step and state all actions tie, so the policy is the constant
    tie-break rule (lowest index) and carries no information. A constant policy that the estimates
    actually prefer is not flagged (it can be optimal)."""
    if not np.any(q_values > 0):
        return ("the pessimistic value function is identically 0 (every Q-value was clipped at 0) and the "
                "policy is the tie-break rule (action 0 everywhere)")
    if q_values.shape[-1] > 1 and np.all(q_values.max(axis=-1) == q_values.min(axis=-1)):
        return "all actions tie at every step and state: the policy is the tie-break rule (action 0 everywhere)"
    return None


def warn_degenerate(owner: str, cause: str | None, knob: str, kind: str = "degenerate output") -> None:
    """UtilityWarning ``"{owner}: {kind}: {cause}. {knob}"``: ``kind`` is "degenerate output" for a
    trivial output (:func:`degenerate_output`, the flag the experiments count) and "weak output" for
    one no better than a trivial answer (:func:`tabular_utility_problem`)."""
    if cause is not None:
        warnings.warn(f"{owner}: {kind}: {cause}. {knob}", UtilityWarning, stacklevel=3)
