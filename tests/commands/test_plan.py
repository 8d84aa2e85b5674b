"""``privrl plan``: the table and the verdict, the same numbers as privrl.plan, JSON, and one-line
errors for bad inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from privrl import cli, plan

CLINIC = ["dp-apvi", "--n", "1e5", "--states", "750", "--actions", "25", "--horizon", "20"]
BUDGET = ["--epsilon", "1", "--delta", "1e-6"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # --help
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_prints_the_table_the_verdict_and_the_knobs(capsys):
    code, out, err = _run(capsys, "plan", *CLINIC, *BUDGET)
    assert code == 0, err
    expected = plan("dp-apvi", n=10**5, states=750, actions=25, horizon=20, epsilon=1.0, delta=1e-6)
    assert out.strip() == expected.text()
    for header in ("released statistic", "noise std", "typical value", "noise/signal", "verdict"):
        assert header in out
    assert "n_sa: visits of one released (h, s, a) cell" in out and "verdict: HOPELESS" in out
    assert "more data" in out and "larger epsilon" in out and "public groups" in out


def test_json_is_the_python_plan(capsys):
    code, out, err = _run(capsys, "plan", *CLINIC, *BUDGET, "--groups", "22", "--param", "constants=\"practical\"",
                          "--json", "--no-knobs")
    assert code == 0, err
    result = plan("dp-apvi", n=10**5, states=750, actions=25, horizon=20, groups=22, epsilon=1.0, delta=1e-6,
                  params={"constants": "practical"}, knobs=False)
    assert json.loads(out) == json.loads(json.dumps(result.to_dict()))
    assert json.loads(out)["public"]["groups"] == 22 and json.loads(out)["knobs"] == []


@pytest.mark.parametrize(("argv", "message"), [
    (["plan", "nope", "--n", "5", "--epsilon", "1"], "Unknown plan algorithm 'nope'. Known:"),
    (["plan", *CLINIC[:-2], *BUDGET], "The plan of dp-apvi needs '--horizon'"),
    (["plan", *CLINIC, *BUDGET, "--features", "3"], "does not read '--features'"),
    (["plan", *CLINIC], "needs a budget: '--epsilon' (and '--delta') or '--rho'"),
    (["plan", *CLINIC, "--epsilon", "-1"], "The '--epsilon' option must be a float in (0.0, inf]"),
    (["plan", *CLINIC, "--epsilon", "1", "--groups", "800"], "The '--groups' option must be at most"),
    (["plan", "dp-vapvi", "--n", "9", "--horizon", "3", "--features", "2", "--epsilon", "1"],
     "The budget (--epsilon/--delta/--rho) must be an (epsilon, delta) budget with delta > 0 or a rho budget"),
    (["plan", *CLINIC, *BUDGET, "--param", "calibration=\"bad\""], "The 'calibration' parameter of DPAPVI"),
    (["plan", *CLINIC, *BUDGET, "--param", "foo=1"], "The '--param' option must name a parameter of DPAPVI"),
    (["plan", *CLINIC, *BUDGET, "--param", "budget=1"], "the budget is --epsilon/--delta/--rho). Got 'budget'"),
    (["plan", *CLINIC[:2], "0", *CLINIC[3:], *BUDGET], "argument --n: must be an int in [1,"),
    (["plan", *CLINIC, "--epsilon", "x"], "argument --epsilon: expected a number"),
])
def test_bad_inputs_are_one_line_errors(capsys, argv, message):
    code, out, err = _run(capsys, *argv)
    assert code in (1, 2) and out == ""
    assert message in err and err.count("\n") == 1, err


def test_help_lists_the_algorithms_and_what_each_reads(capsys):
    code, out, _ = _run(capsys, "plan", "--help")
    assert code == 0
    for name in ("dp-apvi", "dp-vapvi", "linopt-vi", "dp-q-learning"):
        assert name in out
    assert "--next-states" in out and "--F-max" in out


def test_privrl_help_stays_free_of_numpy():
    """Building the parser for any other command imports no NumPy (the planners load only for plan)."""
    code = ("import sys; from privrl import cli; cli.build_parser(None); cli.build_parser('list'); "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
