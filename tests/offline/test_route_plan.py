"""The route plan of DP-APVI (privrl.offline.routes, privrl plan dp-apvi): every route's sensitivity
and typical count, the ratio between routes as derived, the threshold / fallback / penalty cases,
the non-public group quality, and no nonsense knob."""

import math

import pytest

from privrl import DPAPVI, PrivacyBudget, plan
from privrl.offline.routes import (
    Route,
    Shape,
    candidate_routes,
    capped_visits,
    choose_route,
    plan_route,
    rank_routes,
    support_share,
)
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


def _real_size_plans(n, eps, support_count=10.0):
    """Every candidate route at the real task's public sizes (S = 700, A = 25, H = 20, 22 groups), as
    route="auto" sees them: no assumption stated, the safe baseline with SPIBB's N∧ = ``support_count``."""
    est = DPAPVI(budget=PrivacyBudget(epsilon=eps, delta=1e-6), constants="practical")
    p = est._routes()
    noise_of = est._route_noise(p, 20, 700, 25, n)
    return {rp.route.name: rp for rp in rank_routes(noise_of, Shape(n, 700, 25, 20), candidate_routes([22]), 0.25,
                                                    support_count, c2=0.0, delta_fail=0.05)}


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_auto_prefers_the_grouped_pooled_route_at_the_real_size(eps):
    """n = 10⁵ on the real task's sizes: per state the pairs' transition cells (n_sa/k against 3σ_sas)
    are too thin for the safe baseline's support, so the per-state pooled route moves almost nothing
    (measured on the grid at ε = 10: −0.00 to 0.11 of the best gain) — the plan ranks the grouped
    pooled capped route first at ε = 1 and at ε = 10 (no longer the states at ε = 10)."""
    est = DPAPVI(budget=PrivacyBudget(epsilon=eps, delta=1e-6), constants="practical")
    p = est._routes()
    chosen = choose_route(est._route_noise(p, 20, 700, 25, 10**5), Shape(10**5, 700, 25, 20), [22], 0.25,
                          support_count=10.0, c2=0.0, delta_fail=0.05)
    assert chosen.route.name == "groups0[22]/pooled/mv1/3sigma/behaviour"
    states = _real_size_plans(10**5, eps)["states/pooled/mv1/3sigma/behaviour"]
    assert states.support < 0.25 and states.verdict in ("marginal", "hopeless")
    assert "support" in states.reason or "logging policy" in states.reason


def test_modelled_support_does_not_fall_as_epsilon_or_n_grow():
    """The support (and so what the route can move) is non-decreasing in ε and in n for every route."""
    epsilons = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0)
    by_eps = [_real_size_plans(10**5, e) for e in epsilons]
    by_n = [_real_size_plans(n, 10.0) for n in (10**3, 10**4, 10**5, 10**6)]
    for name in by_eps[0]:
        for series in (by_eps, by_n):
            support = [plans[name].support for plans in series]
            movable = [plans[name].movable for plans in series]
            assert all(a <= b + 1e-12 for a, b in zip(support, support[1:])), (name, support)
            assert all(a <= b + 1e-12 for a, b in zip(movable, movable[1:])), (name, movable)
    assert by_eps[0]["groups0[22]/pooled/mv1/3sigma/behaviour"].support < \
        by_eps[-1]["groups0[22]/pooled/mv1/3sigma/behaviour"].support


def test_support_share_is_the_derived_expectation():
    """exp(−max(t, k·c·σ)/m) for a stated k; between the k = 1 and k = S_r values when k is unknown;
    0 without visits; without the baseline the ranking and the share ignore it."""
    m, t, floor = 100.0, 50.0, 15.0
    assert support_share(m, t, 0.0, None, 700) == pytest.approx(math.exp(-t / m))
    assert support_share(m, t, floor, 10, 700) == pytest.approx(math.exp(-150.0 / m))
    assert support_share(m, t, floor, 2, 700) == pytest.approx(math.exp(-t / m))
    unknown = support_share(m, t, floor, None, 700)
    assert math.exp(-floor * 700 / m) < unknown < math.exp(-t / m)
    assert support_share(0.0, t, floor, None, 700) == 0.0
    plain = _real_size_plans(10**5, 10.0, support_count=None)["states/pooled/mv1/3sigma/behaviour"]
    assert not plain.baseline and plain.movable == plain.kept and plain.verdict == "useful"


def test_the_plan_reports_the_baselines_support():
    """privrl plan dp-apvi with baseline='logging': the notes give each route's modelled support, and
    the per-state pooled route at n = 10⁵, ε = 10 is not useful (it would be on noise alone)."""
    sizes = {**REAL, "groups": None, "visits": None, "admissible": None, "next_states": None}
    route = {**PRACTICAL, "stationary": True, "max_visits": 1}
    safe = plan("dp-apvi", epsilon=10.0, delta=1e-6, params={**route, "baseline": "logging"}, knobs=False, **sizes)
    plain = plan("dp-apvi", epsilon=10.0, delta=1e-6, params=route, knobs=False, **sizes)
    assert plain.verdict == "useful" and safe.verdict != "useful"
    assert "modelled support of the safe baseline" in safe.text()
    assert "modelled support of the safe baseline" not in plain.text()
