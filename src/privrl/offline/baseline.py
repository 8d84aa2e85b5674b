"""Safe policy improvement with a baseline for APVI / DP-APVI (``baseline="logging"``).

SPIBB — Laroche, Trichelair & Tachet des Combes (ICML 2019), "Safe policy improvement with baseline
bootstrapping", Πb-SPIBB (their Eq. 9): at each ``(h, s)`` the policy keeps the baseline's
probability on every *bootstrapped* action (too little evidence: here, released visits that do not
clear the fit's own confidence bound and ``N∧`` visits) and moves only the baseline's mass on the
*supported* actions, to the supported action with the best pessimistic Q-value — here only when
that lower bound beats the baseline's upper bound (``Q̄ + 2Γ``: a margin the estimation error cannot
explain). Where nothing is supported the policy is the baseline.

**A public logging policy** (``behaviour_policy``: SPIBB's own setting, where the baseline is known —
a deployed decision rule, a written protocol): it *is* the baseline, no estimate and no privacy cost
(it is public input, :func:`check_behaviour_policy`). On a route with public state groups the fit
learns on the groups, but each state keeps its own baseline (:func:`state_spibb`): the group's
Q-values and support, the state's logging probabilities, and a state whose logging row disagrees
with its group's (total variation above :data:`AGREEMENT_TV`) keeps its baseline; the backward pass
plays the groups' mean baseline (:func:`group_policy`).

Otherwise the baseline is the logging policy, which the fit does not know: it is estimated from the released
visit counts ``ñ_h(s, a)`` (:func:`logging_estimate`) — post-processing of what the fit already
releases, so the privacy loss (the ledger) is unchanged. Per ``(h, s)`` counts are thin and noisy
(at ``n = 10⁴``, ε = 1 they are mostly noise), so the estimate is hierarchical: per ``(h, s)`` →
pooled over the steps → a public group of states (``baseline_groups``) → all states, read from the
coarsest down: each level keeps only its released cells above ``CELL_SIGMAS·σ`` (σ the noise std
of that level's sums) among the actions the level above kept, and is shrunk toward the level above
with a prior strength of ``PRIOR_VISITS + σ√A`` visits (a row's released total is trusted only where
it exceeds its own noise over the A cells). The cost of an error is asymmetric — a little
probability on an action the logging policy never takes (a noise cell above the threshold, or the
prior's share of an action used only elsewhere) can cost more value than any gain — hence the high
threshold and the support: a well-measured row spreads its prior only over the actions it kept,
and the rows below inherit that support.
"""

from __future__ import annotations

import math

import numpy as np

from privrl._validation import check_array, param_error
from privrl.errors import InvalidParameterError

__all__ = ["logging_estimate", "spibb_step", "one_hot", "reference_q", "CELL_SIGMAS", "PRIOR_VISITS", "MARGIN",
           "BASELINES", "check_behaviour_policy", "behaviour_probs", "behaviour_steps", "group_policy",
           "group_disagreement", "state_spibb", "AGREEMENT_TV", "AUTO_LOGGING_SHARE", "state_logging_estimate"]

#: ``baseline`` options: "none" (Algorithm 1's greedy policy) or "logging" (SPIBB on the estimated logging policy)
BASELINES = ("none", "logging")
#: a released visit cell enters the estimate only above ``CELL_SIGMAS`` times its level's noise std
CELL_SIGMAS = 3.0
#: prior strength (visits) of the shrinkage toward the coarser level, plus ``σ·√A`` for noisy counts
PRIOR_VISITS = 2.0
#: a state of a public group moves only where its baseline row is within this total variation of its
#: group's mean row (:func:`state_spibb`); chosen on the real-shaped grid, seeds 0–4 (docs/offline.md)
AGREEMENT_TV = 0.13
#: ``DPAPVI(route="auto")``'s share of the budget for the per-state logging counts when it plays a
#: grouped route (``logging_share=None``): off. On the real-shaped grid the rule of docs/offline.md chose
#: 0.03 on seeds 0–4, but on seeds 5–9 it dropped the median fraction of the best gain at n = 10⁵, ε = 1
#: to 0.46 (< 0.5) and at ε = 10 from 0.96 to 0.56, so the share is opt-in (docs/offline.md)
AUTO_LOGGING_SHARE = 0.0
#: the margin, in penalties Γ: probability moved away from an action is valued at ``Q̄ + MARGIN·Γ``
#: (2: the upper bound ``r + P̃V + Γ``; 1: the point estimate ``r + P̃V``), moved onto one at ``Q̄``
MARGIN = 1.0


