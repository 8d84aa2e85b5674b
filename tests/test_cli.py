"""The ``privrl`` command line: every command's success and error paths, as subprocesses.

Errors must be one line on stderr with a non-zero exit code and never a traceback. Subprocesses
of one test are started together (``_run_all``) to keep the suite quick.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from privrl import cli, commands
from privrl.commands import sweeps
from privrl.envs.checks import check_model
from privrl.errors import UtilityWarning
from privrl.experiments import get_experiment
from privrl.privacy.budget import PURE_DP_DELTA
from privrl.privacy.calibration import calibration_table

EXP = "example-gaussian"
PLUGIN_DIR = Path(__file__).parent / "cli"
_PLUGIN_MAIN = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import privrl_test_fit_plugin; "
                "from privrl.cli import main; sys.exit(main(sys.argv[1:]))")


def _cmd(args, plugin=False):
    if plugin:
        return [sys.executable, "-c", _PLUGIN_MAIN, str(PLUGIN_DIR), *map(str, args)]
    return [sys.executable, "-m", "privrl", *map(str, args)]


def _run_all(*commands, plugin=False, cwd=None):
    """Run several ``privrl`` invocations concurrently; results in order."""
    procs = [subprocess.Popen(_cmd(c, plugin), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=cwd) for c in commands]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=180)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _run(*args, plugin=False, cwd=None):
    return _run_all(list(args), plugin=plugin, cwd=cwd)[0]


@pytest.fixture
def inproc(capsys):
    """``cli.main`` in this process (same code path, no interpreter start-up); returns a
    CompletedProcess-like result."""

    def call(*args):
        code = cli.main([str(a) for a in args])
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)

    return call


@pytest.fixture
def fit_plugin():
    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        import privrl_test_fit_plugin  # noqa: F401 - registers the test-only 'test-mean'
    finally:
        sys.path.remove(str(PLUGIN_DIR))


def assert_one_line_error(res, *fragments, code=None):
    assert res.returncode != 0, res.stdout
    if code is not None:
        assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("privrl"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --------------------------------------------------------------------------- help, usage
def test_help_everywhere(capsys):
    res = _run("--help")
    assert res.returncode == 0 and "reproduce" in res.stdout and "calibrate" in res.stdout
    for command in (["list"], ["run"], ["reproduce"], ["plot"], ["report"], ["calibrate"], ["fit"],
                    ["check-env"], ["audit"]):
        assert cli.main([*command, "--help"]) == 0
        assert "usage: privrl" in capsys.readouterr().out
    assert cli.main(["--version"]) == 0


def test_usage_errors_are_one_line(inproc):
    unknown = _run("frobnicate")
    no_command, bad_option = inproc(), inproc("list", "--bogus")
    assert_one_line_error(no_command, "required", code=2)
    assert_one_line_error(unknown, "invalid choice", code=2)
    assert_one_line_error(bad_option, "--bogus", code=2)


def test_unexpected_errors_are_one_line(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(sweeps, "list_experiments", broken)
    assert cli.main(["list"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["privrl list: error: internal error: RuntimeError: boom "
                                        "second line (set PRIVRL_DEBUG=1 for the traceback)"]


@pytest.mark.filterwarnings("always::privrl.errors.UtilityWarning")
def test_warnings_are_one_line_without_source_paths(inproc, tmp_path, monkeypatch):
    """A warning on the command line reads ``prog: warning: Category: message`` (no file path or
    source line); PRIVRL_DEBUG=1 keeps Python's own format."""
    monkeypatch.delenv("PRIVRL_DEBUG", raising=False)
    argv = ["fit", "linopt-vi", "--env", "privrl/RandomLinearMixture-v0", "--episodes", "20", "--epsilon", "1",
            "--delta", "1e-5"]
    res = inproc(*argv, "--out", tmp_path / "a")
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if "warning" in ln]
    assert lines and all(ln.startswith("privrl fit linopt-vi: warning: UtilityWarning: LinOptVI: degenerate")
                         for ln in lines), res.stderr
    assert ".py:" not in res.stderr
    monkeypatch.setenv("PRIVRL_DEBUG", "1")                # Python's own warning machinery again
    with pytest.warns(UtilityWarning, match="degenerate output"):
        debug = inproc(*argv, "--out", tmp_path / "b")
    assert "warning: UtilityWarning" not in debug.stderr


# --------------------------------------------------------------------------- list
def test_list(capsys):
    res = _run("list", "--json")
    assert res.returncode == 0, res.stderr
    items = json.loads(res.stdout)
    example = next(i for i in items if i["id"] == EXP)
    exp = get_experiment(EXP)
    assert {k: example[k] for k in ("paper", "figure", "description")} == \
        {"paper": exp.paper, "figure": exp.figure, "description": exp.description}
    assert cli.main(["list"]) == 0
    assert any(line.startswith(EXP) for line in capsys.readouterr().out.splitlines())


