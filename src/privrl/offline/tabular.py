"""APVI and DP-APVI (Qiao & Wang 2023, Section 3, Algorithm 1) — tabular offline RL, streamed.

Every step after the releases reads only released values, so it is post-processing. One kernel,
:func:`dp_apvi`, runs Algorithm 1 on sparse sufficient statistics
(:class:`~privrl.offline._common.Statistics`) one step ``h`` at a time (backward induction needs
``V_{h+1}`` only) and, within a step, one block of states at a time. Its row-wise parts are pure
functions of a block of rows ``(…, S)``:

* :func:`release_counts` — Eq. (2) (Gaussian) or the Laplace variant, then ``{·}^+``, for dense
  counts (small problems and audits): the very per-block draws the kernel makes;
* :func:`consistent_counts` — Eq. (3)/(4) solved exactly in closed form;
* :func:`private_transitions` — Eq. (5);
* :func:`dp_apvi` — the whole algorithm; :func:`dp_apvi_from_counts` on dense counts (audits call
  the release 10⁴ times).

**Streaming.** The released transition counts ``ñ_h(s, a, ·)`` are noisy in *every* one of the
``H·S·A·S`` cells (privacy needs noise on the zero counts too), but the algorithm consumes them
row by row: the consistency step, ``P̃`` and the Bernstein penalty of a pair ``(h, s, a)`` need
that pair's row only. So the noise of the rows of a step is drawn where they are consumed, by
key groups of :func:`key_states` states (``KEY_CELLS`` noisy cells: a whole step of a small
problem, one state of a large one), group ``g`` of step ``h`` from the counter-based stream of
the block key ``h·G + g`` (``G`` groups per step) of one
:meth:`~privrl.privacy.release.Releaser.gaussian_stream` release (its event is recorded once, as
for the dense release): each cell's noise is ``N(0, σ²)`` (or ``Lap(b)``), cells are independent,
and any processing order or block size gives the same result — the released object has the
distribution of the dense Eq. (2). Dense rows are never kept: ``P̃_h V`` and ``P̃_h V²`` are
accumulated per block.

A block's release, Eq. (3) and the cell threshold run in one compiled pass
(:func:`privrl.offline._kernels.release_block`, the NumPy code's arithmetic operation for operation:
the same bits) when numba is there, in NumPy otherwise. One pooled step planned over ``horizon``
steps is released and post-processed once and its rows kept for every ``h`` (``_step_moments``'s
``cache``): only ``P̃_h V`` and ``P̃_h V²`` are computed again.

Complexity (``K`` trajectories, ``nnz <= K·H`` visited cells, block of ``b`` states):
statistics ``O(K·H log(K·H))`` time, ``O(nnz + H·S·A)`` memory; DP-APVI ``O(H·S·A·S)`` time (one
noise draw per cell; the water-filling of Eq. 3 sorts only the entries above ``max − hi``, a
handful per noisy row) and ``O(nnz + H·S·A + b·A·S)`` memory — pooled, ``O(S·A·S)`` noise draws and
``O(nnz + H·S·A + S·A·S)`` memory (the one released step kept) plus ``O(H·S·A·S)`` multiply-adds; APVI
(no noise) ``O(nnz + H·S·A)`` time and memory: the rows stay sparse.

Privacy unit: one trajectory, replace-one neighbours, dataset size public.

Sensitivities (Lemma C.1). Replacing one trajectory changes, at each step h, one visit
``(s_h, a_h)`` (and one ``(s_h, a_h, s_{h+1})``) into another: at most two entries of each family
move by ±1 per step, so over the ``H`` steps ℓ2 ``sqrt(2H)`` and ℓ1 ``2H`` for each family. The noise
scales per calibration are in :mod:`privrl.offline.calibration` (tight: exact μ split (1, S) across the
families; sound/paper: σ² = 2H/ρ per entry, or b = 4H/ε).

**Logged (outcome) rewards** (not in the paper, whose reward is public): with ``reward=None`` the
rewards come from the data, through the per-``(h, s, a)`` reward sums ``R`` released with the third
family of the plan (:func:`~privrl.offline.calibration.count_noise` with ``logged_rewards=True``;
sensitivity there). ``r̃ = clip(R̃/ñ, 0, R_max)`` where ``ñ`` clears the threshold, 0 elsewhere, and
the penalty gains ``E_R/(2ñ)`` — the high-probability bound of the reward noise (Lemma C.2's
argument), under every preset: without it the noise on the reward sums of heavily visited cells
that never pay (an absorbing failure state) gives them a value of their own.

**Routes for coverage-limited data** (:mod:`privrl.offline.grouping`): the kernel runs unchanged on
statistics of public state groups and, pooled over the steps, on one-step statistics planned over
``horizon`` steps (one release serves every step); the noise plan takes the re-derived
sensitivities (:func:`~privrl.offline.calibration.count_sensitivity`). ``cell_threshold`` and
``fallback`` are post-processing (:func:`dp_apvi`).

Utility knobs (privacy never depends on them): ``c1, c2, c_unvisited, threshold_multiplier`` with
presets ``constants="theory"`` (C1 = √2, C2 = 16, C' = 2, threshold E) and ``"practical"``
(:data:`TABULAR_PRESETS`; how they were chosen: ``docs/offline.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from privrl._validation import check_array, param_error
from privrl.offline import _kernels
from privrl.offline._common import Statistics, greedy, transition_statistics
from privrl.offline.baseline import reference_q, spibb_step
from privrl.offline.calibration import CountNoise

__all__ = ["TabularFit", "count_statistics", "release_counts", "consistent_counts", "private_transitions",
           "dp_apvi", "dp_apvi_from_counts", "TABULAR_PRESETS", "BLOCK_CELLS", "KEY_CELLS", "key_states",
           "TRANSITIONS_LIMIT"]

#: Utility presets of APVI / DP-APVI. ``theory``: Algorithm 1's C1 = √2, C2 = 16, C' = 2 and the
#: threshold E (spec A-T3, A-T4, A-T7). ``practical``: chosen once on held-out instances (random
#: tabular MDPs with instance seeds 1–4; never the benchmark's seed 0 nor FrozenLake) by
#: ``benchmarks/tune_offline.py``: C2 = 0 (the privacy penalty is what makes the output trivial),
#: threshold E/4, C1 = 0.5 (tied for DP-APVI, best for APVI) and the count split (S, 1) (k = 1: the
#: n_sa family gets the smaller noise, which the coverage threshold needs); theory keeps the paper's
#: even split (k = 0). See ``docs/offline.md``.
TABULAR_PRESETS: dict[str, dict[str, float | str]] = {
    "theory": {"c1": math.sqrt(2.0), "c2": 16.0, "c_unvisited": 2.0, "threshold_multiplier": 1.0,
               "split_power": 0.0},
    "practical": {"c1": 0.5, "c2": 0.0, "c_unvisited": 2.0, "threshold_multiplier": 0.25, "split_power": "auto"},
}

#: Dense cells per block of noisy rows (the block holds ``BLOCK_CELLS // (A·S)`` states, at least one,
#: rounded down to whole key groups).
BLOCK_CELLS = 1 << 20
#: Noisy cells per key of the transition counts' stream (the key group holds :func:`key_states` states):
#: one seeded stream per group, not per state — seeding a stream costs as much as drawing ~10³ cells.
KEY_CELLS = 1 << 16
#: Largest ``H·S·A·S`` for which a fit keeps the dense ``P̃`` (``transitions_``); above it, None.
TRANSITIONS_LIMIT = 1 << 22


# --------------------------------------------------------------------------- statistics and noise
def count_statistics(observations: np.ndarray, actions: np.ndarray, next_observations: np.ndarray,
                     n_states: int, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense per-step counts from ``(K, H)`` index arrays: ``n_sa`` ``(H,S,A)``, ``n_sas`` ``(H,S,A,S)``
    (small problems: audits and tests)."""
    stats = transition_statistics({"observations": observations, "actions": actions,
                                   "next_observations": next_observations,
                                   "rewards": np.zeros(np.shape(actions))}, n_states, n_actions)
    return stats.n_sa, stats.counts


