"""privrl.base.Estimator: parameters, fitted state, privacy queries."""

import math
from typing import ClassVar

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
    with pytest.raises(InvalidParameterError, match=r"The 'sgma' parameter of Mean does not exist: parameter names "
                                                    r"must be one of \['budget', 'sigma'\]. Got sgma=1.0 instead."):
        est.set_params(sgma=1.0)


def test_not_fitted():
    with pytest.raises(NotFittedError,
                       match=r"This Mean instance is not fitted yet: call 'fit' before using 'privacy_ledger_'"):
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


# --------------------------------------------------------------------------- declared parameters
from privrl._params import REQUIRED, Param, param  # noqa: E402
from privrl.base import PrivateEstimator  # noqa: E402
from privrl.privacy import ConstantNoise, ScaledNoise  # noqa: E402
from privrl.testing import use_noise  # noqa: E402


class NoisyMean(PrivateEstimator):
    """A private mean of values in [0, 1] (one unit = one value; replace-one sensitivity 1/n)."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"
    scale: float = param("noise scale factor", default=1.0, low=0.0, closed="neither")
    mode: str = param("a mode", default="a", kind="option", options=("a", "b"))

    def fit(self, x, *, rng=None):
        p = self._validated()
        rng = self._fit_rng(rng)
        rel = self._privacy(rng, n_units=len(x))
        from privrl.privacy.calibration import calibrate_gaussian

        std = p["scale"] * calibrate_gaussian(self.budget.epsilon, self.budget.delta, sensitivity=1 / len(x))
        self.mean_ = rel.gaussian(float(np.mean(x)), sensitivity=1 / len(x), std=std)
        return self


import numpy as np  # noqa: E402


def test_declared_params_make_the_constructor():
    import inspect

    sig = inspect.signature(NoisyMean)
    assert list(sig.parameters) == ["budget", "calibration", "secure", "scale", "mode"]
    assert sig.parameters["budget"].default is inspect.Parameter.empty
    assert sig.parameters["calibration"].default == "tight"
    assert all(p.kind == inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    with pytest.raises(TypeError, match="missing required keyword argument"):
        NoisyMean()
    with pytest.raises(TypeError, match="unexpected keyword"):
        NoisyMean(budget=PrivacyBudget(rho=1.0), scal=2.0)
    est = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), scale=2)
    assert est.scale == 2  # stored verbatim; validated in fit


@pytest.mark.parametrize("override,match", [
    ({"scale": 0.0}, r"The 'scale' parameter of NoisyMean must be a float in \(0.0, inf\). Got 0.0 instead."),
    ({"mode": "c"}, r"The 'mode' parameter of NoisyMean must be one of 'a', 'b'. Got 'c' instead."),
    ({"calibration": "loose"}, r"'calibration' parameter of NoisyMean must be one of 'tight', 'sound', 'paper'"),
    ({"secure": "yes"}, r"'secure' parameter of NoisyMean must be a bool"),
    ({"budget": 1.0}, r"'budget' parameter of NoisyMean must be a PrivacyBudget"),
])
def test_validation_comes_from_the_declaration(override, match):
    est = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)).set_params(**override)
    with pytest.raises(InvalidParameterError, match=match):
        est.fit(np.zeros(10), rng=0)


def test_bad_values_of_the_declaration_are_refused():
    for p in NoisyMean.params:
        for bad in p.bad_values():
            with pytest.raises(InvalidParameterError, match=f"'{p.name}'"):
                p.validate(bad, "NoisyMean")
    assert Param("n", REQUIRED, kind="int", low=1).bad_values()[0] == -1


def test_fields_become_params_in_declaration_order_and_leave_the_class():
    assert [p.name for p in NoisyMean.params] == ["budget", "calibration", "secure", "scale", "mode"]
    assert NoisyMean.param("scale") == Param("scale", 1.0, "noise scale factor", low=0.0, closed="neither")
    assert PrivateEstimator.param("budget").required and not NoisyMean.param("calibration").required
    assert not hasattr(NoisyMean, "scale") and not hasattr(PrivateEstimator, "budget")  # values live on instances


def test_a_redeclared_parameter_keeps_its_place_and_takes_the_new_declaration():
    from privrl.base import BUDGET

    def positive_budget(value, name, owner):
        return value

    class Narrow(NoisyMean):
        budget: PrivacyBudget = param(like=BUDGET, help="an (epsilon, delta) budget", check=positive_budget)
        extra: int = param("one more", default=3, kind="int", low=0)

    import inspect

    assert list(inspect.signature(Narrow).parameters) == ["budget", "calibration", "secure", "scale", "mode", "extra"]
    budget = Narrow.param("budget")
    assert (budget.help, budget.check, budget.kind, budget.cli, budget.required) == (
        "an (epsilon, delta) budget", positive_budget, "budget", False, True)
    assert NoisyMean.param("budget").check is None                      # the parent keeps its own
    est = Narrow(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), extra=5)
    assert (est.extra, est.scale) == (5, 1.0)


def test_declarations_the_type_checker_would_read_differently_are_refused():
    from privrl.base import CALIBRATION, Estimator

    with pytest.raises(TypeError, match="sets 'params'"):
        type("Old", (Estimator,), {"params": (Param("lam", 1.0),)})
    with pytest.raises(TypeError, match="needs a type annotation"):
        type("Bare", (Estimator,), {"lam": param("ridge", default=1.0)})
    with pytest.raises(TypeError, match="Labelled.label is annotated but is not a parameter"):
        class Labelled(Estimator):
            label: str = "a constant"
    with pytest.raises(TypeError, match="omit default= for a required parameter"):
        param("ridge", default=REQUIRED)
    with pytest.raises(TypeError, match="needs default="):
        param(like=CALIBRATION)

    class Fine(Estimator):
        label: ClassVar[str] = "a constant"                             # constants are ClassVars
        lam: float = param("ridge", default=1.0)
        calibration: str = CALIBRATION                                  # a shared declaration

    assert [p.name for p in Fine.params] == ["lam", "calibration"] and Fine.label == "a constant"
    assert param(like=CALIBRATION, default="sound").default == "sound"


def test_private_fit_records_every_release_and_spends_the_budget():
    est = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)).fit(np.full(100, 0.5), rng=0)
    assert len(est.privacy_ledger_) == 1
    assert 0.99 <= est.privacy_spent() <= 1.0           # reported at the budget's own δ
    assert est.privacy_spent() == est.privacy_spent(1e-5)


def test_use_noise_injects_constant_and_scaled_noise():
    from privrl.privacy.calibration import calibrate_gaussian

    est = use_noise(NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)), ConstantNoise(1.0))
    est.fit(np.full(10, 0.5), rng=0)
    assert est.mean_[()] == pytest.approx(0.5 + calibrate_gaussian(1.0, 1e-5, sensitivity=0.1))
    base = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)).fit(np.zeros(10), rng=np.random.default_rng(4))
    from privrl.privacy import NumpyNoise

    tenth = use_noise(NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)),
                      ScaledNoise(NumpyNoise(np.random.default_rng(4)), 0.1)).fit(np.zeros(10))
    assert tenth.mean_[()] == pytest.approx(0.1 * base.mean_[()])
    assert tenth.privacy_ledger_ == base.privacy_ledger_  # the claim is unchanged: a broken implementation


def test_secure_refuses_a_seed_and_runs_without_one():
    est = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), secure=True)
    with pytest.raises(InvalidParameterError, match="'rng' parameter of NoisyMean.fit must be None when secure=True"):
        est.fit(np.zeros(10), rng=0)
    pytest.importorskip("opendp")
    assert np.isfinite(est.fit(np.zeros(10)).mean_)


@pytest.mark.parametrize("delta,n,warns", [(0.05, 1000, True), (1e-2, 200, True), (1e-3, 500, False),
                                          (1e-5, 10, False)])
def test_delta_sanity_warning(delta, n, warns):
    import warnings

    from privrl.errors import UtilityWarning

    est = NoisyMean(budget=PrivacyBudget(epsilon=1.0, delta=delta))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(np.zeros(n), rng=0)
    assert any(issubclass(w.category, UtilityWarning) and "delta" in str(w.message) for w in caught) == warns


def test_reporting_delta_is_chosen_in_one_place():
    assert PrivacyBudget(epsilon=1.0, delta=1e-7).reporting_delta == 1e-7
    assert PrivacyBudget(rho=1.0).reporting_delta == PrivacyBudget.DEFAULT_DELTA == 1e-5
    assert PrivacyBudget(epsilon=1.0).reporting_delta == 0.0   # pure: ε at δ = 0 is the pure ε


def test_sklearn_clone_round_trips_declared_estimators():
    from sklearn.base import clone

    est = NoisyMean(budget=PrivacyBudget(rho=0.5), scale=3.0, mode="b")
    copy = clone(est)
    assert copy is not est and copy.get_params() == est.get_params()
    assert est.get_params(deep=True) == est.get_params(deep=False)


def test_parameters_are_keyword_only_with_a_clear_error():
    import privrl
    from privrl.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="keyword arguments only"):
        privrl.DPLSW(privrl.PrivacyBudget(epsilon=1.0), gamma=0.9)


@pytest.mark.parametrize("name", ["LinOptVI", "QLearning", "DPLSW", "DPAPVI"])
def test_a_fitted_attribute_read_before_fit_is_a_not_fitted_error(name):
    import privrl
    from privrl.errors import NotFittedError

    cls = getattr(privrl, name)
    est = cls.__new__(cls)
    with pytest.raises(NotFittedError):
        _ = est.privacy_ledger_
    assert not hasattr(est, "regret_")
