"""The declared parameters as a type checker sees them (PEP 681 ``dataclass_transform``).

mypy reads an estimator's constructor from its annotated fields; these tests check that it
refuses what the generated constructor refuses, and that its reading (a field has a default iff
its value is not a ``param(...)`` call without ``default=``) matches the runtime declarations.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path

import pytest

import privrl
from privrl.base import Estimator

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''\
from privrl.base import PrivateEstimator, param
from privrl.policy_evaluation import DPLSW
from privrl.privacy import PrivacyBudget

budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
ok = DPLSW(budget=budget, gamma=0.9, F_max=1.0, calibration="sound", features=None)
bogus = DPLSW(budget=budget, gamma=0.9, F_max=1.0, bogus=1)
missing = DPLSW(budget=budget, F_max=1.0)
wrong_type = DPLSW(budget=budget, gamma="high")
positional = DPLSW(budget, gamma=0.9)


class Twice(PrivateEstimator):
    lam: float = param("ridge", default=1.0)
    lam: float = param("ridge again", default=2.0)
'''

#: (line of SNIPPET, a fragment of mypy's message): exactly the errors expected
EXPECTED = {
    (7, 'Unexpected keyword argument "bogus" for "DPLSW"'),
    (8, 'Missing named argument "gamma" for "DPLSW"'),
    (9, 'Argument "gamma" to "DPLSW" has incompatible type "str"; expected "float"'),
    (10, 'Too many positional arguments for "DPLSW"'),
    (15, 'Name "lam" already defined'),
}


def test_mypy_sees_the_declared_constructors(tmp_path):
    """mypy on a small file (with the repository's cache: a few seconds when ``make lint`` ran)."""
    api = pytest.importorskip("mypy.api")
    source = tmp_path / "use_dplsw.py"
    source.write_text(SNIPPET)
    # the options of `make lint` (pyproject.toml) and its cache: the package is read from the cache
    stdout, stderr, _ = api.run([str(source), "--config-file", str(ROOT / "pyproject.toml"),
                                 "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary"])
    found = set()
    for line in stdout.splitlines():
        m = re.match(r".*use_dplsw\.py:(\d+): error: (.*)", line)   # a cached module's errors keep their first path
        if m:
            found.add((int(m.group(1)), m.group(2)))
    assert not stderr, stderr
    unexpected = [f for f in found if not any(f[0] == line and text in f[1] for line, text in EXPECTED)]
    missed = [e for e in EXPECTED if not any(f[0] == e[0] and e[1] in f[1] for f in found)]
    assert not unexpected and not missed, (unexpected, missed, stdout)


def _estimators() -> list[type]:
    """Every estimator class of privrl and of the test suite's example family (the newcomer's template)."""
    for module in [m.name for m in pkgutil.walk_packages(privrl.__path__, "privrl.")] + ["example_family.estimators"]:
        try:
            importlib.import_module(module)
        except ImportError:  # pragma: no cover - an optional extra that is not installed
            continue
    found, todo = [], [Estimator]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith(("privrl.", "example_family.")) and sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def _checker_defaults(cls: type) -> dict[str, bool]:
    """Field name -> "has a default" as PEP 681 type checkers read the class body: a field has one
    unless its value is a call of the field specifier ``param`` without a ``default=`` keyword."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    out = {}
    for stmt in body.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "param":
                out[stmt.target.id] = any(k.arg == "default" for k in value.keywords)
            elif "ClassVar" not in ast.unparse(stmt.annotation):
                out[stmt.target.id] = True
    return out


def test_every_estimator_declares_what_the_checker_reads():
    classes = _estimators()
    assert len(classes) >= 20
    checked = 0
    for cls in classes:
        runtime = {p.name: not p.required for p in cls.__dict__.get("_declared_params", ())}
        assert _checker_defaults(cls) == runtime, cls.__qualname__
        checked += len(runtime)
    assert checked >= 100
