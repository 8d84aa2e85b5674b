"""The frozen, versioned references of ``privrl bench`` (:mod:`privrl.bench.references`): every task has
them, a changed generator is caught by the data hash, scores are computed against the frozen values (not
the run's own trivial and reference rows), freezing never changes a version already frozen, and the
leaderboard names each task's version."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import pandas as pd
import pytest

from privrl import cli
from privrl.bench import tasks as tasks_mod
from privrl.bench.entries import all_entries
from privrl.bench.references import (
    REFERENCE_FILE,
    check_run,
    data_problems,
    freeze,
    frozen_points,
    load_references,
    missing_references,
)
from privrl.bench.running import instance
from privrl.bench.scoring import summarise
from privrl.bench.tasks import all_tasks, get_task
from privrl.errors import InvalidDataError


def test_every_registered_task_has_frozen_references_for_both_profiles():
    """A new task (or a version bump) without its frozen references fails here: freeze it with
    ``privrl bench --freeze [--quick] --tasks NAME``."""
    refs = load_references()
    assert missing_references(all_tasks(), refs, ("quick", "full")) == []
    for task in all_tasks().values():
        for profile in ("quick", "full"):
            frozen = frozen_points(refs, task, profile)
            assert frozen is not None and frozen.versioned_name == task.versioned_name
            assert sorted(frozen.data) == list(range(task.seeds(profile))), (task.name, profile)
            assert frozen.optimum == task.optimum


def test_a_task_without_references_is_reported_missing():
    refs = load_references()
    bumped = replace(get_task("chain"), version=2)
    assert frozen_points(refs, bumped, "quick") is None
    assert missing_references({"chain": bumped}, refs, ("quick",)) == ["chain-v2@quick"]


def test_the_data_hash_reproduces_the_frozen_one_and_catches_a_changed_generator(monkeypatch):
    refs = load_references()
    frozen = frozen_points(refs, get_task("chain"), "quick")
    assert frozen is not None
    instance.cache_clear()
    assert instance("chain", "quick", 0).data_hash == frozen.data[0]
    assert data_problems(frozen, {0: frozen.data[0]}) == []

    original = tasks_mod.sample_chain

    def stickier(n, **kwargs):         # the generator changed: a chain that stays a little more often
        return original(n, **{**kwargs, "stay_probability": 0.51})

    monkeypatch.setattr(tasks_mod, "sample_chain", stickier)
    instance.cache_clear()
    try:
        changed = instance("chain", "quick", 0).data_hash
    finally:
        instance.cache_clear()
    assert changed != frozen.data[0]
    problems = data_problems(frozen, {0: changed})
    assert len(problems) == 1 and "differ from the frozen version" in problems[0] and "chain-v1" in problems[0]


def test_a_run_on_changed_data_fails_and_leaves_the_task_unscored(tmp_path, monkeypatch, capsys):
    original = tasks_mod.sample_chain
    monkeypatch.setattr(tasks_mod, "sample_chain",
                        lambda n, **kw: original(n, **{**kw, "stay_probability": 0.51}))
    instance.cache_clear()
    try:
        code = cli.main(["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path),
                         "--tasks", "chain", "--algorithms", "dp-lsw", "--budgets", "eps=1"])
    finally:
        instance.cache_clear()
    assert code == 1
    assert "differ from their task's frozen version" in capsys.readouterr().err
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    assert board["score_mean"].isna().all() and board["raw_mean"].notna().all()
    assert "differ from the frozen version" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")


def _rows(task: str, values: dict[str, list[float]], hashes: list[str]) -> pd.DataFrame:
    metric = get_task(task).metric.name
    roles = {"zero": "trivial", "monte-carlo": "non-private"}
    return pd.DataFrame([
        {"task": task, "entry": entry, "budget": "none" if entry in roles else "eps=1",
         "mode": "score", "seed": seed, "role": roles.get(entry, "private"), "metric": metric, "value": value,
         "outcome": "ok", "reason": "", "epsilon": 1.0, "rho": math.nan, "delta": 1e-4, "cpu_seconds": 0.1, "notes": "",
         "data_hash": hashes[seed]}
        for entry, seeds in values.items() for seed, value in enumerate(seeds)])


def _references(task: str, trivial: list[float], reference: list[float], hashes: list[str]) -> dict:
    t = get_task(task)
    seeds = {str(s): {"data": h, "trivial": a, "reference": b}
             for s, (a, b, h) in enumerate(zip(trivial, reference, hashes))}
    return {"format": 1, "tasks": {task: {"version": t.version, "metric": t.metric.name, "trivial": t.trivial,
                                          "reference": t.reference, "optimum": t.optimum,
                                          "profiles": {"quick": {"seeds": seeds}}}}}


def test_scores_use_the_frozen_values_not_the_runs_own_references(tmp_path):
    """The run's trivial and reference rows (1.0 and 0.5) are not the frozen ones (1.0 and 0.0): the
    scores are on the frozen scale, and the leaderboard prints the task's version."""
    from privrl.bench.leaderboard import write_leaderboard

    task = get_task("clinic-pe")
    hashes = ["a" * 64, "b" * 64]
    df = _rows(task.name, {"zero": [1.0, 1.0], "monte-carlo": [0.5, 0.5], "dp-monte-carlo": [0.25, 0.25]}, hashes)
    refs = _references(task.name, [1.0, 1.0], [0.0, 0.0], hashes)
    frozen = summarise(df, {task.name: task}, all_entries(), references=refs, profile="quick")
    score = frozen.set_index("entry")["score_mean"]
    assert score["dp-monte-carlo"] == pytest.approx(75.0) and score["monte-carlo"] == pytest.approx(50.0)
    assert score["zero"] == pytest.approx(0.0)
    own = summarise(df, {task.name: task}, all_entries()).set_index("entry")["score_mean"]
    assert own["dp-monte-carlo"] == pytest.approx(150.0) and own["monte-carlo"] == pytest.approx(100.0)
    assert set(frozen["task_version"]) == {"clinic-pe-v1"}
    # data that differ from the frozen hashes: no score, the reason in the note
    stale = summarise(_rows(task.name, {"zero": [1.0], "dp-monte-carlo": [0.25]}, ["c" * 64]), {task.name: task},
                      all_entries(), references=refs, profile="quick")
    assert stale["score_mean"].isna().all() and stale["score_note"].str.contains("differ from the frozen").all()
    assert len(check_run(_rows(task.name, {"zero": [1.0]}, ["c" * 64]), [task], refs, "quick")) == 1
    write_leaderboard(frozen, [task], tmp_path, profile="quick", manifest={}, entries=all_entries(), left_out={},
                      references=refs)
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "## `clinic-pe-v1` — " in text and "| [`clinic-pe-v1`]" in text
    assert "0 = zero estimate (1), 100 = Monte Carlo (0)" in text and "`aaaaaaaaaaaa`" in text


