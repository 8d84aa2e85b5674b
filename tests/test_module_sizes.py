"""The size rule (CONTRIBUTING.md): no module under ``src/privrl`` over 600 lines and no function
(method, nested function) over 80, except the modules and functions the section "Exceptions to the
size rule" of CONTRIBUTING.md names, each with its reason. Both rules are checked over every module:
an entry for a module excuses its length only, an entry for functions excuses only the functions it
names, and those must be compiled kernels (decorated with a compiler of ``privrl._jit.compilers()``).
An entry that no longer exceeds the rule fails too: the list only shrinks to what is true."""

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
    """``{target: reason}`` of the section's entries: ``- `path` — reason`` (a module's length; the
    path may be a glob) or ``- `path::Qualified.name` — reason`` (functions; both parts may be globs)."""
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


def compiled_kernels(tree: ast.Module) -> set[str]:
    """The module-level functions numba compiles: decorated with one of the two compilers the module
    binds from ``privrl._jit.compilers()`` (``_jit, _inlined, JIT = compilers()``)."""
    compilers: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "id", None) == "compilers":
            for target in node.targets:
                names = target.elts[:2] if isinstance(target, ast.Tuple) else []
                compilers.update(n.id for n in names if isinstance(n, ast.Name))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(isinstance(d, ast.Name) and d.id in compilers for d in node.decorator_list)}


def offenders(root: Path, base: Path) -> tuple[list[str], set[str]]:
    """``path`` (a module over the limit) and ``path::name`` (a function over it), paths relative
    to ``base``; and which of those functions are compiled kernels."""
    found, kernels = [], set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(base).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(rel)
        long = [f"{rel}::{name}" for name, n in functions(tree) if n > MAX_FUNCTION_LINES]
        found += long
        kernels |= {f"{rel}::{name}" for name in compiled_kernels(tree)} & set(long)
    return found, kernels


def excused(offender: str, allowed: dict[str, str]) -> str | None:
    """The entry of ``allowed`` that covers ``offender``: a module entry a module, a function entry
    a function (never one for the other)."""
    return next((target for target in allowed
                 if ("::" in target) == ("::" in offender) and fnmatchcase(offender, target)), None)


def check(offending: list[str], allowed: dict[str, str], kernels: set[str]) -> tuple[list[str], list[str], list[str]]:
    """``(offenders no entry covers, entries that cover no offender, excused functions that are not
    compiled kernels)``."""
    used = {excused(o, allowed) for o in offending}
    not_kernels = [o for o in offending if "::" in o and o not in kernels and excused(o, allowed)]
    return ([o for o in offending if excused(o, allowed) is None], [t for t in allowed if t not in used],
            not_kernels)


def test_every_module_and_function_keeps_to_the_size_rule_or_is_listed():
    allowed = exceptions(CONTRIBUTING.read_text(encoding="utf-8"))
    assert allowed and all(reason.strip() for reason in allowed.values())
    found, kernels = offenders(PACKAGE, ROOT)
    unlisted, stale, not_kernels = check(found, allowed, kernels)
    assert not unlisted, (f"over {MAX_MODULE_LINES} lines (module) or {MAX_FUNCTION_LINES} (function), and not in "
                          f"CONTRIBUTING.md's {SECTION!r}: {unlisted}")
    assert not stale, f"entries of {SECTION!r} that keep to the rule now (remove them): {stale}"
    assert not not_kernels, f"only compiled kernels may be longer than {MAX_FUNCTION_LINES} lines: split {not_kernels}"


def test_the_check_finds_long_modules_and_functions_and_reads_the_list(tmp_path):
    """The check is not vacuous: a long function, a long method and a long module are found, an
    entry excuses exactly what it names (a module's entry not its functions), an entry that excuses
    nothing is reported, and so is an excused long function that is not a compiled kernel."""
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long_fn.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    (pkg / "long_method.py").write_text("class C:\n    def m(self):\n" + body.replace("    ", "        ") + "\n")
    filler = "\n".join(f"y{i} = {i}" for i in range(MAX_MODULE_LINES))
    (pkg / "_kernels.py").write_text(f"jit, inlined, JIT = compilers()\n\n\n@inlined\ndef kernel():\n{body}\n\n\n"
                                     f"def helper():\n{body}\n{filler}\n")
    found, kernels = offenders(pkg, tmp_path)
    assert found == ["src/pkg/_kernels.py", "src/pkg/_kernels.py::kernel", "src/pkg/_kernels.py::helper",
                     "src/pkg/long_fn.py::long", "src/pkg/long_method.py::C.m"]
    assert kernels == {"src/pkg/_kernels.py::kernel"}
    text = ("# Guide\n\n## Exceptions to the size rule\n\n- `src/*/_kernels.py` — a module of compiled kernels\n"
            "- `src/*/_kernels.py::*` — compiled kernels\n"
            "- `src/pkg/long_fn.py::long` — to be split\n- `src/pkg/gone.py` — to be split\n\n## Next\n"
            "- `src/pkg/long_method.py::C.m` — not in the section\n")
    allowed = exceptions(text)
    assert allowed == {"src/*/_kernels.py": "a module of compiled kernels", "src/*/_kernels.py::*": "compiled kernels",
                       "src/pkg/long_fn.py::long": "to be split", "src/pkg/gone.py": "to be split"}
    assert check(found, allowed, kernels) == (["src/pkg/long_method.py::C.m"], ["src/pkg/gone.py"],
                                              ["src/pkg/_kernels.py::helper", "src/pkg/long_fn.py::long"])
    module_only = {"src/*/_kernels.py": "a module of compiled kernels"}   # excuses no function in it
    assert check(found, module_only, kernels)[0] == found[1:]
