"""RiverSwim (``privrl.envs.river_swim``) and its linear-mixture form on the kernel's support."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.envs.linear_mixture import tabular_as_mixture
from privrl.envs.river_swim import LARGE_REWARD, SMALL_REWARD, river_swim
from privrl.errors import InvalidParameterError


def test_river_swim_kernel_and_rewards():
    mdp = river_swim(6, horizon=20)
    P = np.asarray(mdp.P)[0]
    assert np.allclose(P.sum(-1), 1.0)
    assert P[3, 0, 2] == 1.0 and P[0, 0, 0] == 1.0                      # left always succeeds
    assert (P[3, 1, 4], P[3, 1, 3], P[3, 1, 2]) == (0.35, 0.6, 0.05)  # against the current
    r = np.asarray(mdp.r)[0]
    assert r[0, 0] == SMALL_REWARD and r[5, 1] == LARGE_REWARD and r.sum() == SMALL_REWARD + LARGE_REWARD


@pytest.mark.parametrize("support", ["all", "reachable"])
def test_river_swim_as_a_mixture_keeps_the_kernel(support):
    mdp = river_swim(6, horizon=4)
    mix = tabular_as_mixture(mdp, support=support)
    assert mix.d1 == (22 if support == "reachable" else 72)             # 6 + 16 nonzero (s, a, s') of 72
    assert np.allclose(mix.transitions(), np.asarray(mdp.P))
    assert np.isclose(mix.optimal_value(), mdp.optimal_value()) if hasattr(mix, "optimal_value") else True


def test_tabular_as_mixture_rejects_an_unknown_support():
    with pytest.raises(InvalidParameterError, match="support"):
        tabular_as_mixture(river_swim(3, horizon=2), support="some")
