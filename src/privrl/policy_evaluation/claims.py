"""The claims of Balle, Gomrokchi & Precup (2016) (``balle2016-fig1``) and of the DP-LSW frontier
(``frontier-policy-evaluation``), as declarations (:mod:`privrl.experiments.claimsets`), and the
analysis of the runs they read (best λ coefficient per curve, curve selection), which the figure
shares.

The figure's claims are judged on the paper-calibration runs (the tight runs are quoted alongside).
A claim is undecided with fewer than three seeds, when a compared curve is no better than the zero
predictor (RMSE within 10 % of V̂ ≡ 0's, or worse: the one rule of
:mod:`privrl.experiments.verdicts`), when a claim about λ rests on a best c at the edge of the
grid, (convergence) when the gap still shrinks at the largest batch of a scale below paper scale,
and (aggregation) when the two scalings of the pair features disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from privrl.envs.chain import chain_values
from privrl.experiments.claimsets import Case, ClaimSpec, Outcome, evaluate, paper_source
from privrl.experiments.spec import Claim
from privrl.experiments.verdicts import (
    REASON_BOUNDARY,
    Verdict,
    compare_curves,
    decide,
    min_seeds,
    needs_paper_scale,
    scale_of,
    trivial_guard,
)

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["claims", "frontier_claims", "best_coefficients", "CLAIMS", "FRONTIER_CLAIMS"]

_CALIBRATIONS = ("paper", "tight")
#: DP-LSL curves of panel 4 and of the aggregation claim use λ = λ_min + 1·√m (a common schedule)
FIXED_COEF = 1.0
#: the pair features as the paper's text suggests them (0/1 indicators, ‖Φ‖ = √2) and scaled to unit
#: norm (the same span of value functions; the paper does not say which it used)
PAIR_FEATURES = {"pairs": "pairs (0/1 indicators, ‖Φ‖ = √2)", "pairs_unit": "pairs scaled to ‖Φ‖ = 1"}
_FRONTIER_CALIBRATIONS = ("paper", "sound", "tight")
_ZERO = "the zero predictor"


def _curves(df: pd.DataFrame, metric: str = "rmse") -> pd.DataFrame:
    """Mean over seeds per (calibration, features, F_max, algorithm, schedule, lam_coef, m)."""
    sub = df[df["metric"] == metric]
    keys = ["calibration", "features", "F_max", "algorithm", "schedule", "lam_coef", "m"]
    return sub.groupby(keys, sort=True)["value"].mean().reset_index()


def best_coefficients(df: pd.DataFrame) -> dict[tuple, float]:
    """c with the smallest mean RMSE over the batch grid, per (calibration, features, F_max,
    algorithm, schedule)."""
    cur = _curves(df)
    cur = cur[cur["algorithm"].isin(["LSL", "DP-LSL"])]
    avg = cur.groupby(["calibration", "features", "F_max", "algorithm", "schedule", "lam_coef"])["value"].mean()
    return {key: float(grp.idxmin()[-1]) for key, grp in avg.groupby(level=[0, 1, 2, 3, 4])}


def select(df: pd.DataFrame, features: str, f_max: float, algorithm: str, metric: str = "rmse",
            schedule: str = "sqrt", best: dict | None = None, coef: float | None = None,
            calibration: str = "paper") -> pd.DataFrame:
    sub = df[(df["metric"] == metric) & (df["features"] == features) & (df["F_max"] == f_max)
             & (df["algorithm"] == algorithm) & (df["calibration"] == calibration)]
    if algorithm in ("LSL", "DP-LSL"):
        if coef is None or not (sub["lam_coef"] == coef).any():
            best = best if best is not None else best_coefficients(df)
            coef = best.get((calibration, features, f_max, algorithm, schedule))
        sub = sub[(sub["schedule"] == schedule) & (sub["lam_coef"] == coef)]
    return sub


def mean_by_m(sub: pd.DataFrame) -> pd.Series:
    return sub.groupby("m")["value"].mean().sort_index()


def _se_by_m(sub: pd.DataFrame) -> pd.Series:
    per_seed = sub.groupby(["m", "seed"])["value"].mean()
    return per_seed.groupby(level=0).agg(lambda v: float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1
                                         else math.inf).sort_index()


def zero_rmse() -> float:
    """RMSE of the trivial predictor V̂ ≡ 0 on the chain (the reference for near-trivial curves)."""
    return float(np.sqrt(np.mean(chain_values() ** 2)))


def _lam_grid(df: pd.DataFrame) -> list[float]:
    return sorted(float(c) for c in df.loc[df["algorithm"] == "DP-LSL", "lam_coef"].unique())



# =========================================================================== the figure's claims
@dataclass(frozen=True)
class _Runs:
    """What every claim of the figure reads from the results frame."""

    df: pd.DataFrame
    best: dict[tuple, float]
    f_np: float
    few: list[str]
    scale: str | None
    zero: float
    grid: list[float]

    def trivial(self, series: pd.Series) -> bool:
        return bool(len(series)) and bool((series >= 0.9 * self.zero).all())

    def useless(self, name: str) -> str:
        return f"{name} no better than {_ZERO} ({self.zero:.3g})"

    def edge(self, key: tuple) -> bool:
        c = self.best.get(key)
        return c is not None and bool(self.grid) and c in (self.grid[0], self.grid[-1])

    def curve(self, feats: str, algorithm: str, *, schedule: str = "sqrt", coef: float | None = None,
              calibration: str = "paper") -> pd.Series:
        """Mean RMSE by m of one curve (best c unless ``coef`` is given)."""
        return mean_by_m(select(self.df, feats, self.f_np, algorithm, schedule=schedule, best=self.best, coef=coef,
                                calibration=calibration))


def _runs(df: pd.DataFrame) -> _Runs:
    guard = min_seeds(int(df["seed"].nunique()) if "seed" in df.columns else 1, 3)
    f_np = 1.0 if (df["F_max"] == 1.0).any() else float(df["F_max"].iloc[0])
    return _Runs(df=df, best=best_coefficients(df), f_np=f_np,
                 few=[guard.reason] if guard is not None else [], scale=scale_of(df), zero=zero_rmse(),
                 grid=_lam_grid(df))


def _boundary(what: str) -> str:
    return REASON_BOUNDARY.format(name=what)


def _judged(parts: list[str], verdict: bool | None, why: list[str]) -> Verdict:
    """Undecided with the reasons in ``why`` (or when nothing was measured), else decided by
    ``verdict``; the measured text joins ``parts``."""
    measured = "; ".join(parts) or "no data"
    reasons = list(dict.fromkeys(why))
    return decide(None if reasons else verdict, measured, reason="; ".join(reasons) or "no data")


def lsw_faster(runs: _Runs) -> Verdict:
    """Non-private LSW beats LSL at the largest batch (LSL at the paper's schedule λ = λ_min + √m:
    the best c of a non-private ridge is always the smallest one, on the grid's edge)."""
    parts, verdicts, why = [], [], list(runs.few)
    for feats in ("tabular", "pairs"):
        lsw = runs.curve(feats, "LSW")
        lsl = runs.curve(feats, "LSL", coef=FIXED_COEF)
        if len(lsw) and len(lsl):
            better = lsw <= lsl
            first = next((int(m) for m in better.index if better.loc[m:].all()), None)
            verdicts.append(bool(better.iloc[-1]))
            why += [runs.useless(f"{alg} ({feats}) at the largest m") for alg, c in (("LSW", lsw), ("LSL", lsl))
                    if runs.trivial(c.iloc[-1:])]
            parts.append(f"{feats}: LSW {lsw.iloc[-1]:.3g} vs LSL(λ = λ_min + √m) {lsl.iloc[-1]:.3g} at "
                         f"m = {int(lsw.index[-1]):.0e}; LSW ≤ LSL at every m from m = {first}")
    return _judged(parts, all(verdicts) if verdicts else None, why)


def _meeting(runs: _Runs, cal: str, feats: str, dp: str, npv: str) -> tuple[str, str, object, int | None] | None:
    """``(state, text, gap, first m within 0.01)`` of one DP curve against its non-private one
    (DP-LSL against LSL at the same λ), or None without data."""
    a = runs.curve(feats, dp, calibration=cal)
    coef = runs.best.get((cal, feats, runs.f_np, "DP-LSL", "sqrt")) if npv == "LSL" else None
    b = runs.curve(feats, npv, calibration=cal, coef=coef)
    if not (len(a) and len(b)):
        return None
    gap = (a - b.reindex(a.index)).dropna()
    # meeting counts only where the DP curve does better than predicting zero
    meet = next((int(m) for m in gap.index if gap.loc[m] <= 0.01 and a.loc[m] < 0.9 * runs.zero), None)
    shrinking = len(gap) >= 2 and gap.iloc[-1] < 0.9 * gap.iloc[-2]
    state = "meets" if meet is not None else ("still shrinking" if shrinking else (
        "near-trivial" if runs.trivial(a.iloc[-1:]) else "stalls"))
    text = f"{dp} {feats} ({cal}): gap to {npv} at m={int(gap.index[-1])} {gap.iloc[-1]:.3g}; " \
           f"within 0.01 RMSE from m = {meet} ({state})"
    return state, text, gap, meet


def _pending(runs: _Runs, state: str, dp: str, feats: str) -> list[str]:
    """Why a paper-calibration DP curve in ``state`` leaves the convergence claim undecided."""
    why = []
    if state == "still shrinking":
        paper_scale = needs_paper_scale(runs.scale)
        why.append(paper_scale.reason if paper_scale is not None
                   else f"{dp} {feats}: gap still shrinking at the largest batch")
    if state == "near-trivial":
        why.append(runs.useless(f"{dp} ({feats}) at the largest batch"))
    if dp == "DP-LSL" and runs.edge(("paper", feats, runs.f_np, "DP-LSL", "sqrt")):
        why.append(_boundary(f"DP-LSL c ({feats})"))
    return why


def dp_converge(runs: _Runs) -> Outcome:
    """The DP curves reach the non-private ones as m grows (judged in paper calibration); a gap
    still shrinking at the largest batch is undecided, not failed."""
    parts, status, why = [], [], list(runs.few)
    firsts: dict[str, list[str]] = {cal: [] for cal in _CALIBRATIONS}
    for cal in _CALIBRATIONS:
        for feats in ("tabular", "pairs"):
            for dp, npv in (("DP-LSW", "LSW"), ("DP-LSL", "LSL")):
                found = _meeting(runs, cal, feats, dp, npv)
                if found is None:
                    continue
                state, text, _, meet = found
                firsts[cal].append(f"{dp} {feats}: m = {meet:.0e}" if meet else f"{dp} {feats}: {state}")
                if cal == "paper":
                    status.append(state)
                    why += _pending(runs, state, dp, feats)
                parts.append(text)
    if "stalls" in status and not runs.few:
        why = []  # a gap that stopped shrinking above 0.01 decides the claim
    verdict = None if not status else (False if "stalls" in status else all(s == "meets" for s in status))
    return Outcome(_judged(parts, verdict, why), values={
        "paper_calibration_value": "within 0.01 from " + ", ".join(firsts["paper"]),
        "tight_value": "within 0.01 from " + ", ".join(firsts["tight"])})


def lsl_small_lsw_large(runs: _Runs) -> Verdict:
    """DP-LSL better at the smallest batch, DP-LSW at the largest."""
    parts, verdicts, why = [], [], list(runs.few)
    for feats in ("tabular", "pairs"):
        w = runs.curve(feats, "DP-LSW")
        lsl = runs.curve(feats, "DP-LSL")
        if len(w) < 2 or len(lsl) < 2:
            continue
        small = bool(lsl.iloc[0] < w.iloc[0])
        large = bool(w.iloc[-1] < lsl.iloc[-1])
        for end, label in ((slice(None, 1), "smallest"), (slice(-1, None), "largest")):
            why += [runs.useless(f"{alg} ({feats}) at the {label} m") for alg, c in (("DP-LSW", w), ("DP-LSL", lsl))
                    if runs.trivial(c.iloc[end])]
        if runs.edge(("paper", feats, runs.f_np, "DP-LSL", "sqrt")):
            why.append(_boundary(f"DP-LSL c ({feats})"))
        cross = next((int(m) for m in w.index if w.loc[m] < lsl.loc[m]), None)
        verdicts.append(small and large)
        parts.append(f"{feats} F_max={runs.f_np:g}: DP-LSL better at m={int(w.index[0])}: {small}; "
                     f"DP-LSW better at m={int(w.index[-1])}: {large}; first m with DP-LSW better: {cross}")
    return _judged(parts, all(verdicts) if verdicts else None, why)


def sqrt_schedule(runs: _Runs) -> Verdict:
    """λ ∝ √m is the best schedule for DP-LSL (mean RMSE over the batch grid, best c each)."""
    parts, verdicts, why = [], [], list(runs.few)
    for feats in ("tabular", "pairs"):
        s = runs.curve(feats, "DP-LSL", schedule="sqrt")
        lin = runs.curve(feats, "DP-LSL", schedule="linear")
        if not (len(s) and len(lin)):
            continue
        for sched in ("sqrt", "linear"):
            if runs.edge(("paper", feats, runs.f_np, "DP-LSL", sched)):
                why.append(_boundary(f"c of λ ∝ {'√m' if sched == 'sqrt' else 'm'} ({feats})"))
        sqrt_wins = bool(s.mean() <= lin.mean())
        # the trivial rule on the winner: a schedule no better than the zero predictor can lose, not win
        winner = ("√m", s) if sqrt_wins else ("m", lin)
        why += [runs.useless(f"DP-LSL with λ ∝ {winner[0]} ({feats}) at every m")] if runs.trivial(winner[1]) else []
        verdicts.append(sqrt_wins)
        parts.append(f"{feats}: mean RMSE √m {s.mean():.3g} vs m {lin.mean():.3g} (best c each; {_ZERO} "
                     f"{runs.zero:.3g}); √m better at {int((s <= lin).sum())}/{len(s)} batch sizes")
    return _judged(parts, all(verdicts) if verdicts else None, why)


def _aggregation(runs: _Runs, dp: str, pairs: str) -> tuple:
    """``(verdict or None, text, why)`` of "pairs converge faster than tabular" for one pair
    convention: excess risk below tabular's by more than 2 SE at more batch sizes than above, over
    the batch sizes where neither curve's RMSE is as bad as the zero predictor's."""
    df, f_np, best, zero = runs.df, runs.f_np, runs.best, runs.zero
    tab_sub = select(df, "tabular", f_np, dp, metric="excess_risk", best=best, coef=FIXED_COEF)
    agg_sub = select(df, pairs, f_np, dp, metric="excess_risk", best=best, coef=FIXED_COEF)
    tab, agg = mean_by_m(tab_sub), mean_by_m(agg_sub)
    why = list(runs.few)
    if not (len(tab) and len(agg)) or "seed" not in df.columns:
        return None, "", why + ["no data"]
    tab_rmse = runs.curve("tabular", dp, coef=FIXED_COEF)
    agg_rmse = runs.curve(pairs, dp, coef=FIXED_COEF)
    useful = [m for m in tab.index if m in agg.index and tab_rmse.get(m, zero) < 0.9 * zero
              and agg_rmse.get(m, zero) < 0.9 * zero]
    se = np.sqrt(_se_by_m(tab_sub) ** 2 + _se_by_m(agg_sub) ** 2).reindex(useful)
    diff = (tab - agg).reindex(useful)
    separated = diff.abs() > 2 * se
    wins, losses = int(((diff > 0) & separated).sum()), int(((diff < 0) & separated).sum())
    if not useful:
        why.append(f"{dp} no better than {_ZERO} ({zero:.3g}) at every batch size")
    elif wins + losses == 0:
        why.append(f"{PAIR_FEATURES[pairs]} and tabular within 2 standard errors at every batch size")
    text = (f"{PAIR_FEATURES[pairs]}: excess risk below tabular's (by > 2 SE) at {wins}/{len(useful)} batch sizes "
            f"where both beat {_ZERO}, above at {losses}; largest m: {agg.iloc[-1]:.3g} vs {tab.iloc[-1]:.3g}")
    return wins > losses, text, why


def aggregation(runs: _Runs, dp: str) -> Verdict:
    """More aggressive aggregation makes ``dp`` converge faster, under both scalings of the pair
    features (the paper does not say which it used, and DP-LSL's noise depends on it)."""
    results = [_aggregation(runs, dp, pairs) for pairs in PAIR_FEATURES if (runs.df["features"] == pairs).any()]
    texts = [t for _, t, _ in results if t]
    why = [w for _, _, ws in results for w in ws]
    decided = [v for v, _, ws in results if not ws and v is not None]
    if not why and len(set(decided)) > 1:
        why.append("the two scalings of the pair features disagree (the paper does not say which it used)")
    verdict = decided[0] if decided and len(set(decided)) == 1 else None
    head = f"F_max={runs.f_np:g}" + (f", λ = λ_min + {FIXED_COEF:g}·√m" if dp == "DP-LSL" else "")
    return _judged([f"{head}: " + "; ".join(texts)] if texts else [], verdict, why)


def _whole(runs: _Runs) -> Case:
    return Case({"runs": runs}, {"f_np": runs.f_np})


def _each_dp(runs: _Runs) -> list[Case]:
    return [Case({"runs": runs, "dp": dp}, {"dp": dp}) for dp in ("DP-LSW", "DP-LSL")]


_PANEL3 = "§6, Fig. 1 (third panel)"


def _plotted(panel: str) -> str:
    """The paper-number cell of a claim read off a panel of Figure 1, which prints no values (the
    shared text has no image to digitise)."""
    return f"no number: Fig. 1 ({panel}) plotted, values not printed"

#: the claims of Figure 1 (§6), in the report's order
CLAIMS = [
    ClaimSpec("Non-private LSW converges faster than LSL (panel 1; RMSE at the largest batch).",
              rule=lsw_faster, inputs=_whole, paper_value=_plotted("left panel"), **paper_source(
                  "§6, Fig. 1 (left panel)", "both algorithms are very stable and converge to the same solution, but "
                  "LSW converges faster")),
    ClaimSpec("The DP algorithms converge to their non-private counterparts for large batches "
              "(F_max = {f_np:g}: RMSE gap ≤ 0.01; judged in paper calibration).",
              rule=dp_converge, inputs=_whole, headline=True,
              paper_value=_plotted("third panel"),
              **paper_source(_PANEL3, "the DP algorithms converge to the same solutions as the non-private "
                             "corresponding versions for large enough batch sizes")),
    ClaimSpec("LSL-type algorithms are better for small batches and LSW for large batches "
              "(DP versions, RMSE at the smallest and the largest batch).",
              rule=lsl_small_lsw_large, inputs=_whole, paper_value=_plotted("third panel"), **paper_source(
                  _PANEL3, "The LSL algorithms work better with small batches of data, whereas the LSW approach is "
                  "preferable with large batches.")),
    ClaimSpec("For DP-LSL, λ ∝ √m gives the best overall accuracy (vs λ ∝ m; F_max = {f_np:g}).",
              rule=sqrt_schedule, inputs=_whole, paper_value="no number: a recommendation (§6), Fig. 1 not printed",
              **paper_source(
                  "§6", "the trade-off between accuracy and privacy in the DP-LSL algorithm should be done by setting "
                  "a regularization schedule proportional to √m. [...] it achieves the best overall accuracy")),
    ClaimSpec("More aggressive aggregation (pairs, d = 20, against tabular, d = 40) makes {dp} converge faster "
              "(excess empirical risk, panel 4), under both scalings of the pair features.",
              rule=aggregation, inputs=_each_dp, paper_value=_plotted("right panel"), **paper_source(
                  "§6, Fig. 1 (right panel)", "more aggressive function approximation helps both differentially "
                  "private algorithms converge faster")),
]


def claims(df: pd.DataFrame) -> list[Claim]:
    """The paper's claims of Figure 1 (:data:`CLAIMS`; the module docstring says when each is
    undecided)."""
    return evaluate(CLAIMS, _runs(df))


# =========================================================================== the frontier's claims
@dataclass(frozen=True)
class _Frontier:
    """What the frontier's claims read: the runs and the zero predictor's RMSE on their chain."""

    df: pd.DataFrame
    zero: float

    def per_seed(self, cal: str, eps: float, metric: str = "rmse") -> pd.Series:
        df = self.df
        sub = df[(df["metric"] == metric) & (df["calibration"] == cal) & (df["epsilon"] == eps)]
        return sub.groupby("seed")["value"].mean()

    def mean(self, cal: str, eps: float) -> float:
        values = self.per_seed(cal, eps)
        return float(values.mean()) if len(values) else math.nan


def _frontier(df: pd.DataFrame) -> Case:
    first = df.iloc[0] if len(df) else {}
    zero = float(np.sqrt(np.mean(chain_values(int(first.get("n_states", 40)), float(first.get("stay_probability", 0.5)),
                                              float(first.get("gamma", 0.99))) ** 2)))
    return Case({"runs": _Frontier(df, zero)})


def tight_half_of_sound(runs: _Frontier) -> Outcome:
    """Tight's RMSE at most half of sound's at ε = 1, paired by seed (the calibrations of a seed
    share its batch); undecided when either curve is no better than the zero predictor."""
    df, mean = runs.df, runs.mean
    guard = min_seeds(df, 3) if "seed" in df.columns else min_seeds(1, 3)
    tight, sound, paper = runs.per_seed("tight", 1.0), runs.per_seed("sound", 1.0), runs.per_seed("paper", 1.0)
    text = (f"tight {mean('tight', 1.0):.4g} vs sound {mean('sound', 1.0):.4g} (ratio "
            f"{mean('tight', 1.0) / mean('sound', 1.0):.3g}; {_ZERO} {runs.zero:.3g})")
    v = guard or trivial_guard({"tight": tight, "sound": sound}, runs.zero, lower_is_better=True, baseline=_ZERO,
                               detail=text)
    if v is None:
        half = compare_curves(tight, sound * 0.5, claim="less", test="paired", names=("tight", "0.5 × sound"))
        v = decide(None if half.verdict == "undecided" else half.verdict == "holds", f"{text}; {half.detail}",
                   reason=half.reason)
    return Outcome(v, values={
        "paper_calibration_value": f"RMSE {float(paper.mean()) if len(paper) else math.nan:.3g}",
        "tight_value": f"RMSE {mean('tight', 1.0):.3g} (sound {mean('sound', 1.0):.3g})"})


def never_noisier(runs: _Frontier) -> Verdict:
    """Tight's noise multiplier α at most sound's at every ε (exact: the multipliers are public)."""
    df = runs.df
    rmse = df[(df["metric"] == "rmse") & (df["calibration"] != "none")]
    parts, order = [], []
    for eps in sorted(rmse["epsilon"].unique()):
        noise = {cal: runs.per_seed(cal, eps, "noise_multiplier") for cal in _FRONTIER_CALIBRATIONS}
        if len(noise["tight"]) and len(noise["sound"]):
            order.append(bool(float(noise["tight"].max()) <= float(noise["sound"].min()) * (1 + 1e-9)))
        parts.append(f"ε={eps:g}: noise multiplier α " + ", ".join(
            f"{k} {float(x.mean()):.3g}" for k, x in noise.items() if len(x)) + "; RMSE " + ", ".join(
            f"{k} {runs.mean(k, eps):.3g}" for k in _FRONTIER_CALIBRATIONS))
    return decide(all(order) if order else None, "; ".join(parts), reason="no data")


#: privrl's claims on its calibrations (the frontier is not a figure of the paper)
FRONTIER_CLAIMS = [
    ClaimSpec("At (1, 1e-5), tight calibration gives DP-LSW an RMSE at most half that of the sound one "
              "(paired by seed).", rule=tight_half_of_sound, inputs=_frontier, headline=True),
    ClaimSpec("Tight calibration is never noisier than the sound one (the noise multiplier α of every ε).",
              rule=never_noisier, inputs=_frontier),
]


def frontier_claims(df: object) -> list[Claim]:
    """privrl's target for the tight calibration (RMSE ≤ 0.5 × sound at ε = 1, paired by seed) and
    the ordering of the noise scales (:data:`FRONTIER_CLAIMS`)."""
    return evaluate(FRONTIER_CLAIMS, df)
