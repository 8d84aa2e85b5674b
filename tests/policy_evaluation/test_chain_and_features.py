"""The §6 chain (T21, T22, conventions), feature maps, and a FrozenLake evaluation."""

import math

import gymnasium as gym
import numpy as np
import pytest

from privrl.data.features import feature_matrix, one_hot, spectral_norm, state_aggregation
from privrl.envs.chain import (
    chain_model,
    chain_statistics,
    chain_transition_matrix,
    chain_values,
    chain_visit_probabilities,
    sample_chain,
    sample_chain_durations,
)
from privrl.errors import InvalidParameterError
from privrl.policy_evaluation import (
    LSL,
    LSW,
    DPLSLMechanism,
    DPLSWMechanism,
    first_visit_statistics,
    sqrt_lambda_schedule,
)


def test_chain_ground_truth():
    """T21: closed form equals (I − γP)^{-1} r and the spec's table."""
    v = chain_values(40, 0.5, 0.99)
    np.testing.assert_allclose(v[[0, 10, 20, 30, 38, 39]],
                               [0.463024, 0.565543, 0.690760, 0.843702, 0.990099, 0.0], atol=1e-6)
    P = chain_transition_matrix(40, 0.5)
    P[-1] = 0.0  # terminal: no continuation
    r = np.zeros(40)
    r[38] = 0.5
    np.testing.assert_allclose(np.linalg.solve(np.eye(40) - 0.99 * P, r), v, atol=1e-12)
    model = chain_model()
    np.testing.assert_allclose(model.evaluate(np.zeros(40, dtype=int)), v, atol=1e-12)
    assert v.mean() == pytest.approx(0.677007, abs=1e-6)


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


def test_feature_maps():
    np.testing.assert_array_equal(one_hot(3), np.eye(3))
    agg = state_aggregation(5, 2)
    np.testing.assert_array_equal(agg, [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]])
    assert spectral_norm(state_aggregation(40, 2)) == pytest.approx(math.sqrt(2))
    assert spectral_norm(state_aggregation(40, 4)) == pytest.approx(2.0)
    m = np.array([[3.0, 0.0], [0.0, 1.0]])
    assert spectral_norm(m) == pytest.approx(3.0)  # operator norm, not Frobenius (√10)
    np.testing.assert_array_equal(feature_matrix(m, n_states=2, max_norm=3.0), m)
    with pytest.raises(InvalidParameterError, match="spectral norm"):
        feature_matrix(m, max_norm=2.9)
    with pytest.raises(InvalidParameterError, match="n_states"):
        feature_matrix(m, n_states=3)
    with pytest.raises(InvalidParameterError, match="group_size"):
        state_aggregation(4, 0)
    with pytest.raises(InvalidParameterError, match="finite"):
        feature_matrix([[np.nan, 1.0]])


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


def test_chain_gym_registration():
    import privrl.envs  # noqa: F401  (registers the ids)

    env = gym.make("privrl/Chain-v0", n_states=6)
    assert env.unwrapped.model.n_states == 6
    obs, _ = env.reset(seed=0)
    assert 0 <= obs < 5  # TabularMDP starts uniformly over the non-terminal states
    done = False
    while not done:
        prev = obs
        obs, r, term, trunc, _ = env.step(0)
        # the (S, A) model carries the mean reward: 1 − p = 0.5 per step taken in state N − 2
        assert r == (0.5 if prev == 4 else 0.0)
        assert obs in (prev, prev + 1)
        done = term or trunc
    assert obs == 5 and term
    env.close()


def test_nested_chain_statistics_have_the_law_of_direct_sampling():
    """The histogram sampler of the experiments (sample_chain_statistics_nested) against the direct
    per-trajectory sampler: same means, variances and a cross-covariance of (counts, F_X) over 3000
    seeds (m = 30, N = 6, γ = 0.9), within 4 standard errors; a KS test on F_X(0)."""
    from scipy import stats as sps

    from privrl.envs.chain import sample_chain_statistics, sample_chain_statistics_nested

    n, m, seeds = 6, 30, 3000
    a = np.array([np.r_[c, f] for c, f in (sample_chain_statistics_nested([m], 0.9, n_states=n, rng=s)[0]
                                           for s in range(seeds))])
    b = np.array([np.r_[sample_chain_statistics(m, 0.9, n_states=n, rng=10**6 + s)] .ravel()
                  for s in range(seeds)])
    for j in range(2 * n):
        if b[:, j].std() == 0:
            assert np.all(a[:, j] == b[0, j])
            continue
        se = math.sqrt(a[:, j].var() / seeds + b[:, j].var() / seeds)
        assert abs(a[:, j].mean() - b[:, j].mean()) <= 4 * se, j
        assert a[:, j].var() == pytest.approx(b[:, j].var(), rel=0.15), j   # s.e. of a variance ≈ 2.6 % here
    cov = [np.cov(x[:, n], x[:, n + 1])[0, 1] for x in (a, b)]  # F_X(0) with F_X(1): shared sojourns
    assert cov[0] == pytest.approx(cov[1], rel=0.25) and cov[1] > 0
    assert sps.ks_2samp(a[:, n], b[:, n]).pvalue > 1e-3


def test_nested_chain_statistics_are_nested_unbiased_and_cheap():
    from privrl.envs.chain import sample_chain_statistics_nested

    sizes = [10, 1000, 10**5, 10**7]
    out = sample_chain_statistics_nested(sizes, 0.99, rng=0)
    for (c1, _), (c2, _), m in zip(out, out[1:], sizes[1:]):
        assert np.all(c2 >= c1) and c2[-1] == m            # prefixes: counts only grow; all reach N−1
    counts, mean = out[-1]
    np.testing.assert_allclose(mean, chain_values(), atol=2e-3)   # first-visit returns are unbiased (A12)
    np.testing.assert_allclose(counts[:-1] / 10**7, chain_visit_probabilities()[:-1], atol=1e-3)
    with pytest.raises(InvalidParameterError, match="batch_sizes"):
        sample_chain_statistics_nested([100, 10], 0.99, rng=0)
