"""route="auto" on DP-APVI and APVI: resolved from public quantities only (n, S, A, H, the budget,
the candidates' sizes), reported in route_, the same ledger as the explicit route, candidate lists
refused without it, and the command line's --route auto with several --state-groups."""

import numpy as np
import pytest

from offline.clinic_cases import quiet
from privrl import InvalidParameterError, PrivacyBudget
from privrl.offline import APVI, DPAPVI
from privrl.offline.routes import ROUTE_KEYS

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-6)


def _candidates(model):
    return [model.groups, np.arange(model.n_states) // 13]


def _explicit(route):
    return dict(route)


def test_auto_resolves_from_public_sizes_only(clinic):
    """Two datasets of the same sizes (one from a uniformly random policy) resolve to the same route,
    and count_noise resolves it before any data: the choice reads n, S, A, H, the budget and the
    candidates' sizes, never the data."""
    model, data = clinic
    other = model.sample(np.full((model.n_states, model.n_actions), 1.0 / model.n_actions), data.n_episodes,
                         rng=7, pad_to_horizon=6)
    a = quiet(lambda: DPAPVI(budget=BUDGET, route="auto", state_groups=_candidates(model)).fit(data, model, rng=0))
    b = quiet(lambda: DPAPVI(budget=BUDGET, route="auto", state_groups=_candidates(model)).fit(other, model, rng=0))
    assert set(ROUTE_KEYS) <= set(a.route_) and a.route_["baseline"] == "logging"    # auto is the safe route
    for key in ROUTE_KEYS:
        assert np.array_equal(a.route_[key], b.route_[key]) if key == "state_groups" else a.route_[key] == b.route_[key]
    before = DPAPVI(budget=BUDGET, route="auto", state_groups=_candidates(model)).count_noise(6, model.n_states, 5,
                                                                                           data.n_episodes)
    explicit = DPAPVI(budget=BUDGET, **_explicit(a.route_)).count_noise(6, model.n_states, 5, data.n_episodes)
    assert before == explicit


@pytest.mark.parametrize("budget", [PrivacyBudget(epsilon=1.0, delta=1e-6), PrivacyBudget(epsilon=1.0),
                                    PrivacyBudget(rho=0.5)])
def test_auto_ledger_equals_the_explicit_route(clinic, budget):
    model, data = clinic
    auto = quiet(lambda: DPAPVI(budget=budget, route="auto", state_groups=_candidates(model)).fit(data, model, rng=3))
    explicit = quiet(lambda: DPAPVI(budget=budget, **_explicit(auto.route_)).fit(data, model, rng=3))
    assert auto.privacy_ledger_.events == explicit.privacy_ledger_.events
    assert auto.privacy_spent() == explicit.privacy_spent() <= budget.epsilon if budget.epsilon else True
    assert np.array_equal(auto.policy_, explicit.policy_)


def test_auto_follows_the_plan_across_sizes(clinic):
    """Few episodes at ε = 1: a pooled grouped route (the states' counts are noise); all 3000 at ε = 1:
    still the finer grouping, pooled and capped — the states' transition cells are too thin to clear
    the 3σ cell threshold, so the safe baseline would support almost no move (measured on this task,
    5 seeds: +0.000 per state against +0.018 on the groups); at ε = 10 the states, pooled and capped
    (+0.025, the groups +0.024); deterministic."""
    model, data = clinic

    def route(episodes, seed, epsilon=1.0):
        est = DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=1e-6), route="auto", constants="practical",
                     state_groups=_candidates(model))
        return quiet(lambda: est.fit(data.subset(np.arange(episodes)), model, rng=seed)).route_

    few = [route(300, s) for s in (0, 1)]
    assert few[0]["stationary"] and few[0]["state_groups"] is not None
    assert all(np.array_equal(few[0]["state_groups"], r["state_groups"]) for r in few)
    finest = max(_candidates(model), key=lambda g: int(g.max()))
    grouped = route(3000, 0)
    assert np.array_equal(grouped["state_groups"], finest)
    assert {k: grouped[k] for k in ROUTE_KEYS if k != "state_groups"} == {
        "stationary": True, "max_visits": 1, "cell_threshold": 3.0, "fallback": "behaviour"}
    chosen = route(3000, 0, epsilon=10.0)
    assert {k: chosen[k] for k in ROUTE_KEYS} == {"state_groups": None, "stationary": True, "max_visits": 1,
                                                  "cell_threshold": 3.0, "fallback": "behaviour"}
    # per state, the finest candidate grouping is the coarse level of the estimated logging policy
    assert chosen["baseline"] == "logging" and np.array_equal(chosen["baseline_groups"], finest)
    apvi = APVI(route="auto", state_groups=_candidates(model)).fit(data, model)
    assert set(ROUTE_KEYS) - {"cell_threshold"} <= apvi.route_.keys()          # APVI has no threshold
    assert "cell_threshold" not in apvi.route_
    assert np.array_equal(APVI(**apvi.route_).fit(data, model).policy_, apvi.policy_)


def test_candidate_lists_are_refused_without_auto(clinic):
    model, data = clinic
    for est in (DPAPVI(budget=BUDGET, state_groups=_candidates(model)), APVI(state_groups=_candidates(model))):
        with pytest.raises(InvalidParameterError, match="one \\(n_states,\\) array unless route=.auto."):
            est.fit(data, model, rng=0)
    with pytest.raises(InvalidParameterError, match="'route' parameter of DPAPVI"):
        DPAPVI(budget=BUDGET, route="best").fit(data, model, rng=0)


def test_command_line_route_auto(clinic, tmp_path):
    from privrl.cli import main

    model, data = clinic
    path = tmp_path / "data.npz"
    data.save(path)
    g1, g2 = tmp_path / "g1.npy", tmp_path / "g2.npy"
    np.save(g1, _candidates(model)[0])
    np.save(g2, _candidates(model)[1])
    logged = ["--reward", "logged", "--F-max", "1"]
    out = tmp_path / "out"
    code = main(["fit", "dp-apvi", "--data", str(path), *logged, "--epsilon", "1", "--delta", "1e-6", "--route",
                 "auto", "--state-groups", str(g1), str(g2), "--seed", "0", "--out", str(out)])
    assert code == 0
    text = " ".join(p.read_text() for p in out.rglob("*.json"))
    assert '"route"' in text and '"candidate"' in text
    assert main(["fit", "dp-apvi", "--data", str(path), *logged, "--epsilon", "1", "--state-groups", str(g1),
                 str(g2), "--seed", "0"]) != 0
