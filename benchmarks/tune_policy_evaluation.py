"""How the ``constants="practical"`` presets of the policy-evaluation family were chosen.

Run once; its output is the evidence for ``PRACTICAL_KAPPA`` (the smoothing rate β of the tight
calibration: the largest β whose certified α is ≤ (1 + κ)·α₀) and ``PRACTICAL_LAMBDA_COEF``
(DP-LSL's λ = λ_min + c‖ρ‖∞ α^{2/5} m^{3/5}); see docs/policy_evaluation.md. Held-out instances
only: chains with (N, p, γ) = (20, 0.3, 0.95) and (30, 0.7, 0.99), tabular and pair features,
F_max = 1 (the benchmark and the figures use N = 40, p = 0.5, γ = 0.99); data seeds 900 + s, noise
seeds 950 + s (the experiments derive theirs from the experiment id). Each grid point is scored by
the mean of log RMSE over instances, features, m ∈ {10³, 10⁴, 10⁵, 10⁶}, ε ∈ {0.1, 1, 10}
(δ = 10⁻⁵) and seeds; one JSON line per grid point (``name``, ``seconds``, the constant,
``score``), then the winners.

    .venv/bin/python benchmarks/tune_policy_evaluation.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

from privrl.data.features import one_hot, state_aggregation  # noqa: E402
from privrl.envs.chain import chain_values, sample_chain_statistics_nested  # noqa: E402
from privrl.least_squares.calibration import ROUNDING_OFFSET, practical_beta, tight_alpha  # noqa: E402
from privrl.policy_evaluation import DPLSLMechanism, DPLSWMechanism, VisitStatistics  # noqa: E402
from privrl.policy_evaluation.estimators import lambda_schedule  # noqa: E402
from privrl.privacy import NumpyNoise  # noqa: E402

INSTANCES = ((20, 0.3, 0.95), (30, 0.7, 0.99))
SIZES = (1_000, 10_000, 100_000, 1_000_000)
EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-5
KAPPAS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0)
LAMBDA_COEFS = (0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)


def _smoothed(base, epsilon: float, d: int, kappa: float | None):
    """The tight calibration's constants with β from κ (None: the printed β, i.e. theory)."""
    if kappa is None:
        return base.smoothed
    beta = practical_beta(epsilon, DELTA, d, kappa)
    alpha = tight_alpha(epsilon, DELTA, beta, d) * math.exp(0.5 * beta * ROUNDING_OFFSET)
    return dataclasses.replace(base.smoothed, alpha=alpha, beta=beta, constants="practical")


def _batches(n: int, p: float, gamma: float, seeds: int):
    return {s: sample_chain_statistics_nested(SIZES, gamma, n_states=n, stay_probability=p, rng=900 + s)
            for s in range(seeds)}


def _log_rmse(phi, theta, truth) -> float:
    return math.log(math.sqrt(np.mean((phi @ theta - truth) ** 2)))


def _scores(args: argparse.Namespace, kappa_for_lsl: float | None) -> tuple[dict, dict]:
    """log RMSE of DP-LSW per κ and, when ``kappa_for_lsl`` is given, of DP-LSL per λ rule (with the
    β of that κ)."""
    lsw_scores: dict[object, list[float]] = {k: [] for k in (None, *KAPPAS)}
    lsl_scores: dict[object, list[float]] = {c: [] for c in ("theory", *LAMBDA_COEFS)}
    for n, p, gamma in INSTANCES:
        truth = chain_values(n, p, gamma)
        data = _batches(n, p, gamma, args.seeds)
        w = np.full(n, 1.0 / n)
        for phi in (one_hot(n), state_aggregation(n, 2)):
            d = phi.shape[1]
            for eps in EPSILONS:
                lsw = DPLSWMechanism.create(features=phi, weights=w, F_max=1.0, epsilon=eps, delta=DELTA)
                smooth = {k: _smoothed(lsw, eps, d, k) for k in lsw_scores} if kappa_for_lsl is None else {}
                sg_lsl = None if kappa_for_lsl is None else _smoothed(lsw, eps, d, kappa_for_lsl)
                for s, nested in data.items():
                    for m, (counts, mean) in zip(SIZES, nested):
                        stats = VisitStatistics(counts, mean, m)
                        theta = lsw.solve(stats)
                        for k, sg in smooth.items():
                            mech = dataclasses.replace(lsw, smoothed=sg)
                            out = mech.release(theta, counts, m, noise=NumpyNoise(950 + s)).value
                            lsw_scores[k].append(_log_rmse(phi, out, truth))
                        if sg_lsl is None:
                            continue
                        for c in lsl_scores:
                            practical = c != "theory"
                            lam = lambda_schedule(m, phi, w, constants="practical" if practical else "theory",
                                                  alpha=sg_lsl.alpha, coef=c if practical else None)
                            base = DPLSLMechanism.create(features=phi, relevance=w, lam=lam, F_max=1.0,
                                                         epsilon=eps, delta=DELTA)
                            mech = dataclasses.replace(base, smoothed=sg_lsl)
                            out = mech.release(mech.solve(stats), counts, m, noise=NumpyNoise(950 + s)).value
                            lsl_scores[c].append(_log_rmse(phi, out, truth))
    return lsw_scores, lsl_scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    lsw_scores, _ = _scores(args, None)
    for k, v in lsw_scores.items():
        emit("tune_dp_lsw_kappa", kappa="theory" if k is None else k, score=float(np.mean(v)), points=len(v),
             seconds=time.perf_counter() - start)
    best_k = min(KAPPAS, key=lambda k: np.mean(lsw_scores[k]))
    _, lsl_scores = _scores(args, best_k)
    for c, v in lsl_scores.items():
        emit("tune_dp_lsl_lambda", coef=c, kappa=best_k, score=float(np.mean(v)), points=len(v),
             seconds=time.perf_counter() - start)
    best_c = min(LAMBDA_COEFS, key=lambda c: np.mean(lsl_scores[c]))
    emit("tune_winner", kappa=best_k, lambda_coef=best_c, seconds=time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
