"""The experiments of Balle, Gomrokchi & Precup (2016): ``balle2016-fig1`` (Figure 1, the chain of
§6) and ``frontier-policy-evaluation`` (RMSE against ε for each calibration).

Data. The chain of N = 40 states, stay probability p = 0.5, γ = 0.99 (:mod:`privrl.envs.chain`).
Every seed draws *nested* batches X_{m_1} ⊂ X_{m_2} ⊂ … from its shared data stream with
:func:`~privrl.envs.chain.sample_chain_statistics_nested` — one pass whose cost does not grow with
m (10⁷ trajectories in well under a second) — so every algorithm, budget and calibration of a seed
sees the same batches. The settings of a seed run as one unit of work (:func:`run_batch`): the
batches are drawn once and the non-private fits are shared by the paper and tight curves; each
run's result is exactly :func:`run`'s.

Releases. Every point is a fit of the family's estimators on its batch's first-visit statistics
(:meth:`DPLSW.fit_statistics <privrl.policy_evaluation.DPLSW.fit_statistics>`, likewise DP-LSL, LSW
and LSL), every DP release drawn in turn from the run's private stream; the run's privacy claim is
the estimators' own (:meth:`~privrl.experiments.spec.RunResult.from_estimators`: every point carries
the same ledger, one (ε, δ)-DP release of its batch). Points at different m share trajectories
(nested batches), so the figure as a whole is not one release.

``balle2016-fig1``: one setting per feature map (``tabular``, d = 40; ``pairs``, d = 20, the 0/1
indicators of adjacent pairs, ‖Φ‖ = √2; ``pairs_unit``, the same pairs scaled to unit-norm features,
Φ/√2, ‖Φ‖ = 1 — the same set of value functions, a convention the paper leaves open and on which
DP-LSL's noise depends), public return bound F_max (100 = R_max/(1−γ), the paper's default, or 1;
``pairs_unit`` only with 1) and calibration (``paper``: the printed Lemma 1 constants; ``tight``:
the certified default). On each batch: LSW and DP-LSW
(w = 1/N); LSL and DP-LSL (ρ = 1/N) for λ = λ_min + c·√m and λ_min + c·m over a grid of c; the
RMSE against the exact values (all N states, and without the absorbing state), the excess empirical
risk J(θ̂) − J(θ) = ηᵀHη of the DP releases, and σ_X as a labelled non-private diagnostic.
Panels: (1) non-private LSW and LSL, tabular and pairs; (2) tabular, RMSE vs c for two batch sizes;
(3) pairs, RMSE vs m for all algorithms, paper and tight calibration; (4) excess risk vs m. The c
of each LSL/DP-LSL curve is the one with the smallest mean RMSE over the batch grid (chosen with
the true values, as a figure would be; not a private choice).

``frontier-policy-evaluation``: DP-LSW on the chain (tabular, F_max = 1, m = 10⁵ at paper scale),
δ = 10⁻⁵, RMSE for ε ∈ {0.1, 1, 10} under each calibration, with the non-private LSW on the same
data as reference (``calibration="none"``); ``privrl frontier DP-LSW`` re-grids ε.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import numpy as np

from privrl.data.features import one_hot, state_aggregation
from privrl.envs.chain import chain_values, sample_chain_statistics_nested
from privrl.errors import PrivacyLeakWarning, UtilityWarning
from privrl.experiments.frontier import Frontier, plot_frontier, register_frontier
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.least_squares.mechanism import lambda_min
from privrl.least_squares.statistics import VisitStatistics
from privrl.policy_evaluation.claims import (
    _CALIBRATIONS,
    _FRONTIER_CALIBRATIONS,
    FIXED_COEF,
    best_coefficients,
    claims,
    frontier_claims,
    select,
    zero_rmse,
)
from privrl.policy_evaluation.estimators import DPLSL, DPLSW, LSL, LSW
from privrl.privacy import PrivacyBudget

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPERIMENT", "FRONTIER", "FRONTIER_SPEC", "settings", "run", "run_batch", "batch_key", "plot", "claims",
           "frontier_settings", "frontier_run", "frontier_plot", "frontier_claims", "chain_rmse_point"]

_COMMON = {"n_states": 40, "stay_probability": 0.5, "gamma": 0.99, "epsilon": 0.1, "delta": 0.1,
           "smoothing": "main_text", "constants": "theory"}
#: a fit of one batch (:func:`_fit`)
_E = TypeVar("_E", LSW | DPLSW, LSL | DPLSL)
_M_GRID = [10, 50, 100, 500, 1000, 5000, 10**4, 5 * 10**4, 10**5, 5 * 10**5, 10**6]
_GRID: dict[str, dict[str, Sequence[float]]] = {
    "smoke": {"batch_sizes": [10, 100], "lam_coefs": [0.1, 10.0], "panel2": [10, 100]},
    "quick": {"batch_sizes": [10, 100, 1000, 10**4, 10**5, 10**6],
              "lam_coefs": [1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4], "panel2": [100, 1000]},
    "paper": {"batch_sizes": _M_GRID, "lam_coefs": [1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4, 1e5],
              "panel2": [100, 1000]},
}
#: F_max = 1 curves reach 10⁷ at paper scale: with the printed constants DP-LSW meets LSW only
#: around m ≈ 10⁶–10⁷ (spec §4.6)
_PAPER_EXTRA_M = [3 * 10**6, 10**7]


def _batch_sizes(scale: str, f_max: float) -> list[int]:
    ms = [int(m) for m in _GRID[scale]["batch_sizes"]]
    return ms + _PAPER_EXTRA_M if scale == "paper" and f_max == 1.0 else ms


def _scale_deviations(scale: str) -> list[str]:
    grid = _GRID[scale]
    lo, hi, top = min(grid["batch_sizes"]), max(grid["batch_sizes"]), max(_batch_sizes(scale, 1.0))
    text = (f"At {scale} scale the batch grid runs from {lo:g} to {hi:.0e} trajectories"
            + (f" ({top:.0e} for F_max = 1)" if top > hi else "") + f" with λ coefficients "
            f"{min(grid['lam_coefs']):g}…{max(grid['lam_coefs']):g}")
    if scale != "paper":
        text += "; the paper-scale grid reaches 1e+07 (F_max = 1), where DP-LSW in paper calibration meets LSW"
    return [text + "."]


def settings(scale: str) -> list[dict[str, object]]:
    grid = _GRID[scale]
    combos = [(calibration, features, f_max) for calibration in _CALIBRATIONS for features in ("tabular", "pairs")
              for f_max in (1.0, 100.0)]
    combos += [(calibration, "pairs_unit", 1.0) for calibration in _CALIBRATIONS]
    return [{**_COMMON, "features": features, "F_max": f_max, "calibration": calibration,
             "batch_sizes": _batch_sizes(scale, f_max), "lam_coefs": list(grid["lam_coefs"]),
             "panel2": list(grid["panel2"])} for calibration, features, f_max in combos]


def _features(name: str, n_states: int) -> np.ndarray:
    if name == "tabular":
        return one_hot(n_states)
    phi = state_aggregation(n_states, 2)
    return phi / np.sqrt(2.0) if name == "pairs_unit" else phi


def _rmse(values: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    err = (values - truth) ** 2
    return float(math.sqrt(err.mean())), float(math.sqrt(err[:-1].mean()))


@dataclass
class _Shared:
    """What the runs of one seed share (:func:`run_batch`): the longest grid of nested batches drawn
    so far, and the non-private θ of each (batch, algorithm, λ)."""

    batches: dict[tuple[object, ...], tuple[tuple[int, ...], list[VisitStatistics]]] = field(default_factory=dict)
    thetas: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict)


def _batches(params: Mapping[str, Any], ctx: RunContext, sizes: list[int], shared: _Shared) -> list[VisitStatistics]:
    """The seed's nested batches of ``sizes``, from its shared data stream. ``shared`` (one per
    :func:`run_batch` call: the settings of one seed) keeps the longest grid drawn so far: the
    batches of a grid that is a prefix of it are the same draws (one pass draws the increments in
    order), so they are read, not drawn again."""
    key = ("batches", ctx.seed, float(params["gamma"]), int(params["n_states"]), float(params["stay_probability"]))
    have = shared.batches.get(key)
    if have is not None and have[0][:len(sizes)] == tuple(sizes):
        return have[1][:len(sizes)]
    nested = sample_chain_statistics_nested(sizes, float(params["gamma"]), n_states=int(params["n_states"]),
                                            stay_probability=float(params["stay_probability"]),
                                            rng=ctx.shared_rng("data"))
    out = [VisitStatistics(counts=c, mean_returns=f, n_trajectories=m) for m, (c, f) in zip(sizes, nested)]
    if have is None or len(sizes) > len(have[0]):
        shared.batches[key] = (tuple(sizes), out)
    return out


def _estimators(params: Mapping[str, Any],
                phi: np.ndarray) -> tuple[Callable[[], LSW | DPLSW], Callable[[float], LSL | DPLSL]]:
    """(DP-LSW, DP-LSL(λ)) factories of the setting: its budget, calibration and public bounds;
    weights and relevance are the estimators' default, uniform 1/N."""
    budget = PrivacyBudget(epsilon=float(params["epsilon"]), delta=float(params["delta"]))
    common: dict[str, Any] = {"gamma": float(params["gamma"]), "features": phi, "F_max": float(params["F_max"])}
    private: dict[str, Any] = {"budget": budget, "calibration": str(params["calibration"]),
                               "smoothing": str(params.get("smoothing", "main_text")),
                               "constants": str(params.get("constants", "theory"))}
    if not budget.is_private:
        return (lambda: LSW(**common)), (lambda lam: LSL(lam=lam, **common))
    return (lambda: DPLSW(**private, **common)), (lambda lam: DPLSL(lam=lam, **private, **common))


