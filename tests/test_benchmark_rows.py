"""Every benchmark row carries ``name`` and ``seconds`` (CONTRIBUTING.md; issue #12 §1).

The benchmarks are not run here (they are slow and timed): their ``emit(...)`` calls are read.
``emit``'s first argument is the name; ``seconds`` must be a keyword of the call, or a key of the
``dict(...)`` that a ``**row`` argument unpacks in the same function, or (rows built by other
modules) a key of the script's module-level ``REQUIRED`` tuple, which the script checks before
emitting.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _dict_keys(func: ast.AST) -> dict[str, set[str]]:
    """name -> keywords of ``name = dict(k=...)`` / keys of ``name = {...}`` inside ``func``."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value, name = node.value, node.targets[0].id
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
                out.setdefault(name, set()).update(k.arg for k in value.keywords if k.arg)
            elif isinstance(value, ast.Dict):
                out.setdefault(name, set()).update(k.value for k in value.keys if isinstance(k, ast.Constant))
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].value, ast.Name) and isinstance(node.targets[0].slice, ast.Constant)):
            out.setdefault(node.targets[0].value.id, set()).add(node.targets[0].slice.value)
    return out


def _required(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["REQUIRED"]
                and isinstance(node.value, ast.Tuple)):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def _emit_calls():
    for path in sorted(BENCH.glob("bench_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        required = _required(tree)
        for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Module))]:
            keys = _dict_keys(func)
            for node in ast.walk(func):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "emit":
                    yield path.name, node, keys, required


def test_every_emit_has_a_name_and_seconds():
    calls = list(_emit_calls())
    assert len({c[0] for c in calls}) >= 7, "the scan found too few benchmark scripts"
    missing = []
    for script, call, keys, required in calls:
        named = bool(call.args) or any(k.arg == "name" for k in call.keywords)
        kws = {k.arg for k in call.keywords if k.arg}
        for k in call.keywords:
            if k.arg is None and isinstance(k.value, ast.Name):
                kws |= keys.get(k.value.id, required)
        if not named or "seconds" not in kws:
            missing.append(f"{script}:{call.lineno}")
    assert missing == []


def test_bench_reproduce_rows_at_smoke_scale():
    proc = subprocess.run([sys.executable, str(BENCH / "bench_reproduce.py"), "--scale", "smoke",
                           "--experiments", "example-gaussian", "--workers", "2"],
                          capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    seed_row, total = rows
    assert {"name", "experiment", "scale", "seconds", "runs", "peak_mb"} <= set(seed_row)
    from privrl.experiments import get_experiment

    exp = get_experiment("example-gaussian")
    assert seed_row["runs"] == len(exp.settings_for("smoke")) and seed_row["failed"] == 0
    assert seed_row["seeds"] == exp.n_seeds("smoke")
    assert total["name"] == "projected_total" and total["seconds"] >= 0
    assert abs(total["seconds"] - seed_row["projected_seconds"]) <= 0.1  # one experiment: the same sum
    # the LPT projection can never beat the ideal split, nor exceed one worker
    assert total["wall_seconds_ideal"] - 0.1 <= total["wall_seconds_lpt"] <= total["seconds"] + 0.1


def test_lpt_makespan():
    sys.path.insert(0, str(BENCH))
    try:
        from bench_reproduce import lpt_makespan
    finally:
        sys.path.remove(str(BENCH))
    # longest first to the least-loaded worker: 5 | 4, 4+3 | 5+3, 7+3 -> loads 8 and 10
    assert lpt_makespan([5, 4, 3, 3, 3], 2) == 10
    assert lpt_makespan([10, 1, 1], 2) == 10  # the slowest run cannot be split
    assert lpt_makespan([2, 2, 2, 2], 4) == 2 and lpt_makespan([], 2) == 0
