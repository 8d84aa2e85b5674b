"""Environment factories take ``rng=`` (issue #14 §3); ``seed=`` still works for one release,
with a DeprecationWarning, and draws the same instance."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import privrl.envs  # noqa: F401  (registers the privrl/... ids)
from privrl.envs.random_tabular import random_tabular_mdp
from privrl.envs.synthetic_linear import synthetic_linear_mdp
from privrl.errors import InvalidParameterError


def test_random_tabular_rng_draws_the_documented_instance():
    # the module docstring: P ~ Dirichlet(0.5·1_S), then r ~ U[0,1], from default_rng(seed)
    g = np.random.default_rng(4)
    P = g.dirichlet(np.full(3, 0.5), size=(2, 3, 2))
    r = g.random((2, 3, 2))
    for rng in (4, np.random.default_rng(4)):
        mdp = random_tabular_mdp(n_states=3, n_actions=2, horizon=2, rng=rng)
        np.testing.assert_array_equal(mdp.transitions, P)
        np.testing.assert_array_equal(mdp.rewards, r)
    assert "seed=4" in random_tabular_mdp(n_states=3, n_actions=2, horizon=2, rng=4).name
    assert random_tabular_mdp().name == "RandomTabularMDP(S=10, A=5, H=10, seed=0)"   # default: instance 0


def test_synthetic_linear_rng_draws_the_documented_instance():
    g = np.random.default_rng(7)
    alpha, rh = g.random((3, 2)), g.random(3)
    for rng in (7, np.random.default_rng(7)):
        mdp = synthetic_linear_mdp(horizon=3, rng=rng, normalize=False)
        np.testing.assert_array_equal(mdp.nu[:, 0, 8:], alpha)
        np.testing.assert_array_equal(mdp.theta[:, 8], rh / 2.0)
    assert synthetic_linear_mdp().name == "SyntheticLinearMDP(seed=0, bit_order=msb)"


@pytest.mark.parametrize("factory,kwargs", [(random_tabular_mdp, {"n_states": 3, "n_actions": 2, "horizon": 2}),
                                            (synthetic_linear_mdp, {"horizon": 3})])
def test_seed_is_a_deprecated_alias(factory, kwargs):
    with pytest.warns(DeprecationWarning, match=rf"{factory.__name__}\(seed=\.\.\.\) is deprecated.*use rng="):
        old = factory(**kwargs, seed=5)
    new = factory(**kwargs, rng=5)
    np.testing.assert_array_equal(old.transitions, new.transitions)
    np.testing.assert_array_equal(old.rewards, new.rewards)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # rng= alone warns about nothing
        factory(**kwargs, rng=5)
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidParameterError, match="give only rng"):
        factory(**kwargs, seed=5, rng=6)
    with pytest.raises(InvalidParameterError, match="'rng' parameter"):
        factory(**kwargs, rng=-1)


@pytest.mark.parametrize("env_id,factory", [("privrl/RandomTabularMDP-v0", random_tabular_mdp),
                                            ("privrl/SyntheticLinearMDP-v0", synthetic_linear_mdp)])
def test_gymnasium_ids_take_rng(env_id, factory):
    env = gym.make(env_id, rng=3)
    np.testing.assert_array_equal(env.unwrapped.model.P, factory(rng=3).to_tabular().P)
    default = gym.make(env_id)
    assert not np.array_equal(default.unwrapped.model.P, env.unwrapped.model.P)
    with pytest.warns(DeprecationWarning):
        old = gym.make(env_id, seed=3)
    np.testing.assert_array_equal(old.unwrapped.model.P, env.unwrapped.model.P)
