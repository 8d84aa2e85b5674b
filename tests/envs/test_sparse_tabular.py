"""The sparse benchmark task (privrl.envs.sparse_tabular): exact sparse planning agrees with the
dense model, sampling matches the model, the public groups and the logging policy are as
documented, seeded determinism, and no dense S×A×S array."""

import numpy as np
import pytest

import privrl
from privrl.envs import SparseTabularMDP, sparse_tabular
from privrl.errors import InvalidDataError, InvalidParameterError

SMALL = dict(n_states=26, n_actions=5, horizon=6, n_levels=4, n_admissible=2)


@pytest.fixture(scope="module")
def small():
    return sparse_tabular(**SMALL, rng=3)


@pytest.fixture(scope="module")
def default():
    return sparse_tabular(rng=0)


def _policies(m, rng):
    S, A, H = m.n_states, m.n_actions, m.horizon
    return [rng.integers(0, A, S), rng.integers(0, A, (H, S)), rng.dirichlet(np.ones(A), S),
            rng.dirichlet(np.ones(A), (H, S)), m.logging_policy]


def test_dense_and_sparse_planning_agree(small):
    dense = small.to_tabular()
    assert dense.horizon == small.horizon and dense.n_states == 26 and dense.terminal_states.sum() == 2
    np.testing.assert_allclose(small.optimal_q(), dense.optimal_q(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(small.optimal_values(), dense.optimal_values(), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(small.optimal_policy(), dense.optimal_policy())
    assert small.optimal_value() == pytest.approx(dense.optimal_value(), abs=1e-12)
    for pol in _policies(small, np.random.default_rng(0)):
        np.testing.assert_allclose(small.evaluate(pol), dense.evaluate(pol), rtol=0, atol=1e-12)
        np.testing.assert_allclose(small.evaluate_q(pol), dense.evaluate_q(pol), rtol=0, atol=1e-12)
        assert small.value(pol) == pytest.approx(dense.value(pol), abs=1e-12)
    np.testing.assert_allclose(small.r, dense.r, atol=1e-15)
    np.testing.assert_allclose(small.transition_matrix().toarray().reshape(26, 5, 26), dense.P[0], atol=1e-15)


def test_structure_of_the_default_task(default):
    m = default
    S, A = 750, 25
    assert (m.n_states, m.n_actions, m.horizon, m.max_next_states) == (S, A, 20, 10)
    # no dense S×A×S array anywhere: the model is a few MB
    assert sum(a.nbytes for a in (m.next_states, m.probs, m.reward_table)) < 4 * 2**20
    # at most 10 next states per pair; absorbing success (S−2, reward 1 on entry) and failure (S−1)
    assert (m.transition_matrix().getnnz(axis=1) <= 10).all()
    assert m.terminal_states.tolist() == [False] * (S - 2) + [True, True]
    assert m.entry_reward[S - 2] == 1.0 and m.entry_reward.sum() == 1.0
    np.testing.assert_allclose(m.reward_table[:S - 2], m.transition_matrix()[:, S - 2].toarray().reshape(S, A)[:S - 2])
    assert np.all(m.reward_table[S - 2:] == 0)
    # groups: 20 severity levels of 37–38 states in index order, then success and failure
    counts = np.bincount(m.groups)
    assert m.n_groups == 22 and counts[:20].min() >= 37 and counts[:20].max() <= 38 and counts[20:].tolist() == [1, 1]
    assert np.all(np.diff(m.groups[:S - 2]) >= 0)
    # transitions stay within the level, the next better or worse one, or are absorbed
    P = m.transition_matrix().tocoo()
    src, dst = P.row // A, P.col
    moving = dst < S - 2
    assert np.abs(m.groups[src[moving]] - m.groups[dst[moving]]).max() == 1
    # logging policy: supported on the 4 admissible actions of the state's level, close to uniform
    mu = m.logging_policy
    T = S - 2
    assert np.all(m.admissible.sum(axis=1)[:T] == 4) and np.all((mu > 0) == m.admissible)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0)
    assert np.all(m.admissible[:T] == m.admissible[np.searchsorted(m.groups, m.groups[:T])])
    assert mu[:T][m.admissible[:T]].min() > 0.15 and mu[:T].max() < 0.4


def test_values_of_the_default_task(default):
    """Logging ≈ 0.76, barely above uniform over the admissible actions; the optimum 0.05–0.15 better."""
    m = default
    uniform = m.admissible / m.admissible.sum(axis=1, keepdims=True)
    v_mu, v_unif, v_star = m.value(m.logging_policy), m.value(uniform), m.optimal_value()
    assert 0.65 < v_mu < 0.8
    assert 0 < v_mu - v_unif < 0.02
    assert 0.05 < v_star - v_mu < 0.15
    # the optimum plays admissible actions: logged data cover it
    pi = m.optimal_policy()
    assert m.admissible[np.arange(748), pi[0, :748]].all()


@pytest.mark.stat
def test_sampled_episodes_match_the_model(small):
    m = small
    n = 40_000
    d = m.sample(m.logging_policy, n, rng=5)
    assert d.n_episodes == n and d.horizon is None and d.episode_lengths.max() <= m.horizon
    # episodes end on absorption (flagged) or at the horizon; outcome reward 1 exactly on reaching success
    last = d.episode_starts[1:] - 1
    ended = d.terminals[last] | (d.episode_lengths == m.horizon)
    assert ended.all() and d.terminals.sum() == d.terminals[last].sum()
    np.testing.assert_array_equal(d.rewards, (d.next_observations == m.n_states - 2).astype(float))
    assert d.reward_bounds == (0.0, 1.0)
    # success rate within 4 standard errors of the exact value
    ret = np.bincount(d.episode_index, weights=d.rewards, minlength=n)
    assert abs(ret.mean() - m.value(m.logging_policy)) < 4 * ret.std() / np.sqrt(n)
    # initial states uniform over patient states: frequencies within 0.01 (SE ≈ 0.0011)
    freq0 = np.bincount(d.observations[d.episode_starts[:-1]], minlength=26) / n
    np.testing.assert_allclose(freq0, m.initial, atol=0.01)
    # the empirical kernel of the 5 most visited pairs within 0.03 (each >= 1500 samples, SE <= 0.013)
    pair = d.observations * 5 + d.actions
    visits = np.bincount(pair, minlength=130)
    P = m.transition_matrix().toarray()
    for p in np.argsort(visits)[-5:]:
        assert visits[p] >= 1500
        emp = np.bincount(d.next_observations[pair == p], minlength=26) / visits[p]
        np.testing.assert_allclose(emp, P[p], atol=0.03)
    # actions follow the logging policy in each state within 0.03
    s = 0
    emp = np.bincount(d.actions[d.observations == s], minlength=5) / (d.observations == s).sum()
    np.testing.assert_allclose(emp, m.logging_policy[s], atol=0.03)


def test_padding_gives_fixed_horizon_data_with_the_same_returns(small):
    d = small.sample(small.logging_policy, 300, rng=1)
    padded = small.sample(small.logging_policy, 300, rng=1, pad_to_horizon=small.horizon)
    assert padded.horizon == small.horizon and padded.n_transitions == 300 * small.horizon
    np.testing.assert_array_equal(np.bincount(padded.episode_index, weights=padded.rewards),
                                  np.bincount(d.episode_index, weights=d.rewards))
    # a deterministic policy and a callable give the same actions
    pi = small.optimal_policy()
    a = small.sample(pi, 50, rng=2)
    b = small.sample(lambda s, h, rng: int(pi[h, s]), 50, rng=2)
    np.testing.assert_array_equal(a.actions, pi[a.steps, a.observations])
    np.testing.assert_array_equal(a.next_observations, b.next_observations)
    assert privrl.collect(small, pi, 50, rng=2).n_transitions == a.n_transitions


def test_seeded_determinism():
    a, b, c = (sparse_tabular(**SMALL, rng=s) for s in (7, 7, 8))
    for name in ("next_states", "probs", "logging_policy", "admissible", "groups"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.probs, c.probs)
    assert sparse_tabular(**SMALL, rng=np.random.default_rng(7)).value(a.logging_policy) == a.value(a.logging_policy)
    da, db = a.sample(a.logging_policy, 100, rng=3), b.sample(b.logging_policy, 100, rng=3)
    np.testing.assert_array_equal(da.next_observations, db.next_observations)


def test_dense_conversion_refused_above_the_limit(default, small):
    with pytest.raises(InvalidParameterError, match="'max_entries'.*S·A·S = 14062500.*107 MB"):
        default.to_tabular()
    assert small.to_tabular(max_entries=26 * 5 * 26).n_states == 26
    with pytest.raises(InvalidParameterError, match="'max_entries'"):
        small.to_tabular(max_entries=100)


def test_invalid_arguments():
    with pytest.raises(InvalidParameterError, match="'n_states'.*>= 14"):
        sparse_tabular(n_states=13, n_levels=4)
    with pytest.raises(InvalidParameterError, match="'n_admissible'"):
        sparse_tabular(**{**SMALL, "n_admissible": 6})
    nxt = np.zeros((2, 1, 1), dtype=int)
    with pytest.raises(InvalidDataError, match="'probs'.*rows summing to 1"):
        SparseTabularMDP(nxt, np.full((2, 1, 1), 0.5), horizon=2, entry_reward=np.zeros(2))
    with pytest.raises(InvalidDataError, match="absorbing"):
        SparseTabularMDP(nxt, np.ones((2, 1, 1)), horizon=2, entry_reward=np.zeros(2),
                         terminal_states=np.array([False, True]))
    with pytest.raises(InvalidDataError, match="'next_states'"):
        SparseTabularMDP(nxt + 2, np.ones((2, 1, 1)), horizon=2, entry_reward=np.zeros(2))
