"""privrl.planning: the verdict thresholds, the knob searches, the inputs a planner reads and the
one-line errors of privrl.plan (the families' planning functions are tested in their folders)."""

from __future__ import annotations

import math

import pytest

import privrl
from privrl import PrivacyBudget, registry
from privrl.errors import InvalidParameterError
from privrl.planning import (
    HOPELESS,
    USEFUL,
    Assessment,
    Planner,
    Public,
    Released,
    all_planners,
    get_planner,
    largest_useful,
    plan,
    smallest_useful,
    verdict,
)

CLINIC = {"n": 10**5, "states": 750, "actions": 25, "horizon": 20}


def test_the_verdict_thresholds():
    assert (USEFUL, HOPELESS) == (0.1, 0.5)
    assert [verdict(r) for r in (0.0, 0.1, 0.1001, 0.4999, 0.5, 7.0, math.inf, math.nan)] == [
        "useful", "useful", "marginal", "marginal", "hopeless", "hopeless", "hopeless", "hopeless"]
    row = Released("x", "a statistic", noise_std=2.0, signal=10.0, basis="by assumption")
    assert row.ratio == 0.2 and row.verdict == "marginal"
    assert Released("x", "", 1.0, 0.0, "").ratio == math.inf
    assert Released("x", "", 0.0, 0.0, "").ratio == 0.0


def test_the_knob_searches_find_the_boundary():
    """smallest_useful / largest_useful on a known ratio: the answer sits on the 0.1 boundary."""
    ratio = lambda x: 7.0 / x  # noqa: E731 - useful from x = 70 on
    assert smallest_useful(ratio, 3.0, 1e6, integer=True) == 70.0
    assert smallest_useful(ratio, 1000.0, 1e6, integer=True) == 70.0   # already useful: searched down
    assert smallest_useful(ratio, 3.0, 50.0, integer=True) is None
    eps = smallest_useful(ratio, 1.0, 1e3, integer=False)
    assert 70.0 <= eps <= 70.0 * 1.01
    assert largest_useful(lambda g: g / 100.0, 750) == 10
    assert largest_useful(lambda g: g / 100.0, 5) == 5
    assert largest_useful(lambda g: 1.0, 750) is None


def test_every_private_estimator_family_registers_planners():
    names = set(all_planners())
    assert {"dp-apvi", "dp-vapvi", "linopt-vi", "linopt-po", "dp-q-learning"} <= names
    for name, planner in all_planners().items():
        assert getattr(privrl, planner.estimator).__name__ == planner.estimator, name
    assert get_planner("DPAPVI") is get_planner("dp-apvi") is get_planner(privrl.DPAPVI)


def test_the_plan_is_the_python_object_of_the_table():
    p = plan("dp-apvi", epsilon=1.0, delta=1e-6, knobs=False, **CLINIC)
    assert p.verdict == verdict(p.ratio) and p.ratio == max(r.ratio for r in p.rows)
    d = p.to_dict()
    assert d["verdict"] == p.verdict and [r["name"] for r in d["released"]] == ["n_sa", "n_sas'"]
    assert d["public"] == {**CLINIC, "budget": {"epsilon": 1.0, "delta": 1e-6}}
    text = p.text()
    for r in p.rows:
        assert r.name in text and r.basis in text
    assert f"verdict: {p.verdict.upper()}" in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"epsilon": 1.0, "features": 3}, "does not read 'features'"),
    ({"epsilon": 1.0, "horizon": None}, "needs 'horizon'"),
    ({}, "needs a budget"),
    ({"epsilon": -1.0}, "'epsilon' parameter of PrivacyBudget"),
    ({"epsilon": math.inf}, "a finite budget"),
    ({"epsilon": 1.0, "rho": 1.0}, "'rho' parameter of plan dp-apvi"),
    ({"epsilon": 1.0, "n": 0}, "'n' parameter of plan dp-apvi must be an int in [1, inf)"),
    ({"epsilon": 1.0, "groups": 800}, "'groups' parameter of plan dp-apvi must be at most the number of states"),
    ({"epsilon": 1.0, "params": {"calibration": "bad"}}, "'calibration' parameter of DPAPVI"),
    ({"epsilon": 1.0, "params": {"budget": 1}}, "'params' parameter of plan dp-apvi"),
])
def test_bad_inputs_are_one_line_errors(kwargs, message):
    inputs = {**CLINIC, **kwargs}
    inputs = {k: v for k, v in inputs.items() if v is not None}
    with pytest.raises(InvalidParameterError) as info:
        plan("dp-apvi", knobs=False, **inputs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_an_unknown_algorithm_lists_the_known_ones():
    with pytest.raises(InvalidParameterError, match=r"Unknown plan algorithm 'nope'\. Known: .*dp-apvi"):
        plan("nope", n=1, epsilon=1.0)


def test_a_planner_refuses_a_budget_its_estimator_refuses():
    with pytest.raises(InvalidParameterError, match="delta > 0 or a rho budget"):
        plan("dp-vapvi", n=100, horizon=5, features=3, epsilon=1.0, knobs=False)


def test_a_family_adds_a_planner_through_the_registry():
    """A planner registered under kind 'plan' is found by name and by its estimator's name."""
    def evaluate(pub: Public) -> Assessment:
        return Assessment((Released("mean", "a mean", 1.0 / pub.n, 1.0, "the range 1"),))

    planner = Planner("test-mean", "DPLSW", "a mean", evaluate, required=("n",))
    store = registry.storage("plan")
    try:
        registry.register("plan", planner.name, planner)
        p = plan("test-mean", n=5, epsilon=1.0)
        assert p.ratio == 0.2 and p.verdict == "marginal"
        assert p.knob("n").value == 10 and p.knob("n").ratio == 0.1
        assert p.knob("epsilon").value is None   # the budget does not change this noise
        assert isinstance(p.public["budget"], dict) and PrivacyBudget.from_dict(p.public["budget"]).epsilon == 1.0
    finally:
        store.pop("test-mean", None)
