"""The leaderboard's overall summary (:mod:`privrl.bench.overview`): per setting, the best certified entry at
ε = 1 and ε = 10 among those scored on every scored task of the setting, with its audit status."""

from __future__ import annotations

import math

import pandas as pd

from privrl.bench.entries import all_entries
from privrl.bench.leaderboard import write_leaderboard
from privrl.bench.overview import best_certified, overview_lines
from privrl.bench.scoring import COLUMNS
from privrl.bench.spec import SETTING_TITLES, SETTINGS, Budget
from privrl.bench.tasks import get_task

TASKS = [get_task(n) for n in ("chain", "clinic-pe", "frozenlake-pe", "random-tabular")]
EPS1, EPS10 = Budget("eps", 1.0), Budget("eps", 10.0)


def _row(task: str, entry: str, budget: str, score: float, *, status: str = "ok", role: str = "private",
         verdict: str = "") -> dict[str, object]:
    row: dict[str, object] = {c: math.nan for c in COLUMNS}
    row.update(task=task, task_version=f"{task}-v1", setting=get_task(task).setting, entry=entry,
               label=entry.upper(), role=role, budget=budget, status=status, reason="", score_mean=score,
               score_se=2.0, raw_mean=0.1, raw_se=0.01, n_seeds=2, below_trivial=False, audit_verdict=verdict,
               audit_method="release point", notes="", n_warned=0, score_note="", metric="m", calibration="tight")
    return row


def _summary() -> pd.DataFrame:
    rows = [
        # a is certified everywhere: 80 and 60 at ε = 1 (mean 70), audited on both tasks
        _row("chain", "a", "eps=1", 80.0, verdict="consistent"), _row("clinic-pe", "a", "eps=1", 60.0,
                                                                      verdict="consistent"),
        _row("chain", "a", "eps=10", 90.0), _row("clinic-pe", "a", "eps=10", 90.0),
        # b beats a on chain at ε = 1 but is over budget on clinic-pe; at ε = 10 it is best and never audited
        _row("chain", "b", "eps=1", 95.0), _row("clinic-pe", "b", "eps=1", 99.0, status="over budget"),
        _row("chain", "b", "eps=10", 99.0), _row("clinic-pe", "b", "eps=10", 95.0),
        # c is flagged by its audit: a violation, never the best
        _row("chain", "c", "eps=1", 99.0, status="violation", verdict="VIOLATION"),
        _row("clinic-pe", "c", "eps=1", 99.0, status="violation"),
        # d is scored on chain only (it does not run on clinic-pe): not comparable over the setting
        _row("chain", "d", "eps=1", 100.0),
        # the non-private reference is not a certified entry
        _row("chain", "lsw", "none", 100.0, role="non-private"), _row("clinic-pe", "mc", "none", 100.0,
                                                                      role="non-private"),
        # frozenlake-pe has no score on this run (a degenerate reference): left out of the comparison
        _row("frozenlake-pe", "a", "eps=1", math.nan), _row("frozenlake-pe", "a", "eps=10", math.nan),
        # offline learning: nothing certified
        _row("random-tabular", "e", "eps=1", 50.0, status="refused"),
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_the_best_certified_entry_per_setting_and_budget():
    summary = _summary()
    best = best_certified(summary, TASKS, "policy-evaluation", EPS1)
    assert best is not None and best.entry == "a" and best.score == 70.0
    assert best.tasks == ("chain", "clinic-pe") and best.se == math.sqrt(8.0) / 2
    assert best.audit == "consistent (2/2 tasks audited)"
    best10 = best_certified(summary, TASKS, "policy-evaluation", EPS10)
    assert best10 is not None and best10.entry == "b" and best10.score == 97.0 and best10.audit == "not audited"
    assert best_certified(summary, TASKS, "offline-learning", EPS1) is None


def test_the_summary_table_is_on_the_leaderboard(tmp_path):
    summary = _summary()
    lines = overview_lines(summary, TASKS)
    [pe] = [ln for ln in lines if ln.startswith("| Policy evaluation |")]
    assert "`chain`, `clinic-pe` (no score: `frozenlake-pe`)" in pe
    assert "A (`a`): 70 ± 1.4 | consistent (2/2 tasks audited)" in pe and "B (`b`): 97 ± 1.4 | not audited" in pe
    [off] = [ln for ln in lines if ln.startswith("| Offline learning |")]
    assert "no entry certified" in off
    write_leaderboard(summary, TASKS, tmp_path, profile="quick", manifest={}, entries=all_entries(), left_out={})
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Summary" in text and pe in text and text.index("## Summary") < text.index("## Tasks")


def test_the_summary_and_the_task_headers_share_the_setting_titles(tmp_path):
    assert tuple(SETTING_TITLES) == SETTINGS
    summary = _summary()
    write_leaderboard(summary, TASKS, tmp_path, profile="quick", manifest={}, entries=all_entries(), left_out={})
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    for task in TASKS:
        title = SETTING_TITLES[task.setting]
        assert f"| {title} |" in text and f"\n{title} · privacy unit: " in text
