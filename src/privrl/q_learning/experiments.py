"""Figures 1 and 2 of Wang & Hegde (2019) and the DP Q-learning frontier, on CenterWalk.

* ``wang2019-fig1``: noise level sigma in {0, 0.2, ..., 1.0} x noise-reset schedule (every update =
  J = T/B, every episode, never = J = 1), in both training configurations (``paper``: Algorithm 1
  literally; ``reference``: the authors' released code, spec §5.2). sigma is set directly, beta = 1
  as in the authors' code: these runs claim no ε. The legend gives the ε each sigma buys for
  Algorithm 1's release structure (T = 5000, B = 64, alpha = 3e-4, L = 4, δ = 1e-4): as the paper's
  printed calibration claims it, and as the tight analysis certifies it at the runs' beta = 1.
* ``wang2019-fig2a`` (ε = 0.9) / ``wang2019-fig2b`` (ε = 0.45), δ = 1e-4: functional noise, input
  perturbation, DP-SGD (q = 1) and the Balle-style policy-evaluation baseline (labelled "not DP
  under the reward-function model"), under paper and tight calibration (functional noise also
  sound). In the ``paper`` configuration the functional-noise run is the estimator itself (its
  ledger: certified, or — paper calibration — the true spend, uncertified); in the ``reference``
  configuration (RMSprop, replay, one update per step) the calibrated (sigma, beta) of Algorithm 1
  at the same T are used but the proof does not cover the loop, so the run claims no ε. A
  calibration that cannot certify is recorded as refused (``extra["refused"]``) and named in the
  figure.
* ``frontier-q-learning``: DPQLearning (Algorithm 1's loop) against ε (δ = 1e-4) under paper /
  sound / tight calibration, with non-private Q-learning in the same loop; metric: the mean return
  of the last half of the training episodes.

Metric of the figures: the undiscounted return of every training episode (50 samples), ``step`` =
samples seen. Bands: mean ± 1 standard deviation over seeds, as in the paper.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from privrl.errors import CertificationError, PrivacyLeakWarning, UtilityWarning
from privrl.experiments.frontier import Frontier, plot_frontier, register_frontier
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.privacy import PrivacyBudget
from privrl.q_learning.balle import BalleQLearning
from privrl.q_learning.calibration import paper_epsilon_for_sigma, tight_epsilon_for_sigma
from privrl.q_learning.claims import (
    AUTHORS_CODE,
    AUTHORS_SEEDS,
    DELTA,
    E3,
    FRONTIER_EPSILONS,
    LABELS,
    RANDOM_LABEL,
    RANDOM_RETURN,
    claims_fig1,
    claims_fig2,
    frontier_claims,
    functional_calibration,
    second_half,
)
from privrl.q_learning.estimators import (
    DPQLearning,
    DPSGDQLearning,
    InputPerturbationQLearning,
    QLearning,
    _Fit,
)
from privrl.q_learning.seeds import SCALE_SEEDS, fig1_seeds, fig2_seeds, most_seeds

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from privrl.base import Estimator

__all__ = ["run", "run_batch", "batch_key", "run_frontier", "run_frontier_batch", "fig1_settings", "fig2_settings",
           "frontier_settings", "figure_fig1",
           "figure_fig2", "claims_fig1", "claims_fig2", "frontier_claims", "EXPERIMENTS", "FRONTIER"]

SIGMAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
RESETS = ("iteration", "episode", "never")
ALGORITHMS = ("functional", "input_perturbation", "dpsgd", "balle")
N_SAMPLES = {"smoke": 150, "quick": 1000, "paper": 5000}
_HIDDEN = {"smoke": [8], "quick": [16, 16], "paper": [16, 16]}
_LINESTYLE = {"paper": "--", "sound": ":", "tight": "-"}
def _fig2_calibrations(algo: str, config: str) -> tuple[str, ...]:
    if algo == "balle":
        return ("sound",)          # DP-LSW's own calibration: one curve
    if algo == "functional":
        # the reference loop is never certified: its sound and tight curves would both be
        # noise far above the rewards; the tight one stands for them
        return ("paper", "sound", "tight") if config == "paper" else ("paper", "tight")
    return ("paper", "tight")      # sound = tight for the baselines (already exact)


def fig1_settings(scale: str) -> list[dict[str, object]]:
    n, hidden = N_SAMPLES[scale], _HIDDEN[scale]
    configs = ("reference", "paper") if scale == "paper" else ("reference",)
    sigmas = {"smoke": (0.0, 0.4), "quick": (0.0, 0.4, 1.0), "paper": SIGMAS}[scale]
    resets = {"smoke": ("iteration",), "quick": ("iteration", "never"), "paper": RESETS}[scale]
    out: list[dict[str, object]] = []
    for config in configs:
        for sigma in sigmas:
            for reset in (("iteration",) if sigma == 0 else resets):
                out.append({"algorithm": "functional" if sigma else "non_private", "config": config,
                            "sigma": sigma, "beta": 1.0, "reset": reset, "n_samples": n, "hidden": list(hidden),
                            "calibration": "none"})
    return out


def fig2_settings(epsilon: float) -> Callable[[str], list[dict[str, object]]]:
    def settings(scale: str) -> list[dict[str, object]]:
        n, hidden = N_SAMPLES[scale], _HIDDEN[scale]
        configs = ("reference",) if scale == "smoke" else ("reference", "paper")
        algos = ("functional", "input_perturbation") if scale == "smoke" else ALGORITHMS
        out: list[dict[str, object]] = []
        for config in configs:
            out.append({"algorithm": "non_private", "config": config, "epsilon": epsilon, "n_samples": n,
                        "hidden": list(hidden), "calibration": "none"})
            for algo in algos:
                for cal in _fig2_calibrations(algo, config):
                    out.append({"algorithm": algo, "config": config, "epsilon": epsilon, "n_samples": n,
                                "hidden": list(hidden), "calibration": cal})
        return out
    return settings


def _refused(algo: str, calibration: str, exc: Exception, **keys: object) -> RunResult:
    return RunResult.from_estimator(
        DPQLearning, [{"metric": "certification_refused", "value": 1.0, "algorithm": algo,
                       "label": f"{LABELS[algo]} [{calibration}, refused]", "calibration": calibration, **keys}],
        claim=False, calibration=calibration, extra={"refused": True, "reason": str(exc), "certified": False})


def _label(algo: str, calibration: str, certified: bool) -> str:
    if algo in ("non_private", "balle") or calibration == "none":
        return LABELS[algo]
    text = LABELS[algo] if calibration == "paper" else f"{LABELS[algo]} [{calibration}]"
    return text if certified else text + " [uncertified]"


class _Job:
    """One run of a batch: its estimator, its fit up to the training run (``fit``, trained with the
    others of the batch) or its result already (a refused calibration, the Balle baseline), and
    the warnings recorded so far."""

    def __init__(self, params: Mapping[str, Any], ctx: RunContext, finish: Callable[[_Job], RunResult]) -> None:
        self.params, self.ctx, self.finish = params, ctx, finish
        self.est: Any = None
        self.fit: _Fit | None = None
        self.result: RunResult | None = None
        self.caught: list[warnings.WarningMessage] = []
        self.extra: dict[str, object] = {}
        self.budget: PrivacyBudget | None = None


@contextlib.contextmanager
def _warnings_of(job: _Job, quiet: bool) -> Iterator[None]:
    """The UtilityWarnings and PrivacyLeakWarnings of a run: recorded in ``job.caught`` (Figures:
    named in the results) or silenced (frontier)."""
    with warnings.catch_warnings(record=True) as caught:
        action: Literal["ignore", "always"] = "ignore" if quiet else "always"
        warnings.simplefilter(action, UtilityWarning)
        warnings.simplefilter(action, PrivacyLeakWarning)
        try:
            yield
        finally:
            job.caught += caught


def _start(job: _Job, build: Callable[[_Job], Estimator], quiet: bool) -> _Job:
    """Build the run's estimator (``build(job)``) and start its fit; a calibration that refuses to
    certify is the run's result, and a learner outside the lockstep loop (the Balle baseline) is
    fitted at once."""
    with _warnings_of(job, quiet):
        try:
            job.est = build(job)
            if hasattr(job.est, "_start"):
                job.fit = job.est._start(None, job.ctx.rng)
            else:
                job.est.fit(rng=job.ctx.rng)
                job.result = job.finish(job)
        except CertificationError as exc:
            job.result = _refused("functional", str(job.params.get("calibration")), exc,
                                  epsilon=float(job.params["epsilon"]))
            if quiet:
                job.result.rows[0].pop("label")
    return job


def _lockstep(jobs: list[_Job], quiet: bool) -> list[RunResult]:
    """Train the started fits of ``jobs`` together (:func:`~privrl.q_learning.training.train_many`),
    then finish every fit and build its result, each with its own warnings."""
    from privrl.q_learning.training import train_many

    started = [(j, j.fit) for j in jobs if j.fit is not None]
    for (job, fit), res in zip(started, train_many([fit.run for _, fit in started])):
        with _warnings_of(job, quiet):
            fit.finish(res)
        job.result = job.finish(job)
    return [j.result for j in jobs]  # type: ignore[misc]


def _figure_estimator(job: _Job) -> Estimator:
    params = job.params
    algo, config = params["algorithm"], params["config"]
    calibration = str(params.get("calibration", "tight"))
    n = int(params["n_samples"])
    common = dict(config=config, n_samples=n, hidden=tuple(params["hidden"]))
    budget = None
    if "epsilon" in params and algo != "non_private":
        budget = PrivacyBudget(epsilon=float(params["epsilon"]), delta=DELTA)
    job.budget = budget
    if algo == "non_private":
        return QLearning(**common)
    if algo == "functional" and budget is None:        # Figure 1: sigma given, no ε claimed
        return DPQLearning(budget=None, noise_std=float(params["sigma"]), kernel_beta=float(params["beta"]),
                           reset=params["reset"], **common)
    if budget is None:  # pragma: no cover - settings are fixed
        raise ValueError(f"{algo!r} runs need an epsilon")
    if algo == "functional":
        cal = functional_calibration(float(params["epsilon"]), calibration, n)
        job.extra.update(sigma=cal.sigma, beta=cal.beta, kappa=cal.kappa)
        if config == "paper":       # the estimator itself: its ledger decides
            return DPQLearning(budget=budget, calibration=calibration, reset="iteration", **common)
        # reference loop: the same (sigma, beta), no ε claimed
        return DPQLearning(budget=None, noise_std=cal.sigma, kernel_beta=cal.beta, reset="iteration", **common)
    if algo == "input_perturbation":
        return InputPerturbationQLearning(budget=budget, calibration=calibration, **common)
    if algo == "dpsgd":
        return DPSGDQLearning(budget=budget, calibration=calibration, **common)
    if algo == "balle":
        return BalleQLearning(budget=budget, calibration=calibration, n_samples=n, n_rounds=max(1, n // 500))
    raise ValueError(f"unknown algorithm {algo!r}")  # pragma: no cover - settings are fixed


def _figure_result(job: _Job) -> RunResult:
    params, est, budget = job.params, job.est, job.budget
    algo, config = params["algorithm"], params["config"]
    calibration = str(params.get("calibration", "tight"))
    certified = bool(getattr(est, "certified_", False)) and algo != "balle"
    noise = float(getattr(est, "noise_std_", 0.0) or 0.0)
    warned = sorted({str(w.message).split(":")[1].strip().split(" ")[0] for w in job.caught
                     if issubclass(w.category, (UtilityWarning, PrivacyLeakWarning)) and ":" in str(w.message)})
    label = _label(algo, calibration, certified or algo == "balle" or budget is None)
    rows = [{"step": 50 * (i + 1), "metric": "return", "value": float(r), "algorithm": algo, "label": label,
             "certified": certified, "noise_std": noise} for i, r in enumerate(est.returns_)]
    # the ledger of every run that claims an ε: certified runs and the paper calibration's true spend
    claims_eps = budget is not None and budget.is_private and algo != "balle" and (
        algo != "functional" or config == "paper")
    return RunResult.from_estimator(est, rows, claim=claims_eps, calibration=calibration,
                                    extra={**job.extra, "certified": certified, "noise_std": noise,
                                           **({"warnings": warned} if warned else {})})


def batch_key(params: Mapping[str, Any], seed: int) -> tuple:
    """Runs with equal keys go to one :func:`run_batch` call (all seeds): one training loop
    (configuration, reset schedule, TD or DP-SGD updates, T, network), so the lockstep batch shares
    everything but the runs' own streams; the Balle baseline (no Q-learning loop) on its own."""
    algo = params["algorithm"]
    kind = algo if algo in ("dpsgd", "balle") else "td"
    return (params.get("config", "paper"), params.get("reset", "iteration"), kind, int(params["n_samples"]),
            tuple(params["hidden"]))


