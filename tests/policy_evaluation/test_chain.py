"""The family on the §6 chain (sampler conventions against its statistics, T22 noise scales, T23 LSW
RMSE) and a FrozenLake evaluation."""

import math

import gymnasium as gym
import numpy as np
import pytest

from privrl.envs.chain import (
    chain_statistics,
    chain_values,
    chain_visit_probabilities,
    sample_chain,
    sample_chain_durations,
)
from privrl.policy_evaluation import (
    LSL,
    LSW,
    DPLSLMechanism,
    DPLSWMechanism,
    first_visit_statistics,
    sqrt_lambda_schedule,
)


def test_chain_sampler_conventions_and_fast_statistics():
    b = sample_chain_durations(3000, rng=0)
    ds = sample_chain(0, batch=b)
    ends = ds.episode_starts[1:] - 1
    assert np.all(ds.terminals[ends]) and ds.terminals.sum() == ds.n_episodes
    assert np.all(ds.next_observations[ends] == 39)
    assert set(np.unique(ds.rewards)) <= {0.0, 1.0}
    assert ds.rewards.sum() == np.sum(b.start < 39)  # one unit reward per non-absorbed start
    st = first_visit_statistics(ds.observations, ds.rewards, ds.episode_starts, 40, 0.99,
                                terminal_states=np.where(ds.terminals[ends], 39, -1))
    counts, mean = chain_statistics(b, 0.99)
    np.testing.assert_array_equal(st.counts, counts)
    np.testing.assert_allclose(st.mean_returns, mean, rtol=1e-12)
    assert counts[39] == 3000
    # visit frequencies match p_s = (s+1)/N within 5 standard errors
    p = chain_visit_probabilities(40)
    assert np.all(np.abs(counts / 3000 - p) <= 5 * np.sqrt(p * (1 - p) / 3000) + 1e-12)


def test_chain_noise_scales_at_expected_counts():
    """T22: σ^LSW ≈ 578.94 (m = 10³) and 0.0854 (m = 10⁶), σ^LSL ≈ 1.7746 (m = 10³), F_max = 1."""
    p = chain_visit_probabilities(40)
    w = np.full(40, 1 / 40)
    mech = DPLSWMechanism.create(features=np.eye(40), weights=w, F_max=1.0, epsilon=0.1, delta=0.1,
                                 calibration="paper")
    for m, sigma in ((1000, 578.94), (10**6, 0.0854)):
        assert mech.noise_scale(np.round(m * p), m) == pytest.approx(sigma, rel=1e-3)
    lam = sqrt_lambda_schedule(1000, np.eye(40), w, 1.0)
    assert lam == pytest.approx(1 / 40 + math.sqrt(1000))
    ml = DPLSLMechanism.create(features=np.eye(40), relevance=w, lam=lam, F_max=1.0, epsilon=0.1, delta=0.1,
                               calibration="paper")
    assert ml.noise_scale(np.round(1000 * p), 1000) == pytest.approx(1.7746, rel=1e-3)


@pytest.mark.stat
def test_lsw_rmse_on_chain_tabular():
    """T23 (first item): non-private tabular LSW RMSE ≈ 0.0027 at m = 10³ (±30 %, 20 runs)."""
    v = chain_values()
    rmse = []
    for seed in range(20):
        ds = sample_chain(1000, rng=seed)
        est = LSW(gamma=0.99).fit(ds)
        rmse.append(math.sqrt(np.mean((est.values_ - v) ** 2)))
    assert np.mean(rmse) == pytest.approx(0.0027, rel=0.3)


@pytest.mark.stat
def test_frozenlake_policy_evaluation():
    """The estimators work on any finite model: evaluate FrozenLake's optimal policy from sampled
    episodes (through from_gymnasium_toy_text) and compare with the exact values."""
    from privrl.envs import from_gymnasium_toy_text

    model = from_gymnasium_toy_text(gym.make("FrozenLake-v1"), gamma=0.95)
    policy = model.optimal_policy()
    exact = model.evaluate(policy)
    ds = model.sample(policy, 3000, rng=0)
    ends = ds.episode_starts[1:] - 1
    st = first_visit_statistics(ds.observations, ds.rewards, ds.episode_starts, 16, 0.95,
                                terminal_states=np.where(ds.terminals[ends], ds.next_observations[ends], -1))
    seen = st.counts >= 100
    assert seen.sum() >= 10
    lsw = LSW(gamma=0.95).fit(ds)
    np.testing.assert_allclose(lsw.values_[seen], exact[seen], atol=0.03)
    # LSL with a tiny ridge agrees with LSW on visited states
    lsl = LSL(gamma=0.95, lam=1e-6).fit(ds)
    np.testing.assert_allclose(lsl.values_[seen], lsw.values_[seen], atol=1e-6)