def test_list_json_shows_the_deviations_at_a_scale(monkeypatch, capsys):
    import dataclasses

    from privrl import registry

    registry.entries("experiment")
    scaled = dataclasses.replace(get_experiment(EXP), id="test-scaled-deviations", deviations=("always",),
                                 scale_deviations=lambda scale: (f"grid cut at {scale} scale",))
    monkeypatch.setitem(registry.storage("experiment"), scaled.id, scaled)
    listed = {}
    for scale in ("quick", "paper", None):
        assert cli.main(["list", "--json"] + ([] if scale is None else ["--scale", scale])) == 0
        listed[scale] = {i["id"]: i for i in json.loads(capsys.readouterr().out)}
    assert listed[None] == listed["quick"]                                   # the default scale
    assert listed["quick"][scaled.id]["deviations"] == ["always", "grid cut at quick scale"]
    assert listed["paper"][scaled.id]["deviations"] == ["always", "grid cut at paper scale"]
    assert listed["paper"][scaled.id]["scale"] == "paper"
    for exp_id, item in listed["paper"].items():
        assert item["deviations"] == list(get_experiment(exp_id).deviations_for("paper")), exp_id
    assert cli.main(["list", "--json", "--scale", "huge"]) == 2


# --------------------------------------------------------------------------- run, plot, report
def test_run_plot_report(tmp_path):
    out = tmp_path / "out"
    res = _run("run", EXP, "--scale", "smoke", "--seeds", "1", "--jobs", "1", "--out", out)
    assert res.returncode == 0, res.stderr
    n = len(get_experiment(EXP).settings_for("smoke"))
    assert f"{n} runs: {n} ran ok" in res.stdout
    assert len(list(out.glob(f"{EXP}/*/seed=0/metrics.csv"))) == n
    assert (out / EXP / "example-gaussian.png").is_file() and (out / EXP / "example-gaussian.pdf").is_file()
    (out / EXP / "example-gaussian.png").unlink()

    plot, report = _run_all(["plot", out], ["report", out])
    assert plot.returncode == 0, plot.stderr
    assert str(out / EXP / "example-gaussian.png") in plot.stdout.split()
    assert report.returncode == 0, report.stderr
    assert report.stdout.strip() == str(out / "report.md")
    assert f"## {EXP}" in (out / "report.md").read_text()


def test_run_errors(tmp_path, inproc):
    unknown = _run("run", "no-such-exp", "--out", tmp_path / "a")
    seeds = inproc("run", EXP, "--seeds", "3:1", "--out", tmp_path / "b")
    scale = inproc("run", EXP, "--scale", "huge")
    assert_one_line_error(unknown, "Unknown experiment id 'no-such-exp'", code=1)
    assert not (tmp_path / "a").exists()
    assert_one_line_error(seeds, "'seeds'")
    assert_one_line_error(scale, "invalid choice", code=2)


def test_run_with_failures_exits_nonzero_with_summary(tmp_path):
    res = _run("run", EXP, "--scale", "smoke", "--seeds", "0:2", "--jobs", "1", "--quiet", "--no-plot",
               "--set", "fail_seeds=[1]", "--out", tmp_path)
    n = len(get_experiment(EXP).settings_for("smoke"))
    assert_one_line_error(res, f"{n} of {2 * n} runs failed", "failing on purpose at seed 1", code=1)
    assert f"{n} ran ok" in res.stdout  # the sweep went on after the failures
    assert len(list(tmp_path.glob(f"{EXP}/*/seed=0/metrics.csv"))) == n


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    from privrl.experiments.report import make_plots
    from privrl.experiments.runner import plan_runs, run_sweep

    out = tmp_path_factory.mktemp("results")
    run_sweep(plan_runs(EXP, "smoke"), out, jobs=1, quiet=True)
    make_plots(out)
    return out


def test_report_collects_the_evidence(smoke_results, tmp_path, inproc):
    dest = tmp_path / "docs" / "results"
    res = inproc("report", smoke_results, "--evidence", dest, "--wall-seconds", "12.5")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(dest / "report.md")]
    manifest = json.loads((dest / "metrics" / "manifest.json").read_text())
    assert manifest["wall_seconds"] == 12.5 and EXP in manifest["experiments"]
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == \
        [f"{EXP}/{EXP}.png", f"metrics/{EXP}.csv.gz", f"metrics/{EXP}.runs.json.gz", "metrics/manifest.json",
         "report.md"]
    # regenerated from the committed metrics alone: the same report, the README's block rewritten
    report = (dest / "report.md").read_bytes()
    readme = tmp_path / "README.md"
    from privrl.experiments.evidence import README_BEGIN, README_END
    readme.write_text(f"x\n{README_BEGIN}\n{README_END}\n")
    res = inproc("report", dest / "metrics", "--evidence", dest, "--readme", readme)
    assert res.returncode == 0, res.stderr
    assert (dest / "report.md").read_bytes() == report and "| privrl claims |" in readme.read_text()
    assert_one_line_error(inproc("report", dest / "metrics", "--readme", readme), "--readme applies to --evidence only")
    errors = [
        inproc("report", smoke_results, "--wall-seconds", "3"),
        inproc("report", smoke_results, "--evidence", smoke_results / "docs"),
        inproc("report", smoke_results, "--evidence", tmp_path / "e", "--wall-seconds", "-1"),
        inproc("report", smoke_results, "--evidence", __file__),
    ]
    assert_one_line_error(errors[0], "--wall-seconds applies to --evidence only")
    assert_one_line_error(errors[1], "The '--evidence' directory must be outside the results directory")
    assert_one_line_error(errors[2], "argument --wall-seconds", code=2)
    assert_one_line_error(errors[3], "The '--evidence' option must be a directory")
    assert not (smoke_results / "docs").exists() and not (tmp_path / "e").exists()


