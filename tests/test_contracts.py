"""Contract tests over every family's algorithms (privrl.testing.check_contract).

Each family's cases are in ``tests/<family>/contract_cases.py`` (found from the family records by
:mod:`family_contracts`); every estimator a family exports must be made by one of its cases. The
contract itself refuses a private estimator whose ledger records no release.
"""

import numpy as np
import pytest

from family_contracts import all_cases, cases_of
from privrl import registry
from privrl.base import Estimator, PrivateEstimator
from privrl.privacy import Ledger, Neighboring, PrivacyBudget, PrivacyUnit
from privrl.testing import CHECKS, ContractCase, check_contract

CASES = all_cases()
FAMILIES = registry.families()


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_contract(case, check):
    check_contract(case, [check])


def made_by(cases) -> set[str]:
    """The names of the classes the cases build (the estimator and its non-private baseline)."""
    made = set()
    for case in cases:
        made.add(type(case.make(case.budget)).__name__)
        if case.make_baseline is not None:
            made.add(type(case.make_baseline()).__name__)
    return made


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_every_exported_estimator_has_a_contract_case(family):
    missing = set(family.estimators) - made_by(cases_of(family))
    assert not missing, f"{family.name}: no contract case makes {sorted(missing)}"


# --------------------------------------------------------------------------- the contract knows privacy
class _Unrecorded(PrivateEstimator):
    """Claims (ε, δ)-DP but draws its noise outside the fit's Releaser: its ledger stays empty, so
    ``privacy_spent`` would report 0 for any release."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def fit(self, values, *, rng=None):
        self._validated()
        rng = self._fit_rng(rng)
        self._privacy(rng)
        self.mean_ = float(np.mean(values) + np.random.default_rng(rng).normal())
        return self


class _NonPrivate(Estimator):
    """Declares itself non-private (no guarantee) and records nothing: what the contract allows."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    def fit(self, values, *, rng=None):
        self.mean_ = float(np.mean(values))
        self.privacy_ledger_ = Ledger()
        return self


def _case(cls) -> ContractCase:
    return ContractCase(cls.__name__, make=lambda budget: cls(budget=budget) if cls is _Unrecorded else cls(),
                        fit=lambda est, rng: est.fit(np.linspace(0.0, 1.0, 11), rng=rng),
                        output=lambda est: np.array([est.mean_]), budget=PrivacyBudget(epsilon=1.0, delta=1e-5))


def test_a_private_estimator_that_records_no_release_fails_the_contract():
    with pytest.raises(AssertionError, match="spent_within_budget.*recorded no release"):
        check_contract(_case(_Unrecorded))


def test_an_estimator_declared_non_private_passes_without_a_release():
    check_contract(_case(_NonPrivate))
