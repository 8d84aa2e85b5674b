"""The ``privrl`` command line (issue #3 §5).

    privrl list [--json [--scale smoke|quick|paper]]
    privrl run ID [ID ...] [--scale smoke|quick|paper] [--seeds N | A:B] [--jobs N]
               [--backend local|ray] [--ray-address ADDR] [--out DIR] [--set KEY=JSON] [--quiet]
    privrl reproduce [--scale quick|paper] [--out DIR] [--jobs N] [--backend local|ray] [--only ID ...]
    privrl plot OUT
    privrl report OUT [--evidence DIR [--wall-seconds S]]
    privrl calibrate gaussian|laplace --epsilon E [--delta D] [--sensitivity S] [--compositions K] [--json]
    privrl fit ALGORITHM (--data FILE|MINARI_ID | --env ENV_ID) [--epsilon E [--delta D] | --rho R]
               [--reward-bounds LO HI] [--pad-to-horizon H] [--out DIR [--force]] [--seed S]
               [algorithm options]     (each algorithm's --help lists exactly what it accepts)
    privrl check-env ENV_ID
    privrl audit ...                      (issue #8, when privrl.audit.cli is installed)

Every :class:`~privrl.errors.PrivrlError`, bad argument, unknown id, missing or corrupt file and
invalid budget ends in one line on stderr and a non-zero exit code (1 for errors, 2 for usage);
set ``PRIVRL_DEBUG=1`` to see the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import math
import os
import re
import sys
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import privrl
from privrl.errors import InvalidDataError, InvalidParameterError, PrivrlError
from privrl.fitters import count_type

__all__ = ["main", "build_parser"]

PROG = "privrl"

#: the δ at which ε is reported for a pure-DP (δ = 0) calibration
PURE_DP_DELTA = 1e-12
#: bounds of count options (larger values are refused with one line, never an allocation failure)
MAX_JOBS = 4096
MAX_COMPOSITIONS = 10**9
MAX_LAPLACE_COMPOSITIONS = 10**6
MAX_HORIZON = 10**6


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see '{self.prog} --help')\n")


def _die(prog: str, message: str, code: int = 1) -> int:
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


_TEMP_NAME = re.compile(r"\.([^/\\]+)\.[A-Za-z0-9_]+\.tmp$")


def _os_error_text(exc: OSError) -> str:
    """An OS error as ``"<strerror>: <file>"``, with the name of the file the user asked for rather
    than the temporary file of an atomic write."""
    names = [n for n in (exc.filename, exc.filename2) if n is not None]
    names = [_TEMP_NAME.sub(r"\1", os.fspath(n)) for n in names]
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{text}: {' -> '.join(names)}" if names else f"{type(exc).__name__}: {text}"


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


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


# --------------------------------------------------------------------------- list
def _cmd_list(args: argparse.Namespace) -> int:
    from privrl.experiments import all_experiments

    exps = all_experiments()
    if args.json:
        items = [{"id": e.id, "paper": e.paper, "figure": e.figure, "description": e.description,
                  "seeds": dict(e.seeds), "scale": args.scale, "deviations": list(e.deviations_for(args.scale))}
                 for e in exps.values()]
        print(json.dumps(items, indent=2))
        return 0
    if not exps:
        print("No experiment is registered.")
        return 0
    width = max(len(i) for i in exps)
    for e in exps.values():
        print(f"{e.id:<{width}}  {e.paper}, {e.figure}: {e.description}")
    return 0


# --------------------------------------------------------------------------- run / reproduce
def _add_sweep_options(p: argparse.ArgumentParser, scales: Sequence[str], default_scale: str) -> None:
    from privrl.experiments.runner import BACKENDS

    p.add_argument("--scale", choices=scales, default=default_scale,
                   help=f"smoke: seconds; quick: the demo; paper: the paper's full scale (default {default_scale})")
    p.add_argument("--jobs", type=count_type(1, MAX_JOBS), default=None, help="parallel runs (default: all cores)")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local process pool (default) or Ray")
    p.add_argument("--ray-address", default=None,
                   help="address of an existing Ray cluster (default: start a local one)")
    p.add_argument("--out", default="results", help="results directory (default: results)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _check_out_dir(out: str | os.PathLike, option: str = "--out") -> Path:
    """``out`` is a writable directory or can be created as one; else one line naming ``option``."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise InvalidParameterError(f"The '{option}' option must be a directory. Got {str(path)!r} "
                                        "instead (an existing file).")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InvalidParameterError(f"The '{option}' option must be a writable directory. Got "
                                        f"{str(path)!r} instead (permission denied).")
        return path
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InvalidParameterError(f"The '{option}' option must be a directory that can be created. Got "
                                    f"{str(path)!r} instead ({str(parent)!r} is a file).")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"The '{option}' option must be a directory that can be created. Got "
                                    f"{str(path)!r} instead (permission denied in {str(parent)!r}).")
    return path


