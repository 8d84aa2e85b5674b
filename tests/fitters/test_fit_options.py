"""``privrl fit`` options generated from the estimators' declared parameters (issue #14 §3).

For every fit command that names its estimator (``FitCommand(estimator=...)``): the help page
lists one option per declared parameter (minus ``exclude``), each option reaches the estimator,
and every bad value of the declaration (``Param.bad_values``) is a one-line error naming the
option, never the Python keyword.
"""

from __future__ import annotations

import argparse
import math
import re

import numpy as np
import pytest

from privrl import cli
from privrl._params import Param, param
from privrl.base import Estimator, PrivateEstimator
from privrl.commands.fit import budget_from
from privrl.errors import InvalidParameterError
from privrl.fitters import (
    FitCommand,
    add_estimator_options,
    all_fit_commands,
    build_estimator,
    estimator_options,
    estimator_params,
    option_error,
)

COMMANDS = {name: cmd for name, cmd in all_fit_commands().items() if cmd.estimator is not None}
BUDGET_ARGS = {"any": ["--epsilon", "1", "--delta", "1e-6"], "epsilon": ["--epsilon", "1", "--delta", "1e-6"],
               "none": []}
#: the fixed-arity source argument of a command (validation happens before the source is read;
#: the command line only checks that a --data file exists: see _data_file)
SOURCE = {"env": ["--env", "privrl/RandomTabularMDP-v0"], "data": ["--data", "data.npz"]}


def _required(cmd: FitCommand) -> list[str]:
    """A valid value of each required option (argparse refuses a command line without them)."""
    out: list[str] = []
    for p in estimator_options(cmd.estimator, exclude=cmd.exclude):
        if p.required:
            out += [p.flag, _good_value(p)[0]]
    return out


def _argv(name: str, cmd: FitCommand, *extra: str) -> list[str]:
    return ["fit", name, *SOURCE["env" if "env" in cmd.sources else "data"], *BUDGET_ARGS[cmd.budget],
            *_required(cmd), *extra]


def _data_file(directory) -> None:
    """A small dataset at SOURCE's path (relative to ``directory``) for the data-only commands."""
    from privrl.data import TrajectoryDataset

    TrajectoryDataset(np.array([0, 1]), np.array([0, 0]), np.array([0.0, 1.0]), np.array([1, 2]),
                      np.array([0, 2]), n_states=3, n_actions=1, horizon=2).save(directory / SOURCE["data"][1])


def _parse(name: str, cmd: FitCommand, *extra: str) -> argparse.Namespace:
    args = cli.build_parser("fit").parse_args(_argv(name, cmd, *extra))
    args.budget = budget_from(args, cmd)
    return args


def _help_flags(capsys, name: str) -> tuple[set[str], set[str]]:
    """(every option of the help page, the options of its 'parameters of ...' group)."""
    assert cli.main(["fit", name, "--help"]) == 0
    text = capsys.readouterr().out
    head, _, group = text.partition("\nparameters of ")
    flags = lambda s: set(re.findall(r"(?<![\w-])--[A-Za-z][\w-]*", s))  # noqa: E731
    return flags(text), flags(group)


def _good_value(p: Param) -> tuple[str, object]:
    """(command-line text, parsed value) of a valid value other than the default."""
    if p.kind == "option":
        candidates: list = list(p.options)
    elif p.kind == "bool":
        candidates = [True, False]
    else:
        lo = p.low if p.low is not None else (p.high - 4 if p.high is not None else 0.0)
        hi = p.high if p.high is not None else lo + 4
        candidates = list(p.options) + [lo + (hi - lo) * f for f in (0.5, 0.25, 0.75)]
        if p.kind == "int":
            candidates = [c if isinstance(c, str) else int(round(c)) for c in candidates]
    for value in candidates:
        try:
            p.validate(value, "test")
        except InvalidParameterError:
            continue
        if value != p.default:
            return (str(value).lower() if isinstance(value, bool) else str(value)), value
    raise AssertionError(f"no valid non-default value found for {p.name}")


