"""The leaderboard's overall summary: per setting, the best certified entry at ε = 1 and at ε = 10.

For each setting the candidates are the private entries *certified* (status ``ok``: within the
budget by their own ledger, not flagged by the audit, not an uncertified reference) with a
normalised score on **every** task of the setting that has one (a task whose reference is
degenerate, or that has no frozen references, has no scores and is left out, and the table says
so). The best candidate has the highest mean score over those tasks (the standard error of the
mean: √(Σ se²)/n). Its audit status is read from its audit rows at
:data:`~privrl.bench.spec.AUDIT_BUDGET` on those tasks (one audit per entry and task; the code
audited is the same at every budget): ``consistent`` on k of n tasks, or not audited. An entry
flagged by an audit is a violation, never certified, so it is never the best.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from privrl.bench.spec import AUDIT_BUDGET, SETTING_TITLES, SETTINGS, Budget, Task

__all__ = ["SUMMARY_BUDGETS", "Best", "best_certified", "overview_lines"]

#: the budgets of the summary's columns
SUMMARY_BUDGETS = (Budget("eps", 1.0), Budget("eps", 10.0))


@dataclass(frozen=True)
class Best:
    """The best certified entry of a setting at one budget: its mean score (± se) over ``tasks``."""

    entry: str
    label: str
    score: float
    se: float
    tasks: tuple[str, ...]
    audit: str


def _scored_tasks(summary: pd.DataFrame, tasks: Sequence[Task], setting: str) -> list[str]:
    """The tasks of ``setting`` in ``summary`` that have normalised scores on this run."""
    names = [t.name for t in tasks if t.setting == setting]
    rows = summary[summary["task"].isin(names)]
    return [n for n in names if rows.loc[rows["task"] == n, "score_mean"].astype(float).notna().any()]


def _audit_status(summary: pd.DataFrame, entry: str, tasks: list[str]) -> str:
    audits = summary[(summary["entry"] == entry) & (summary["task"].isin(tasks))
                     & (summary["budget"] == str(AUDIT_BUDGET))]
    verdicts = [str(v) for v in audits["audit_verdict"] if isinstance(v, str) and v]
    if any(v == "VIOLATION" for v in verdicts):
        return "⚠ VIOLATION"
    done = sum(v == "consistent" for v in verdicts)
    return f"consistent ({done}/{len(tasks)} tasks audited)" if done else "not audited"


def best_certified(summary: pd.DataFrame, tasks: Sequence[Task], setting: str, budget: Budget) -> Best | None:
    """The best certified entry of ``setting`` at ``budget`` (module docstring), or None."""
    scored = _scored_tasks(summary, tasks, setting)
    rows = summary[summary["task"].isin(scored) & (summary["budget"] == str(budget))
                   & (summary["role"] == "private") & (summary["status"] == "ok")]
    best: Best | None = None
    for entry, cells in rows.groupby("entry", sort=False):
        scores = cells["score_mean"].astype(float)
        if set(cells["task"]) != set(scored) or not scores.notna().all():
            continue
        mean = float(scores.mean())
        ses = cells["score_se"].astype(float).fillna(0.0)
        se = math.sqrt(float((ses ** 2).sum())) / len(ses)
        if best is None or mean > best.score:
            best = Best(str(entry), str(cells["label"].iloc[0]), mean, se, tuple(scored),
                        _audit_status(summary, str(entry), scored))
    return best


def _cell(best: Best | None) -> str:
    if best is None:
        return "— (no entry certified with a score on every scored task) | —"
    return f"{best.label} (`{best.entry}`): {best.score:.3g} ± {best.se:.2g} | {best.audit}"


def overview_lines(summary: pd.DataFrame, tasks: Sequence[Task]) -> list[str]:
    """The markdown of the summary table (nothing when the run has no scores)."""
    if summary.empty:
        return []
    heads = " | ".join(f"best certified at {b.label} (mean score) | its audit" for b in SUMMARY_BUDGETS)
    lines = ["## Summary", "",
             "Per setting, the best certified entry (within the budget by its own ledger, not flagged by the audit) "
             "among those with a normalised score on every scored task of the setting: its mean score over those "
             f"tasks (± the standard error of the mean) and its audit status (one audit per task at "
             f"{AUDIT_BUDGET.label}, for the code that runs at every budget).", "",
             f"| setting | scored tasks | {heads} |", "|---|---|" + "---|---|" * len(SUMMARY_BUDGETS)]
    for setting in SETTINGS:
        names = [t.name for t in tasks if t.setting == setting and t.name in set(summary["task"])]
        if not names:
            continue
        scored = _scored_tasks(summary, tasks, setting)
        unscored = [n for n in names if n not in scored]
        where = ", ".join(f"`{n}`" for n in scored) or "none"
        if unscored:
            where += " (no score: " + ", ".join(f"`{n}`" for n in unscored) + ")"
        cells = " | ".join(_cell(best_certified(summary, tasks, setting, b) if scored else None)
                           for b in SUMMARY_BUDGETS)
        lines.append(f"| {SETTING_TITLES[setting]} | {where} | {cells} |")
    return lines + [""]
