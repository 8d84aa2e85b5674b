"""The shared online layer (privrl.online): the episode loop's rollouts follow the model, its regret is
exact, its block-drawn randomness does not depend on the block size, and a gym env plays the same episodes
as the model it wraps."""

import numpy as np
import pytest

from privrl.envs.random_tabular import random_tabular_mdp
from privrl.online import loop
from privrl.online.episodes import act, run_streams, tabular_episode
from privrl.online.loop import run_episodes
from privrl.online.regret import optimal_values, policy_values

MDP = random_tabular_mdp(n_states=4, n_actions=3, horizon=5, rng=2).to_tabular()
R = np.broadcast_to(MDP.r, MDP.P.shape[:3]) if MDP.r.ndim < 3 else MDP.r


class _Model:
    P, rewards, initial = MDP.P, R, MDP.initial


class FixedPolicy:
    """Plays one policy and records what it observed."""

    def __init__(self, policy):
        self.pi, self.seen = policy, []

    def policy(self, k):
        return self.pi

    def observe(self, k, s, a, r):
        self.seen.append((s.copy(), a.copy(), r.copy()))


def test_the_regret_of_a_fixed_policy_is_its_exact_value_gap():
    pi = np.zeros((5, 4), dtype=int)
    learner = FixedPolicy(pi)
    trace = run_episodes(learner, _Model, 300, run_streams(0))
    gap = optimal_values(MDP.P, R) - policy_values(MDP.P, R, pi)
    starts = np.array([s[0] for s, _, _ in learner.seen])
    np.testing.assert_allclose(trace.regret, gap[starts], rtol=0, atol=1e-12)
    np.testing.assert_allclose(trace.cumulative()[-1], gap[starts].sum())
    optimal = FixedPolicy(MDP.optimal_policy())
    assert np.abs(run_episodes(optimal, _Model, 50, run_streams(0)).regret).max() < 1e-12


def test_rollouts_follow_the_model():
    pi = np.ones((5, 4, 3)) / 3                                      # a stochastic policy
    learner = FixedPolicy(pi)
    run_episodes(learner, _Model, 4000, run_streams(1))
    s0 = np.array([s[0] for s, _, _ in learner.seen])
    np.testing.assert_allclose(np.bincount(s0, minlength=4) / 4000, MDP.initial, atol=0.03)
    # transitions from (h=0, s, a): empirical next-state frequencies against P
    pairs = [(s[0], a[0], s[1]) for s, a, _ in learner.seen]
    for (x, u) in {(p[0], p[1]) for p in pairs}:
        nxt = np.array([p[2] for p in pairs if p[:2] == (x, u)])
        if len(nxt) > 300:
            np.testing.assert_allclose(np.bincount(nxt, minlength=4) / len(nxt), MDP.P[0, x, u], atol=0.08)
    for s, a, r in learner.seen[:20]:
        np.testing.assert_array_equal(r, R[np.arange(5), s[:-1], a])


def test_block_drawn_randomness_does_not_depend_on_the_block(monkeypatch):
    pi = np.zeros((5, 4), dtype=int)
    a = FixedPolicy(pi)
    run_episodes(a, _Model, 70, run_streams(3))
    monkeypatch.setattr(loop, "BLOCK", 16)
    b = FixedPolicy(pi)
    run_episodes(b, _Model, 70, run_streams(3))
    for x, y in zip(a.seen, b.seen):
        np.testing.assert_array_equal(x[0], y[0])


def test_acting_and_a_single_episode():
    pi = np.array([[[0.0, 1.0, 0.0]]])
    assert act(pi, 0, 0, np.array([0.3])) == 1
    assert act(np.array([[2]]), 0, 0, None) == 2
    cum_P = np.cumsum(MDP.P, axis=-1)
    s, a, r = tabular_episode(cum_P, np.cumsum(MDP.initial), R, np.zeros((5, 4), int), np.zeros((6, 2)))
    assert s.shape == (6,) and a.shape == (5,) and np.all(a == 0)


def test_a_gym_env_plays_through_the_loop():
    gym = pytest.importorskip("gymnasium")
    from privrl.envs.gym import TabularEnv

    env = TabularEnv(MDP)
    learner = FixedPolicy(np.zeros((5, 4), dtype=int))
    trace = run_episodes(learner, _Model, 20, run_streams(0), env=env)
    assert trace.k == 20 and np.all(trace.regret >= -1e-12)
    assert isinstance(env, gym.Env)