def run_batch(params_list: Sequence[Mapping[str, object]], ctxs: Sequence[RunContext]) -> list[RunResult]:
    """Figure runs together: each estimator built as for one run and trained in lockstep with the
    others (:func:`~privrl.q_learning.training.train_many`: stacked networks, one OU batch, one
    CenterWalk batch), each on its own streams; each result is exactly :func:`run`'s."""
    jobs = [_start(_Job(params, ctx, _figure_result), _figure_estimator, quiet=False)
            for params, ctx in zip(params_list, ctxs)]
    return _lockstep(jobs, quiet=False)


def run(params: Mapping[str, object], ctx: RunContext) -> RunResult:
    return run_batch([params], [ctx])[0]


# ------------------------------------------------------------------------------------ plots
def _legend_outside(ax: Axes) -> None:
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


@functools.lru_cache(maxsize=16)
def sigma_epsilons(sigma: float) -> tuple[float, float]:
    """(ε the paper's printed calibration claims for ``sigma``, ε the tight analysis certifies at
    beta = 1) for Algorithm 1 at T = 5000, δ = 1e-4 (Figure 1's legend)."""
    paper = paper_epsilon_for_sigma(sigma, DELTA, n_samples=5000, **E3)
    tight = tight_epsilon_for_sigma(sigma, DELTA, n_releases=math.ceil(5000 / E3["batch_size"]),
                                    learning_rate=E3["learning_rate"], lipschitz=E3["lipschitz"], beta=1.0)
    return paper, tight