def _sweep(args: argparse.Namespace, ids: Sequence[str], seeds: list[int] | None,
           overrides: dict[str, Any] | None) -> tuple[Any, Any]:
    from privrl.experiments.report import make_plots
    from privrl.experiments.runner import plan_runs, run_sweep

    # every experiment, override and seed is checked before anything runs
    specs = [spec for exp_id in ids for spec in plan_runs(exp_id, args.scale, seeds, overrides)]
    _check_out_dir(args.out)
    summary = run_sweep(specs, args.out, jobs=args.jobs, backend=args.backend,
                        ray_address=args.ray_address, quiet=args.quiet)
    plots = None if getattr(args, "no_plot", False) else make_plots(args.out, list(ids))
    return summary, plots


def _report_sweep(prog: str, summary: Any, plots: Any) -> int:
    status = 0
    print(f"{summary.planned} runs: {summary.ok} ran ok, {summary.skipped} already finished, "
          f"{len(summary.failed)} failed")
    if plots is not None:
        n_fig = sum(len(v) for v in plots.figures.values())
        print(f"{n_fig} figure files written")
        if plots.errors:
            status = _die(prog, "plotting failed: " + "; ".join(f"{k}: {v}" for k, v in plots.errors.items()))
    if summary.failed:
        status = _die(prog, f"{len(summary.failed)} of {summary.planned} runs failed: " + summary.failures_text())
    return status


def _cmd_run(args: argparse.Namespace) -> int:
    from privrl.experiments import get_experiment
    from privrl.experiments.runner import parse_seeds

    ids = list(dict.fromkeys(args.ids))
    for exp_id in ids:
        get_experiment(exp_id)  # unknown ids fail before anything runs
    seeds = parse_seeds(args.seeds)
    overrides = dict(args.set or [])
    summary, plots = _sweep(args, ids, seeds, overrides)
    status = _report_sweep("privrl run", summary, plots)
    print(f"results in {args.out}")
    return status


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from privrl.experiments import all_experiments, get_experiment
    from privrl.experiments.report import write_report

    ids = list(all_experiments())
    if args.only:
        for exp_id in args.only:
            get_experiment(exp_id)  # unknown ids fail before anything runs
        ids = list(dict.fromkeys(args.only))
    if not ids:
        return _die("privrl reproduce", "no experiment is registered")
    summary, plots = _sweep(args, ids, None, None)
    status = _report_sweep("privrl reproduce", summary, plots)
    path = write_report(args.out, ids)
    print(f"Report: {path}")
    return status


def _cmd_plot(args: argparse.Namespace) -> int:
    from privrl.experiments.report import experiments_in, make_plots

    if not experiments_in(args.out):
        return _die("privrl plot", f"no runs found under {args.out}")
    plots = make_plots(args.out)
    for paths in plots.figures.values():
        for path in paths:
            print(path)
    for exp_id in plots.skipped:
        print(f"skipped {exp_id} (unregistered, no plot function or no successful run)", file=sys.stderr)
    if plots.errors:
        return _die("privrl plot", "; ".join(f"{k}: {v}" for k, v in plots.errors.items()))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from privrl.experiments.report import experiments_in, write_report

    if args.wall_seconds is not None and args.evidence is None:
        raise InvalidParameterError("--wall-seconds applies to --evidence only (it is recorded in the "
                                    "evidence manifest).")
    if not experiments_in(args.out):
        return _die("privrl report", f"no runs found under {args.out}")
    if args.evidence is None:
        print(write_report(args.out))
        return 0
    from privrl.experiments.evidence import collect_evidence

    _check_out_dir(args.evidence, "--evidence")
    src, dest = Path(args.out).resolve(), Path(args.evidence).resolve()
    if dest == src or src in dest.parents:
        raise InvalidParameterError(f"The '--evidence' directory must be outside the results directory "
                                    f"{args.out}. Got {args.evidence!r} instead.")
    manifest = collect_evidence(args.out, args.evidence, wall_seconds=args.wall_seconds)
    print(Path(args.out) / "report.md")
    print(manifest)
    return 0


