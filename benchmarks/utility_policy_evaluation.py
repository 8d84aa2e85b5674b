"""Privacy–utility rows of the policy-evaluation family for ``benchmarks/bench_utility.py``.

``rows(seeds)`` returns one dict per (algorithm, calibration, constants): DP-LSW under paper / sound /
tight calibration and theory / practical constants, and the non-private LSW on the same data, on the
chain of §6 (N = 40, p = 0.5, γ = 0.99, tabular features, w = 1/N, F_max = 1), m = 10⁵ trajectories,
(ε, δ) = (1, 10⁻⁵). ``metric`` is the RMSE of V̂ over the 40 states against the exact values,
``value`` its mean over seeds (data seeds 7000 + s, noise seeds 8000 + s: disjoint from the tuning
script's and the experiments'). σ_X is data-dependent and private, so ``noise_std`` is its
data-independent upper bound α·F_max·‖(Γ^{1/2}Φ)^†‖·√ψ̄, ψ̄ = Σ_s w_s ≥ ψ_X (rounded up to
e^{jβ} under the tight calibration; ``noise_std_kind`` says so); extra keys: ``noise_multiplier`` (α),
``beta``, ``sigma_diagnostic``
(the mean realised σ_X — a non-private diagnostic on this public benchmark), ``value_se``,
``ratio_to_sound`` (value / the sound row's, same constants), ``target`` where the issue sets one.
For DP-LSW the practical preset changes only the tight calibration (its β); paper and sound fix
(α, β) by their closed forms.

    PYTHONPATH=benchmarks .venv/bin/python -c "import utility_policy_evaluation as u; print(u.rows(5))"
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from privrl.data.features import one_hot
from privrl.envs.chain import chain_values, sample_chain_statistics_nested
from privrl.policy_evaluation import DPLSWMechanism, VisitStatistics
from privrl.privacy import NumpyNoise

N_STATES, M, EPSILON, DELTA = 40, 100_000, 1.0, 1e-5
CALIBRATIONS = ("paper", "sound", "tight")
CONSTANTS = ("theory", "practical")
DATA_SEED, NOISE_SEED = 7_000, 8_000


def rows(seeds: int) -> list[dict[str, Any]]:
    start = time.perf_counter()
    phi, w = one_hot(N_STATES), np.full(N_STATES, 1.0 / N_STATES)
    truth = chain_values(N_STATES, 0.5, 0.99)
    batches = [sample_chain_statistics_nested([M], 0.99, n_states=N_STATES, rng=DATA_SEED + s)[0]
                for s in range(seeds)]

    def rmse(theta: np.ndarray) -> float:
        return float(math.sqrt(np.mean((phi @ theta - truth) ** 2)))

    base: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "rho": None, "metric": "rmse", "seeds": seeds,
                            "m": M, "instance": "chain N=40 p=0.5 gamma=0.99, tabular, F_max=1"}
    out: list[dict[str, Any]] = []
    lsw = []
    for calibration in CALIBRATIONS:
        for constants in CONSTANTS:
            t0 = time.perf_counter()
            mech = DPLSWMechanism.create(features=phi, weights=w, F_max=1.0, epsilon=EPSILON, delta=DELTA,
                                         calibration=calibration, constants=constants)
            errs, sigmas = [], []
            for s, (counts, mean) in enumerate(batches):
                stats = VisitStatistics(counts, mean, M)
                theta = mech.solve(stats)
                if calibration == "paper" and constants == "theory":
                    lsw.append(rmse(theta))
                errs.append(rmse(mech.release(theta, counts, M, noise=NumpyNoise(NOISE_SEED + s)).value))
                sigmas.append(mech.noise_scale(counts, M))
            sg = mech.smoothed
            out.append({**base, "name": f"dp_lsw_{calibration}_{constants}", "algorithm": "DP-LSW",
                        "calibration": calibration, "constants": constants,
                        "noise_std": mech.noise_bound(M),
                        "noise_std_kind": "data-independent upper bound (psi <= sum w)",
                        "noise_multiplier": sg.alpha, "beta": sg.beta, "epsilon_spent": sg.epsilon_spent,
                        "sigma_diagnostic": float(np.mean(sigmas)), "value": float(np.mean(errs)),
                        "value_se": float(np.std(errs, ddof=1) / math.sqrt(seeds)) if seeds > 1 else 0.0,
                        "seconds": time.perf_counter() - t0})
    for row in out:
        sound = next(r for r in out if r["calibration"] == "sound" and r["constants"] == row["constants"])
        row["ratio_to_sound"] = row["value"] / sound["value"]
        row["sigma_ratio_to_sound"] = row["sigma_diagnostic"] / sound["sigma_diagnostic"]
        if row["calibration"] == "tight":
            row["target"] = "RMSE <= 0.5 x sound"
    out.append({**base, "name": "lsw", "algorithm": "LSW", "calibration": "none", "constants": "theory",
                "noise_std": 0.0, "epsilon": None, "delta": None, "epsilon_spent": None,
                "value": float(np.mean(lsw)), "value_se": float(np.std(lsw, ddof=1) / math.sqrt(seeds)) if seeds > 1
                else 0.0, "seconds": time.perf_counter() - start})
    return out
