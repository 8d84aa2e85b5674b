"""``privrl plan ALGORITHM``: what a private fit can achieve, from public quantities only
(:func:`privrl.planning.plan`): the noise of each released statistic against its typical value,
the verdict and the knobs that change it. Reads no data."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from privrl.errors import InvalidParameterError

__all__ = ["run", "option_flag"]

_MESSAGE = re.compile(r"The '(?P<name>\w+)' parameter of (plan [\w-]+|PrivacyBudget) (?P<rest>.*)", re.S)
_BUDGET = ("epsilon", "delta", "rho")


def option_flag(name: str) -> str:
    """The ``privrl plan`` option of the public input ``name`` (``F_max`` -> ``--F-max``)."""
    return "--" + name.replace("_", "-")


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


def run(args: argparse.Namespace) -> int:
    from privrl._jsonable import to_jsonable
    from privrl.planning import INPUTS, plan

    public = {name: getattr(args, name) for name in INPUTS if getattr(args, name, None) is not None}
    for name, (kind, _, _) in INPUTS.items():
        if kind is object and name in public:
            public[name] = _load_array(option_flag(name), public[name])
    try:
        result = plan(args.algorithm, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                      params=dict(args.param or ()), knobs=not args.no_knobs, **public)
    except InvalidParameterError as exc:
        raise _worded(exc, (*INPUTS, *_BUDGET)) from None
    if args.json:
        print(json.dumps(to_jsonable(result.to_dict()), allow_nan=False))
    else:
        print(result.text())
    return 0
