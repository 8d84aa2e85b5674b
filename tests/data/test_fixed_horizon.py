"""pad_to_horizon, truncate_to_horizon, rescale_rewards, with_reward_bounds and the pad_to_horizon keyword
of the collectors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from privrl.data import (
    TrajectoryDataset,
    collect,
    max_episode_length,
    pad_to_horizon,
    rescale_rewards,
    truncate_to_horizon,
)
from privrl.envs import from_gymnasium_toy_text
from privrl.errors import InvalidDataError, InvalidParameterError


def _two_episodes(terminal_last=(True, False)):
    # episode 0: 0 -> 1 -> 3 (terminal, reward 1); episode 1: 2 -> 2 -> 1 -> 0 (4 steps)
    return TrajectoryDataset.from_episodes(
        [{"observations": [0, 1], "actions": [1, 2], "rewards": [0.0, 1.0], "next_observations": [1, 3],
          "terminals": [False, terminal_last[0]]},
         {"observations": [2, 2, 1, 0], "actions": [0, 1, 1, 0], "rewards": [0.5, 0.5, 0.0, 0.25],
          "next_observations": [2, 1, 0, 2], "terminals": [False, False, False, terminal_last[1]]}],
        n_states=4, n_actions=3, metadata={"source": "test"})


def test_truncate_to_horizon_cuts_long_episodes_only():
    data = _two_episodes(terminal_last=(True, True))
    cut = truncate_to_horizon(data, 3)
    assert cut.episode_lengths.tolist() == [2, 3]
    assert cut.rewards.tolist() == [0.0, 1.0, 0.5, 0.5, 0.0]          # the cut step's reward is dropped
    assert cut.terminals.tolist() == [False, True, False, False, False]  # cut, not ended
    assert cut.observations.tolist() == [0, 1, 2, 2, 1] and cut.actions.tolist() == [1, 2, 0, 1, 1]
    assert cut.metadata == {"source": "test", "max_episode_length": 3} and cut.horizon is None
    assert max_episode_length(cut) == 3 and max_episode_length(data) is None
    padded = pad_to_horizon(cut, 3)                   # the short episode ended in a terminal state
    assert padded.horizon == 3 and len(padded) == 6
    assert truncate_to_horizon(data, 2).horizon == 2  # every episode now has exactly 2 steps
    assert len(truncate_to_horizon(data, 10)) == len(data)
    with pytest.raises(InvalidParameterError, match="'horizon'"):
        truncate_to_horizon(data, 0)


def test_pad_to_horizon_appends_absorbing_zero_reward_steps():
    d = pad_to_horizon(_two_episodes(), 4)
    assert d.horizon == 4 and d.n_episodes == 2 and len(d) == 8
    p = d.as_padded()
    assert p["observations"].tolist() == [[0, 1, 3, 3], [2, 2, 1, 0]]
    assert p["next_observations"].tolist() == [[1, 3, 3, 3], [2, 1, 0, 2]]
    assert p["actions"].tolist() == [[1, 2, 0, 0], [0, 1, 1, 0]]
    assert p["rewards"].tolist() == [[0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.25]]
    # the terminal flag moves to the last step of the padded episode
    assert d.terminals.reshape(2, 4).tolist() == [[False, False, False, True], [False] * 4]
    assert d.metadata == {"source": "test", "padded_to_horizon": 4}
    assert (d.n_states, d.n_actions, d.reward_bounds) == (4, 3, (0.0, 1.0))


def test_pad_to_horizon_errors_and_no_op():
    d = _two_episodes()
    with pytest.raises(InvalidParameterError, match="'horizon' parameter of pad_to_horizon must be at least the "
                       "length of the longest episode. Got 3 instead"):
        pad_to_horizon(d, 3)
    with pytest.raises(InvalidDataError, match="only pad episodes that end in a terminal state"):
        pad_to_horizon(_two_episodes(terminal_last=(False, False)), 4)
    no_terms = TrajectoryDataset(d.observations, d.actions, d.rewards, d.next_observations, d.episode_starts,
                                 n_states=4, n_actions=3)
    with pytest.raises(InvalidDataError, match="needs a dataset with 'terminals'"):
        pad_to_horizon(no_terms, 5)
    fixed = pad_to_horizon(d, 4)
    assert pad_to_horizon(fixed, 4) is fixed  # already fixed-horizon


def test_pad_widens_bounds_to_include_the_absorbing_reward():
    d = TrajectoryDataset.from_episodes(
        [{"observations": [0], "actions": [0], "rewards": [-1.0], "next_observations": [1], "terminals": [True]}],
        n_states=2, n_actions=1, reward_bounds=(-100.0, -1.0))
    padded = pad_to_horizon(d, 3)
    assert padded.reward_bounds == (-100.0, 0.0) and padded.rewards.tolist() == [-1.0, 0.0, 0.0]


def test_padded_frozen_lake_data_match_the_fixed_horizon_model():
    """Padding the episodes of FrozenLake gives data from the fixed-horizon model whose terminal
    states are absorbing: the mean padded return equals the exact value (3 standard errors)."""
    env = gym.make("FrozenLake-v1")
    model = from_gymnasium_toy_text(env, horizon=20)
    policy = np.full((16, 4), 0.25)
    data = collect(env, policy, 4000, rng=7, max_steps=20, pad_to_horizon=20)
    assert data.horizon == 20 and data.terminals is not None
    returns = data.as_padded()["rewards"].sum(axis=1)
    se = returns.std(ddof=1) / np.sqrt(returns.size)
    assert abs(returns.mean() - model.value(policy)) < 3 * se
    sampled = model.sample(policy, 50, rng=1, pad_to_horizon=20)
    assert sampled.horizon == 20 and sampled.n_episodes == 50
    discounted = from_gymnasium_toy_text(env, gamma=0.9)
    assert discounted.sample(policy, 30, rng=2, pad_to_horizon=15).horizon == 15  # max_steps defaults to H


def test_collect_pad_to_horizon_needs_max_steps_within_the_horizon():
    env = gym.make("FrozenLake-v1")  # episodes may last 100 steps
    with pytest.raises(InvalidParameterError, match="'max_steps' parameter of collect must be an int <= "
                       "pad_to_horizon = 5"):
        collect(env, np.full((16, 4), 0.25), 200, rng=0, pad_to_horizon=5)
    with pytest.raises(InvalidParameterError, match="'pad_to_horizon' parameter of collect"):
        collect(env, np.full((16, 4), 0.25), 2, rng=0, pad_to_horizon=0)


def test_rescale_rewards_and_with_reward_bounds():
    d = TrajectoryDataset.from_episodes(
        [{"observations": [0, 1], "actions": [0, 0], "rewards": [-10.0, 20.0], "next_observations": [1, 0]}],
        n_states=2, n_actions=1, reward_bounds=(-10.0, 20.0))
    r = rescale_rewards(d)
    assert r.reward_bounds == (0.0, 1.0) and r.rewards.tolist() == [0.0, 1.0]
    assert rescale_rewards(d, -20.0, 20.0).rewards.tolist() == [0.25, 1.0]
    with pytest.raises(InvalidDataError, match="reward_bounds"):
        rescale_rewards(d, -5.0, 20.0)  # -10 maps below 0
    with pytest.raises(InvalidParameterError, match="'high' parameter of rescale_rewards"):
        rescale_rewards(d, 1.0, 1.0)
    assert d.with_reward_bounds((-20.0, 30.0)).reward_bounds == (-20.0, 30.0)
    with pytest.raises(InvalidDataError, match="Got rewards below the lower bound"):
        d.with_reward_bounds((0.0, 30.0))
    assert d.with_reward_bounds((0.0, 30.0), clip_rewards=True).rewards.tolist() == [0.0, 20.0]
