"""The families' records (privrl.family) are the one list: the registry's modules, the flat API and
the README's algorithm table are read from them, and every family brings what a family must.

``PYTHONPATH=tests python tests/test_families.py --update`` regenerates the two generated files
(``src/privrl/_family_api.py`` and the README's algorithm table) after a record changed.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

import privrl
from privrl import registry
from privrl._family_api import FAMILY_ESTIMATORS
from privrl.base import Estimator
from privrl.family import KIND_FIELDS, algorithm_table, public_api

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "privrl"
README = ROOT / "README.md"
API = SRC / "_family_api.py"
_TABLE = re.compile(r"(<!-- the algorithm table is generated[^\n]*-->\n)(.*?)(<!-- end of the algorithm table -->)",
                    re.S)

FAMILIES = registry.families()


def generated_api() -> str:
    text = API.read_text(encoding="utf-8")
    head = text[: text.index("FAMILY_ESTIMATORS")]
    rows = "".join(f"    {name!r}: {package!r},\n".replace("'", '"') for name, package in public_api(FAMILIES).items())
    return f"{head}FAMILY_ESTIMATORS: dict[str, str] = {{\n{rows}}}\n"


def generated_readme() -> str:
    text = README.read_text(encoding="utf-8")
    assert _TABLE.search(text), "the README lost the algorithm table's markers"
    return _TABLE.sub(lambda m: m.group(1) + algorithm_table(FAMILIES) + m.group(3), text)


def test_the_flat_api_is_generated_from_the_records():
    assert API.read_text(encoding="utf-8") == generated_api(), "run this file with --update"
    assert FAMILY_ESTIMATORS == public_api(FAMILIES)
    for family in FAMILIES:
        package = importlib.import_module(family.package)
        for name in family.estimators:
            cls = getattr(privrl, name)
            assert cls is getattr(package, name) and issubclass(cls, Estimator), name
            assert name in privrl.__all__


def test_the_readme_algorithm_table_is_generated_from_the_records():
    assert README.read_text(encoding="utf-8") == generated_readme(), "run this file with --update"
    table = algorithm_table(FAMILIES)
    for family in FAMILIES:
        assert f"({family.docs})" in table and family.paper in table


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_every_family_has_a_complete_record(family):
    assert family.package == f"privrl.{family.name}" and (SRC / family.name / "__init__.py").is_file()
    assert (ROOT / family.docs).is_file(), family.docs
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extras = pyproject[pyproject.index("[project.optional-dependencies]"):]
    assert family.extra is None or re.search(rf"^{family.extra} = \[", extras, re.M), family.extra
    # a family brings an experiment, a `privrl fit` command, an audit target, a `privrl plan`
    # planner and `privrl bench` entries of its own
    for kind in ("experiment", "fit", "audit", "plan", "bench-entry"):
        if kind == "bench-entry" and family.no_bench_reason:   # declared in the record, with its reason
            assert not family.bench, f"{family.name} names benchmark entries and a reason to have none"
            continue
        assert registry.registered_by(kind, family), f"{family.name} registers no {kind}"


@pytest.mark.parametrize("kind", sorted(KIND_FIELDS))
def test_each_registering_module_is_named_once_and_registers(kind):
    """Every module named for a kind registers at least one entry of it, and every entry privrl
    registers comes from a named module (entries of test plugins are not privrl's)."""
    listed = registry.modules(kind)
    assert len(set(listed)) == len(listed), listed
    entries = registry.entries(kind)
    outside = registry.SHARED_LAST.get(kind, ())  # the benchmark's plugins: installed ones only, maybe none
    for module in set(listed) - set(outside):
        assert registry.registered_by(kind, module), f"{module} is named for {kind} but registers none"
    origins = {registry.origin(kind, name) for name in entries}
    assert {o for o in origins if o.startswith("privrl.")} <= set(listed)


def _calls_register(path: Path) -> bool:
    calls = {"register", "register_fit", "register_target", "register_frontier", "register_plan", "register_entry"}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            numba_event = getattr(getattr(node.func, "value", None), "id", None) == "event"   # numba's listeners
            if name in calls and not numba_event:
                return True
    return False


def test_every_module_that_registers_is_named():
    """A module calling a register function must be named by a record or SHARED (else nothing
    imports it); the registry and the thin wrappers themselves are not registering modules."""
    wrappers = {"privrl.registry", "privrl.experiments.registry", "privrl.fitters", "privrl.audit.registry",
                "privrl.experiments.frontier", "privrl.envs.registration", "privrl.planning",
                "privrl.bench.entries"}
    named = {m for kind in registry.KINDS for m in registry.modules(kind)} | wrappers
    callers = {"privrl." + ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
               for p in SRC.rglob("*.py") if _calls_register(p)}
    assert "privrl.offline.fit" in callers, "the scan found no registering module: it is broken"
    assert callers <= named, sorted(callers - named)


def test_no_family_list_is_kept_elsewhere():
    """The family packages are named in privrl.registry.FAMILIES and nowhere else in the code, and
    the registering modules a family's record names in full (its benchmark entries) in no other
    file than the record: ``privrl bench`` finds a family's entries from its record alone."""
    in_full = {f.package: [m for m in f.bench if "." in m] for f in FAMILIES if not f.no_bench_reason}
    assert all(in_full.values()), "a family names no benchmark entry module: the scan is broken"
    others = []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if not (path.name == "registry.py" and path.parent == SRC or path.name == "_family_api.py"):
            if all(f'"{f.package}"' in text for f in FAMILIES):
                others.append(str(path.relative_to(ROOT)))
        record = path.name == "__init__.py" and path.parent.parent == SRC
        strings = _code_strings(path)
        others += [f"{path.relative_to(ROOT)}: {m}" for package, mods in in_full.items() for m in mods
                   if m in strings and not (record and package == f"privrl.{path.parent.name}")]
    assert others == []


def _code_strings(path: Path) -> set[str]:
    """The string constants of a module's code (docstrings, which may show a record, excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs}


def update() -> None:
    API.write_text(generated_api(), encoding="utf-8")
    README.write_text(generated_readme(), encoding="utf-8")
    print(f"wrote {API.relative_to(ROOT)} and the algorithm table of {README.relative_to(ROOT)}")


if __name__ == "__main__":
    if "--update" in sys.argv:
        update()
