"""Exact dynamic programming on a finite episodic model, vectorised over states and actions.

Used for the exact pseudo-regret ``Σ_k V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` (Zhou 2022, Sec 2.1) every
episode, so it must be cheap: one matrix–vector product per step.
"""

from __future__ import annotations

import numpy as np

__all__ = ["optimal_q_values", "evaluate_policy", "evaluate_policies_at"]


def optimal_q_values(P: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Q*, V*)`` with shapes ``(H, S, A)`` and ``(H+1, S)`` (last row 0) by backward induction."""
    H, S, A, _ = P.shape
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    for h in range(H - 1, -1, -1):
        Q[h] = r[h] + P[h] @ V[h + 1]
        V[h] = Q[h].max(axis=1)
    return Q, V


def evaluate_policy(P: np.ndarray, r: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``V^π`` ``(H+1, S)`` of a deterministic ``(H, S)`` int or stochastic ``(H, S, A)`` policy."""
    H, S, A, _ = P.shape
    V = np.zeros((H + 1, S))
    states = np.arange(S)
    for h in range(H - 1, -1, -1):
        if policy.ndim == 2:
            a = policy[h]
            V[h] = r[h, states, a] + P[h, states, a] @ V[h + 1]
        else:
            V[h] = np.einsum("sa,sa->s", policy[h], r[h] + P[h] @ V[h + 1])
    return V


def evaluate_policies_at(P: np.ndarray, r: np.ndarray, policies: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``V_1^{π_b}(s_b)`` for a batch of policies ``(B, H, S)`` int or ``(B, H, S, A)`` float,
    vectorised over the batch (the regret of many episodes in one pass)."""
    H, S, A, _ = P.shape
    B = policies.shape[0]
    V = np.zeros((B, S))
    states = np.arange(S)
    for h in range(H - 1, -1, -1):
        if policies.ndim == 3:
            a = policies[:, h]                                    # (B, S)
            V = r[h][states, a] + np.einsum("bst,bt->bs", P[h][states, a], V)
        else:
            V = np.einsum("bsa,bsa->bs", policies[:, h], r[h][None] + np.einsum("sat,bt->bsa", P[h], V))
    return V[np.arange(B), starts]
