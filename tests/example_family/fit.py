"""``privrl fit example-mean --data FILE --epsilon E [--delta D]``: the private mean return of a
dataset file. The estimator's options (``--return-bound``, ``--calibration``, ``--secure``) come
from its declared parameters."""

from __future__ import annotations

import argparse

import numpy as np

from example_family.estimators import PrivateMeanReturn
from privrl.certificate import make_certificate
from privrl.fitters import FitCommand, FitOutput, build_estimator, load_user_dataset, register_fit


def _run(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, PrivateMeanReturn)   # a bad option fails before the data are read
    est.fit(load_user_dataset(args), rng=args.rng)
    delta = est.budget.reporting_delta if est.is_private else None
    summary = {"n_episodes": est.n_episodes_, "mean": est.mean_}
    cert = make_certificate(est, algorithm="example-mean", delta=delta, extra={"n_episodes": est.n_episodes_})
    return FitOutput(certificate=cert, arrays={"mean": np.array([est.mean_])}, summary=summary)


register_fit(FitCommand("example-mean", "private mean return of the episodes (the example family)",
                        lambda parser: None, _run, sources=("data",), estimator=PrivateMeanReturn))
