"""Each family's contract cases, found from the family records (no list to keep).

A family's cases live in ``tests/<family>/contract_cases.py``, which defines
``CASES: list[privrl.testing.ContractCase]``; :func:`cases_of` loads that file for one family and
:func:`all_cases` for every family of :data:`privrl.registry.FAMILIES`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from privrl import registry
from privrl.family import Family
from privrl.testing import ContractCase

TESTS = Path(__file__).resolve().parent


def cases_path(family: Family) -> Path:
    return TESTS / family.name / "contract_cases.py"


def cases_of(family: Family) -> list[ContractCase]:
    """The ``CASES`` of ``tests/<family>/contract_cases.py`` (an error when the file is missing)."""
    path = cases_path(family)
    if not path.is_file():
        raise FileNotFoundError(f"the family {family.package} has no contract cases: write "
                                f"{path.relative_to(TESTS.parent)}")
    name = f"contract_cases_{family.name}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return list(module.CASES)


def all_cases() -> list[ContractCase]:
    return [case for family in registry.families() for case in cases_of(family)]
