"""privrl.testing.check_contract is itself tested: a correct dummy estimator passes every check,
and each broken dummy fails exactly the check that targets its defect."""

import math

import numpy as np
import pytest

from privrl._validation import check_scalar, param_error
from privrl.base import Estimator
from privrl.errors import InvalidParameterError
from privrl.privacy import (
    GaussianMechanism,
    Ledger,
    Neighboring,
    PrivacyBudget,
    PrivacyUnit,
    Releaser,
    calibrate_gaussian,
    make_noise,
)
from privrl.testing import CHECKS, ContractCase, check_contract

DATA = np.linspace(0.0, 1.0, 50)  # values in [0, 1]: the mean has replace-one sensitivity 1/n


class PrivateMean(Estimator):
    """Gaussian mechanism on the mean of values in [0, 1] (Δ = 1/n under replace-one)."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), offset=0.0):
        self.budget = budget
        self.offset = offset

    def _noise_std(self, n):
        if not self.budget.is_private:
            return 0.0
        return calibrate_gaussian(self.budget.epsilon, self.budget.delta, sensitivity=1.0 / n, accountant="rdp")

    def _check(self):
        if not isinstance(self.budget, PrivacyBudget) or self.budget.rho is not None:
            raise param_error("budget", type(self).__name__, "an (epsilon, delta) PrivacyBudget", self.budget)
        check_scalar(self.offset, "offset", owner=type(self).__name__, low=-1.0, high=1.0)

    def _rng(self, rng):
        return rng

    def _release(self, rel, mech, value):
        return rel.mechanism(mech, value)

    def fit(self, x, *, rng):
        self._check()
        mech = GaussianMechanism(sensitivity=1.0 / len(x), noise_std=self._noise_std(len(x)))
        self.privacy_ledger_ = Ledger()
        rel = Releaser(make_noise(self._rng(rng)), self.privacy_ledger_)   # every release through the seam
        self.mean_ = self._release(rel, mech, np.mean(x) + self.offset)
        return self


class Mean(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    def __init__(self, *, offset=0.0):
        self.offset = offset

    def fit(self, x, *, rng):
        self.privacy_ledger_ = Ledger()
        self.mean_ = np.mean(x) + self.offset
        return self


def make_case(cls=PrivateMean, *, baseline=Mean, bad_params=({"budget": "one"}, {"offset": math.nan}, {"offset": 5.0})):
    return ContractCase(
        name=cls.__name__,
        make=lambda budget: cls(budget=budget),
        fit=lambda est, rng: est.fit(DATA, rng=rng),
        output=lambda est: np.atleast_1d(est.mean_),
        budget=PrivacyBudget(epsilon=1.0, delta=1e-5),
        make_baseline=baseline,
        bad_params=bad_params,
    )


# --------------------------------------------------------------------------- broken dummies
class StoresParamsModified(PrivateMean):
    def __init__(self, *, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), offset=0.0):
        super().__init__(budget=budget, offset=offset + 1.0)  # not verbatim


class FitReturnsNone(PrivateMean):
    def fit(self, x, *, rng):
        super().fit(x, rng=rng)


class NoLedger(PrivateMean):
    def fit(self, x, *, rng):
        super().fit(x, rng=rng)
        del self.privacy_ledger_
        return self


class AcceptsBadParams(PrivateMean):
    def _check(self):
        pass


class CrashesOnBadParams(PrivateMean):
    def _check(self):
        self.budget.epsilon + self.offset  # AttributeError / TypeError instead of a clear error


class VagueErrors(PrivateMean):
    def _check(self):
        try:
            super()._check()
        except InvalidParameterError:
            raise InvalidParameterError("something is wrong") from None


class IgnoresRng(PrivateMean):
    def _rng(self, rng):
        return np.random.default_rng()  # fresh entropy: not reproducible


class FixedSeed(PrivateMean):
    def _rng(self, rng):
        return 0  # same noise whatever rng says


class NoisyWhenInfinite(PrivateMean):
    def _noise_std(self, n):
        return super()._noise_std(n) if self.budget.is_private else 0.01


class AveragesTwoReleases(PrivateMean):
    """Averages two noisy copies of the mean (half the noise variance) but records one release."""

    def _release(self, rel, mech, value):
        return 0.5 * (rel.mechanism(mech, value) + value + rel.noise.gaussian((), mech.scale))


class UnderCalibrated(PrivateMean):
    def _noise_std(self, n):
        return 0.5 * super()._noise_std(n)


BROKEN = [
    (StoresParamsModified, "params_roundtrip", "verbatim"),
    (FitReturnsNone, "fit_returns_self", "fit must return self"),
    (NoLedger, "fit_returns_self", "privacy_ledger_"),
    (AcceptsBadParams, "bad_params", "were accepted"),
    (CrashesOnBadParams, "bad_params", "raised AttributeError instead of InvalidParameterError"),
    (VagueErrors, "bad_params", "does not name the parameter"),
    (IgnoresRng, "same_rng_same_result", "same rng, different result"),
    (FixedSeed, "different_rng_different_noise", "identical output"),
    (NoisyWhenInfinite, "infinite_budget_is_baseline", "differs from the non-private baseline"),
    (UnderCalibrated, "spent_within_budget", "spent epsilon"),
    (AveragesTwoReleases, "release_invariant", "2 numbers drawn for 1 released"),
]


def test_correct_dummy_passes_every_check():
    check_contract(make_case())
    check_contract(make_case(baseline=None))


def test_non_private_dummy_passes():
    case = ContractCase(name="Mean", make=lambda budget: Mean(), fit=lambda est, rng: est.fit(DATA, rng=rng),
                        output=lambda est: np.atleast_1d(est.mean_), budget=PrivacyBudget.non_private(),
                        bad_params=())
    check_contract(case)


@pytest.mark.parametrize("cls,check,message", BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_broken_dummy_fails_its_check(cls, check, message):
    case = make_case(cls, bad_params=({"offset": 5.0},)) if cls is AcceptsBadParams else make_case(cls)
    with pytest.raises(AssertionError, match=rf"(?s)\[{cls.__name__}\] contract check '{check}' failed: .*{message}"):
        check_contract(case, [check])


@pytest.mark.parametrize("cls,check,message", BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_broken_dummy_fails_the_full_contract(cls, check, message):
    with pytest.raises(AssertionError):
        check_contract(make_case(cls))


def test_bad_params_with_an_unknown_name_is_a_case_error():
    case = make_case(bad_params=({"offsett": 1.0},))
    with pytest.raises(AssertionError, match=r"bad_params names unknown parameters \['offsett'\]"):
        check_contract(case, ["bad_params"])


def test_unknown_check_name():
    with pytest.raises(InvalidParameterError,
                       match=r"The 'checks' parameter of check_contract must contain only .* Got 'typo'"):
        check_contract(make_case(), ["typo"])
    assert set(CHECKS) == {"params_roundtrip", "fit_returns_self", "bad_params", "declared_params", "secure",
                           "same_rng_same_result", "different_rng_different_noise", "infinite_budget_is_baseline",
                           "spent_within_budget", "release_invariant"}
