"""APVI and DP-APVI (Qiao & Wang 2023, Section 3, Algorithm 1) — tabular offline RL.

Every step after :func:`release_counts` reads only the released counts, so it is post-processing.
The kernels are pure functions of sufficient statistics (per-step counts) and a releaser:

* :func:`count_statistics` — ``n_{s,a}`` ``(H,S,A)`` and ``n_{s,a,s'}`` ``(H,S,A,S)`` per step h;
* :func:`release_counts` — Eq. (2) (Gaussian) or the Laplace variant, then ``{·}^+``, drawn through
  a :class:`~privrl.privacy.release.Releaser` with the scales of a
  :class:`~privrl.offline.calibration.CountNoise` plan;
* :func:`consistent_counts` — Eq. (3)/(4) solved exactly in closed form;
* :func:`private_transitions` — Eq. (5);
* :func:`pessimistic_value_iteration` — lines 3–9 of Algorithm 1 (Bernstein penalty, truncation,
  greedy policy);
* :func:`dp_apvi_from_counts` — the whole algorithm on counts (what audits call 10⁴ times).

Privacy unit: one trajectory, replace-one neighbours, dataset size public.

Sensitivities (Lemma C.1). Replacing one trajectory changes, at each step h, one visit
``(s_h, a_h)`` (and one ``(s_h, a_h, s_{h+1})``) into another: at most two entries of each family
move by ±1 per step, so over the ``H`` steps ℓ2 ``sqrt(2H)`` and ℓ1 ``2H`` for each family. The noise
scales per calibration are in :mod:`privrl.offline.calibration` (tight: exact μ split (1, S) across the
families; sound/paper: σ² = 2H/ρ per entry, or b = 4H/ε).

Utility knobs (privacy never depends on them): ``c1, c2, c_unvisited, threshold_multiplier`` with
presets ``constants="theory"`` (C1 = √2, C2 = 16, C' = 2, threshold E) and ``"practical"``
(:data:`TABULAR_PRESETS`; how they were chosen: ``docs/offline.md``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from privrl._validation import check_array, param_error
from privrl.offline._common import (
    greedy,
    transition_statistics,
)
from privrl.offline.calibration import (
    CountNoise,
)

__all__ = ["TabularFit", "count_statistics", "release_counts", "consistent_counts",
           "private_transitions", "pessimistic_value_iteration", "dp_apvi_from_counts", "TABULAR_PRESETS"]

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


# --------------------------------------------------------------------------- statistics and noise
def count_statistics(observations: np.ndarray, actions: np.ndarray, next_observations: np.ndarray,
                     n_states: int, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-step counts from ``(K, H)`` index arrays: ``n_sa`` ``(H,S,A)``, ``n_sas`` ``(H,S,A,S)``."""
    stats = transition_statistics({"observations": observations, "actions": actions,
                                   "next_observations": next_observations,
                                   "rewards": np.zeros(np.shape(actions))}, n_states, n_actions)
    return stats.n_sa, stats.counts  # type: ignore[union-attr]


def release_counts(n_sa: np.ndarray, n_sas: np.ndarray, noise: CountNoise | None, rel: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (2): ``n' = {n + noise}^+`` for every ``(h, s, a[, s'])``, independent noise per entry,
    drawn through ``rel`` (a :class:`~privrl.privacy.release.Releaser`, which records the two
    events) with the scales of ``noise``. ``{·}^+`` is post-processing (spec A-T1). ``noise=None``
    or an infinite budget releases the counts unchanged (no event)."""
    if noise is None or not noise.is_private:
        return np.array(n_sa, dtype=float), np.array(n_sas, dtype=float)
    out = []
    for value, sens, scale in zip((n_sa, n_sas), noise.sensitivity, noise.scale):
        if noise.mechanism == "gaussian":
            out.append(rel.gaussian(value, sensitivity=sens, std=scale))
        else:
            out.append(rel.laplace(value, sensitivity=sens, scale=scale))
    return np.maximum(out[0], 0.0), np.maximum(out[1], 0.0)


# --------------------------------------------------------------------------- post-processing
def consistent_counts(noisy_sa: np.ndarray, noisy_sas: np.ndarray, bound: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3): for every ``(h,s,a)``, ``argmin_x max_s' |x_s' − n'_{sas'}|`` s.t.
    ``|Σ x − n'_{sa}| <= bound/2`` and ``x >= 0``, solved in closed form (spec §2.5).

    With ``T = Σ n'_{sas'}``, ``lo/hi = n'_{sa} ∓ bound/2``: if ``lo <= T <= hi`` keep ``n'``;
    if ``T < lo`` raise every entry by ``(lo − T)/S``; if ``T > hi`` lower by the water level
    ``t`` with ``Σ max(0, n' − t) = hi``. Needs ``n' >= 0`` (always feasible then).
    Returns ``(ñ_sa, ñ_sas)`` with ``ñ_sa = Σ_s' ñ_sas'``.
    """
    S = noisy_sas.shape[-1]
    total = noisy_sas.sum(axis=-1)
    lo = noisy_sa - bound / 2.0
    hi = noisy_sa + bound / 2.0
    out = noisy_sas.copy()
    low_mask = total < lo
    out[low_mask] += ((lo - total)[low_mask] / S)[:, None]
    high_mask = total > hi
    if np.any(high_mask):
        rows = noisy_sas[high_mask]
        u = -np.sort(-rows, axis=1)
        css = np.cumsum(u, axis=1)
        levels = (css - hi[high_mask][:, None]) / np.arange(1, S + 1)
        k = np.maximum((u > levels).sum(axis=1), 1)
        t = levels[np.arange(len(rows)), k - 1]
        out[high_mask] = np.maximum(rows - t[:, None], 0.0)
    return out.sum(axis=-1), out


