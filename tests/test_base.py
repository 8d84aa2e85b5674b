"""privrl.base.Estimator: parameters, fitted state, privacy queries."""

import math

import pytest
from dp_accounting import GaussianDpEvent

from privrl.base import Estimator, check_is_fitted
from privrl.errors import InvalidParameterError, NotFittedError
from privrl.privacy import Ledger, Neighboring, PrivacyBudget, PrivacyUnit


class Mean(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), sigma=2.0):
        self.budget = budget
        self.sigma = sigma

    def fit(self):
        self.privacy_ledger_ = Ledger([GaussianDpEvent(self.sigma)] * 4)
        return self


class Plain(Estimator):
    def __init__(self, *, k=3):
        self.k = k

    def fit(self):
        self.privacy_ledger_ = Ledger()
        return self


def test_get_set_params_and_repr():
    est = Mean(sigma=3.0)
    assert est.get_params() == {"budget": PrivacyBudget(epsilon=1.0, delta=1e-5), "sigma": 3.0}
    assert est.set_params(sigma=4.0) is est and est.sigma == 4.0
    assert repr(est) == "Mean(budget=PrivacyBudget(epsilon=1.0, delta=1e-05), sigma=4.0)"
    with pytest.raises(InvalidParameterError, match=r"The 'sgma' parameter of Mean does not exist: parameter names must be one of \['budget', 'sigma'\]. Got sgma=1.0 instead."):
        est.set_params(sgma=1.0)


def test_not_fitted():
    with pytest.raises(NotFittedError, match=r"This Mean instance is not fitted yet: call 'fit' before using 'privacy_ledger_'"):
        Mean().privacy_spent(1e-5)
    with pytest.raises(AttributeError):  # NotFittedError is an AttributeError too
        check_is_fitted(Mean(), "theta_")
    est = Mean().fit()
    assert check_is_fitted(est, "privacy_ledger_") is est.privacy_ledger_


def test_privacy_spent_reads_the_ledger():
    est = Mean(sigma=2.0).fit()
    assert est.is_private
    assert est.privacy_spent(1e-5) == pytest.approx(Ledger([GaussianDpEvent(1.0)]).epsilon(1e-5), rel=1e-12)
    assert est.privacy_spent(1e-5, accountant="rdp") > est.privacy_spent(1e-5)


def test_non_private_estimators_report_infinity():
    assert Plain().fit().privacy_spent(1e-5) == math.inf and not Plain().is_private
    inf = Mean(budget=PrivacyBudget.non_private()).fit()
    assert not inf.is_private and inf.privacy_spent(1e-5) == math.inf
    assert Mean(budget=PrivacyBudget(rho=math.inf)).is_private is False
