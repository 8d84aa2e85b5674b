"""privrl.envs.gym.TabularEnv: the Gymnasium adapter over TabularMDP."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from privrl.data import collect
from privrl.envs import TabularMDP
from privrl.envs.gym import TabularEnv
from privrl.errors import InvalidParameterError


def small_episodic(H=4, seed=0):
    g = np.random.default_rng(seed)
    return TabularMDP(g.dirichlet(np.ones(3), size=(H, 3, 2)), g.random((H, 3, 2)), horizon=H)


def absorbing(gamma=0.9):
    P = np.zeros((3, 2, 3))
    P[0, 0] = [0.0, 0.5, 0.5]
    P[0, 1, 0] = 1.0
    P[1, :, 2] = 1.0
    P[2, :, 2] = 1.0
    r = np.array([[0.0, 0.1], [1.0, 1.0], [0.0, 0.0]])
    return TabularMDP(P, r, gamma=gamma, initial=[1, 0, 0], terminal_states=np.array([False, False, True]))


@pytest.mark.parametrize("model", [small_episodic(), absorbing()], ids=["episodic", "discounted"])
def test_check_env_passes(model):
    env = TabularEnv(model)
    check_env(env, skip_render_check=True)
    assert env.model is model
    assert env.observation_space == gym.spaces.Discrete(3)
    assert env.action_space == gym.spaces.Discrete(2)


def run(env, seed, actions):
    obs, info = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    return out


def test_reset_seed_semantics():
    env = TabularEnv(small_episodic(H=30))
    actions = [0, 1] * 15
    a = run(env, 123, actions)
    b = run(env, 123, actions)
    assert a == b  # same seed, same actions -> same trajectory
    trajectories = {str(run(env, s, actions)) for s in range(5)}
    assert len(trajectories) > 1  # different seeds differ
    # reset() without a seed continues the stream instead of repeating it
    env.reset(seed=7)
    first = run(env, None, actions)
    second = run(env, None, actions)
    assert first != second


def test_truncation_at_horizon_and_step_info():
    env = TabularEnv(small_episodic(H=4))
    env.reset(seed=0)
    flags = []
    for h in range(4):
        _, reward, terminated, truncated, info = env.step(0)
        flags.append((terminated, truncated))
        assert info["step"] == h + 1
        assert 0.0 <= reward <= 1.0
    assert flags == [(False, False)] * 3 + [(False, True)]
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


def test_rewards_follow_the_step_index():
    # r depends on h: r[h, s, a] = h / 10
    H = 3
    P = np.full((H, 2, 1, 2), 0.5)
    r = np.broadcast_to(np.arange(H)[:, None, None] / 10, (H, 2, 1))
    env = TabularEnv(TabularMDP(P, r, horizon=H))
    env.reset(seed=0)
    rewards = [env.step(0)[1] for _ in range(H)]
    assert rewards == pytest.approx([0.0, 0.1, 0.2])


def test_terminal_state_terminates():
    env = TabularEnv(absorbing())
    obs, _ = env.reset(seed=0)
    assert obs == 0
    obs, reward, terminated, truncated, _ = env.step(0)
    if obs == 1:
        obs, reward, terminated, truncated, _ = env.step(1)
        assert reward == 1.0
    assert obs == 2 and terminated and not truncated


def test_bad_inputs():
    with pytest.raises(InvalidParameterError, match="'model' parameter of TabularEnv"):
        TabularEnv("FrozenLake")
    env = TabularEnv(small_episodic())
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(InvalidParameterError, match="'action' parameter of TabularEnv.step"):
        env.step(2)


@pytest.mark.stat
def test_env_returns_match_exact_value():
    model = small_episodic(H=4, seed=3)
    env = TabularEnv(model)
    pi = model.optimal_policy()
    n = 2000
    data = collect(env, pi, n, rng=0)  # (H, S) array policy on a Discrete env
    assert data.horizon == 4 and data.reward_bounds == model.reward_bounds
    ret = np.add.reduceat(data.rewards, data.episode_starts[:-1])
    assert abs(ret.mean() - model.optimal_value()) < 4 * ret.std() / np.sqrt(n)
