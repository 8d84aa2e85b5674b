"""Neighbouring-input generators."""

import numpy as np
import pytest

from privrl.audit.neighbors import (
    rarest_episode,
    rarest_pairs,
    replace_one_trajectory,
    replace_one_user,
    reward_neighbour,
)
from privrl.errors import InvalidParameterError


def test_rarest_pairs_and_episode():
    counts = np.ones((2, 3, 2))
    counts[0, 2, 1] = 0
    counts[1, 1, 0] = 0
    s, a = rarest_pairs(counts)
    assert s.tolist() == [2, 1] and a.tolist() == [1, 0]
    ep = rarest_episode(counts, reward=1.0)
    assert ep["observations"].tolist() == [2, 1] and ep["actions"].tolist() == [1, 0]
    assert ep["next_observations"].tolist() == [1, 1] and ep["rewards"].tolist() == [1.0, 1.0]


def _dataset():
    data = pytest.importorskip("privrl.data")
    eps = []
    for k in range(6):  # pairs (0,0) x4, (1,1) x2; rewards grow with k
        s = 0 if k < 4 else 1
        eps.append({"observations": [s, s, s], "actions": [s, s, s], "rewards": [k / 10] * 3,
                    "next_observations": [s, s, s]})
    return data.TrajectoryDataset.from_episodes(eps, n_states=3, n_actions=2, horizon=3)


@pytest.mark.parametrize("strategy", ["rarest", "max_return"])
def test_replace_one_trajectory_worst_case(strategy):
    ds = _dataset()
    nb, index, rep = replace_one_trajectory(ds, strategy=strategy)
    assert nb.n_episodes == ds.n_episodes and nb.n_transitions == ds.n_transitions
    # the replacement visits a never-visited pair at every step with the maximal reward
    assert np.asarray(rep.observations).tolist() == [0, 0, 0] and np.asarray(rep.actions).tolist() == [1, 1, 1]
    assert np.all(np.asarray(rep.rewards) == 1.0)
    # rarest: highest-return episode among those differing everywhere; max_return: lowest
    assert index == (5 if strategy == "rarest" else 0)
    def key(d, i):
        e = d.episode(i)
        return np.concatenate([np.asarray(e.observations), np.asarray(e.actions), np.asarray(e.rewards)])
    changed = [i for i in range(ds.n_episodes) if not np.array_equal(key(nb, i), key(ds, i))]
    assert changed == [index]


def test_replace_one_trajectory_random_and_bad_strategy():
    ds = _dataset()
    nb, index, rep = replace_one_trajectory(ds, strategy="random", rng=3)
    assert nb.n_episodes == ds.n_episodes and 0 <= index < ds.n_episodes
    assert np.all((np.asarray(rep.rewards) >= 0) & (np.asarray(rep.rewards) <= 1))
    with pytest.raises(InvalidParameterError, match="strategy"):
        replace_one_trajectory(ds, strategy="nope")


def test_replace_one_user():
    r = np.zeros((4, 2))
    out = replace_one_user(r, 2, np.array([1.0, -1.0]))
    assert out[2].tolist() == [1.0, -1.0] and np.all(np.delete(out, 2, axis=0) == 0) and np.all(r == 0)
    with pytest.raises(InvalidParameterError, match="user"):
        replace_one_user(r, 4, np.zeros(2))
    with pytest.raises(InvalidParameterError, match="replacement"):
        replace_one_user(r, 0, np.zeros(3))


@pytest.mark.parametrize("kind", ["shift", "bump", "sign"])
def test_reward_neighbour_within_sup_norm(kind):
    r = lambda x: 0.5 - np.abs(np.asarray(x) - 0.5)  # noqa: E731  (CenterWalk's reward)
    r2 = reward_neighbour(r, kind=kind, radius=1.0)
    x = np.linspace(0, 1, 1001)
    diff = np.abs(r2(x) - r(x))
    assert diff.max() <= 1.0 + 1e-12 and diff.max() >= 1.0 - 1e-12
    with pytest.raises(InvalidParameterError, match="radius"):
        reward_neighbour(r, radius=0.0)
