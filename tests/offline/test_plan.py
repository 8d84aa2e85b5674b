"""Planning DP-APVI and DP-VAPVI (privrl.offline.plan): the noise is the estimators' own plan, the
typical values follow the stated assumptions, and the verdict moves the right way with n, ε and
public aggregation."""

from __future__ import annotations

import math

import pytest

from privrl import DPAPVI, DPVAPVI, PrivacyBudget, plan
from privrl.errors import InvalidParameterError
from privrl.planning import USEFUL, verdict

CLINIC = {"n": 10**5, "states": 750, "actions": 25, "horizon": 20}
BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize("params", [{}, {"constants": "practical"}, {"calibration": "sound"}])
def test_dp_apvi_noise_is_the_estimators_count_noise(params):
    p = plan("dp-apvi", budget=BUDGET, params=params, knobs=False, **CLINIC)
    noise = DPAPVI(budget=BUDGET, **params).count_noise(20, 750, 25, 10**5)
    assert (p.row("n_sa").noise_std, p.row("n_sas'").noise_std) == noise.noise_std
    assert p.row("n_sa").signal == 10**5 / (750 * 25) == p.row("n_sas'").signal


def test_dp_apvi_groups_and_next_states_change_the_cells():
    p = plan("dp-apvi", budget=BUDGET, groups=22, next_states=10, knobs=False, **CLINIC)
    noise = DPAPVI(budget=BUDGET).count_noise(20, 22, 25, 10**5)
    assert p.row("n_sa").noise_std == noise.noise_std[0]
    assert p.row("n_sa").signal == 10**5 / (22 * 25)
    assert p.row("n_sas'").signal == pytest.approx(10**5 / (22 * 25 * 10))
    assert "k = 10 next states" in p.row("n_sas'").basis and "22 groups" in p.row("n_sa").basis


def test_dp_apvi_laplace_for_a_pure_budget():
    p = plan("dp-apvi", epsilon=1.0, knobs=False, **CLINIC)
    noise = DPAPVI(budget=PrivacyBudget(epsilon=1.0)).count_noise(20, 750, 25, 10**5)
    assert noise.mechanism == "laplace" and p.row("n_sa").noise_std == noise.noise_std[0]


def test_dp_apvi_verdicts_flip_with_n_and_epsilon():
    """More data and a larger ε move the clinic plan's noise rows from hopeless through marginal to
    useful (the rows' verdict: the route's own verdict also reads the thresholds and penalties)."""
    def at(n: int, eps: float) -> str:
        return verdict(plan("dp-apvi", n=n, states=750, actions=25, horizon=20, epsilon=eps, delta=1e-6,
                            knobs=False).ratio)

    assert [at(n, 1.0) for n in (10**5, 3 * 10**6, 10**7)] == ["hopeless", "marginal", "useful"]
    assert [at(10**5, eps) for eps in (1.0, 30.0, 300.0)] == ["hopeless", "marginal", "useful"]
    ratios = [plan("dp-apvi", n=n, states=750, actions=25, horizon=20, budget=BUDGET, knobs=False).ratio
              for n in (10**3, 10**4, 10**5)]
    assert ratios[0] > ratios[1] > ratios[2]


def test_dp_apvi_knobs_land_on_useful():
    """The knobs search the noise rows (the released counts against their typical values)."""
    p = plan("dp-apvi", budget=BUDGET, **CLINIC)
    assert verdict(p.ratio) == "hopeless"
    n, eps, groups = p.knob("n"), p.knob("epsilon"), p.knob("groups")
    for knob, changed in ((n, {"n": int(n.value)}), (groups, {"groups": int(groups.value)})):
        assert knob.ratio <= USEFUL
        assert plan("dp-apvi", budget=BUDGET, knobs=False, **{**CLINIC, **changed}).ratio <= USEFUL
    assert plan("dp-apvi", budget=BUDGET, knobs=False, **{**CLINIC, "n": int(n.value * 0.95)}).ratio > USEFUL
    more_groups = {**CLINIC, "groups": int(groups.value) + 1}
    assert plan("dp-apvi", budget=BUDGET, knobs=False, **more_groups).ratio > USEFUL
    assert plan("dp-apvi", epsilon=eps.value, delta=1e-6, knobs=False, **CLINIC).ratio <= USEFUL
    assert plan("dp-apvi", epsilon=eps.value / 1.05, delta=1e-6, knobs=False, **CLINIC).ratio > USEFUL


@pytest.mark.parametrize("split", [True, False])
def test_dp_vapvi_noise_is_the_estimators_linear_noise(split):
    p = plan("dp-vapvi", n=10**4, horizon=10, features=8, feature_norm=2.0, rho=1.0, params={"split": split},
             knobs=False)
    noise = DPVAPVI(budget=PrivacyBudget(rho=1.0), feature_norm_bound=2.0, split=split).linear_noise(10, 8)
    K = 5000 if split else 10**4
    gram = p.row("gram")
    assert gram.noise_std == pytest.approx(float(noise.shift[1].max())) and gram.signal == K * 4.0 / 8
    target = p.row("target")
    ratios = noise.std[4] * 4 * math.sqrt(8) / (K * noise.sensitivity[4])
    assert target.ratio == pytest.approx(float(ratios.max()))
    assert plan("dp-vapvi", n=10**7, horizon=10, features=8, rho=1.0, knobs=False).verdict == "useful"


def test_stated_assumptions_set_the_cells():
    """admissible actions A_u: n/(S·A_u) per visited cell of a live step (per step, the live steps L
    do not change it: each carries the n episodes); pooled, the L live steps add up: n·L/(S·A_u)."""
    p = plan("dp-apvi", budget=BUDGET, admissible=4, visits=6, next_states=10, knobs=False, **CLINIC)
    assert p.row("n_sa").signal == pytest.approx(10**5 / (750 * 4))
    pooled = plan("dp-apvi", budget=BUDGET, admissible=4, visits=6, next_states=10, knobs=False,
                  params={"stationary": True}, **CLINIC)
    assert pooled.row("n_sa").signal == pytest.approx(10**5 * 6 / (750 * 4))
    assert p.row("n_sas'").signal == pytest.approx(p.row("n_sa").signal / 10)
    with pytest.raises(InvalidParameterError, match="'visits' parameter of plan dp-apvi must be at most the horizon"):
        plan("dp-apvi", budget=BUDGET, visits=21, knobs=False, **CLINIC)
    with pytest.raises(InvalidParameterError, match="'admissible' parameter of plan dp-apvi must be at most"):
        plan("dp-apvi", budget=BUDGET, admissible=26, knobs=False, **CLINIC)