def _random_line(ax: Axes) -> None:
    ax.axhline(RANDOM_RETURN, color="grey", linestyle="-.", linewidth=1, label=RANDOM_LABEL)


def figure_fig1(df: pd.DataFrame) -> Figure:
    """The Figure 1 panels, one row per configuration, not yet saved: the learning curves with a
    fresh path per update (J = T/B, the paper's recommendation), and the mean return of the second
    half of training against sigma for every reset schedule (with the authors' released code in
    the reference configuration). Random play is drawn as the reference the verdicts use."""
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import curve_colors, mean_se_band, new_figure

    returns = df[df["metric"] == "return"]
    configs = sorted(returns["config"].unique())
    fig, axes = new_figure(ncols=2, nrows=len(configs), squeeze=False, width=6.0, height=3.9)
    sigmas = sorted(returns["sigma"].unique())
    colors = curve_colors([f"sigma = {s:g}" for s in sigmas])
    styles = {"iteration": "-", "episode": "--", "never": ":"}
    names = {"iteration": "fresh path per update (J = T/B)", "episode": "reset every episode",
             "never": "never reset (J = 1)"}
    for row, config in zip(axes, configs):
        sub = returns[returns["config"] == config]
        ax = row[0]
        for sigma, curve in sub[(sub["reset"] == "iteration") | (sub["sigma"] == 0)].groupby("sigma", sort=True):
            if sigma == 0:
                label = "sigma = 0 (non-private)"
            else:
                pe, te = sigma_epsilons(float(sigma))
                label = f"sigma = {sigma:g} (ε paper {pe:.2g}, tight {te:.2g})"
            mean_se_band(ax, curve, "step", label=label, band="std", calibration=None,
                         color=colors[f"sigma = {sigma:g}"])
        _random_line(ax)
        ax.set(xlabel="samples", ylabel="return (50 steps)")
        ax.set_title(f"Fig. 1, {config} config: fresh path per update (J = T/B)\n(beta = 1, no ε claimed; legend ε: "
                     "Alg. 1 at T = 5000, δ = 1e-4)", fontsize=8)
        _legend_outside(ax)
        ax = row[1]
        for reset in RESETS:
            part = sub[(sub["reset"] == reset) | (sub["sigma"] == 0)]
            finals = {s: second_half(part[part["sigma"] == s]) for s in sorted(part["sigma"].unique())}
            finals = {s: v for s, v in finals.items() if len(v)}
            if not finals or not (sub["reset"] == reset).any():
                continue
            xs = list(finals)
            means = [float(v.mean()) for v in finals.values()]
            ses = [float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0 for v in finals.values()]
            lo, hi = min(len(v) for v in finals.values()), max(len(v) for v in finals.values())
            ax.errorbar(xs, means, yerr=ses, marker="o", capsize=3, linestyle=styles[reset],
                        label=f"{names[reset]} (mean ± 1 s.e., {lo if lo == hi else f'{lo}–{hi}'} seeds)")
        if config == "reference":
            ax.plot(list(AUTHORS_CODE), list(AUTHORS_CODE.values()), "kx", markersize=8, mew=2,
                    label=f"authors' released code, reset every episode ({AUTHORS_SEEDS} seeds)")
        _random_line(ax)
        ax.set(xlabel="sigma", ylabel="mean return, second half of training")
        ax.set_title(f"Fig. 1, {config} config: return of the second half (episodes 51–100 at T = 5000) vs sigma",
                     fontsize=8)
        _legend_outside(ax)
    return fig


