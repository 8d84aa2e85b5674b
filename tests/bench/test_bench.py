"""``privrl bench``: listing, a small certified run that resumes, the audit's flag on a deliberately
broken entry (noise ÷ 10) and on the broken copy of the plugin example, the plugin example of
``docs/bench.md`` through the benchmark and the audit, the uncertified reference row of the
Balle-style baseline, the coverage of every private estimator, and the whole ``--quick`` suite."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrl import cli
from privrl.bench.audit import broken
from privrl.bench.entries import all_entries, get_entry, register_entry
from privrl.bench.running import entries_for, plan
from privrl.bench.scoring import normalised
from privrl.bench.spec import Budget
from privrl.bench.tasks import all_tasks, get_task

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = f"{ROOT / 'examples' / 'laplace_planner.py'}:LaplacePlanner"


def _bench(tmp_path: Path, *args: str) -> tuple[int, pd.DataFrame]:
    code = cli.main(["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path),
                     *args])
    return code, pd.read_csv(tmp_path / "leaderboard.csv")


def _row(board: pd.DataFrame, entry: str, budget: str = "eps=1") -> pd.Series:
    rows = board[(board["entry"] == entry) & (board["budget"] == budget)]
    assert len(rows) == 1, f"{entry} at {budget}: {len(rows)} rows"
    return rows.iloc[0]


def test_list_names_every_task_and_entry(capsys):
    assert cli.main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    for name in (*all_tasks(), *all_entries()):
        assert f"  {name} " in out, name


#: private entries that appear only as uncertified references: the Balle-style baseline of Wang &
#: Hegde's Figure 2 protects one transition, the control tasks' unit is the reward function
UNCERTIFIED_BY_DESIGN = {"balle-q-learning": ["centerwalk", "centerwalk-slow"]}
#: private entries with one task by design: TD3+BC takes continuous actions, and Pendulum is the
#: benchmark's one task with continuous actions
ONE_TASK_BY_DESIGN = {"dp-td3bc": "pendulum-offline"}


def test_every_private_estimator_runs_on_at_least_two_tasks():
    tasks = list(all_tasks().values())
    private = [e for e in all_entries().values() if e.is_private and e.plugin is None and "÷" not in e.name]
    assert len(private) >= 15
    for entry in private:
        listed = [t.name for t in tasks if entry.why_not(t) is None]
        runs = [t for t in listed if entry.refusal(get_task(t)) is None]
        uncertified = [t for t in runs if entry.uncertified(get_task(t)) is not None]
        assert len(runs) >= 2 or runs == [ONE_TASK_BY_DESIGN.get(entry.name)], (entry.name, runs)
        assert uncertified == UNCERTIFIED_BY_DESIGN.get(entry.name, []), (entry.name, uncertified)


def test_every_task_runs_its_trivial_and_reference_entries():
    for task in all_tasks().values():
        names = [e.name for e in entries_for(task, [])]
        assert names == [task.trivial, task.reference], task.name


def test_normalised_score_is_undefined_on_an_inverted_scale():
    assert normalised(0.5, trivial=1.0, reference=0.0, lower_is_better=True) == pytest.approx(50.0)
    assert normalised(5.0, trivial=0.0, reference=10.0, lower_is_better=False) == pytest.approx(50.0)
    # the reference is worse than the trivial answer: no scale, not an inverted one
    assert math.isnan(normalised(0.5, trivial=0.1, reference=0.2, lower_is_better=True))


def test_a_private_entry_whose_unit_is_not_the_tasks_is_refused_unless_declared_an_uncertified_reference():
    balle, online = get_entry("balle-q-learning"), get_task("e1-hard")
    why = balle.refusal(online)          # a unit it is not declared a reference for: refused
    assert why is not None and "trajectory" in why and "user_episode" in why
    assert balle.uncertified(online) is None
    control = get_task("centerwalk")
    assert balle.refusal(control) is None and "one transition" in balle.uncertified(control)
    dp = get_entry("dp-q-learning")
    assert dp.refusal(control) is None and dp.uncertified(control) is None
    with pytest.raises(ValueError, match="uncertified_reason"):
        replace(dp, name="x", uncertified_units=("trajectory",))      # a reference says why


def test_plan_runs_private_entries_at_their_budget_kinds_only():
    budgets = [Budget("eps", 1.0), Budget("rho", 1.0)]
    specs = plan([get_task("chain")], [get_entry("dp-lsw"), get_entry("dp-monte-carlo")], budgets, profile="quick",
                 seeds=1, audit=True)
    cells = {(s.params["entry"], s.params["budget"], s.params["mode"]) for s in specs}
    assert ("dp-lsw", "eps=1", "score") in cells and ("dp-lsw", "rho=1", "score") not in cells  # pure ε only
    assert {("dp-monte-carlo", "eps=1", "score"), ("dp-monte-carlo", "rho=1", "score")} <= cells
    assert {("dp-lsw", "eps=1", "audit"), ("dp-monte-carlo", "eps=1", "audit")} <= cells
    assert ("zero", "none", "score") in cells and ("lsw", "none", "score") in cells


def test_a_quick_run_certifies_every_cell_and_resumes(tmp_path, capsys):
    args = ("--tasks", "clinic-pe", "--algorithms", "dp-monte-carlo", "--budgets", "eps=1,rho=1")
    code, board = _bench(tmp_path, *args)
    assert code == 0
    eps, rho = _row(board, "dp-monte-carlo"), _row(board, "dp-monte-carlo", "rho=1")
    assert eps["status"] == "ok" and 0.9 < eps["epsilon_spent"] <= 1.0 + 1e-6
    assert rho["status"] == "ok" and rho["rho_spent"] <= 1.0 + 1e-6
    assert rho["epsilon_spent"] > 1.0            # ε at the task's δ of a ρ = 1 ledger
    assert _row(board, "zero", "none")["score_mean"] == 0.0
    assert _row(board, "monte-carlo", "none")["score_mean"] == 100.0
    # the DP estimate beats the zero estimate at ε = 1 on 2,000 trajectories
    assert eps["score_mean"] > 50.0
    for name in ("leaderboard.md", "manifest.json", "clinic-pe.png"):
        assert (tmp_path / name).is_file(), name
    header = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert "**Reduced run** — tasks not run: `chain`" in header and "1 seed per cell" in header
    capsys.readouterr()
    assert _bench(tmp_path, *args)[0] == 0
    assert "0 ran ok, 4 already finished" in capsys.readouterr().out
    # the leaderboard it wrote is its own; once the user edits it, it is theirs: refused without --force
    (tmp_path / "leaderboard.md").write_text("my notes", encoding="utf-8")
    assert cli.main(["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path),
                     *args]) != 0
    assert "'--out'" in capsys.readouterr().err
    assert (tmp_path / "leaderboard.md").read_text(encoding="utf-8") == "my notes"


def test_out_holding_the_users_files_is_refused_unless_force(tmp_path, capsys):
    """``--out`` into a folder with the user's own leaderboard.md and manifest.json: a one-line error naming
    --out, nothing run or replaced; with --force the benchmark writes there."""
    mine = {"leaderboard.md": "my leaderboard", "manifest.json": "{\"mine\": true}"}
    for name, text in mine.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    argv = ["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path), "--tasks",
            "clinic-pe", "--algorithms", "zero", "--budgets", "eps=1"]
    assert cli.main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'--out'" in err and "--force" in err and "manifest.json" in err
    assert {p.name for p in tmp_path.iterdir()} == set(mine)                     # nothing ran
    assert all((tmp_path / n).read_text(encoding="utf-8") == t for n, t in mine.items())
    assert cli.main([*argv, "--force"]) == 0
    assert "clinic-pe" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")


@pytest.fixture
def broken_entry():
    """DP Monte Carlo with its noise ÷ 10 and its ledger's claim unchanged, registered for one test."""
    entry = register_entry(broken(get_entry("dp-monte-carlo")))
    yield entry
    from privrl import registry

    registry.storage("bench-entry").pop(entry.name, None)


