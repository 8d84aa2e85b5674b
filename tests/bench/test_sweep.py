"""The data-size sweeps of ``privrl bench --sweep`` (:mod:`privrl.bench.sweep`): every policy-evaluation
and offline task has at least three sizes with frozen per-size references, other settings are skipped
by setting, a sweep point is the task at that n, and the command on a tiny subset writes the table
and the figure, scores against the frozen references and resumes without refitting."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from privrl import cli
from privrl.bench.entries import all_entries
from privrl.bench.references import REFERENCE_FILE, frozen_points, load_references, missing_references
from privrl.bench.running import EXPERIMENT_ID
from privrl.bench.spec import Sweep, sweep_profile
from privrl.bench.sweep import (
    MIN_SIZES,
    SWEEP_BUDGETS,
    SWEEP_REFERENCE_FILE,
    SWEEP_SETTINGS,
    plan_sweep,
    skipped,
    sweep_tasks,
)
from privrl.bench.tasks import all_tasks, get_task
from privrl.errors import InvalidParameterError


def _swept() -> list:
    return [t for t in all_tasks().values() if t.setting in SWEEP_SETTINGS]


def test_every_policy_evaluation_and_offline_task_has_at_least_three_sizes():
    tasks = _swept()
    assert {t.setting for t in tasks} == set(SWEEP_SETTINGS)
    for task in tasks:
        assert task.sweep is not None and len(task.sweep.n) >= MIN_SIZES, task.name
        assert max(task.sweep.n) / min(task.sweep.n) >= 100, f"{task.name}: the sizes span two decades"
        for n, profile in zip(task.sweep.n, task.sweep.profiles):
            assert task.n_units(profile) == n
            assert task.delta_for(profile) == pytest.approx(1.0 / (10 * n))
            assert task.seeds(profile) == task.sweep.seeds
            assert {k: v for k, v in task.size(profile).items() if k not in ("n", "seeds")} == \
                {k: v for k, v in task.sizes["full"].items() if k not in ("n", "seeds")}
    assert sweep_tasks(list(all_tasks().values())) == tasks


def test_every_size_of_every_sweep_has_frozen_references_for_each_seed():
    refs = load_references(SWEEP_REFERENCE_FILE)
    for task in _swept():
        assert task.sweep is not None
        assert missing_references({task.name: task}, refs, task.sweep.profiles) == []
        for profile in task.sweep.profiles:
            frozen = frozen_points(refs, task, profile)
            assert frozen is not None and sorted(frozen.data) == list(range(task.sweep.seeds)), (task.name, profile)


def test_the_sweep_point_at_the_full_profiles_n_is_the_leaderboards_data():
    """Same data seeds and sizes: where a sweep's n is the full profile's, its frozen data hashes and
    trivial and reference values are the leaderboard's (the sweep changes n and nothing else)."""
    sweep_refs, board_refs = load_references(SWEEP_REFERENCE_FILE), load_references(REFERENCE_FILE)
    checked = 0
    for task in _swept():
        assert task.sweep is not None
        if task.n_units("full") not in task.sweep.n:
            continue
        point = frozen_points(sweep_refs, task, sweep_profile(task.n_units("full")))
        board = frozen_points(board_refs, task, "full")
        assert point is not None and board is not None
        for seed in set(point.data) & set(board.data):
            assert (point.data[seed], point.trivial[seed], point.reference[seed]) == \
                (board.data[seed], board.trivial[seed], board.reference[seed]), (task.name, seed)
            checked += 1
    assert checked >= 10


def test_other_settings_are_skipped_by_setting_not_by_name():
    control = get_task("centerwalk")
    renamed = replace(get_task("chain"), name="my-chain")
    with_sweep = replace(control, sweep=Sweep((10, 100, 1000)))     # a sweep declared on a control task
    assert sweep_tasks([control, renamed, with_sweep]) == [renamed]
    assert set(skipped([control, renamed, with_sweep])) == {"centerwalk"}
    assert "continuous-control" in skipped([control])["centerwalk"]
    with pytest.raises(ValueError, match="at least 3"):
        sweep_tasks([replace(get_task("chain"), sweep=None)])
    with pytest.raises(ValueError, match="at least 3"):
        sweep_tasks([replace(get_task("chain"), sweep=Sweep((100, 1000)))])