# --------------------------------------------------------------------------- calibrate
def calibration_table(mechanism: str, epsilon: float, delta: float, sensitivity: float = 1.0,
                      compositions: int = 1) -> dict[str, Any]:
    """Noise for ``compositions`` releases at (ε, δ) (calibrated with the PLD accountant) and the
    ε that the PLD and RDP accountants give for it at δ. For pure DP (δ = 0) both are evaluated
    at δ = :data:`PURE_DP_DELTA` (1e-12): dp-accounting's PLD truncates tails of mass ~1e-15, so
    it reports ∞ below that; the RDP accountant cannot reach δ = 0 at all."""
    import dp_accounting

    from privrl.privacy import Ledger, calibrate_gaussian, calibrate_laplace

    if mechanism == "gaussian":
        scale = calibrate_gaussian(epsilon, delta, sensitivity=sensitivity, compositions=compositions)
        event = dp_accounting.GaussianDpEvent(scale / sensitivity)
        std = scale
    else:
        scale = calibrate_laplace(epsilon, delta, sensitivity=sensitivity, compositions=compositions)
        event = dp_accounting.LaplaceDpEvent(scale / sensitivity)
        std = math.sqrt(2.0) * scale
    ledger = Ledger([dp_accounting.SelfComposedDpEvent(event, compositions)])
    at = delta if delta > 0 else PURE_DP_DELTA
    return {"mechanism": mechanism, "epsilon": epsilon, "delta": delta, "sensitivity": sensitivity,
            "compositions": compositions, "noise_std": std, "noise_scale": scale,
            "noise_multiplier": scale / sensitivity, "calibrated_with": "pld",
            "delta_evaluated": at,
            "epsilon_pld": ledger.epsilon(at, accountant="pld"),
            "epsilon_rdp": ledger.epsilon(at, accountant="rdp")}


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from privrl.experiments.results import to_jsonable

    if args.mechanism == "laplace" and args.compositions > MAX_LAPLACE_COMPOSITIONS:
        raise InvalidParameterError(
            f"The '--compositions' option of 'privrl calibrate laplace' must be an int in [1, "
            f"{MAX_LAPLACE_COMPOSITIONS}] (the Laplace calibration composes numerically). Got "
            f"{args.compositions} instead."
        )
    delta = args.delta
    if delta is None:
        if args.mechanism == "gaussian":
            raise InvalidParameterError("The 'delta' parameter of calibrate gaussian is required "
                                        "(a float in (0, 1)). Got none instead.")
        delta = 0.0
    table = calibration_table(args.mechanism, args.epsilon, delta, args.sensitivity, args.compositions)
    if args.json:
        print(json.dumps(to_jsonable(table), allow_nan=False))
        return 0
    name = "σ (std)" if args.mechanism == "gaussian" else "b (scale)"
    k = args.compositions
    print(f"{args.mechanism}: {name} = {table['noise_scale']:.6g} (std {table['noise_std']:.6g}, "
          f"multiplier {table['noise_multiplier']:.6g}) for {k} release{'s' if k > 1 else ''} of "
          f"sensitivity {args.sensitivity:g} at ε = {args.epsilon:g}, δ = {delta:g}")
    at = table["delta_evaluated"]
    print(f"  ε from the PLD accountant: {table['epsilon_pld']:.6g} (at δ = {at:g})")
    print(f"  ε from the RDP accountant: {table['epsilon_rdp']:.6g} (at δ = {at:g})")
    return 0


