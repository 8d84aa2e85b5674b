"""Gymnasium toy-text environments in every tabular offline algorithm (issue #13 §2, API side)."""

import numpy as np
import pytest

from privrl import InvalidDataError, InvalidParameterError, PrivacyBudget
from privrl.envs.random_tabular import covering_behaviour_policy
from privrl.envs.tabular import TabularMDP, from_gymnasium_toy_text
from privrl.offline import APVI, DPAPVI, PEVI, VAPVI

gym = pytest.importorskip("gymnasium")
H = 20


@pytest.fixture(scope="module")
def frozenlake():
    model = from_gymnasium_toy_text(gym.make("FrozenLake-v1"), horizon=H)
    # terminal states are absorbing with reward 0 in the model, so the same MDP without the
    # terminal mask yields fixed-horizon episodes (what padding with absorbing steps produces)
    padded = TabularMDP(model.P, model.r, horizon=H, initial=model.initial)
    behaviour = covering_behaviour_policy(model.optimal_policy(), model.n_actions)
    data = padded.sample(behaviour, 5000, rng=0)
    return model, data


def test_every_tabular_algorithm_runs_on_frozenlake(frozenlake):
    model, data = frozenlake
    assert data.horizon == H and data.n_episodes == 5000
    v_star = model.value(model.optimal_policy())
    trivial = v_star - model.value(np.zeros((H, model.n_states), dtype=int))
    gaps = {}
    for name, est in [("APVI", APVI(constants="practical")),
                      ("DPAPVI", DPAPVI(budget=PrivacyBudget(rho=10.0), constants="practical")),
                      ("PEVI", PEVI()), ("VAPVI", VAPVI(split=False, C=0.01))]:
        est.fit(data, model, rng=1)          # the model gives the public reward / one-hot features
        assert est.policy_.shape == (H, model.n_states)
        gaps[name] = v_star - model.value(est.policy_)
        assert gaps[name] >= -1e-12
    # every algorithm learns from 5000 episodes of 0.5·optimal + 0.5·uniform: far better than action 0
    assert max(gaps.values()) < 0.5 * trivial, (gaps, trivial)
    dp = DPAPVI(budget=PrivacyBudget(rho=10.0), constants="practical").fit(data, model, rng=1)
    assert dp.privacy_ledger_.zcdp_rho() == pytest.approx(10.0, rel=1e-8)


def test_variable_length_episodes_are_refused_with_the_fix(frozenlake):
    model, _ = frozenlake
    raw = model.sample(np.full((16, 4), 0.25), 50, rng=0)      # episodes end in holes / the goal
    assert raw.horizon is None
    for est in (APVI(), DPAPVI(budget=PrivacyBudget(rho=1.0)), PEVI(), VAPVI()):
        with pytest.raises(InvalidDataError, match=r"fixed-horizon data .*pad episodes that end in a terminal state"):
            est.fit(raw, model, rng=0)


def test_discounted_model_and_bad_rewards_are_refused(frozenlake):
    _, data = frozenlake
    discounted = from_gymnasium_toy_text(gym.make("FrozenLake-v1"), gamma=0.9)
    with pytest.raises(InvalidParameterError, match="'reward' parameter of APVI must be an episodic model"):
        APVI().fit(data, discounted)
    cliff = from_gymnasium_toy_text(gym.make("CliffWalking-v1"), horizon=H)
    with pytest.raises(InvalidParameterError, match=r"'reward' parameter of DPAPVI must be rewards in \[0, 1\]"):
        DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(data, cliff, rng=0)
    with pytest.raises(InvalidDataError, match="horizon 20 but the public model"):
        APVI().fit(data, from_gymnasium_toy_text(gym.make("FrozenLake-v1"), horizon=10))
