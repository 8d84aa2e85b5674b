"""The ``privrl`` command line.

    privrl list [--json [--scale smoke|quick|paper]]
    privrl run ID [ID ...] [--scale smoke|quick|paper] [--seeds N | A:B] [--jobs N]
               [--backend local|ray] [--ray-address ADDR] [--out DIR] [--set KEY=JSON] [--quiet]
    privrl reproduce [--scale quick|paper] [--out DIR] [--jobs N] [--backend local|ray] [--only ID ...]
    privrl plot OUT
    privrl report OUT|METRICS [--evidence DIR [--wall-seconds S] [--readme PATH]]
    privrl calibrate gaussian|laplace --epsilon E [--delta D] [--sensitivity S] [--compositions K] [--json]
    privrl fit ALGORITHM (--data FILE|MINARI_ID | --env ENV_ID) [--epsilon E [--delta D] | --rho R]
               [--reward-bounds LO HI] [--truncate-to-horizon H] [--pad-to-horizon H]
               [--out DIR [--force]] [--seed S]
               [algorithm options]     (each algorithm's --help lists exactly what it accepts)
    privrl plan ALGORITHM --n N [--states S --actions A --horizon H ...] (--epsilon E [--delta D] | --rho R)
               [--groups G] [--param KEY=VALUE] [--json] [--no-knobs]
    privrl check-env ENV_ID
    privrl audit ...                      (see 'privrl audit --help')
    privrl bench [--tasks T,...] [--algorithms A,...] [--budgets B,...] [--seeds N] [--quick] [--audit]
                 [--plugin module:Class] [--out DIR] [--leaderboard DIR] [--backend local|ray] [--jobs N]
    privrl bench --list | --export-minari DIR

This module parses the arguments and dispatches: what each sub-command does lives in
:mod:`privrl.commands` (and the audit's in :mod:`privrl.audit.cli`). Building the parser imports no
NumPy, so ``privrl --help`` starts at once.

Every :class:`~privrl.errors.PrivrlError`, bad argument, unknown id, missing or corrupt file and
invalid budget ends in one line on stderr and a non-zero exit code (1 for errors, 2 for usage);
set ``PRIVRL_DEBUG=1`` to see the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

import privrl
from privrl.commands import bench, calibrate, check_env, die, dispatch, fit, one_line, plan, sweeps
from privrl.errors import PrivrlError
from privrl.experiments.spec import BACKENDS, SCALES
from privrl.fitters import add_estimator_options, all_fit_commands, count_type

__all__ = ["main", "build_parser"]

PROG = "privrl"
#: bounds of count options (larger values are refused with one line, never an allocation failure)
MAX_JOBS = 4096
MAX_COMPOSITIONS = 10**9
MAX_HORIZON = 10**6


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see '{self.prog} --help')\n")


# --------------------------------------------------------------------------- argument types
def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _nonneg_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _key_value(text: str) -> tuple[str, object]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def _epsilon_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers such as 0.1,1,10; got {text!r}") from None
    if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite epsilons > 0 such as 0.1,1,10; got {text!r}")
    return values


# --------------------------------------------------------------------------- option groups
def _add_sweep_options(p: argparse.ArgumentParser, default_scale: str = "quick") -> None:
    p.add_argument("--scale", choices=SCALES, default=default_scale,
                   help=f"smoke: seconds; quick: the demo; paper: the paper's full scale (default {default_scale})")
    _add_runner_options(p)


def _add_runner_options(p: argparse.ArgumentParser, default_out: str = "results") -> None:
    p.add_argument("--jobs", type=count_type(1, MAX_JOBS), default=None, help="parallel runs (default: all cores)")
    p.add_argument("--backend", choices=BACKENDS, default="local", help="local process pool (default) or Ray")
    p.add_argument("--ray-address", default=None,
                   help="address of an existing Ray cluster (default: start a local one)")
    p.add_argument("--out", default=default_out, help=f"results directory (default: {default_out})")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _add_fit_common(p: argparse.ArgumentParser, cmd: Any) -> None:
    """The common options ``cmd`` (a :class:`~privrl.fitters.FitCommand`) accepts, and only those
    in its help page; budget options of a non-private command are hidden, to refuse them clearly."""
    data_help = ("a .npz dataset file (privrl.data format) or a local Minari dataset id "
                 "(get one with 'minari download ID')")
    env_help = "a Gymnasium environment id (privrl/..., FrozenLake-v1, Taxi-v4, CliffWalking-v1, ...)"
    if len(cmd.sources) == 2:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--data", help=data_help)
        src.add_argument("--env", help=env_help)
    elif cmd.sources == ("data",):
        p.add_argument("--data", required=True, help=data_help)
        p.set_defaults(env=None)
    else:
        p.add_argument("--env", required=True, help=env_help)
        p.set_defaults(data=None)
    if "data" in cmd.sources:
        p.add_argument("--reward-bounds", nargs=2, type=_float, metavar=("LO", "HI"), default=None,
                       help="public bounds on every reward of --data (required for a Minari dataset "
                            "not written by privrl; never read them off the data)")
        p.add_argument("--truncate-to-horizon", type=count_type(1, MAX_HORIZON), metavar="H", default=None,
                       help="cut episodes of --data longer than H steps after step H (their return is the "
                            "H-step return; the cut step is not terminal); applied before --pad-to-horizon")
        p.add_argument("--pad-to-horizon", type=count_type(1, MAX_HORIZON), metavar="H", default=None,
                       help="pad episodes of --data that end in a terminal state with absorbing "
                            "zero-reward steps to H steps (the fixed-horizon form)")
    hidden = argparse.SUPPRESS
    if cmd.budget == "none":
        for flag in ("--epsilon", "--delta", "--rho"):
            p.add_argument(flag, type=_float, default=None, help=hidden)
    else:
        p.add_argument("--epsilon", type=_float, default=None,
                       help="ε of an (ε, δ)-DP budget" + ("" if cmd.budget_required else
                                                          " (or no budget: see below)"))
        p.add_argument("--delta", type=_float, default=None, help="δ of an (ε, δ)-DP budget (default 0)")
        p.add_argument("--rho", type=_float, default=None,
                       help="ρ of a ρ-zCDP budget (instead of ε, δ)" if cmd.budget == "any" else hidden)
    p.add_argument("--out", default=None, help="output directory (default: fit-ALGORITHM); must be empty "
                   "or new unless --force")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out (replaces the "
                   "result and certificate files)")
    p.add_argument("--seed", type=_nonneg_int, default=None,
                   help="random seed (default: fresh OS entropy; a known seed makes the noise "
                        "predictable, use one only for reproducible experiments)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (shown on a terminal for fits "
                   "running over 10 s) and no compile notice")


def _add_fit_commands(p: argparse.ArgumentParser) -> None:
    """One sub-parser per registered fit command (imports the families' fit modules)."""
    commands = all_fit_commands()
    algos = p.add_subparsers(dest="algorithm", metavar="ALGORITHM", required=True,
                             help=", ".join(commands) or "(no algorithm registered)")
    for name, cmd in commands.items():
        ap = algos.add_parser(name, help=cmd.help, description=cmd.help)
        _add_fit_common(ap, cmd)
        cmd.add_arguments(ap)
        if cmd.estimator is not None:
            add_estimator_options(ap, cmd.estimator, exclude=cmd.exclude)
        ap.set_defaults(handler=fit.run)


# --------------------------------------------------------------------------- parser
def _first_command(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _audit_later(args: argparse.Namespace) -> int:
    """The handler of the placeholder ``audit`` parser: parse again with the audit's own parser."""
    return main(["audit", *args.rest])


def _add_paper_commands(sub: argparse._SubParsersAction) -> None:
    """The sub-commands that reproduce the papers: list, run, reproduce, frontier, plot, report."""
    p = sub.add_parser("list", help="registered experiments")
    p.add_argument("--json", action="store_true", help="a JSON list of {id, paper, figure, description, seeds, "
                   "scale, deviations}")
    p.add_argument("--scale", choices=SCALES, default="quick",
                   help="the scale whose deviations from the paper --json lists (default quick)")
    p.set_defaults(handler=sweeps.list_experiments)

    p = sub.add_parser("run", help="run experiments (resumes: finished runs are skipped)")
    p.add_argument("ids", nargs="+", metavar="ID", help="experiment ids (see 'privrl list')")
    _add_sweep_options(p)
    p.add_argument("--seeds", default=None, help="N (seeds 0..N-1) or A:B (seeds A..B-1); default per scale")
    p.add_argument("--set", type=_key_value, action="append", metavar="KEY=JSON",
                   help="override a parameter of every setting (repeatable)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the figures after the runs")
    p.set_defaults(handler=sweeps.run)

    p = sub.add_parser("reproduce", help="run every experiment, then plot and write the report")
    _add_sweep_options(p)
    p.add_argument("--only", nargs="+", metavar="ID", default=None,
                   help="reproduce only these experiments (default: every registered one)")
    p.add_argument("--no-plot", action="store_true",
                   help="the runs only: no figures and no report (e.g. when 'privrl report --evidence' follows)")
    p.set_defaults(handler=sweeps.reproduce)

    p = sub.add_parser("frontier", help="privacy–utility frontier of one algorithm: utility against epsilon "
                       "for paper / sound / tight calibration beside the non-private reference (CSV + plot)")
    p.add_argument("algorithm", metavar="ALGORITHM", help="e.g. dp-lsw, dp-apvi, dp-vapvi, linopt-vi, dp-q-learning")
    p.add_argument("--env", default=None, help="environment id (where the algorithm's frontier takes one)")
    p.add_argument("--data", default=None, help="dataset file or Minari id (where the frontier takes one)")
    p.add_argument("--epsilons", type=_epsilon_list, default=None,
                   help="comma-separated epsilons, e.g. 0.1,1,10 (default: the experiment's grid)")
    p.add_argument("--seeds", default=None, help="N (seeds 0..N-1) or A:B; default per scale")
    _add_sweep_options(p)
    p.set_defaults(handler=sweeps.frontier, out="frontier")

    p = sub.add_parser("plot", help="draw the figures of a results directory")
    p.add_argument("out", metavar="OUT", help="results directory")
    p.set_defaults(handler=sweeps.plot)

    p = sub.add_parser("report", help="write OUT/report.md (with --evidence: collect the metrics, PNG figures "
                       "and report into DIR)")
    p.add_argument("out", metavar="OUT", help="results directory, or a metrics archive (e.g. docs/results/metrics)")
    p.add_argument("--evidence", metavar="DIR", default=None,
                   help="collect into DIR (meant to be committed, e.g. docs/results): the metrics archive DIR/metrics "
                        "(every run's rows and manifest, compressed; commit, versions, machine, wall and CPU times), "
                        "the PNG figures and report.md, both drawn from the archive. With OUT = DIR/metrics: "
                        "regenerate the figures and report from the committed metrics")
    p.add_argument("--wall-seconds", type=_nonneg_float, metavar="S", default=None,
                   help="with --evidence: the wall time of the sweep, measured around 'privrl reproduce'")
    p.add_argument("--readme", metavar="PATH", default=None,
                   help="with --evidence: also rewrite the generated headline tables of this README")
    p.set_defaults(handler=sweeps.report)


def _add_user_commands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """The sub-commands for one's own data: calibrate, fit, plan, bench, check-env, audit (see build_parser)."""
    p = sub.add_parser("calibrate", help="noise scale for a target (ε, δ), and ε by PLD and RDP")
    p.add_argument("mechanism", choices=("gaussian", "laplace"))
    p.add_argument("--epsilon", type=_float, required=True)
    p.add_argument("--delta", type=_float, default=None, help="required for gaussian; laplace default 0")
    p.add_argument("--sensitivity", type=_float, default=1.0, help="ℓ2 (gaussian) or ℓ1 (laplace) sensitivity")
    p.add_argument("--compositions", type=count_type(1, MAX_COMPOSITIONS), default=1,
                   help=f"number of releases composed (at most {MAX_COMPOSITIONS})")
    p.add_argument("--json", action="store_true", help="a JSON object with noise_std, epsilon_pld, epsilon_rdp")
    p.set_defaults(handler=calibrate.run)

    p = sub.add_parser("fit", help="fit one algorithm on a dataset or an environment")
    if command == "fit":
        _add_fit_commands(p)
    else:
        p.add_argument("algorithm", metavar="ALGORITHM", nargs="?")
    p.set_defaults(handler=fit.run)

    p = sub.add_parser("plan", help="what a private fit can achieve, from public sizes only: the noise of each "
                       "released statistic against its typical value, a verdict and the knobs that change it",
                       description="Plan a private fit before touching the data: the noise of each released "
                       "statistic (from the estimator's own calibration) against its typical value, the verdict "
                       "(useful: noise/signal <= 0.1; hopeless: >= 0.5) and what makes it useful.")
    if command == "plan":
        plan.add_options(p, number=_float, key_value=_key_value)
    else:
        p.add_argument("algorithm", metavar="ALGORITHM", nargs="?")
    p.set_defaults(handler=plan.run)

    p = sub.add_parser("bench", help="the benchmark: tasks × budgets × algorithms, certified and audited; "
                       "writes the leaderboard (resumes: finished cells are skipped)")
    bench.add_options(p, count=count_type)
    _add_runner_options(p, default_out="bench-results")
    p.set_defaults(handler=bench.run)

    p = sub.add_parser("check-env", help="Gymnasium's env checker and privrl's model checks")
    p.add_argument("env_id", metavar="ENV_ID")
    p.set_defaults(handler=check_env.run)

    if command == "audit":
        from privrl.audit import (
            cli as audit_cli,  # the audit targets import NumPy: only for 'audit'
        )

        audit_cli.add_parser(sub)
    else:
        p = sub.add_parser("audit", help="empirical privacy audits of the releases (see 'privrl audit --help')")
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(handler=_audit_later)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser. ``command`` (the sub-command about to run) loads what only it needs:
    the fit commands for ``fit``, the audit parser for ``audit``."""
    parser = _Parser(prog=PROG, description="Differentially private reinforcement learning: "
                     "reproduce the papers, sweep budgets, fit on your data.")
    parser.add_argument("--version", action="version", version=f"privrl {privrl.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _add_paper_commands(sub)
    _add_user_commands(sub, command)
    return parser


# --------------------------------------------------------------------------- dispatch
_TEMP_NAME = re.compile(r"\.([^/\\]+)\.[A-Za-z0-9_]+\.tmp$")


def _os_error_text(exc: OSError) -> str:
    """An OS error as ``"<strerror>: <file>"``, with the name of the file the user asked for rather
    than the temporary file of an atomic write."""
    names = [n for n in (exc.filename, exc.filename2) if n is not None]
    names = [_TEMP_NAME.sub(r"\1", os.fspath(n)) for n in names]
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{text}: {' -> '.join(names)}" if names else f"{type(exc).__name__}: {text}"


def _one_line_warning(prog: str) -> Any:
    """A ``warnings.showwarning`` for the command line: ``prog: warning: Category: message`` on one
    line of stderr, without the source path and line a Python warning carries (PRIVRL_DEBUG=1
    keeps Python's format)."""

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"{prog}: warning: {category.__name__}: {one_line(message)}", file=sys.stderr if file is None else file)

    return show


def _is_data_error(exc: Exception) -> bool:
    """A malformed input file or value (one line, no traceback): ValueError (JSON too), KeyError,
    a corrupt zip archive (.npz)."""
    import zipfile  # only on an error: start-up time

    return isinstance(exc, (ValueError, KeyError, zipfile.BadZipFile))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``privrl``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = PROG
    debug = bool(os.environ.get("PRIVRL_DEBUG"))
    try:
        parser = build_parser(_first_command(argv))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: --help, --version or a usage error
            return int(exc.code or 0) if not isinstance(exc.code, str) else die(prog, exc.code, 2)
        prog = f"{PROG} {args.command}"
        if args.command == "fit" and getattr(args, "algorithm", None):
            prog += f" {args.algorithm}"
        with warnings.catch_warnings():
            if not debug:
                warnings.showwarning = _one_line_warning(prog)
            return dispatch(args, PROG)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except PrivrlError as exc:
        return die(prog, str(exc))
    except MemoryError as exc:
        if debug:
            raise
        return die(prog, f"out of memory ({one_line(exc) or 'MemoryError'}): give smaller sizes on the command line")
    except OSError as exc:
        if debug:
            raise
        return die(prog, _os_error_text(exc))
    except Exception as exc:  # noqa: BLE001 - never a traceback on the command line
        if debug:
            raise
        if _is_data_error(exc):
            return die(prog, f"{type(exc).__name__}: {exc}")
        return die(prog, f"internal error: {type(exc).__name__}: {exc} (set PRIVRL_DEBUG=1 for the traceback)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
