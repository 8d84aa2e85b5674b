"""The noise-dominated steps' UtilityWarning of DP-BC, DP-IQL and DP-TD3+BC (privrl.deep_offline._utility): it
fires exactly when ``privrl plan``'s verdict on the same public inputs is hopeless, and says what the plan says.

The public inputs are chosen on both sides of the threshold: one step (q = 1, T = 1: no subsampling, z ≈ 3.7 at
ε = 1, δ = 1e-5) of networks with one hidden layer of 4 units, so that the noise norm ``z f C √P`` crosses the
largest clipped sum ``q n C`` between the two sizes n of each learner."""

import re
import warnings

import numpy as np
import pytest

from privrl.deep_offline import DPBC, DPIQL, DPTD3BC
from privrl.deep_offline._utility import HOPELESS_STEP
from privrl.deep_offline.continuous_data import pendulum_dataset
from privrl.deep_offline.datasets import cartpole_dataset
from privrl.errors import UtilityWarning
from privrl.planning import plan
from privrl.privacy import PrivacyBudget

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
ONE_STEP = dict(hidden=(4,), n_steps=1, sampling_rate=1.0)
TD3 = dict(ONE_STEP, max_action=2.0, policy_delay=1)     # every step an actor step (sensitivity √2 C)
#: (estimator, planner, its parameters, data of n trajectories, features, actions, n hopeless, n marginal)
LEARNERS = {
    "dp-bc": (DPBC, ONE_STEP, lambda n: cartpole_dataset(n, max_steps=5, rng=0), 4, 2, 20, 30),
    "dp-iql": (DPIQL, ONE_STEP, lambda n: cartpole_dataset(n, max_steps=5, rng=0), 4, 2, 30, 40),
    "dp-td3bc": (DPTD3BC, TD3, lambda n: pendulum_dataset(n, max_steps=5, rng=0), 3, 1, 30, 45),
}


def _fit_warnings(est, data):
    """The noise-dominated UtilityWarnings of one fit (other warnings are not this test's point)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(data, rng=0)
    return [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)
            and "noise-dominated" in str(w.message)]


def _plan(name, n):
    _cls, params, _data, features, actions, _low, _high = LEARNERS[name]
    return plan(name, budget=BUDGET, params=params, n=n, features=features, actions=actions, knobs=False)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("side", ["hopeless", "marginal"])
def test_the_fit_warns_exactly_when_the_plan_of_the_same_public_inputs_is_hopeless(name, side):
    cls, params, data_of, _f, _a, n_hopeless, n_marginal = LEARNERS[name]
    n = n_hopeless if side == "hopeless" else n_marginal
    p = _plan(name, n)
    assert p.verdict == side                                     # the inputs sit on the intended side
    messages = _fit_warnings(cls(budget=BUDGET, **params), data_of(n))
    if side == "marginal":
        assert messages == []
        return
    assert len(messages) == 1
    ratio = float(re.search(r"is ([0-9.]+)x the summed clipped signal", messages[0]).group(1))
    assert ratio == pytest.approx(p.ratio, rel=5e-3)             # the plan's worst row, printed to 3 digits
    assert f"q n = {n:g} trajectories" in messages[0] and f"privrl plan {name}" in messages[0]


def test_the_warning_states_the_ratio_and_the_data_that_would_bring_it_below_the_clipped_sum():
    p = _plan("dp-bc", 20)
    (row,) = p.rows
    need = int(np.floor(20 * row.ratio / HOPELESS_STEP)) + 1
    (message,) = _fit_warnings(DPBC(budget=BUDGET, **ONE_STEP), cartpole_dataset(20, max_steps=5, rng=0))
    assert message.startswith("DPBC: noise-dominated DP-SGD steps")
    assert f"({row.noise_std:.3g}) is {row.ratio:.3g}x the summed clipped signal" in message
    assert "unlikely to beat the behaviour policy" in message
    assert f"n >= {need} trajectories ({need / 20:.3g}x the data)" in message
    assert row.ratio * 20 / need < HOPELESS_STEP <= row.ratio * 20 / (need - 1)   # the least such n


def test_a_useful_plan_fits_without_the_warning():
    n = 250
    assert _plan("dp-bc", n).verdict == "useful"
    assert _fit_warnings(DPBC(budget=BUDGET, **ONE_STEP), cartpole_dataset(n, max_steps=5, rng=0)) == []


def test_an_infinite_budget_never_warns():
    est = DPBC(budget=PrivacyBudget.non_private(), **ONE_STEP)
    assert _fit_warnings(est, cartpole_dataset(3, max_steps=5, rng=0)) == []


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_the_planned_parameter_counts_are_those_of_the_fitted_networks(name):
    cls, params, data_of, features, actions, n, _ = LEARNERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the hopeless warning: not this test's point
        est = cls(budget=BUDGET, **params).fit(data_of(n), rng=0)
    planned = dict(cls.step_networks(features, actions, params["hidden"]))
    if name == "dp-bc":
        fitted = {"": est.params_.size}
    elif name == "dp-iql":
        fitted = {"Q": est.q_params_.size, "V": est.v_params_.size, "policy": est.params_.size}
    else:
        fitted = {"critic": est.q_params_.size, "actor": est.params_.size}
    assert planned == fitted