def test_some_commands_are_generated_from_declarations():
    assert {"dp-apvi", "apvi", "pevi", "vapvi", "dp-vapvi"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_declared_parameter_is_an_option(name, capsys):
    cmd = COMMANDS[name]
    declared = {p.flag for p in cmd.estimator.params
                if p.name not in cmd.exclude and p.cli and p.kind not in ("budget", "array", "object")}
    assert declared == {p.flag for p in estimator_options(cmd.estimator, exclude=cmd.exclude)}
    shown, group = _help_flags(capsys, name)
    assert group == declared, f"{name}: help lists {sorted(group)}, declared {sorted(declared)}"
    assert declared <= shown
    # and nothing a command excludes shows up
    assert not {cmd.estimator.param(n).flag for n in cmd.exclude} & group


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_defaults_are_the_declared_defaults(name):
    cmd = COMMANDS[name]
    args = _parse(name, cmd)
    params = estimator_params(args, cmd.estimator)
    assert params == {p.name: _good_value(p)[1] if p.required else p.default
                      for p in estimator_options(cmd.estimator, exclude=cmd.exclude)}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_reaches_the_estimator(name):
    """No option is listed but ignored or refused: a valid non-default value of each declared
    parameter ends up in the built estimator."""
    cmd = COMMANDS[name]
    for p in estimator_options(cmd.estimator, exclude=cmd.exclude):
        text, value = _good_value(p)
        est = build_estimator(_parse(name, cmd, p.flag, text), cmd.estimator)
        assert est.get_params()[p.name] == value, (name, p.name)
    if issubclass(cmd.estimator, PrivateEstimator):
        assert build_estimator(_parse(name, cmd), cmd.estimator).budget.epsilon == 1.0


def _cli_bad_values(p: Param) -> list[str]:
    """The declaration's bad values that a command line can type (a bool's 'yes' is a valid
    spelling of true on the command line: 'maybe' stands in for it)."""
    if p.kind == "bool":
        return ["maybe"]
    return [repr(v) if isinstance(v, float) and not math.isnan(v) else str(v)
            for v in p.bad_values() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_bad_values_are_one_line_errors_naming_the_option(name, tmp_path, capsys, monkeypatch):
    cmd = COMMANDS[name]
    if "env" not in cmd.sources:
        monkeypatch.chdir(tmp_path)
        _data_file(tmp_path)
    tried = 0
    for p in estimator_options(cmd.estimator, exclude=cmd.exclude):
        for bad in _cli_bad_values(p):
            code = cli.main([*_argv(name, cmd, f"{p.flag}={bad}"), "--out", str(tmp_path / "o")])
            err = capsys.readouterr().err.strip()
            assert code != 0, (name, p.name, bad)
            assert len(err.splitlines()) == 1 and "Traceback" not in err, err
            assert f"--{p.name.replace('_', '-')}" in err and "parameter of" not in err, err
            assert "or None" not in err, err        # the command line cannot give None
            tried += 1
    assert tried >= 2 and not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- the pieces
class _Toy(PrivateEstimator):
    lam: float = param("ridge λ with 100% of the weight", default=1.0, low=0.0, closed="neither")
    knob: float | None = param("a knob (None: from the preset)", default=None, low=0.0, none_ok=True)
    mode: str = param("the mode", default="a", kind="option", options=("a", "b"))
    flag_on: bool = param("a switch", default=False, kind="bool")
    table: object = param("an array", default=None, kind="array", none_ok=True)
    model: object = param("an object", default=None, kind="object", none_ok=True)
    hidden: int = param("not on the command line", default=1, kind="int", cli=False)


def _toy_parser(**kwargs):
    parser = cli._Parser(prog="toy")
    add_estimator_options(parser, _Toy, **kwargs)
    return parser


def test_options_skip_budget_arrays_objects_and_cli_false():
    names = [p.name for p in estimator_options(_Toy)]
    assert names == ["calibration", "secure", "lam", "knob", "mode", "flag_on"]
    assert [p.name for p in estimator_options(_Toy, exclude=("secure", "knob"))] == \
        ["calibration", "lam", "mode", "flag_on"]
    with pytest.raises(ValueError, match=r"\['lamda'\]"):
        estimator_options(_Toy, exclude=("lamda",))


def test_parsing_bools_numbers_and_help():
    parser = _toy_parser()
    args = parser.parse_args(["--secure", "--flag-on", "false", "--lam", "2", "--knob", "0"])
    assert (args.secure, args.flag_on, args.lam, args.knob, args.mode) == (True, False, 2.0, 0.0, "a")
    assert estimator_params(args, _Toy) == {"calibration": "tight", "secure": True, "lam": 2.0, "knob": 0.0,
                                            "mode": "a", "flag_on": False}
    text = parser.format_help()      # '%' in a help text is escaped, not a format error
    assert "ridge λ with 100% of the weight (a float in (0.0, inf); default 1.0)" in " ".join(text.split())
    assert "(a float in [0.0, inf); default None)" in " ".join(text.split())  # no "or None" on the CLI
    with pytest.raises(SystemExit):
        parser.parse_args(["--secure", "maybe"])
    with pytest.raises(ValueError, match="were not added"):
        estimator_params(argparse.Namespace(), _Toy)


def test_build_estimator_validates_at_once_and_supplies_the_budget():
    from privrl.privacy import PrivacyBudget

    budget = PrivacyBudget(rho=1.0)
    parser = _toy_parser()
    est = build_estimator(argparse.Namespace(**vars(parser.parse_args(["--lam", "3"])), budget=budget), _Toy)
    assert est.budget is budget and est.lam == 3.0 and est.table is None
    bad = argparse.Namespace(**vars(parser.parse_args(["--lam", "-1"])), budget=budget)
    with pytest.raises(InvalidParameterError, match="The 'lam' parameter of _Toy") as info:
        build_estimator(bad, _Toy)
    assert str(option_error(info.value, bad)) == "The '--lam' option must be a float in (0.0, inf). Got -1.0 instead."


def test_option_error_words_only_declared_options():
    args = _toy_parser().parse_args([])
    knob = InvalidParameterError("The 'knob' parameter of _Toy.fit must be a float in [0.0, inf) or None. "
                                 "Got -2.0 instead.")
    assert str(option_error(knob, args)) == "The '--knob' option must be a float in [0.0, inf). Got -2.0 instead."
    budget = InvalidParameterError("The 'budget' parameter of _Toy must be a rho budget. Got "
                                   "PrivacyBudget(epsilon=1.0) instead.")
    assert str(option_error(budget, args, "--epsilon/--delta/--rho")).startswith(
        "The budget (--epsilon/--delta/--rho) must be a rho budget.")
    unchanged = [
        InvalidParameterError("The 'hidden' parameter of _Toy must be an int. Got 'x' instead."),   # not an option
        InvalidParameterError("The 'lam' parameter of DPVAPVI must be a float. Got -1.0 instead."),  # another class
        InvalidParameterError("The '--out' directory 'x' is not empty."),
    ]
    for exc in unchanged:
        assert option_error(exc, args) is exc
    excluded = _toy_parser(exclude=("lam",)).parse_args([])
    lam = InvalidParameterError("The 'lam' parameter of _Toy must be a float. Got -1.0 instead.")
    assert option_error(lam, excluded) is lam


def test_option_error_names_a_command_option_supplying_a_declared_parameter():
    """A parameter that is not an estimator option (an array, an object) but that the command
    supplies from its own option of the same name is named by that option."""
    table = InvalidParameterError("The 'table' parameter of _Toy must be 3 values. Got 2 instead.")
    args = _toy_parser().parse_args([])
    assert option_error(table, args) is table                      # no --table option: unchanged
    args.table = [0.0, 1.0]                                        # the command's own --table
    assert str(option_error(table, args)) == "The '--table' option must be 3 values. Got 2 instead."
    other = InvalidParameterError("The 'undeclared' parameter of _Toy must be 3 values. Got 2 instead.")
    args.undeclared = 1
    assert option_error(other, args) is other


def test_fit_command_checks_its_declaration():
    class Bare(Estimator):
        pass

    run = lambda args: None  # noqa: E731
    with pytest.raises(ValueError, match="does not declare"):
        FitCommand("x", "x", lambda p: None, run, estimator=_Toy, exclude=("lamda",))
    with pytest.raises(ValueError, match="declares no parameters"):
        FitCommand("x", "x", lambda p: None, run, estimator=Bare)
    with pytest.raises(ValueError, match="exclude needs an estimator"):
        FitCommand("x", "x", lambda p: None, run, exclude=("lam",))
    parser = cli._Parser(prog="toy")
    parser.add_argument("--lam", type=float)
    with pytest.raises(ValueError,
                       match="--lam of _Toy clash with options the command adds itself: name them in exclude"):
        add_estimator_options(parser, _Toy)
    add_estimator_options(parser, _Toy, exclude=("lam",))   # the command supplies --lam itself


def test_secure_refuses_a_seed_and_runs_without_one(tmp_path, capsys):
    pytest.importorskip("opendp")
    import json

    base = ["fit", "dp-apvi", "--env", "privrl/RandomTabularMDP-v0", "--rho", "1", "--episodes", "50", "--secure",
            "--constants", "practical"]
    assert cli.main([*base, "--seed", "0", "--out", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("privrl fit dp-apvi: error: --seed cannot be combined with --secure: OpenDP's samplers draw "
                   "from the OS CSPRNG and cannot be seeded; drop --seed.")
    assert not (tmp_path / "a").exists()
    assert cli.main([*base, "--out", str(tmp_path / "b")]) == 0, capsys.readouterr().err
    cert = json.loads((tmp_path / "b" / "certificate.json").read_text())
    assert cert["params"]["secure"] is True and cert["guarantee"] == "rho-zCDP"
    assert json.loads((tmp_path / "b" / "result.json").read_text())["seed"] is None
