"""DP-OneStep over the real-shaped grid: the fraction of the best non-private gain, safety and warnings.

For each instance of :data:`privrl.envs.real_shaped.INSTANCES`, n ∈ {10⁴, 10⁵}, seed and ε ∈ {1, 10}
(δ = 10⁻⁶), one logged dataset (drawn as ``benchmarks/bench_real_shaped.py`` draws it: the logging
policy, padded to H, ``rng = 10000 + seed``) is fitted by :class:`privrl.offline.DPOneStep`
(``F_max = 1``: outcome rewards), with the logging policy estimated from the released counts and,
``/public``, given as the public ``behaviour_policy``. Values are exact on the model; the reference
gain is the best non-private APVI route's on the same data, read from
``benchmarks/results/real_shaped_auto.jsonl`` (the same datasets, seeds 0–9; the reference of the
``route="auto"`` tables). One JSON line per fit
(``name: one-step``) and, with ``--summary``, one per (route, n, ε) over the instances
(``one-step-summary``: median of the per-instance mean fraction, the real task's shape, safe fits
(value ≥ logging − 0.005), and the warning's rates).

    python benchmarks/bench_one_step.py --seeds 0-4 --summary
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _util import emit  # noqa: E402

from privrl import PrivacyBudget, UtilityWarning  # noqa: E402
from privrl.envs.real_shaped import INSTANCES, REAL_LIKE  # noqa: E402
from privrl.offline import DPOneStep  # noqa: E402

REFERENCE = os.path.join(os.path.dirname(__file__), "results", "real_shaped_auto.jsonl")


def references() -> dict[tuple[str, int, int], float]:
    out = {}
    with open(REFERENCE, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("name") == "real-shaped" and "best_nonprivate_gain" in row:
                out[(row["instance"], row["n"], row["seed"])] = row["best_nonprivate_gain"]
    return out


def fits(seeds: list[int], ns: list[int], epsilons: list[float]) -> list[dict[str, object]]:
    ref = references()
    rows = []
    for name, inst in INSTANCES.items():
        model = inst.build()
        logging = model.value(model.logging_policy)
        public = model.policy_probabilities(model.logging_policy)
        for n in ns:
            for seed in seeds:
                data = model.sample(model.logging_policy, n, rng=10_000 + seed, pad_to_horizon=model.horizon)
                for eps in epsilons:
                    for route, extra in (("dp/one-step", {}), ("dp/one-step/public", {"behaviour_policy": public})):
                        est = DPOneStep(budget=PrivacyBudget(epsilon=eps, delta=1e-6), F_max=1.0, **extra)
                        t, wall = time.process_time(), time.perf_counter()
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always", UtilityWarning)
                            est.fit(data, rng=seed)
                        cpu, wall = time.process_time() - t, time.perf_counter() - wall
                        gain = model.value(est.policy_probs_) - logging
                        row = {"instance": name, "route": route, "n": n, "epsilon": eps,
                               "seed": seed, "gain": gain, "fraction_of_best_gain": gain / ref[(name, n, seed)],
                               "best_nonprivate_gain": ref[(name, n, seed)],
                               "switched": float(np.mean(est.switched_)),
                               "utility_warning": any(issubclass(w.category, UtilityWarning) for w in caught),
                               "cpu_seconds": cpu, "seconds": wall}
                        rows.append(emit("one-step", **row))
    return rows


def summary(rows: list[dict[str, object]]) -> None:
    keys = sorted({(r["route"], r["n"], r["epsilon"]) for r in rows})
    for route, n, eps in keys:
        sel = [r for r in rows if (r["route"], r["n"], r["epsilon"]) == (route, n, eps)]
        per = {name: np.mean([r["fraction_of_best_gain"] for r in sel if r["instance"] == name]) for name in INSTANCES}
        losing = [r for r in sel if r["gain"] <= 0]
        gaining = [r for r in sel if r["fraction_of_best_gain"] >= 0.25]
        fields = {"route": route, "n": n, "epsilon": eps, "fits": len(sel),
              "median_fraction": float(np.median(list(per.values()))), "real_shape": float(per[REAL_LIKE]),
              "per_instance": {k: round(float(v), 3) for k, v in per.items()},
              "safe": sum(r["gain"] >= -0.005 for r in sel),
              "losing_warned": f"{sum(r['utility_warning'] for r in losing)}/{len(losing)}",
              "gaining_warned": f"{sum(r['utility_warning'] for r in gaining)}/{len(gaining)}"}
        emit("one-step-summary", seconds=float(sum(r.get("seconds", 0.0) for r in sel)), **fields)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-4", help="a range a-b of seeds")
    ap.add_argument("--n", default="10000,100000")
    ap.add_argument("--epsilons", default="1,10")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--table", nargs="*", help="summarise JSON lines of earlier runs instead of fitting")
    args = ap.parse_args()
    if args.table:
        rows = [json.loads(line) for path in args.table for line in open(path, encoding="utf-8")]
        summary([r for r in rows if r.get("name") == "one-step"])
        return
    lo, hi = (int(x) for x in args.seeds.split("-"))
    rows = fits(list(range(lo, hi + 1)), [int(x) for x in args.n.split(",")],
                [float(x) for x in args.epsilons.split(",")])
    if args.summary:
        summary(rows)


if __name__ == "__main__":
    main()
