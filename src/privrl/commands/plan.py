"""``privrl plan ALGORITHM``: what a private fit can achieve, from public quantities only
(:func:`privrl.planning.plan`): the noise of each released statistic against its typical value,
the verdict and the knobs that change it. Reads no data."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

from privrl.errors import InvalidParameterError
from privrl.fitters import count_type

__all__ = ["run", "option_flag", "add_options"]

MAX_COUNT = 10**15   # the largest count an option accepts

_MESSAGE = re.compile(r"The '(?P<name>\w+)' parameter of (plan [\w-]+|PrivacyBudget) (?P<rest>.*)", re.S)
_BUDGET = ("epsilon", "delta", "rho")


def option_flag(name: str) -> str:
    """The ``privrl plan`` option of the public input ``name`` (``F_max`` -> ``--F-max``)."""
    return "--" + name.replace("_", "-")


def add_options(p: argparse.ArgumentParser, *, number: Callable[[str], float],
                key_value: Callable[[str], tuple[str, object]]) -> None:
    """The options of ``privrl plan``: the public inputs of :data:`privrl.planning.INPUTS`, the
    budget and the estimator's parameters (loads the planners, whose names the help lists).
    ``number`` and ``key_value`` are the command line's argument types."""
    from privrl.planning import INPUTS, all_planners  # NumPy and the families: only for 'plan'

    planners = all_planners()
    p.add_argument("algorithm", metavar="ALGORITHM", help=", ".join(planners))
    inputs = p.add_argument_group("public inputs (each algorithm reads some; see the list below)")
    for name, (kind, _, help_text) in INPUTS.items():
        if kind is object:     # an array: a .npy file, loaded by the command
            inputs.add_argument(option_flag(name), dest=name, metavar="FILE.npy", default=None, help=help_text)
            continue
        kind_type = count_type(1, MAX_COUNT) if kind is int else number
        inputs.add_argument(option_flag(name), dest=name, type=kind_type, default=None, help=help_text)
    p.add_argument("--epsilon", type=number, default=None, help="ε of an (ε, δ)-DP budget")
    p.add_argument("--delta", type=number, default=None, help="δ of an (ε, δ)-DP budget (default 0)")
    p.add_argument("--rho", type=number, default=None, help="ρ of a ρ-zCDP budget (instead of ε, δ)")
    p.add_argument("--param", type=key_value, action="append", metavar="KEY=JSON",
                   help="a parameter of the estimator, e.g. calibration=sound or constants=practical (repeatable)")
    p.add_argument("--json", action="store_true", help="the plan as one JSON object")
    p.add_argument("--no-knobs", action="store_true", help="skip the search for the knobs that make it useful")
    lines = [f"  {name}: {pl.help}; reads {', '.join(option_flag(i) for i in pl.inputs)}"
             for name, pl in planners.items()]
    p.epilog = "algorithms:\n" + "\n".join(lines)
    p.formatter_class = argparse.RawDescriptionHelpFormatter


def _worded(exc: InvalidParameterError, names: tuple[str, ...]) -> InvalidParameterError:
    """A planning error worded for the command line: inputs named by their options."""
    text = str(exc)
    match = _MESSAGE.fullmatch(text)
    if match is not None and match["name"] == "budget":
        return InvalidParameterError(f"The budget (--epsilon/--delta/--rho) {match['rest']}")
    if match is not None and match["name"] in names:
        return InvalidParameterError(f"The '{option_flag(match['name'])}' option {match['rest']}")
    if text.startswith("The plan of "):
        for name in names:
            text = text.replace(f"'{name}'", f"'{option_flag(name)}'")
        return InvalidParameterError(text)
    return exc


def _load_array(option: str, path: str) -> Any:
    import numpy as np

    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InvalidParameterError(f"The '{option}' option must be a .npy file holding an array. Got {path!r} "
                                    f"instead ({type(exc).__name__}: {' '.join(str(exc).split())}).") from None


def _estimator_class(name: str) -> Any:
    """The estimator class ``name`` from the family that exports it (None if none does)."""
    import importlib

    from privrl.registry import families

    for family in families():
        if name in family.estimators:
            return getattr(importlib.import_module(family.package), name, None)
    return None


def _check_params(algorithm: str, params: dict[str, Any]) -> None:
    """Every ``--param`` names a parameter of the planned estimator (not the budget, given by
    --epsilon/--delta/--rho): a one-line error otherwise (the constructor would raise a TypeError)."""
    from privrl.planning import get_planner

    planner = get_planner(algorithm)
    cls = _estimator_class(planner.estimator)
    if cls is None:
        return
    names = [p.name for p in cls.params if p.name != "budget"]
    for name in params:
        if name not in names:
            raise InvalidParameterError(f"The '--param' option must name a parameter of {cls.__name__} "
                                        f"({', '.join(names)}; the budget is --epsilon/--delta/--rho). "
                                        f"Got {name!r} instead.")


def run(args: argparse.Namespace) -> int:
    from privrl._jsonable import to_jsonable
    from privrl.planning import INPUTS, plan

    public = {name: getattr(args, name) for name in INPUTS if getattr(args, name, None) is not None}
    for name, (kind, _, _) in INPUTS.items():
        if kind is object and name in public:
            public[name] = _load_array(option_flag(name), public[name])
    try:
        _check_params(args.algorithm, dict(args.param or ()))
        result = plan(args.algorithm, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                      params=dict(args.param or ()), knobs=not args.no_knobs, **public)
    except InvalidParameterError as exc:
        raise _worded(exc, (*INPUTS, *_BUDGET)) from None
    if args.json:
        print(json.dumps(to_jsonable(result.to_dict()), allow_nan=False))
    else:
        print(result.text())
    return 0
