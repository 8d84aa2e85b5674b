"""The §6 chain of Balle et al. (2016): ground truth (T21), the Gymnasium id and the nested
histogram sampler of the experiments."""

import math

import gymnasium as gym
import numpy as np
import pytest

from privrl.envs.chain import (
    chain_model,
    chain_transition_matrix,
    chain_values,
    chain_visit_probabilities,
)
from privrl.errors import InvalidParameterError


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