def test_make_reproduce_paper_collects_with_privrl_report():
    """The Makefile's evidence step is the command tested above, with arguments it accepts."""
    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    recipe = makefile.split("\nreproduce-paper:", 1)[1].split("\n\n", 1)[0]
    line = next(ln for ln in recipe.splitlines() if "--evidence" in ln)
    words = line.split("|| exit 1")[0].split()
    assert words[0] == "$(BIN)/privrl"
    variables = {"$(PAPER_OUT)": "results/paper", "$(EVIDENCE)": "docs/results", "$$((end": "60", "-": None,
                 "start))": None}
    argv = [variables.get(w, w) for w in words[1:]]
    args = cli.build_parser("report").parse_args([a for a in argv if a is not None])
    assert args.handler is sweeps.report
    assert (args.out, args.evidence, args.wall_seconds) == ("results/paper", "docs/results", 60.0)
    assert "python -m privrl.experiments.evidence" not in makefile


def test_make_reproduce_decide_is_reproduce_paper_with_every_claims_seed_count():
    """make reproduce-decide runs reproduce-paper's recipe with the seed rule's full counts
    (privrl.experiments.seeding.SEEDS_ENV = "decide"); reproduce-paper's own default is the regular share."""
    from privrl.experiments.seeding import SEEDS_ENV

    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    recipe = makefile.split("\nreproduce-paper:", 1)[1].split("\n\n", 1)[0]
    assert f"{SEEDS_ENV}=$(SEEDS)" in recipe and "\nSEEDS ?= regular\n" in makefile
    decide = makefile.split("\nreproduce-decide:", 1)[1].split("\n\n", 1)[0]
    assert decide.strip().splitlines()[-1].strip() == "$(MAKE) reproduce-paper SEEDS=decide"


def test_plot_and_report_errors(tmp_path, inproc):
    empty = tmp_path / "empty"
    empty.mkdir()
    corrupt = tmp_path / "corrupt" / EXP / "0" / "seed=0"
    corrupt.mkdir(parents=True)
    (corrupt / "manifest.json").write_text("{not json")
    results = [*_run_all(["plot", tmp_path / "missing"], ["report", tmp_path / "corrupt"]),
               inproc("report", tmp_path / "missing"), inproc("plot", empty), inproc("report", empty)]
    assert_one_line_error(results[0], "does not exist")
    assert_one_line_error(results[1], "not valid JSON")
    assert_one_line_error(results[2], "does not exist")
    assert_one_line_error(results[3], "no runs found")
    assert_one_line_error(results[4], "no runs found")


# --------------------------------------------------------------------------- reproduce
def test_reproduce(tmp_path, inproc):
    ok, unknown = _run_all(
        ["reproduce", "--scale", "smoke", "--only", EXP, "--jobs", "1", "--out", tmp_path / "res"],
        ["reproduce", "--only", "nope", "--out", tmp_path / "x"])
    bad_out = inproc("reproduce", "--scale", "smoke", "--only", EXP, "--jobs", "1", "--out", __file__)
    assert ok.returncode == 0, ok.stderr
    report = tmp_path / "res" / "report.md"
    assert ok.stdout.strip().splitlines()[-1] == f"Report: {report}"
    assert "![example-gaussian](example-gaussian/example-gaussian.png)" in report.read_text()
    runs_only = inproc("reproduce", "--scale", "smoke", "--only", EXP, "--jobs", "1", "--no-plot",
                       "--out", tmp_path / "runs")
    assert runs_only.returncode == 0 and "Report:" not in runs_only.stdout
    assert not (tmp_path / "runs" / "report.md").exists() and not list((tmp_path / "runs").rglob("*.png"))
    assert list((tmp_path / "runs" / EXP).rglob("metrics.csv"))
    assert_one_line_error(bad_out)
    assert_one_line_error(unknown, "Unknown experiment id 'nope'")


# --------------------------------------------------------------------------- calibrate
def test_calibrate(inproc):
    from privrl.privacy import calibrate_gaussian

    gauss, bad_eps = _run_all(
        ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "2",
         "--compositions", "4", "--json"],
        ["calibrate", "gaussian", "--epsilon", "0", "--delta", "1e-5"])
    laplace = inproc("calibrate", "laplace", "--epsilon", "0.5")
    no_delta = inproc("calibrate", "gaussian", "--epsilon", "1")
    not_number = inproc("calibrate", "laplace", "--epsilon", "abc")
    assert gauss.returncode == 0, gauss.stderr
    table = json.loads(gauss.stdout)
    # (the calibration root is found to a tolerance: two processes agree to ~1e-5 relative)
    assert table["noise_std"] == pytest.approx(calibrate_gaussian(1.0, 1e-5, sensitivity=2.0, compositions=4), rel=1e-4)
    # σ is calibrated with PLD to the target: PLD spends ≤ ε (and not much less); RDP is looser
    assert 0.999 <= table["epsilon_pld"] <= 1.0
    assert table["epsilon_rdp"] > table["epsilon_pld"]
    assert table["noise_multiplier"] == pytest.approx(table["noise_std"] / 2.0)
    assert laplace.returncode == 0, laplace.stderr
    assert "b (scale) = 2 " in laplace.stdout  # Δ/ε for one pure-DP release
    assert_one_line_error(bad_eps, "'epsilon'")
    assert_one_line_error(no_delta, "'delta'")
    assert_one_line_error(not_number, "expected a number", code=2)


