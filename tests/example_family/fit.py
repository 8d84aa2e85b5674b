"""``privrl fit example-mean --data FILE --epsilon E [--delta D]``: the private mean return of a
dataset file. The estimator's options (``--return-bound``, ``--calibration``, ``--secure``) come
from its declared parameters."""

from __future__ import annotations

import argparse

import numpy as np

from privrl.fitters import FitCommand, FitOutput, build_estimator, load_user_dataset, register_fit

from .estimators import PrivateMeanReturn


def _run(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, PrivateMeanReturn)   # a bad option fails before the data are read
    est.fit(load_user_dataset(args), rng=args.rng)
    return FitOutput(est, arrays={"mean": np.array([est.mean_])},
                     summary={"n_episodes": est.n_episodes_, "mean": est.mean_},
                     extra={"n_episodes": est.n_episodes_})


register_fit(FitCommand("example-mean", "private mean return of the episodes (the example family)",
                        lambda parser: None, _run, sources=("data",), estimator=PrivateMeanReturn))
