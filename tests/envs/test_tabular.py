"""TabularMDP: validation, exact solvers, sampling, and the Gymnasium toy-text import."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from privrl.data import TrajectoryDataset, collect
from privrl.envs import TabularMDP, from_gymnasium_toy_text
from privrl.errors import InvalidDataError, InvalidParameterError


def random_episodic(S=3, A=2, H=3, seed=0, stationary=False):
    g = np.random.default_rng(seed)
    shape = (S, A) if stationary else (H, S, A)
    P = g.dirichlet(np.ones(S), size=shape)
    r = g.random(shape)
    return TabularMDP(P, r, horizon=H, initial=g.dirichlet(np.ones(S)))


def random_discounted(S=3, A=2, gamma=0.8, seed=0):
    g = np.random.default_rng(seed)
    return TabularMDP(g.dirichlet(np.ones(S), size=(S, A)), g.random((S, A)), gamma=gamma)


def absorbing_chain(gamma=0.9):
    """0 -a0-> 1 -a0-> 2 (terminal); action 1 stays. Reward 1 for entering 2 from 1 with a0."""
    P = np.zeros((3, 2, 3))
    P[0, 0, 1] = P[1, 0, 2] = 1.0
    P[0, 1, 0] = P[1, 1, 1] = 1.0
    P[2, :, 2] = 1.0
    r = np.zeros((3, 2))
    r[1, 0] = 1.0
    term = np.array([False, False, True])
    return TabularMDP(P, r, gamma=gamma, initial=[1.0, 0.0, 0.0], terminal_states=term)


# ----------------------------------------------------------------------------- validation
def test_rows_not_summing_to_one_name_the_field_and_row():
    P = np.full((2, 2, 2), 0.5)
    P[1, 0] = [0.5, 0.6]
    with pytest.raises(InvalidDataError, match=r"'P' field.*rows summing to 1.*row \(1, 0\)"):
        TabularMDP(P, np.zeros((2, 2)), gamma=0.9)


def test_negative_probability_is_rejected():
    P = np.full((2, 2, 2), 0.5)
    P[0, 1] = [1.5, -0.5]
    with pytest.raises(InvalidDataError, match="'P' field.*non-negative"):
        TabularMDP(P, np.zeros((2, 2)), gamma=0.9)


def test_nan_in_P_is_rejected():
    P = np.full((2, 2, 2), 0.5)
    P[0, 0, 0] = np.nan
    with pytest.raises(InvalidDataError, match="'P'.*finite"):
        TabularMDP(P, np.zeros((2, 2)), gamma=0.9)


@pytest.mark.parametrize(
    "r_shape, kwargs",
    [((2, 3), {"gamma": 0.9}), ((3, 2, 2), {"gamma": 0.9}), ((4, 2, 2), {"horizon": 3})],
)
def test_reward_shape_must_match(r_shape, kwargs):
    P = np.full((2, 2, 2), 0.5)
    if "horizon" in kwargs:
        P = np.full((3, 2, 2, 2), 0.5)
    with pytest.raises(InvalidDataError, match="'r' field.*shape"):
        TabularMDP(P, np.zeros(r_shape), **kwargs)


def test_rewards_outside_declared_bounds_raise():
    P = np.full((2, 2, 2), 0.5)
    with pytest.raises(InvalidDataError, match=r"'r' field.*reward_bounds \[0.0, 1.0\].*1.5"):
        TabularMDP(P, np.full((2, 2), 1.5), gamma=0.9)
    m = TabularMDP(P, np.full((2, 2), 1.5), gamma=0.9, reward_bounds=(-2, 2))
    assert m.reward_bounds == (-2.0, 2.0)


def test_bad_reward_bounds_parameter():
    P = np.full((2, 2, 2), 0.5)
    with pytest.raises(InvalidParameterError, match="'reward_bounds'"):
        TabularMDP(P, np.zeros((2, 2)), gamma=0.9, reward_bounds=(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="'reward_bounds'"):
        TabularMDP(P, np.zeros((2, 2)), gamma=0.9, reward_bounds="wide")


@pytest.mark.parametrize("initial, match", [([0.5, 0.6], "rows summing to 1"), ([1.0], "shape"),
                                            ([1.5, -0.5], "non-negative")])
def test_initial_distribution_is_validated(initial, match):
    with pytest.raises(InvalidDataError, match=f"'initial'.*{match}"):
        TabularMDP(np.full((2, 2, 2), 0.5), np.zeros((2, 2)), gamma=0.9, initial=initial)


@pytest.mark.parametrize("gamma", [1.0, -0.1, float("nan"), "0.9"])
def test_gamma_range(gamma):
    with pytest.raises(InvalidParameterError, match=r"'gamma' parameter of TabularMDP must be a float in \[0.0, 1.0\)"):
        TabularMDP(np.full((2, 2, 2), 0.5), np.zeros((2, 2)), gamma=gamma)


def test_horizon_and_form_selection():
    P3 = np.full((2, 2, 2), 0.5)
    with pytest.raises(InvalidParameterError, match="'gamma' and 'horizon'.*exclusive"):
        TabularMDP(P3, np.zeros((2, 2)), gamma=0.9, horizon=3)
    with pytest.raises(InvalidParameterError, match="'horizon' parameter.*Got None"):
        TabularMDP(P3, np.zeros((2, 2)))
    with pytest.raises(InvalidParameterError, match="'horizon' parameter of TabularMDP must be an int"):
        TabularMDP(P3, np.zeros((2, 2)), horizon=0)
    P4 = np.full((3, 2, 2, 2), 0.5)
    with pytest.raises(InvalidDataError, match=r"'P'.*shape \(4, 2, 2, 2\)"):
        TabularMDP(P4, np.zeros((3, 2, 2)), horizon=4)
    with pytest.raises(InvalidDataError, match=r"'P'.*\(S, A, S\) for a discounted"):
        TabularMDP(P4, np.zeros((3, 2, 2)), gamma=0.5)
    with pytest.raises(InvalidDataError, match="matching state axes"):
        TabularMDP(np.full((2, 2, 3), 1 / 3), np.zeros((2, 2)), gamma=0.5)
    m = TabularMDP(P4, np.zeros((3, 2, 2)))  # horizon inferred from P
    assert m.horizon == 3 and m.is_episodic and m.gamma is None and not m.is_stationary


def test_stationary_rewards_with_nonstationary_P():
    g = np.random.default_rng(0)
    P = g.dirichlet(np.ones(2), size=(3, 2, 2))
    m = TabularMDP(P, np.full((2, 2), 0.5), horizon=3)
    assert m.r.shape == (3, 2, 2) and m.optimal_value() == pytest.approx(1.5)
    with pytest.raises(InvalidDataError, match=r"'P'.*\(H, S, A, S\) or \(S, A, S\)"):
        TabularMDP(np.ones((2, 1)), np.zeros(2), horizon=3)


def test_all_states_terminal_is_rejected():
    P = np.zeros((2, 1, 2))
    P[0, 0, 0] = P[1, 0, 1] = 1.0
    with pytest.raises(InvalidDataError, match="at least one non-terminal"):
        TabularMDP(P, np.zeros((2, 1)), gamma=0.5, terminal_states=np.array([True, True]))


def test_terminal_states_must_be_absorbing_with_zero_reward():
    m = absorbing_chain()
    P, r = np.array(m.P), np.array(m.r)
    term = m.terminal_states
    bad_r = r.copy()
    bad_r[2, 1] = 0.5
    with pytest.raises(InvalidDataError, match="'terminal_states'.*absorbing"):
        TabularMDP(P, bad_r, gamma=0.9, initial=m.initial, terminal_states=term)
    bad_P = P.copy()
    bad_P[2, 0] = [1.0, 0.0, 0.0]
    with pytest.raises(InvalidDataError, match="'terminal_states'.*absorbing"):
        TabularMDP(bad_P, r, gamma=0.9, initial=m.initial, terminal_states=term)
    with pytest.raises(InvalidDataError, match="'terminal_states'.*bool array of shape"):
        TabularMDP(P, r, gamma=0.9, terminal_states=[0, 0, 1])
    with pytest.raises(InvalidDataError, match="'initial'.*zero mass on terminal"):
        TabularMDP(P, r, gamma=0.9, initial=[0.5, 0.0, 0.5], terminal_states=term)
    # default initial: uniform over non-terminal states
    d = TabularMDP(P, r, gamma=0.9, terminal_states=term)
    np.testing.assert_allclose(d.initial, [0.5, 0.5, 0.0])


def test_rows_within_tolerance_are_stored_normalised():
    P = np.full((2, 1, 2), 0.5)
    P[0, 0] = [0.5, 0.5 + 5e-7]
    m = TabularMDP(P, np.zeros((2, 1)), gamma=0.5, initial=[0.3, 0.7 + 5e-7])
    np.testing.assert_allclose(m.P.sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    assert abs(m.initial.sum() - 1.0) < 1e-15


def test_arrays_are_read_only_and_stationary_episodic_is_a_view():
    m = random_episodic(stationary=True, H=50)
    assert m.P.shape == (50, 3, 2, 3) and m.r.shape == (50, 3, 2) and m.is_stationary
    with pytest.raises(ValueError):
        m.P[0, 0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        m.initial[0] = 1.0
    assert "S=3, A=2, horizon=50" in repr(m)


# ----------------------------------------------------------------------------- solvers
def all_deterministic_policies(S, A, H=None):
    shape = (S,) if H is None else (H, S)
    for flat in itertools.product(range(A), repeat=int(np.prod(shape))):
        yield np.array(flat, dtype=np.int64).reshape(shape)


def test_episodic_optimum_equals_best_of_all_deterministic_policies():
    m = random_episodic(S=2, A=2, H=3, seed=1)
    values = [m.value(pi) for pi in all_deterministic_policies(2, 2, 3)]
    assert m.optimal_value() == pytest.approx(max(values), abs=1e-12)
    assert m.value(m.optimal_policy()) == pytest.approx(m.optimal_value(), abs=1e-12)
    V = m.optimal_values()
    assert V.shape == (4, 2) and np.all(V[-1] == 0)
    # per-state optimality too: V*_0(s) >= V^pi_0(s) for every pi
    best = np.max([m.evaluate(pi)[0] for pi in all_deterministic_policies(2, 2, 3)], axis=0)
    np.testing.assert_allclose(V[0], best, atol=1e-12)


def test_episodic_hand_computed_values():
    # two states, one action: 0 -> 1 with reward 1, 1 stays with reward 0.5, H = 2
    P = np.zeros((2, 1, 2))
    P[0, 0, 1] = P[1, 0, 1] = 1.0
    r = np.array([[1.0], [0.5]])
    m = TabularMDP(P, r, horizon=2, initial=[1.0, 0.0])
    np.testing.assert_allclose(m.optimal_values(), [[1.5, 1.0], [1.0, 0.5], [0.0, 0.0]])
    np.testing.assert_allclose(m.optimal_q()[:, :, 0], [[1.5, 1.0], [1.0, 0.5]])
    assert m.optimal_value() == pytest.approx(1.5)


def test_episodic_evaluation_of_stochastic_nonstationary_policy_by_explicit_recursion():
    m = random_episodic(S=3, A=2, H=4, seed=2)
    g = np.random.default_rng(3)
    pi = g.dirichlet(np.ones(2), size=(4, 3))
    V = np.zeros(3)
    for h in range(3, -1, -1):
        P_pi = np.einsum("sa,sat->st", pi[h], m.P[h])
        V = (pi[h] * m.r[h]).sum(1) + P_pi @ V
    np.testing.assert_allclose(m.evaluate(pi)[0], V, atol=1e-12)
    assert m.value(pi) == pytest.approx(m.initial @ V, abs=1e-12)
    q = m.evaluate_q(pi)
    np.testing.assert_allclose((q[0] * pi[0]).sum(1), V, atol=1e-12)


def test_stationary_policy_is_broadcast_and_one_hot_equals_deterministic():
    m = random_episodic(S=3, A=2, H=4, seed=4)
    pi = np.array([1, 0, 1])
    np.testing.assert_allclose(m.evaluate(pi), m.evaluate(np.tile(pi, (4, 1))))
    np.testing.assert_allclose(m.evaluate(pi), m.evaluate(np.eye(2)[pi]))


def test_discounted_optimum_best_of_all_policies_and_bellman_fixed_point():
    m = random_discounted(S=3, A=2, gamma=0.9, seed=5)
    values = np.array([m.evaluate(pi) for pi in all_deterministic_policies(3, 2)])
    np.testing.assert_allclose(m.optimal_values(), values.max(axis=0), atol=1e-10)
    V = m.optimal_values()
    residual = (m.r + m.gamma * m.P @ V).max(axis=1) - V
    assert np.abs(residual).max() < 1e-10
    np.testing.assert_allclose(m.optimal_q().max(axis=1), V, atol=1e-12)
    assert m.value(m.optimal_policy()) == pytest.approx(m.optimal_value(), abs=1e-10)


def test_discounted_evaluation_matches_value_iteration():
    m = random_discounted(S=4, A=3, gamma=0.7, seed=6)
    pi = np.random.default_rng(7).dirichlet(np.ones(3), size=4)
    P_pi = np.einsum("sa,sat->st", pi, m.P)
    r_pi = (pi * m.r).sum(1)
    V = np.zeros(4)
    for _ in range(300):
        V = r_pi + 0.7 * P_pi @ V
    np.testing.assert_allclose(m.evaluate(pi), V, atol=1e-12)
    np.testing.assert_allclose(m.evaluate_q(pi), m.r + 0.7 * m.P @ V, atol=1e-12)


def test_discounted_optimal_policy_breaks_ties_by_lowest_action():
    P = np.zeros((1, 3, 1))
    P[0, :, 0] = 1.0
    m = TabularMDP(P, np.array([[0.2, 0.5, 0.5]]), gamma=0.5)
    assert m.optimal_policy().tolist() == [1]
    assert m.optimal_value() == pytest.approx(1.0)


def test_discounted_sparse_solver_agrees_with_dense():
    # S >= 200 with a sparse kernel takes the sparse LU path
    S, A = 220, 2
    g = np.random.default_rng(8)
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            nxt = g.choice(S, size=2, replace=False)
            P[s, a, nxt] = [0.3, 0.7]
    m = TabularMDP(P, g.random((S, A)), gamma=0.95)
    pi = g.integers(0, A, S)
    P_pi = P[np.arange(S), pi]
    dense = np.linalg.solve(np.eye(S) - 0.95 * P_pi, m.r[np.arange(S), pi])
    np.testing.assert_allclose(m.evaluate(pi), dense, atol=1e-10)


def test_absorbing_chain_values():
    m = absorbing_chain(gamma=0.9)
    np.testing.assert_allclose(m.optimal_values(), [0.9, 1.0, 0.0])
    assert m.optimal_policy().tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "policy, match",
    [
        (np.array([0, 1]), "shape"),
        (np.array([0, 1, 2]), r"actions in \[0, 1\]"),
        (np.array([0.0, 1.0, 1.0]), "float array of shape"),
        (np.full((3, 2), 0.6), "rows summing to 1"),
        (np.full((3, 2), np.nan), "finite"),
        (np.array(["a", "b", "c"]), "int array .* or a float array"),
        (lambda o, s, g: 0, "callable"),
    ],
)
def test_bad_policies_raise(policy, match):
    m = random_discounted()
    with pytest.raises(InvalidParameterError, match=match):
        m.evaluate(policy)


def test_discounted_model_rejects_nonstationary_policy():
    m = random_discounted()
    with pytest.raises(InvalidParameterError, match="shape"):
        m.evaluate(np.zeros((4, 3), dtype=int))


# ----------------------------------------------------------------------------- sampling
def episode_returns(data: TrajectoryDataset, gamma: float = 1.0) -> np.ndarray:
    weights = gamma ** data.steps
    return np.add.reduceat(weights * data.rewards, data.episode_starts[:-1])


def test_sample_layout_and_determinism():
    m = random_episodic(S=3, A=2, H=5, seed=9)
    d = m.sample(m.optimal_policy(), 50, rng=1)
    assert d.n_episodes == 50 and len(d) == 250 and d.horizon == 5
    assert d.n_states == 3 and d.n_actions == 2 and d.reward_bounds == (0.0, 1.0)
    np.testing.assert_array_equal(d.steps, np.tile(np.arange(5), 50))
    # next state of step h is the state of step h + 1
    pad = d.as_padded()
    np.testing.assert_array_equal(pad["next_observations"][:, :-1], pad["observations"][:, 1:])
    # deterministic policy: actions follow it
    np.testing.assert_array_equal(d.actions, m.optimal_policy()[d.steps, d.observations])
    np.testing.assert_allclose(d.rewards, m.r[d.steps, d.observations, d.actions])
    d2 = m.sample(m.optimal_policy(), 50, rng=1)
    np.testing.assert_array_equal(d.next_observations, d2.next_observations)
    # a non-stationary stochastic policy given as one-hot rows: action h % 2 at step h
    one_hot = np.zeros((5, 3, 2))
    one_hot[np.arange(5), :, np.arange(5) % 2] = 1.0
    d3 = m.sample(one_hot, 20, rng=2)
    np.testing.assert_array_equal(d3.actions, d3.steps % 2)


@pytest.mark.stat
def test_sampled_transitions_and_returns_match_the_model():
    m = random_episodic(S=3, A=2, H=3, seed=10)
    pi = np.full((3, 2), 0.5)
    n = 20_000
    d = m.sample(pi, n, rng=11)
    # returns: mean within 4 standard errors (returns lie in [0, 3])
    ret = episode_returns(d)
    se = ret.std() / np.sqrt(n)
    assert abs(ret.mean() - m.value(pi)) < 4 * se
    # initial states: frequencies within 0.015 of the distribution (SE <= 0.0036)
    freq0 = np.bincount(d.observations[d.steps == 0], minlength=3) / n
    np.testing.assert_allclose(freq0, m.initial, atol=0.015)
    # transitions at step 1 from (s=0, a=1): empirical kernel within 0.03 (>= ~2000 samples)
    sel = (d.steps == 1) & (d.observations == 0) & (d.actions == 1)
    assert sel.sum() > 1000
    emp = np.bincount(d.next_observations[sel], minlength=3) / sel.sum()
    np.testing.assert_allclose(emp, m.P[1, 0, 1], atol=0.04)
    # actions: uniform policy
    assert abs(d.actions.mean() - 0.5) < 0.01


@pytest.mark.stat
def test_callable_policy_gives_the_same_distribution_as_the_array():
    m = random_episodic(S=3, A=2, H=3, seed=12)
    pi = m.optimal_policy()
    d = m.sample(lambda obs, step, rng: int(pi[step, obs]), 3000, rng=13)
    np.testing.assert_array_equal(d.actions, pi[d.steps, d.observations])
    ret = episode_returns(d)
    assert abs(ret.mean() - m.optimal_value()) < 4 * ret.std() / np.sqrt(3000) + 1e-12


def test_callable_policy_returning_bad_action_raises():
    m = random_episodic()
    with pytest.raises(InvalidParameterError, match="'policy'.*int action in \\[0, 1\\]"):
        m.sample(lambda obs, step, rng: 5, 2, rng=0)
    with pytest.raises(InvalidParameterError, match="'policy'"):
        m.sample(lambda obs, step, rng: 0.5, 2, rng=0)


def test_sample_terminal_states_end_episodes():
    m = absorbing_chain()
    d = m.sample(np.array([0, 0, 0]), 4, rng=0)  # no max_steps needed: episodes terminate
    assert d.episode_lengths.tolist() == [2, 2, 2, 2]
    assert d.terminals.tolist() == [False, True] * 4
    assert d.horizon is None
    # stochastic policy: variable lengths, every episode ends in the terminal state
    d = m.sample(np.full((3, 2), 0.5), 200, rng=1)
    assert np.all(d.terminals[d.episode_starts[1:] - 1])
    assert len(set(d.episode_lengths.tolist())) > 3
    # max_steps truncates
    d = m.sample(np.array([1, 1, 1]), 3, rng=0, max_steps=5)
    assert d.episode_lengths.tolist() == [5, 5, 5] and not d.terminals.any()


def test_sample_pad_to_horizon_gives_fixed_horizon_data():
    m = absorbing_chain()
    d = m.sample(np.full((3, 2), 0.5), 200, rng=1, pad_to_horizon=30, max_steps=30)
    assert d.horizon == 30 and d.n_episodes == 200
    padded = d.as_padded()
    ended = d.terminals.reshape(200, 30)[:, -1] & (padded["observations"] == 2).any(axis=1)
    assert ended.sum() > 150
    # an episode that reached the terminal state stays there, with reward 0, until step H
    rows = padded["observations"][ended]
    first = np.argmax(rows == 2, axis=1)
    assert all((r[f:] == 2).all() for r, f in zip(rows, first))
    assert all((rw[f:] == 0).all() for rw, f in zip(padded["rewards"][ended], first))
    with pytest.raises(InvalidParameterError, match="'max_steps' parameter of TabularMDP.sample must be an int "
                       "<= pad_to_horizon = 3"):
        m.sample(np.full((3, 2), 0.5), 50, rng=1, pad_to_horizon=3, max_steps=40)
    # without max_steps, episodes are cut at the padding horizon
    assert m.sample(np.array([1, 1, 1]), 3, rng=0, pad_to_horizon=4).horizon == 4


def test_sample_max_steps_rules(monkeypatch):
    m = random_discounted()
    with pytest.raises(InvalidParameterError, match="'max_steps'.*discounted model without terminal"):
        m.sample(np.zeros(3, dtype=int), 2, rng=0)
    assert m.sample(np.zeros(3, dtype=int), 2, rng=0, max_steps=7).episode_lengths.tolist() == [7, 7]
    e = random_episodic(H=4)
    with pytest.raises(InvalidParameterError, match=r"'max_steps'.*\[1, 4\]"):
        e.sample(np.zeros(3, dtype=int), 2, rng=0, max_steps=5)
    short = e.sample(np.zeros(3, dtype=int), 2, rng=0, max_steps=2)
    assert short.episode_lengths.tolist() == [2, 2] and short.horizon is None
    with pytest.raises(InvalidParameterError, match="'n_episodes'"):
        e.sample(np.zeros(3, dtype=int), 0, rng=0)
    # a policy that never reaches the terminal state, no max_steps: stopped by the safety cap
    import privrl.envs.sampling as sampling

    monkeypatch.setattr(sampling, "_MAX_UNBOUNDED_STEPS", 50)
    chain = absorbing_chain()
    with pytest.raises(InvalidParameterError, match="'max_steps'.*must be given"):
        chain.sample(np.array([1, 1, 1]), 1, rng=0)


def test_collect_on_model_uses_sample():
    m = random_episodic(S=3, A=2, H=3, seed=14)
    pi = m.optimal_policy()
    a = collect(m, pi, 10, rng=5)
    b = m.sample(pi, 10, rng=5)
    np.testing.assert_array_equal(a.next_observations, b.next_observations)


# ----------------------------------------------------------------------------- Gymnasium toy text
def test_frozen_lake_structure():
    env = gym.make("FrozenLake-v1", is_slippery=True)
    m = from_gymnasium_toy_text(env)  # horizon from max_episode_steps
    assert m.horizon == 100 and m.n_states == 16 and m.n_actions == 4
    assert np.flatnonzero(m.terminal_states).tolist() == [5, 7, 11, 12, 15]
    assert m.initial.tolist() == [1.0] + [0.0] * 15
    assert m.reward_bounds == (0.0, 1.0)
    # slippery: from state 0 action 1 (down) goes to 0, 4 or 1 with prob 1/3 each
    np.testing.assert_allclose(m.P[0, 0, 1, [0, 1, 4]], [1 / 3] * 3)
    # reward 1 for entering the goal from 14 moving right (expected: 1/3)
    assert m.r[0, 14, 2] == pytest.approx(1 / 3)
    assert from_gymnasium_toy_text(env, gamma=0.9).gamma == 0.9


def test_toy_text_rejects_other_envs_and_missing_horizon():
    with pytest.raises(InvalidParameterError, match="'env' parameter of from_gymnasium_toy_text"):
        from_gymnasium_toy_text(gym.make("CartPole-v1"))
    with pytest.raises(InvalidParameterError, match="'horizon'"):
        from_gymnasium_toy_text(gym.make("CliffWalking-v1"))  # no max_episode_steps


def test_taxi_id_in_gymnasium_1_4():
    assert "Taxi-v4" in gym.registry
    m = from_gymnasium_toy_text(gym.make("Taxi-v4"), gamma=0.9)
    assert (m.n_states, m.n_actions, m.reward_bounds) == (500, 6, (-10.0, 20.0))
    assert m.terminal_states.sum() == 4  # taxi and passenger at each of the four destinations


def mc_returns(env, policy_fn, n, seed, gamma=1.0):
    data = collect(env, policy_fn, n, rng=seed)
    return episode_returns(data, gamma)


@pytest.mark.stat
@pytest.mark.parametrize("slippery", [True, False])
def test_frozen_lake_exact_values_match_gymnasium_monte_carlo(slippery):
    H = 30
    env = gym.make("FrozenLake-v1", is_slippery=slippery, max_episode_steps=H)
    m = from_gymnasium_toy_text(env, horizon=H)
    pi = m.optimal_policy()
    n = 2000 if slippery else 20
    ret = mc_returns(env, lambda obs, step, rng: int(pi[step, obs]), n, seed=0)
    # returns in {0, 1}: SE <= 0.5 / sqrt(2000) = 0.011; tolerance 0.045 (~4 SE)
    assert abs(ret.mean() - m.value(pi)) < 0.045
    if slippery:
        assert 0.3 < m.optimal_value() < 0.9
    else:
        assert m.optimal_value() == 1.0 and np.all(ret == 1.0)


@pytest.mark.stat
def test_frozen_lake_discounted_values_match_gymnasium_monte_carlo():
    env = gym.make("FrozenLake-v1", is_slippery=True, max_episode_steps=200)
    m = from_gymnasium_toy_text(env, gamma=0.9)
    pi = m.optimal_policy()
    n = 1500
    # discounted returns in [0, 1]; truncation at 200 steps changes the value by < 1e-8.
    # Tolerance: 4 standard errors of the sample.
    ret = mc_returns(env, lambda obs, step, rng: int(pi[obs]), n, seed=1, gamma=0.9)
    assert abs(ret.mean() - m.value(pi)) < 4 * ret.std() / np.sqrt(n)
    # a stochastic policy (optimal action w.p. 0.7), passed as an array to collect
    mixed = np.full((16, 4), 0.1)
    mixed[np.arange(16), pi] = 0.7
    ret = mc_returns(env, mixed, n, seed=2, gamma=0.9)
    assert abs(ret.mean() - m.value(mixed)) < 4 * ret.std() / np.sqrt(n)


def test_cliff_walking_exact_value_is_the_gymnasium_return():
    env = gym.make("CliffWalking-v1", max_episode_steps=50)
    m = from_gymnasium_toy_text(env, horizon=50)
    assert m.optimal_value() == -13.0  # shortest path along the cliff
    pi = m.optimal_policy()
    ret = mc_returns(env, lambda obs, step, rng: int(pi[step, obs]), 3, seed=0)
    np.testing.assert_array_equal(ret, [-13.0] * 3)


@pytest.mark.stat
def test_slippery_cliff_walking_matches_monte_carlo():
    H = 40
    env = gym.make("CliffWalking-v1", is_slippery=True, max_episode_steps=H)
    m = from_gymnasium_toy_text(env, horizon=H)
    pi = m.optimal_policy()
    n = 1000
    ret = mc_returns(env, lambda obs, step, rng: int(pi[step, obs]), n, seed=3)
    assert abs(ret.mean() - m.value(pi)) < 4 * ret.std() / np.sqrt(n)


@pytest.mark.stat
def test_rainy_taxi_matches_monte_carlo():
    H = 60
    env = gym.make("Taxi-v4", is_rainy=True, max_episode_steps=H)
    m = from_gymnasium_toy_text(env, horizon=H)
    pi = m.optimal_policy()
    n = 800
    ret = mc_returns(env, lambda obs, step, rng: int(pi[step, obs]), n, seed=4)
    assert abs(ret.mean() - m.value(pi)) < 4 * ret.std() / np.sqrt(n)
    # and the exact model's own sampler agrees as well
    d = m.sample(pi, 4000, rng=5)
    ret_model = episode_returns(d)
    assert abs(ret_model.mean() - m.value(pi)) < 4 * ret_model.std() / np.sqrt(4000)


class FakeToyText(gym.Env):
    """A 3-state toy-text table: 0 -> 1 (done), 0 -a1-> 2, and 2 -> 1 *without* done."""

    observation_space = gym.spaces.Discrete(3)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, consistent=True, with_initial=True):
        last = [(1.0, 2, 0.0, False)] if consistent else [(1.0, 1, 0.0, False)]
        self.P = {
            0: {0: [(1.0, 1, 1.0, True)], 1: [(1.0, 2, 0.0, False)]},
            1: {0: [(1.0, 1, 0.0, True)], 1: [(1.0, 1, 0.0, True)]},
            2: {0: last, 1: [(1.0, 0, 0.0, False)]},
        }
        if with_initial:
            self.initial_state_distrib = np.array([1.0, 0.0, 0.0])


def test_toy_text_done_must_be_a_property_of_the_next_state():
    m = from_gymnasium_toy_text(FakeToyText(), gamma=0.5)
    assert m.terminal_states.tolist() == [False, True, False] and m.optimal_value() == 1.0
    with pytest.raises(InvalidDataError, match="state 1 entered both by terminal and non-terminal"):
        from_gymnasium_toy_text(FakeToyText(consistent=False), gamma=0.5)
    with pytest.raises(InvalidParameterError, match="initial_state_distrib"):
        from_gymnasium_toy_text(FakeToyText(with_initial=False), gamma=0.5)
