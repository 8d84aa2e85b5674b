"""The δ at which ε is reported is decided by one rule (:func:`privrl.privacy.budget.reporting_delta`),
and every caller agrees with it: the estimators' ``privacy_spent()``, the certificate, the experiment
runner's manifest and ``privrl calibrate``'s table."""

from __future__ import annotations

import math

import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent

from privrl.base import Estimator
from privrl.certificate import make_certificate
from privrl.errors import BudgetExceededError
from privrl.experiments.runner import _epsilon_spent
from privrl.experiments.spec import RunResult
from privrl.privacy import Ledger, Neighboring, PrivacyBudget, PrivacyUnit, reporting_delta
from privrl.privacy.budget import DEFAULT_DELTA, PURE_DP_DELTA
from privrl.privacy.calibration import calibration_table


class _Releases(Estimator):
    """Records ``events`` as its releases."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget):
        self.budget = budget

    def fit(self, events):
        self.privacy_ledger_ = Ledger(list(events))
        return self


BUDGETS = {
    "approx": (PrivacyBudget(epsilon=1.0, delta=1e-6), [GaussianDpEvent(20.0)] * 3, 1e-6),
    "pure": (PrivacyBudget(epsilon=1.0), [LaplaceDpEvent(4.0)] * 3, PURE_DP_DELTA),
    "rho": (PrivacyBudget(rho=0.5), [GaussianDpEvent(2.0)] * 4, DEFAULT_DELTA),
}


def test_the_rule():
    assert PURE_DP_DELTA == 0.0 and DEFAULT_DELTA == 1e-5
    for budget, _, delta in BUDGETS.values():
        assert reporting_delta(budget) == budget.reporting_delta == delta
    assert reporting_delta(None) == DEFAULT_DELTA
    assert reporting_delta(PrivacyBudget.non_private()) == PURE_DP_DELTA


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_every_caller_reports_at_the_rule_s_delta(name):
    budget, events, delta = BUDGETS[name]
    est = _Releases(budget=budget).fit(events)
    eps = est.privacy_ledger_.epsilon(delta)
    assert est.privacy_spent() == eps                                   # the estimator
    cert = make_certificate(est, algorithm="R")
    assert cert["delta"] == delta and cert["epsilon_spent"] == pytest.approx(eps, rel=1e-12)   # the certificate
    assert _epsilon_spent(RunResult.from_estimator(est, [])) == (eps, delta)   # the runner's manifest
    if name == "pure":
        assert eps == 3 * 0.25 and cert["guarantee"] == "epsilon-DP"     # ε at δ = 0: the pure ε, exactly
    if budget.epsilon is not None:                                       # privrl calibrate
        mechanism = "laplace" if name == "pure" else "gaussian"
        table = calibration_table(mechanism, budget.epsilon, budget.delta)
        assert table["delta_evaluated"] == delta


def test_a_gaussian_release_is_never_reported_within_a_pure_budget():
    """At δ = 0 a Gaussian release has ε = ∞ (dp-accounting agrees): no certificate is issued."""
    est = _Releases(budget=PrivacyBudget(epsilon=1.0)).fit([GaussianDpEvent(50.0)])
    assert est.privacy_spent() == math.inf
    with pytest.raises(BudgetExceededError, match="spend epsilon = inf"):
        make_certificate(est, algorithm="R")


def test_pure_releases_under_an_approx_budget_report_both():
    est = _Releases(budget=PrivacyBudget(epsilon=1.0, delta=1e-6)).fit([LaplaceDpEvent(2.0)] * 2)
    cert = make_certificate(est, algorithm="R")
    assert cert["guarantee"] == "(epsilon, delta)-DP" and cert["delta"] == 1e-6
    assert cert["epsilon_spent"] <= cert["pure_epsilon"] == 1.0
