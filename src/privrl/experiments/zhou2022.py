"""``zhou2022-regret``: cumulative regret of Private-LinOpt-VI / -PO (Zhou 2022) against episodes.

The paper has no experiments (spec §5.1); this one is designed in issue #6. One *setting* = one
environment (E2 random mixture, E1 hard instance), one algorithm (LinOpt-VI = private UCRL-VTR,
LinOpt-PO = private OPPO), one privatizer (none / central JDP / local LDP, derived) with its ε,
and one *panel*:

* ``theory`` — every constant as in the paper (σ of Thm 6.4 with replace-one sensitivities, Υ and
  the shift 2Υ of Sec 6.1, β of Lemma 3.1, η of Sec 8);
* ``tuned`` — data-independent knobs that leave the privacy guarantee unchanged:
  ``beta_scale = 0.1``, ``upsilon = "monte_carlo"`` (a tighter public Υ), and ``sigma_rule = "zcdp"``
  (σ calibrated to the same (ε, δ) through zCDP instead of the paper's loose composition).
  ``beta_scale`` was chosen on *different* E2 instances (model seeds 990000–990002, K = 3000,
  non-private VI, grid {1, 0.3, 0.1, 0.03, 0.01}; see ``docs/linear_mixture.md``), never on the
  reported ones.

Each run records the exact cumulative pseudo-regret at log-spaced episode counts (``metric =
"cumulative_regret"``) and the explicit regret bound of Thm 4.1/5.1 with the run's constants at the
same K (``metric = "regret_bound"``; Thm 6.5 for JDP, the derived LDP rate for local). The model
instance is drawn from the seed's shared stream, so every setting of a seed sees the same MDP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privrl.algorithms.linear_mixture import LinOptPO, LinOptVI
from privrl.algorithms.linear_mixture import calibration as cal
from privrl.envs.linear_mixture import hard_instance, random_mixture
from privrl.experiments.registry import register
from privrl.experiments.spec import Claim, Experiment, RunContext, RunResult
from privrl.privacy import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["EXPERIMENT", "settings", "run", "run_batch", "batch_key", "plot", "claims", "fitted_slopes", "TUNED"]

DELTA = 1e-5
#: the tuned panel's knobs (data-independent; chosen on other model instances, see module doc)
TUNED: dict[str, Any] = {"beta_scale": 0.1, "upsilon": "monte_carlo", "sigma_rule": "zcdp"}
_E2 = {"n_states": 6, "n_actions": 4, "horizon": 5, "d1": 3, "d2": 3}
_E1 = {"d": 5, "horizon": 6}
_SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"K": 120, "envs": {"E2": {"n_states": 4, "n_actions": 3, "horizon": 3, "d1": 2, "d2": 2}},
              "privacy": [("none", math.inf), ("central", 1.0), ("local", 10.0)], "algorithms": ["VI", "PO"],
              "panels": ["theory", "tuned"]},
    "quick": {"K": 800, "envs": {"E2": {**_E2, "horizon": 3}},
              "privacy": [("none", math.inf), ("central", 1.0), ("central", 10.0), ("local", 10.0)],
              "algorithms": ["VI", "PO"], "panels": ["theory", "tuned"]},
    "paper": {"K": 10**5, "envs": {"E2": _E2, "E1": _E1},
              "privacy": [("none", math.inf), ("central", 0.1), ("central", 1.0), ("central", 10.0),
                          ("local", 1.0), ("local", 10.0)],
              "algorithms": ["VI", "PO"], "panels": ["theory", "tuned"]},
}


def settings(scale: str) -> list[dict[str, Any]]:
    grid = _SCALES[scale]
    out = []
    for env, env_params in grid["envs"].items():
        for alg in grid["algorithms"]:
            for privatizer, eps in grid["privacy"]:
                for panel in grid["panels"]:
                    out.append({"env": env, "env_params": dict(env_params), "algorithm": alg,
                                "privatizer": privatizer, "epsilon": eps if math.isfinite(eps) else "inf",
                                "delta": DELTA, "panel": panel, "K": grid["K"], "alpha": 0.05})
    return out


def _model(params: Mapping[str, Any], rng: np.random.Generator) -> Any:
    p = params["env_params"]
    if params["env"] == "E1":
        return hard_instance(p["d"], p["horizon"], int(params["K"]), rng=rng)
    return random_mixture(p["n_states"], p["n_actions"], p["horizon"], p["d1"], p["d2"], rng=rng)


def label_of(algorithm: str, privatizer: str, epsilon: Any) -> str:
    if privatizer == "none":
        return "UCRL-VTR" if algorithm == "VI" else "OPPO"
    kind = "JDP" if privatizer == "central" else "LDP"
    return f"LinOpt-{algorithm} {kind} ε={float(epsilon):g}"


def checkpoints(K: int, n: int = 25) -> list[int]:
    return sorted(set(np.unique(np.round(np.logspace(0, math.log10(K), n)).astype(int)).tolist()) | {K})


def _estimator(params: Mapping[str, Any], K: int) -> Any:
    eps = math.inf if params["epsilon"] == "inf" else float(params["epsilon"])
    budget = PrivacyBudget.non_private() if params["privatizer"] == "none" else PrivacyBudget(epsilon=eps, delta=DELTA)
    knobs: dict[str, Any] = dict(TUNED) if params["panel"] == "tuned" else {}
    if params["privatizer"] == "none":
        knobs = {k: v for k, v in knobs.items() if k == "beta_scale"}
    cls = LinOptVI if params["algorithm"] == "VI" else LinOptPO
    return cls(n_episodes=K, privatizer=params["privatizer"], budget=budget, alpha=float(params["alpha"]), **knobs)


def _bound_at(params: Mapping[str, Any], model: Any, K: int) -> float:
    """The explicit Thm 4.1 / 5.1 bound with the (untuned) constants a K-episode run would use."""
    key = (params["algorithm"], params["privatizer"], str(params["epsilon"]), float(params["alpha"]), int(K),
           model.horizon, model.d1, model.d2, model.n_actions)
    if key not in _BOUNDS:
        est = _estimator({**params, "panel": "theory"}, K)
        reg = est._make_regularizer(model)
        reg.start(n_episodes=K, horizon=model.horizon, d1=model.d1, d2=model.d2, rng=0)
        c = reg.constants(est.alpha)
        bp, br = cal.confidence_radii(c, d1=model.d1, d2=model.d2, n_episodes=K, horizon=model.horizon,
                                      alpha=est.alpha)
        _BOUNDS[key] = est._bound(c, bp, br, model, K)
    return _BOUNDS[key]


#: the bound depends only on public parameters and the model's sizes (L_ϕ = √d1·H): computed once
_BOUNDS: dict[tuple, float] = {}


def batch_key(params: Mapping[str, Any], seed: int) -> tuple:
    """Runs with equal keys go to one :func:`run_batch` call: one algorithm (all environments,
    settings and seeds; :func:`run_batch` makes one lockstep batch per environment). At paper scale
    that is 2 tasks of 240 runs, of about equal cost, for the 2-core sweep."""
    return (params["algorithm"], int(params["K"]))


def run_batch(params_list: Sequence[Mapping[str, Any]], ctxs: Sequence[RunContext]) -> list[RunResult]:
    """Several (setting, seed) runs at once: one model per (environment, seed), shared by its
    settings (it comes from the seed's shared stream, so every setting builds the same one), and
    the learners advanced in lockstep (:func:`~privrl.algorithms.linear_mixture.engine.fit_many`,
    planning only at reachable states), one batch per (model sizes, algorithm): VI and PO do
    different work per episode. Each result is exactly :func:`run`'s for that run."""
    from privrl.algorithms.linear_mixture.engine import fit_many

    models: dict[tuple, Any] = {}
    groups: dict[tuple, list[int]] = {}
    fitted: list[Any] = [None] * len(params_list)
    run_models: list[Any] = [None] * len(params_list)
    for j, (params, ctx) in enumerate(zip(params_list, ctxs)):
        shape = (params["env"], repr(sorted(params["env_params"].items())), int(params["K"]))
        if (shape, ctx.seed) not in models:
            models[(shape, ctx.seed)] = _model(params, ctx.shared_rng("model"))
        run_models[j] = models[(shape, ctx.seed)]
        fitted[j] = _estimator(params, int(params["K"]))
        groups.setdefault((shape, params["algorithm"]), []).append(j)
    for idx in groups.values():
        fit_many([fitted[j] for j in idx], [run_models[j] for j in idx], [ctxs[j].rng for j in idx],
                 reachable_only=True)
    return [_result(params, model, est) for params, model, est in zip(params_list, run_models, fitted)]


def run(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    return run_batch([params], [ctx])[0]


def _result(params: Mapping[str, Any], model: Any, est: Any) -> RunResult:
    K = int(params["K"])
    label = label_of(params["algorithm"], params["privatizer"], params["epsilon"])
    base = {"label": label, "guarantee": est.guarantee or "none", "T_per_episode": model.horizon}
    rows = []
    for k in checkpoints(K):
        rows.append({**base, "step": k, "episodes": k, "metric": "cumulative_regret",
                     "value": float(est.cumulative_regret_[k - 1])})
        if k >= 4:
            rows.append({**base, "step": k, "episodes": k, "metric": "regret_bound", "value": _bound_at(params, model, k)})
    rows.append({**base, "step": K, "episodes": K, "metric": "trivial_bound", "value": float(K)})
    private = est.is_private
    return RunResult(
        rows=rows,
        ledger=est.privacy_ledger_ if private else None,
        budget=est.budget if private else None,
        privacy_unit=PrivacyUnit.USER_EPISODE,
        neighboring=Neighboring.REPLACE_ONE,
        calibration="sound",
        accountant="pld",
        delta=DELTA,
        extra={"guarantee": est.guarantee, "panel": params["panel"], "beta_p": est.beta_p_, "beta_r": est.beta_r_,
               "paper_epsilon_closed_form": None if math.isinf(est.paper_epsilon_) else est.paper_epsilon_,
               "note": "epsilon_spent is per user (one episode); JDP: the billboard lemma over the 4H tree "
                       "counters; LDP: each user's local randomiser (derived, spec §3.4)"},
    )


# =========================================================================== analysis
def fitted_slopes(df: Any) -> Any:
    """Least-squares slope of log(mean cumulative regret) on log(k) over the last decade of k
    (k ≥ K/10), per (env, panel, label). A slope near 1 is linear regret, near 0.5 is √T."""
    import pandas as pd

    sub = df[df["metric"] == "cumulative_regret"]
    out = []
    for key, grp in sub.groupby(["env", "panel", "label"]):
        curve = grp.groupby("episodes")["value"].mean().sort_index()
        K = curve.index.max()
        tail = curve[(curve.index >= K / 10) & (curve > 0)]
        slope = float(np.polyfit(np.log(tail.index), np.log(tail.to_numpy()), 1)[0]) if len(tail) >= 2 else math.nan
        out.append({"env": key[0], "panel": key[1], "label": key[2], "K": int(K), "slope": slope,
                    "final_regret": float(curve.iloc[-1]), "n_seeds": int(grp["seed"].nunique())})
    return pd.DataFrame(out)


def _slope_table(slopes: Any) -> str:
    lines = ["| env | panel | algorithm | K | fitted slope (last decade) | final cumulative regret | seeds |",
             "|---|---|---|---|---|---|---|"]
    for _, r in slopes.sort_values(["env", "panel", "label"]).iterrows():
        lines.append(f"| {r.env} | {r.panel} | {r.label} | {r.K} | {r.slope:.3f} | {r.final_regret:.4g} | {r.n_seeds} |")
    lines += ["", "Paper's rates (T = KH): UCRL-VTR Õ(d√(H³T)) and OPPO + √(TH³ log|A|) → slope 0.5; "
              "Private-LinOpt-VI/PO (Thm 6.5) Õ(d^{7/4}√(TH⁴) log(H/δ)^{1/4}/√ε) → slope 0.5; derived LDP "
              "Õ(d^{7/4}H^{7/4}T^{3/4}…/√ε) → slope 0.75. Slopes near 1 mean the algorithm is still in the "
              "vacuous (saturated-bonus) phase at this K."]
    return "\n".join(lines) + "\n"


def plot(df: Any, out_dir: Path) -> list[Path]:
    from privrl.experiments.plots import mean_se_band, new_figure, save_figure

    paths: list[Path] = []
    envs = sorted(df["env"].unique())
    panels = [p for p in ("theory", "tuned") if p in set(df["panel"])]
    fig, axes = new_figure(ncols=len(panels) + 1, nrows=len(envs), width=4.6, height=3.8, squeeze=False)
    for i, env in enumerate(envs):
        labels = sorted(df[df["env"] == env]["label"].unique())
        colors = {lab: f"C{j % 10}" for j, lab in enumerate(labels)}
        for j, panel in enumerate(panels):
            ax = axes[i][j]
            sub = df[(df["env"] == env) & (df["panel"] == panel) & (df["metric"] == "cumulative_regret")]
            for lab in labels:
                cur = sub[sub["label"] == lab]
                if len(cur):
                    mean_se_band(ax, cur, "episodes", label=lab, logx=True, logy=True, color=colors[lab])
            ks = np.array(sorted(sub["episodes"].unique()), dtype=float)
            if len(ks):
                ax.plot(ks, ks * 0.5, color="black", linestyle=":", linewidth=1, label="linear reference (0.5·K)")
            ax.set(title=f"{env}, {panel} constants", xlabel="episodes K", ylabel="cumulative regret")
            ax.legend(fontsize=5)
        ax = axes[i][len(panels)]
        bnd = df[(df["env"] == env) & (df["metric"] == "regret_bound") & (df["panel"] == panels[0])]
        for lab in labels:
            cur = bnd[bnd["label"] == lab]
            if len(cur):
                mean_se_band(ax, cur, "episodes", label=f"bound: {lab}", logx=True, logy=True, color=colors[lab],
                             linestyle="--")
        ks = np.array(sorted(bnd["episodes"].unique()), dtype=float)
        if len(ks):
            h = float(df[df["env"] == env]["T_per_episode"].iloc[0])
            ax.plot(ks, ks * h, color="black", linewidth=1, label="trivial bound KH")
        ax.set(title=f"{env}: explicit bounds (Thm 4.1/5.1/6.5; LDP derived)", xlabel="episodes K",
               ylabel="regret upper bound")
        ax.legend(fontsize=5)
    fig.suptitle("Zhou (2022): cumulative pseudo-regret (mean ± s.e. over seeds), δ = 1e-5, "
                 "replace-one sensitivities", fontsize=9)
    paths += save_figure(fig, out_dir, "zhou2022-regret")
    slopes = fitted_slopes(df)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = out / "zhou2022-slopes.md"
    table.write_text(_slope_table(slopes))
    paths.append(table)
    return paths


def claims(df: Any) -> list[Claim]:
    slopes = fitted_slopes(df)
    out: list[Claim] = []
    sub = df[df["metric"] == "cumulative_regret"]
    final = sub[sub["episodes"] == sub.groupby(["env"])["episodes"].transform("max")]
    final = final.groupby(["env", "panel", "algorithm", "privatizer", "epsilon"])["value"].mean()

    # 1. sublinear regret (Thm 4.1 / 5.1 non-private; Thm 6.5 JDP)
    parts, verdicts = [], []
    for _, r in slopes[slopes["panel"] == "tuned"].iterrows():
        if "LDP" in r.label:
            continue
        parts.append(f"{r.env} {r.label}: slope {r.slope:.2f} at K={r.K}")
        verdicts.append(r.slope < 0.85)
    out.append(Claim("Regret is sublinear, Õ(√T), for UCRL-VTR/OPPO (Remark 6.7) and for the JDP algorithms "
                     "(Thm 6.5); judged on the tuned panel (slope < 0.85 over the last decade).",
                     "; ".join(parts) or "no data", all(verdicts) if verdicts else None))

    # 2. privacy cost decreases with ε (multiplicative 1/√ε)
    parts, verdicts = [], []
    for (env, panel, alg), grp in final.groupby(level=[0, 1, 2]):
        jdp = grp.xs("central", level="privatizer") if "central" in grp.index.get_level_values("privatizer") else None
        if jdp is None or len(jdp) < 2:
            continue
        vals = jdp.droplevel([0, 1, 2]).sort_index(key=lambda s: s.astype(float))
        parts.append(f"{env} {panel} {alg}: " + ", ".join(f"ε={e}: {v:.4g}" for e, v in vals.items()))
        verdicts.append(bool(np.all(np.diff(vals.to_numpy()) <= 0.02 * vals.to_numpy()[:-1] + 1e-9)))
    out.append(Claim("The JDP regret decreases as ε grows (privacy cost ∝ 1/√ε, Thm 6.5).",
                     "; ".join(parts) or "no data", all(verdicts) if verdicts else None))

    # 3. LDP costs more than JDP at equal ε
    parts, verdicts = [], []
    for (env, panel, alg, priv, eps), v in final.items():
        if priv != "local":
            continue
        key = (env, panel, alg, "central", eps)
        if key in final.index:
            parts.append(f"{env} {panel} {alg} ε={eps}: LDP {v:.4g} vs JDP {final[key]:.4g}")
            verdicts.append(v >= final[key] * 0.98)
    out.append(Claim("LDP regret is at least JDP regret at equal ε (O(K) vs O(log K) noise terms; Sec 1.1, "
                     "Remark 6.9; LDP rate derived in the spec).", "; ".join(parts) or "no data",
                     all(verdicts) if verdicts else None))

    # 4. theory constants are vacuous at practical K
    parts, verdicts = [], []
    for _, r in slopes[(slopes["panel"] == "theory") & slopes["label"].str.contains("DP")].iterrows():
        parts.append(f"{r.env} {r.label}: slope {r.slope:.2f}")
        verdicts.append(r.slope > 0.85)
    out.append(Claim("(Spec §5.3, not a paper claim) With the theory constants the private algorithms are still in the "
                     "saturated, linear-regret phase at practical K (slope > 0.85).",
                     "; ".join(parts) or "no data", all(verdicts) if verdicts else None))

    # 5. bounds vs trivial
    bnd = df[(df["metric"] == "regret_bound")]
    if len(bnd):
        last = bnd[bnd["episodes"] == bnd.groupby("env")["episodes"].transform("max")]
        worst = last.groupby(["env", "label"])["value"].mean()
        parts = [f"{env} {lab}: bound {v:.3g}" for (env, lab), v in worst.items()]
        ks = last.groupby("env")["episodes"].max() * last.groupby("env")["T_per_episode"].max()
        vac = all(v > ks[env] for (env, _), v in worst.items())
        out.append(Claim("(Measured) The explicit regret bounds exceed the trivial bound KH at the largest K run.",
                         "; ".join(parts) + "; KH = " + ", ".join(f"{e}: {int(v)}" for e, v in ks.items()), vac))
    return out


EXPERIMENT = register(Experiment(
    id="zhou2022-regret",
    paper="Zhou (2022), Differentially Private Reinforcement Learning with Linear Function Approximation",
    figure="(no figure in the paper; regret experiment designed in issue #6)",
    description="Cumulative pseudo-regret of private UCRL-VTR / OPPO (JDP tree privatizer, derived LDP) vs K.",
    settings=settings,
    seeds={"smoke": 1, "quick": 2, "paper": 10},
    run=run,
    run_batch=run_batch,
    batch_key=batch_key,
    plot=plot,
    claims=claims,
    deviations=(
        "The paper has no experiments; environments E1 (hard instance of Zhou, Gu & Szepesvári 2021, reconstructed "
        "in the spec, not verified against the original) and E2 (random mixture) come from the spec (§5.2).",
        "Sensitivities are the replace-one values (√2·d1H², 2√d1·H², √2, 2), not the paper's add/remove ones (A15).",
        "The regression feature is computed in episode j and frozen (A1); Λ¹ = γI (A4); truncation at H−h+1 (A5).",
        "The LDP privatizer is derived (spec §3.4), the paper only sketches it.",
        "Tuned panel: β×0.1 (chosen on other model instances), a Monte-Carlo Υ and zCDP-calibrated σ; the privacy "
        "guarantee is unchanged (knobs are data-independent; zCDP calibration meets the same (ε, δ)).",
        "The explicit regret bound is the non-O form read off the proofs (spec §4.2/4.3) with the theory constants.",
        "Quick scale uses H = 3 and K = 800 to fit the 30 s budget; only the paper scale approaches the regimes of "
        "the theory.",
    ),
))