def test_the_audit_flags_a_broken_entry(tmp_path, capsys, broken_entry):
    """Same ledger, a tenth of the noise: ε_lower exceeds the claim (flagged, exit code 1); the
    honest entry's ε_lower stays below its claim."""
    code, board = _bench(tmp_path, "--tasks", "clinic-pe", "--algorithms", f"dp-monte-carlo,{broken_entry.name}",
                         "--budgets", "eps=1,eps=10", "--audit")        # the task's default: 200 fits per input
    assert code == 1
    assert "VIOLATION" in capsys.readouterr().err
    bad, good = _row(board, broken_entry.name), _row(board, "dp-monte-carlo")
    assert bad["audit_verdict"] == "VIOLATION" and bad["epsilon_lower"] > bad["claimed_epsilon"]
    assert bad["epsilon_spent"] <= 1.0 + 1e-6      # its ledger certifies the budget: only the audit sees it
    assert good["audit_verdict"] == "consistent" and good["epsilon_lower"] <= good["claimed_epsilon"]
    # the audit (at ε = 1) is of the code, which runs at ε = 10 too: both of its rows are violations
    assert _row(board, broken_entry.name, "eps=10")["status"] == bad["status"] == "violation"
    assert _row(board, "dp-monte-carlo", "eps=10")["status"] == good["status"] == "ok"
    flagged = [ln for ln in (tmp_path / "leaderboard.md").read_text(encoding="utf-8").splitlines() if "⚠" in ln]
    assert len([ln for ln in flagged if ln.startswith("| DP Monte Carlo [noise÷10")]) == 2


