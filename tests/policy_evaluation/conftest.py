"""The toy dataset of the spec (§6): N = 4, γ = 0.9, R_max = 1, m = 3, w = ρ = 1/4."""

import numpy as np
import pytest

from privrl.data import TrajectoryDataset

TOY_EPISODES = [
    ([0, 1, 1, 2], [0.0, 0.0, 0.0, 1.0]),
    ([1, 2], [0.0, 1.0]),
    ([2, 0, 2], [1.0, 0.0, 1.0]),  # revisits state 2
]
PHI_AGG = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
PHI_TAB = np.eye(4)
W = np.full(4, 0.25)


def make_dataset(episodes, n_states=4, terminal_last=False, reward_bounds=(0.0, 1.0)):
    obs = np.concatenate([np.asarray(s, dtype=np.int64) for s, _ in episodes])
    rew = np.concatenate([np.asarray(r, dtype=float) for _, r in episodes])
    lengths = [len(s) for s, _ in episodes]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    nxt = np.empty_like(obs)
    nxt[:-1] = obs[1:]
    nxt[starts[1:] - 1] = obs[starts[1:] - 1]
    terminals = None
    if terminal_last:
        terminals = np.zeros(obs.size, dtype=bool)
        terminals[starts[1:] - 1] = True
    return TrajectoryDataset(obs, np.zeros_like(obs), rew, nxt, starts, terminals=terminals,
                             n_states=n_states, n_actions=1, reward_bounds=reward_bounds)


@pytest.fixture
def toy():
    return make_dataset(TOY_EPISODES)
