"""Appendix F synthetic linear MDP, LinearMDP and the random tabular benchmark."""

import math

import gymnasium as gym
import numpy as np
import pytest

from privrl import InvalidDataError, InvalidParameterError
from privrl.envs.linear import LinearMDP, backward_induction
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.envs.synthetic_linear import (
    FEATURE_SCALE,
    synthetic_behaviour_policy,
    synthetic_features,
    synthetic_linear_mdp,
)


@pytest.mark.parametrize("bit_order", ["msb", "lsb"])
def test_synthetic_model_structure(bit_order):
    mdp = synthetic_linear_mdp(rng=2, bit_order=bit_order)
    P, r = mdp.transitions, mdp.rewards
    assert P.shape == (20, 2, 100, 2) and np.allclose(P.sum(-1), 1) and P.min() >= 0
    assert r.min() >= 0 and r.max() <= 1
    phi = synthetic_features(bit_order)
    delta = phi[..., 8]
    assert delta[0, 0] == 1 and np.all(delta[0, 1:] == 0) and delta[1, 0] == 0 and np.all(delta[1, 1:] == 1)
    assert np.all(phi[..., 8] + phi[..., 9] == 1)
    alpha = mdp.nu[:, 0, 8:] / FEATURE_SCALE
    for h in range(20):
        np.testing.assert_allclose(P[h, :, :, 0], np.where(delta == 1, alpha[h, 0], alpha[h, 1]), atol=1e-12)
    assert (phi**2).sum(-1).max() == 7
    mu = synthetic_behaviour_policy()
    cov = np.einsum("a,aij->ij", mu[0] / 2, np.einsum("sai,saj->aij", phi, phi)) * 0
    cov = sum(0.5 * mu[s, a] * np.outer(phi[s, a], phi[s, a]) for s in range(2) for a in range(100))
    assert np.linalg.matrix_rank(cov) == 9                  # κ = 0 (spec A-E2)
    assert np.sqrt((mdp.features**2).sum(-1)).max() == pytest.approx(1.0)   # normalised by sqrt(7)


def test_bit_orders():
    msb, lsb = synthetic_features("msb"), synthetic_features("lsb")
    assert list(msb[0, 5, :8]) == [0, 0, 0, 0, 0, 1, 0, 1]
    assert list(lsb[0, 5, :8]) == [1, 0, 1, 0, 0, 0, 0, 0]


def test_behaviour_policy():
    mu = synthetic_behaviour_policy()
    assert mu[0, 0] == 0.6 and mu[1, 5] == pytest.approx(0.4 / 99) and np.allclose(mu.sum(1), 1)
    assert np.allclose(synthetic_linear_mdp().initial, [0.5, 0.5])


def _two_class_value(mdp, bit_order):
    H = mdp.horizon
    rh = mdp.theta[:, 8] * 2 / FEATURE_SCALE
    alpha = mdp.nu[:, 0, 8:] / FEATURE_SCALE
    B = 0.5 - rh / 8 if bit_order == "msb" else np.full(H, 0.5)
    V = np.zeros(2)
    for h in range(H - 1, -1, -1):
        c1 = alpha[h, 0] * V[0] + (1 - alpha[h, 0]) * V[1]
        c0 = alpha[h, 1] * V[0] + (1 - alpha[h, 1]) * V[1]
        V = np.array([max(rh[h] / 2 + c1, B[h] + 0.5 - rh[h] / 2 + c0),
                      max(B[h] + rh[h] / 2 + c1, 0.5 - rh[h] / 2 + c0)])
    return V.mean()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bit_order", ["msb", "lsb"])
def test_exact_optimum_vs_brute_force(seed, bit_order):
    mdp = synthetic_linear_mdp(rng=seed, bit_order=bit_order)
    P, r = mdp.transitions, mdp.rewards
    V = np.zeros(2)
    for h in range(19, -1, -1):          # brute force over all 100 actions, no vectorised helper
        V = np.array([max(r[h, s, a] + P[h, s, a] @ V for a in range(100)) for s in range(2)])
    assert mdp.optimal_value() == pytest.approx(V.mean(), abs=1e-10)
    assert mdp.optimal_value() == pytest.approx(_two_class_value(mdp, bit_order), abs=1e-10)
    best = {int(a) for a in np.flatnonzero(np.isclose(r[0, 1, 1:], r[0, 1, 1:].max())) + 1}
    assert best == ({58, 59, 62, 63} if bit_order == "msb" else {93, 95})


def test_policy_value_matches_monte_carlo():
    mdp = synthetic_linear_mdp(rng=0, horizon=20)
    rng = np.random.default_rng(0)
    for pi in (synthetic_behaviour_policy(), mdp.optimal_policy(), rng.dirichlet(np.ones(100), size=2)):
        data = mdp.sample(pi, 100000, rng=1)
        returns = data["rewards"].sum(1)
        se = returns.std() / math.sqrt(len(returns))
        assert abs(returns.mean() - mdp.value(pi)) <= 3 * se + 1e-9


def test_linear_mdp_validation():
    phi = np.ones((2, 1, 1))
    nu = np.full((3, 2, 1), 0.5)
    LinearMDP(phi, nu, np.full((3, 1), 0.2))
    with pytest.raises(InvalidDataError, match="probability"):
        LinearMDP(phi, np.full((3, 2, 1), 0.7), np.full((3, 1), 0.2))
    with pytest.raises(InvalidDataError, match="rewards"):
        LinearMDP(phi, nu, np.full((3, 1), 1.2))
    with pytest.raises(InvalidParameterError, match="nu"):
        LinearMDP(phi, np.full((3, 3, 1), 0.5), np.full((3, 1), 0.2))
    with pytest.raises(InvalidDataError, match="feature_norm_bound"):
        LinearMDP(2 * phi, nu / 2, np.full((3, 1), 0.1), feature_norm_bound=1.0)


def test_to_tabular_and_registration():
    mdp = synthetic_linear_mdp(rng=0, horizon=6)
    tab = mdp.to_tabular()
    assert tab.optimal_value() == pytest.approx(mdp.optimal_value(), abs=1e-12)
    import privrl.envs  # noqa: F401  (registers the ids)
    env = gym.make("privrl/SyntheticLinearMDP-v0", horizon=6)
    obs, _ = env.reset(seed=0)
    assert obs in (0, 1)
    env2 = gym.make("privrl/RandomTabularMDP-v0")
    obs, _ = env2.reset(seed=0)
    assert 0 <= obs < 10


def test_random_tabular_mdp_and_cover():
    mdp = random_tabular_mdp(rng=4)
    assert mdp.transitions.shape == (10, 10, 5, 10)
    again = random_tabular_mdp(rng=4)
    np.testing.assert_array_equal(mdp.transitions, again.transitions)
    pi_star = mdp.optimal_policy()
    mu = covering_behaviour_policy(pi_star, 5)
    assert np.allclose(mu.sum(-1), 1) and mu.min() > 0
    assert np.all(np.take_along_axis(mu, pi_star[..., None], -1)[..., 0] == pytest.approx(0.6))
    Q, V = backward_induction(mdp.transitions, mdp.rewards)
    assert mdp.value(pi_star) == pytest.approx(mdp.initial @ V[0])