class _Releases(NamedTuple):
    """The released quantities of one fit: ``{ñ_sa}^+`` ``(H,S,A)``, the stream of the transition
    counts (None without noise), the reward sums (None for a public reward) and the released visit
    counts before ``{·}^+`` (unbiased: sums of them are the baseline's coarser levels)."""

    n_sa: np.ndarray
    stream: Any
    reward_sums: np.ndarray | None
    raw_n_sa: np.ndarray | None = None


def _release(n_sa: np.ndarray, reward_sums: np.ndarray | None, noise: CountNoise | None, rel: Any,
             reread: bool = False) -> _Releases:
    """Eq. (2) for ``n_sa`` (dense, then ``{·}^+``), the stream of ``n_sas`` (``n_sa.size · S`` cells;
    ``reread`` when some of its blocks are read more than once: one pooled step planned at every h)
    and the reward sums when given (logged rewards) — in this order, each recorded in ``rel``'s
    ledger. No noise, no event, when ``noise`` is None or not private."""
    if noise is None or not noise.is_private:
        counts = np.array(n_sa, dtype=float)
        return _Releases(counts, None, reward_sums, counts)
    cells = int(np.size(n_sa)) * int(np.shape(n_sa)[1])
    if noise.mechanism == "gaussian":
        n_sa = rel.gaussian(n_sa, sensitivity=noise.sensitivity[0], std=noise.scale[0])
        stream = rel.gaussian_stream(sensitivity=noise.sensitivity[1], std=noise.scale[1], size=cells, reread=reread)
        if reward_sums is not None:
            reward_sums = rel.gaussian(reward_sums, sensitivity=noise.reward_sensitivity, std=noise.reward_scale)
    else:
        n_sa = rel.laplace(n_sa, sensitivity=noise.sensitivity[0], scale=noise.scale[0])
        stream = rel.laplace_stream(sensitivity=noise.sensitivity[1], scale=noise.scale[1], size=cells,
                                    reread=reread)
        if reward_sums is not None:
            reward_sums = rel.laplace(reward_sums, sensitivity=noise.reward_sensitivity, scale=noise.reward_scale)
    return _Releases(np.maximum(n_sa, 0.0), stream, reward_sums, n_sa)


