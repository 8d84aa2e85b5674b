"""collect(): from TabularMDP models (vectorised) and from any gymnasium.Env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from privrl.data import TrajectoryDataset, collect
from privrl.envs import TabularMDP
from privrl.envs.gym import TabularEnv
from privrl.errors import InvalidParameterError


def model(H=3):
    g = np.random.default_rng(0)
    return TabularMDP(g.dirichlet(np.ones(3), size=(H, 3, 2)), g.random((H, 3, 2)), horizon=H)


def test_collect_from_model_is_reproducible_and_fixed_horizon():
    m = model()
    a = collect(m, np.full((3, 2), 0.5), 30, rng=1)
    b = collect(m, np.full((3, 2), 0.5), 30, rng=np.random.default_rng(1))
    assert isinstance(a, TrajectoryDataset) and a.horizon == 3 and a.n_episodes == 30
    np.testing.assert_array_equal(a.actions, b.actions)


def test_collect_from_model_with_other_bounds():
    m = model()
    d = collect(m, np.zeros(3, dtype=int), 3, rng=0, reward_bounds=(-5, 5))
    assert d.reward_bounds == (-5.0, 5.0)
    with pytest.raises(InvalidParameterError, match="'reward_bounds'"):
        collect(m, np.zeros(3, dtype=int), 3, rng=0, reward_bounds=(5, -5))


def test_collect_from_gym_env_same_rng_same_data():
    env = gym.make("FrozenLake-v1", is_slippery=True)
    pol = lambda obs, step, rng: int(rng.integers(4))  # noqa: E731
    a = collect(env, pol, 15, rng=3)
    b = collect(env, pol, 15, rng=3)
    np.testing.assert_array_equal(a.observations, b.observations)
    np.testing.assert_array_equal(a.actions, b.actions)
    c = collect(env, pol, 15, rng=4)
    assert not (len(a) == len(c) and np.array_equal(a.actions, c.actions))
    assert a.n_states == 16 and a.n_actions == 4 and a.reward_bounds is None
    assert a.metadata == {"source": "collect", "env": "FrozenLake-v1"}
    # episodes end where Gymnasium says terminated; next obs is the following obs
    ends = a.episode_starts[1:] - 1
    inner = np.setdiff1d(np.arange(len(a)), ends)
    np.testing.assert_array_equal(a.next_observations[inner], a.observations[inner + 1])
    assert a.terminals[ends].any() and not a.terminals[inner].any()


def test_collect_max_steps_truncates():
    env = gym.make("FrozenLake-v1", is_slippery=False)
    d = collect(env, lambda obs, step, rng: 0, 4, rng=0, max_steps=7)  # "left" forever
    assert d.episode_lengths.tolist() == [7] * 4 and d.horizon == 7 and not d.terminals.any()


def test_collect_tabular_env_declares_model_bounds():
    m = model()
    d = collect(TabularEnv(m), np.zeros((3, 3), dtype=int), 5, rng=0)
    assert d.reward_bounds == m.reward_bounds and d.horizon == 3


class BoxEnv(gym.Env):
    """Observations in R^2, an episode of 3 steps, reward = action."""

    observation_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2), {}

    def step(self, action):
        self.t += 1
        return self.np_random.uniform(-1, 1, 2), float(action), False, self.t >= 3, {}


class EndlessEnv(BoxEnv):
    def step(self, action):
        return np.zeros(2), 0.0, False, False, {}


def test_collect_box_observations():
    d = collect(BoxEnv(), lambda obs, step, rng: step % 2, 4, rng=0)
    assert d.observations.shape == (12, 2) and not d.is_tabular and d.horizon == 3
    np.testing.assert_array_equal(d.rewards, np.tile([0.0, 1.0, 0.0], 4))
    with pytest.raises(InvalidParameterError, match="'policy'.*callable"):
        collect(BoxEnv(), np.zeros(2, dtype=int), 2, rng=0)


def test_collect_needs_max_steps_for_endless_env(monkeypatch):
    import privrl.data.trajectories as trajectories

    monkeypatch.setattr(trajectories, "_MAX_UNBOUNDED_STEPS", 20)
    with pytest.raises(InvalidParameterError, match="'max_steps'.*ran 20 steps"):
        collect(EndlessEnv(), lambda obs, step, rng: 0, 1, rng=0)
    assert len(collect(EndlessEnv(), lambda obs, step, rng: 0, 1, rng=0, max_steps=5)) == 5


def test_collect_bad_inputs():
    env = gym.make("FrozenLake-v1")
    with pytest.raises(InvalidParameterError, match="'env_or_model' parameter of collect"):
        collect("FrozenLake-v1", lambda o, s, r: 0, 2, rng=0)
    with pytest.raises(InvalidParameterError, match="'n_trajectories' parameter of collect"):
        collect(env, lambda o, s, r: 0, 0, rng=0)
    with pytest.raises(InvalidParameterError, match="'max_steps' parameter of collect"):
        collect(env, lambda o, s, r: 0, 1, rng=0, max_steps=0)
    with pytest.raises(InvalidParameterError, match="'policy' parameter of collect.*actions in Discrete"):
        collect(env, lambda o, s, r: 9, 1, rng=0)
    with pytest.raises(InvalidParameterError, match=r"'policy' parameter of collect.*S=16, A=4"):
        collect(env, np.zeros(5, dtype=int), 1, rng=0)
    with pytest.raises(InvalidParameterError, match="Discrete action space"):
        collect(gym.make("Pendulum-v1"), lambda o, s, r: np.zeros(1), 1, rng=0)

    class TupleObs(BoxEnv):
        observation_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(2)))

    with pytest.raises(InvalidParameterError, match="Discrete or Box observation space"):
        collect(TupleObs(), lambda o, s, r: 0, 1, rng=0)


def test_nonstationary_array_policy_on_gym_env_covers_only_its_steps():
    env = gym.make("FrozenLake-v1", is_slippery=False)
    left = np.zeros((3, 16), dtype=int)  # "left" never terminates from the start state
    assert collect(env, left, 2, rng=0, max_steps=3).episode_lengths.tolist() == [3, 3]
    with pytest.raises(InvalidParameterError, match="'max_steps' parameter of collect must be at most 3"):
        collect(env, left, 1, rng=0)
    stochastic = np.zeros((2, 16, 4))
    stochastic[..., 0] = 1.0
    d = collect(env, stochastic, 2, rng=0, max_steps=2)
    assert d.actions.tolist() == [0, 0, 0, 0]


def test_minari_names_are_reexported():
    import privrl.data
    from privrl.data.minari_io import from_minari, to_minari

    assert privrl.data.from_minari is from_minari and privrl.data.to_minari is to_minari
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        privrl.data.nope  # noqa: B018


def test_collect_still_samples_a_tabular_model_exactly():
    """A model that samples itself is recognised by duck typing (privrl.data does not import envs)."""
    P = np.zeros((2, 2, 2, 2))
    P[..., 1] = 1.0  # always move to state 1
    mdp = TabularMDP(P, np.ones((2, 2, 2)), horizon=2, initial=np.array([1.0, 0.0]))
    data = collect(mdp, np.zeros((2, 2), dtype=int), 3, rng=0)
    assert data.n_episodes == 3 and data.horizon == 2
    np.testing.assert_array_equal(data.observations, [0, 1] * 3)
    np.testing.assert_array_equal(data.next_observations, [1, 1] * 3)
