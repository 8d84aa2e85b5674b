"""``privrl fit ALGORITHM``: the budget from the options, the family's fit command, then the result
files and the certificate, written atomically with ``certificate.json`` last (the commit point).

The fit command (:class:`~privrl.fitters.FitCommand`, registered by the algorithm's family)
returns the fitted estimator and the public facts of its run (:class:`~privrl.fitters.FitOutput`);
the certificate is made here, in one call (:func:`privrl.certificate.make_certificate`), with the
fingerprints of what the fit read.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import privrl
from privrl._progress import loop_bars
from privrl.commands import check_out_dir
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.fitters import FitOutput, all_fit_commands, get_fit_command, option_error

__all__ = ["run", "budget_from", "fit_inputs", "summary_line"]


def _private_variant(name: str) -> str:
    return f" (its private variant is dp-{name})" if f"dp-{name}" in all_fit_commands() else ""


def budget_from(args: argparse.Namespace, cmd: Any = None) -> Any:
    """The :class:`~privrl.privacy.PrivacyBudget` of ``--epsilon``/``--delta``/``--rho`` for ``cmd``
    (what it accepts: :attr:`~privrl.fitters.FitCommand.budget`); ``None`` when the command allows
    no budget and none is given. Budget options a command does not take are one-line errors."""
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
    check_out_dir(out)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InvalidParameterError(f"The '--out' directory {str(out)!r} is not empty: give a new --out, or "
                                    "--force to replace its result and certificate files.")


def fit_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Fingerprints of what the fit read: the --data file/Minari dataset or the --env spec."""
    from privrl.certificate import dataset_fingerprint, env_fingerprint

    if args.data is not None:
        return dataset_fingerprint(args.data)
    import privrl.envs  # noqa: F401  (registers the privrl/... ids)

    return env_fingerprint(args.env)


def _budget_text(budget: Any) -> str:
    """A budget as its parameters (``epsilon=1, delta=1e-06``), without the guarantee's name."""
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in budget.to_dict().items())


def summary_line(algorithm: str, cert: Any, budget: Any, out: Path) -> str:
    """The one line ``privrl fit`` prints: the guarantee once, what was spent of which budget, and
    the files written."""
    eps, delta = cert.get("epsilon_spent"), cert.get("delta")
    if eps is None:
        text = str(cert.get("guarantee", "non-private")) + (" (uncertified)" if cert.get("uncertified") else "")
    else:
        text = f"{cert.get('guarantee')}: ε spent {float(eps):.4g}" + (f" at δ = {delta:g}" if delta else "")
        if cert.get("rho_spent") is not None:
            text += f", ρ spent {float(cert['rho_spent']):.4g}"
        if budget is not None:
            text += f" of the budget {_budget_text(budget)}"
    written = "certificate.json" + (", certificate.npz" if getattr(cert, "arrays", None) else "")
    return f"{algorithm}: {text}; wrote {out}/{written}, result.json, result.npz"


def _prepare(args: argparse.Namespace, command: Any) -> Path:
    """Checks before anything is read: the sources, ``--out``, the budget, ``--seed``/``--secure``
    (sets ``args.budget`` and ``args.rng``); returns the output directory."""
    import numpy as np

    if args.data is not None and args.data.endswith(".npz") and not Path(args.data).is_file():
        raise InvalidDataError(f"The '--data' file {args.data} does not exist.")
    if args.env is not None and "data" in command.sources:
        data_only = [f for f, v in (("--reward-bounds", getattr(args, "reward_bounds", None)),
                                    ("--truncate-to-horizon", getattr(args, "truncate_to_horizon", None)),
                                    ("--pad-to-horizon", getattr(args, "pad_to_horizon", None))) if v is not None]
        if data_only:
            raise InvalidParameterError(f"{' and '.join(data_only)} apply to --data only (with --env the "
                                        "environment declares its rewards and horizon).")
    out = Path(args.out or f"fit-{args.algorithm}")
    _check_fit_out(out, args.force)
    args.budget = budget_from(args, command)
    if getattr(args, "secure", False):  # an estimator option (privrl.base.SECURE)
        if args.seed is not None:
            raise InvalidParameterError("--seed cannot be combined with --secure: OpenDP's samplers draw from "
                                        "the OS CSPRNG and cannot be seeded; drop --seed.")
        args.rng = None   # every draw of the run comes from OS entropy
    else:
        args.rng = np.random.default_rng(args.seed)
    return out


def run(args: argparse.Namespace) -> int:
    """``privrl fit``: fit, certify, write ``result.npz``, ``result.json`` and the certificate."""
    from privrl._io import atomic_write_bytes, atomic_write_json, npz_bytes
    from privrl._jsonable import to_jsonable
    from privrl.certificate import make_certificate, write_certificate

    command = get_fit_command(args.algorithm)
    out = _prepare(args, command)
    try:
        with loop_bars(bool(getattr(args, "quiet", False))):
            output = command.run(args)
    except InvalidParameterError as exc:
        raise option_error(exc, args, command.budget_options) from None
    if not isinstance(output, FitOutput):
        raise InvalidDataError(f"The fit command {args.algorithm!r} returned {type(output).__name__}, "
                               "not FitOutput.")
    cert = make_certificate(output.estimator, algorithm=args.algorithm, inputs=fit_inputs(args),
                            extra=output.extra, mechanism=output.mechanism, note=output.note)
    npz = npz_bytes(output.arrays)
    result = {"format": "privrl.fit_result", "version": 1, "algorithm": args.algorithm,
              "source": {"data": args.data, "env": args.env},
              "budget": None if args.budget is None else args.budget.to_dict(),
              "seed": args.seed, "summary": to_jsonable(output.summary),
              "arrays": sorted(output.arrays), "privrl_version": privrl.__version__}
    try:
        atomic_write_bytes(out / "result.npz", npz)
        atomic_write_json(out / "result.json", result)
        write_certificate(out, cert)  # certificate.json last: the commit point
    except OSError as exc:
        raise InvalidParameterError(f"Cannot write the results into '--out' {str(out)!r}: "
                                    f"{exc.strerror or type(exc).__name__}.") from None
    print(summary_line(args.algorithm, cert, args.budget, out))
    if output.summary.get("utility"):   # the command's main utility diagnostic
        print(f"{args.algorithm}: utility: {output.summary['utility']}")
    return 0