def test_calibrate_table_laplace_pure_dp():
    table = calibration_table("laplace", 1.0, 0.0, sensitivity=1.0, compositions=1)
    assert table["noise_scale"] == 1.0 and table["noise_std"] == pytest.approx(math.sqrt(2))
    assert table["epsilon_pld"] == pytest.approx(1.0, abs=1e-6)
    assert table["delta_evaluated"] == PURE_DP_DELTA


# --------------------------------------------------------------------------- fit
@pytest.fixture
def reward_file(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, rewards=np.random.default_rng(0).uniform(0, 1, 200))
    return path


def test_fit(tmp_path, reward_file):
    out = tmp_path / "fit"
    res = _run("fit", "test-mean", "--data", reward_file, "--epsilon", "1", "--delta", "1e-5",
               "--seed", "3", "--reward-bound", "1", "--out", out, plugin=True)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.strip().splitlines()) == 1 and "ε spent" in res.stdout
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["algorithm"] == "test-mean" and cert["privacy_unit"] == "trajectory"
    assert cert["neighboring"] == "replace_one" and cert["budget"] == {"epsilon": 1.0, "delta": 1e-5}
    assert 0.999 <= cert["epsilon_spent"] <= 1.0 and cert["ledger"]["events"]
    result = json.loads((out / "result.json").read_text())
    assert result["summary"]["n"] == 200 and result["seed"] == 3 and result["arrays"] == ["mean"]
    with np.load(out / "result.npz") as npz:
        assert npz["mean"][0] == pytest.approx(result["summary"]["mean"])
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json", "result.json", "result.npz"]


def test_fit_zcdp_budget_in_process(tmp_path, reward_file, fit_plugin, inproc):
    res = inproc("fit", "test-mean", "--data", reward_file, "--rho", "0.5", "--seed", "1", "--out", tmp_path / "z")
    assert res.returncode == 0, res.stderr
    cert = json.loads((tmp_path / "z" / "certificate.json").read_text())
    assert cert["budget"] == {"rho": 0.5}
    from privrl.privacy import Ledger

    assert Ledger.from_json(json.dumps(cert["ledger"])).zcdp_rho() == pytest.approx(0.5)


def test_fit_errors(tmp_path, reward_file, fit_plugin, inproc):
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"not a zip file")
    common = ["--out", tmp_path / "o"]
    results = [
        _run("fit", "test-mean", "--data", tmp_path / "missing.npz", "--epsilon", "1", *common, plugin=True),
        inproc("fit", "test-mean", "--data", corrupt, "--epsilon", "1", "--delta", "1e-5", *common),
        inproc("fit", "test-mean", "--data", reward_file, "--epsilon", "-1", *common),
        inproc("fit", "test-mean", "--data", reward_file, "--epsilon", "1", "--rho", "1", *common),
        inproc("fit", "test-mean", "--data", reward_file, *common),
        inproc("fit", "no-such-algorithm", "--data", reward_file, "--epsilon", "1"),
        inproc("fit", "test-mean", "--epsilon", "1"),
    ]
    assert_one_line_error(results[0], "does not exist")
    assert_one_line_error(results[1])
    assert_one_line_error(results[2], "'epsilon'")
    assert_one_line_error(results[3], "not both")
    assert_one_line_error(results[4], "budget is required")
    assert_one_line_error(results[5], "invalid choice", code=2)
    assert_one_line_error(results[6], "--data", code=2)
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- check-env
def test_check_env():
    ok, unknown = _run_all(["check-env", "CartPole-v1"], ["check-env", "NoSuchEnv-v0"])
    assert ok.returncode == 0, ok.stderr
    assert "Gymnasium env_checker passed" in ok.stdout and "Traceback" not in ok.stderr
    assert_one_line_error(unknown, "NoSuchEnv-v0")


class _Tabular:
    def __init__(self, P, r, initial, reward_bounds=(0.0, 1.0)):
        self.P, self.r, self.initial, self.reward_bounds = P, r, initial, reward_bounds


def test_model_checks():
    from privrl.errors import InvalidDataError

    P = np.full((2, 2, 2), 0.5)
    r = np.zeros((2, 2))
    assert check_model(_Tabular(P, r, np.array([0.5, 0.5]))) == \
        ["P stochastic", "rewards within reward_bounds", "initial distribution"]
    with pytest.raises(InvalidDataError, match="not stochastic"):
        check_model(_Tabular(P * 1.1, r, np.array([0.5, 0.5])))
    with pytest.raises(InvalidDataError, match="reward_bounds"):
        check_model(_Tabular(P, r + 2.0, np.array([0.5, 0.5])))
    with pytest.raises(InvalidDataError, match="initial"):
        check_model(_Tabular(P, r, np.array([0.7, 0.7])))