def _fit(est: _E, stats: VisitStatistics, noise_rng: np.random.Generator) -> _E:
    """``est`` fitted on one batch's statistics, its noise drawn in turn from ``noise_rng``; the
    utility and δ ≥ 1/m warnings are the figure's subject, recorded in its rows, not printed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        warnings.simplefilter("ignore", PrivacyLeakWarning)   # paper calibration: labelled in the results
        return est.fit_statistics(stats, rng=noise_rng)


def run(params: Mapping[str, object], ctx: RunContext) -> RunResult:
    return _run(params, ctx, _Shared())


def batch_key(params: Mapping[str, object], seed: int) -> tuple:
    """The settings of one seed run together (:func:`run_batch`): they share its batches."""
    return ("seed", seed)


def run_batch(params_list: Sequence[Mapping[str, object]], ctxs: Sequence[RunContext]) -> list[RunResult]:
    """The runs of one seed (:func:`batch_key`), each exactly :func:`run`'s result: the nested
    batches are drawn once, and the non-private LSW / LSL fits, which do not depend on the
    calibration, are fitted once for the paper and the tight curve of a feature map."""
    shared = _Shared()
    return [_run(params, ctx, shared) for params, ctx in zip(params_list, ctxs)]


def _run(params: Mapping[str, Any], ctx: RunContext, shared: _Shared) -> RunResult:
    n = int(params["n_states"])
    f_max = float(params["F_max"])
    phi = _features(str(params["features"]), n)
    d = phi.shape[1]
    uniform = np.full(n, 1.0 / n)
    truth = chain_values(n, float(params["stay_probability"]), float(params["gamma"]))
    dp_lsw, dp_lsl = _estimators(params, phi)
    gamma = float(params["gamma"])
    lam_low = lambda_min(phi, uniform)
    gram_w = phi.T @ (uniform[:, None] * phi)
    sizes = [int(m) for m in params["batch_sizes"]]
    rows: list[dict[str, object]] = []
    private: list[LSW | DPLSW | LSL | DPLSL] = []

    def record(m: int, algorithm: str, theta: np.ndarray, **labels: float | str) -> None:
        rmse, rmse_inner = _rmse(phi @ theta, truth)
        base = {"step": m, "m": m, "algorithm": algorithm, "schedule": labels.get("schedule", "none"),
                "lam_coef": labels.get("lam_coef", 0.0), "lam": labels.get("lam", 0.0), "d": d}
        rows.append({**base, "metric": "rmse", "value": rmse})
        rows.append({**base, "metric": "rmse_excl_absorbing", "value": rmse_inner})
        if "excess" in labels:
            rows.append({**base, "metric": "excess_risk", "value": labels["excess"]})
            rows.append({**base, "metric": "sigma_diagnostic", "value": labels["sigma"]})

    def non_private(i: int, stats: VisitStatistics, lam: float | None = None, *labels: float | str) -> np.ndarray:
        """θ of the non-private LSW (``lam`` None) or LSL(λ) on batch ``i``, shared by the
        calibrations of a seed (``labels``: what fixes λ). The batch is fixed by the seed, the
        chain and the grid up to it (nested draws)."""
        key = ("theta", ctx.seed, n, float(params["stay_probability"]), float(params["gamma"]),
               tuple(sizes[:i + 1]), str(params["features"]), f_max, *labels)
        if key not in shared.thetas:
            est = (LSW(gamma=gamma, features=phi, F_max=f_max) if lam is None
                   else LSL(lam=lam, gamma=gamma, features=phi, F_max=f_max))
            shared.thetas[key] = est.fit_statistics(stats).theta_
        return shared.thetas[key]

    # one fit per (batch, algorithm, λ), every release drawn in turn from the run's private stream
    for i, (m, stats) in enumerate(zip(sizes, _batches(params, ctx, sizes, shared))):
        counts = stats.counts
        theta = non_private(i, stats)
        dp = _fit(dp_lsw(), stats, ctx.rng)
        private.append(dp)
        eta = dp.theta_ - theta
        record(m, "LSW", theta)
        # σ_X is data-dependent: a labelled non-private diagnostic, from the fit's public release step
        record(m, "DP-LSW", dp.theta_, excess=float(eta @ gram_w @ eta), sigma=dp.mechanism_.noise_scale(counts, m))
        gram_x = phi.T @ ((uniform * counts / m)[:, None] * phi)
        for schedule in ("sqrt", "linear"):
            growth = math.sqrt(m) if schedule == "sqrt" else float(m)
            for c in params["lam_coefs"]:
                lam = lam_low + float(c) * growth
                theta_l = non_private(i, stats, lam, schedule, float(c))
                dp_l = _fit(dp_lsl(lam), stats, ctx.rng)
                private.append(dp_l)
                eta_l = dp_l.theta_ - theta_l
                excess = float(eta_l @ (gram_x + lam / (2 * m) * np.eye(d)) @ eta_l)
                labels = {"schedule": schedule, "lam_coef": float(c), "lam": lam}
                record(m, "LSL", theta_l, **labels)
                record(m, "DP-LSL", dp_l.theta_, excess=excess, sigma=dp_l.mechanism_.noise_scale(counts, m), **labels)
    smoothed = private[0].mechanism_.smoothed
    # every point is one release of its own batch with the same claim (same budget, d, calibration)
    return RunResult.from_estimators(
        private, rows, accountant="pld",
        extra={"F_max": f_max, "smoothing": str(params.get("smoothing", "main_text")), "alpha": smoothed.alpha,
               "beta": smoothed.beta,
               "note": "each DP point is one (epsilon, delta)-DP release of its batch (the ledger holds the "
                       "event of one); batches are nested across m; the lambda grid and best-c selection "
                       "are not private"})


# =========================================================================== the figure
def _np(sub: pd.DataFrame) -> pd.DataFrame:
    """Rows without the calibration column (non-private curves are not 'paper calibration')."""
    return sub.drop(columns=["calibration"]) if "calibration" in sub.columns else sub


def plot(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from matplotlib import colormaps

    from privrl.experiments.plots import mean_se_band, new_figure, save_figure

    best = best_coefficients(df)
    fig, axes = new_figure(ncols=4, width=4.3, height=5.2, layout="constrained")
    ax1, ax2, ax3, ax4 = np.ravel(axes)
    f_np = 1.0 if (df["F_max"] == 1.0).any() else float(df["F_max"].iloc[0])
    cals = [c for c in _CALIBRATIONS if (df["calibration"] == c).any()]
    base = cals[0] if cals else "paper"
    for feats in ("tabular", "pairs"):
        for alg in ("LSW", "LSL"):
            sub = select(df, feats, f_np, alg, best=best, calibration=base, coef=FIXED_COEF)
            if len(sub):
                mean_se_band(ax1, _np(sub), "m", label=f"{alg}, {feats}", logx=True, logy=True, marker="o")
    ax1.set(title=f"(1) non-private (LSL: λ = λmin + {FIXED_COEF:g}·√m)", xlabel="batch size m", ylabel="RMSE")
    colours = [colormaps["tab10"](i) for i in range(10)]
    for i, m in enumerate(_panel2_sizes(df)):
        for j, alg in enumerate(("LSL", "DP-LSL")):
            sub = df[(df["metric"] == "rmse") & (df["features"] == "tabular") & (df["F_max"] == f_np)
                     & (df["algorithm"] == alg) & (df["schedule"] == "sqrt") & (df["m"] == m)
                     & (df["calibration"] == base)]
            if len(sub):
                mean_se_band(ax2, sub if alg.startswith("DP") else _np(sub), "lam_coef", label=f"{alg}, m={m}",
                             logx=True, logy=True, marker="o", color=colours[2 * i + j])
        for j, alg in enumerate(("LSW", "DP-LSW")):
            sub = select(df, "tabular", f_np, alg, calibration=base)
            sub = sub[sub["m"] == m]
            if len(sub):
                ax2.axhline(float(sub["value"].mean()), linestyle=(0, (1, 1)) if j == 0 else (0, (4, 2)),
                            linewidth=1.2, color=colours[4 + 2 * i + j], label=f"{alg}, m={m}")
    ax2.set(title="(2) tabular, λ = λmin + c√m", xlabel="c", ylabel="RMSE")
    for cal in cals:
        for f_max in sorted(df["F_max"].unique()):
            for alg in ("LSW", "DP-LSW", "LSL", "DP-LSL"):
                private = alg.startswith("DP")
                if (not private and (f_max != f_np or cal != base)) or (cal != base and f_max != f_np):
                    continue
                sub = select(df, "pairs", f_max, alg, best=best, calibration=cal)
                if len(sub):
                    label = (alg + (f", F_max={f_max:g}" if private else "")
                             + (", tight" if private and cal == "tight" else ""))
                    mean_se_band(ax3, sub if private else _np(sub), "m", label=label, logx=True, logy=True,
                                 marker="o", linestyle=":" if f_max != 1.0 else None)
    ax3.set(title="(3) pair aggregation", xlabel="batch size m", ylabel="RMSE")
    for feats in ("tabular", "pairs", "pairs_unit"):
        for alg in ("DP-LSW", "DP-LSL"):
            if feats == "pairs_unit" and alg == "DP-LSW":
                continue    # DP-LSW's excess risk does not depend on the scale of Φ: the pairs curve
            sub = select(df, feats, f_np, alg, metric="excess_risk", best=best, coef=FIXED_COEF, calibration=base)
            if len(sub) and (sub["value"] > 0).any():
                name = "pairs, ‖Φ‖ = 1" if feats == "pairs_unit" else feats
                mean_se_band(ax4, sub, "m", label=f"{alg}, {name}", logx=True, logy=True, marker="o",
                             linestyle="--" if feats == "pairs_unit" else None)
    ax4.set(title=f"(4) excess risk (F_max={f_np:g}; DP-LSL c={FIXED_COEF:g})", xlabel="batch size m",
            ylabel="excess empirical risk")
    zero = zero_rmse()
    for ax in (ax1, ax2, ax3):   # the trivial answer the verdicts compare with
        ax.axhline(zero, color="grey", linestyle="-.", linewidth=1, label=f"zero predictor V̂ ≡ 0 ({zero:.3g})")
    for ax in (ax1, ax2, ax3, ax4):   # below the panel: the legend never covers the curves
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    eps, delta = float(df["epsilon"].iloc[0]), float(df["delta"].iloc[0])
    fig.suptitle(f"Balle et al. (2016) Fig. 1: chain N=40, p=0.5, γ=0.99, ε={eps:g}, δ={delta:g}; "
                 f"panels 1, 2, 4 in {base} calibration", fontsize=9)
    return save_figure(fig, out_dir, "balle2016-fig1")


def _panel2_sizes(df: pd.DataFrame) -> list[int]:
    if "panel2" not in df.columns or not len(df):
        return []
    value = df["panel2"].iloc[0]
    if isinstance(value, str):
        value = json.loads(value)
    return sorted({int(v) for v in value})


PAPER = "Balle, Gomrokchi & Precup (2016), Differentially Private Policy Evaluation, ICML"
#: seeds per scale of the figure and of the frontier (20 at paper scale, as the figure)
SEEDS = {"smoke": 2, "quick": 3, "paper": 20}

EXPERIMENT = register(Experiment(
    id="balle2016-fig1",
    paper=PAPER,
    figure="Figure 1",
    description="DP-LSW / DP-LSL on the 40-state chain: RMSE and excess risk vs batch size and λ, "
                "paper and tight calibration.",
    settings=settings,
    seeds=SEEDS,
    run=run,
    run_batch=run_batch,
    batch_key=batch_key,
    plot=plot,
    claims=claims,
    scale_deviations=lambda scale: _scale_deviations(scale),
    deviations=(
        "Chain conventions §6 of the paper leaves unstated (docs/policy_evaluation.md, The §6 chain): reward 1 on "
        "entering the absorbing "
        "state 39, start uniform over all 40 states, the absorbing state recorded as visited with "
        "return 0, no truncation.",
        "Both F_max = R_max/(1−γ) = 100 (paper default) and the tighter public F_max = 1 are run.",
        "Batches are nested prefixes of one batch per seed (one pass serves every batch size; the paper "
        "draws the same batches for every algorithm, as here).",
        "Every DP curve is run twice: with the printed Lemma 1 constants (paper calibration, labelled) "
        "and with the certified tight calibration (privrl's default); the claims are judged in paper "
        "calibration.",
        "DP-LSL uses λ = λ_min + c√m (and λ_min + c·m for comparison); the c of each curve is the "
        "one with the smallest mean RMSE (selected with the true values; not private).",
        "DP-LSL's count function uses min{·, m} (§4.2 and Lemmas 9/21 print max; eq. (12) and App. E need min); "
        "norms are spectral.",
        "Excess risk is J(θ̂) − J(θ) on the batch, computed exactly as ηᵀHη with H = ΦᵀΓΦ (DP-LSW) or "
        "ΦᵀΓ_XΦ + λ/(2m)·I (DP-LSL); σ_X is recorded only as a labelled non-private diagnostic.",
        "Panel 4 and the aggregation claims compare DP-LSL at the common λ = λ_min + 1·√m.",
        "The pair features are run as the paper's text suggests them (0/1 indicators of adjacent pairs, "
        "‖Φ‖ = √2) and scaled to unit-norm features (Φ/√2, ‖Φ‖ = 1), which span the same value functions. "
        "DP-LSW's excess risk does not depend on the scale; DP-LSL's noise does (λ_min = ‖Φ‖²‖ρ‖∞ and its "
        "sensitivity bound scale with ‖Φ‖). The paper does not say which it used, so the aggregation claims "
        "are decided under both and undecided when the two disagree.",
        "The printed Lemma 1 constants (paper calibration) are sound but loose: α = 5√(2 ln(2/δ))/ε ≈ 122 at "
        "ε = δ = 0.1 makes each release (0, 0.1)-DP by the exact accountant — the privacy table's "
        "\"ε = 0 at δ = 0.1\" — where the tight calibration spends exactly ε = 0.1.",
        "Every verdict compares only curves that are better than the zero predictor V̂ ≡ 0 (RMSE 0.70); "
        "a comparison with a curve no better than it is undecided.",
    ),
))


# =========================================================================== frontier
_FRONTIER_M = {"smoke": 1000, "quick": 10**4, "paper": 10**5}
FRONTIER_EPSILONS = (0.1, 1.0, 10.0)


def frontier_settings(scale: str) -> list[dict[str, object]]:
    """One setting per (calibration, ε) and the non-private reference (``calibration="none"``)."""
    common = {"n_states": 40, "stay_probability": 0.5, "gamma": 0.99, "features": "tabular", "F_max": 1.0,
              "m": _FRONTIER_M[scale], "delta": 1e-5, "constants": "theory", "smoothing": "main_text"}
    grid = [{**common, "algorithm": "DP-LSW", "calibration": cal, "epsilon": eps}
            for cal in _FRONTIER_CALIBRATIONS for eps in FRONTIER_EPSILONS]
    grid.append({**common, "algorithm": "LSW", "calibration": "none", "epsilon": math.inf})
    return grid


class ChainPoint(TypedDict):
    """One frontier point (:func:`chain_rmse_point`): the RMSEs, the fitted estimator and its public
    release constants."""

    rmse: float
    rmse_lsw: float
    estimator: LSW | DPLSW
    alpha: float
    beta: float
    noise_bound: float
    private: bool


def chain_rmse_point(params: Mapping[str, Any], data_rng: np.random.Generator,
                     noise_rng: np.random.Generator) -> ChainPoint:
    """One DP-LSW fit (on the batch's first-visit statistics) and the non-private LSW on one chain
    batch: RMSEs over the N states, and the fitted estimator (its ledger and public release
    constants α, β, the data-independent noise bound). ``epsilon = inf`` gives the non-private LSW
    only (``"estimator"`` is then the LSW)."""
    n, m = int(params["n_states"]), int(params["m"])
    phi = _features(str(params["features"]), n)
    truth = chain_values(n, float(params["stay_probability"]), float(params["gamma"]))
    (counts, mean), = sample_chain_statistics_nested([m], float(params["gamma"]), n_states=n,
                                                     stay_probability=float(params["stay_probability"]),
                                                     rng=data_rng)
    stats = VisitStatistics(counts=counts, mean_returns=mean, n_trajectories=m)
    make_lsw, _ = _estimators(params, phi)
    est = _fit(make_lsw(), stats, noise_rng)
    theta = LSW(gamma=float(params["gamma"]), features=phi, F_max=float(params["F_max"])).fit_statistics(stats).theta_
    return {"rmse": _rmse(phi @ est.theta_, truth)[0], "rmse_lsw": _rmse(phi @ theta, truth)[0], "estimator": est,
            "alpha": est.mechanism_.smoothed.alpha, "beta": est.mechanism_.smoothed.beta,
            "noise_bound": est.mechanism_.noise_bound(m), "private": est.is_private}


def frontier_run(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    point = chain_rmse_point(params, ctx.shared_rng("data"), ctx.rng)
    labels = {"step": float(params["epsilon"]), "epsilon": float(params["epsilon"]), "m": int(params["m"]),
              "algorithm": str(params["algorithm"]), "constants": str(params["constants"])}
    if not point["private"]:
        return RunResult.from_estimator(point["estimator"], [{**labels, "metric": "rmse", "value": point["rmse_lsw"]}])
    rows = [{**labels, "metric": "rmse", "value": point["rmse"]},
            {**labels, "metric": "noise_multiplier", "value": point["alpha"]},
            {**labels, "metric": "rmse_lsw_same_data", "value": point["rmse_lsw"]}]
    return RunResult.from_estimator(point["estimator"], rows, accountant="pld",
                                    extra={"alpha": point["alpha"], "beta": point["beta"]})


def frontier_plot(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    m = int(df["m"].iloc[0]) if "m" in df.columns and len(df) else 0
    return plot_frontier(df, out_dir, FRONTIER_SPEC,
                         title=f"DP-LSW frontier: chain N=40, tabular, F_max=1, m={m:g}, δ=1e-5", logy=True,
                         references=[(zero_rmse(), f"zero predictor V̂ ≡ 0 ({zero_rmse():.3g})")])


FRONTIER = register(Experiment(
    id="frontier-policy-evaluation",
    paper=PAPER,
    figure="Privacy–utility frontier",
    description="DP-LSW RMSE against ε (δ = 1e-5) under paper / sound / tight calibration, with the non-private "
                "LSW on the same data; chain N = 40, tabular, F_max = 1.",
    settings=frontier_settings,
    seeds=SEEDS,
    run=frontier_run,
    plot=frontier_plot,
    claims=frontier_claims,
    scale_deviations=lambda scale: [] if scale == "paper" else [
        f"At {scale} scale each batch has m = {_FRONTIER_M[scale]:g} trajectories (10⁵ at paper scale)."],
    deviations=(
        "Not a figure of the paper: privrl's privacy–utility frontier, on the paper's chain (tabular features, "
        "w = 1/N, F_max = 1), m = 10⁵ at paper scale.",
        "'sound' equals 'paper' in σ wherever the printed Lemma 1 constants are certified (every ε here): "
        "both record the certified ε they truly spend, far below the target.",
    ),
))

FRONTIER_SPEC = register_frontier(Frontier(
    "DP-LSW", FRONTIER.id, "rmse", lower_is_better=True,
    description="DP-LSW on the chain N = 40 (tabular, F_max = 1, m = 1e5), theory constants"))
