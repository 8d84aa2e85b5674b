"""RiverSwim (Strehl & Littman 2008), the small exploration benchmark, as an episodic
:class:`~privrl.envs.tabular.TabularMDP`.

States ``0..N−1`` along a river; action 0 swims left (downstream), action 1 right (upstream).
Left always succeeds (``s → max(s − 1, 0)``); right moves up with probability 0.35, stays with
0.6 and drifts down with 0.05 in the middle states, moves up with 0.6 (stays with 0.4) from the
first state and stays with 0.6 (drifts down with 0.4) at the last. Rewards, in [0, 1] as Osband et al. scale them:
0.005 for swimming left in state 0 (the small, easy reward) and 1 for swimming right in state
N−1 (the large one behind the current). The parameters are those of Osband, Russo & Van Roy (2013);
the episodic form (horizon ``H``, start in state 0) is ours.

``tabular_as_mixture(river_swim(...))`` casts it as a linear mixture MDP with one-hot features
(Zhou 2022's tabular special case, d1 = S²A, d2 = SA) for the online learners.
"""

from __future__ import annotations

import numpy as np

from privrl._validation import check_scalar
from privrl.envs.tabular import TabularMDP

__all__ = ["river_swim", "SMALL_REWARD", "LARGE_REWARD"]

#: the rewards as scaled by Osband, Russo & Van Roy (2013): 5/1000 and 1
SMALL_REWARD = 0.005
LARGE_REWARD = 1.0


def river_swim(n_states: int = 6, horizon: int = 20) -> TabularMDP:
    """RiverSwim with ``n_states`` states and episodes of ``horizon`` steps from state 0."""
    S = check_scalar(n_states, "n_states", owner="river_swim", kind=int, low=2)
    H = check_scalar(horizon, "horizon", owner="river_swim", kind=int, low=1)
    P = np.zeros((S, 2, S))
    r = np.zeros((S, 2))
    for s in range(S):
        P[s, 0, max(s - 1, 0)] = 1.0
    P[0, 1, 0], P[0, 1, 1] = 0.4, 0.6
    for s in range(1, S - 1):
        P[s, 1, s + 1], P[s, 1, s], P[s, 1, s - 1] = 0.35, 0.6, 0.05
    P[S - 1, 1, S - 1], P[S - 1, 1, S - 2] = 0.6, 0.4
    r[0, 0] = SMALL_REWARD
    r[S - 1, 1] = LARGE_REWARD
    initial = np.zeros(S)
    initial[0] = 1.0
    return TabularMDP(P, r, horizon=H, initial=initial, name=f"RiverSwim(S={S}, H={H})")
