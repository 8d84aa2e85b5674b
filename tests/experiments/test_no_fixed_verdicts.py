"""No claim code writes a fixed verdict: every ``holds(...)``, ``fails(...)``, ``Verdict("holds"/
"fails", ...)`` and ``Claim(..., verdict="holds"/"fails")`` / ``supported=True/False`` of the package
sits under a condition (``if``, a conditional expression, ``and``/``or``) inside its function, so
the measurement decides it (or goes through ``decide(condition, ...)``)."""

from __future__ import annotations

import ast
from pathlib import Path

import privrl

PACKAGE = Path(privrl.__file__).parent
#: the module that defines the verdict helpers (its own holds/fails are the helpers' outputs)
HELPERS = PACKAGE / "experiments" / "verdicts.py"
_CONDITIONS = (ast.If, ast.IfExp, ast.BoolOp, ast.While, ast.comprehension, ast.Match)


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _fixed(call: ast.Call) -> bool:
    """A call that writes a verdict outright: holds(...)/fails(...), Verdict("holds"|"fails", ...),
    Claim(..., verdict="holds"|"fails" or supported=True|False, or a literal third argument)."""
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
    if name in ("holds", "fails"):
        return True
    if name == "Verdict" and call.args and isinstance(call.args[0], ast.Constant):
        return call.args[0].value in ("holds", "fails")
    if name == "Claim":
        literal = [kw.value for kw in call.keywords if kw.arg in ("verdict", "supported")]
        literal += call.args[2:3]
        return any(isinstance(v, ast.Constant) and v.value in ("holds", "fails", True, False) for v in literal)
    return False


def _unconditional(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if not any(word in text for word in ("holds", "fails", "Claim(")):
        return []                      # nothing to look for: no need to parse
    tree = ast.parse(text)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _fixed(node)):
            continue
        up, guarded = parents.get(node), False
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            if isinstance(up, _CONDITIONS):
                guarded = True
                break
            up = parents.get(up)
        if not guarded:
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return sorted(found, key=lambda hit: int(hit.rsplit(':', 1)[1]))


def test_no_claim_code_writes_a_fixed_verdict():
    offenders = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != HELPERS for hit in _unconditional(path)]
    assert not offenders, f"verdicts written without a condition: {offenders}"


def test_the_scan_finds_a_fixed_verdict(tmp_path):
    """The scan is not vacuous: the pattern the Theorem 5 claim once had is caught, its computed
    form is not."""
    bad = tmp_path / "bad.py"
    bad.write_text("def claims(df):\n    out = []\n    out.append(fails(text).claim('Thm 5'))\n"
                   "    out.append(Claim('c', 'm', verdict='holds'))\n    return out\n")
    good = tmp_path / "good.py"
    good.write_text("def claims(df):\n    return [(holds if ok else fails)(t), holds(t) if ok else fails(t),\n"
                    "            decide(ok, t), Claim('c', 'm', ok)]\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        assert _unconditional(bad) == ["bad.py:3", "bad.py:4"]
        assert _unconditional(good) == []
    finally:
        PACKAGE = saved
