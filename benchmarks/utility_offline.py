"""Privacy–utility rows of the offline family for ``benchmarks/bench_utility.py``.

``rows(seeds)`` returns one dict per (algorithm, calibration, constants, budget): DP-APVI and APVI on
the random tabular MDP (S = 10, A = 5, H = 10, instance seed 0, behaviour 0.5·optimal + 0.5·uniform,
n = 10⁵ trajectories), DP-VAPVI and VAPVI on the Qiao–Wang linear MDP (Appendix F, H = 20, instance
seed 0, K = 10⁴, no split), at (ε, δ) = (1, 10⁻⁵) and at ρ = 1, paper / sound / tight calibration,
theory / practical constants, each seed's data shared by every row. ``metric`` is the
sub-optimality gap v* − v^π̂ (exact), ``value`` its mean over seeds; ``noise_std`` the largest
stream's σ (data-independent); extra keys: ``noise_std_streams`` (per family / stream),
``trivial_gap`` (the tie-break policy's), ``value_se``, ``degenerate`` (fraction of fits with a
UtilityWarning), ``target`` (the issue's target for the row, where one applies).

    .venv/bin/python -c "import sys; sys.path.insert(0, 'benchmarks'); import utility_offline as u; print(u.rows(5))"
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp
from privrl.errors import PrivacyLeakWarning, UtilityWarning
from privrl.offline import APVI, DPAPVI, DPVAPVI, VAPVI, offline_statistics

BUDGETS = (PrivacyBudget(epsilon=1.0, delta=1e-5), PrivacyBudget(rho=1.0))
CALIBRATIONS = ("paper", "sound", "tight")
CONSTANTS = ("theory", "practical")
N_TABULAR = 100_000
K_LINEAR = 10_000
LAM_RAW = 1.0 / 7.0     # theory constants on the √7-scaled features: λ = 1 on the raw features
DATA_SEED = 7_000       # data seeds 7000 + s: disjoint from the tuning script's and the experiments'


def _fit(est: Any, data: Any, public: Any, seed: int) -> tuple[Any, bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(data, public, rng=np.random.default_rng(10_000 + seed))
    return est, any(issubclass(w.category, UtilityWarning) and "degenerate" in str(w.message) for w in caught)


def _row(name: str, algorithm: str, calibration: str, constants: str, budget: PrivacyBudget | None,
         gaps: list[float], spent: float | None, noise: Any, trivial: float, degenerate: list[bool],
         start: float, **extra: Any) -> dict[str, Any]:
    streams = None if noise is None else np.round(np.asarray(noise, dtype=float), 6).tolist()
    return {"name": name, "algorithm": algorithm, "calibration": calibration, "constants": constants,
            "epsilon": None if budget is None or budget.epsilon is None else float(budget.epsilon),
            "delta": None if budget is None or budget.rho is not None else float(budget.delta),
            "rho": None if budget is None else budget.rho,
            "noise_std": None if noise is None else float(np.max(noise)), "noise_std_streams": streams,
            "epsilon_spent": spent, "metric": "gap", "value": float(np.mean(gaps)),
            "value_se": float(np.std(gaps, ddof=1) / math.sqrt(len(gaps))) if len(gaps) > 1 else 0.0,
            "trivial_gap": trivial, "degenerate": float(np.mean(degenerate)), "seeds": len(gaps),
            "seconds": time.perf_counter() - start, **extra}


def _family(kind: str, seeds: int) -> list[dict[str, Any]]:
    if kind == "tabular":
        mdp = random_tabular_mdp(n_states=10, n_actions=5, horizon=10, rng=0)
        mu, size, public = covering_behaviour_policy(mdp.optimal_policy(), 5), N_TABULAR, mdp.rewards
        names = ("DP-APVI", "APVI")
    else:
        mdp = synthetic_linear_mdp(horizon=20, rng=0)
        mu, size, public = synthetic_behaviour_policy(), K_LINEAR, mdp.features
        names = ("DP-VAPVI", "VAPVI")
    v_star = mdp.optimal_value()
    trivial = float(v_star - mdp.value(np.zeros((mdp.horizon, mdp.n_states), dtype=int)))
    data = [offline_statistics(mdp.sample(mu, size, rng=DATA_SEED + s), mdp.n_states, mdp.n_actions)
            for s in range(seeds)]

    def make(constants: str, budget: PrivacyBudget | None, calibration: str) -> Any:
        kw: dict[str, Any] = {"constants": constants}
        if kind == "linear":
            kw["split"] = False
            if constants == "theory":
                kw["lam"] = LAM_RAW
        if budget is None:
            return (APVI if kind == "tabular" else VAPVI)(**kw)
        return (DPAPVI if kind == "tabular" else DPVAPVI)(budget=budget, calibration=calibration, **kw)

    out: list[dict[str, Any]] = []
    baseline: dict[str, float] = {}
    for constants in CONSTANTS:
        start = time.perf_counter()
        fits = [_fit(make(constants, None, "none"), d, public, s) for s, d in enumerate(data)]
        gaps = [v_star - mdp.value(e.policy_) for e, _ in fits]
        baseline[constants] = float(np.mean(gaps))
        out.append(_row(f"{names[1].lower()}-{constants}", names[1], "none", constants, None, gaps, None, None,
                        trivial, [d for _, d in fits], start))
    for budget in BUDGETS:
        sound_std = None
        for calibration in ("sound", "paper", "tight"):
            for constants in CONSTANTS:
                start = time.perf_counter()
                fits = [_fit(make(constants, budget, calibration), d, public, s) for s, d in enumerate(data)]
                est = fits[0][0]
                gaps = [v_star - mdp.value(e.policy_) for e, _ in fits]
                spent = est.privacy_spent(1e-5)
                extra: dict[str, Any] = {"rho_spent": est.privacy_ledger_.zcdp_rho()}
                if calibration == "sound" and constants == "theory":
                    sound_std = float(np.max(est.noise_std_))
                if sound_std is not None:
                    extra["noise_std_vs_sound"] = float(np.max(est.noise_std_)) / sound_std
                extra["gap_vs_nonprivate"] = float(np.mean(gaps)) - baseline[constants]
                label = "eps1" if budget.rho is None else "rho1"
                out.append(_row(f"{names[0].lower()}-{calibration}-{constants}-{label}", names[0], calibration,
                                constants, budget, gaps, spent, est.noise_std_, trivial, [d for _, d in fits],
                                start, **extra))
    return out


def rows(seeds: int) -> list[dict[str, Any]]:
    """The offline family's rows of the utility benchmark (module docstring)."""
    return _family("tabular", seeds) + _family("linear", seeds)


if __name__ == "__main__":
    import json

    for r in rows(5):
        print(json.dumps(r, default=str))
