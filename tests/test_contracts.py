"""Contract tests over every family's algorithms (privrl.testing.check_contract).

Each family's cases are in ``tests/<family>/contract_cases.py`` (found from the family records by
:mod:`family_contracts`); every estimator a family exports must be made by one of its cases.
"""

import pytest

from family_contracts import all_cases, cases_of
from privrl import registry
from privrl.testing import CHECKS, check_contract

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
