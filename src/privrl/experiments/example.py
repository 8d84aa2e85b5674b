"""``example-gaussian``: a tiny experiment that exercises the runner before any paper experiment.

Private mean estimation with the Gaussian mechanism. Each seed draws n records ``x_i ∈ [0, 1]``
(uniform, from the seed's shared data stream, so every budget sees the same data); each record is
one privacy unit (a one-step trajectory), neighbours replace one record. The mean has
ℓ2-sensitivity Δ = 1/n under replace-one (one record moves the sum by at most 1). The released
mean is ``mean + N(0, σ²)`` with

* ``calibration="sound"``: σ = the smallest std with ε_PLD(σ/Δ, δ) ≤ ε
  (:func:`privrl.privacy.calibrate_gaussian`, the accountant's own root);
* ``calibration="paper"``: the classical σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm 3.22),
  proven only for ε < 1 — included to show how paper-mode curves are labelled.

``ε = inf`` is the non-private baseline (σ = 0). Metric: ``abs_error`` = |released − true mean|,
against ``n``. Test-only knobs (not in any scale's grid; set with ``privrl run --set``):
``sleep`` (seconds per run) and ``fail_seeds`` (seeds at which the run raises).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.experiments.registry import register
from privrl.experiments.spec import Claim, Experiment, RunContext, RunResult
from privrl.experiments.verdicts import (
    compare_curves,
    first_undecided,
    min_seeds,
    per_seed,
    undecided,
)
from privrl.privacy import GaussianMechanism, Ledger, Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.calibration import calibrate_gaussian

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPERIMENT", "classical_gaussian_sigma", "sound_gaussian_sigma"]

DELTA = 1e-5

_GRID = {
    "smoke": ([1.0, math.inf], [100, 1000]),
    "quick": ([0.5, 1.0, 4.0, math.inf], [100, 1000, 10_000]),
    "paper": ([0.25, 0.5, 1.0, 2.0, 4.0, math.inf], [100, 300, 1000, 3000, 10_000, 30_000]),
}


def settings(scale: str) -> list[dict[str, object]]:
    epsilons, ns = _GRID[scale]
    grid = [{"epsilon": eps, "n": n, "calibration": "sound"} for eps in epsilons for n in ns]
    # one paper-calibration curve (ε = 4 > 1, where the classical formula is not proven)
    grid += [{"epsilon": 4.0, "n": n, "calibration": "paper"} for n in ns]
    return grid


@functools.lru_cache(maxsize=64)
def _sound_multiplier(epsilon: float, delta: float) -> float:
    return calibrate_gaussian(epsilon, delta, sensitivity=1.0)


def sound_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ with ε_PLD(σ/Δ, δ) ≤ ε, by the ledger's own accountant. ε depends on σ/Δ only, so the
    multiplier is calibrated once per (ε, δ) and scaled by Δ."""
    return sensitivity * _sound_multiplier(epsilon, delta)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth (2014), Theorem 3.22: σ = Δ·√(2 ln(1.25/δ))/ε (valid for ε < 1 only)."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def run(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    if ctx.seed in list(params.get("fail_seeds", [])):
        raise RuntimeError(f"example-gaussian: failing on purpose at seed {ctx.seed}")
    if params.get("sleep"):
        time.sleep(float(params["sleep"]))
    n, epsilon = int(params["n"]), float(params["epsilon"])
    calibration = str(params.get("calibration", "sound"))
    data = ctx.shared_rng("data").uniform(0.0, 1.0, size=n)
    sensitivity = 1.0 / n
    budget = PrivacyBudget.non_private() if math.isinf(epsilon) else PrivacyBudget(epsilon=epsilon, delta=DELTA)
    if not budget.is_private:
        sigma = 0.0
    elif calibration == "paper":
        sigma = classical_gaussian_sigma(epsilon, DELTA, sensitivity)
    else:
        sigma = sound_gaussian_sigma(epsilon, DELTA, sensitivity)
    mechanism = GaussianMechanism(sensitivity=sensitivity, noise_std=sigma)
    released, event = mechanism.release(data.mean(), rng=ctx.rng)
    ledger = Ledger([event])
    error = float(abs(released - data.mean()))
    return RunResult(
        rows=[{"n": n, "metric": "abs_error", "value": error}],
        ledger=ledger if budget.is_private else None,
        budget=budget,
        privacy_unit=PrivacyUnit.TRAJECTORY,
        neighboring=Neighboring.REPLACE_ONE,
        calibration=calibration,
        accountant="pld",
    )