def private_transitions(n_sa: np.ndarray, n_sas: np.ndarray, threshold: float) -> np.ndarray:
    """Eq. (5): ``ñ_{sas'}/ñ_{sa}`` where ``ñ_{sa} > threshold``, the uniform ``1/S`` otherwise."""
    S = n_sas.shape[-1]
    ok = n_sa > threshold
    safe = np.where(ok, n_sa, 1.0)
    return np.where(ok[..., None], n_sas / safe[..., None], 1.0 / S)


def pessimistic_value_iteration(P: np.ndarray, reward: np.ndarray, counts: np.ndarray, *, gap_bound: float,
                                penalty_bound: float, iota: float, c1: float, c2: float, c_unvisited: float,
                                threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lines 3–9 of Algorithm 1, vectorised over ``(s, a)``.

    ``Γ = c1 sqrt(Var_P(V) ι / (n − E_sa)) + c2 S H Ē ι / n`` where ``n > threshold``, ``c_unvisited·H``
    elsewhere (``gap_bound`` = E_sa, ``penalty_bound`` = Ē, both E in the paper);
    ``Q̄_h = min{r + PV − Γ, H − h}^+`` (0-indexed h); greedy policy. Returns
    ``(policy (H,S), V (H+1,S), Q̄ (H,S,A))``.
    """
    H, S, A, _ = P.shape
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    ok = counts > threshold
    safe_n = np.where(ok, counts, 1.0)
    safe_gap = np.where(ok, np.maximum(counts - gap_bound, 1e-300), 1.0)
    lower = c2 * S * H * penalty_bound * iota / safe_n
    for h in range(H - 1, -1, -1):
        pv = P[h] @ V[h + 1]
        var = np.maximum(P[h] @ (V[h + 1] ** 2) - pv**2, 0.0)
        gamma = np.where(ok[h], c1 * np.sqrt(var * iota / safe_gap[h]) + lower[h], c_unvisited * H)
        Q[h] = np.clip(reward[h] + pv - gamma, 0.0, H - h)
        _, V[h] = greedy(Q[h])
    return np.argmax(Q, axis=-1), V, Q


class TabularFit(NamedTuple):
    policy: np.ndarray
    values: np.ndarray
    q_values: np.ndarray
    transitions: np.ndarray
    counts: np.ndarray


def dp_apvi_from_counts(n_sa: np.ndarray, n_sas: np.ndarray, reward: np.ndarray, *, noise: CountNoise | None,
                        rel: Any = None, delta_fail: float = 0.05, c1: float = math.sqrt(2.0), c2: float = 16.0,
                        c_unvisited: float = 2.0, threshold_multiplier: float = 1.0) -> TabularFit:
    """Algorithm 1 on sufficient statistics: release (2) through ``rel``, consistency (3) with the
    ``n_sa`` bound, P̃ (5) with threshold ``threshold_multiplier·E_sa``, lines 3–9 with the penalty
    bound Ē (:attr:`CountNoise.penalty_bound`).

    ``noise=None`` (or an infinite budget) adds no noise, E = 0, and the result is APVI. Counts must
    be non-negative with ``n_sas.sum(-1) == n_sa`` (what one fixed-horizon dataset gives).
    """
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
    noisy_sa, noisy_sas = release_counts(n_sa, n_sas, noise, rel)
    gap_bound = penalty = 0.0
    if noise is not None and noise.is_private:
        gap_bound, penalty = noise.bound[0], noise.penalty_bound
    cnt_sa, cnt_sas = consistent_counts(noisy_sa, noisy_sas, gap_bound)
    threshold = threshold_multiplier * gap_bound
    P = private_transitions(cnt_sa, cnt_sas, threshold)
    iota = math.log(H * S * A / delta_fail)
    policy, V, Q = pessimistic_value_iteration(P, reward, cnt_sa, gap_bound=gap_bound, penalty_bound=penalty,
                                               iota=iota, c1=c1, c2=c2, c_unvisited=c_unvisited,
                                               threshold=threshold)
    return TabularFit(policy, V, Q, P, cnt_sa)
