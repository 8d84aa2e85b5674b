"""The ``privrl`` command line: every command's success and error paths, as subprocesses.

Errors must be one line on stderr with a non-zero exit code and never a traceback. Subprocesses
of one test are started together (``_run_all``) to keep the suite quick.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privrl import cli
from privrl.experiments import get_experiment

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

    monkeypatch.setattr(cli, "_cmd_list", broken)
    assert cli.main(["list"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["privrl list: error: internal error: RuntimeError: boom "
                                        "second line (set PRIVRL_DEBUG=1 for the traceback)"]


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
    table = cli.calibration_table("laplace", 1.0, 0.0, sensitivity=1.0, compositions=1)
    assert table["noise_scale"] == 1.0 and table["noise_std"] == pytest.approx(math.sqrt(2))
    assert table["epsilon_pld"] == pytest.approx(1.0, abs=1e-6)
    assert table["delta_evaluated"] == cli.PURE_DP_DELTA


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
    assert cli.check_model(_Tabular(P, r, np.array([0.5, 0.5]))) == \
        ["P stochastic", "rewards within reward_bounds", "initial distribution"]
    with pytest.raises(InvalidDataError, match="not stochastic"):
        cli.check_model(_Tabular(P * 1.1, r, np.array([0.5, 0.5])))
    with pytest.raises(InvalidDataError, match="reward_bounds"):
        cli.check_model(_Tabular(P, r + 2.0, np.array([0.5, 0.5])))
    with pytest.raises(InvalidDataError, match="initial"):
        cli.check_model(_Tabular(P, r, np.array([0.7, 0.7])))


# --------------------------------------------------------------------------- audit
def test_audit_delegates_or_says_not_available(monkeypatch, capsys):
    if cli._audit_module() is not None:
        res = _run("audit", "--help")
        assert res.returncode == 0 and "usage: privrl audit" in res.stdout
    monkeypatch.setattr(cli, "_audit_module", lambda: None)
    assert cli.main(["audit"]) == 2
    assert capsys.readouterr().err.strip() == \
        "privrl audit: error: not available: privrl.audit.cli is not installed in this version"