def test_a_profile_outside_the_sweep_is_a_one_line_error():
    with pytest.raises(InvalidParameterError, match="sweep-n1000") as err:
        get_task("chain").size("sweep-n1234")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="ascending"):
        Sweep((1000, 100, 10))


def test_the_plan_runs_every_entry_at_every_size_and_budget():
    task = get_task("chain")
    entries = [all_entries()["dp-lsw"]]
    budgets = list(SWEEP_BUDGETS)
    specs = plan_sweep([task, get_task("centerwalk")], entries, budgets)
    assert task.sweep is not None
    cells = {(s.scale, s.params["entry"], s.params["budget"], s.seed) for s in specs}
    want = {(p, "dp-lsw", str(b), s) for p in task.sweep.profiles for b in budgets for s in range(task.sweep.seeds)}
    want |= {(p, e, "none", s) for p in task.sweep.profiles for e in ("zero", "lsw") for s in range(task.sweep.seeds)}
    assert cells == want
    assert {str(b) for b in budgets} == {"eps=0.1", "eps=1", "eps=10"}


def _cell_stamps(out: Path) -> dict[str, str]:
    return {str(p.parent): json.loads(p.read_text())["finished_at"]
            for p in (out / EXPERIMENT_ID).glob("*/seed=*/manifest.json")}


def test_the_sweep_command_writes_the_table_and_the_figure_and_resumes_without_refitting(tmp_path, capsys):
    cells, board = tmp_path / "cells", tmp_path / "board"
    argv = ["bench", "--sweep", "--tasks", "chain,centerwalk", "--algorithms", "dp-lsw", "--budgets", "eps=1",
            "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(cells), "--leaderboard", str(board)]
    assert cli.main(argv) == 0
    assert "12 runs: 12 ran ok" in capsys.readouterr().out       # 3 sizes × (zero, lsw, dp-lsw, dp-lsw[paper])
    text = (board / "sweeps.md").read_text()
    assert "## `chain-v1`" in text and "centerwalk-v1" not in text
    assert "`centerwalk` (setting continuous-control)" in text
    assert "| entry | budget | n = 10³ | n = 10⁴ | n = 10⁵ |" in text
    lsw = next(line for line in text.splitlines() if line.startswith("| LSW |"))
    assert lsw.count("| 100 (") == 3, lsw                       # the frozen reference of each size scores 100
    assert next(line for line in text.splitlines() if line.startswith("| DP-LSW | ε = 1 |"))
    figure = board / "sweep-chain.png"
    assert figure.is_file() and figure.stat().st_size > 10_000 and f"]({figure.name})" in text
    table = pd.read_csv(board / "sweeps.csv")
    assert sorted(table["n"].unique()) == [1_000, 10_000, 100_000]
    assert set(table["status"]) == {"ok"}
    manifest = json.loads((board / "sweeps-manifest.json").read_text())
    assert manifest["cells"] == 12 and manifest["ran"] == 12
    assert manifest["selection"]["sizes"] == {"chain": [1_000, 10_000, 100_000]}

    before = _cell_stamps(cells)
    assert len(before) == 12
    assert cli.main(argv) == 0
    assert "12 runs: 0 ran ok, 12 already finished" in capsys.readouterr().out
    assert json.loads((board / "sweeps-manifest.json").read_text())["ran"] == 0
    assert _cell_stamps(cells) == before                        # no cell was fitted again
    assert (board / "sweeps.md").read_text().split("## ")[1:] == text.split("## ")[1:]


def test_the_sweep_refuses_options_it_does_not_take(tmp_path, capsys):
    for option in ("--quick", "--audit"):
        assert cli.main(["bench", "--sweep", option, "--tasks", "chain", "--out", str(tmp_path)]) != 0
        err = capsys.readouterr().err.strip()
        assert f"'{option}'" in err and "--sweep" in err and "\n" not in err
    assert cli.main(["bench", "--sweep", "--tasks", "centerwalk", "--out", str(tmp_path)]) != 0
    assert "policy-evaluation or offline" in capsys.readouterr().err