def test_the_plugin_example_runs_through_the_benchmark_and_the_audit(tmp_path):
    """``examples/laplace_planner.py`` (docs/bench.md), loaded by ``--plugin``: certified at ε = 1
    by its own ledger, better than the uniform policy, audited (ε_lower below its claim)."""
    code, board = _bench(tmp_path, "--plugin", PLUGIN, "--tasks", "random-tabular", "--algorithms",
                         "laplace-planner,uniform-policy", "--budgets", "eps=1,rho=1", "--audit")
    assert code == 0
    row = _row(board, "laplace-planner")
    assert row["status"] == "ok" and 0.99 < row["epsilon_spent"] <= 1.0 + 1e-6
    assert (board["entry"] == "laplace-planner").sum() == 1           # pure ε: no ρ cell
    assert row["audit_verdict"] == "consistent" and 0.0 <= row["epsilon_lower"] <= row["claimed_epsilon"]
    assert row["raw_mean"] < _row(board, "uniform-policy", "none")["raw_mean"]


def test_the_audit_flags_the_plugin_with_a_tenth_of_its_noise():
    """The example plugin releases its noisy counts (5 000 on the audit instance; one trajectory
    replaced moves 20 of them by 1): on the task's audit pair, with 500 fits per input and the
    audit's generator seeded 0, its broken copy (Laplace scale 2 instead of 20, the same ledger) has
    ε_lower > its claim of 1 (1.50 measured; 1.16–1.79 over seeds 0–9), the honest plugin 0."""
    import numpy as np

    from privrl import registry
    from privrl._rng import derive_seed
    from privrl.bench.audit import audit_entry
    from privrl.bench.plugins import load_plugin

    try:
        honest = load_plugin(PLUGIN)
    finally:
        registry.storage("bench-entry").pop("laplace-planner", None)
    task = get_task("random-tabular")
    results = {}
    for entry in (honest, broken(honest)):
        pair = task.audit_pair(np.random.default_rng(derive_seed("bench", task.name, "audit")))
        for inp in pair:
            inp.delta = task.delta_for("full")
        results[entry.name] = audit_entry(entry, pair, Budget("eps", 1.0), trials=500, rng=np.random.default_rng(0))
    good, bad = results["laplace-planner"], results["laplace-planner[noise÷10]"]
    assert good.claimed_epsilon == bad.claimed_epsilon == pytest.approx(1.0, abs=1e-3)
    assert bad.verdict == "VIOLATION" and bad.epsilon_lower > bad.claimed_epsilon
    assert bad.statistic == "noise_free_difference"
    assert good.verdict == "consistent" and good.epsilon_lower <= good.claimed_epsilon


def test_the_balle_baseline_is_an_uncertified_reference_on_both_control_tasks():
    """Wang & Hegde's Figure 2 baseline on the paper's task: each control cell is fitted and scored,
    its outcome is 'uncertified' with the reason, no ε and no ledger or budget in its result (so
    no manifest certifies it), and no audit of it is planned or run."""
    import numpy as np

    from privrl.bench.audit import audit_cell
    from privrl.bench.running import Cell, run_cell
    from privrl.experiments.spec import RunContext

    entry = get_entry("balle-q-learning")
    for name in UNCERTIFIED_BY_DESIGN["balle-q-learning"]:
        task = get_task(name)
        ctx = RunContext("bench", 0, 0, "quick", np.random.default_rng(0))
        res = run_cell(Cell(name, entry.name, "eps=1", "score", "quick").params(), ctx)
        [row] = res.rows
        assert row["outcome"] == "uncertified" and "reward function" in row["reason"], name
        assert math.isfinite(row["value"]) and row["metric"] == "return", name        # scored
        assert math.isnan(row["epsilon"]) and math.isnan(row["rho"]), name             # claims no ε
        assert res.ledger is None and res.budget is None and res.extra["certified"] is False, name
        specs = plan([task], [entry], [Budget("eps", 1.0)], profile="quick", seeds=1, audit=True)
        assert {s.params["mode"] for s in specs if s.params["entry"] == entry.name} == {"score"}, name
        [audit_row] = audit_cell(Cell(name, entry.name, "eps=1", "audit", "quick"), ctx).rows
        assert audit_row["outcome"] == "not audited" and "claimed" not in audit_row and "verdict" not in audit_row


