"""Qiao & Wang (2023), "Offline Reinforcement Learning with Differential Privacy" — Section 6 / Appendix F,
and the family's privacy–utility frontiers.

* ``qiao2023-fig1a``: PEVI, VAPVI and DP-VAPVI (ρ ∈ {1, 25}) on the synthetic linear MDP, H = 20;
* ``qiao2023-fig1b``: VAPVI and DP-VAPVI with ρ ∈ {0.1, 1, 5, 25};
* ``qiao2023-tabular``: APVI against DP-APVI (zCDP ρ ∈ {0.1, 1, 10}, pure ε ∈ {1, 10}) under the
  theory and the practical constants, on the random tabular MDP and on FrozenLake (the paper has no
  tabular experiment);
* ``frontier-offline-tabular`` / ``frontier-offline-linear``: the sub-optimality gap of DP-APVI
  (random tabular MDP, n = 10⁵) and DP-VAPVI (Appendix F MDP, K = 10⁴) against ε (δ = 10⁻⁵) under
  paper / sound / tight calibration, practical constants, with APVI / VAPVI on the same data.

Metric: the sub-optimality gap ``v* − v^π̂``, computed exactly on the known model, beside the gap
of the trivial policy (the tie-break rule, action 0 everywhere: what a degenerate output returns).
One run = one (configuration, seed) over the whole data-size grid: the seed's dataset is sampled
once at the largest size from ``ctx.shared_rng("data")`` (every configuration of a seed sees the
same trajectories) and every size is fitted on a prefix, from prefix sums of the sufficient
statistics (:func:`~privrl.offline.offline_statistics`); the privacy noise of each fit comes from
its own child of ``ctx.rng``. The settings of a seed run as one unit of work (``run_batch``,
:func:`batch_key`), so the dataset is drawn and counted once per seed; each result is ``run``'s.
Every fit is the estimator's own (its noise plan, releaser and ledger); the run's ledger is the
largest size's (the noise does not depend on the size).
"""

from __future__ import annotations

import functools
import math
import textwrap
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import param_error
from privrl.envs.linear import LinearMDP
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.envs.synthetic_linear import (
    FEATURE_SCALE,
    synthetic_behaviour_policy,
    synthetic_linear_mdp,
)
from privrl.envs.tabular import from_gymnasium_toy_text
from privrl.errors import PrivacyLeakWarning, UtilityWarning
from privrl.experiments.frontier import Frontier, calibration_curve, finish_frontier, register_frontier
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.offline import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI, offline_statistics
from privrl.offline._common import degenerate_output
from privrl.offline.calibration import linear_noise
from privrl.offline.claims import FIG1_WHY, curve_order, frontier_claims, is_printed, linear_claims, tabular_claims
from privrl.offline.linear import LINEAR_PRESETS, linear_pessimistic_vi
from privrl.privacy import NumpyNoise, PrivacyBudget, Releaser

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["FIG1A", "FIG1B", "TABULAR", "FRONTIER_TABULAR", "FRONTIER_LINEAR", "tabular_benchmark",
           "linear_instance", "make_estimator", "trivial_gap", "batch_key"]

PAPER = "Qiao & Wang (2023), Offline Reinforcement Learning with Differential Privacy"
HORIZON = 20
LAM = 1.0 / FEATURE_SCALE**2     # λ = 1 on the raw Appendix F features (spec §5.3)
DELTA_DP = 1e-5
INSTANCE_SEED = {"qiao2023-fig1a": 0, "qiao2023-fig1b": 1, "frontier-offline-linear": 0}
FRONTIER_EPSILONS = (0.1, 1.0, 10.0)
CALIBRATIONS = ("paper", "sound", "tight")

