"""CenterWalk (App. E.1) and the Box-rescaling wrapper (spec T29)."""

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

from privrl.envs.center_walk import (
    REFERENCE_RETURNS,
    CenterWalkEnv,
    UnitBoxObservation,
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
