"""CenterWalk (App. E.1) and the Box-rescaling wrapper (spec T29)."""

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

from privrl.envs.center_walk import (
    REFERENCE_RETURNS,
    CenterWalkBatch,
    CenterWalkEnv,
    UnitBoxObservation,
    make_env,
    make_unit_env,
    threshold_policy,
)
from privrl.errors import InvalidParameterError


def _returns(env, policy, n, rng):
    out, starts = [], []
    for _ in range(n):
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        starts.append(obs[0])
        total, steps, done = 0.0, 0, False
        while not done:
            obs, r, term, trunc, _ = env.step(policy(obs))
            assert 0.0 <= obs[0] <= 1.0
            total += r
            steps += 1
            done = term or trunc
        assert steps == 50
        out.append(total)
    return np.array(out), np.array(starts)


@pytest.mark.parametrize("after", [True, False])
def test_reference_returns(after):
    env = CenterWalkEnv(reward_after_move=after)
    rng = np.random.default_rng(29)
    col = 0 if after else 1
    thr, starts = _returns(env, threshold_policy, 2000, rng)
    uni, _ = _returns(env, lambda o: int(rng.integers(2)), 2000, rng)
    one, _ = _returns(env, lambda o: 1, 1000, rng)
    assert thr.mean() == pytest.approx(REFERENCE_RETURNS["threshold"][col], abs=0.05)   # sd 0.38 / sqrt(2000)
    assert uni.mean() == pytest.approx(REFERENCE_RETURNS["uniform"][col], abs=0.25)     # sd 2.73 / sqrt(2000)
    assert one.mean() == pytest.approx(REFERENCE_RETURNS["one_direction"][col], abs=0.1)
    assert stats.kstest(starts, "uniform").pvalue > 1e-3


def test_registered_id_and_bad_action():
    env = make_unit_env("privrl/CenterWalk-v0")
    assert isinstance(env.unwrapped, CenterWalkEnv)
    env.reset(seed=0)
    with pytest.raises(InvalidParameterError, match="'action'"):
        env.unwrapped.step(2)


def test_box_rescaling():
    env = make_unit_env("MountainCar-v0")
    assert isinstance(env, UnitBoxObservation)
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped.state
    low, high = env.unwrapped.observation_space.low, env.unwrapped.observation_space.high
    np.testing.assert_allclose(obs, (raw - low) / (high - low))
    assert np.all((obs >= 0) & (obs <= 1))
    with pytest.raises(InvalidParameterError, match="'low'.*finite"):
        UnitBoxObservation(gym.make("CartPole-v1"))   # infinite declared bounds
    wrapped = UnitBoxObservation(gym.make("CartPole-v1"), low=[-5, -5, -0.5, -5], high=[5, 5, 0.5, 5])
    o, _ = wrapped.reset(seed=0)
    assert o.shape == (4,) and np.all((o >= 0) & (o <= 1))


def test_center_walk_batch_equals_stepping_each_environment():
    """States, rewards, episode ends and each generator's final state as stepping them one by one
    (different horizons, moves and reward timing; registered and bare environments)."""
    def envs():
        return [make_env("privrl/CenterWalk-v0"), CenterWalkEnv(),
                CenterWalkEnv(horizon=7, max_move=0.3, reward_after_move=False)]

    batched, alone = envs(), envs()
    n_steps, seeds = 333, [1, 2, 3]
    batch = CenterWalkBatch.of(batched, n_steps)
    assert batch is not None
    np.testing.assert_array_equal(batch.reset(seeds)[:, 0], [e.reset(seed=s)[0][0] for e, s in zip(alone, seeds)])
    actions = np.random.default_rng(0).integers(0, 2, (n_steps, 3))
    for a in actions:
        obs, rew, term, trunc = batch.step(a)
        want = [e.step(int(x)) for e, x in zip(alone, a)]
        np.testing.assert_array_equal(obs[:, 0], [w[0][0] for w in want])
        np.testing.assert_array_equal(rew, [w[1] for w in want])
        np.testing.assert_array_equal(term, [w[2] for w in want])
        assert not trunc.any()
        ended = np.flatnonzero(term)
        if len(ended):
            np.testing.assert_array_equal(batch.reset_rows(ended)[:, 0], [alone[i].reset()[0][0] for i in ended])
    batch.close()
    for e, f in zip(batched, alone):
        assert e.unwrapped._s == f.unwrapped._s and e.unwrapped._t == f.unwrapped._t
        assert e.unwrapped.np_random.random() == f.unwrapped.np_random.random()


def test_center_walk_batch_only_for_plain_center_walk():
    assert CenterWalkBatch.of([make_env("privrl/CenterWalk-v0"), gym.make("CartPole-v1")], 10) is None
    assert CenterWalkBatch.of([gym.wrappers.TimeLimit(CenterWalkEnv(), 10)], 10) is None