_K_PAPER = [5, 10, 20, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
_K_GRID = {"smoke": [10, 200], "quick": [5, 20, 100, 300, 1000, 3000],
           "paper": _K_PAPER + [2000, 5000, 10_000, 20_000, 50_000, 100_000]}
_N_GRID = {"smoke": [100, 1000], "quick": [100, 1000, 10_000],
           "paper": [100, 300, 1000, 3000, 10_000, 30_000, 100_000]}
_SEEDS = {"smoke": 2, "quick": 3, "paper": 20}
_FRONTIER_SIZE = {"smoke": {"tabular": 1000, "linear": 200}, "quick": {"tabular": 10_000, "linear": 3000},
                  "paper": {"tabular": 100_000, "linear": 10_000}}
LINEAR_DEVIATIONS = (
    "Features divided by the public constant sqrt(7) so that ||phi||_2 <= 1 holds (Appendix F's raw "
    "features reach sqrt(7), which voids the paper's sensitivities); nu and theta are multiplied by "
    "sqrt(7), so the MDP is unchanged, and lam = 1/7 equals lam = 1 on the raw features.",
    "Default calibration is 'tight' (exact μ = sqrt(2ρ), per-step sensitivities, budget split to minimise "
    "the error bound; privrl.offline.calibration). Paper calibration, two curves: 'printed noise, normalised "
    "features' adds the printed noise (vectors for ||phi|| <= 1, the add/remove matrix noise Var Z_ij = "
    "1/(4 rho0)) to the statistics of the features divided by sqrt(7) — in the units of the data that is sqrt(7) "
    "times the literal algorithm's vector noise and 7 times its matrix noise; its ledger records the true "
    "replace-one cost 1.4 rho. 'printed algorithm, raw features' is Algorithm 2 as printed on the raw features "
    "(||phi|| up to sqrt(7), lam = 1): its sensitivities do not hold there, so it claims no ε (uncertified).",
    "E = 4 s (sqrt(d) + sqrt(log(10H/delta))) replaces Lemma D.2's unspecified constants; theory constants "
    "D = 0, C = 0.1, lam = 1 (raw scale), PEVI beta = 0.1, delta_fail = 0.05 (not given in the paper); the "
    "'practical' curve uses the preset chosen on held-out instances (docs/offline.md).",
    "20 seeds at paper scale (the paper used 5), data and noise resampled per seed; an extended K axis to "
    "1e5 (log panel) beside the paper's linear 0-1000 panel; the K values of one seed are nested prefixes "
    "of one dataset.",
    FIG1_WHY,
)
TABULAR_DEVIATIONS = (
    "Not in the paper (no tabular experiment): a seeded random MDP (S=10, A=5, H=10, Dirichlet(0.5) "
    "transitions, U[0,1] rewards) and slippery FrozenLake 4x4 with H=20, behaviour policy 0.5 * optimal + "
    "0.5 * uniform.",
    "Degenerate under the theory constants: with C1 = sqrt(2), C2 = 16, C' = 2 DP-APVI returns the all-zero "
    "value function and the tie-break policy (action 0 everywhere) for every budget at every n <= 1e5 on "
    "both benchmarks: the penalty 16·S·H·E·iota/n exceeds H wherever n < 16·S·E·iota (≈ 1e6 at rho = 1), "
    "so its curves coincide with the trivial policy's gap. The 'practical' constants (C2 = 0, chosen on "
    "held-out random MDPs) are shown beside them.",
    "Default calibration 'tight': the two count families' budget is split (1, S) — the transition counts "
    "get less noise (privrl.offline.calibration); Laplace E_eps = 2b log(2HS^2A/delta) is our constant for the "
    "paper's O~(H/eps).",
    "APVI's lower-order O(H iota / n) penalty term is set to 0, so that DP-APVI with an infinite budget is "
    "exactly APVI.",
)


# --------------------------------------------------------------------------- instances and data
@functools.lru_cache(maxsize=8)
def linear_instance(seed: int) -> LinearMDP:
    """The Appendix F linear MDP (H = 20, features scaled by 1/√7) with instance seed ``seed``."""
    return synthetic_linear_mdp(horizon=HORIZON, rng=seed)


@functools.lru_cache(maxsize=4)
def tabular_benchmark(name: str) -> tuple[LinearMDP, np.ndarray]:
    """``(model, behaviour policy)`` of a tabular benchmark: ``"random"`` or ``"frozenlake"``."""
    if name == "random":
        mdp = random_tabular_mdp(n_states=10, n_actions=5, horizon=10, rng=0)
    else:
        import gymnasium as gym


        model = from_gymnasium_toy_text(gym.make("FrozenLake-v1"), horizon=20)
        P, r = np.asarray(model.P), np.asarray(model.r)
        if P.ndim == 3:
            P = np.broadcast_to(P, (20, *P.shape))
            r = np.broadcast_to(r, (20, *r.shape))
        mdp = LinearMDP.from_tabular(P, r, initial=model.initial, name="FrozenLake-v1 (H=20)")
    return mdp, covering_behaviour_policy(mdp.optimal_policy(), mdp.n_actions)


def trivial_gap(mdp: LinearMDP) -> float:
    """The gap of the tie-break policy (action 0 everywhere): what a degenerate output achieves."""
    return float(mdp.optimal_value() - mdp.value(np.zeros((mdp.horizon, mdp.n_states), dtype=int)))


@functools.lru_cache(maxsize=4)
def _statistics(kind: str, instance: int | str, data_seed: int, sizes: tuple[int, ...]) -> tuple:
    """Prefix statistics of one seed's dataset (cached: every configuration of a seed shares it)."""
    if kind == "linear":
        mdp, mu = linear_instance(int(instance)), synthetic_behaviour_policy()
    else:
        mdp, mu = tabular_benchmark(str(instance))
    data = mdp.sample(mu, max(sizes), rng=np.random.default_rng(data_seed))
    return tuple(offline_statistics(data, mdp.n_states, mdp.n_actions, list(sizes)))


def _data_seed(ctx: RunContext) -> int:
    return int(ctx.shared_rng("data").integers(2**63))


def batch_key(params: Mapping[str, object], seed: int) -> tuple:
    """The settings of one seed run together (one unit of work of the runner): they share the
    seed's dataset and its prefix statistics (:func:`_statistics`), drawn and counted once."""
    return ("seed", seed)


def _batch(run: Callable[[Mapping[str, object], RunContext], RunResult]
           ) -> Callable[[Sequence[Mapping[str, object]], Sequence[RunContext]], list[RunResult]]:
    """``run_batch`` of an experiment whose runs share work through :func:`_statistics`: each
    result is exactly ``run``'s."""
    def run_batch(params_list: Sequence[Mapping[str, object]], ctxs: Sequence[RunContext]) -> list[RunResult]:
        return [run(params, ctx) for params, ctx in zip(params_list, ctxs)]
    return run_batch


# --------------------------------------------------------------------------- estimators
_CLASSES = {"pevi": PEVI, "vapvi": VAPVI, "dp-vapvi": DPVAPVI, "apvi": APVI, "dp-apvi": DPAPVI}
#: the estimators of the family's experiments
_Offline = PEVI | VAPVI | DPVAPVI | APVI | DPAPVI
_NAMES = {"pevi": "PEVI", "vapvi": "VAPVI", "dp-vapvi": "DP-VAPVI", "apvi": "APVI", "dp-apvi": "DP-APVI"}


def _budget(params: Mapping[str, Any]) -> PrivacyBudget | None:
    rho, eps = params.get("rho"), params.get("epsilon")
    if rho is not None and not (isinstance(rho, float) and math.isnan(rho)):
        return PrivacyBudget(rho=float(rho))
    if eps is not None and math.isfinite(float(eps)):
        return PrivacyBudget(epsilon=float(eps), delta=float(params.get("delta") or 0.0))
    return None


def make_estimator(params: Mapping[str, Any]) -> _Offline:
    """The estimator of a setting (``algorithm``, ``rho``/``epsilon``/``delta``, ``calibration``,
    ``constants``); the linear algorithms use no split (as in the paper's experiments) and, under the
    theory constants, λ = 1 on the raw features."""
    alg = str(params["algorithm"]).lower()
    constants = str(params.get("constants", "theory"))
    kwargs: dict[str, Any] = {"constants": constants}
    if alg in ("pevi", "vapvi", "dp-vapvi"):
        if constants == "theory":
            kwargs["lam"] = LAM
        if alg != "pevi":
            kwargs["split"] = False
    if alg.startswith("dp-"):
        kwargs["budget"] = _budget(params)
        kwargs["calibration"] = str(params.get("calibration", "tight"))
    return _CLASSES[alg](**kwargs)


#: what the two paper-calibration curves of DP-VAPVI are (Appendix F's raw features have norm up
#: to √7, above the paper's bound 1): the printed noise added on the features divided by √7 — √7
#: times the literal algorithm's vector noise and 7 times its matrix noise, in the units of the
#: data — and the literal printed algorithm on the raw features (its sensitivities do not hold)
PAPER_VARIANTS = {"normalised": "printed noise, normalised features", "raw": "printed algorithm, raw features"}


def _label(params: Mapping[str, Any]) -> str:
    alg = str(params["algorithm"]).lower()
    name = _NAMES[alg]
    budget = _budget(params) if alg.startswith("dp-") else None
    if budget is not None:
        name += f" ρ={budget.rho:g}" if budget.rho is not None else f" ε={budget.epsilon:g}"
    if params.get("constants", "theory") == "practical":
        name += " (practical)"
    if alg == "dp-vapvi" and params.get("calibration") == "paper":
        name += f" (paper calibration: {PAPER_VARIANTS[str(params.get('features', 'normalised'))]})"
    return name


def _fit_grid(params: Mapping[str, Any], ctx: RunContext, kind: str, instance: int | str, public: object,
              mdp: LinearMDP, sizes: Sequence[int], size_key: str
              ) -> tuple[list[dict[str, object]], _Offline]:
    if not sizes:
        raise param_error(f"{size_key}_grid", "an offline experiment", "at least one dataset size", list(sizes))
    stats = _statistics(kind, instance, _data_seed(ctx), tuple(int(s) for s in sizes))
    v_star, trivial = mdp.optimal_value(), trivial_gap(mdp)
    rows: list[dict[str, object]] = []
    label = _label(params)
    for size, st in zip(sizes, stats):
        est = make_estimator(params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UtilityWarning)
            warnings.simplefilter("ignore", PrivacyLeakWarning)   # paper mode is labelled in the results
            est.fit(st, public, rng=np.random.default_rng(ctx.rng.integers(2**63)))
        degenerate = any(issubclass(w.category, UtilityWarning) and "degenerate" in str(w.message) for w in caught)
        gap = v_star - mdp.value(est.policy_)
        rows.append({size_key: int(size), "algorithm": str(params["algorithm"]), "label": label,
                     "constants": params.get("constants", "theory"), "metric": "gap", "value": float(gap),
                     "trivial_gap": trivial, "degenerate": bool(degenerate)})
    return rows, est


def _noise_std_max(est: _Offline) -> float | None:
    """The largest noise std of a fit of a private class (None for a non-private class)."""
    return float(np.max(est.noise_std_)) if isinstance(est, (DPVAPVI, DPAPVI)) else None


def _result(rows: list[dict[str, object]], est: _Offline, params: Mapping[str, object]) -> RunResult:
    private = est.is_private
    return RunResult.from_estimator(est, rows, calibration=str(params.get("calibration", "tight")) if private else None,
                                    extra={"noise_std_max": _noise_std_max(est) if private else None})


# --------------------------------------------------------------------------- linear (Figure 1)
def _linear_settings(configs: Sequence[tuple]) -> Callable[[str], list[dict[str, object]]]:
    """Settings from ``(algorithm, rho, calibration, constants[, extra params])`` tuples."""
    def settings(scale: str) -> list[dict[str, object]]:
        return [{"algorithm": c[0], "rho": c[1], "calibration": c[2], "constants": c[3], "K_grid": list(_K_GRID[scale]),
                 **(c[4] if len(c) > 4 else {})} for c in configs]
    return settings


def run_linear(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    instance = int(params.get("instance", INSTANCE_SEED.get(ctx.experiment_id, 0)))
    mdp = linear_instance(instance)
    if params.get("features", "normalised") == "raw":
        return _run_printed_raw(params, ctx, instance, mdp)
    rows, est = _fit_grid(params, ctx, "linear", instance, mdp.features, mdp, params["K_grid"], "K")
    return _result(rows, est, params)


def _run_printed_raw(params: Mapping[str, Any], ctx: RunContext, instance: int, mdp: LinearMDP) -> RunResult:
    """Algorithm 2 exactly as printed on Appendix F's raw features (‖φ‖ ≤ √7): the paper
    calibration's noise, computed for ‖φ‖ ≤ 1, added to the statistics of the raw features
    (λ = 1, theory constants). The printed sensitivities do not hold for these features, so the
    run claims no ε (uncertified); DP-VAPVI refuses such features, hence the kernel here. Same data
    (the seed's shared stream) as every other curve."""
    raw = synthetic_linear_mdp(horizon=HORIZON, rng=instance, normalize=False).features
    sizes = [int(k) for k in params["K_grid"]]
    stats = _statistics("linear", instance, _data_seed(ctx), tuple(sizes))
    preset = LINEAR_PRESETS["theory"]
    H, d = mdp.horizon, raw.shape[2]
    budget = _budget(params)
    if budget is None:
        raise param_error("rho", "the printed-algorithm curve", "a privacy budget (rho or epsilon)", params.get("rho"))
    noise = linear_noise(H, d, budget, calibration="paper", feature_norm_bound=1.0)
    v_star, trivial = mdp.optimal_value(), trivial_gap(mdp)
    rows = []
    for size, st in zip(sizes, stats):
        # the releases' events are not kept: this run claims no ε (its sensitivities do not hold)
        rel = Releaser(NumpyNoise(np.random.default_rng(ctx.rng.integers(2**63))), [])
        fit = linear_pessimistic_vi(raw, st, st, lam=preset["lam"], penalty_coef=preset["C"] * math.sqrt(d),
                                    additive=preset["D"] / size, noise=noise, rel=rel)
        rows.append({"K": size, "algorithm": "dp-vapvi", "label": _label(params), "constants": "theory",
                     "metric": "gap", "value": float(v_star - mdp.value(fit.policy)), "trivial_gap": trivial,
                     "degenerate": degenerate_output(fit.q_values, fit.policy) is not None})
    return RunResult.from_estimator(DPVAPVI, rows, claim=False, calibration="paper", extra={
        "certified": False, "noise_std_max": float(np.max(noise.std)),
        "note": "the printed algorithm on features of norm up to sqrt(7): its sensitivities assume norm 1, so no "
                "epsilon is claimed"})


def _plot_panels(ax: Axes, df: pd.DataFrame, x: str, title: str, *, logx: bool, xmax: float | None = None) -> None:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import mean_se_band

    gaps = df[df["metric"] == "gap"]
    if xmax is not None:
        gaps = gaps[gaps[x] <= xmax]
    for (label, calibration), curve in sorted(gaps.groupby(["label", "calibration"]), key=lambda g: curve_order(*g[0])):
        printed = is_printed(label)    # the label says which paper calibration
        mean_se_band(ax, curve, x, label=label, calibration=calibration, logx=logx, marker="o", markersize=3,
                     linestyle=("--" if "normalised" in label else ":") if printed else None)
    if "trivial_gap" in gaps and len(gaps):
        ax.axhline(float(gaps["trivial_gap"].iloc[0]), color="grey", linestyle=":", label="trivial policy (action 0)")
    ax.set_xlabel(x + (" (episodes)" if x == "K" else " (trajectories)"))
    ax.set_ylabel("sub-optimality gap  v* − v(policy)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)   # below the data


def _plot_linear(df: object, out: Path, name: str, title: str) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import new_figure, save_figure

    fig, axes = new_figure(ncols=2, width=5.6, height=5.0)
    _plot_panels(axes[0], df, "K", f"{title}: K on a log axis", logx=True)
    _plot_panels(axes[1], df, "K", f"{title}: the paper's axis (K ≤ 1000)", logx=False, xmax=1000)
    return save_figure(fig, out, name)


FIG1A = register(Experiment(
    id="qiao2023-fig1a",
    paper=PAPER,
    figure="Figure 1(a)",
    description="PEVI, VAPVI, DP-VAPVI (rho = 1, 25; tight and paper calibration — the printed noise on the "
                "normalised features and the printed algorithm on the raw ones; theory and practical constants) on "
                "the Appendix F linear MDP, H = 20, gap vs K (log axis to 1e5 and the paper's linear 0-1000 axis).",
    settings=_linear_settings([("pevi", None, "none", "theory"), ("vapvi", None, "none", "theory"),
                               ("dp-vapvi", 1.0, "tight", "theory"), ("dp-vapvi", 25.0, "tight", "theory"),
                               ("dp-vapvi", 25.0, "paper", "theory"), ("dp-vapvi", 1.0, "tight", "practical"),
                               ("dp-vapvi", 25.0, "paper", "theory", {"features": "raw"})]),
    seeds=_SEEDS,
    run=run_linear,
    run_batch=_batch(run_linear),
    batch_key=batch_key,
    plot=lambda df, out: _plot_linear(df, out, "qiao2023-fig1a", "Fig. 1(a), H = 20"),
    claims=lambda df: linear_claims(df, compare_pevi=True),
    deviations=LINEAR_DEVIATIONS,
))

FIG1B = register(Experiment(
    id="qiao2023-fig1b",
    paper=PAPER,
    figure="Figure 1(b)",
    description="VAPVI and DP-VAPVI with rho in {0.1, 1, 5, 25} (tight calibration) on the Appendix F linear "
                "MDP, H = 20.",
    settings=_linear_settings([("vapvi", None, "none", "theory")]
                              + [("dp-vapvi", r, "tight", "theory") for r in (0.1, 1.0, 5.0, 25.0)]),
    seeds=_SEEDS,
    run=run_linear,
    run_batch=_batch(run_linear),
    batch_key=batch_key,
    plot=lambda df, out: _plot_linear(df, out, "qiao2023-fig1b", "Fig. 1(b), H = 20"),
    claims=lambda df: linear_claims(df, compare_pevi=False),
    deviations=LINEAR_DEVIATIONS,
))


# --------------------------------------------------------------------------- tabular
def _tabular_settings(scale: str) -> list[dict[str, object]]:
    algs: list[dict[str, object]] = []
    for constants in ("theory", "practical"):
        algs.append({"algorithm": "apvi", "constants": constants, "calibration": "none"})
        algs += [{"algorithm": "dp-apvi", "rho": r, "constants": constants, "calibration": "tight"}
                 for r in (0.1, 1.0, 10.0)]
        algs += [{"algorithm": "dp-apvi", "epsilon": e, "delta": 0.0, "constants": constants, "calibration": "tight"}
                 for e in (1.0, 10.0)]
    return [{"benchmark": b, "n_grid": list(_N_GRID[scale]), **a} for b in ("random", "frozenlake") for a in algs]


def run_tabular(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    bench = str(params["benchmark"])
    mdp, _ = tabular_benchmark(bench)
    rows, est = _fit_grid(params, ctx, "tabular", bench, mdp.rewards, mdp, params["n_grid"], "n")
    for row in rows:
        row["benchmark"] = bench
    return _result(rows, est, params)


def _plot_tabular(df: pd.DataFrame, out: Path) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import new_figure, save_figure

    benches = sorted(df["benchmark"].unique())
    fig, axes = new_figure(ncols=2, nrows=len(benches), width=5.0, height=4.6)
    axes = np.atleast_2d(axes)
    for i, bench in enumerate(benches):
        for j, constants in enumerate(("theory", "practical")):
            part = df[(df["benchmark"] == bench) & (df["constants"] == constants)]
            if len(part):
                _plot_panels(axes[i, j], part, "n", f"{bench}: {constants} constants", logx=True)
                _name_degenerate(axes[i, j], part)
    fig.suptitle("DP-APVI against APVI (tabular). Degenerate: the privacy penalty or noise exceeds H and the fit "
                 "plays the trivial policy (action 0).", fontsize=9)
    return save_figure(fig, out, "qiao2023-tabular")


def _name_degenerate(ax: Axes, part: pd.DataFrame) -> None:
    """Say in the panel's title which curves lie on the trivial policy's line at every n (they overlap
    there): degenerate output, the fit plays the trivial policy (the privacy penalty or noise exceeds H)."""
    gaps = part[part["metric"] == "gap"]
    if gaps.empty or "trivial_gap" not in gaps:
        return
    trivial = float(gaps["trivial_gap"].iloc[0])
    means = gaps.groupby(["label", "n"])["value"].mean()
    stuck = sorted(str(lab).replace(" (practical)", "") for lab, m in means.groupby(level=0)
                   if np.allclose(m.to_numpy(), trivial, atol=1e-9))
    private = {str(lab).replace(" (practical)", "") for lab in gaps["label"].unique() if "DP-" in str(lab)}
    if stuck:
        names = "every DP-APVI curve" if private and set(stuck) >= private else ", ".join(stuck)
        ax.set_title(ax.get_title() + "\n" + textwrap.fill(f"on the trivial line at every n (degenerate): {names}",
                                                            width=70), fontsize=9)


TABULAR = register(Experiment(
    id="qiao2023-tabular",
    paper=PAPER,
    figure="Section 3 (no figure in the paper)",
    description="APVI vs DP-APVI (zCDP rho in {0.1,1,10}, pure eps in {1,10}; theory and practical constants) "
                "on a random MDP and FrozenLake.",
    settings=_tabular_settings,
    seeds=_SEEDS,
    run=run_tabular,
    run_batch=_batch(run_tabular),
    batch_key=batch_key,
    plot=_plot_tabular,
    claims=tabular_claims,
    deviations=TABULAR_DEVIATIONS,
))


# --------------------------------------------------------------------------- frontiers
def _frontier_settings(kind: str) -> Callable[[str], list[dict[str, object]]]:
    private, reference = ("dp-apvi", "apvi") if kind == "tabular" else ("dp-vapvi", "vapvi")

    def settings(scale: str) -> list[dict[str, object]]:
        size = _FRONTIER_SIZE[scale][kind]
        grid = [{"algorithm": private, "calibration": cal, "epsilon": eps, "delta": DELTA_DP, "constants": "practical",
                 "size": size} for cal in CALIBRATIONS for eps in FRONTIER_EPSILONS]
        grid.append({"algorithm": reference, "calibration": "none", "epsilon": math.inf, "delta": DELTA_DP,
                     "constants": "theory", "size": size})
        return grid
    return settings


def run_frontier(params: Mapping[str, Any], ctx: RunContext) -> RunResult:
    size = int(params["size"])
    if str(params["algorithm"]) in ("dp-apvi", "apvi"):
        mdp, _ = tabular_benchmark("random")
        rows, est = _fit_grid(params, ctx, "tabular", "random", mdp.rewards, mdp, [size], "n")
    else:
        instance = INSTANCE_SEED["frontier-offline-linear"]
        mdp = linear_instance(instance)
        rows, est = _fit_grid(params, ctx, "linear", instance, mdp.features, mdp, [size], "K")
    budget = getattr(est, "budget", None)
    for row in rows:
        row["noise_std"] = _noise_std_max(est) if budget is not None and budget.is_private else 0.0
    return _result(rows, est, params)


def _plot_frontier(df: pd.DataFrame, out: Path, name: str, title: str) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import new_figure, save_figure

    fig, ax = new_figure(width=5.2, height=3.6)
    gaps = df[df["metric"] == "gap"]
    for cal in CALIBRATIONS:
        part = gaps[gaps["calibration"] == cal]
        if part.empty:
            continue
        stats = part.groupby("epsilon")["value"].agg(["mean", "std", "count"]).reset_index()
        se = stats["std"].fillna(0.0) / np.sqrt(stats["count"])
        calibration_curve(ax, cal, stats["epsilon"], stats["mean"], se)
    ref = gaps[gaps["calibration"] == "none"]
    levels = []
    if len(ref):
        levels.append(float(ref["value"].mean()))
        ax.axhline(levels[-1], color="black", linestyle="--", label=f"non-private {ref['label'].iloc[0]}")
    if len(gaps):
        levels.append(float(gaps["trivial_gap"].iloc[0]))
        ax.axhline(levels[-1], color="grey", linestyle=":", linewidth=1.5,
                   label=f"trivial policy (action 0): gap {levels[-1]:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-3)     # gaps span 0 (optimal) to the trivial policy's
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("ε (δ = 1e-5)")
    ax.set_ylabel("sub-optimality gap (symlog; lower is better)")
    ax.set_title(title, fontsize=9)
    finish_frontier(fig, ax, levels)
    return save_figure(fig, out, name)


FRONTIER_TABULAR = register(Experiment(
    id="frontier-offline-tabular",
    paper=PAPER,
    figure="Privacy–utility frontier",
    description="DP-APVI (practical constants) on the random tabular MDP, n = 1e5: gap against epsilon "
                "(delta = 1e-5) under paper / sound / tight calibration, APVI on the same data.",
    settings=_frontier_settings("tabular"),
    seeds=_SEEDS,
    run=run_frontier,
    plot=lambda df, out: _plot_frontier(df, out, "frontier-offline-tabular", "DP-APVI frontier (random MDP)"),
    claims=frontier_claims,
    deviations=("Practical constants (C1 = 0.5, C2 = 0, threshold E/2; chosen on held-out random MDPs). "
                "The paper calibration converts (ε, δ) to ρ by Lemma E.15 (Bun–Steinke) as printed.",),
))

FRONTIER_LINEAR = register(Experiment(
    id="frontier-offline-linear",
    paper=PAPER,
    figure="Privacy–utility frontier",
    description="DP-VAPVI (practical constants) on the Appendix F linear MDP, K = 1e4: gap against epsilon "
                "(delta = 1e-5) under paper / sound / tight calibration, VAPVI on the same data.",
    settings=_frontier_settings("linear"),
    seeds=_SEEDS,
    run=run_frontier,
    plot=lambda df, out: _plot_frontier(df, out, "frontier-offline-linear", "DP-VAPVI frontier (Appendix F MDP)"),
    claims=frontier_claims,
    deviations=("Practical constants (chosen on held-out instances, docs/offline.md). The paper calibration "
                "converts (ε, δ) to ρ by Lemma E.15 and uses the add/remove matrix noise: its ledger records "
                "the true replace-one spend, above the target ε (labelled).",),
))

register_frontier(Frontier("DP-APVI", FRONTIER_TABULAR.id, "gap", lower_is_better=True,
                           description="DP-APVI on the random tabular MDP (n = 1e5), practical constants"))
register_frontier(Frontier("DP-VAPVI", FRONTIER_LINEAR.id, "gap", lower_is_better=True,
                           description="DP-VAPVI on the Appendix F linear MDP (K = 1e4), practical constants"))
