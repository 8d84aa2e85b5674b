"""``privrl calibrate gaussian|laplace``: the noise for a target (ε, δ), and ε by PLD and RDP
(:func:`privrl.privacy.calibration.calibration_table`)."""

from __future__ import annotations

import argparse
import json

from privrl.errors import InvalidParameterError

__all__ = ["run", "MAX_LAPLACE_COMPOSITIONS"]

#: the largest --compositions of the Laplace calibration (it composes numerically)
MAX_LAPLACE_COMPOSITIONS = 10**6


def run(args: argparse.Namespace) -> int:
    from privrl._jsonable import to_jsonable
    from privrl.privacy.calibration import calibration_table

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
