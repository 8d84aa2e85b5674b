"""First-visit statistics of a batch of trajectories (Balle, Gomrokchi & Precup 2016, §2.2).

The signature ⟨X⟩ = (|X_s|)_s (number of trajectories visiting s) and the average first-visit
returns F_X (eq. 4) are all DP-LSW and DP-LSL read from the data. Both are sums over trajectories,
so the statistics of a union of disjoint batches are the count-weighted combination of theirs
(:meth:`VisitStatistics.combine`). **Private**: never store them on an estimator, never print them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privrl.errors import InvalidDataError

__all__ = ["VisitStatistics", "discounted_returns", "first_visit_statistics"]


@dataclass(frozen=True)
class VisitStatistics:
    """First-visit statistics of a dataset — **private** (never store them on an estimator).

    ``counts[s]`` = |X_s| (number of trajectories visiting s), ``mean_returns[s]`` = F_X(s)
    (eq. 4; 0 where unvisited), ``n_trajectories`` = m; ``return_sums[s]`` the sum of the
    first-visit returns (exactly as added, when known: sums of batches then add exactly as the sum
    of the whole).
    """

    counts: np.ndarray
    mean_returns: np.ndarray
    n_trajectories: int
    return_sums: np.ndarray | None = None

    @staticmethod
    def combine(parts: list[VisitStatistics]) -> VisitStatistics:
        """The statistics of the union of disjoint batches (counts and return sums add)."""
        counts = np.sum([p.counts for p in parts], axis=0).astype(np.int64)
        sums = np.sum([p.counts * p.mean_returns for p in parts], axis=0)
        mean = np.divide(sums, counts, out=np.zeros(counts.size), where=counts > 0)
        return VisitStatistics(counts=counts, mean_returns=mean,
                               n_trajectories=int(sum(p.n_trajectories for p in parts)))


def discounted_returns(rewards: np.ndarray, episode_starts: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = Σ_{j ≥ t, same episode} γ^{j−t} r_j for every transition of a flat dataset.

    A parallel (Hillis–Steele) scan of the recurrence G_t = r_t + a_t G_{t+1}, with a_t = γ inside an
    episode and 0 at its last step: ⌈log₂ T_max⌉ vectorised passes, no loop over steps, and only
    sums of non-negative terms (no γ^{-t} rescaling, so no overflow or cancellation).
    """
    b = np.array(rewards, dtype=np.float64, copy=True)
    n = b.size
    starts = np.asarray(episode_starts, dtype=np.int64)
    if n == 0:
        return b
    a = np.full(n, float(gamma))
    a[starts[1:] - 1] = 0.0
    max_len = int(np.max(np.diff(starts)))
    d = 1
    while d < max_len:
        b[: n - d] += a[: n - d] * b[d:]
        a[: n - d] *= a[d:]
        d *= 2
    return b


def first_visit_statistics(
    observations: np.ndarray,
    rewards: np.ndarray,
    episode_starts: np.ndarray,
    n_states: int,
    gamma: float,
    *,
    terminal_states: np.ndarray | None = None,
    return_bound: float | None = None,
    clip_returns: bool = False,
    max_visits: int | None = None,
) -> VisitStatistics:
    """Counts |X_s| and average first-visit returns F_X (§2.2, eq. 4), vectorised.

    ``terminal_states`` (E,) int gives, per episode, a terminal state reached by its last
    transition (or −1): it counts as visited at the end of the episode with return 0 (the
    absorbing state has value 0), unless the episode visited it before. Every first-visit
    return must lie in [0, ``return_bound``]; larger ones raise :class:`InvalidDataError`, or are
    clipped to the bound when ``clip_returns`` (a per-trajectory, data-independent map, so the
    guarantee is kept). ``max_visits`` keeps only the first ``max_visits`` distinct states each
    episode enters (in time order, its recorded terminal state last): a per-trajectory cap on its
    contribution (also a per-trajectory map).
    """
    obs = np.asarray(observations, dtype=np.int64)
    starts = np.asarray(episode_starts, dtype=np.int64)
    m = starts.size - 1
    returns = discounted_returns(rewards, starts, gamma)
    episode = np.repeat(np.arange(m, dtype=np.int64), np.diff(starts))
    key = episode * n_states + obs
    order = np.argsort(key, kind="stable")  # stable: the earliest visit of a key comes first
    sorted_key = key[order]
    is_first = np.ones(sorted_key.size, dtype=bool)
    is_first[1:] = sorted_key[1:] != sorted_key[:-1]
    first = order[is_first]
    if max_visits is not None:  # the first max_visits distinct states of each episode, in time order
        first = np.sort(first)
        ep = episode[first]
        rank = np.arange(first.size) - np.searchsorted(ep, ep, side="left")
        first = first[rank < max_visits]
    first_states = obs[first]
    first_returns = returns[first]
    extra_states = np.zeros(0, dtype=np.int64)
    if terminal_states is not None:  # terminal states not visited earlier in their episode
        term = np.asarray(terminal_states, dtype=np.int64)
        has = np.flatnonzero(term >= 0)
        tkey = has * n_states + term[has]
        pos = np.minimum(np.searchsorted(sorted_key, tkey), max(sorted_key.size - 1, 0))
        seen = sorted_key[pos] == tkey if sorted_key.size else np.zeros(tkey.size, dtype=bool)
        if max_visits is not None:  # the terminal state is one more distinct state of its episode
            room = np.bincount(episode[first], minlength=m)[has] < max_visits
            extra_states = term[has][~seen & room]
        else:
            extra_states = term[has][~seen]
    if return_bound is not None and first_returns.size:
        if float(first_returns.max()) > return_bound * (1 + 1e-9) and not clip_returns:
            # the return itself is private: say which bound broke and how to fix it, not by how much
            raise InvalidDataError(
                f"A first-visit return of the dataset exceeds the public return bound F_max = "
                f"{return_bound!r}. Declare a public F_max that holds for every trajectory, or pass "
                "clip_returns=True to clip returns to it (a per-trajectory map that keeps the guarantee)."
            )
        first_returns = np.minimum(first_returns, return_bound)
    counts = np.bincount(first_states, minlength=n_states) + np.bincount(extra_states, minlength=n_states)
    sums = np.bincount(first_states, weights=first_returns, minlength=n_states)  # extra visits add 0
    mean = np.divide(sums, counts, out=np.zeros(n_states), where=counts > 0)
    return VisitStatistics(counts=counts.astype(np.int64), mean_returns=mean, n_trajectories=m, return_sums=sums)