# --------------------------------------------------------------------------- audit
def test_audit_is_delegated_to_the_audit_command_line(capsys):
    res = _run("audit", "--help")
    assert res.returncode == 0 and "usage: privrl audit" in res.stdout
    assert cli.main(["audit", "nope"]) == 1   # one line naming the unknown target
    assert "privrl audit: error:" in capsys.readouterr().err


# --------------------------------------------------------------------------- issue #13: the user's path
def test_fit_help_lists_only_the_options_a_command_accepts(capsys):
    from privrl.fitters import all_fit_commands

    commands = all_fit_commands()
    non_private = {n for n, c in commands.items() if c.budget == "none"}
    assert {"lsw", "lsl", "apvi", "pevi", "vapvi", "q-learning"} <= non_private
    for name, cmd in commands.items():
        assert cli.main(["fit", name, "--help"]) == 0
        shown = set(re.findall(r"--[a-z][a-zA-Z-]*", capsys.readouterr().out))
        assert ("--data" in shown) == ("data" in cmd.sources), name
        assert ("--env" in shown) == ("env" in cmd.sources), name
        assert ("--pad-to-horizon" in shown) == ("data" in cmd.sources), name
        assert ("--truncate-to-horizon" in shown) == ("data" in cmd.sources), name
        # --reward-bounds: of --data, or the command's own for an estimator declaring reward_bounds
        assert ("--reward-bounds" in shown) == ("data" in cmd.sources or "reward_bounds" in cmd.exclude), name
        assert ("--epsilon" in shown) == ("--delta" in shown) == (cmd.budget != "none"), name
        assert ("--rho" in shown) == (cmd.budget == "any"), name
        assert {"--out", "--force", "--seed"} <= shown


@pytest.fixture
def chain_npz(tmp_path):
    from privrl.envs.chain import sample_chain

    path = tmp_path / "chain.npz"
    sample_chain(100, n_states=6, rng=0).save(path)
    return path


def test_non_private_commands_need_no_budget_and_refuse_one(tmp_path, chain_npz, inproc):
    refused = [
        inproc("fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--epsilon", "1", "--out", tmp_path / "a"),
        inproc("fit", "lsw", "--data", chain_npz, "--gamma", "0.9", "--rho", "1", "--out", tmp_path / "b"),
        inproc("fit", "pevi", "--env", "privrl/SyntheticLinearMDP-v0", "--epsilon", "inf", "--delta", "0.1",
               "--out", tmp_path / "c"),
        inproc("fit", "q-learning", "--env", "privrl/CenterWalk-v0", "--epsilon", "1", "--out", tmp_path / "d"),
    ]
    assert_one_line_error(refused[0], "'privrl fit apvi' is not private and takes no budget: drop --epsilon",
                          "dp-apvi")
    assert_one_line_error(refused[1], "'privrl fit lsw' is not private", "--rho", "dp-lsw")
    assert_one_line_error(refused[2], "drop --epsilon --delta")
    assert_one_line_error(refused[3], "'privrl fit q-learning' is not private")
    assert not any((tmp_path / x).exists() for x in "abcd")
    ok = inproc("fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--episodes", "50", "--seed", "0",
                "--out", tmp_path / "e")
    assert ok.returncode == 0, ok.stderr
    cert = json.loads((tmp_path / "e" / "certificate.json").read_text())
    assert cert["guarantee"] == "non-private" and cert["budget"] is None and cert["epsilon_spent"] is None
    lsw = inproc("fit", "lsw", "--data", chain_npz, "--gamma", "0.9", "--out", tmp_path / "f")
    assert lsw.returncode == 0, lsw.stderr


def test_fit_never_replaces_results_unless_forced(tmp_path, inproc):
    out = tmp_path / "o"
    args = ["fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--episodes", "50", "--out", out]
    assert inproc(*args, "--seed", "0").returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = inproc(*args, "--seed", "1")
    assert_one_line_error(again, "The '--out' directory", "is not empty", "--force")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    forced = inproc(*args, "--seed", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "result.json").read_text())["seed"] == 1
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for bad, fragment in ((a_file, "must be a directory"), (a_file / "sub", "that can be created")):
        res = inproc("fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--episodes", "50", "--out", bad)
        assert_one_line_error(res, "The '--out' option", fragment)
    run = inproc("run", EXP, "--scale", "smoke", "--seeds", "1", "--jobs", "1", "--out", a_file / "sub")
    assert_one_line_error(run, "The '--out' option must be a directory that can be created")


