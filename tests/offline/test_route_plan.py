"""The route plan of DP-APVI (privrl.offline.routes, privrl plan dp-apvi): every route's sensitivity
and typical count, the ratio between routes as derived, the threshold / fallback / penalty cases,
the non-public group quality, and no nonsense knob."""

import math

import pytest

from privrl import DPAPVI, PrivacyBudget, plan
from privrl.offline.routes import Route, Shape, capped_visits, choose_route, plan_route
from privrl.planning import UNDECIDED

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-6)
REAL = {"n": 10**5, "states": 700, "actions": 25, "horizon": 20, "groups": 22, "visits": 6, "admissible": 4,
        "next_states": 3}
PRACTICAL = {"constants": "practical", "cell_threshold": 3.0, "fallback": "behaviour"}


def _plan(**params):
    return plan("dp-apvi", budget=BUDGET, params={**PRACTICAL, **params}, knobs=False, **REAL)


def test_pooling_multiplies_the_count_by_the_live_steps_and_the_noise_by_the_sensitivity():
    """Pooled / per step: noise/signal ratio = (Δ pooled / Δ per step)·(count per step / count pooled)
    = (√2·H / √(2H))·(1/L) = √H/L; with the cap c = 1 the sensitivity is the per-step one and the ratio
    is 1/κ, κ = the visits an episode keeps (calibration 'sound': σ ∝ Δ exactly)."""
    step, pooled, capped = (_plan(calibration="sound", split_power=0.0, **kw) for kw in
                            ({}, {"stationary": True}, {"stationary": True, "max_visits": 1}))
    H, L, cells = 20, 6, 22 * 4
    assert pooled.row("n_sa").signal == pytest.approx(L * step.row("n_sa").signal)
    assert pooled.row("n_sa").ratio / step.row("n_sa").ratio == pytest.approx(math.sqrt(H) / L)
    kept = capped_visits(L, cells, 1)
    assert 5.5 < kept < L                                        # a few revisits dropped
    assert capped.row("n_sa").ratio / step.row("n_sa").ratio == pytest.approx(1 / kept)
    assert capped.row("n_sas'").ratio / step.row("n_sas'").ratio == pytest.approx(1 / kept)
    noise = DPAPVI(budget=BUDGET, calibration="sound", stationary=True).count_noise(20, 22, 25, 10**5)
    assert pooled.row("n_sa").noise_std == noise.noise_std[0]  # the estimator's own plan


def test_the_plan_ranks_per_step_and_pooled_routes_apart():
    """At the real task's shape, n = 10⁴, ε = 1, 22 groups (stated to describe the dynamics): the
    per-step grouped route is not useful (measured on the grid: −0.23 of the best gain) and the
    pooled, capped one is (0.38): different verdicts, pooled ranked first and recommended."""
    sizes = {**REAL, "n": 10**4}
    step = plan("dp-apvi", budget=BUDGET, params=PRACTICAL, knobs=False, group_quality=1.0, **sizes)
    capped = plan("dp-apvi", budget=BUDGET, params={**PRACTICAL, "stationary": True, "max_visits": 1},
                  knobs=False, group_quality=1.0, **sizes)
    unstated = plan("dp-apvi", budget=BUDGET, params={**PRACTICAL, "stationary": True, "max_visits": 1},
                    knobs=False, **sizes)
    assert capped.verdict == "useful" and step.verdict != "useful"
    assert unstated.verdict == UNDECIDED and "group_quality" in unstated.reason       # groups: not public
    assert step.row("n_sa").ratio > capped.row("n_sa").ratio
    table = [n for n in capped.notes if n.startswith("route ")][1:]
    first = [i for i, line in enumerate(table) if "groups0[22]/pooled/mv1/3sigma/behaviour" in line]
    per_step = [i for i, line in enumerate(table) if "groups0[22]/per-step/3sigma/behaviour" in line]
    assert first and per_step and first[0] < per_step[0]
    assert any(n.startswith("recommended: groups0[22]/pooled/mv1") for n in capped.notes)


def test_low_group_quality_makes_grouped_routes_hopeless_and_the_verdict_names_it():
    p = plan("dp-apvi", budget=BUDGET, params={**PRACTICAL, "stationary": True, "max_visits": 1}, knobs=False,
             group_quality=0.1, **REAL)
    assert p.verdict == "marginal" and "group quality 0.1" in p.reason
    assert "group quality and clone quality are not public" in p.text()


def test_fallbacks_and_penalties():
    """Below its threshold a pair falls back: tie-break is hopeless, behaviour is the clone (undecided
    without clone_quality, and random when the visit counts are noise); theory's privacy penalty
    swamps the values at these sizes."""
    def verdict(n, eps, **params):
        return plan("dp-apvi", epsilon=eps, delta=1e-6, params=params, knobs=False,
                    **{**REAL, "n": n, "groups": None}).verdict

    pooled = {"constants": "practical", "stationary": True, "max_visits": 1, "cell_threshold": 3.0}
    assert verdict(10**5, 1.0, **pooled, fallback="tie-break") == "hopeless"
    assert verdict(10**5, 1.0, **pooled, fallback="behaviour") == UNDECIDED
    assert verdict(10**3, 1.0, **pooled, fallback="behaviour") == "hopeless"          # argmax of noise
    theory = plan("dp-apvi", epsilon=10.0, delta=1e-6, params={"stationary": True, "max_visits": 1},
                  knobs=False, group_quality=1.0, **REAL)
    assert theory.verdict == "hopeless" and "privacy penalty" in theory.reason


def test_the_groups_knob_never_suggests_a_single_group():
    """Where only G = 1 would make the rows useful, the knob says no grouping is enough."""
    params = {"split_power": 0.0, "calibration": "sound"}
    sigma = DPAPVI(budget=BUDGET, **params).count_noise(20, 1, 25, 1000).noise_std[0]
    n = int(math.ceil(sigma * 25 / 0.09))                       # ratio(G = 1) = 0.09, ratio(G = 2) = 0.18
    p = plan("dp-apvi", budget=BUDGET, params=params, n=n, states=50, actions=25, horizon=20)
    knob = p.knob("groups")
    assert knob.value is None and "2 or more" in knob.setting
    assert "at most 1 public groups" not in p.text()


def test_choose_route_is_a_pure_function_of_public_sizes():
    est = DPAPVI(budget=BUDGET, constants="practical")
    p = est._routes()
    shape = Shape(10**5, 700, 25, 20)
    picks = {choose_route(est._route_noise(p, 20, 700, 25, 10**5), shape, [22, 140], 0.25).route for _ in range(3)}
    assert len(picks) == 1
    route = picks.pop()
    assert isinstance(route, Route) and route.stationary and route.max_visits == 1
    one = plan_route(est._route_noise(p, 20, 700, 25, 10**5), shape, route, 0.25)
    assert one.sensitivity == pytest.approx(math.sqrt(40))
