"""Audit tables and reports: a plain-text table for the terminal, ``audit.md`` and ``audit.json``.

``audit.json`` is a list of rows with (at least) ``algorithm, claimed_epsilon, epsilon_lower, ci,
trials, verdict, broken``; infinite values are written as the string ``"inf"``. The experiment
report can include :func:`summary_markdown` when ``OUT/audit/audit.json`` exists.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from privrl.audit.core import RELEASE_POINT, VIOLATION, AuditResult
from privrl.audit.registry import SHARPNESS, reaches_sharpness

__all__ = ["control_status", "format_table", "rows_table", "write_report", "summary_markdown", "AUDIT_DIR"]

AUDIT_DIR = "audit"


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3f}"


NOT_SHARP = "NOT SHARP (audit too weak)"


def control_status(result: AuditResult, expected_caught: bool | None = None) -> str:
    """What the row means: ``pass`` / ``VIOLATION`` for a real target (a release-point audit:
    ``sharp`` when ε_lower ≥ SHARPNESS × claimed ε, else ``NOT SHARP``, a failed audit design); for
    a broken variant ``caught``, ``NOT CAUGHT`` (a failed audit design) or ``consistent (expected)``
    when the change does not affect privacy (``expected_caught=False``)."""
    if result.broken is None:
        if result.violation:
            return "VIOLATION (bug)"
        if result.mode == RELEASE_POINT:
            return f"sharp (>= {SHARPNESS:g} eps)" if reaches_sharpness(result) else NOT_SHARP
        return "pass"
    if expected_caught is False:
        return "consistent (expected)" if not result.violation else "VIOLATION (unexpected)"
    return "caught" if result.violation else "NOT CAUGHT (audit design failure)"


_HEAD = ["algorithm", "broken", "audit", "delta", "claimed eps", "eps_lower [interval]", "conf.", "trials",
         "statistic", "verdict", "status"]


def _as_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _row_cells(row: Mapping[str, Any]) -> list[str]:
    """The table cells of one audit row (an ``AuditResult.to_dict()`` with its ``status``)."""
    ci = row.get("ci") or (math.nan, math.nan)
    return [str(row.get("algorithm")), row.get("broken") or "-", str(row.get("mode", "black-box")),
            f"{_as_float(row.get('delta')):g}",
            _num(_as_float(row.get("claimed_epsilon"))),
            f"{_num(_as_float(row.get('epsilon_lower')))} [{_num(_as_float(ci[0]))}, {_num(_as_float(ci[1]))}]",
            f"{_as_float(row.get('confidence')):g}", str(row.get("trials", "-")), str(row.get("statistic", "-")),
            str(row.get("verdict", "-")), str(row.get("status", "-"))]


def _render(rows: Sequence[Sequence[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(_HEAD)]
    fmt = "  ".join("{:<" + str(w) + "}" for w in widths)
    return "\n".join([fmt.format(*_HEAD), fmt.format(*("-" * w for w in widths))] + [fmt.format(*row) for row in rows])


def format_table(results: Sequence[AuditResult], expected: Mapping[tuple[str, str | None], bool] | None = None,
                 *, markdown: bool = False) -> str:
    """A table: algorithm, broken variant, claimed ε, ε_lower [interval] at confidence, trials,
    statistic, verdict and status."""
    expected = expected or {}
    rows = [_row_cells({**r.to_dict(), "status": control_status(r, expected.get((r.algorithm, r.broken)))})
            for r in results]
    return _render(rows, markdown)


def rows_table(rows: Sequence[Mapping[str, object]], *, markdown: bool = True) -> str:
    """The same table from the rows of ``audit.json`` (as :func:`write_report` saved them, with
    their ``status``), e.g. for the experiment report. The ``broken`` and ``status`` columns tell a
    negative control (a VIOLATION on purpose: ``caught``) from a bug (``VIOLATION (bug)``)."""
    return _render([_row_cells(r) for r in rows], markdown)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_INTRO = """\
An audit runs each private release many times on two neighbouring inputs and turns the error
rates of a hypothesis test into a lower bound ε_lower on the ε the code really has (Clopper–Pearson
intervals; see `docs/audit.md`). **ε_lower above the claimed ε is a bug** (with the stated
confidence). ε_lower below it is *consistent*, not a proof of privacy.

Rows with a `broken` variant are negative controls: deliberately broken copies of the release that
the audit must catch. A control that is not caught is a failed audit design, not a pass.
"""


def write_report(results: Sequence[AuditResult], out_dir: str | os.PathLike[str], *,
                 expected: Mapping[tuple[str, str | None], bool] | None = None,
                 command: str = "") -> tuple[Path, Path]:
    """Write ``OUT/audit/audit.md`` and ``OUT/audit/audit.json`` (atomically); return both paths."""
    expected = expected or {}
    base = Path(out_dir) / AUDIT_DIR
    rows: list[dict[str, object]] = []
    for r in results:
        row = r.to_dict()
        row["status"] = control_status(r, expected.get((r.algorithm, r.broken)))
        rows.append(row)
    json_path, md_path = base / "audit.json", base / "audit.md"
    _atomic_write(json_path, json.dumps(rows, indent=2) + "\n")
    bugs = [r for r in results if r.broken is None and r.verdict == VIOLATION]
    missed = [r for r in results if r.broken is not None and expected.get((r.algorithm, r.broken), True)
              and r.verdict != VIOLATION]
    lines = ["# Privacy audit", "", _INTRO]
    if command:
        lines += [f"Command: `{command}`", ""]
    point = [r for r in results if r.broken is None and r.mode == RELEASE_POINT]
    weak = [r for r in point if not r.violation and not reaches_sharpness(r)]
    lines += [f"**Summary:** {sum(r.broken is None for r in results)} audits of real releases, {len(bugs)} violations "
              f"({len(point)} at the release point, {len(weak)} not sharp); "
              f"{sum(r.broken is not None for r in results)} negative controls, {len(missed)} not caught.", ""]
    lines += [format_table(results, expected, markdown=True), ""]
    notes = [r for r in results if r.note]
    if notes:
        lines += ["## Notes", ""] + [f"- **{r.algorithm}**{' / ' + r.broken if r.broken else ''}: {r.note}"
                                     for r in notes] + [""]
    _atomic_write(md_path, "\n".join(lines))
    return md_path, json_path


def summary_markdown(out_dir: str | os.PathLike[str]) -> str | None:
    """A short Markdown summary of ``OUT/audit/audit.json`` for the experiment report, or ``None``
    when no audit has been run."""
    path = Path(out_dir) / AUDIT_DIR / "audit.json"
    if not path.exists():
        return None
    rows = json.loads(path.read_text(encoding="utf-8"))
    real = [r for r in rows if r.get("broken") is None]
    ctrl = [r for r in rows if r.get("broken") is not None]
    bad = [r["algorithm"] for r in real if r["verdict"] == VIOLATION]
    missed = [f"{r['algorithm']}/{r['broken']}" for r in ctrl if r.get("status", "").startswith("NOT CAUGHT")]
    weak = [r["algorithm"] for r in real if r.get("status") == NOT_SHARP]
    text = (f"Privacy audit: {len(real)} releases audited, "
            f"{'no violation' if not bad else 'VIOLATIONS: ' + ', '.join(bad)}"
            f"{'; NOT SHARP: ' + ', '.join(weak) if weak else ''}; "
            f"{len(ctrl)} negative controls, "
            f"{'all behaved as expected' if not missed else 'NOT CAUGHT: ' + ', '.join(missed)}. "
            f"Details: `{AUDIT_DIR}/audit.md`.")
    return text
