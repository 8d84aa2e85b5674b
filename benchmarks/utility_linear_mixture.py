"""Privacy–utility rows of the linear-mixture family for ``benchmarks/bench_utility.py``.

``rows(seeds)`` returns one dict per (algorithm, calibration, constants, budget): LinOpt-VI under JDP
(central tree privatizer) and the non-private UCRL-VTR on E2 (``random_mixture(6, 4, 5, 3, 3)``,
instance seed 0 — never the tuning instances 990000–990002), K = 2·10⁴ episodes, ε ∈ {1, 10, 100}
with δ = 10⁻⁵, paper / sound / tight calibration, theory / practical constants, and under tight
calibration also the square-root factorization counter (``counter="factorization"``) and the BLT
counter (``counter="blt"``, the default under tight calibration; the other rows use the paper's
binary tree); run ``s`` of every
row uses the generator ``[7000, s]`` (the same users' randomness for every row). ``metric`` is the
final cumulative pseudo-regret (exact), ``value`` its mean over seeds; ``noise_std`` the largest
stream's σ (data-independent). Extra keys: ``value_se``, ``noise_std_streams`` (the (4, H) table),
``noise_std_vs_default`` and ``regret_vs_default`` (against today's default: sound calibration,
theory constants, same ε), ``trivial`` (the regret of the constant tie-break policy), ``saturated``
(fraction of fits whose last-episode Q is clipped everywhere: the UtilityWarning), and ``target``.
``rows(seeds, calibrations=("sound", "tight"))`` restricts the grid (the default row is always kept).

    PYTHONPATH=benchmarks .venv/bin/python -c "import utility_linear_mixture as u; print(u.rows(3))"
    .venv/bin/python benchmarks/utility_linear_mixture.py --defaults-only --seeds 100 --epsilons 1
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.finite import backward_induction
from privrl.envs.linear_mixture import random_mixture
from privrl.errors import UtilityWarning
from privrl.linear_mixture import LinOptVI
from privrl.linear_mixture.engine import fit_many

K = 20_000
DELTA = 1e-5
EPSILONS = (1.0, 10.0, 100.0)
CALIBRATIONS = ("paper", "sound", "tight")
CONSTANTS = ("theory", "practical")
#: the central counters compared under tight calibration
COUNTERS = ("tree", "factorization", "blt")
INSTANCE_SEED = 0
RUN_SEED = 7_000


def rows(seeds: int, calibrations: tuple[str, ...] = CALIBRATIONS, *, defaults_only: bool = False,
         epsilons: tuple[float, ...] = EPSILONS) -> list[dict[str, Any]]:
    """The family's rows of the utility benchmark (module docstring). ``defaults_only``: only the
    old default (sound, theory, tree), the square root's (tight, practical, factorization) and
    today's (tight, practical, blt) at ``epsilons`` — cheap enough for many seeds."""
    model = random_mixture(6, 4, 5, 3, 3, rng=INSTANCE_SEED)
    P, r = model.transitions(), model.mean_rewards()
    v_star = backward_induction(P, r)[1][0]
    v_tie = backward_induction(P, r, np.zeros((model.horizon, model.n_states), dtype=int))[1][0]
    trivial = float(K * (model.initial @ (v_star - v_tie)))
    specs: list[tuple[str, str, str, float, str]]
    if defaults_only:
        specs = [("LinOpt-VI", cal, c, eps, counter) for eps in epsilons
                 for cal, c, counter in (("sound", "theory", "tree"), ("tight", "practical", "factorization"),
                                         ("tight", "practical", "blt"))]
    else:
        specs = [("UCRL-VTR", "none", c, math.inf, "tree") for c in CONSTANTS]
        cals = [c for c in CALIBRATIONS if c in calibrations or (c, "theory") == ("sound", "theory")]
        specs += [("LinOpt-VI", cal, c, eps, "tree") for cal in cals for c in CONSTANTS for eps in epsilons
                  if cal in calibrations or c == "theory"]
        if "tight" in calibrations:
            specs += [("LinOpt-VI", "tight", c, eps, counter) for counter in ("factorization", "blt")
                      for c in CONSTANTS for eps in epsilons]
    ests, keys, rngs = [], [], []
    for spec in specs:
        algorithm, calibration, constants, eps, counter = spec
        budget = PrivacyBudget.non_private() if math.isinf(eps) else PrivacyBudget(epsilon=eps, delta=DELTA)
        for s in range(seeds):
            ests.append(LinOptVI(n_episodes=K, privatizer="none" if algorithm == "UCRL-VTR" else "central",
                                 budget=budget, calibration="tight" if calibration == "none" else calibration,
                                 constants=constants, counter=counter))
            keys.append(spec)
            # a fresh generator per run: run s of every row sees the same users (the same env stream)
            rngs.append(np.random.default_rng([RUN_SEED, s]))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        # one lockstep batch per counter (the tree runs share the batched statistics)
        for counter in COUNTERS:
            idx = [i for i, k in enumerate(keys) if k[4] == counter]
            if idx:
                fit_many([ests[i] for i in idx], [model] * len(idx), [rngs[i] for i in idx], reachable_only=True)
    per_row = (time.perf_counter() - start) / len(specs)
    out: list[dict[str, Any]] = []
    by_spec = {spec: [e for e, k in zip(ests, keys) if k == spec] for spec in specs}
    for spec in specs:
        algorithm, calibration, constants, eps, counter = spec
        fits = by_spec[spec]
        regrets = [float(e.cumulative_regret_[-1]) for e in fits]
        private = algorithm != "UCRL-VTR"
        default = by_spec.get(("LinOpt-VI", "sound", "theory", eps, "tree")) if private else None
        tag = f"-{counter}" if counter != "tree" else ""
        row: dict[str, Any] = {
            "name": f"{algorithm.lower()}-{calibration}{tag}-{constants}" + (f"-eps{eps:g}" if private else ""),
            "algorithm": algorithm, "calibration": calibration, "constants": constants,
            "counter": counter if private else None,
            "epsilon": eps if private else None, "delta": DELTA if private else None, "rho": None,
            "noise_std": fits[0].noise_std_ if private else None,
            "epsilon_spent": fits[0].privacy_spent() if private else None,
            "metric": "final_regret", "value": float(np.mean(regrets)),
            "value_se": float(np.std(regrets, ddof=1) / math.sqrt(len(regrets))) if len(regrets) > 1 else 0.0,
            "seeds": len(regrets), "seconds": per_row, "episodes": K, "trivial": trivial,
            "saturated": float(np.mean([e.saturated_ for e in fits])),
        }
        if private:
            row["noise_std_streams"] = np.round(np.asarray(fits[0].privatizer_parameters_["std"]), 3).tolist()
            if default is not None:
                row["noise_std_vs_default"] = row["noise_std"] / default[0].noise_std_
                row["regret_vs_default"] = row["value"] / float(np.mean([e.cumulative_regret_[-1] for e in default]))
            if calibration == "tight":
                row["target"] = ("noise_std <= 0.3 x default; regret <= 0.5 x default; non-increasing in epsilon; "
                                 "epsilon_spent in [0.99, 1] x epsilon")
        out.append(row)
    return out


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--defaults-only", action="store_true", help="only the old and today's default rows")
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    args = ap.parse_args()
    for row in rows(args.seeds, defaults_only=args.defaults_only,
                    epsilons=tuple(float(e) for e in args.epsilons.split(","))):
        print(json.dumps(row, default=str))