def test_the_board_labels_an_uncertified_reference_and_never_meets_its_budget(tmp_path, capsys):
    """Through the command line with --audit on centerwalk: the Balle-style row is scored, labelled,
    its ε cell says 'not DP for this unit' (never an ε), its status is never 'ok', and its audit
    column is empty (exit code 0: nothing flagged)."""
    from privrl.bench.leaderboard import UNCERTIFIED_MARK

    code, board = _bench(tmp_path, "--tasks", "centerwalk", "--algorithms", "balle-q-learning", "--budgets",
                         "eps=1,eps=10", "--audit")
    assert code == 0
    for budget in ("eps=1", "eps=10"):
        row = _row(board, "balle-q-learning", budget)
        assert row["status"] == "uncertified" and math.isnan(row["epsilon_spent"]), budget
        assert math.isfinite(row["raw_mean"]) and "one transition" in row["reason"], budget
        assert math.isnan(row["epsilon_lower"]) and not isinstance(row["audit_verdict"], str), budget
    lines = [ln for ln in (tmp_path / "leaderboard.md").read_text(encoding="utf-8").splitlines()
             if ln.startswith("| Balle-style")]
    assert len(lines) == 2
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells[0] == "Balle-style Q-learning (uncertified reference)"
        assert cells[2].startswith(f"{UNCERTIFIED_MARK}: its ε protects one transition") and cells[3] == "—"
        assert cells[4] != "—"                                               # the return is shown


def test_a_plugin_that_does_not_follow_the_protocol_is_a_one_line_error():
    from privrl.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="fit"):
        cli_entry = "privrl.bench.spec:Metric"      # a class without fit
        from privrl.bench.plugins import load_plugin

        load_plugin(cli_entry)


def test_the_whole_quick_suite_runs(tmp_path):
    """``privrl bench --quick`` (CI's run, in the default suite: ~20 s on 2 cores once the compiled
    kernels are cached): every cell finishes, every task has its references."""
    code = cli.main(["bench", "--quick", "--jobs", "2", "--quiet", "--out", str(tmp_path)])
    assert code == 0
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    assert set(board["task"]) == set(all_tasks())


def test_export_minari_writes_every_seed_versioned_with_reference_scores(tmp_path, capsys, monkeypatch):
    minari = pytest.importorskip("minari")
    task = get_task("random-tabular")
    assert cli.main(["bench", "--export-minari", str(tmp_path), "--tasks", "random-tabular", "--quick"]) == 0
    printed = capsys.readouterr().out.split()
    seeds = range(task.sizes["quick"]["seeds"])
    ids = [f"privrl-bench/random-tabular/quick-seed{s}-v{task.version}" for s in seeds]
    assert [Path(p).relative_to(tmp_path).as_posix() for p in printed] == ids
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    from privrl.bench.references import data_hash, load_references
    from privrl.bench.running import instance

    frozen = load_references()["tasks"]["random-tabular"]["profiles"]["quick"]["seeds"]
    for seed, ds_id in zip(seeds, ids):
        ds = minari.load_dataset(ds_id)
        assert ds.total_episodes == task.sizes["quick"]["n"]
        meta = ds.storage.metadata
        inst = instance("random-tabular", "quick", seed)
        assert meta["privrl_data_sha256"] == data_hash(inst) == frozen[str(seed)]["data"]
        v_star = inst.truth.model.optimal_value()
        # Minari's normalised score of the reference's return is 1, of the trivial entry's 0
        assert minari.get_normalized_score(ds, np.array([v_star - frozen[str(seed)]["reference"],
                                                         v_star - frozen[str(seed)]["trivial"]])) \
            == pytest.approx([1.0, 0.0])


