"""The offline-control tasks (CartPole, Acrobot, Pendulum: offline RL on continuous states, returns
evaluated online) and the deep offline family's entries on them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privrl import cli
from privrl.bench.entries import all_entries, get_entry
from privrl.bench.references import frozen_points, load_references
from privrl.bench.running import Cell, instance, run_cell
from privrl.bench.spec import PROFILE_BUDGETS, Budget, setting_index
from privrl.bench.tasks import get_task
from privrl.deep_offline import FAMILY
from privrl.deep_offline.continuous_data import ContinuousTransitions
from privrl.experiments.runner import run_seed
from privrl.experiments.spec import RunContext
from privrl.privacy.budget import Neighboring, PrivacyUnit

TASKS = ("cartpole-offline", "acrobot-offline", "pendulum-offline")
#: the private entries of each task (every one at every ε of the profiles)
PRIVATE = {"cartpole-offline": ("dp-bc", "dp-iql"), "acrobot-offline": ("dp-bc", "dp-iql"),
           "pendulum-offline": ("dp-td3bc",)}
REFERENCE = {"cartpole-offline": "bc", "acrobot-offline": "bc", "pendulum-offline": "td3bc"}


def _cell(task: str, entry: str, budget: str, seed: int = 0):
    """The score cell as the runner runs it (its own stream: the frozen baselines are reproduced exactly)."""
    index = setting_index(task, entry, budget, "score")
    ctx = RunContext("bench", index, seed, "quick", np.random.default_rng(run_seed("bench", index, seed)))
    return run_cell(Cell(task, entry, budget, "score", "quick").params(), ctx)


@pytest.mark.parametrize("name", TASKS)
def test_the_task_is_registered_offline_per_trajectory_with_references_for_both_profiles(name):
    task = get_task(name)
    assert task.setting == "offline-control" and task.version == 1
    assert (task.privacy_unit, task.neighboring) == (PrivacyUnit.TRAJECTORY, Neighboring.ADD_OR_REMOVE_ONE)
    assert (task.trivial, task.reference) == ("behaviour-policy", REFERENCE[name])
    refs = load_references()
    for profile in ("quick", "full"):
        frozen = frozen_points(refs, task, profile)
        assert frozen is not None, (name, profile)
        assert sorted(frozen.data) == list(range(task.seeds(profile)))
        # the non-private learner beats the behaviour policy on average over the frozen seeds, or the scale
        # would be degenerate; Pendulum's TD3+BC is not trained long enough to (the task's notes)
        if name != "pendulum-offline":
            assert np.mean(list(frozen.reference.values())) > np.mean(list(frozen.trivial.values())), (name, profile)


@pytest.mark.parametrize("name", TASKS)
def test_every_entry_of_the_family_runs_at_every_budget_of_both_profiles(name):
    task = get_task(name)
    entries = {e.name for e in all_entries().values() if e.why_not(task) is None}
    assert {*PRIVATE[name], *(p.removeprefix("dp-") for p in PRIVATE[name]), "behaviour-policy"} == entries
    for entry in PRIVATE[name]:
        e = get_entry(entry)
        assert e.budgets == ("eps",) and e.refusal(task) is None and e.audit_target == f"{entry}-step"
        for profile in ("quick", "full"):
            assert [b for b in PROFILE_BUDGETS[profile] if b.kind in e.budgets], (entry, profile)


@pytest.mark.parametrize("name", TASKS)
def test_a_quick_cell_reproduces_the_frozen_baselines_and_the_private_entry_is_certified_per_trajectory(name):
    """The trivial and reference cells of seed 0 reproduce their frozen values and data hash exactly (the
    same cell, the same streams), and each private entry's cell at ε = 1 is certified from its ledger, per
    trajectory (add/remove), and scores on the frozen scale."""
    frozen = frozen_points(load_references(), get_task(name), "quick")
    assert frozen is not None
    instance.cache_clear()
    assert instance(name, "quick", 0).data_hash == frozen.data[0]
    trivial = _cell(name, "behaviour-policy", "none").rows[0]
    reference = _cell(name, REFERENCE[name], "none").rows[0]
    assert (trivial["value"], reference["value"]) == (frozen.trivial[0], frozen.reference[0])
    for entry in PRIVATE[name]:
        res = _cell(name, entry, "eps=1")
        [row] = res.rows
        assert row["outcome"] == "ok" and row["data_hash"] == frozen.data[0]
        assert 0.9 < row["epsilon"] <= 1.0 + 1e-6 and row["delta"] == 1 / (10 * 40)
        assert (res.privacy_unit, res.neighboring) == (PrivacyUnit.TRAJECTORY, Neighboring.ADD_OR_REMOVE_ONE)
        assert res.ledger is not None and math.isclose(res.ledger.epsilon(row["delta"]), row["epsilon"])
        score = 100 * (row["value"] - frozen.trivial[0]) / (frozen.reference[0] - frozen.trivial[0])
        assert math.isfinite(score)


def test_the_quick_board_scores_the_private_entries_against_the_frozen_references(tmp_path):
    code = cli.main(["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path),
                     "--tasks", "cartpole-offline", "--algorithms", "dp-bc"])
    assert code == 0
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    rows = board[board["task"] == "cartpole-offline"].set_index("entry")
    assert rows.loc["behaviour-policy", "score_mean"] == 0 and rows.loc["bc", "score_mean"] == 100
    assert math.isfinite(rows.loc["dp-bc", "score_mean"]) and rows.loc["dp-bc", "status"] == "ok"
    assert rows.loc["dp-bc", "task_version"] == "cartpole-offline-v1"


def test_the_data_are_exported_to_minari_with_the_reference_returns(tmp_path, monkeypatch):
    """Pendulum's continuous actions with a Box action space, CartPole's with its environment's spec; both
    carry the frozen returns as Minari's reference scores and the frozen data hash."""
    minari = pytest.importorskip("minari")
    from privrl.bench.export import export_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    names = ["pendulum-offline", "cartpole-offline"]
    written = export_minari([get_task(n) for n in names], tmp_path, profile="quick", seeds=[0])
    assert written == [f"privrl-bench/{n}/quick-seed0-v1" for n in names]
    assert isinstance(instance("pendulum-offline", "quick", 0).input.dataset, ContinuousTransitions)
    for name, ds_id in zip(names, written):
        ds = minari.load_dataset(ds_id)
        assert ds.total_episodes == get_task(name).sizes["quick"]["n"]
        frozen = frozen_points(load_references(), get_task(name), "quick")
        assert frozen is not None
        meta = ds.storage.metadata
        assert (meta["ref_min_score"], meta["ref_max_score"]) == (frozen.trivial[0], frozen.reference[0])
        assert meta["privrl_data_sha256"] == frozen.data[0]
    assert minari.load_dataset(written[1]).spec.env_spec.id == "CartPole-v1"



@pytest.mark.parametrize("name", TASKS)
def test_the_exported_environment_has_the_datas_episode_cut(tmp_path, monkeypatch, name):
    """``recover_environment()`` gives the environment the returns are on: its time limit is the task's
    episode cut (CartPole's data are cut at 200 steps, its registered limit is 500), and no episode of the
    data is longer."""
    minari = pytest.importorskip("minari")
    from privrl.bench.export import export_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    [ds_id] = export_minari([get_task(name)], tmp_path, profile="quick", seeds=[0])
    inp = instance(name, "quick", 0).input
    assert inp.dataset is not None
    cut = inp.public["max_steps"]
    env = minari.load_dataset(ds_id).recover_environment()
    try:
        assert env.spec.max_episode_steps == cut
    finally:
        env.close()
    assert int(np.diff(inp.dataset.episode_starts).max()) <= cut

def test_the_family_names_its_bench_entries():
    assert FAMILY.bench == ("privrl.bench.entries.deep_offline",) and not FAMILY.no_bench_reason
    assert Budget("eps", 1.0) in PROFILE_BUDGETS["quick"]
