"""LinOpt-PO's 'still uniform play' UtilityWarning (post-processing of its last policy): on Zhou's
hard instance the action gaps are O(1/√(HK)), the mirror-descent steps on the noisy Q estimates
cancel out and the learner plays as the uniform (stuck) learner; on a random mixture it moves."""

import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.bench.instances import policy_regret
from privrl.envs.linear_mixture import hard_instance, random_mixture
from privrl.errors import UtilityWarning
from privrl.linear_mixture import LinOptPO, LinOptVI
from privrl.linear_mixture.engine import NEAR_UNIFORM_TV

K = 300
MSG = "of uniform play at every step and state"


def _fit(est, model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        est.fit(model, rng=0)
    return est, [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]


def test_po_stuck_at_uniform_play_warns():
    model = hard_instance(5, 6, K, rng=0)
    est, msgs = _fit(LinOptPO(n_episodes=K, budget=PrivacyBudget(1.0, 1e-4), constants="practical"), model)
    assert est.near_uniform_ and est.policy_tv_from_uniform_ <= NEAR_UNIFORM_TV
    assert any(MSG in m for m in msgs)
    uniform = np.full((model.horizon, model.n_states, model.n_actions), 1.0 / model.n_actions)
    assert est.regret_.sum() == pytest.approx(K * policy_regret(model, uniform), rel=0.02)   # the stuck learner's


def test_po_that_moves_and_vi_are_quiet():
    model = random_mixture(rng=0)
    est, msgs = _fit(LinOptPO(n_episodes=K, budget=PrivacyBudget(10.0, 1e-4), constants="practical"), model)
    assert not est.near_uniform_ and est.policy_tv_from_uniform_ > 2 * NEAR_UNIFORM_TV
    assert not any(MSG in m for m in msgs)
    vi, msgs = _fit(LinOptVI(n_episodes=K, budget=PrivacyBudget(1.0, 1e-4), constants="practical"),
                    hard_instance(5, 6, K, rng=0))
    assert not vi.near_uniform_ and np.isnan(vi.policy_tv_from_uniform_) and not any(MSG in m for m in msgs)