def test_huge_counts_are_one_line_errors_naming_the_option(inproc):
    results = [
        inproc("fit", "apvi", "--env", "FrozenLake-v1", "--episodes", "1e12"),
        inproc("fit", "apvi", "--env", "FrozenLake-v1", "--episodes", "10000000000000"),
        inproc("fit", "apvi", "--env", "FrozenLake-v1", "--episodes", "5e6"),  # × H = 100: 5e8 transitions
        inproc("fit", "linopt-vi", "--env", "privrl/RandomLinearMixture-v0", "--episodes", "1e12"),
        inproc("run", EXP, "--seeds", "10000000000000"),
        inproc("run", EXP, "--jobs", "1e12"),
        inproc("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--compositions", "1e12"),
        inproc("calibrate", "laplace", "--epsilon", "1", "--compositions", "1e9"),
    ]
    for res in results:
        assert "internal error" not in res.stderr and "memory" not in res.stderr
    assert_one_line_error(results[0], "argument --episodes: must be an int in [1, 10000000]. Got 1e12", code=2)
    assert_one_line_error(results[1], "argument --episodes", "Got 10000000000000", code=2)
    assert_one_line_error(results[2], "'--episodes' option times the horizon (100)", "at most 1000000", code=1)
    assert_one_line_error(results[3], "argument --episodes", code=2)
    assert_one_line_error(results[4], "'seeds'", "at most 100000 seeds")
    assert_one_line_error(results[5], "argument --jobs", code=2)
    assert_one_line_error(results[6], "argument --compositions", code=2)
    assert_one_line_error(results[7], "'--compositions'", "[1, 1000000]")


def test_env_ids_and_missing_files_name_the_option(tmp_path, chain_npz, inproc):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning reaches the user: the error says it
        results = [
            inproc("fit", "apvi", "--env", "Taxi-v3"),
            inproc("fit", "dp-apvi", "--env", "CliffWalking-v0", "--epsilon", "1"),
            inproc("check-env", "FrozenLake-v0"),
            inproc("fit", "dp-apvi", "--env", "CliffWalking-v1", "--rho", "1", "--out", tmp_path / "x"),
            inproc("fit", "lsw", "--data", tmp_path / "missing.npz", "--gamma", "0.9"),
            inproc("fit", "apvi", "--data", chain_npz, "--model", "FrozenLake-v1", "--reward", tmp_path / "no.npy"),
            inproc("fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--pad-to-horizon", "5"),
            inproc("fit", "q-learning", "--env", "no_such_module_xyz:Thermostat-v0"),
        ]
    assert_one_line_error(results[0], "The '--env' option must be a registered Gymnasium environment id. Got "
                          "'Taxi-v3' instead", "'Taxi-v4'")
    assert_one_line_error(results[1], "'--env'", "'CliffWalking-v1'")
    assert_one_line_error(results[2], "The 'ENV_ID' argument", "'FrozenLake-v1'")
    assert_one_line_error(results[3], "The '--horizon' option is required for CliffWalking-v1")
    assert_one_line_error(results[4], "The '--data' file", "does not exist")
    assert_one_line_error(results[5], "The '--reward' file", "does not exist")
    assert_one_line_error(results[6], "--pad-to-horizon apply to --data only")
    assert_one_line_error(results[7], "The '--env' option must be a registered Gymnasium",
                          "no_such_module_xyz")   # the 'module:Env-v0' form whose module is missing
    assert not (tmp_path / "x").exists()


def test_toy_text_environments_in_the_tabular_algorithms(tmp_path, inproc):
    import gymnasium as gym

    from privrl.certificate import file_sha256, read_certificate
    from privrl.envs import from_gymnasium_toy_text
    from privrl.offline.fit import load_model

    lake = inproc("fit", "dp-apvi", "--env", "FrozenLake-v1", "--epsilon", "1", "--episodes", "300", "--seed", "0",
                  "--out", tmp_path / "lake")
    cliff = inproc("fit", "dp-apvi", "--env", "CliffWalking-v1", "--rho", "1", "--horizon", "25", "--episodes", "300",
                   "--seed", "0", "--out", tmp_path / "cliff")
    plain = inproc("fit", "apvi", "--env", "CliffWalking-v1", "--horizon", "25", "--episodes", "300", "--seed", "0",
                   "--out", tmp_path / "plain")
    for res in (lake, cliff, plain):
        assert res.returncode == 0, res.stderr
    cert = read_certificate(tmp_path / "lake")
    assert cert["guarantee"] == "epsilon-DP" and cert["mechanism"] == "laplace" and cert["epsilon_spent"] <= 1.0
    model = from_gymnasium_toy_text(gym.make("FrozenLake-v1"))
    np.testing.assert_array_equal(cert.arrays["extra.reward"], model.r)  # the public reward, exactly
    assert cert["inputs"]["env"] == "FrozenLake-v1" and len(cert["inputs"]["spec_sha256"]) == 64
    summary = json.loads((tmp_path / "lake" / "result.json").read_text())["summary"]
    assert summary["horizon"] == 100 and summary["optimal_value"] == pytest.approx(model.optimal_value())
    cert = read_certificate(tmp_path / "cliff")
    assert cert["guarantee"] == "rho-zCDP" and cert["mechanism"] == "gaussian" and cert["rho_spent"] <= 1.0
    assert cert["extra"]["reward_rescaled_from"] == [-100.0, 0.0]
    np.testing.assert_array_equal(cert.arrays["extra.reward"], (np.asarray(
        from_gymnasium_toy_text(gym.make("CliffWalking-v1"), horizon=25).r) + 100.0) / 100.0)
    summary = json.loads((tmp_path / "plain" / "result.json").read_text())["summary"]
    assert summary["horizon"] == 25 and -1e-9 <= summary["gap"] <= summary["optimal_value"]
    # the API: the model lookup falls back to the toy-text builder
    taxi = load_model("Taxi-v4")
    assert taxi.horizon == 200 and taxi.n_states == 500 and taxi.reward_bounds == (-10.0, 20.0)
    assert load_model("FrozenLake-v1", horizon=7).horizon == 7
    assert file_sha256(tmp_path / "lake" / "certificate.npz")


