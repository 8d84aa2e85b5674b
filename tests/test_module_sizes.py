"""The size rule (CONTRIBUTING.md): no module under ``src/privrl`` over 600 lines and no function
(method, nested function) over 80, except the modules and functions the section "Exceptions to the
size rule" of CONTRIBUTING.md names, each with its reason. An entry that no longer exceeds the rule
fails too: the list only shrinks to what is true."""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import privrl

PACKAGE = Path(privrl.__file__).resolve().parent
ROOT = PACKAGE.parents[1]
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
SECTION = "## Exceptions to the size rule"
_ENTRY = re.compile(r"^- `(?P<target>[^`]+)` — (?P<reason>\S.*)$")

pytestmark = pytest.mark.skipif(not CONTRIBUTING.is_file(), reason="no CONTRIBUTING.md (an installed package)")


def exceptions(text: str) -> dict[str, str]:
    """``{target: reason}`` of the section's entries: ``- `path` — reason`` (a module, a glob: the
    module and every function in it) or ``- `path::Qualified.name` — reason`` (one function)."""
    if SECTION not in text:
        raise AssertionError(f"CONTRIBUTING.md has no section {SECTION!r}")
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return {m["target"]: m["reason"] for m in map(_ENTRY.match, body.splitlines()) if m}


def functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """``(qualified name, lines)`` of every function in ``tree``, methods as ``Class.method`` and
    nested functions as ``outer.inner`` (decorators not counted)."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            out.append((name, node.end_lineno - node.lineno + 1))
            out += functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            out += functions(node, prefix + node.name + ".")
        else:
            out += functions(node, prefix)
    return out


def offenders(root: Path, base: Path) -> list[str]:
    """``path`` (a module over the limit) and ``path::name`` (a function over it), paths relative
    to ``base``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(base).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(rel)
        found += [f"{rel}::{name}" for name, n in functions(ast.parse(text)) if n > MAX_FUNCTION_LINES]
    return found


def excused(offender: str, allowed: dict[str, str]) -> str | None:
    """The entry of ``allowed`` that covers ``offender`` (a module entry covers its functions)."""
    module = offender.split("::", 1)[0]
    return next((target for target in allowed if target == offender
                 or ("::" not in target and fnmatchcase(module, target))), None)


def check(offending: list[str], allowed: dict[str, str]) -> tuple[list[str], list[str]]:
    """``(offenders no entry covers, entries that cover no offender)``."""
    used = {excused(o, allowed) for o in offending}
    return [o for o in offending if excused(o, allowed) is None], [t for t in allowed if t not in used]


def test_every_module_and_function_keeps_to_the_size_rule_or_is_listed():
    allowed = exceptions(CONTRIBUTING.read_text(encoding="utf-8"))
    assert allowed and all(reason.strip() for reason in allowed.values())
    unlisted, stale = check(offenders(PACKAGE, ROOT), allowed)
    assert not unlisted, (f"over {MAX_MODULE_LINES} lines (module) or {MAX_FUNCTION_LINES} (function), and not in "
                          f"CONTRIBUTING.md's {SECTION!r}: {unlisted}")
    assert not stale, f"entries of {SECTION!r} that keep to the rule now (remove them): {stale}"


def test_the_check_finds_long_modules_and_functions_and_reads_the_list(tmp_path):
    """The check is not vacuous: a long function, a long method and a long module are found, an
    entry excuses exactly what it names, and an entry that excuses nothing is reported."""
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long_fn.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    (pkg / "long_method.py").write_text("class C:\n    def m(self):\n" + body.replace("    ", "        ") + "\n")
    (pkg / "_kernels.py").write_text("\n".join(f"y{i} = {i}" for i in range(MAX_MODULE_LINES + 1)) + "\n")
    found = offenders(pkg, tmp_path)
    assert found == ["src/pkg/_kernels.py", "src/pkg/long_fn.py::long", "src/pkg/long_method.py::C.m"]
    text = ("# Guide\n\n## Exceptions to the size rule\n\n- `src/*/_kernels.py` — compiled kernels\n"
            "- `src/pkg/long_fn.py::long` — to be split\n- `src/pkg/gone.py` — to be split\n\n## Next\n"
            "- `src/pkg/long_method.py::C.m` — not in the section\n")
    allowed = exceptions(text)
    assert allowed == {"src/*/_kernels.py": "compiled kernels", "src/pkg/long_fn.py::long": "to be split",
                       "src/pkg/gone.py": "to be split"}
    assert check(found, allowed) == (["src/pkg/long_method.py::C.m"], ["src/pkg/gone.py"])
