"""Minari import/export round trips (local only: MINARI_DATASETS_PATH points to a tmp dir)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

minari = pytest.importorskip("minari")

from privrl.data import TrajectoryDataset, collect, load_dataset  # noqa: E402
from privrl.data.minari_io import from_minari, to_minari  # noqa: E402
from privrl.errors import InvalidDataError, InvalidParameterError  # noqa: E402


@pytest.fixture(autouse=True)
def minari_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def assert_same(a, b):
    for k in ("observations", "actions", "rewards", "next_observations", "episode_starts"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
        assert getattr(a, k).dtype == getattr(b, k).dtype
    for k in ("n_states", "n_actions", "horizon", "reward_bounds"):
        assert getattr(a, k) == getattr(b, k)


@pytest.fixture
def frozen_lake_data():
    env = gym.make("FrozenLake-v1", is_slippery=True)
    return collect(env, lambda obs, step, rng: int(rng.integers(4)), 25, rng=0, reward_bounds=(0.0, 1.0))


def test_frozen_lake_round_trip(frozen_lake_data, minari_home):
    d = frozen_lake_data
    assert d.terminals.any()
    out = to_minari(d, "privrl/frozenlake/random-v0", env="FrozenLake-v1", description="test")
    assert out.total_episodes == 25 and out.total_steps == len(d)
    assert (minari_home / "privrl" / "frozenlake" / "random-v0").is_dir()
    back = from_minari("privrl/frozenlake/random-v0")
    assert_same(d, back)
    np.testing.assert_array_equal(back.terminals, d.terminals)
    assert back.metadata["env"] == "FrozenLake-v1"
    assert back.metadata["minari_dataset_id"] == "privrl/frozenlake/random-v0"
    assert_same(d, load_dataset("privrl/frozenlake/random-v0"))
    assert_same(d, from_minari(out))
    # the recorded environment can be recovered from the Minari dataset
    assert out.recover_environment().spec.id == "FrozenLake-v1"


def test_fixed_horizon_model_data_without_env(minari_home):
    from privrl.envs import TabularMDP

    g = np.random.default_rng(0)
    m = TabularMDP(g.dirichlet(np.ones(4), size=(5, 4, 2)), g.random((5, 4, 2)), horizon=5)
    d = m.sample(m.optimal_policy(), 10, rng=1)
    to_minari(d, "model-v0")
    back = from_minari("model-v0")
    assert_same(d, back)
    assert back.horizon == 5


def test_features_without_terminals(minari_home):
    g = np.random.default_rng(0)
    obs = g.normal(size=(7, 2))
    d = TrajectoryDataset(obs[:-1], [0, 1, 1, 0, 1, 0], np.zeros(6), obs[1:], [0, 6], n_actions=2, reward_bounds=None)
    to_minari(d, "features-v0")
    back = from_minari("features-v0")
    assert_same(d, back)
    assert back.terminals is None


def test_external_minari_dataset_needs_declared_reward_bounds(minari_home):
    buffers = [
        minari.data_collector.EpisodeBuffer(
            observations=np.array([0, 1, 2]), actions=np.array([1, 1]), rewards=np.array([0.0, 1.0]),
            terminations=np.array([False, True]), truncations=np.array([False, False]), infos={},
        )
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = minari.create_dataset_from_buffers(
            "ext-v0", buffers, observation_space=gym.spaces.Discrete(3), action_space=gym.spaces.Discrete(2)
        )
    with pytest.raises(InvalidParameterError, match="'reward_bounds' parameter of from_minari must be declared"):
        from_minari(ds)
    d = from_minari(ds, reward_bounds=(0, 1))
    assert d.n_states == 3 and d.n_actions == 2 and d.terminals.tolist() == [False, True]
    assert d.next_observations.tolist() == [1, 2]
    with pytest.raises(InvalidDataError, match="reward_bounds"):
        from_minari(ds, reward_bounds=(0, 0.5))
    # load_dataset passes the declarations through (a .npz file takes none)
    assert load_dataset("ext-v0", reward_bounds=(0, 1)).n_transitions == 2
    with pytest.raises(InvalidParameterError, match="'minari_options' parameter of load_dataset"):
        load_dataset(__file__ + ".npz", reward_bounds=(0, 1))


def test_to_minari_refuses_what_it_cannot_store(frozen_lake_data):
    d = frozen_lake_data
    shuffled = TrajectoryDataset(d.observations, d.actions, d.rewards, d.next_observations[::-1], d.episode_starts,
                                 n_states=16, n_actions=4)
    with pytest.raises(InvalidDataError, match="'next_observations'.*T\\+1"):
        to_minari(shuffled, "bad-v0")
    no_actions = TrajectoryDataset(d.observations, d.actions, d.rewards, d.next_observations, d.episode_starts,
                                   n_states=16)
    with pytest.raises(InvalidParameterError, match="n_actions set"):
        to_minari(no_actions, "bad-v0")
    no_states = TrajectoryDataset(d.observations, d.actions, d.rewards, d.next_observations, d.episode_starts,
                                  n_actions=4)
    with pytest.raises(InvalidParameterError, match="n_states set"):
        to_minari(no_states, "bad-v0")
    with pytest.raises(InvalidParameterError, match="'dataset' parameter of to_minari"):
        to_minari({"x": 1}, "bad-v0")
    with pytest.raises(InvalidParameterError, match="'dataset_id' parameter of to_minari"):
        to_minari(d, "")


def test_from_minari_bad_inputs():
    from privrl.data.minari_io import MinariNotFoundError

    with pytest.raises(MinariNotFoundError, match="No local Minari dataset 'absent-v0'") as info:
        from_minari("absent-v0")
    # how to get it, with the Minari command line (not a Python keyword such as download=True)
    assert "'minari download absent-v0'" in str(info.value) and "download=" not in str(info.value)
    assert isinstance(info.value, InvalidDataError)
    with pytest.raises(InvalidDataError, match="No local Minari dataset"):
        load_dataset("absent/data-v0")
    with pytest.raises(InvalidParameterError, match="'dataset' parameter of from_minari"):
        from_minari(42)