def reference_q(q: np.ndarray, q_upper: np.ndarray, margin: float = MARGIN) -> np.ndarray:
    """``Q̄ + margin·Γ`` from the pessimistic ``Q̄`` and the optimistic ``Q⁺`` (``Q⁺ − Q̄ = 2Γ``
    where neither is clipped): what probability taken from an action is worth."""
    return q + 0.5 * margin * (q_upper - q)


def _level(counts: np.ndarray, sigma: np.ndarray | float, parent: np.ndarray, allowed: np.ndarray,
           narrow: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """One level of the hierarchy over the last axis: ``(probs, support)``. ``kept`` = the counts
    above ``CELL_SIGMAS·σ`` among the ``allowed`` actions (the parent's support); ``probs = (kept +
    m·prior)/(Σ kept + m)`` with ``m = PRIOR_VISITS + σ·√A`` and ``prior`` the parent's probabilities
    restricted to the row's support: with ``narrow`` (a coarse level), its kept cells where the row is
    *measured* (their total exceeds ``m``: the data outweigh the prior), else ``allowed``. The support
    is handed to the next level, so an action that a measured row above did not keep (e.g. one the
    logging policy never uses in a group, whose noise cells stay below kσ there) gets no probability
    below it, while a thin row (a state's, under noise) does not narrow it — one kept cell would
    make it a clone."""
    A = counts.shape[-1]
    sigma = np.asarray(sigma, dtype=float)
    keep = (counts > CELL_SIGMAS * sigma) & allowed
    kept = np.where(keep, counts, 0.0)
    m = PRIOR_VISITS + sigma * math.sqrt(A)
    measured = narrow & (kept.sum(axis=-1, keepdims=True) > m)      # the row's data outweigh the prior
    support = np.where(measured, keep, allowed)
    prior = np.where(support, parent, 0.0)
    total = prior.sum(axis=-1, keepdims=True)
    prior = np.where(total > 0, prior / np.where(total > 0, total, 1.0), np.where(support, 1.0, 0.0)
                     / np.maximum(support.sum(axis=-1, keepdims=True), 1))
    probs = (kept + m * prior) / (kept.sum(axis=-1, keepdims=True) + m)
    return probs, support


def logging_estimate(released: np.ndarray, sigma: float, groups: np.ndarray | None = None, *,
                     coarse_states: bool = False) -> np.ndarray:
    """The estimated logging policy ``(H', S, A)`` from released visit counts ``(H', S, A)`` with
    noise std ``sigma`` per cell (0: exact counts; the released values before ``{·}^+``, whose sums
    are unbiased — clipped noise would add ``≈0.4σ`` per cell to every sum), hierarchically (module
    docstring): all states (noise of a sum ``σ√(H'S)``), the groups of ``groups`` ``(S,)``
    (``σ√(H'·|group|)``), each state pooled over the ``H'`` steps (``σ√H'``), then each ``(h, s)``
    (``σ``). Rows sum to 1. A state's rows narrow the support only with ``coarse_states`` (the
    states are public groups: a row sums many visits); a thin row with one cell above 3σ would make
    a clone of it. Post-processing only."""
    n = np.asarray(released, dtype=float)
    Hs, S, A = n.shape
    per_state = n.sum(axis=0)                                               # (S, A)
    probs, support = _level(per_state.sum(axis=0), sigma * math.sqrt(Hs * S), np.full(A, 1.0 / A),
                            np.ones(A, dtype=bool))
    probs, support = np.broadcast_to(probs, (S, A)), np.broadcast_to(support, (S, A))
    if groups is not None:
        G = int(groups.max()) + 1
        sums = np.zeros((G, A))
        np.add.at(sums, groups, per_state)
        sizes = np.bincount(groups, minlength=G).astype(float)
        probs, support = _level(sums, sigma * np.sqrt(Hs * sizes)[:, None], probs[0], support[0])
        probs, support = probs[groups], support[groups]
    if Hs > 1:
        probs, support = _level(per_state, sigma * math.sqrt(Hs), probs, support, coarse_states)
    return _level(n, sigma, probs[None], support[None], coarse_states and Hs == 1)[0]


def spibb_step(q: np.ndarray, q_ref: np.ndarray, prior: np.ndarray, supported: np.ndarray) -> np.ndarray:
    """Πb-SPIBB's greedy step (Laroche et al. 2019, Eq. 9) on rows ``(…, A)``, with a margin: the
    baseline ``prior`` on unsupported actions; its mass on the supported ones moved to the supported
    action of largest pessimistic ``q`` when that is above the baseline-weighted mean of their
    ``q_ref`` (:func:`reference_q`: the move is not explained by the estimation error); otherwise
    the row is the baseline (e.g. every Q-value clipped to 0 teaches nothing)."""
    mass = np.where(supported, prior, 0.0).sum(axis=-1)
    masked = np.where(supported, q, -np.inf)
    best = masked.argmax(axis=-1)
    upper = np.where(supported, prior * q_ref, 0.0).sum(axis=-1) / np.where(mass > 0, mass, 1.0)
    move = (mass > 0) & (masked.max(axis=-1) > upper + 1e-12 * np.maximum(1.0, np.abs(upper)))
    out = np.where(move[..., None] & supported, 0.0, prior)
    np.put_along_axis(out, best[..., None], np.take_along_axis(out, best[..., None], axis=-1)
                      + np.where(move, mass, 0.0)[..., None], axis=-1)
    return out


def one_hot(policy: np.ndarray, n_actions: int) -> np.ndarray:
    """``(…, A)`` probabilities of a deterministic policy ``(…)``."""
    return (policy[..., None] == np.arange(n_actions)).astype(float)


def check_behaviour_policy(value: object, name: str, owner: str) -> np.ndarray:
    """A declared public logging policy: a float array ``(S, A)`` or ``(H, S, A)`` of non-negative
    rows summing to 1 (its S, A and H are checked against the data at fit time:
    :func:`behaviour_probs`)."""
    arr = check_array(value, name, owner=owner, low=0.0)
    if arr.ndim not in (2, 3) or arr.size == 0:
        raise param_error(name, owner, "an (n_states, n_actions) or (horizon, n_states, n_actions) array of "
                          "probabilities", f"an array of shape {arr.shape}")
    sums = arr.sum(axis=-1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=1e-8):
        worst = float(sums.flat[np.argmax(np.abs(sums - 1.0))])
        raise param_error(name, owner, "rows of probabilities summing to 1", f"a row summing to {worst:.6g}")
    return arr


def behaviour_probs(policy: np.ndarray, n_states: int, n_actions: int, owner: str) -> np.ndarray:
    """The public logging policy (:func:`check_behaviour_policy`'s array) checked against the data's
    states and actions before the data are read; :func:`behaviour_steps` spreads the result over the
    horizon once it is known."""
    if policy.shape[-2:] != (n_states, n_actions):
        raise _behaviour_shape_error(policy, "H", n_states, n_actions, owner)
    return policy


def behaviour_steps(policy: np.ndarray, horizon: int, owner: str) -> np.ndarray:
    """:func:`behaviour_probs`'s policy as ``(H, S, A)`` probabilities: an ``(S, A)`` one at every step,
    an ``(H, S, A)`` one only on the data's horizon."""
    S, A = policy.shape[-2:]
    if policy.ndim == 3 and policy.shape[0] != horizon:
        raise _behaviour_shape_error(policy, horizon, S, A, owner)
    return np.array(np.broadcast_to(policy, (horizon, S, A)), dtype=float)


def _behaviour_shape_error(policy: np.ndarray, horizon: int | str, S: int, A: int, owner: str
                           ) -> InvalidParameterError:
    """The error for a logging policy whose shape is not the data's (``horizon`` "H" before it is known)."""
    return param_error("behaviour_policy", owner, f"an array of shape ({S}, {A}) or ({horizon}, {S}, {A}) "
                       "(the data's states, actions and horizon)", f"shape {policy.shape}")


def group_policy(probs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``(H, G, A)``: each public group's unweighted mean of its states' rows ``probs`` ``(H, S, A)``
    (the group's baseline in the backward pass on groups; post-processing of public inputs)."""
    G = int(groups.max()) + 1
    sums = np.zeros((G, probs.shape[0], probs.shape[-1]))
    np.add.at(sums, groups, np.swapaxes(probs, 0, 1))
    sizes = np.bincount(groups, minlength=G).astype(float)
    return np.swapaxes(sums / np.maximum(sizes, 1.0)[:, None, None], 0, 1)


def group_disagreement(prior: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``(H, S, 1)``: the total variation between each state's baseline row and its group's mean row."""
    return 0.5 * np.abs(prior - group_policy(prior, groups)[:, groups]).sum(axis=-1, keepdims=True)


def state_spibb(q: np.ndarray, q_upper: np.ndarray, supported: np.ndarray, prior: np.ndarray, groups: np.ndarray,
                margin: float = MARGIN, rows: np.ndarray | None = None) -> np.ndarray:
    """Πb-SPIBB's step (:func:`spibb_step`) per state of a fit on public groups: the group's pessimistic
    ``q``, its upper ``q_upper`` and ``supported`` (each ``(H, G, A)``) read at the state's group, the
    state's own baseline ``prior`` ``(H, S, A)``: the state keeps its logging probability on every
    unsupported action and moves its supported mass only where the group's lower bound beats the
    state's baseline — and only where the state's baseline row is within total variation
    :data:`AGREEMENT_TV` of its group's mean row (:func:`group_disagreement`): a group's Q-value of
    an action averages over the states that log it, so where the states of a group log different
    mixes the group's counts compare actions on different states (confounded) and the state keeps its
    baseline (``rows``: the rows compared, default ``prior``). Post-processing of the fit and the baseline."""
    agree = group_disagreement(prior if rows is None else rows, groups) <= AGREEMENT_TV
    return spibb_step(q[:, groups], reference_q(q, q_upper, margin)[:, groups], prior, supported[:, groups] & agree)


def state_logging_estimate(group_prior: np.ndarray, released: np.ndarray, sigma: float, groups: np.ndarray,
                           narrow: bool = True) -> np.ndarray:
    """The estimated logging policy per *state* ``(H, S, A)`` of a fit on public groups, from the
    released per-state visit counts pooled over the steps ``released`` ``(S, A)`` (before ``{·}^+``;
    noise std ``sigma`` per cell; ``DPAPVI(logging_share=...)``): the finest level of the hierarchy
    (module docstring), shrunk toward the state's group's estimate ``group_prior`` ``(H, G, A)``
    (pooled over the steps) with the prior strength ``PRIOR_VISITS + σ√A``, its support narrowed
    to the actions the group's estimate uses, and to the state's own kept cells where the row is
    measured (``narrow``; without, the support stays the group's: the rows the disagreement test of
    :func:`state_spibb` reads, which the dropped thin cells would bias). Post-processing of released counts."""
    parent = group_prior.mean(axis=0)[groups]
    probs = _level(np.asarray(released, dtype=float), sigma, parent, parent > 0, narrow=narrow)[0]
    return np.array(np.broadcast_to(probs, (group_prior.shape[0], *probs.shape)))
