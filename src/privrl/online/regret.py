"""Exact regret of an online run on a known finite-horizon model.

The pseudo-regret of episode ``k`` is ``V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` (Azar et al. 2017; Zhou 2022,
Sec. 3): the value lost by the policy played, computed by dynamic programming on the true model — the
same for any draw of the episode, so regret curves carry no rollout noise. :class:`RegretTrace` keeps a
run's per-episode regret and its running sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.envs.finite import backward_induction, evaluate_policy

__all__ = ["optimal_values", "policy_values", "pseudo_regret", "RegretTrace"]


def optimal_values(P: Any, rewards: Any) -> np.ndarray:
    """``V_1^*`` ``(S,)`` of the finite-horizon model (``P`` ``(H, S, A, S)``, ``rewards`` ``(H, S, A)``)."""
    return backward_induction(P, rewards)[1][0]


def policy_values(P: np.ndarray, rewards: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``V_1^π`` ``(S,)`` of a deterministic ``(H, S)`` or stochastic ``(H, S, A)`` policy."""
    return evaluate_policy(P, rewards, policy)[0]


def pseudo_regret(v_star: np.ndarray, v_policy: np.ndarray, s1: int) -> float:
    """``V_1^*(s_1) − V_1^π(s_1)`` of one episode started in ``s1``."""
    return float(v_star[s1] - v_policy[s1])


class RegretTrace:
    """Per-episode pseudo-regret of one run of ``n_episodes`` (``regret`` ``(K,)``; ``cumulative()``)."""

    def __init__(self, n_episodes: int) -> None:
        self.regret = np.zeros(int(n_episodes))
        self.k = 0

    def add(self, value: float) -> None:
        self.regret[self.k] = value
        self.k += 1

    def cumulative(self) -> np.ndarray:
        """The cumulative regret after each episode."""
        return np.cumsum(self.regret[: self.k])
