"""Linear mixture models and the E1/E2/E3 environments (spec §5.2, test 26)."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import privrl.envs  # noqa: F401  (registers the ids)
from privrl.envs.finite import evaluate_policy
from privrl.envs.finite import optimal_values as optimal_q_values
from privrl.envs.linear_mixture import (
    LinearMixtureMDP,
    hard_instance,
    hard_instance_constants,
    random_mixture,
    tabular_as_mixture,
)
from privrl.errors import InvalidDataError, InvalidParameterError


def test_hard_instance_reference_value_and_structure():
    m = hard_instance(5, 6, 10**4, rng=0)
    c = hard_instance_constants(5, 6, 10**4)
    P = m.transitions()
    assert np.allclose(P.sum(-1), 1) and P.min() >= 0
    np.testing.assert_allclose(np.linalg.norm(m.theta_p, axis=1), 1 + 4 * c["Delta"], rtol=1e-12)
    assert m.value_feature_bound() <= 6 + 1e-9                         # ‖ϕ_V‖ ≤ H
    Q, V = optimal_q_values(P, m.mean_rewards())
    assert V[0, 0] == pytest.approx(2.03663, abs=5e-6)
    for h in range(5):   # at x_h (reached at step h) the optimal action is sign(μ_h); all tie at h = H
        best = m.actions[np.argmax(Q[h, h])]
        np.testing.assert_array_equal(best, np.sign(m.mu[h]))
        np.testing.assert_allclose(P[h, h, :, 7], 1 / 6 + m.actions @ m.mu[h])


@pytest.mark.parametrize("d,H", [(5, 6), (3, 4), (9, 2)])
def test_hard_instance_valid_iff_enough_episodes(d, H):
    k_min = (d - 1) ** 2 * H / 32
    hard_instance(d, H, math.ceil(k_min), rng=0)
    if math.floor(k_min - 1e-9) >= 1 and math.floor(k_min - 1e-9) < k_min:
        with pytest.raises(InvalidDataError, match="n_episodes"):
            hard_instance(d, H, math.floor(k_min - 1e-9), rng=0)


def test_random_mixture_is_valid_and_seeded():
    a, b = random_mixture(rng=4), random_mixture(rng=4)
    np.testing.assert_array_equal(a.psi, b.psi)
    assert not np.array_equal(a.psi, random_mixture(rng=5).psi)
    assert a.value_feature_bound() <= math.sqrt(3) * 5 * (1 + 1e-9)
    assert np.linalg.norm(a.phi, axis=-1).max() <= 1
    r = a.mean_rewards()
    assert 0 <= r.min() and r.max() <= 1
    assert a.reward_noise == "bernoulli" and a.initial[0] == 1


def test_tabular_as_mixture_round_trip():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=(2, 3, 2))
    r = rng.uniform(size=(2, 3, 2))
    m = tabular_as_mixture(P, r)
    assert (m.d1, m.d2) == (18, 6)
    np.testing.assert_allclose(m.transitions(), P)
    np.testing.assert_allclose(m.mean_rewards(), r)
    assert m.value_feature_bound() <= math.sqrt(m.d1) * 2
    tab = m.to_tabular()
    np.testing.assert_allclose(tab.optimal_values()[:, :], optimal_q_values(P, r)[1], atol=1e-12)
    m2 = tabular_as_mixture(tab)
    np.testing.assert_allclose(m2.transitions(), P)


def test_exact_planning_agrees_with_tabular_mdp():
    m = random_mixture(rng=1)
    tab = m.to_tabular()
    Q, V = optimal_q_values(m.transitions(), m.mean_rewards())
    np.testing.assert_allclose(V, tab.optimal_values(), atol=1e-12)
    pol = np.random.default_rng(0).integers(0, 4, size=(5, 6))
    np.testing.assert_allclose(evaluate_policy(m.transitions(), m.mean_rewards(), pol), tab.evaluate(pol), atol=1e-12)


def test_invalid_models_raise():
    m = random_mixture(rng=0)
    with pytest.raises(InvalidDataError, match="probability"):
        LinearMixtureMDP(m.psi, m.theta_p * 0.5, m.phi, m.theta_r, check_norms=False)
    with pytest.raises(InvalidDataError, match="phi"):
        LinearMixtureMDP(m.psi, m.theta_p, m.phi * 3, m.theta_r / 3)
    with pytest.raises(InvalidDataError, match="rewards"):
        LinearMixtureMDP(m.psi, m.theta_p, m.phi, m.theta_r - 2, check_norms=False)
    with pytest.raises(InvalidParameterError, match="theta_p"):
        LinearMixtureMDP(m.psi, m.theta_p[:, :2], m.phi, m.theta_r)
    with pytest.raises(InvalidParameterError, match="d"):
        hard_instance(1, 5, 100)


@pytest.mark.parametrize("env_id", ["privrl/LinearMixtureHard-v0", "privrl/RandomLinearMixture-v0"])
def test_registered_envs(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped)
    assert env.unwrapped.linear_mixture.horizon == env.unwrapped.model.horizon
    np.testing.assert_allclose(env.unwrapped.model.P, env.unwrapped.linear_mixture.transitions())
