"""Pilot measurements behind the seed rule of Wang & Hegde's close comparisons
(:mod:`privrl.experiments.seeding`, ``privrl.q_learning.experiments.PILOTS``).

For every comparison the rule sizes, the deciding settings run at paper scale on pilot seeds
1000 .. 1000 + P − 1 — disjoint from the seeds 0 .. n − 1 that decide the claim, so the count does
not depend on the data that decides — grouped and batched as the runner does, in this process. One
JSON line per comparison: the gap between the measured mean and the claim's boundary, the per-seed
standard deviation of the decided quantity, the CPU seconds of one seed of its deciding runs, and the
seeds the rule gives:

    {"name": "pilot", "key", "gap", "sd", "z", "cpu_per_seed", "pilot_seeds", "needed", "seeds", "capped"}

    .venv/bin/python benchmarks/pilot_seeds.py [--pilot-seeds 50] [--figures 1,2] [--where config=paper]

Paste the numbers into ``PILOTS`` (the docstring there names the commit they were measured on).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit  # noqa: E402

FIRST_PILOT_SEED = 1000


def _run(experiment: str, keep: dict[str, object], seeds: Sequence[int]) -> tuple[pd.DataFrame, dict[int, float]]:
    """Rows of the settings of ``experiment`` matching ``keep`` on ``seeds`` and each setting's
    mean CPU seconds per run."""
    from privrl.experiments import get_experiment
    from privrl.experiments.runner import RunSpec, execute_runs, group_runs

    exp = get_experiment(experiment)
    settings = [(i, p) for i, p in enumerate(exp.settings_for("paper"))
                if all(p.get(k) == v or (isinstance(v, tuple) and p.get(k) in v) for k, v in keep.items())]
    specs = [RunSpec(exp.id, i, s, dict(p), "paper") for s in seeds for i, p in settings]
    rows, cpu = [], {}
    for group in group_runs(specs):
        for outcome in execute_runs(group):
            if outcome.status != "ok" or outcome.rows is None:
                raise RuntimeError(f"pilot run failed: {outcome.manifest.get('error', '')[-400:]}")
            cpu.setdefault(outcome.spec.setting, []).append(float(outcome.manifest["cpu_time_s"]))
            rows += [{**outcome.spec.params, **r, "seed": outcome.spec.seed, "setting": outcome.spec.setting}
                     for r in outcome.rows]
    df = pd.DataFrame(rows)
    df = df[df["metric"] == "return"]
    return df, {i: float(np.mean(v)) for i, v in cpu.items()}


def _cost(df: pd.DataFrame, cpu: dict[int, float]) -> float:
    return float(sum(cpu[i] for i in sorted(df["setting"].unique())))


def _emit(key: str, gap: float, sd: float, z: float, cost: float, n: int) -> None:
    from privrl.experiments.seeding import Pilot, plan_seeds

    pilot = Pilot(gap=gap, sd=sd, z=z, cpu_per_seed=cost, pilot_seeds=n)
    plan = plan_seeds(pilot, base=10)
    emit("pilot", key=key, gap=round(gap, 4), sd=round(sd, 4), z=z, cpu_per_seed=round(cost, 4), pilot_seeds=n,
         needed=plan.needed, seeds=plan.seeds, capped=plan.capped)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pilot-seeds", type=int, default=50)
    ap.add_argument("--figures", default="1,2", help="the figures to measure (default 1,2)")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=V1[,V2]",
                    help="Figure 2: only the settings with these values (repeatable), e.g. config=paper")
    args = ap.parse_args(argv)
    seeds = range(FIRST_PILOT_SEED, FIRST_PILOT_SEED + args.pilot_seeds)
    figures = set(args.figures.split(","))
    where: dict[str, object] = {"algorithm": ("input_perturbation", "dpsgd")}
    for item in args.where:
        key, _, values = item.partition("=")
        where[key] = tuple(values.split(","))

    # Figure 1, reference config, sigma = 0.4: fresh path per update against never reset (Welch t, one-sided
    # 5 %), and reset every episode against the authors' code (the 90 % CI against ± 1)
    if "1" in figures:
        _figure1(seeds, args.pilot_seeds)
    if "2" in figures:
        _figure2(seeds, args.pilot_seeds, where)
    return 0


def _figure1(seeds: Sequence[int], n: int) -> None:
    from privrl.experiments.seeding import Z_ONE_SIDED_5
    from privrl.q_learning.claims import AUTHORS_CODE, _final, second_half

    df, cpu = _run("wang2019-fig1", {"config": "reference", "sigma": 0.4}, seeds)
    fresh, never = (df[df["reset"] == r] for r in ("iteration", "never"))
    a, b = _final(fresh), _final(never)
    _emit("fig1 reference 0.4 iteration>never", abs(float(a.mean() - b.mean())), math.hypot(a.std(), b.std()),
          Z_ONE_SIDED_5, _cost(fresh, cpu) + _cost(never, cpu), n)
    episode = df[df["reset"] == "episode"]
    ours = second_half(episode)
    gap = abs(abs(float(ours.mean()) - AUTHORS_CODE[0.4]) - 1.0)
    _emit("fig1 reference 0.4 episode=authors", gap, float(ours.std()), Z_ONE_SIDED_5, _cost(episode, cpu), n)


def _figure2(seeds: Sequence[int], n: int, where: dict[str, object]) -> None:
    """Figure 2: "does not improve over training" (last 10 − first 10 episodes against 1, ± 2 SE)."""
    from privrl.experiments.seeding import Z_TWO_SE
    from privrl.q_learning.claims import _final, _first

    for experiment, epsilon in (("wang2019-fig2a", 0.9), ("wang2019-fig2b", 0.45)):
        df, cpu = _run(experiment, where, seeds)
        for (config, algorithm, calibration), sub in df.groupby(["config", "algorithm", "calibration"]):
            gain = (_final(sub) - _first(sub)).dropna()
            _emit(f"fig2 {epsilon:g} {config} {algorithm} {calibration}", abs(float(gain.mean()) - 1.0),
                  float(gain.std()), Z_TWO_SE, _cost(sub, cpu), n)


if __name__ == "__main__":
    raise SystemExit(main())