# --------------------------------------------------------------------------- fit
def _add_fit_common(p: argparse.ArgumentParser, cmd: Any) -> None:
    """The common options ``cmd`` (a :class:`~privrl.fitters.FitCommand`) accepts, and only those
    in its help page; budget options of a non-private command are hidden, to refuse them clearly."""
    from privrl.fitters import count_type as count

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
        p.add_argument("--pad-to-horizon", type=count(1, MAX_HORIZON), metavar="H", default=None,
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


def _private_variant(name: str) -> str:
    from privrl.fitters import all_fit_commands

    return f" (its private variant is dp-{name})" if f"dp-{name}" in all_fit_commands() else ""


def _budget_from(args: argparse.Namespace, cmd: Any = None) -> Any:
    from privrl.privacy import PrivacyBudget

    kind = "any" if cmd is None else cmd.budget
    name = getattr(args, "algorithm", None) or "this algorithm"
    given = [f for f, v in (("--epsilon", args.epsilon), ("--delta", args.delta), ("--rho", args.rho))
             if v is not None]
    if kind == "none":
        explicit_inf = given == ["--epsilon"] and math.isinf(args.epsilon) and args.epsilon > 0
        if given and not explicit_inf:
            raise InvalidParameterError(f"'privrl fit {name}' is not private and takes no budget: drop "
                                        f"{' '.join(given)}{_private_variant(name)}.")
        return PrivacyBudget.non_private()
    if args.rho is not None:
        if kind == "epsilon":
            raise InvalidParameterError(f"'privrl fit {name}' needs an (epsilon, delta) budget: give "
                                        "--epsilon E --delta D, not --rho.")
        if args.epsilon is not None or args.delta is not None:
            raise InvalidParameterError("Give either --epsilon (with --delta) or --rho, not both.")
        return PrivacyBudget(rho=args.rho)
    if args.epsilon is None:
        if args.delta is not None:
            raise InvalidParameterError("--delta needs --epsilon: give --epsilon E --delta D.")
        if cmd is not None and not cmd.budget_required:
            return None
        options = "--epsilon E [--delta D] or --rho R" if kind == "any" else "--epsilon E --delta D"
        raise InvalidParameterError(f"A budget is required: {options}.")
    return PrivacyBudget(epsilon=args.epsilon, delta=args.delta)


def _check_fit_out(out: Path, force: bool) -> None:
    _check_out_dir(out)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InvalidParameterError(f"The '--out' directory {str(out)!r} is not empty: give a new --out, or "
                                    "--force to replace its result and certificate files.")


def _looks_like_file(source: str) -> bool:
    """A ``.npz`` path (Minari ids such as ``D4RL/door/human-v2`` contain slashes too)."""
    return source.endswith(".npz")


def _npz_bytes(arrays: dict[str, Any]) -> bytes:
    import numpy as np

    clean = {}
    for name, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise InvalidDataError(f"Fitted array {name!r} has dtype object; it cannot be saved without pickle.")
        clean[str(name)] = arr
    buf = io.BytesIO()
    np.savez_compressed(buf, **clean)  # type: ignore[arg-type]
    return buf.getvalue()


def _fit_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Fingerprints of what the fit read: the --data file/Minari dataset or the --env spec."""
    from privrl.certificate import dataset_fingerprint, env_fingerprint

    if args.data is not None:
        return dataset_fingerprint(args.data)
    import privrl.envs  # noqa: F401  (registers the privrl/... ids)

    return env_fingerprint(args.env)


def _cmd_fit(args: argparse.Namespace) -> int:
    import numpy as np

    from privrl.certificate import write_certificate
    from privrl.experiments.results import atomic_write_bytes, atomic_write_json, to_jsonable
    from privrl.fitters import FitOutput, get_fit_command, option_error

    command = get_fit_command(args.algorithm)
    if args.data is not None and _looks_like_file(args.data) and not Path(args.data).is_file():
        raise InvalidDataError(f"The '--data' file {args.data} does not exist.")
    if args.env is not None and "data" in command.sources:
        data_only = [f for f, v in (("--reward-bounds", getattr(args, "reward_bounds", None)),
                                    ("--pad-to-horizon", getattr(args, "pad_to_horizon", None))) if v is not None]
        if data_only:
            raise InvalidParameterError(f"{' and '.join(data_only)} apply to --data only (with --env the "
                                        "environment declares its rewards and horizon).")
    out = Path(args.out or f"fit-{args.algorithm}")
    _check_fit_out(out, args.force)
    args.budget = _budget_from(args, command)
    if getattr(args, "secure", False):  # an estimator option (privrl.base.SECURE)
        if args.seed is not None:
            raise InvalidParameterError("--seed cannot be combined with --secure: OpenDP's samplers draw from "
                                        "the OS CSPRNG and cannot be seeded; drop --seed.")
        args.rng = None   # every draw of the run comes from OS entropy
    else:
        args.rng = np.random.default_rng(args.seed)
    try:
        output = command.run(args)
    except InvalidParameterError as exc:
        raise option_error(exc, args, command.budget_options) from None
    if not isinstance(output, FitOutput):
        raise InvalidDataError(f"The fit command {args.algorithm!r} returned {type(output).__name__}, "
                               "not FitOutput.")
    cert = output.certificate
    if "inputs" not in cert:
        cert["inputs"] = _fit_inputs(args)
    npz = _npz_bytes(output.arrays)
    budget = None if args.budget is None else args.budget.to_dict()
    result = {"format": "privrl.fit_result", "version": 1, "algorithm": args.algorithm,
              "source": {"data": args.data, "env": args.env}, "budget": budget,
              "seed": args.seed, "summary": to_jsonable(output.summary),
              "arrays": sorted(output.arrays), "privrl_version": privrl.__version__}
    try:
        atomic_write_bytes(out / "result.npz", npz)
        atomic_write_json(out / "result.json", result)
        write_certificate(out, cert)  # certificate.json last: the commit point
    except OSError as exc:
        raise InvalidParameterError(f"Cannot write the results into '--out' {str(out)!r}: "
                                    f"{exc.strerror or type(exc).__name__}.") from None
    eps = cert.get("epsilon_spent")
    delta = cert.get("delta")
    if eps is None:
        spent = str(cert.get("guarantee", "non-private")) + (" (uncertified)" if cert.get("uncertified") else "")
    else:
        spent = f"{cert.get('guarantee')}, ε spent {float(eps):.4g}" + (f" at δ = {delta:g}" if delta else "")
    written = "certificate.json" + (", certificate.npz" if getattr(cert, "arrays", None) else "")
    budget_text = "none" if args.budget is None else str(args.budget)
    print(f"{args.algorithm}: budget {budget_text}, {spent}; wrote {out}/{written}, result.json, result.npz")
    return 0


# --------------------------------------------------------------------------- check-env
def check_model(model: Any) -> list[str]:
    """privrl's checks of an environment's model; returns the names of the checks that ran.

    A model's own ``check()``/``validate()`` runs when it has one; tabular models (``P``, ``r``)
    are checked for stochastic transitions, finite rewards inside ``reward_bounds`` and a
    probability vector ``initial``; linear models are checked through ``to_tabular()``.
    """
    import numpy as np

    ran = []
    for name in ("check", "validate"):
        method = getattr(model, name, None)
        if callable(method):
            method()
            ran.append(f"model.{name}()")
    target = model
    if not hasattr(model, "P") and callable(getattr(model, "to_tabular", None)):
        target = model.to_tabular()
        ran.append("to_tabular()")
    if hasattr(target, "P") and hasattr(target, "r"):
        P, r = np.asarray(target.P, dtype=float), np.asarray(target.r, dtype=float)
        if np.any(P < -1e-12) or not np.allclose(P.sum(axis=-1), 1.0, atol=1e-8):
            raise InvalidDataError("Model check failed: the transition kernel P is not stochastic "
                                   "(rows must be non-negative and sum to 1).")
        ran.append("P stochastic")
        if not np.all(np.isfinite(r)):
            raise InvalidDataError("Model check failed: the reward r has non-finite entries.")
        bounds = getattr(target, "reward_bounds", None)
        if bounds is not None:
            lo, hi = bounds
            if np.any(r < lo - 1e-12) or np.any(r > hi + 1e-12):
                raise InvalidDataError(f"Model check failed: rewards outside reward_bounds {tuple(bounds)} "
                                       f"(min {r.min():g}, max {r.max():g}).")
            ran.append("rewards within reward_bounds")
        initial = getattr(target, "initial", None)
        if initial is not None:
            init = np.asarray(initial, dtype=float)
            if np.any(init < -1e-12) or not np.isclose(init.sum(), 1.0, atol=1e-8):
                raise InvalidDataError("Model check failed: the initial distribution is not a probability vector.")
            ran.append("initial distribution")
    return ran


def _cmd_check_env(args: argparse.Namespace) -> int:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from privrl.fitters import make_env

    env = make_env(args.env_id, option="ENV_ID")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(env.unwrapped, skip_render_check=True)
            except (AssertionError, gymnasium.error.Error) as exc:
                return _die("privrl check-env", f"{args.env_id} failed Gymnasium's checker: {exc}")
        for w in caught:
            print(f"warning: {_one_line(w.message)}", file=sys.stderr)
        print(f"{args.env_id}: Gymnasium env_checker passed ({len(caught)} warning(s))")
        model = getattr(env.unwrapped, "model", None)
        if model is None and isinstance(getattr(env.unwrapped, "P", None), dict):
            from privrl.envs.tabular import from_gymnasium_toy_text

            # a toy-text table: check the exact model privrl builds from it (the discount only
            # selects the form; the checks do not depend on it)
            model = from_gymnasium_toy_text(env, gamma=0.99)
            print(f"{args.env_id}: toy-text model built from unwrapped.P")
        if model is not None:
            ran = check_model(model)
            print(f"{args.env_id}: privrl model checks passed ({', '.join(ran) or 'none applicable'})")
        else:
            print(f"{args.env_id}: no .model attribute; privrl model checks skipped")
    finally:
        env.close()
    return 0


# --------------------------------------------------------------------------- audit
def _audit_module() -> Any:
    try:
        return importlib.import_module("privrl.audit.cli")
    except ModuleNotFoundError as exc:
        if exc.name in ("privrl.audit.cli", "privrl.audit"):
            return None
        raise


def _cmd_audit_unavailable(args: argparse.Namespace) -> int:
    return _die("privrl audit", "not available: privrl.audit.cli is not installed in this version", 2)


# --------------------------------------------------------------------------- parser
def _first_command(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _epsilon_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers such as 0.1,1,10; got {text!r}") from None
    if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite epsilons > 0 such as 0.1,1,10; got {text!r}")
    return values


def _cmd_frontier(args: argparse.Namespace) -> int:
    """``privrl frontier ALGORITHM``: the frontier experiment of the algorithm re-gridded over
    ``--epsilons`` (paper / sound / tight and the non-private reference), then a CSV and a plot."""
    from privrl._io import atomic_write_bytes
    from privrl.experiments import get_experiment
    from privrl.experiments.frontier import (
        frontier_settings,
        frontier_table,
        get_frontier,
        plot_frontier,
    )
    from privrl.experiments.results import load_results
    from privrl.experiments.runner import RunSpec, check_overrides, parse_seeds, run_sweep

    frontier = get_frontier(args.algorithm)
    exp = get_experiment(frontier.experiment_id)
    overrides: dict[str, Any] = {}
    for option, key, value in (("--env", frontier.env_key, args.env), ("--data", frontier.data_key, args.data)):
        if value is None:
            continue
        if key is None:
            raise InvalidParameterError(f"The '{option}' option is not available for the {args.algorithm} frontier "
                                        f"(it runs on its paper's instance).")
        overrides[key] = value
    overrides = check_overrides(exp.id, overrides)
    settings = frontier_settings(exp.settings_for(args.scale), epsilons=args.epsilons, overrides=overrides)
    seeds = parse_seeds(args.seeds)
    seed_list = list(range(exp.n_seeds(args.scale))) if seeds is None else seeds
    specs = [RunSpec(exp.id, i, s, params, args.scale) for s in seed_list for i, params in enumerate(settings)]
    out = _check_out_dir(args.out)
    summary = run_sweep(specs, out, jobs=args.jobs, backend=args.backend, ray_address=args.ray_address,
                        quiet=args.quiet)
    status = _report_sweep("privrl frontier", summary, None)
    df = load_results(out, exp.id)
    keys = {json.dumps(spec.params, sort_keys=True, default=str) for spec in specs}
    param_cols = sorted({k for spec in specs for k in spec.params})
    if not df.empty:
        mine = df[param_cols].apply(lambda row: json.dumps(_row_params(row), sort_keys=True, default=str) in keys,
                                    axis=1)
        df = df[mine]
    table = frontier_table(df, frontier.metric)
    csv_path = out / exp.id / "frontier.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(csv_path, table.to_csv(index=False).encode())
    figures = plot_frontier(df, out / exp.id, frontier) if not table.empty else []
    print(f"frontier of {args.algorithm}: {csv_path}" + (f", {figures[0]}" if figures else ""))
    return status


def _row_params(row: Any) -> dict[str, Any]:
    """A results row's params in the JSON form of a RunSpec's params (lists/dicts are stored as JSON
    strings, infinities as floats)."""
    import numpy as np

    out = {}
    for key, value in row.items():
        if isinstance(value, str) and value[:1] in "[{":
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        if isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser. ``command`` (the sub-command about to run) loads what only it needs:
    the fit commands for ``fit``, the audit parser for ``audit``."""
    parser = _Parser(prog=PROG, description="Differentially private reinforcement learning: "
                     "reproduce the papers, sweep budgets, fit on your data.")
    parser.add_argument("--version", action="version", version=f"privrl {privrl.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    from privrl.experiments.spec import SCALES

    p = sub.add_parser("list", help="registered experiments")
    p.add_argument("--json", action="store_true", help="a JSON list of {id, paper, figure, description, seeds, "
                   "scale, deviations}")
    p.add_argument("--scale", choices=SCALES, default="quick",
                   help="the scale whose deviations from the paper --json lists (default quick)")
    p.set_defaults(handler=_cmd_list)

    p = sub.add_parser("run", help="run experiments (resumes: finished runs are skipped)")
    p.add_argument("ids", nargs="+", metavar="ID", help="experiment ids (see 'privrl list')")
    _add_sweep_options(p, SCALES, "quick")
    p.add_argument("--seeds", default=None, help="N (seeds 0..N-1) or A:B (seeds A..B-1); default per scale")
    p.add_argument("--set", type=_key_value, action="append", metavar="KEY=JSON",
                   help="override a parameter of every setting (repeatable)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the figures after the runs")
    p.set_defaults(handler=_cmd_run)

    p = sub.add_parser("reproduce", help="run every experiment, then plot and write the report")
    _add_sweep_options(p, SCALES, "quick")
    p.add_argument("--only", nargs="+", metavar="ID", default=None,
                   help="reproduce only these experiments (default: every registered one)")
    p.set_defaults(handler=_cmd_reproduce)

    p = sub.add_parser("frontier", help="privacy–utility frontier of one algorithm: utility against epsilon "
                       "for paper / sound / tight calibration beside the non-private reference (CSV + plot)")
    p.add_argument("algorithm", metavar="ALGORITHM", help="e.g. dp-lsw, dp-apvi, dp-vapvi, linopt-vi, dp-q-learning")
    p.add_argument("--env", default=None, help="environment id (where the algorithm's frontier takes one)")
    p.add_argument("--data", default=None, help="dataset file or Minari id (where the frontier takes one)")
    p.add_argument("--epsilons", type=_epsilon_list, default=None,
                   help="comma-separated epsilons, e.g. 0.1,1,10 (default: the experiment's grid)")
    p.add_argument("--seeds", default=None, help="N (seeds 0..N-1) or A:B; default per scale")
    _add_sweep_options(p, SCALES, "quick")
    p.set_defaults(handler=_cmd_frontier, out="frontier")

    p = sub.add_parser("plot", help="draw the figures of a results directory")
    p.add_argument("out", metavar="OUT", help="results directory")
    p.set_defaults(handler=_cmd_plot)

    p = sub.add_parser("report", help="write OUT/report.md (with --evidence: also collect the report, PNG "
                       "figures and a manifest into DIR)")
    p.add_argument("out", metavar="OUT", help="results directory")
    p.add_argument("--evidence", metavar="DIR", default=None,
                   help="collect report.md, the PNG figures and manifest.json (commit, versions, machine, wall "
                        "times) into DIR, a directory outside OUT meant to be committed (e.g. docs/results)")
    p.add_argument("--wall-seconds", type=_nonneg_float, metavar="S", default=None,
                   help="with --evidence: the wall time of the sweep, measured around 'privrl reproduce'")
    p.set_defaults(handler=_cmd_report)

    p = sub.add_parser("calibrate", help="noise scale for a target (ε, δ), and ε by PLD and RDP")
    p.add_argument("mechanism", choices=("gaussian", "laplace"))
    p.add_argument("--epsilon", type=_float, required=True)
    p.add_argument("--delta", type=_float, default=None, help="required for gaussian; laplace default 0")
    p.add_argument("--sensitivity", type=_float, default=1.0, help="ℓ2 (gaussian) or ℓ1 (laplace) sensitivity")
    p.add_argument("--compositions", type=count_type(1, MAX_COMPOSITIONS), default=1,
                   help=f"number of releases composed (at most {MAX_COMPOSITIONS})")
    p.add_argument("--json", action="store_true", help="a JSON object with noise_std, epsilon_pld, epsilon_rdp")
    p.set_defaults(handler=_cmd_calibrate)

    p = sub.add_parser("fit", help="fit one algorithm on a dataset or an environment")
    if command == "fit":
        from privrl.fitters import add_estimator_options, all_fit_commands

        commands = all_fit_commands()
        algos = p.add_subparsers(dest="algorithm", metavar="ALGORITHM", required=True,
                                 help=", ".join(commands) or "(no algorithm registered)")
        for name, cmd in commands.items():
            ap = algos.add_parser(name, help=cmd.help, description=cmd.help)
            _add_fit_common(ap, cmd)
            cmd.add_arguments(ap)
            if cmd.estimator is not None:
                add_estimator_options(ap, cmd.estimator, exclude=cmd.exclude)
            ap.set_defaults(handler=_cmd_fit)
    else:
        p.add_argument("algorithm", metavar="ALGORITHM", nargs="?")
    p.set_defaults(handler=_cmd_fit)

    p = sub.add_parser("check-env", help="Gymnasium's env checker and privrl's model checks")
    p.add_argument("env_id", metavar="ENV_ID")
    p.set_defaults(handler=_cmd_check_env)

    audit = _audit_module() if command == "audit" else None
    if audit is not None:
        audit.add_parser(sub)
    else:
        p = sub.add_parser("audit", help="empirical privacy audits (issue #8)")
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(handler=_cmd_audit_unavailable)
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None and args.command == "audit":
        audit = _audit_module()
        handler = getattr(audit, "run", None) or getattr(audit, "main", None)
    if handler is None:
        return _die(PROG, f"command {args.command!r} has no handler")
    result = handler(args)
    return int(result or 0)


def _one_line(message: Any) -> str:
    """``message`` as one line of plain text (terminal colour codes removed, whitespace collapsed)."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(message)).split())


def _one_line_warning(prog: str) -> Any:
    """A ``warnings.showwarning`` for the command line: ``prog: warning: Category: message`` on one
    line of stderr, without the source path and line a Python warning carries (PRIVRL_DEBUG=1
    keeps Python's format)."""

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"{prog}: warning: {category.__name__}: {_one_line(message)}", file=sys.stderr if file is None else file)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``privrl``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = PROG
    try:
        parser = build_parser(_first_command(argv))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: --help, --version or a usage error
            return int(exc.code or 0) if not isinstance(exc.code, str) else _die(prog, exc.code, 2)
        prog = f"{PROG} {args.command}"
        if args.command == "fit" and getattr(args, "algorithm", None):
            prog += f" {args.algorithm}"
        with warnings.catch_warnings():
            if not os.environ.get("PRIVRL_DEBUG"):
                warnings.showwarning = _one_line_warning(prog)
            return _dispatch(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except PrivrlError as exc:
        return _die(prog, str(exc))
    except MemoryError as exc:
        if os.environ.get("PRIVRL_DEBUG"):
            raise
        return _die(prog, f"out of memory ({' '.join(str(exc).split()) or 'MemoryError'}): give smaller "
                    "sizes on the command line")
    except OSError as exc:
        if os.environ.get("PRIVRL_DEBUG"):
            raise
        return _die(prog, _os_error_text(exc))
    except (ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        if os.environ.get("PRIVRL_DEBUG"):
            raise
        return _die(prog, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - never a traceback on the command line
        if os.environ.get("PRIVRL_DEBUG"):
            raise
        return _die(prog, f"internal error: {type(exc).__name__}: {exc} (set PRIVRL_DEBUG=1 for the traceback)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
