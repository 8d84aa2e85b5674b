"""Planning Private-LinOpt (privrl.linear_mixture.plan): the noise is the learner's own plan at the
end of the run, and more episodes or a larger budget make it useful."""

from __future__ import annotations

import math

import pytest

from privrl import LinOptPO, LinOptVI, PrivacyBudget, plan
from privrl.errors import InvalidParameterError
from privrl.linear_mixture import calibration as cal

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize(("name", "cls", "params"), [("linopt-vi", LinOptVI, {}),
                                                    ("linopt-po", LinOptPO, {"privatizer": "local"}),
                                                    ("linopt-vi", LinOptVI, {"counter": "tree"})])
def test_the_noise_is_the_learners_noise_plan(name, cls, params):
    p = plan(name, n=1000, horizon=5, features=8, reward_features=4, budget=BUDGET, params=params, knobs=False)
    est = cls(budget=BUDGET, n_episodes=1000, **params)
    noise = est.noise_plan_for(5, 8, 4)
    M = noise.n_noise_terms
    r2 = p.row("r2")
    assert r2.noise_std == pytest.approx(math.sqrt(M) * float(noise.std[3].max()))
    assert r2.signal == pytest.approx(1000 * 2.0 / (4 * 2.0))                  # K·Δ/(4√d2), Δ = 2, d2 = 4
    r1 = p.row("r1")
    upsilon = cal.upsilon_monte_carlo if est.knobs()["upsilon"] == "monte_carlo" else cal.upsilon_theory
    assert r1.noise_std == pytest.approx(float(upsilon(float(noise.std[2].max()), n_noise_terms=M, dim=4,
                                                       n_episodes=1000, horizon=5, alpha=0.05)))
    assert r1.signal == 1000 / 4


def test_more_episodes_and_a_larger_budget_help():
    base = {"n": 1000, "horizon": 5, "features": 8, "knobs": False}
    assert plan("linopt-vi", budget=BUDGET, **base).verdict == "hopeless"
    more = plan("linopt-vi", budget=BUDGET, **{**base, "n": 10**6})
    assert more.ratio < plan("linopt-vi", budget=BUDGET, **base).ratio
    assert plan("linopt-vi", epsilon=1e3, delta=1e-5, **base).verdict == "useful"


def test_no_privatizer_is_nothing_to_plan():
    """privatizer 'none' needs an infinite budget, which a plan refuses: the learner's own message."""
    with pytest.raises(InvalidParameterError, match="'budget' parameter of LinOptVI must be an infinite budget"):
        plan("linopt-vi", n=10, horizon=3, features=2, budget=BUDGET, params={"privatizer": "none"}, knobs=False)
