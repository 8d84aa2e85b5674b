"""Privacy–utility rows of the Q-learning family for ``benchmarks/bench_utility.py``.

``rows(seeds)`` returns one dict per calibration: DPQLearning (Algorithm 1's loop, the only one the
analysis certifies: App. E.3's T = 5000, B = 64, alpha = 3e-4, L = 4) on CenterWalk at
(ε, δ) = (0.9, 10⁻⁴) under paper / sound / tight calibration, and non-private Q-learning in the same
loop on the same seeds. ``metric`` is the mean return of the last half of the training episodes
(uniform random play earns 10.86, the optimum 20.71); ``noise_std`` the functional noise sigma
(public: calibrated from the budget); ``epsilon_spent`` the ledger's ε at δ — for the paper
calibration the true spend, far above the budget (``certified`` False). Extra keys: ``kernel_beta``,
``kappa``, ``certified``, ``value_se``. DPQLearning has no utility preset (its step size is in the
sensitivity), so ``constants`` is "theory" on every row.

    .venv/bin/python -c "import sys; sys.path.insert(0, 'benchmarks'); import utility_q_learning as u; print(u.rows(3))"
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from privrl import PrivacyBudget
from privrl.errors import CertificationError, PrivacyLeakWarning, UtilityWarning
from privrl.q_learning import DPQLearning, QLearning

BUDGET = PrivacyBudget(epsilon=0.9, delta=1e-4)
N_SAMPLES = 5000
CALIBRATIONS = ("paper", "sound", "tight")
SEED0 = 20_000   # run seeds 20000 + s: disjoint from the figures' (0-9) and the step-size tuning's (100-104)


def _last_half(returns: np.ndarray) -> float:
    return float(np.mean(returns[len(returns) // 2:]))


def _row(name: str, algorithm: str, calibration: str, values: list[float], start: float, *,
         noise: float | None, spent: float | None, **extra: Any) -> dict[str, Any]:
    private = calibration != "none"
    return {"name": name, "algorithm": algorithm, "calibration": calibration, "constants": "theory",
            "epsilon": float(BUDGET.epsilon) if private else None, "delta": float(BUDGET.delta) if private else None,
            "rho": None, "noise_std": noise, "epsilon_spent": spent, "metric": "return_last_half",
            "value": float(np.mean(values)) if values else math.nan,
            "value_se": float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0,
            "seeds": len(values), "seconds": time.perf_counter() - start, **extra}


def rows(seeds: int) -> list[dict[str, Any]]:
    out = []
    for cal in CALIBRATIONS:
        start = time.perf_counter()
        values, est = [], None
        try:
            for s in range(seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UtilityWarning)
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    est = DPQLearning(budget=BUDGET, calibration=cal, config="paper", n_samples=N_SAMPLES)
                    est.fit(rng=SEED0 + s)
                values.append(_last_half(est.returns_))
        except CertificationError:
            out.append(_row(f"dp-q-learning-{cal}", "DP-Q-learning", cal, [], start, noise=None, spent=None,
                            certified=False, refused=True))
            continue
        cal_ = est.calibration_
        out.append(_row(f"dp-q-learning-{cal}", "DP-Q-learning", cal, values, start, noise=float(est.noise_std_),
                        spent=float(est.privacy_spent()), certified=bool(est.certified_),
                        kernel_beta=float(cal_.beta), kappa=float(cal_.kappa)))
    start = time.perf_counter()
    values = [_last_half(QLearning(config="paper", n_samples=N_SAMPLES).fit(rng=SEED0 + s).returns_)
              for s in range(seeds)]
    out.append(_row("q-learning", "Q-learning", "none", values, start, noise=0.0, spent=None))
    return out