def test_freezing_never_changes_a_frozen_version(tmp_path):
    task = get_task("clinic-pe")
    path = tmp_path / "references.json"
    hashes = ["a" * 64, "b" * 64]
    freeze(_rows(task.name, {"zero": [1.0, 1.0], "monte-carlo": [0.5, 0.4]}, hashes), [task], "quick", path=path)
    written = json.loads(path.read_text(encoding="utf-8"))["tasks"][task.name]
    assert written["version"] == 1 and written["profiles"]["quick"]["seeds"]["1"] == {
        "data": "b" * 64, "trivial": 1.0, "reference": 0.4}
    # the same values again: nothing changes
    freeze(_rows(task.name, {"zero": [1.0, 1.0], "monte-carlo": [0.5, 0.4]}, hashes), [task], "quick", path=path)
    changed = _rows(task.name, {"zero": [1.0, 1.0], "monte-carlo": [0.5, 0.3]}, hashes)
    with pytest.raises(InvalidDataError, match="bump the task's version"):
        freeze(changed, [task], "quick", path=path)
    bumped = replace(task, version=2)
    freeze(changed, [bumped], "quick", path=path)
    frozen = frozen_points(load_references(path), bumped, "quick")
    assert frozen is not None and frozen.reference == {0: 0.5, 1: 0.3}
    assert frozen_points(load_references(path), task, "quick") is None


def test_freezing_the_committed_references_again_changes_nothing(tmp_path):
    """The baselines reproduce their frozen values exactly (the same cells, the same streams): a changed
    baseline would be refused here (bump the task's version)."""
    copy = tmp_path / "references.json"
    shutil.copyfile(REFERENCE_FILE, copy)
    before = copy.read_bytes()
    code = cli.main(["bench", "--freeze", str(copy), "--quick", "--tasks", "chain,random-tabular", "--jobs", "1",
                     "--quiet", "--out", str(tmp_path / "cells")])
    assert code == 0
    assert copy.read_bytes() == before

