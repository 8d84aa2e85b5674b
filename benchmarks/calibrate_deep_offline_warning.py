"""The deep offline family's noise-dominated UtilityWarning against measured returns: for every committed
measurement of a private fit (the benchmark's offline-control leaderboard, ``docs/bench/leaderboard.csv``,
200 trajectories; ``benchmarks/results/deep_offline_{targets,iql,td3bc}.jsonl``, 200 to 10⁴ trajectories),
the planner's per-step noise-to-signal (``privrl.deep_offline._utility``: the kernel the fit warns from), its
verdict, whether the fit warns, and the measured return against the behaviour policy's and the non-private
learner's. Reads results only (no fit); prints the markdown table of ``docs/deep_offline.md``
("When the fit warns").

"Far below" the behaviour policy: a mean return lower by more than 10 % of the behaviour return's magnitude (the
leaderboard's seeds are 3, too few for a two-standard-error rule: DP-IQL's −361 ± 130 on acrobot-offline
against −151 would not pass one).

Run: ``.venv/bin/python benchmarks/calibrate_deep_offline_warning.py``.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from privrl.deep_offline import DPBC, DPIQL, DPTD3BC
from privrl.deep_offline._utility import step_rows, step_verdict
from privrl.deep_offline.estimators import noise_multiplier
from privrl.privacy import PrivacyBudget

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: per learner: estimator, (features, actions) per environment
LEARNERS = {"bc": DPBC, "iql": DPIQL, "td3bc": DPTD3BC}
DIMS = {"cartpole": (4, 2), "acrobot": (6, 3), "pendulum": (3, 1)}
#: the hidden widths the bench script uses unless a row says otherwise
SCRIPT_HIDDEN = {"bc": (32, 32), "iql": (32, 32), "td3bc": (64, 64)}


def ratio(learner: str, env: str, n: int, rate: float, z: float, hidden: tuple[int, ...]) -> float:
    """The planner's worst per-step noise-to-signal (C = 1: the ratio does not depend on it)."""
    cls = LEARNERS[learner]
    rows = step_rows(z, cls.sensitivity_factor, 1.0, rate, n, cls.step_networks(*DIMS[env], hidden), cls.step_name)
    return max(r.ratio for r in rows)


def _stats(values: list[float]) -> tuple[float, float]:
    mean = float(np.mean(values))
    return mean, (float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan)


def script_cells() -> list[dict]:
    """Cells of the bench script's results, grouped by (learner, env, n, q, T, hidden, settings, ε)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    behaviour: dict[tuple, float] = {}
    plain: dict[tuple, list[float]] = defaultdict(list)
    for name in ("deep_offline_targets.jsonl", "deep_offline_iql.jsonl", "deep_offline_td3bc.jsonl"):
        for line in (RESULTS / name).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["name"] == "deep-offline-behaviour":
                if "seed" not in r:
                    behaviour[(r["env"], r["episodes"])] = r["return"]
                continue
            learner = r["name"].removeprefix("deep-offline-")
            hidden = tuple(r.get("hidden", SCRIPT_HIDDEN[learner]))
            key = (learner, r["env"], r["episodes"], r["sampling_rate"], r["steps"], hidden, r.get("learning_rate"),
                   r.get("policy_delay"), r.get("alpha"))
            if math.isinf(r["epsilon"]):
                plain[key].append(r["return"])
            else:
                groups[(*key, r["epsilon"], r["z"])].append(r["return"])
    cells = []
    for (*key, eps, z), values in groups.items():
        learner, env, n, rate, steps, hidden = key[:6]
        cells.append({"source": "script", "learner": learner, "env": env, "n": n, "q": rate, "T": steps,
                      "hidden": hidden, "epsilon": eps, "delta": 1e-5, "z": z, "returns": values,
                      "behaviour": behaviour[(env, n)], "plain": plain.get(tuple(key), [])})
    return cells


def leaderboard_cells() -> list[dict]:
    """The leaderboard's offline-control cells (full profile: n = 200, q = 0.1, T = 200, δ = 1/(10 n))."""
    rows = list(csv.DictReader((ROOT / "docs" / "bench" / "leaderboard.csv").open(encoding="utf-8")))
    rows = [r for r in rows if r["setting"] == "offline-control"]
    trivial = {r["task"]: float(r["raw_mean"]) for r in rows if r["role"] == "trivial"}
    plain = {(r["task"], r["entry"]): float(r["raw_mean"]) for r in rows if r["role"] == "non-private"}
    cells = []
    for r in rows:
        if r["role"] != "private":
            continue
        eps, delta, learner = float(r["budget"].removeprefix("eps=")), float(r["delta"]), r["entry"][3:]
        env = r["task"].removesuffix("-offline")
        z = noise_multiplier(PrivacyBudget(epsilon=eps, delta=delta), 0.1, 200)
        cells.append({"source": "leaderboard", "learner": learner, "env": env, "n": 200, "q": 0.1, "T": 200,
                      "hidden": (32, 32), "epsilon": eps, "delta": delta, "z": z,
                      "mean": float(r["raw_mean"]), "se": float(r["raw_se"]), "seeds": int(r["n_seeds"]),
                      "behaviour": trivial[r["task"]], "plain_mean": plain[(r["task"], learner)]})
    return cells


def far_below(mean: float, behaviour: float) -> bool:
    return behaviour - mean > 0.1 * abs(behaviour)


def main() -> None:
    cells = leaderboard_cells() + script_cells()
    print("| source | env | learner | n | q | T | hidden | ε | δ | z | noise/signal | verdict | warns "
          "| return, mean ± SE (seeds) | behaviour | non-private | far below the behaviour |")
    print("|" + " --- |" * 17)
    counts: dict[tuple[bool, str], int] = defaultdict(int)
    for c in sorted(cells, key=lambda c: (c["source"] != "leaderboard", c["env"], c["learner"], c["n"], c["T"],
                                          c["hidden"], -c["epsilon"])):
        if "returns" in c:
            c["mean"], c["se"] = _stats(c["returns"])
            c["seeds"] = len(c["returns"])
            c["plain_mean"] = float(np.mean(c["plain"])) if c["plain"] else math.nan
        r = ratio(c["learner"], c["env"], c["n"], c["q"], c["z"], c["hidden"])
        v = step_verdict(r)
        gap = (c["mean"] - c["behaviour"]) / abs(c["behaviour"])
        counts[(v == "hopeless", "far below" if gap < -0.1 else ("above" if gap > 0.1 else "within 10 % of"))] += 1
        se = "" if math.isnan(c["se"]) else f" ± {c['se']:.1f}"
        plain = "" if math.isnan(c["plain_mean"]) else f"{c['plain_mean']:.1f}"
        print(f"| {c['source']} | {c['env']} | DP-{c['learner'].upper().replace('TD3BC', 'TD3+BC')} | {c['n']} | "
              f"{c['q']:g} | {c['T']} | {'×'.join(map(str, c['hidden']))} | {c['epsilon']:g} | {c['delta']:g} | "
              f"{c['z']:.3g} | {r:.3g} | {v} | {'yes' if v == 'hopeless' else 'no'} | {c['mean']:.1f}{se} "
              f"({c['seeds']}) | {c['behaviour']:.1f} | {plain} | "
              f"{'**yes**' if far_below(c['mean'], c['behaviour']) else 'no'} |")
    for warns in (True, False):
        print(f"\n{'warns' if warns else 'does not warn'}: " + ", ".join(
            f"{counts[(warns, what)]} {what} the behaviour policy" for what in ("far below", "within 10 % of",
                                                                                "above")))


if __name__ == "__main__":
    main()