def key_states(n_actions: int, n_states: int) -> int:
    """States per key group of the transition counts' noise: ``max(1, KEY_CELLS // (A·S))``."""
    return max(1, KEY_CELLS // (n_actions * n_states))


def _group_noise(stream: Any, h: int, states: range, n_states: int, n_actions: int
                 ) -> Iterator[tuple[slice, np.ndarray]]:
    """``(rows, noise)`` for the rows ``(h, s, a)``, ``s`` in ``states``, of a block ``(len(states)·A, S)``:
    the noise of the ``g``-th key group of states of step ``h`` (:func:`key_states` states, rows
    ``s·A + a``) is block ``h·G + g`` of ``stream``, ``G`` groups per step; a group that ``states`` cuts
    is drawn whole and cut (the same values in every block)."""
    A = n_actions
    size = key_states(A, n_states)
    groups = -(-n_states // size)
    for first in range(states.start - states.start % size, states.stop, size):
        last = min(first + size, n_states)
        noise = stream.noise(h * groups + first // size, ((last - first) * A, n_states))
        lo, hi = max(first, states.start), min(last, states.stop)
        yield slice((lo - states.start) * A, (hi - states.start) * A), noise[(lo - first) * A:(hi - first) * A]


def _noisy_rows(stream: Any, counts: Any, h: int, states: range, n_states: int) -> np.ndarray:
    """``{n + noise}^+`` of the rows of ``(h, s)`` for ``s`` in ``states`` (``counts`` their dense or
    sparse rows ``(len(states)·A, S)``), the noise of :func:`_group_noise`."""
    dense = counts.toarray() if hasattr(counts, "toarray") else np.array(counts, dtype=float)
    for rows, noise in _group_noise(stream, h, states, n_states, dense.shape[0] // len(states)):
        dense[rows] += noise
    return np.maximum(dense, 0.0, out=dense)


def release_counts(n_sa: np.ndarray, n_sas: np.ndarray, noise: CountNoise | None, rel: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (2) on dense counts: ``n' = {n + noise}^+`` for every ``(h, s, a[, s'])``, independent noise
    per entry, drawn through ``rel`` (a :class:`~privrl.privacy.release.Releaser`, which records the
    two events) with the scales of ``noise`` — the same draws as :func:`dp_apvi` makes block by
    block. ``{·}^+`` is post-processing (spec A-T1). ``noise=None`` or an infinite budget releases
    the counts unchanged (no event)."""
    n_sas = np.asarray(n_sas, dtype=float)
    H, S, A, _ = n_sas.shape
    out = _release(np.asarray(n_sa, dtype=float), None, noise, rel)
    if out.stream is None:
        return out.n_sa, n_sas.copy()
    rows = np.stack([_noisy_rows(out.stream, n_sas[h].reshape(S * A, S), h, range(S), S) for h in range(H)])
    return out.n_sa, rows.reshape(H, S, A, S)


# --------------------------------------------------------------------------- post-processing (row-wise)
def _water_levels(rows: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row the level ``t`` with ``Σ max(0, x − t) = hi`` (rows ``>= 0`` summing above ``hi >= 0``),
    Eq. (3)'s projection. Since ``t >= max(x) − hi`` (at that level the largest entry alone gives
    ``hi``), only the entries above ``max(x) − hi`` are sorted: with noisy rows a handful each. The
    level is the simplex projection's (Duchi et al. 2008): with the candidates ``u`` sorted down,
    ``t = (Σ_{j<=k} u_j − hi)/k`` for the largest ``k`` with ``u_k > (Σ_{j<=k} u_j − hi)/k``."""
    top = rows.max(axis=1)
    above = rows > (top - hi)[:, None]
    if 4 * np.count_nonzero(above) > above.size:                 # most entries are candidates (large noise)
        return _dense_water_levels(rows, hi, top)
    row, col = np.nonzero(above)
    u = rows[row, col]
    order = np.lexsort((-u, row))
    row, u = row[order], u[order]
    first = np.searchsorted(row, np.arange(len(rows)))            # where each row's candidates start
    css = np.cumsum(u)
    before = np.concatenate([[0.0], css])[first]                   # Σ of earlier rows' candidates
    rank = np.arange(u.size) - first[row] + 1
    levels = (css - before[row] - hi[row]) / rank
    k = np.bincount(row, weights=u > levels, minlength=len(rows)).astype(np.int64)
    t = top.copy()                                                 # no candidate: hi = 0, t = max
    has = k > 0
    t[has] = levels[first[has] + k[has] - 1]
    return t


def _dense_water_levels(rows: np.ndarray, hi: np.ndarray, top: np.ndarray) -> np.ndarray:
    """:func:`_water_levels` when most entries are candidates (e.g. under the paper's calibration):
    every row sorted on its own (``np.sort`` along the rows, ~30× faster there than one ``lexsort``
    of all candidates, and each row's sums start from 0)."""
    u = -np.sort(-rows, axis=1)
    levels = (np.cumsum(u, axis=1) - hi[:, None]) / np.arange(1, rows.shape[1] + 1)
    k = np.count_nonzero(u > levels, axis=1)
    t = top.copy()                                                 # no candidate: hi = 0, t = max
    has = np.flatnonzero(k > 0)
    t[has] = levels[has, k[has] - 1]
    return t


def _consistent_rows(noisy_sa: np.ndarray, x: np.ndarray, bound: float) -> np.ndarray:
    """:func:`consistent_counts` on a block of rows ``x`` ``(m, S)``, in place; returns ``x``."""
    S = x.shape[1]
    total = x.sum(axis=1)
    lo, hi = noisy_sa - bound / 2.0, noisy_sa + bound / 2.0
    low = total < lo
    if low.any():
        x[low] += ((lo - total)[low] / S)[:, None]
    high = np.flatnonzero(total > hi)
    if high.size == len(x):
        x -= _water_levels(x, hi)[:, None]
        np.maximum(x, 0.0, out=x)
    elif high.size:
        rows = x[high]
        x[high] = np.maximum(rows - _water_levels(rows, hi[high])[:, None], 0.0)
    return x


def consistent_counts(noisy_sa: np.ndarray, noisy_sas: np.ndarray, bound: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3): for every ``(h,s,a)``, ``argmin_x max_s' |x_s' − n'_{sas'}|`` s.t.
    ``|Σ x − n'_{sa}| <= bound/2`` and ``x >= 0``, solved in closed form (spec §2.5).

    With ``T = Σ n'_{sas'}``, ``lo/hi = n'_{sa} ∓ bound/2``: if ``lo <= T <= hi`` keep ``n'``;
    if ``T < lo`` raise every entry by ``(lo − T)/S``; if ``T > hi`` lower by the water level
    ``t`` with ``Σ max(0, n' − t) = hi``. Needs ``n' >= 0`` (always feasible then). Any leading
    axes. Returns ``(ñ_sa, ñ_sas)`` with ``ñ_sa = Σ_s' ñ_sas'``.
    """
    noisy_sas = np.asarray(noisy_sas, dtype=float)
    S = noisy_sas.shape[-1]
    out = _consistent_rows(np.asarray(noisy_sa, dtype=float).reshape(-1), noisy_sas.reshape(-1, S).copy(), bound)
    out = out.reshape(noisy_sas.shape)
    return out.sum(axis=-1), out


def private_transitions(n_sa: np.ndarray, n_sas: np.ndarray, threshold: float) -> np.ndarray:
    """Eq. (5): ``ñ_{sas'}/ñ_{sa}`` where ``ñ_{sa} > threshold``, the uniform ``1/S`` otherwise."""
    S = n_sas.shape[-1]
    ok = n_sa > threshold
    safe = np.where(ok, n_sa, 1.0)
    return np.where(ok[..., None], n_sas / safe[..., None], 1.0 / S)


def _row_sums(x: Any) -> np.ndarray:
    return np.asarray(x.sum(axis=1), dtype=float).ravel()


class TabularFit(NamedTuple):
    """The output of :func:`dp_apvi`: the greedy policy ``(H,S)`` (with the fallback applied), the
    pessimistic values ``(H+1,S)`` and Q-values ``(H,S,A)``, the dense ``P̃`` or None, the counts the
    algorithm used (``ñ_sa`` after Eq. 3 and the cell threshold; ``(H,S,A)``), the behaviour-cloned
    action ``argmax_a ñ_sa`` of the released visit counts ``(H,S)``; the policy's probabilities
    ``(H,S,A)`` with a baseline (None without: the policy is deterministic), the baseline (the
    estimated logging policy) or None, the supported pairs (their counts clear the confidence bound
    and ``support_count``), the released visit counts ``{ñ_sa}^+`` of each step ``(H,S,A)`` and the
    optimistic ``min{r + P̃V + Γ, H − h}^+`` (the other side of the penalty; ``(H,S,A)``).
    Every field is post-processing."""

    policy: np.ndarray
    values: np.ndarray
    q_values: np.ndarray
    transitions: np.ndarray | None
    counts: np.ndarray
    behaviour: np.ndarray | None = None
    probs: np.ndarray | None = None
    prior: np.ndarray | None = None
    supported: np.ndarray | None = None
    released: np.ndarray | None = None
    q_upper: np.ndarray | None = None


def _released_block(released: _Releases, step: Any, hs: int, states: range, n_states: int, whole: bool,
                    gap_bound: float, cell_floor: float) -> tuple[Any, np.ndarray]:
    """The rows of ``states`` of released step ``hs`` as the algorithm reads them and their sums ``ñ``:
    released (Eq. 2), made consistent (Eq. 3) and thresholded at ``cell_floor`` when there is noise
    (compiled: :func:`~privrl.offline._kernels.release_block`, the same arithmetic in one pass); the
    counts as they are otherwise (``whole``: the block is the whole step, read as is)."""
    A = step.shape[0] // n_states
    x: Any = step if whole else step[states.start * A:states.stop * A]
    noisy_sa = None if released.stream is None else released.n_sa[hs, states.start:states.stop].ravel()
    if noisy_sa is not None and _kernels.COMPILED and hasattr(x, "indptr"):
        dense = np.empty((x.shape[0], n_states))
        for rows, noise in _group_noise(released.stream, hs, states, n_states, A):
            dense[rows] = noise
        n = _kernels.release_block(dense.reshape(-1), n_states, x.indptr, x.indices, np.asarray(x.data, dtype=float),
                                   noisy_sa, float(gap_bound), float(cell_floor))
        return dense, n
    if noisy_sa is not None:
        x = _noisy_rows(released.stream, x, hs, states, n_states)
        x = _consistent_rows(noisy_sa, x, gap_bound)
        if cell_floor > 0:
            x[x <= cell_floor] = 0.0
    return x, _row_sums(x)


def _step_moments(released: _Releases, step: Any, hs: int, v: np.ndarray, block: int, gap_bound: float,
                  cell_floor: float, threshold: float, kept: np.ndarray | None,
                  cache: dict[int, tuple[Any, np.ndarray]] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ñ, P̃v, P̃v²)`` of the ``S·A`` rows of one step, block by block of ``block`` states: each
    block's rows (:func:`_released_block`) reduced against ``v``; ``kept`` (the step's dense ``P̃``,
    Eq. 5) is filled if given. ``cache`` (one pooled step planned at every h) keeps each block's
    released rows by its first state: the release and its post-processing run once, and only the
    moments against ``v`` are computed again."""
    S = v.shape[0]
    A = step.shape[0] // S
    pv, pv2, n = np.zeros(S * A), np.zeros(S * A), np.zeros(S * A)
    for s0 in range(0, S, block):
        states = range(s0, min(S, s0 + block))
        rows = slice(states.start * A, states.stop * A)
        done = None if cache is None else cache.get(s0)
        if done is None:
            done = _released_block(released, step, hs, states, S, block >= S, gap_bound, cell_floor)
            if cache is not None:
                cache[s0] = done
        x, n[rows] = done
        pv[rows], pv2[rows] = x @ v, x @ (v * v)
        if kept is not None:
            kept[rows] = private_transitions(n[rows], x.toarray() if hasattr(x, "toarray") else x, threshold)
    return n, pv, pv2


def _bernstein_penalty(n: np.ndarray, pv: np.ndarray, pv2: np.ndarray, v: np.ndarray, threshold: float,
                       gap_bound: float, iota: float, c1: float, noise_term: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(ok, bounded, safe ñ, P̃V, Γ)`` of one step's rows (Algorithm 1, line 6): ``ok`` where ñ
    clears ``threshold`` (``P̃V`` is the mean of ``V`` elsewhere), ``bounded`` where also ñ > E_sa;
    ``Γ = c1 sqrt(Var_P̃(V) ι/(ñ − E_sa)) + noise_term/ñ`` (``noise_term = c2 S H Ē ι``)."""
    ok = n > threshold
    safe_n = np.where(ok, n, 1.0)
    mean = np.where(ok, pv / safe_n, v.mean())
    var = np.maximum(pv2 / safe_n - mean**2, 0.0)
    bounded = ok & (n > gap_bound)       # the Bernstein bound needs ñ > E_sa; else the pair is unvisited
    safe_gap = np.where(bounded, n - gap_bound, 1.0)
    gamma = c1 * np.sqrt(var * iota / safe_gap) + noise_term / safe_n
    return ok, bounded, safe_n, mean, gamma


def _policy(Q: np.ndarray, released_n: np.ndarray, fallback: str) -> np.ndarray:
    """The greedy policy of ``Q`` (``H,S,A``): ties to the lowest action index (``"tie-break"``) or
    to the most released visits ``released_n`` (``"behaviour"``, :func:`dp_apvi`)."""
    policy = np.argmax(Q, axis=-1)
    if fallback == "behaviour":
        tied = Q == Q.max(axis=-1, keepdims=True)
        policy = np.argmax(np.where(tied, released_n, -np.inf), axis=-1)
    elif fallback != "tie-break":
        raise param_error("fallback", "dp_apvi", "'tie-break' or 'behaviour'", fallback)
    return policy


def _improvement_state(baseline: Callable[[np.ndarray], np.ndarray] | None, safe: bool, raw_n_sa: Any,
                       shape: tuple[int, int, int], served: list[int]) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """``(prior, probs, supported, Q⁺)`` before the backward pass: the estimated logging policy
    (None without ``baseline``) at each of the H planned steps (a baseline of the released steps is
    read at the step that serves h, ``served``; one of H rows, e.g. a public policy, as it is), the
    SPIBB policy's array (None unless ``safe``) and empty arrays."""
    prior = None if baseline is None else baseline(raw_n_sa)
    if prior is not None and len(prior) != shape[0]:
        prior = prior[served]
    probs = np.zeros(shape) if safe and prior is not None else None
    return prior, probs, np.zeros(shape, dtype=bool), np.zeros(shape)


def _improve(q: np.ndarray, q_upper: np.ndarray, prior: np.ndarray | None, supported: np.ndarray,
             probs: np.ndarray | None, h: int) -> np.ndarray:
    """Line 8 of Algorithm 1 at step ``h``: the greedy value, or with the SPIBB
    policy's array ``probs`` Πb-SPIBB's step on ``prior`` (:func:`~privrl.offline.baseline.spibb_step`,
    written into ``probs[h]``): pairs that are not
    *supported* — ``ñ_sa`` not above the threshold and ``E_sa`` (no Bernstein bound) or below
    ``support_count`` visits — keep the baseline's probability; the supported mass moves to the best
    supported action only when its ``Q̄`` beats the baseline's ``Q̄ + MARGIN·Γ``
    (:data:`~privrl.offline.baseline.MARGIN`); the value is ``Σ_a π(a) Q̄(a)`` (ties keep the
    baseline; the fallback is not used)."""
    if prior is None or probs is None:
        return greedy(q)[1]
    probs[h] = spibb_step(q, reference_q(q, q_upper), prior[h], supported)
    return (probs[h] * q).sum(axis=-1)


def _noise_scales(noise: CountNoise | None, S: int, A: int, block_states: int | None, cell_threshold: float
                  ) -> tuple[float, float, float, int, float]:
    """``(E_sa, Ē, the reward sums' bound, states per block, the cell floor k·σ_sas)`` of a release with
    ``noise`` (None: no noise — zero bounds, the rows stay sparse and a step is one block)."""
    if noise is None:
        return 0.0, 0.0, 0.0, S, 0.0
    group = key_states(A, S)
    block = max(group, BLOCK_CELLS // (A * S) // group * group) if block_states is None else int(block_states)
    return noise.bound[0], noise.penalty_bound, noise.reward_bound, block, cell_threshold * noise.noise_std[1]


def dp_apvi(stats: Statistics, reward: np.ndarray | None, *, noise: CountNoise | None, rel: Any = None,
            delta_fail: float = 0.05, c1: float = math.sqrt(2.0), c2: float = 16.0, c_unvisited: float = 2.0,
            threshold_multiplier: float = 1.0, r_max: float = 1.0, block_states: int | None = None,
            keep_transitions: bool = False, horizon: int | None = None, cell_threshold: float = 0.0,
            fallback: str = "tie-break", baseline: Callable[[np.ndarray], np.ndarray] | None = None,
            safe: bool = False, support_count: float = 0.0) -> TabularFit:
    """Algorithm 1 on sparse statistics, streamed (module docstring): release (2) through ``rel``,
    consistency (3) with the ``n_sa`` bound, P̃ (5) with threshold ``threshold_multiplier·E_sa``,
    lines 3–9 with the penalty ``Γ = c1 sqrt(Var_P̃(V) ι/(ñ − E_sa)) + c2 S H Ē ι/ñ`` where ñ clears
    the threshold and ``E_sa``, ``c_unvisited·H`` elsewhere (Ē = :attr:`CountNoise.penalty_bound`;
    a threshold below ``E_sa`` — ``constants="practical"`` — keeps such pairs in ``P̃`` but their
    Bernstein bound is vacuous: they count as unvisited, also when ``Var_P̃(V) = 0``),
    ``Q̄_h = min{r + P̃V − Γ, H − h}^+``, greedy policy (lowest index on ties).

    ``reward``: the public ``(H,S,A)`` reward, or None for the logged rewards (released reward sums; ``r_max``
    their declared bound). ``noise=None`` (or an infinite budget) adds no noise, E = 0: APVI. ``block_states``
    (b) states per block of dense noisy rows (default ``BLOCK_CELLS // (A·S)`` in whole key groups,
    :func:`key_states`); the result does not depend on it. ``keep_transitions`` also returns the dense ``P̃``
    ``(H,S,A,S)``. Time ``O(H·S·A·S)`` with noise, else ``O(nnz + H·S·A)``; memory ``O(nnz + H·S·A + b·A·S)``.

    Routes for coverage-limited data (post-processing, never a change of the release):
    ``horizon`` — statistics of one step (``stats.horizon == 1``, counts pooled over the steps of
    time-homogeneous dynamics) planned over ``horizon`` steps: the one released step serves every
    ``h`` (its noise keyed by step 0: the same draws at every ``h``), the policy stays per step;
    ``cell_threshold`` k — released transition cells at most ``k·σ_sas`` are set to 0 after Eq. (3)
    (they are mostly noise: ``{·}^+`` of ~S pure-noise cells otherwise spreads mass over every next
    state); ``fallback="behaviour"`` — at ``(h, s)`` with no confident pair (``ñ_sa`` above ``E_sa``:
    all Q-values clipped to 0) play the behaviour-cloned action ``argmax_a ñ_sa`` of the released
    counts instead of the tie-break action 0 — more generally, ties of the greedy step (Q-values
    clipped at 0 by the pessimism tie) are broken by the released visit counts, not by the action's
    index. ``baseline`` (post-processing) maps the released visit counts before ``{·}^+`` to the estimated
    logging policy (``prior``: ``(H_stat, S, A)``, or ``(H, S, A)`` — e.g. a public logging policy — read
    at every planned step); with ``safe`` line 8 is Πb-SPIBB's step on it (:func:`_improve`).
    """
    H_stat, S, A = stats.shape
    H = H_stat if horizon is None else int(horizon)
    if H_stat not in (1, H):
        raise param_error("horizon", "dp_apvi", f"None or any horizon for pooled (one-step) statistics; the "
                          f"statistics have {H_stat} steps", horizon)
    # a block that cuts a key group reads the group twice: the stream keeps its blocks then, so a re-read
    # is the same release, never a fresh draw (one pooled step serving every h is read once: ``cache``)
    released = _release(stats.n_sa, stats.reward_sums if reward is None else None, noise, rel,
                        reread=block_states is not None)
    gap_bound, penalty, reward_bound, block, cell_floor = _noise_scales(
        None if released.stream is None else noise, S, A, block_states, cell_threshold)
    threshold = threshold_multiplier * gap_bound
    iota = math.log(H * S * A / delta_fail)
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    counts = np.zeros((H, S, A))
    P_kept = np.zeros((H, S * A, S)) if keep_transitions else None
    served = [h if H_stat == H else 0 for h in range(H)]     # the released step that serves each h
    prior, probs, supported, Q_up = _improvement_state(baseline, safe, released.raw_n_sa, (H, S, A), served)
    # a pooled step's noisy rows are released and post-processed once, then read at every h
    cache: dict[int, tuple[Any, np.ndarray]] | None = {} if H_stat != H and released.stream is not None else None
    for h in range(H - 1, -1, -1):
        v = V[h + 1]
        hs = h if H_stat == H else 0               # the released step that serves step h
        step = stats.step(hs)
        n, pv, pv2 = _step_moments(released, step, hs, v, block, gap_bound, cell_floor, threshold,
                                   None if P_kept is None else P_kept[h], cache)
        ok, bounded, safe_n, mean, gamma = _bernstein_penalty(n, pv, pv2, v, threshold, gap_bound, iota, c1,
                                                              c2 * S * H * penalty * iota)
        if reward is None:
            sums = np.asarray(released.reward_sums)[hs].ravel()
            r_h = np.where(ok, np.clip(sums / safe_n, 0.0, r_max), 0.0)
            gamma = gamma + reward_bound / (2.0 * safe_n)
        else:
            r_h = reward[h].ravel()
        gamma = np.where(bounded, gamma, c_unvisited * H)
        Q[h], Q_up[h] = (np.clip(r_h + mean + sign * gamma, 0.0, H - h).reshape(S, A) for sign in (-1.0, 1.0))
        counts[h] = n.reshape(S, A)
        supported[h] = (bounded & (n >= support_count)).reshape(S, A)
        V[h] = _improve(Q[h], Q_up[h], prior, supported[h], probs, h)
    policy = _policy(Q, released.n_sa[served], fallback) if probs is None else np.argmax(probs, axis=-1)
    return TabularFit(policy, V, Q, None if P_kept is None else P_kept.reshape(H, S, A, S), counts,
                      np.argmax(released.n_sa, axis=-1)[served], probs, prior, supported, released.n_sa[served], Q_up)


def dp_apvi_from_counts(n_sa: np.ndarray, n_sas: np.ndarray, reward: np.ndarray, *, noise: CountNoise | None,
                        rel: Any = None, delta_fail: float = 0.05, c1: float = math.sqrt(2.0), c2: float = 16.0,
                        c_unvisited: float = 2.0, threshold_multiplier: float = 1.0) -> TabularFit:
    """:func:`dp_apvi` on dense counts (small problems; ``transitions`` kept). Counts must be
    non-negative with ``n_sas.sum(-1) == n_sa`` (what one fixed-horizon dataset gives)."""
    owner = "dp_apvi_from_counts"
    n_sa = check_array(n_sa, "n_sa", owner=owner, ndim=3, low=0.0)
    H, S, A = n_sa.shape
    n_sas = check_array(n_sas, "n_sas", owner=owner, shape=(H, S, A, S), low=0.0)
    reward = check_array(reward, "reward", owner=owner, shape=(H, S, A), low=0.0, high=1.0)
    if not np.allclose(n_sas.sum(axis=-1), n_sa, rtol=0.0, atol=1e-9):
        raise param_error("n_sas", owner, "counts whose sum over s' equals n_sa", "inconsistent counts")
    if noise is not None and not isinstance(noise, CountNoise):
        raise param_error("noise", owner, "a CountNoise plan (privrl.offline.calibration.count_noise) or None",
                          type(noise).__name__)
    return dp_apvi(Statistics.from_dense(n_sas), reward, noise=noise, rel=rel, delta_fail=delta_fail, c1=c1, c2=c2,
                   c_unvisited=c_unvisited, threshold_multiplier=threshold_multiplier, keep_transitions=True)
