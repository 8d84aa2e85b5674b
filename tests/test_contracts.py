"""Contract tests over every registered algorithm (ARCHITECTURE.md §7.1).

Each module in ``tests/contract_cases/`` defines ``CASES: list[ContractCase]``.
"""

import importlib
import pkgutil

import pytest

import contract_cases
from privrl.testing import CHECKS, check_contract

CASES = []
for info in pkgutil.iter_modules(contract_cases.__path__):
    module = importlib.import_module(f"contract_cases.{info.name}")
    CASES.extend(getattr(module, "CASES", []))


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_contract(case, check):
    check_contract(case, [check])