def _foreign_minari_frozenlake(dataset_id, n_episodes, seed):
    """A Minari dataset written without privrl (no privrl metadata): random FrozenLake episodes."""
    import gymnasium as gym
    import minari

    env, rng, buffers = gym.make("FrozenLake-v1"), np.random.default_rng(seed), []
    for e in range(n_episodes):
        obs, _ = env.reset(seed=int(rng.integers(2**30)))
        o, a, r, te, tr = [obs], [], [], [], []
        while True:
            action = int(rng.integers(4))
            obs, reward, terminated, truncated, _ = env.step(action)
            o.append(obs), a.append(action), r.append(reward), te.append(terminated), tr.append(truncated)
            if terminated or truncated:
                break
        buffers.append(minari.data_collector.EpisodeBuffer(
            id=e, observations=np.array(o), actions=np.array(a), rewards=np.array(r),
            terminations=np.array(te), truncations=np.array(tr), infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(dataset_id, buffers, env="FrozenLake-v1", algorithm_name="random")


def test_own_dataset_end_to_end(tmp_path, monkeypatch, inproc):
    pytest.importorskip("minari")
    import gymnasium as gym

    from privrl.certificate import file_sha256, read_certificate
    from privrl.data import collect

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _foreign_minari_frozenlake("others/frozenlake/random-v0", 200, seed=0)
    base = ["fit", "apvi", "--data", "others/frozenlake/random-v0", "--model", "FrozenLake-v1"]
    no_bounds = inproc(*base, "--out", tmp_path / "a")
    no_pad = inproc(*base, "--reward-bounds", "0", "1", "--out", tmp_path / "a")
    short = inproc(*base, "--reward-bounds", "0", "1", "--pad-to-horizon", "3", "--out", tmp_path / "a")
    missing = inproc("fit", "apvi", "--data", "others/frozenlake/absent-v0", "--model", "FrozenLake-v1")
    assert_one_line_error(no_bounds, "declares no reward bounds: give '--reward-bounds LO HI'")
    assert_one_line_error(no_pad, "give '--pad-to-horizon H'")
    assert_one_line_error(short, "The '--pad-to-horizon' option must be at least the length of the longest episode")
    assert_one_line_error(missing, "'minari download others/frozenlake/absent-v0'")
    assert "download=" not in missing.stderr
    ok = inproc(*base, "--reward-bounds", "0", "1", "--pad-to-horizon", "100", "--out", tmp_path / "m")
    assert ok.returncode == 0, ok.stderr
    cert = read_certificate(tmp_path / "m")
    assert cert["inputs"]["kind"] == "minari" and len(cert["inputs"]["sha256"]) == 64
    # a .npz file of one's own variable-length episodes, with the private algorithm
    path = tmp_path / "lake.npz"
    collect(gym.make("FrozenLake-v1"), np.full((16, 4), 0.25), 200, rng=1).save(path)
    dp = inproc("fit", "dp-apvi", "--data", path, "--model", "FrozenLake-v1", "--pad-to-horizon", "100",
                "--epsilon", "2", "--seed", "0", "--out", tmp_path / "dp")
    assert dp.returncode == 0, dp.stderr
    cert = read_certificate(tmp_path / "dp")
    assert cert["inputs"] == {"data": str(path), "kind": "file", "sha256": file_sha256(path)}
    assert cert["guarantee"] == "epsilon-DP" and cert["epsilon_spent"] <= 2.0


def test_dp_q_learning_modes_from_the_cli(tmp_path, inproc):
    common = ["--env", "privrl/CenterWalk-v0", "--n-samples", "64", "--grid", "5", "--seed", "0"]
    neither = inproc("fit", "dp-q-learning", *common, "--out", tmp_path / "a")
    both = inproc("fit", "dp-q-learning", *common, "--epsilon", "1", "--delta", "1e-4", "--noise-std", "1",
                  "--out", tmp_path / "a")
    rho = inproc("fit", "dp-q-learning", *common, "--rho", "1", "--out", tmp_path / "a")
    assert_one_line_error(neither, "needs a budget (--epsilon E --delta D)", "--noise-std S")
    assert_one_line_error(both, "not both")
    assert_one_line_error(rho, "needs an (epsilon, delta) budget", "not --rho")
    noisy = inproc("fit", "dp-q-learning", *common, "--noise-std", "0.3", "--out", tmp_path / "u")
    assert noisy.returncode == 0, noisy.stderr
    assert "(uncertified)" in noisy.stdout
    cert = json.loads((tmp_path / "u" / "certificate.json").read_text())
    assert cert["guarantee"] == "non-private" and cert["uncertified"] is True and cert["epsilon_spent"] is None
    assert cert["extra"]["noise_std"] == 0.3 and cert["extra"]["certified"] is False
    with np.load(tmp_path / "u" / "result.npz") as npz:
        assert npz["q_released"].shape == (5, 2)


def test_run_set_is_checked_before_anything_runs(tmp_path, inproc):
    typo = inproc("run", EXP, "--scale", "smoke", "--set", "epsilom=2", "--out", tmp_path / "a")
    wrong_type = inproc("run", EXP, "--scale", "smoke", "--set", "n=ten", "--out", tmp_path / "a")
    assert_one_line_error(typo, "The '--set' key 'epsilom' is not a parameter of experiment example-gaussian. "
                          "Known keys: calibration, epsilon, fail_seeds, n, sleep.", code=1)
    assert_one_line_error(wrong_type, "The '--set n' value", "must be an int")
    assert not (tmp_path / "a").exists()


def test_run_into_an_out_another_run_is_writing(tmp_path, inproc):
    import os

    from privrl.experiments.runner import sweep_lock

    with sweep_lock(tmp_path):
        res = inproc("run", EXP, "--scale", "smoke", "--seeds", "1", "--jobs", "1", "--out", tmp_path)
    assert_one_line_error(res, f"privrl run pid {os.getpid()} on host", "is writing into", "--out")


def test_unreachable_ray_address_is_one_line(tmp_path):
    pytest.importorskip("ray")
    res = _run("run", EXP, "--scale", "smoke", "--backend", "ray", "--ray-address", "127.0.0.1:1", "--quiet",
               "--no-plot", "--out", tmp_path / "never-created")
    assert_one_line_error(res, "The '--ray-address' option must name a reachable Ray cluster", "'127.0.0.1:1'")
    assert not (tmp_path / "never-created").exists()


def test_os_errors_name_the_file_asked_for_not_a_temporary_file(tmp_path, monkeypatch):
    import os

    from privrl import _io

    err = PermissionError(13, "Permission denied", str(tmp_path / ".result.json.k2j4_x9q.tmp"))
    assert cli._os_error_text(err) == f"Permission denied: {tmp_path / 'result.json'}"

    def deny(src, dst):
        raise PermissionError(13, "Permission denied", src)

    monkeypatch.setattr(_io.os, "replace", deny)
    with pytest.raises(PermissionError) as info:
        _io.atomic_write_bytes(tmp_path / "result.json", b"{}")
    assert info.value.filename == str(tmp_path / "result.json") and ".tmp" not in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == []
    assert os.environ.get("PRIVRL_DEBUG") is None


_CALIBRATE_TIMEOUT = 30  # seconds: "at once" is a few seconds; a hang is cut here


@pytest.mark.parametrize("mechanism,epsilon", [("gaussian", "1000"), ("gaussian", "1e6"), ("laplace", "1e6")])
def test_calibrate_answers_at_once_for_huge_epsilon(mechanism, epsilon):
    args = (["calibrate", mechanism, "--epsilon", epsilon, "--json"]
            + (["--delta", "1e-5"] if mechanism == "gaussian" else []))
    try:
        res = subprocess.run(_cmd(args), capture_output=True, text=True, timeout=_CALIBRATE_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"privrl calibrate {mechanism} --epsilon {epsilon} took more than {_CALIBRATE_TIMEOUT} s")
    assert res.returncode == 0, res.stderr
    table = json.loads(res.stdout)
    assert table["epsilon"] == float(epsilon)  # passed through, not clipped
    assert 0 < table["noise_std"] < math.inf
    assert table["epsilon_pld"] <= float(epsilon) * (1 + 1e-9)


def test_dp_apvi_learns_a_logged_outcome_reward_from_the_cli(tmp_path, inproc):
    """``--reward logged``: the reward sums are released as a third family (declared F_max = 1)."""
    from privrl.certificate import read_certificate
    from privrl.envs import sparse_tabular

    model = sparse_tabular(n_states=26, n_actions=5, horizon=6, n_levels=4, n_admissible=2, rng=1)
    path = tmp_path / "clinic.npz"
    model.sample(model.logging_policy, 500, rng=0).save(path)
    out = inproc("fit", "dp-apvi", "--data", path, "--pad-to-horizon", "6", "--reward", "logged", "--F-max", "1",
                 "--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--out", tmp_path / "dp")
    assert out.returncode == 0, out.stderr
    cert = read_certificate(tmp_path / "dp")
    assert cert["extra"]["reward"] == "logged" and cert["params"]["F_max"] == 1.0
    assert 0.99 <= cert["epsilon_spent"] <= 1.0
    bad = inproc("fit", "apvi", "--data", path, "--pad-to-horizon", "6", "--reward", "logged", "--F-max", "0.5",
                 "--out", tmp_path / "a")
    assert_one_line_error(bad, "F_max=0.5")


def test_commands_ask_for_the_compile_notice_unless_quiet(monkeypatch, capsys):
    asked = []
    monkeypatch.setattr(commands, "request_compile_notice", asked.append)
    assert cli.main(["bench", "--list", "--tasks", "chain"]) == 0
    assert cli.main(["bench", "--list", "--tasks", "chain", "--quiet"]) == 0
    assert asked == [False, True]