def _curve_label(epsilon: float) -> str:
    return "non-private" if math.isinf(float(epsilon)) else f"ε = {float(epsilon):g}"


def plot(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import mean_se_band, new_figure, save_figure

    fig, ax = new_figure(width=7.8)
    errors = df[df["metric"] == "abs_error"]
    for (epsilon, calibration), curve in errors.groupby(["epsilon", "calibration"], sort=True):
        if not (curve["value"] > 0).any():  # the non-private error is exactly 0: nothing on a log axis
            continue
        mean_se_band(ax, curve, "n", label=_curve_label(epsilon), calibration=calibration,
                     logx=True, logy=True, marker="o")
    ax.set_xlabel("n (records)")
    ax.set_ylabel("|released mean − mean|")
    ax.set_title("Gaussian mechanism, mean of n records in [0, 1]")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)   # beside the data
    return save_figure(fig, out_dir, "example-gaussian")


def claims(df: pd.DataFrame) -> list[Claim]:
    """The claims, decided with the shared checks of :mod:`privrl.experiments.verdicts` (a model for
    the paper modules): at least 3 seeds, then a paired t test on log10 of the error, paired by
    (seed, n) (the budgets of a seed share their data), between each pair of neighbouring ε levels."""
    errors = df[(df["metric"] == "abs_error") & (df["calibration"] == "sound")]
    by_eps = errors.groupby("epsilon")["value"].mean().sort_index()
    measured = ", ".join(f"{_curve_label(e)}: {v:.2e}" for e, v in by_eps.items()) or "no runs"
    private = errors[~np.isinf(errors["epsilon"].to_numpy(dtype=float))]
    levels = sorted(private["epsilon"].unique())
    logs = private.assign(value=np.log10(np.maximum(private["value"].to_numpy(dtype=float), 1e-300)),
                          pair=private["seed"].astype(str) + "/" + private["n"].astype(str))
    verdict = first_undecided(min_seeds(private, 3),
                              undecided("one privacy level", measured) if len(levels) < 2 else None)
    if verdict is None:
        pairs = [compare_curves(per_seed(logs[logs["epsilon"] == hi], seed_col="pair"),
                                per_seed(logs[logs["epsilon"] == lo], seed_col="pair"),
                                claim="less", test="paired", names=(f"log10 error at ε = {hi:g}",
                                                                    f"at ε = {lo:g}"))
                 for lo, hi in zip(levels[:-1], levels[1:])]
        verdict = next((p for p in pairs if p.verdict == "fails"), None) or next(
            (p for p in pairs if p.verdict == "undecided"), pairs[0])
    out = [verdict.claim("The error of the private mean decreases as ε grows.", measured)]
    spent = df[(df["calibration"] == "sound") & df["epsilon_spent"].notna()]
    if len(spent):
        within = bool(np.all(spent["epsilon_spent"].to_numpy(dtype=float)
                             <= spent["epsilon"].to_numpy(dtype=float) * (1 + 1e-9)))
        out.append(Claim("Sound calibration spends at most the target ε (PLD accountant).",
                         f"max ε spent / target = {float((spent['epsilon_spent'] / spent['epsilon']).max()):.4f}",
                         within))
    return out


EXPERIMENT = register(Experiment(
    id="example-gaussian",
    paper="privrl example (Dwork & Roth 2014, Thm 3.22)",
    figure="example",
    description="Gaussian-mechanism mean estimation over ε and n; exercises the runner.",
    settings=settings,
    seeds={"smoke": 2, "quick": 5, "paper": 20},
    run=run,
    plot=plot,
    claims=claims,
    deviations=("Not a paper figure: a self-test of the experiment machinery.",
                "The paper-calibration curve uses the classical Gaussian formula at ε = 4, outside "
                "its proven range ε < 1; it is labelled as such."),
    extra_params={"sleep": 0.0, "fail_seeds": [0]},
))
