"""The chain of Balle, Gomrokchi & Precup (2016), §6 — a Markov reward process.

States 0..N−1. In state s < N−1 the process stays with probability p and moves to s+1 with
probability 1−p; state N−1 is absorbing and terminal. The paper leaves several details unstated;
the resolutions (spec §4.3) are:

* reward 1 on the transition that *enters* N−1, 0 otherwise (so V(N−1) = 0);
* initial state uniform over all N states; an episode that starts in the absorbing state is
  recorded as one step (N−1, r = 0, terminal) — so p_s = (s+1)/N for s ≤ N−2 and p_{N−1} = 1;
* no truncation (episodes terminate almost surely);
* every other episode ends with its transition into N−1 (``terminals`` True); the estimators
  count that terminal state as visited with return 0 (``record_terminal=True``).

Exact values: V(s) = γ^{-1} ((1−p)γ / (1−pγ))^{N−1−s} for s ≤ N−2, V(N−1) = 0.

:func:`sample_chain` draws batches exactly under these conventions, vectorised (the time spent in
each state is geometric). :func:`chain_model` is the same chain as a discounted
:class:`~privrl.envs.tabular.TabularMDP` with one action; as a (S, A) model it carries the *mean*
reward (1−p at state N−2) and starts uniformly over the non-terminal states (TabularMDP forbids
initial mass on terminal states), so data sampled from it differ in distribution from the §6 data
while the values V are identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.data import TrajectoryDataset
from privrl.envs.gym import TabularEnv
from privrl.envs.tabular import TabularMDP

__all__ = ["ChainBatch", "chain_values", "chain_transition_matrix", "chain_visit_probabilities",
           "chain_model", "make_chain_env", "sample_chain_durations", "sample_chain",
           "chain_statistics", "sample_chain_statistics", "sample_chain_statistics_nested"]

_OWNER = "chain"


def _check(n_states: int, stay_probability: float, gamma: float | None = None) -> tuple:
    n = check_scalar(n_states, "n_states", owner=_OWNER, kind=int, low=2)
    p = check_scalar(stay_probability, "stay_probability", owner=_OWNER, low=0.0, high=1.0, closed="left")
    if gamma is None:
        return n, p
    g = check_scalar(gamma, "gamma", owner=_OWNER, low=0.0, high=1.0, closed="left")
    return n, p, g


def chain_values(n_states: int = 40, stay_probability: float = 0.5, gamma: float = 0.99) -> np.ndarray:
    """Exact V (closed form, spec §4.4)."""
    n, p, g = _check(n_states, stay_probability, gamma)
    ratio = (1 - p) * g / (1 - p * g)
    v = np.zeros(n)
    if g == 0:
        v[n - 2] = 1 - p
        return v
    v[: n - 1] = ratio ** (n - 1 - np.arange(n - 1)) / g
    return v


def chain_transition_matrix(n_states: int = 40, stay_probability: float = 0.5) -> np.ndarray:
    """P (N, N): stay with p, advance with 1−p; N−1 absorbing."""
    n, p = _check(n_states, stay_probability)
    P = np.zeros((n, n))
    idx = np.arange(n - 1)
    P[idx, idx] = p
    P[idx, idx + 1] = 1 - p
    P[n - 1, n - 1] = 1.0
    return P


def chain_visit_probabilities(n_states: int = 40) -> np.ndarray:
    """p_s = Pr[a trajectory visits s] under the uniform start: (s+1)/N, and 1 for the absorbing state."""
    n = check_scalar(n_states, "n_states", owner=_OWNER, kind=int, low=2)
    p = (np.arange(n) + 1.0) / n
    p[-1] = 1.0
    return p


def chain_model(n_states: int = 40, stay_probability: float = 0.5, gamma: float = 0.99) -> TabularMDP:
    """The chain as a discounted :class:`~privrl.envs.tabular.TabularMDP` (one action, mean rewards)."""
    n, p, g = _check(n_states, stay_probability, gamma)
    P = chain_transition_matrix(n, p)[:, None, :]
    r = np.zeros((n, 1))
    r[n - 2, 0] = 1 - p
    terminal = np.zeros(n, dtype=bool)
    terminal[-1] = True
    return TabularMDP(P, r, gamma=g, terminal_states=terminal, reward_bounds=(0.0, 1.0),
                      name=f"Chain(N={n}, p={p})")


def make_chain_env(n_states: int = 40, stay_probability: float = 0.5, gamma: float = 0.99) -> TabularEnv:
    """Gymnasium entry point of ``privrl/Chain-v0``: ``TabularEnv(chain_model(...))``."""
    return TabularEnv(chain_model(n_states, stay_probability, gamma))


@dataclass(frozen=True)
class ChainBatch:
    """A batch of chain trajectories as start states and geometric sojourn times.

    ``start`` (m,) int; ``durations`` (m, N−1) int ≥ 1: steps spent in state s (only entries
    s ≥ start are used).
    """

    start: np.ndarray
    durations: np.ndarray
    n_states: int


def sample_chain_durations(n_trajectories: int, *, n_states: int = 40, stay_probability: float = 0.5,
                           rng: RngLike = None) -> ChainBatch:
    """Draw m trajectories of the §6 chain (start uniform over all N states)."""
    n, p = _check(n_states, stay_probability)
    m = check_scalar(n_trajectories, "n_trajectories", owner=_OWNER, kind=int, low=1)
    gen = as_generator(rng)
    start = gen.integers(0, n, size=m)
    durations = gen.geometric(1.0 - p, size=(m, n - 1)).astype(np.int32)
    return ChainBatch(start=start, durations=durations, n_states=n)


def sample_chain(n_trajectories: int, *, n_states: int = 40, stay_probability: float = 0.5,
                 rng: RngLike = None, batch: ChainBatch | None = None) -> TrajectoryDataset:
    """A :class:`~privrl.data.TrajectoryDataset` of m chain trajectories (conventions above)."""
    b = batch if batch is not None else sample_chain_durations(
        n_trajectories, n_states=n_states, stay_probability=stay_probability, rng=rng)
    n = b.n_states
    m = b.start.size
    states = np.arange(n - 1)
    used = np.where(states[None, :] >= b.start[:, None], b.durations, 0)  # (m, N−1)
    lengths = used.sum(axis=1)
    absorbed_start = b.start == n - 1
    lengths = np.where(absorbed_start, 1, lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    # flat states: repeat each (trajectory, state) pair by its sojourn time
    obs_chain = np.repeat(np.tile(states, m), used.ravel())
    # insert the single absorbing step of trajectories that start in N−1
    obs = np.empty(int(starts[-1]), dtype=np.int64)
    ends = starts[1:] - 1
    not_abs = ~absorbed_start
    mask = np.ones(obs.size, dtype=bool)
    mask[starts[:-1][absorbed_start]] = False
    obs[mask] = obs_chain
    obs[~mask] = n - 1
    nxt = np.empty_like(obs)
    nxt[:-1] = obs[1:]
    nxt[ends] = n - 1
    rewards = np.zeros(obs.size)
    rewards[ends[not_abs]] = 1.0
    terminals = np.zeros(obs.size, dtype=bool)
    terminals[ends] = True
    return TrajectoryDataset(obs, np.zeros(obs.size, dtype=np.int64), rewards, nxt, starts,
                             terminals=terminals, n_states=n, n_actions=1, reward_bounds=(0.0, 1.0),
                             metadata={"source": "privrl.envs.chain.sample_chain",
                                       "stay_probability": float(stay_probability)})


def chain_statistics(batch: ChainBatch, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts |X_s| and average first-visit returns F_X of a chain batch, straight from the
    sojourn times (equal to :func:`~privrl.policy_evaluation.first_visit_statistics`
    on :func:`sample_chain`'s dataset; a test checks it). A trajectory through s earns its reward
    τ_s − 1 steps after first entering s, τ_s = Σ_{s' ≥ s} D_{s'}, so F_{x,s} = γ^{τ_s − 1}."""
    n = batch.n_states
    states = np.arange(n - 1)
    counts = np.zeros(n, dtype=np.int64)
    sums = np.zeros(n)
    chunk = max(1, (1 << 22) // n)
    for lo in range(0, batch.start.size, chunk):
        start = batch.start[lo:lo + chunk]
        tau = np.cumsum(batch.durations[lo:lo + chunk, ::-1], axis=1)[:, ::-1]  # τ_s
        visited = states[None, :] >= start[:, None]
        counts[: n - 1] += visited.sum(axis=0)
        powers = np.power(float(gamma), np.arange(int(tau.max()), dtype=np.float64))  # γ^k, k < max τ
        sums[: n - 1] += np.where(visited, powers[tau - 1], 0.0).sum(axis=0)
        counts[n - 1] += start.size
    mean = np.divide(sums, counts, out=np.zeros(n), where=counts > 0)
    return counts, mean


def sample_chain_statistics(n_trajectories: int, gamma: float, *, n_states: int = 40,
                            stay_probability: float = 0.5, rng: RngLike = None,
                            chunk: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """Counts and F_X of a fresh batch of m chain trajectories, drawn in chunks of ``chunk``
    trajectories (memory O(chunk · N) whatever m): the fast path of the §6 experiment."""
    n, p, g = _check(n_states, stay_probability, gamma)
    m = check_scalar(n_trajectories, "n_trajectories", owner=_OWNER, kind=int, low=1)
    gen = as_generator(rng)
    counts = np.zeros(n, dtype=np.int64)
    sums = np.zeros(n)
    for lo in range(0, m, chunk):
        b = sample_chain_durations(min(chunk, m - lo), n_states=n, stay_probability=p, rng=gen)
        c, f = chain_statistics(b, g)
        counts += c
        sums += c * f
    return counts, np.divide(sums, counts, out=np.zeros(n), where=counts > 0)


def _geometric_pvals(stay_probability: float) -> np.ndarray:
    """P(D = d), d = 1..K, for the sojourn time D ~ Geometric(1 − p), then the tail P(D > K)
    (K such that the tail is below 1e-12; the tail is sampled exactly where it occurs)."""
    p = float(stay_probability)
    k = 1 if p == 0.0 else max(1, int(math.ceil(math.log(1e-12) / math.log(p))))
    pmf = (1.0 - p) * p ** np.arange(k)
    return np.append(pmf, max(0.0, 1.0 - pmf.sum()))


def _chain_increment(m: int, gamma: float, n: int, stay_probability: float,
                     gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Counts and first-visit return *sums* of m fresh chain trajectories, exactly in law, by
    histograms of τ_s = Σ_{s' ≥ s} D_{s'} instead of per-trajectory draws (cost independent of m).

    Starts: n_j ~ Multinomial(m, 1/N). Going down from s = N−2, the trajectories visiting s are
    those visiting s+1 minus the n_{s+1} that start there — a uniformly random subset, because
    sojourn times are independent of starts, so their τ-histogram loses a multivariate
    hypergeometric draw — and each remaining τ grows by an independent D_s: the histogram is split
    multinomially over the geometric pmf. F_{x,s} = γ^{τ_s − 1} (:func:`chain_statistics`)."""
    starts = gen.multinomial(m, np.full(n, 1.0 / n))
    counts = np.cumsum(starts).astype(np.int64)
    counts[n - 1] = m
    sums = np.zeros(n)
    pvals = _geometric_pvals(stay_probability)
    k = pvals.size - 1
    hist = np.zeros(1, dtype=np.int64)  # hist[τ]: τ = 0 before the first state is added
    hist[0] = counts[n - 2]
    for s in range(n - 2, -1, -1):
        if s < n - 2 and starts[s + 1]:
            hist = hist - gen.multivariate_hypergeometric(hist, int(starts[s + 1]), method="marginals")
        nz = np.flatnonzero(hist)
        new = np.zeros(hist.size + k, dtype=np.int64)
        if nz.size:
            lo = int(nz[0])
            split = gen.multinomial(hist[lo:], pvals)  # (bins, k + 1): columns d = 1..k, then the tail
            width = hist.size - lo
            for d in range(1, k + 1):
                new[lo + d: lo + d + width] += split[:, d - 1]
            for tau in np.flatnonzero(split[:, k]):  # D > k: exact draws for the (rare) tail
                extra = k + gen.geometric(1.0 - stay_probability, size=int(split[tau, k]))
                top = lo + int(tau) + extra
                if top.max() >= new.size:
                    new = np.concatenate([new, np.zeros(int(top.max()) + 1 - new.size, dtype=np.int64)])
                np.add.at(new, top, 1)
        hist = new
        tau_values = np.arange(hist.size)
        live = hist > 0
        sums[s] = float(np.sum(hist[live] * np.power(float(gamma), tau_values[live] - 1.0)))
    return counts, sums


def sample_chain_statistics_nested(batch_sizes: Sequence[int], gamma: float, *, n_states: int = 40,
                                   stay_probability: float = 0.5,
                                   rng: RngLike = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Counts and F_X of nested batches X_1 ⊂ X_2 ⊂ … of sizes m_1 < m_2 < … (each an i.i.d. batch
    of chain trajectories, every one a prefix of the next): the statistics of a batch are sums over
    its trajectories, so each is the previous one plus a fresh increment (:func:`_chain_increment`,
    exact in law, time and memory independent of m). One call serves a whole batch grid."""
    n, p, g = _check(n_states, stay_probability, gamma)
    sizes = [check_scalar(m, "batch_sizes", owner=_OWNER, kind=int, low=1) for m in batch_sizes]
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise param_error("batch_sizes", _OWNER, "strictly increasing batch sizes", list(batch_sizes))
    gen = as_generator(rng)
    counts, sums, done, out = np.zeros(n, dtype=np.int64), np.zeros(n), 0, []
    for m in sizes:
        c, s = _chain_increment(m - done, g, n, p, gen)
        counts, sums, done = counts + c, sums + s, m
        out.append((counts.copy(), np.divide(sums, counts, out=np.zeros(n), where=counts > 0)))
    return out
