"""TrajectoryDataset: validation (errors name the field and the problem) and episode operations."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.data import TrajectoryDataset
from privrl.errors import InvalidDataError, InvalidParameterError


def arrays(lengths=(3, 2, 4), S=5, A=3, seed=0):
    g = np.random.default_rng(seed)
    n = sum(lengths)
    return dict(
        observations=g.integers(0, S, n),
        actions=g.integers(0, A, n),
        rewards=g.random(n),
        next_observations=g.integers(0, S, n),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
    )


def make(lengths=(3, 2, 4), S=5, A=3, seed=0, **kwargs):
    a = arrays(lengths, S, A, seed)
    a.update({k: kwargs.pop(k) for k in list(kwargs) if k in a})
    kwargs.setdefault("n_states", S)
    kwargs.setdefault("n_actions", A)
    return TrajectoryDataset(**a, **kwargs)


# ----------------------------------------------------------------------------- valid data
def test_properties():
    d = make(lengths=(3, 2, 4))
    assert len(d) == d.n_transitions == 9 and d.n_episodes == 3 and d.is_tabular
    assert d.episode_lengths.tolist() == [3, 2, 4]
    assert d.steps.tolist() == [0, 1, 2, 0, 1, 0, 1, 2, 3]
    assert d.episode_index.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert d.terminals is None and d.horizon is None and d.reward_bounds == (0.0, 1.0)
    assert "3 episodes, 9 transitions, tabular" in repr(d)


def test_arrays_are_read_only_copies():
    a = arrays()
    d = TrajectoryDataset(**a, n_states=5, n_actions=3)
    a["rewards"][0] = 0.123456
    assert d.rewards[0] != 0.123456
    with pytest.raises(ValueError):
        d.rewards[0] = 0.5
    for name in ("reward_bounds", "n_states", "n_actions", "horizon", "rewards"):
        with pytest.raises(AttributeError):
            setattr(d, name, None)


def test_feature_observations():
    g = np.random.default_rng(1)
    d = TrajectoryDataset(g.normal(size=(6, 2)), [0, 1, 0, 1, 0, 1], np.zeros(6), g.normal(size=(6, 2)), [0, 3, 6],
                          horizon=3)
    assert not d.is_tabular and d.observations.dtype == float and "features k=2" in repr(d)
    assert d.as_padded()["observations"].shape == (2, 3, 2)


def test_clip_rewards_only_on_request():
    with pytest.raises(InvalidDataError, match=r"'rewards' field.*reward_bounds \[0.0, 1.0\]. Got rewards below "
                       r"the lower bound and above the upper bound instead.*clip_rewards=True") as info:
        make(lengths=(3,), rewards=[0.2, 1.5, -0.1])
    # the message never shows a private value or where it is
    assert "1.5" not in str(info.value) and "-0.1" not in str(info.value) and "transition" not in str(info.value)
    with pytest.raises(InvalidDataError, match="Got rewards above the upper bound instead"):
        make(lengths=(3,), rewards=[0.2, 1.25, 0.1])
    d = make(lengths=(3,), rewards=[0.2, 1.5, -0.1], clip_rewards=True)
    assert d.rewards.tolist() == [0.2, 1.0, 0.0]
    d = make(lengths=(3,), rewards=[0.2, 1.5, -0.1], reward_bounds=(-1, 2))
    assert d.rewards.tolist() == [0.2, 1.5, -0.1]
    d = make(lengths=(3,), rewards=[0.2, 15.0, -0.1], reward_bounds=None)
    assert d.reward_bounds is None


def test_terminals_accept_bool_and_zero_one_ints():
    d = make(lengths=(2, 2), terminals=np.array([0, 1, 0, 0]))
    assert d.terminals.dtype == bool and d.terminals.tolist() == [False, True, False, False]


# ----------------------------------------------------------------------------- invalid data
@pytest.mark.parametrize(
    "override, match",
    [
        ({"observations": np.zeros(8, dtype=int)}, r"'next_observations' field.*shape of observations \(8,\)"),
        ({"actions": np.zeros(8, dtype=int)}, r"'actions' field.*shape \(9,\)"),
        ({"rewards": np.zeros((9, 1))}, r"'rewards' field.*shape \(9,\)"),
        ({"observations": np.zeros((9, 2, 2))}, r"'observations' field.*\(n,\).*\(n, k\)"),
        ({"rewards": np.r_[np.zeros(8), np.nan]}, r"'rewards' field.*finite.*NaN/inf.*transition 8"),
        ({"rewards": np.r_[np.inf, np.zeros(8)]}, r"'rewards' field.*finite"),
        ({"rewards": np.array(["a"] * 9)}, r"'rewards' field.*numeric dtype"),
        ({"observations": np.zeros(9)}, r"'observations' field.*integer dtype.*float64"),
        ({"next_observations": np.zeros(9)}, r"'next_observations' field.*integer dtype"),
        ({"actions": np.zeros(9)}, r"'actions' field.*integer dtype"),
        ({"actions": np.full(9, 3)}, r"'actions' field.*actions in \[0, 2\]. Got 3 at transition 0"),
        ({"actions": np.r_[np.zeros(8, int), -1]}, r"'actions' field.*Got -1 at transition 8"),
        ({"observations": np.full(9, 5)}, r"'observations' field.*states in \[0, 4\]"),
        ({"next_observations": np.full(9, 7)}, r"'next_observations' field.*states in \[0, 4\]"),
        ({"episode_starts": [0, 3, 3, 9]}, r"'episode_starts' field.*strictly increasing.*3 followed by 3"),
        ({"episode_starts": [1, 3, 9]}, r"'episode_starts' field.*start at 0 and end at n=9"),
        ({"episode_starts": [0, 3, 8]}, r"'episode_starts' field.*end at n=9"),
        ({"episode_starts": [0]}, r"'episode_starts' field.*\(E\+1,\) with E >= 1"),
        ({"episode_starts": [0.0, 9.0]}, r"'episode_starts' field.*integer dtype"),
        ({"horizon": 3}, r"'episode_starts' field.*horizon=3.*episode 1 with 2 steps"),
        ({"terminals": np.ones(9, dtype=bool)}, r"'terminals' field.*last transition.*transition 0"),
        ({"terminals": np.zeros(8, dtype=bool)}, r"'terminals' field.*shape \(9,\)"),
        ({"terminals": np.full(9, 0.5)}, r"'terminals' field.*bool"),
    ],
)
def test_bad_data_names_field_and_problem(override, match):
    a = arrays()
    a.update(override)
    with pytest.raises(InvalidDataError, match=match):
        TrajectoryDataset(**{k: a.pop(k) for k in list(a) if k in arrays()}, **a, n_states=5, n_actions=3)


def test_non_finite_features():
    obs = np.zeros((3, 2))
    obs[1, 0] = np.nan
    with pytest.raises(InvalidDataError, match=r"'observations' field.*finite.*transition 1"):
        TrajectoryDataset(obs, [0, 0, 0], [0, 0, 0], np.zeros((3, 2)), [0, 3])
    with pytest.raises(InvalidDataError, match="'observations' field.*numeric dtype"):
        TrajectoryDataset(np.full((3, 2), "x"), [0, 0, 0], [0, 0, 0], np.zeros((3, 2)), [0, 3])
    with pytest.raises(InvalidParameterError, match="'n_states' parameter.*None for feature"):
        TrajectoryDataset(np.zeros((3, 2)), [0, 0, 0], [0, 0, 0], np.zeros((3, 2)), [0, 3], n_states=4)


def test_empty_dataset():
    with pytest.raises(InvalidDataError, match="empty"):
        TrajectoryDataset(np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0), np.zeros(0, dtype=int), [0])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_states": 0}, "n_states"),
        ({"n_actions": 1.5}, "n_actions"),
        ({"horizon": -1}, "horizon"),
        ({"clip_rewards": "yes"}, "clip_rewards"),
        ({"reward_bounds": (1.0, 0.0)}, "reward_bounds"),
        ({"reward_bounds": (0.0, np.inf)}, "reward_bounds"),
        ({"reward_bounds": 3}, "reward_bounds"),
        ({"reward_bounds": None, "clip_rewards": True}, "reward_bounds"),
        ({"metadata": [1, 2]}, "metadata"),
        ({"metadata": {"f": object()}}, "metadata"),
    ],
)
def test_bad_parameters(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of TrajectoryDataset"):
        make(**kwargs)


# ----------------------------------------------------------------------------- operations
def test_episode_and_subset():
    d = make(lengths=(3, 2, 4), terminals=np.array([0, 0, 1, 0, 0, 0, 0, 0, 1], dtype=bool), metadata={"x": 1})
    e = d.episode(1)
    assert e.n_episodes == 1 and e.observations.tolist() == d.observations[3:5].tolist()
    assert e.metadata == {"x": 1} and e.n_states == 5
    s = d.subset([2, 0, 2])
    assert s.episode_lengths.tolist() == [4, 3, 4]
    np.testing.assert_array_equal(s.rewards, np.r_[d.rewards[5:9], d.rewards[0:3], d.rewards[5:9]])
    assert s.terminals.tolist() == [0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    for bad in (3, -1, True, 1.0):
        with pytest.raises(InvalidParameterError, match="'i' parameter of TrajectoryDataset"):
            d.episode(bad)
    for bad in ([3], [], [0.5], [[0]]):
        with pytest.raises(InvalidParameterError, match="'indices' parameter of TrajectoryDataset.subset"):
            d.subset(bad)


def test_replace_episode_builds_the_neighbour():
    d = make(lengths=(3, 2, 4))
    other = make(lengths=(5,), seed=9)
    for i in range(3):
        n = d.replace_episode(i, other)
        lengths = [3, 2, 4]
        lengths[i] = 5
        assert n.episode_lengths.tolist() == lengths
        np.testing.assert_array_equal(n.episode(i).actions, other.actions)
        for j in set(range(3)) - {i}:
            np.testing.assert_array_equal(n.episode(j).rewards, d.episode(j).rewards)
    assert d.episode_lengths.tolist() == [3, 2, 4]  # unchanged
    with pytest.raises(InvalidParameterError, match="'other'.*one-episode"):
        d.replace_episode(0, d)
    with pytest.raises(InvalidDataError, match="'n_actions'.*must agree"):
        d.replace_episode(0, make(lengths=(2,), A=4))


def test_replace_episode_keeps_fixed_horizon():
    d = make(lengths=(3, 3), horizon=3)
    with pytest.raises(InvalidDataError, match="'horizon'"):
        d.replace_episode(1, make(lengths=(4,)))
    assert d.replace_episode(1, make(lengths=(3,), horizon=3, seed=2)).horizon == 3


def test_concatenate_and_its_checks():
    a, b = make(lengths=(3,), metadata={"first": True}), make(lengths=(2, 2), seed=1)
    c = TrajectoryDataset.concatenate([a, b])
    assert c.episode_lengths.tolist() == [3, 2, 2] and c.metadata == {"first": True}
    np.testing.assert_array_equal(c.observations, np.r_[a.observations, b.observations])
    assert TrajectoryDataset.concatenate(a).n_episodes == 1
    with pytest.raises(InvalidParameterError, match="'datasets'"):
        TrajectoryDataset.concatenate([])
    with pytest.raises(InvalidParameterError, match="'datasets'"):
        TrajectoryDataset.concatenate([a, "b"])
    with pytest.raises(InvalidDataError, match="'reward_bounds'.*must agree"):
        TrajectoryDataset.concatenate([a, make(reward_bounds=(-1, 1))])
    with pytest.raises(InvalidDataError, match="'terminals'.*all or none"):
        TrajectoryDataset.concatenate([a, make(lengths=(2,), terminals=np.array([False, True]))])
    feats = TrajectoryDataset(np.zeros((2, 5)), [0, 0], [0, 0], np.zeros((2, 5)), [0, 2], n_actions=3)
    with pytest.raises(InvalidDataError, match="'observations'.*same layout"):
        TrajectoryDataset.concatenate([make(n_states=None), feats])


def test_from_episodes():
    eps = [
        {"observations": [0, 1], "actions": [1, 0], "rewards": [0.5, 1.0], "next_observations": [1, 2],
         "terminals": [False, True]},
        {"observations": [2], "actions": [1], "rewards": [0.0], "next_observations": [0], "terminals": [False]},
    ]
    d = TrajectoryDataset.from_episodes(eps, n_states=3, n_actions=2)
    assert d.episode_starts.tolist() == [0, 2, 3] and d.terminals.tolist() == [False, True, False]
    assert d.n_states == 3
    with pytest.raises(InvalidDataError, match="lacks the fields \\['rewards'\\]"):
        TrajectoryDataset.from_episodes([{k: v for k, v in eps[0].items() if k != "rewards"}])
    with pytest.raises(InvalidDataError, match="'terminals'.*all or none"):
        TrajectoryDataset.from_episodes([eps[0], {k: v for k, v in eps[1].items() if k != "terminals"}])
    with pytest.raises(InvalidParameterError, match="'episodes'"):
        TrajectoryDataset.from_episodes([])
    with pytest.raises(InvalidDataError, match="Episode 0 .* is empty"):
        empty = {"observations": [], "actions": [], "rewards": [], "next_observations": [], "terminals": []}
        TrajectoryDataset.from_episodes([{**eps[0], **empty}, eps[1]])


def test_as_padded():
    d = make(lengths=(3, 3), horizon=3, terminals=np.zeros(6, dtype=bool))
    p = d.as_padded()
    assert set(p) == {"observations", "actions", "rewards", "next_observations", "terminals"}
    assert p["rewards"].shape == (2, 3)
    np.testing.assert_array_equal(p["actions"][1], d.actions[3:])
    with pytest.raises(InvalidDataError, match="fixed-horizon"):
        make().as_padded()
