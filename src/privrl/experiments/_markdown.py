"""Markdown cells and tables of the report (:mod:`privrl.experiments.report`): numbers, budgets,
parameters, verdicts and the ε spent, as short text."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from privrl.experiments.spec import Claim


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.replace("|", "\\|").split())


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _num(value: Any, digits: int = 4) -> str:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "—" if value is None else str(value)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.{digits}g}"


def _budget_text(budget: Mapping[str, Any] | None) -> str:
    if not budget:
        return "—"
    if "rho" in budget:
        return f"ρ = {_num(budget['rho'])} (zCDP)"
    eps = budget.get("epsilon")
    if str(eps) in ("inf", "Infinity"):
        return "non-private (ε = ∞)"
    return f"ε = {_num(eps)}, δ = {_num(budget.get('delta'))}"


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_num(v) if isinstance(v, float) or str(v) in ('inf', 'nan') else v}"
                     for k, v in params.items() if k != "calibration")


def _verdict_cell(claim: Claim) -> str:
    if claim.verdict == "holds":
        cell = "holds"
    elif claim.verdict == "fails":
        cell = "**fails**"
    else:
        cell = "undecided" + (f": {claim.reason}" if claim.reason else "")
    return cell + (f" ({claim.robustness})" if claim.robustness else "")


def _spent_text(manifests: Sequence[Mapping[str, Any]]) -> str:
    values = [m.get("epsilon_spent") for m in manifests]
    numbers = sorted({float(v) for v in values if v is not None and _is_float(v)})
    if not numbers:
        return "— (non-private)"
    deltas = {m.get("delta") for m in manifests if m.get("delta") is not None}
    at = f" at δ = {_num(next(iter(deltas)))}" if len(deltas) == 1 else ""
    if numbers[0] == numbers[-1]:
        return f"{_num(numbers[0])}{at}"
    return f"{_num(numbers[0])}–{_num(numbers[-1])}{at}"


def _is_float(value: Any) -> bool:
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False
