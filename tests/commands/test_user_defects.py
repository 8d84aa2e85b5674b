"""Defects a new user met on the command line, each fixed and pinned here: a bad ``--set`` value is
refused before the sweep, a subnormal ρ is a one-line error, ``--data DIR`` and ``privrl plot FILE``
say what is wrong, ``privrl list`` wraps to the terminal and the fit summary names the guarantee once."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from privrl import cli
from privrl.commands.sweeps import wrap_listing
from privrl.errors import InvalidParameterError
from privrl.privacy import PrivacyBudget


@pytest.fixture
def call(capsys):
    """``privrl ARGS`` in this process: (exit code, stdout, the stderr lines)."""

    def run(*args):
        code = cli.main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err.strip().splitlines()

    return run


def test_a_bad_set_value_is_refused_before_any_run(call, tmp_path, monkeypatch):
    from privrl.experiments import runner

    def never(*args, **kwargs):
        raise AssertionError("the sweep started")

    monkeypatch.setattr(runner, "run_sweep", never)
    out = tmp_path / "never-created"
    code, _, err = call("run", "balle2016-fig1", "--scale", "smoke", "--set", "delta=1.0", "--out", out)
    assert code == 1 and len(err) == 1
    assert err[0] == ("privrl run: error: The '--set delta' parameter of experiment balle2016-fig1 must be a float "
                      "in [0.0, 1.0). Got 1.0 instead.")
    code, _, err = call("run", "zhou2022-regret", "--scale", "smoke", "--set", "epsilon=-1", "--out", out)
    assert code == 1 and "'--set epsilon'" in err[0] and len(err) == 1
    assert not out.exists()


def test_a_subnormal_budget_is_a_one_line_error(call, tmp_path):
    with pytest.raises(InvalidParameterError, match=r"'rho' .* whose reciprocal is finite .* Got 1e-320"):
        PrivacyBudget(rho=1e-320)
    with pytest.raises(InvalidParameterError, match=r"'epsilon' .* whose reciprocal is finite"):
        PrivacyBudget(epsilon=5e-324)
    assert PrivacyBudget(rho=1e-300).rho == 1e-300          # tiny but normal: calibrated and accounted
    code, _, err = call("fit", "dp-apvi", "--env", "privrl/RandomTabularMDP-v0", "--rho", "1e-320",
                        "--episodes", "20", "--seed", "0", "--out", tmp_path / "fit")
    assert code == 1 and len(err) == 1 and "'rho'" in err[0] and "Got 1e-320" in err[0]
    assert "Overflow" not in err[0]


def test_data_that_is_a_directory_or_needs_minari_says_so(call, tmp_path, monkeypatch):
    code, _, err = call("fit", "dp-lsw", "--data", tmp_path, "--gamma", "0.9", "--epsilon", "1", "--delta", "1e-5",
                        "--out", tmp_path / "out")
    assert code == 1 and len(err) == 1
    assert err[0] == (f"privrl fit dp-lsw: error: The '--data' option {str(tmp_path)!r} is a directory, not a "
                      "dataset: give a .npz dataset file (privrl.data format) or a local Minari dataset id.")
    from privrl.data import minari_io

    def no_minari():
        raise ImportError("Minari support needs the 'minari' extra: pip install 'privrl[minari]'")

    monkeypatch.setattr(minari_io, "_import_minari", no_minari)
    code, _, err = call("fit", "dp-lsw", "--data", "D4RL/door/human-v2", "--gamma", "0.9", "--epsilon", "1",
                        "--delta", "1e-5", "--out", tmp_path / "out2")
    assert code == 1 and len(err) == 1 and "internal error" not in err[0]
    assert "needs the 'minari' extra (pip install 'privrl[minari]')" in err[0]


def test_plot_and_report_of_a_file_say_it_is_not_a_directory(call, tmp_path):
    file = tmp_path / "results.csv"
    file.write_text("x\n")
    for command in ("plot", "report"):
        code, _, err = call(command, file)
        assert code == 1 and len(err) == 1
        assert f"Results directory {file} is not a directory (it is a file)" in err[0]
    code, _, err = call("plot", tmp_path / "missing")
    assert code == 1 and "does not exist" in err[0]


def test_list_wraps_to_the_terminal_width(call, monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    code, out, _ = call("list")
    lines = out.splitlines()
    assert code == 0 and lines and max(map(len, lines)) <= 72
    from privrl.experiments import all_experiments

    column = max(map(len, all_experiments())) + 2      # ids in a column, texts indented under it
    assert lines[0].startswith("balle2016-fig1 ")
    assert all(line[:column].strip() in all_experiments() or not line[:column].strip() for line in lines)
    assert any(not line[:column].strip() for line in lines)   # some descriptions were wrapped
    monkeypatch.delenv("COLUMNS")
    rows = [("a", "word " * 60), ("bb", "short")]
    wrapped = wrap_listing(rows)   # not a terminal: the default width
    assert max(map(len, wrapped[0].splitlines())) <= 100 and wrapped[1] == "bb  short"
    assert all(line.startswith("    ") for line in wrapped[0].splitlines()[1:])


def _dataset(path):
    from privrl.data import TrajectoryDataset

    rng = np.random.default_rng(0)
    n_ep, horizon = 40, 3
    TrajectoryDataset(rng.integers(0, 3, n_ep * horizon), np.zeros(n_ep * horizon, int),
                      rng.uniform(0, 1, n_ep * horizon), rng.integers(0, 3, n_ep * horizon),
                      np.arange(0, n_ep * horizon + 1, horizon), n_states=3, n_actions=1, horizon=horizon).save(path)
    return path


def test_fit_summary_names_the_guarantee_once(call, tmp_path):
    data = _dataset(tmp_path / "d.npz")
    code, out, err = call("fit", "dp-lsw", "--data", data, "--gamma", "0.9", "--epsilon", "1", "--delta", "1e-6",
                          "--seed", "0", "--out", tmp_path / "a")
    assert code == 0, err
    line, utility = out.strip().splitlines()    # the summary, then the main utility diagnostic
    assert utility.startswith("dp-lsw: utility: ")
    assert len(re.findall(r"-DP\b", line)) == 1, line
    assert line.startswith("dp-lsw: (epsilon, delta)-DP: ε spent ") and " at δ = 1e-06 " in line
    assert "of the budget epsilon=1, delta=1e-06;" in line
    code, out, _ = call("fit", "lsw", "--data", data, "--gamma", "0.9", "--out", tmp_path / "b")
    assert code == 0 and out.startswith("lsw: non-private; wrote ") and "\nlsw: utility: " in out


def test_help_imports_no_numpy():
    """``privrl --help`` builds the whole parser without the numerical stack (start-up time)."""
    code = ("import sys; from privrl import cli; assert cli.main(['--help']) == 0\n"
            "heavy = [m for m in ('numpy', 'dp_accounting', 'gymnasium', 'pandas') if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == "HEAVY="