def plot_fig1(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import save_figure

    return save_figure(figure_fig1(df), out_dir, "wang2019-fig1")


def figure_fig2(df: pd.DataFrame, epsilon: float, panel: str) -> Figure:
    """The Figure 2(a)/(b) panels (one per configuration), not yet saved; refused curves are named."""
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import curve_colors, mean_se_band, new_figure

    returns = df[df["metric"] == "return"]
    refused = df[df["metric"] == "certification_refused"]
    configs = sorted(set(returns["config"].unique()) | set(refused["config"].unique()))
    fig, axes = new_figure(ncols=len(configs), squeeze=False, width=6.4)
    colors = curve_colors([LABELS[a] for a in ("non_private", *ALGORITHMS)])
    for ax, config in zip(axes[0], configs):
        sub = returns[returns["config"] == config]
        n = int(sub["n_samples"].max()) if len(sub) else N_SAMPLES["paper"]
        for (algo, cal), curve in sub.groupby(["algorithm", "calibration"], sort=True):
            label = str(curve["label"].iloc[0])
            mean_se_band(ax, curve, "step", label=label, band="std", calibration=cal, alpha=0.07,
                         color=colors[LABELS[algo]], linestyle=_LINESTYLE.get(cal, "-"), linewidth=1.4)
        _random_line(ax)
        gone = refused[refused["config"] == config]
        if len(gone):      # below the axes, off the data
            names = sorted({str(lab).replace(", refused]", "]") for lab in gone["label"]})
            ax.text(0.0, -0.16, "not drawn — calibration refuses to certify: " + "; ".join(names),
                    transform=ax.transAxes, fontsize=7, va="top", color="0.25", wrap=True)
        ax.set_xlabel("samples")
        ax.set_ylabel("return (50 steps)")
        ax.set_title(f"Fig. 2({panel}): ε = {epsilon:g}, δ = 1e-4 — {config} config, T = {n} samples",
                     fontsize=8)
        _legend_outside(ax)
    return fig


def _plot_fig2(name: str, epsilon: float, panel: str) -> Callable[[pd.DataFrame, Path], list[Path]]:
    def plot(df: pd.DataFrame, out_dir: Path) -> list[Path]:
        # here, not at the top: matplotlib loads only when a figure is drawn
        from privrl.experiments.plots import save_figure

        return save_figure(figure_fig2(df, epsilon, panel), out_dir, name)
    return plot


def _deviations(scale: str) -> tuple[str, ...]:
    n = N_SAMPLES.get(scale, 5000)
    out = [f"T = {n} samples per run at {scale} scale (the paper: 5000); every calibration quoted is for T = {n}."]
    if scale != "paper":
        out.append(f"At {scale} scale only the reference configuration is run in Figure 1 and the grid of sigma "
                   "and resets is reduced.")
    return tuple(out)


_DEVIATIONS = (
    "sigma and J are set directly in Figure 1 (the paper does not list them); beta = 1 as in the authors' code. "
    "The legend's ε is what each sigma buys for Algorithm 1's release structure (paper: the printed formula; "
    "tight: the corrected chain at beta = 1); the runs claim none.",
    "Functional-noise runs in the reference configuration (RMSprop, replay, target network) use Algorithm 1's "
    "calibrated (sigma, beta) but are not covered by Theorem 5's proof: they claim no ε ([uncertified]); their "
    "sound curve is omitted (sound and tight sigma are both far above the rewards there).",
    "Paper calibration reproduces App. E.3 (sigma = 0.3132 at ε = 0.9; 0.6038 at ε = 0.45, where the paper "
    "used 0.74). Its side condition fails and its sensitivity C is not the proof's: the ledger records the true "
    "spend (ε in the thousands), so the curve is marked [uncertified].",
    "Tight calibration: the corrected sensitivity chain with (k, beta, sigma) and the delta split chosen jointly "
    "(docs/q_learning.md); it certifies at ε = 0.9 with sigma ~1.2e3 and refuses at ε = 0.45, like the sound "
    "closed form (sigma ~2e4 at 0.9).",
    "Input perturbation and DP-SGD: tight = exact Gaussian composition of their releases (today's sound "
    "calibration was already exact, so no separate sound curve). DP-SGD's paper calibration assumes "
    "sensitivity B clip; its ledger records the true 2 B clip (uncertified).",
    "Bands are ± 1 standard deviation over seeds, as in the paper.",
    "Noise resets in the reference config happen after every update ('iteration'), every episode or never.",
    "The comparison with the authors' released code (wangbx66/differentially-private-q-learning on GitHub, commit "
    "db658cc) uses their code's returns as benchmarks/authors_code.py logs them (5 seeds, mean return over episodes "
    "51-100, noise reset every episode, beta = 1; Welch t on the two sets of seeds). privrl's reference "
    "configuration runs on the same reset schedule.",
    "Every comparison leaves out a curve no better than uniform random play (10.86): beating or matching a learner "
    "that does not learn says nothing.",
)

EXPERIMENTS = [
    register(Experiment(
        id="wang2019-fig1", paper="Wang & Hegde 2019", figure="Figure 1",
        description="DP Q-learning with functional noise: return vs samples for noise levels and resets.",
        settings=fig1_settings, seeds=most_seeds(fig1_seeds, fig1_settings), setting_seeds=fig1_seeds, run=run,
        run_batch=run_batch, batch_key=batch_key, plot=plot_fig1,
        claims=claims_fig1,
        deviations=_DEVIATIONS, scale_deviations=_deviations, curve_x=("n_samples",))),
    register(Experiment(
        id="wang2019-fig2a", paper="Wang & Hegde 2019", figure="Figure 2(a)",
        description="Functional noise vs input perturbation, DP-SGD and Balle et al. at ε = 0.9.",
        settings=fig2_settings(0.9), seeds=most_seeds(fig2_seeds(0.9), fig2_settings(0.9)),
        setting_seeds=fig2_seeds(0.9), run=run, run_batch=run_batch, batch_key=batch_key,
        plot=_plot_fig2("wang2019-fig2a", 0.9, "a"),
        claims=claims_fig2(0.9), deviations=_DEVIATIONS, scale_deviations=_deviations, curve_x=("n_samples",))),
    register(Experiment(
        id="wang2019-fig2b", paper="Wang & Hegde 2019", figure="Figure 2(b)",
        description="Functional noise vs input perturbation, DP-SGD and Balle et al. at ε = 0.45.",
        settings=fig2_settings(0.45), seeds=most_seeds(fig2_seeds(0.45), fig2_settings(0.45)),
        setting_seeds=fig2_seeds(0.45), run=run, run_batch=run_batch, batch_key=batch_key,
        plot=_plot_fig2("wang2019-fig2b", 0.45, "b"),
        claims=claims_fig2(0.45), deviations=_DEVIATIONS, scale_deviations=_deviations, curve_x=("n_samples",))),
]


# ------------------------------------------------------------------------------------ frontier
def frontier_settings(scale: str) -> list[dict[str, object]]:
    n = N_SAMPLES[scale]
    epsilons = (0.9, 20.0) if scale == "smoke" else FRONTIER_EPSILONS
    common = {"n_samples": n, "hidden": _HIDDEN[scale], "env": "privrl/CenterWalk-v0"}
    grid = [{"algorithm": "dp-q-learning", "calibration": cal, "epsilon": e, **common}
            for cal in ("paper", "sound", "tight") for e in epsilons]
    grid.append({"algorithm": "q-learning", "calibration": "none", "epsilon": math.inf, **common})
    return grid


def _frontier_estimator(job: _Job) -> Estimator:
    params = job.params
    cal, eps = str(params["calibration"]), float(params["epsilon"])
    common = dict(config="paper", n_samples=int(params["n_samples"]), hidden=tuple(params["hidden"]),
                  env=params.get("env", "privrl/CenterWalk-v0"))
    if cal == "none":
        return QLearning(**common)
    job.budget = PrivacyBudget(epsilon=eps, delta=DELTA)
    return DPQLearning(budget=job.budget, calibration=cal, **common)


def _frontier_result(job: _Job) -> RunResult:
    params, est, budget = job.params, job.est, job.budget
    cal, eps = str(params["calibration"]), float(params["epsilon"])
    returns = est.returns_
    value = float(np.mean(returns[len(returns) // 2:])) if len(returns) else math.nan
    noise = float(getattr(est, "noise_std_", 0.0))
    certified = bool(getattr(est, "certified_", False))
    row = {"metric": "return", "value": value, "noise_std": noise, "certified": certified, "calibration": cal,
           "epsilon": eps}
    return RunResult.from_estimator(est, [row], claim=budget is not None, calibration=cal,
                                    extra={"certified": certified, "noise_std": noise})


def run_frontier_batch(params_list: Sequence[Mapping[str, object]], ctxs: Sequence[RunContext]) -> list[RunResult]:
    """Frontier runs together (as :func:`run_batch`); each result is exactly :func:`run_frontier`'s."""
    jobs = [_start(_Job(params, ctx, _frontier_result), _frontier_estimator, quiet=True)
            for params, ctx in zip(params_list, ctxs)]
    return _lockstep(jobs, quiet=True)


def run_frontier(params: Mapping[str, object], ctx: RunContext) -> RunResult:
    return run_frontier_batch([params], [ctx])[0]


def plot_frontier_q(df: pd.DataFrame, out_dir: Path) -> list[Path]:
    refused = df[df["metric"] == "certification_refused"] if len(df) else df
    title = (f"DP Q-learning (Alg. 1, CenterWalk, δ = 1e-4): mean return of the last half\n"
             f"(uniform random play: {RANDOM_RETURN})")
    if len(refused):
        gone = sorted({f"{c} at ε = {e:g}" for c, e in zip(refused["calibration"], refused["epsilon"])})
        title += "\nrefused (not drawn): " + ", ".join(gone)
    return plot_frontier(df, out_dir, FRONTIER_SPEC, title=title, references=[(RANDOM_RETURN, RANDOM_LABEL)])


FRONTIER = register(Experiment(
    id="frontier-q-learning", paper="Wang & Hegde 2019", figure="Privacy–utility frontier",
    description="DPQLearning (Algorithm 1's loop) on CenterWalk: mean return of the last half vs ε (δ = 1e-4) "
                "under paper / sound / tight calibration, with non-private Q-learning in the same loop.",
    settings=frontier_settings, seeds=SCALE_SEEDS, run=run_frontier, run_batch=run_frontier_batch,
    batch_key=lambda params, seed: ("frontier", int(params["n_samples"]), tuple(params["hidden"])),
    plot=plot_frontier_q, claims=frontier_claims,
    deviations=("Algorithm 1's loop (App. E.3: plain SGD, 79 updates of B = 64 at alpha = 3e-4) is the only one "
                "the analysis covers; it learns little even without noise (docs/q_learning.md).",
                "The paper calibration claims the grid's ε; its ledger records the true spend (uncertified, in the "
                "thousands and more), and the figure draws it at the ε it spends."),
    scale_deviations=lambda scale: (f"T = {N_SAMPLES.get(scale, 5000)} samples at {scale} scale.",),
))
FRONTIER_SPEC = register_frontier(Frontier("dp-q-learning", FRONTIER.id, "return", lower_is_better=False,
                                           env_key="env", description="DPQLearning on CenterWalk (Algorithm 1's "
                                           "loop), mean return of the last half"))