def test_export_minari_records_the_environment_spec_where_the_data_are_its_own(tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")
    from privrl.bench.export import export_minari

    written = export_minari([get_task("frozenlake"), get_task("clinic-pe")], tmp_path, profile="quick", seeds=[1])
    assert written == ["privrl-bench/frozenlake/quick-seed1-v1", "privrl-bench/clinic-pe/quick-seed1-v1"]
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    lake = minari.load_dataset(written[0])
    env = lake.recover_environment()
    assert env.spec.id == "FrozenLake-v1" and env.spec.kwargs["map_name"] == "8x8"
    env.close()
    clinic = minari.load_dataset(written[1])
    assert clinic.spec.env_spec is None and "ref_min_score" not in clinic.storage.metadata


@pytest.mark.parametrize("task", ["chain", "random-tabular", "centerwalk"])
def test_every_private_entry_spends_privacy_on_its_audit_pair(task):
    """An audit instance on which a fit releases nothing would audit nothing: every private entry's
    ledger spends ε > 0 on both neighbouring inputs of the task's audit pair."""
    import warnings

    import numpy as np

    t = get_task(task)
    pair = t.audit_pair(np.random.default_rng(0))
    budget = Budget("eps", 1.0).privacy_budget(1e-5)
    for entry in all_entries().values():
        if not entry.is_private or entry.why_not(t) is not None or entry.refusal(t) is not None \
                or entry.uncertified(t) is not None:
            continue
        for inp in pair:
            inp.delta = 1e-5
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ledger = entry.fit(inp, budget, np.random.default_rng(1), None).ledger
            assert ledger.epsilon(1e-5) > 0.05, (task, entry.name)


def test_plugins_of_the_entry_point_group_are_registered(monkeypatch):
    """A package that declares ``[project.entry-points."privrl.bench"]`` is loaded by every run; one
    that fails to import is an error naming it."""
    import importlib.metadata as md
    import sys

    from privrl import registry
    from privrl.bench import plugins
    from privrl.errors import InvalidParameterError

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    good = md.EntryPoint("laplace-planner", "laplace_planner:LaplacePlanner", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(md, "entry_points", lambda group: [good] if group == plugins.ENTRY_POINT_GROUP else [])
    try:
        [entry] = plugins.load_entry_points()
        assert get_entry("laplace-planner") is entry and entry.is_private and entry.settings == ("offline-learning",)
    finally:
        registry.storage("bench-entry").pop("laplace-planner", None)
        sys.modules.pop("laplace_planner", None)
    bad = md.EntryPoint("nope", "no_such_module_here:Nope", plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(md, "entry_points", lambda group: [bad])
    with pytest.raises(InvalidParameterError, match="nope = no_such_module_here:Nope"):
        plugins.load_entry_points()


def test_a_degenerate_reference_blanks_the_tasks_scores():
    """RiverSwim's non-private learner is no better than uniform play at K = 1000: no normalised scale."""
    from privrl.bench.scoring import reference_check

    stuck = reference_check({0: 3353.5, 1: 3350.0}, {0: 3364.0, 1: 3340.0}, lower_is_better=True)
    assert stuck.startswith("degenerate reference")
    assert reference_check({0: 0.7, 1: 0.71}, {0: 0.001, 1: 0.002}, lower_is_better=True) == ""
    assert reference_check({0: 5.0, 1: 5.2}, {0: 20.0, 1: 19.0}, lower_is_better=False) == ""
    # better on average, but by less than two standard errors of the per-seed gains
    assert reference_check({0: 1.0, 1: 1.0}, {0: 0.2, 1: 1.6}, lower_is_better=True).startswith("degenerate")


def test_cells_whose_fits_warned_are_marked(tmp_path):
    """DP-LSW and DP-APVI at ε = 0.1 answer worse than the trivial answer: their fits raise the library's
    UtilityWarning, the board counts the warned seeds and marks the score."""
    from privrl.bench.leaderboard import WARNED_MARK

    code, board = _bench(tmp_path, "--tasks", "chain,random-tabular", "--algorithms", "dp-lsw,dp-apvi",
                         "--budgets", "eps=0.1")
    assert code == 0
    for entry in ("dp-lsw", "dp-apvi"):
        row = _row(board, entry, "eps=0.1")
        assert row["score_mean"] < 0.0, entry
        assert row["n_warned"] == 1 and "UtilityWarning" in row["notes"], entry
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert f"{WARNED_MARK} 1/1" in text


def test_one_release_target_audit_serves_every_entry_and_task_at_its_delta():
    from privrl.bench.running import batch_key

    def key(task: str, entry: str) -> tuple:
        return batch_key({"task": task, "entry": entry, "budget": "eps=1", "mode": "audit", "profile": "full"}, 0)

    # linopt-vi and linopt-po privatize with the same central factorization counter; E1 and E2 share δ
    assert key("e1-hard", "linopt-vi") == key("e2-random", "linopt-po") == key("e1-hard", "linopt-po")
    assert key("riverswim", "linopt-vi") != key("e1-hard", "linopt-vi")          # K = 1000: another δ
    assert key("chain", "dp-lsw") != key("chain", "dp-monte-carlo")              # black-box audits run alone



def test_cells_of_one_setting_share_a_compile_key_so_their_kernels_compile_in_one_worker():
    from privrl.experiments.registry import get_experiment

    key = get_experiment("bench").compile_key
    assert key is not None
    keys = {t.name: key({"task": t.name, "entry": "zero", "budget": "eps=1", "mode": "score", "profile": "quick"})
            for t in all_tasks().values()}
    assert keys["e1-hard"] == keys["riverswim"] == "online-learning"      # LinOpt's engine, the UCB learners
    assert keys["centerwalk"] == "continuous-control"                      # DP Q-learning's networks
    assert len(set(keys.values())) == len({t.setting for t in all_tasks().values()})


def test_linopts_engine_compiles_in_parts_before_the_online_learning_cells():
    import pickle

    from privrl.experiments.registry import get_experiment
    from privrl.linear_mixture.engine import compile_planning
    from privrl.linear_mixture.statistics import compile_statistics

    warm_ups = get_experiment("bench").warm_ups
    assert warm_ups is not None
    assert warm_ups("online-learning") == (compile_planning, compile_statistics)
    assert [pickle.loads(pickle.dumps(f)) for f in warm_ups("online-learning")] == [compile_planning,
                                                                                     compile_statistics]  # to workers
    assert warm_ups("offline-learning") == ()

def _cells(task: str, values: dict[tuple[str, str], list[float]],
           audits: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Cell rows as the runner writes them: ``values[(entry, budget)]`` one metric value per seed, and
    one audit row per entry of ``audits`` (ε_lower, claimed ε) at ε = 1."""
    metric = get_task(task).metric.name
    rows = []
    for (entry, budget), seeds in values.items():
        for seed, value in enumerate(seeds):
            rows.append({"task": task, "entry": entry, "budget": budget, "mode": "score", "seed": seed,
                         "role": "private" if budget != "none" else "trivial", "metric": metric, "value": value,
                         "outcome": "ok", "reason": "", "epsilon": 1.0, "rho": math.nan, "delta": 1e-4,
                         "cpu_seconds": 0.1, "notes": ""})
    for entry, (lower, claimed) in audits.items():
        rows.append({"task": task, "entry": entry, "budget": "eps=1", "mode": "audit", "seed": 0, "role": "private",
                     "metric": "epsilon_lower", "value": lower, "claimed": claimed, "outcome": "ok",
                     "verdict": "VIOLATION" if lower > claimed else "consistent", "method": "black-box",
                     "trials": 200, "delta": 1e-4, "cpu_seconds": 1.0})
    return pd.DataFrame(rows)


def test_a_flagged_entry_is_a_violation_on_every_row_and_scores_below_trivial_are_marked(tmp_path):
    """The audit flags `bad` once (at ε = 1): each of its rows has status 'violation' and the flag, the honest
    entry's rows stay 'ok'. A score below 0 by more than two standard errors carries the below-trivial mark (a CSV
    column and a mark with its legend on the board); one within two standard errors of 0 does not."""
    from privrl.bench.leaderboard import BELOW_TRIVIAL_MARK, VIOLATION_MARK, WARNED_MARK, write_leaderboard
    from privrl.bench.scoring import COLUMNS, summarise

    assert BELOW_TRIVIAL_MARK != WARNED_MARK and BELOW_TRIVIAL_MARK != VIOLATION_MARK
    task = get_task("clinic-pe")
    values = {("zero", "none"): [1.0, 1.0, 1.0], ("monte-carlo", "none"): [0.0, 0.0, 0.0],
              ("bad", "eps=1"): [0.5, 0.6, 0.4], ("bad", "eps=10"): [0.1, 0.1, 0.2],
              ("good", "eps=1"): [1.5, 1.6, 1.7],            # score −60 ± 5.8: below trivial
              ("good", "eps=10"): [1.3, 0.9, 0.95]}          # score −5 ± 13: within two standard errors
    df = _cells(task.name, values, {"bad": (3.1, 1.0), "good": (0.0, 1.0)})
    summary = summarise(df, {task.name: task}, all_entries())
    assert list(summary.columns) == list(COLUMNS)
    status = {(r.entry, r.budget): r.status for r in summary.itertuples()}
    assert status[("bad", "eps=1")] == status[("bad", "eps=10")] == "violation"
    assert status[("good", "eps=1")] == status[("good", "eps=10")] == "ok"
    assert "ε_lower = 3.1" in summary.set_index(["entry", "budget"]).loc[("bad", "eps=10"), "reason"]
    below = {(r.entry, r.budget): r.below_trivial for r in summary.itertuples()}
    assert below == {("zero", "none"): False, ("monte-carlo", "none"): False, ("bad", "eps=1"): False,
                     ("bad", "eps=10"): False, ("good", "eps=1"): True, ("good", "eps=10"): False}
    write_leaderboard(summary, [task], tmp_path, profile="quick", manifest={}, entries=all_entries(),
                      left_out={})
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    assert set(board.loc[board["entry"] == "bad", "status"]) == {"violation"}
    assert board.loc[board["below_trivial"], "entry"].tolist() == ["good"]
    lines = (tmp_path / "leaderboard.md").read_text(encoding="utf-8").splitlines()
    rows = {(ln.split(" | ")[0], ln.split(" | ")[1]): ln for ln in lines if ln.startswith(("| bad |", "| good |"))}
    assert len(rows) == 4
    for budget in ("ε = 1", "ε = 10"):
        assert VIOLATION_MARK in rows[("| bad", budget)] and VIOLATION_MARK not in rows[("| good", budget)]
    assert [k for k, ln in rows.items() if BELOW_TRIVIAL_MARK in ln] == [("| good", "ε = 1")]
    assert any(ln.startswith(f"{BELOW_TRIVIAL_MARK}: ") for ln in lines)                 # the legend


CONSTANT_PLUGIN = '''
class ConstantValue:
    """A non-private plugin answering the value {value} whatever the data."""

    name = "constant-value"
    settings = ("policy-evaluation",)
    privacy_unit = None

    def fit(self, task_input, *, rng=None):
        self.value_ = {value}
        return self
'''


def test_a_resumed_run_reruns_a_plugin_whose_code_changed(tmp_path, capsys):
    """A finished cell is reused only while the entry's code is unchanged: after the plugin's file is edited, a
    rerun into the same --out fits it again (and keeps the references' finished cells) and shows the new result."""
    from privrl import registry

    path, out = tmp_path / "constant_value.py", tmp_path / "out"
    argv = ["bench", "--quick", "--seeds", "1", "--jobs", "1", "--quiet", "--out", str(out), "--plugin",
            f"{path}:ConstantValue", "--tasks", "clinic-pe", "--algorithms", "constant-value"]
    try:
        path.write_text(CONSTANT_PLUGIN.format(value="0.0"), encoding="utf-8")
        assert cli.main(argv) == 0
        first = _row(pd.read_csv(out / "leaderboard.csv"), "constant-value", "none")
        assert first["raw_mean"] == _row(pd.read_csv(out / "leaderboard.csv"), "zero", "none")["raw_mean"]
        path.write_text(CONSTANT_PLUGIN.format(value="1000.0"), encoding="utf-8")
        capsys.readouterr()
        assert cli.main(argv) == 0
        assert "1 ran ok, 2 already finished" in capsys.readouterr().out
        board = pd.read_csv(out / "leaderboard.csv")
        assert (board["entry"] == "constant-value").sum() == 1           # the old cell's result is not shown
        assert _row(board, "constant-value", "none")["raw_mean"] > first["raw_mean"] + 900
    finally:
        registry.storage("bench-entry").pop("constant-value", None)


PLAIN = Path(__file__).resolve().parent / "plain_plugins.py"


def _audit_plain(cls: str, trials: int) -> dict:
    """The bench's audit cell of the plain plugin ``cls`` on random-tabular at ε = 1 (``trials`` fits per input,
    the cell's generator seeded 0), as ``privrl bench --audit`` runs it."""
    import numpy as np

    from privrl import registry
    from privrl.bench.audit import audit_cell
    from privrl.bench.plugins import load_plugin
    from privrl.bench.running import Cell
    from privrl.experiments.spec import RunContext

    spec = f"{PLAIN}:{cls}"
    entry = load_plugin(spec)
    try:
        ctx = RunContext("bench", 0, 0, "full", np.random.default_rng(0))
        [row] = audit_cell(Cell("random-tabular", entry.name, "eps=1", "audit", "full", spec, trials), ctx).rows
    finally:
        registry.storage("bench-entry").pop(entry.name, None)
    return row


def test_a_plain_plugin_declaring_its_release_gets_the_release_point_audit():
    """A plain class (no privrl base) whose fit takes a ``noise`` source and exposes ``release_`` is audited at its
    release point, as a PrivateEstimator is: its hand-written ÷ 10 copy (same claim) is flagged — ε_lower 1.50 > 1
    at 500 fits per input, the numbers of the example plugin's broken copy, since it draws the same noise — and the
    honest class is not."""
    from privrl.bench.audit import RELEASE_POINT, max_epsilon_lower

    bad, good = _audit_plain("PlainLaplaceCountsTenth", 500), _audit_plain("PlainLaplaceCounts", 500)
    for row in (bad, good):
        assert row["method"] == RELEASE_POINT and row["statistic"] == "noise_free_difference"
        assert row["claimed"] == pytest.approx(1.0, abs=1e-3)
        assert row["epsilon_lower_max"] == pytest.approx(max_epsilon_lower(500, row["delta"]))
    assert bad["verdict"] == "VIOLATION" and bad["value"] > bad["claimed"]
    assert good["verdict"] == "consistent" and good["value"] <= good["claimed"]


def test_a_plugin_declaring_nothing_is_audited_black_box_with_its_reach():
    """A plugin drawing its noise from ``rng`` gets the black-box audit, labelled so, with the largest ε_lower its
    number of fits can show (3.1 at 200 fits per input, 2.4 at 100, 0.3 at 16: too few to flag any claim of 1) on
    the row and in the board's audit cell."""
    from privrl.bench.audit import BLACK_BOX, max_epsilon_lower
    from privrl.bench.leaderboard import _audit

    assert max_epsilon_lower(200, 1e-4) == pytest.approx(3.106, abs=1e-3)
    assert max_epsilon_lower(100, 1e-4) == pytest.approx(2.390, abs=1e-3)
    assert max_epsilon_lower(16, 1e-4) == pytest.approx(0.315, abs=1e-3)
    row = _audit_plain("OwnNoiseCounts", 16)
    assert row["method"] == BLACK_BOX and row["epsilon_lower_max"] == pytest.approx(max_epsilon_lower(16, row["delta"]))
    cell = _audit({"epsilon_lower": row["value"], "claimed_epsilon": row["claimed"], "audit_method": row["method"],
                   "audit_trials": 16.0, "audit_max_epsilon_lower": row["epsilon_lower_max"],
                   "audit_verdict": row["verdict"], "status": "ok"})
    assert f"black-box, 16 fits per input: ε_lower ≤ {row['epsilon_lower_max']:.1f} at most" in cell


def test_the_random_mdp_task_is_the_tabular_experiments_larger_instance_for_the_tabular_learners():
    """``random-mdp-s20``: the tabular online experiment's ``random-20`` instance at its K, its tabular
    learners scored from uniform play (0) to UCBVI (100), which clearly beats it; the LinOpt learners
    are left out (d1 = 800)."""
    import numpy as np

    from privrl.bench.entries.tabular_online import tabular_model
    from privrl.bench.instances import score_regret
    from privrl.bench.running import left_out
    from privrl.tabular_online.experiments import instance_model

    task = get_task("random-mdp-s20")
    inst = task.build(task.sizes["full"], np.random.default_rng(0))
    model, ref = tabular_model(inst.input.model), instance_model("random-20")
    assert (inst.input["n_episodes"], model.n_states, model.n_actions, model.horizon) == (4000, 20, 2, 10)
    np.testing.assert_allclose(model.P, ref.P, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(model.r, ref.r)
    np.testing.assert_array_equal(model.initial, ref.initial)
    assert (task.trivial, task.reference) == ("uniform-play", "ucbvi")
    tabular = [n for n, e in all_entries().items() if e.fit.__module__ == "privrl.bench.entries.tabular_online"]
    assert len(tabular) == 7 and all(get_entry(n).why_not(task) is None for n in tabular)
    linopt = left_out(task, all_entries().values())
    assert {"ucrl-vtr", "linopt-vi", "linopt-po[local]"} <= set(linopt)
    assert all("d1 = 800" in why for why in linopt.values())
    regret = {name: score_regret(inst.truth, get_entry(name).fit(inst.input, None, np.random.default_rng(1)).output)
              ["regret"] for name in ("uniform-play", "ucbvi")}
    assert regret["ucbvi"] < 0.5 * regret["uniform-play"], regret           # a scale that is not degenerate
