"""``privrl fit dp-bc | bc --data FILE``: (DP) behaviour cloning of the logged trajectories of a dataset
file or local Minari id (vector observations, discrete actions). The estimators' options
(``--clip-norm``, ``--n-steps``, ``--sampling-rate``, ``--learning-rate``, ``--n-actions``,
``--calibration``, ``--secure``) come from their declared parameters; the fitted policy's flat parameters
and layer sizes are saved (``params``, ``sizes``)."""

from __future__ import annotations

import argparse

import numpy as np

from privrl.deep_offline.estimators import BC, DPBC
from privrl.fitters import FitCommand, FitOutput, build_estimator, load_user_dataset, register_fit


def _output(est: BC | DPBC) -> FitOutput:
    """The policy and, for DP-BC, the public noise multiplier; the number of trajectories only for BC
    (add/remove neighbours differ in it)."""
    extra: dict[str, object] = {"sizes": list(est.sizes_)}
    summary: dict[str, object] = {"n_parameters": int(est.params_.size)}
    if isinstance(est, DPBC):
        extra["noise_multiplier"] = est.noise_multiplier_
    else:
        summary["n_trajectories"] = extra["n_trajectories"] = est.n_trajectories_
    return FitOutput(est, arrays={"params": est.params_, "sizes": np.array(est.sizes_)}, summary=summary,
                     extra=extra)


def _run_dp(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, DPBC)   # a bad option fails before the data are read
    return _output(est.fit(load_user_dataset(args), rng=args.rng))


def _run_bc(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, BC)
    return _output(est.fit(load_user_dataset(args), rng=args.rng))


register_fit(FitCommand("dp-bc", "DP behaviour cloning, (epsilon, delta)-DP per trajectory (DP-SGD)",
                        lambda parser: None, _run_dp, sources=("data",), budget="any", estimator=DPBC))
register_fit(FitCommand("bc", "behaviour cloning (non-private)", lambda parser: None, _run_bc, sources=("data",),
                        budget="none", estimator=BC))
