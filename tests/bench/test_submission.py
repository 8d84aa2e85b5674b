"""Submitting a result (docs/bench.md): ``make bench-suite PLUGIN=module:Class`` passes each plugin to
``privrl bench`` and writes its board beside the cells (never over the committed one), and a plugin
registered as an entry point gets its rows on the leaderboard and in its summary."""

from __future__ import annotations

import importlib.metadata as md
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from privrl import cli, registry
from privrl.bench import plugins

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_bench_suite_passes_each_plugin_and_keeps_the_committed_board():
    def recipe(*assignments: str) -> str:
        out = subprocess.run(["make", "-n", "-s", "bench-suite", *assignments], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        return [ln for ln in out.splitlines() if "privrl bench" in ln][-1]

    plain = recipe()
    assert "--leaderboard docs/bench" in plain and "--plugin" not in plain
    two = recipe("PLUGIN=examples/laplace_planner.py:LaplacePlanner mypkg.mod:Mine")
    assert "--plugin=examples/laplace_planner.py:LaplacePlanner --plugin=mypkg.mod:Mine" in two
    assert "--leaderboard results/bench" in two and "docs/bench" not in two


def test_an_entry_point_plugin_is_on_the_leaderboard_and_its_summary(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    ep = md.EntryPoint("laplace-planner", "laplace_planner:LaplacePlanner", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(md, "entry_points", lambda group: [ep] if group == plugins.ENTRY_POINT_GROUP else [])
    try:
        plugins.load_entry_points()
        code = cli.main(["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path),
                         "--tasks", "random-tabular", "--algorithms", "laplace-planner", "--budgets", "eps=1"])
    finally:
        registry.storage("bench-entry").pop("laplace-planner", None)
        sys.modules.pop("laplace_planner", None)
    assert code == 0
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    row = board[board["entry"] == "laplace-planner"].iloc[0]
    assert row["status"] == "ok" and row["task_version"] == "random-tabular-v1" and row["score_mean"] > 0
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "| Laplace-count planner (example plugin) | ε = 1 |" in text
    [summary] = [ln for ln in text.splitlines() if ln.startswith("| Offline learning |")]
    assert "Laplace-count planner (example plugin) (`laplace-planner`)" in summary
