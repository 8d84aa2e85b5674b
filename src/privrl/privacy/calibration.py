"""Calibration: from a target budget to a noise scale, by root finding over the accountant, and the
zCDP ↔ (ε, δ) conversions.

Calibration never overshoots: the returned noise multiplier's ε (under the chosen accountant) is
at most the target. We bisect on the noise multiplier and always keep the feasible end of the
bracket (every returned value was itself checked with a fresh accountant), to a relative tolerance
of 1e-5 (Gaussian) / 5e-5 (Laplace) on the multiplier.

Tight calibration of Gaussian compositions (ARCHITECTURE.md §1.3). Releases i = 1..k with
ℓ2-sensitivities Δ_i and stds σ_i (each made n_i times) compose to *one* Gaussian mechanism with

    μ = √(Σ_i n_i Δ_i² / σ_i²)                      (Dong, Roth & Su 2022, Cor. 3.3)

so a whole algorithm is calibrated by choosing μ: for an (ε, δ) target the largest μ whose exact
Gaussian curve (Balle & Wang 2018, Thm. 8) meets it (:func:`gaussian_mu`, never a zCDP
conversion), for a ρ target μ = √(2ρ) exactly. How μ is split across streams is free;
:func:`split_gaussian_streams` chooses the split minimising Σ_i w_i σ_i, an error bound linear in
the noise stds (weights w_i from the algorithm's analysis): the Lagrange conditions
w_i = 2λ n_i Δ_i² / σ_i³ give σ_i ∝ (n_i Δ_i² / w_i)^{1/3}.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._search import bisect_boundary
from privrl._validation import check_option, check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.accounting import (
    Ledger,
    epsilon_of,
    gaussian_delta,
    gaussian_epsilon,
    make_accountant,
)
from privrl.privacy.budget import PrivacyBudget, reporting_delta

# relative bisection tolerance on the noise multiplier: the result is feasible and within this of
# the smallest feasible multiplier (PLD's own discretisation error is ~1e-4 in ε)
_REL_TOL = {"gaussian": 1e-5, "laplace": 5e-5}

__all__ = ["calibrate_gaussian", "calibrate_laplace", "zcdp_to_approx_dp", "approx_dp_to_zcdp",
           "gaussian_sigma_for_zcdp", "gaussian_epsilon", "gaussian_multiplier", "gaussian_mu",
           "split_gaussian_streams", "calibration_table", "CALIBRATIONS", "CONSTANT_PRESETS"]

#: The calibration switch of every private estimator (one name, ``calibration``): ``"tight"`` —
#: calibrated to the target with an exact accountant over the algorithm's actual releases (the
#: default); ``"sound"`` — the corrected closed forms of the papers; ``"paper"`` — as printed,
#: labelled as such everywhere.
CALIBRATIONS = ("tight", "sound", "paper")
#: The utility presets of every estimator (one name, ``constants``): ``"theory"`` — the paper's
#: constants; ``"practical"`` — values chosen once on held-out instances (see each family's docs).
#: Privacy never depends on them.
CONSTANT_PRESETS = ("theory", "practical")

# relative slack that keeps exact Gaussian calibration strictly inside the target (float safety)
_EXACT_SLACK = 1e-9


def gaussian_multiplier(epsilon: float, delta: float) -> float:
    """The smallest multiplier σ/Δ (to 1e-10 relative) whose exact Gaussian curve gives
    (ε(1 − 1e-9), δ)-DP: one Gaussian release, or a whole Gaussian composition with μ = Δ/σ.
    Answers at once for any ε > 0 (no PLD is built)."""
    if math.isinf(epsilon):
        return 0.0
    target = epsilon * (1.0 - _EXACT_SLACK)

    def ok(nm: float) -> bool:
        return gaussian_delta(nm, target) <= delta

    # σ ≈ √(2 ln(1.25/δ))/ε for small ε and ≈ 1/√(2ε) for large ε bracket the root generously
    hi = max(math.sqrt(2.0 * math.log(1.25 / delta)) / target, 1.0 / math.sqrt(target), 1e-12)
    while not ok(hi):
        hi *= 2.0
    lo = hi / 2.0
    while ok(lo) and lo > 0:
        hi, lo = lo, lo / 2.0
    return bisect_boundary(ok, hi, lo, rel_tol=1e-10)


def gaussian_mu(budget: Any) -> float:
    """The largest μ = Δ/σ_eff such that a Gaussian composition with that μ meets ``budget``:
    √(2ρ) for a ρ-zCDP budget (exact), 1/:func:`gaussian_multiplier` (ε, δ) for an (ε, δ) budget
    (exact analytic Gaussian); ∞ for an infinite budget."""
    if not budget.is_private:
        return math.inf
    if budget.rho is not None:
        return math.sqrt(2.0 * budget.rho)
    if not budget.delta:
        raise param_error("budget", "gaussian_mu", "an (epsilon, delta) budget with delta > 0 or a rho budget "
                          "(the Gaussian mechanism is not pure DP)", budget)
    return 1.0 / gaussian_multiplier(float(budget.epsilon), float(budget.delta))


def split_gaussian_streams(mu: float, sensitivities: ArrayLike, *, weights: ArrayLike | None = None,
                           counts: ArrayLike | None = None) -> np.ndarray:
    """Noise stds σ_i of k Gaussian streams whose composition has exactly ``mu``:
    Σ_i n_i Δ_i²/σ_i² = μ², split to minimise Σ_i w_i σ_i (module docstring):
    σ_i = (n_i Δ_i²/w_i)^{1/3} · (Σ_j (n_j Δ_j² w_j²)^{1/3})^{1/2} / μ.

    Equal weights give σ_i ∝ Δ_i^{2/3}; a stream with Δ_i = 0 gets σ_i = 0 (it reads no data).
    ``mu = inf`` (non-private) gives zeros."""
    owner = "split_gaussian_streams"
    sens = np.asarray(sensitivities, dtype=float)
    w = np.ones_like(sens) if weights is None else np.asarray(weights, dtype=float)
    n = np.ones_like(sens) if counts is None else np.asarray(counts, dtype=float)
    if sens.ndim != 1 or sens.size == 0 or np.any(sens < 0) or not np.all(np.isfinite(sens)):
        raise param_error("sensitivities", owner, "a non-empty 1-d sequence of finite floats >= 0", sensitivities)
    if w.shape != sens.shape or np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise param_error("weights", owner, "positive finite floats, one per stream", weights)
    if n.shape != sens.shape or np.any(n < 0):
        raise param_error("counts", owner, "non-negative counts, one per stream", counts)
    mu = check_scalar(mu, "mu", owner=owner, low=0.0, closed="neither", allow_inf=True)
    if math.isinf(mu):
        return np.zeros_like(sens)
    load = n * sens**2
    shape = np.cbrt(load / w)
    total = float(np.sum(np.cbrt(load * w**2)))
    stds = shape * math.sqrt(total) / mu
    # guard the constraint against rounding: Σ n Δ²/σ² must not exceed μ²
    used = float(np.sum(np.divide(load, stds**2, out=np.zeros_like(load), where=stds > 0)))
    if used > mu * mu:
        stds = stds * math.sqrt(used / (mu * mu)) * (1.0 + 1e-12)
    return stds


def _calibrate(kind: str, epsilon: float, delta: float, sensitivity: float, compositions: int,
               accountant: str, owner: str) -> float:
    """The noise multiplier (scale/Δ), by bisection over the accountant's ε of the event of
    ``compositions`` releases, kept on the feasible side (ε ≤ target)."""
    make_base = events.gaussian if kind == "gaussian" else events.laplace

    def make_event(nm: float) -> object:
        return events.self_composed(make_base(nm), compositions)

    if kind == "gaussian":

        # The exact analytic multiplier (Balle & Wang 2018) lower-bounds what any accountant needs
        # (PLD is pessimistic, RDP looser still); k Gaussian releases compose to one Gaussian with
        # multiplier σ/√k. PLD needs only ~1e-4 more, so the first bracket is narrow.
        exact = gaussian_multiplier(epsilon, delta) * math.sqrt(compositions)
        lower, upper = 0.9999 * exact, 1.001 * exact
    else:
        # k-fold Laplace is (k/b)-DP (basic composition), so b = k/ε always suffices.
        upper = compositions / epsilon
        lower = 0.5 * upper
    tol = _REL_TOL[kind] * upper

    def feasible(nm: float) -> bool:
        return epsilon_of(make_event(nm), delta, accountant) <= epsilon

    # Bracket: lower infeasible, upper feasible (ε is decreasing in the multiplier).
    for _ in range(100):
        if feasible(upper):
            break
        lower, upper = upper, 2.0 * upper
    else:  # pragma: no cover - 2^100 times the analytic noise
        raise RuntimeError(f"{owner}: no noise level reaches epsilon <= {epsilon}")
    for _ in range(100):
        if not feasible(lower):
            break
        upper, lower = lower, 0.5 * lower
    # Bisection that keeps ``upper`` feasible: the result never overshoots.
    while upper - lower > tol:
        mid = 0.5 * (lower + upper)
        if feasible(mid):
            upper = mid
        else:
            lower = mid
    return float(upper)


def _check_common(epsilon: float, delta: float, sensitivity: float, compositions: int, accountant: str,
                  owner: str, *, delta_closed: str, accountants: tuple[str, ...] = ("pld", "rdp")
                  ) -> tuple[float, float, float, int]:
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed=delta_closed)
    sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0, closed="neither")
    compositions = check_scalar(compositions, "compositions", owner=owner, kind=int, low=1)
    check_option(accountant, "accountant", accountants, owner=owner)
    return epsilon, delta, sensitivity, compositions


def calibrate_gaussian(epsilon: float, delta: float, *, sensitivity: float = 1.0, compositions: int = 1,
                       accountant: str = "exact") -> float:
    """The smallest Gaussian noise std σ such that ``compositions`` releases of a query of
    ℓ2-sensitivity ``sensitivity`` are jointly (ε, δ)-DP under ``accountant``.

    ``"exact"`` (default): the analytic Gaussian curve (Balle & Wang 2018, Thm. 8) of the
    composition, which is one Gaussian with multiplier σ/(Δ√k) — the curve :meth:`Ledger.epsilon`
    uses, so the ledger reports at most ``epsilon`` (to 1e-9 relative below it); answers at once
    for any ε. ``"pld"``/``"rdp"``: never overshoots under that accountant: ε of
    ``SelfComposedDpEvent(GaussianDpEvent(σ/Δ), compositions)`` is ≤ ``epsilon``; PLD is within
    ~1e-4 (relative) of exact, RDP looser (e.g. 4.045 instead of 3.731 at (1, 1e-5)).

    >>> round(calibrate_gaussian(1.0, 1e-5), 3)   # analytic Gaussian (Balle & Wang 2018): 3.7306
    3.731
    """
    owner = "calibrate_gaussian"
    epsilon, delta, sensitivity, compositions = _check_common(
        epsilon, delta, sensitivity, compositions, accountant, owner, delta_closed="neither",
        accountants=("exact", "pld", "rdp"))
    if accountant == "exact":
        return gaussian_multiplier(epsilon, delta) * math.sqrt(compositions) * sensitivity
    return _calibrate("gaussian", epsilon, delta, sensitivity, compositions, accountant, owner) * sensitivity


def calibrate_laplace(epsilon: float, delta: float = 0.0, *, sensitivity: float = 1.0, compositions: int = 1,
                      accountant: str = "pld") -> float:
    """The smallest Laplace scale b such that ``compositions`` releases of a query of
    ℓ1-sensitivity ``sensitivity`` are jointly (ε, δ)-DP under ``accountant``.

    With δ = 0 this is b = compositions·Δ/ε exactly (k-fold Laplace is (k/b)-DP and no smaller
    pure ε holds). With δ > 0 the accountant's composition is used, which is tighter for many
    releases; the result never exceeds the pure scale k·Δ/ε, which is always valid (basic
    composition), and :meth:`Ledger.epsilon` likewise never reports more than Σ Δ/b for a
    ledger of pure-DP releases.
    """
    owner = "calibrate_laplace"
    epsilon, delta, sensitivity, compositions = _check_common(
        epsilon, delta, sensitivity, compositions, accountant, owner, delta_closed="left")
    pure = compositions / epsilon
    if delta == 0:
        return pure * sensitivity
    nm = _calibrate("laplace", epsilon, delta, sensitivity, compositions, accountant, owner)
    return min(nm, pure) * sensitivity


def zcdp_to_approx_dp(rho: float, delta: float, *, method: str = "tight") -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    * ``"bun_steinke"``: ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
    * ``"tight"`` (default): the conversion of Canonne, Kamath & Steinke (2020, Prop. 12), as
      implemented by dp-accounting's RDP accountant on a ``ZCDpEvent``; never larger than the
      Bun–Steinke bound.
    """
    rho = check_scalar(rho, "rho", owner="zcdp_to_approx_dp", low=0.0, allow_inf=True)
    delta = check_scalar(delta, "delta", owner="zcdp_to_approx_dp", low=0.0, high=1.0, closed="neither")
    check_option(method, "method", ("tight", "bun_steinke"), owner="zcdp_to_approx_dp")
    if math.isinf(rho):
        return math.inf
    if rho == 0:
        return 0.0
    bs = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    if method == "bun_steinke":
        return bs
    acc = make_accountant("rdp")
    acc.compose(events.zcdp(rho))
    return float(min(bs, acc.get_epsilon(delta)))


def approx_dp_to_zcdp(epsilon: float, delta: float, *, method: str = "tight") -> float:
    """The largest ρ such that ρ-zCDP implies (ε, δ)-DP under :func:`zcdp_to_approx_dp`.

    With ``"bun_steinke"`` this is the closed form ρ = (√(ε + L) − √L)², L = ln(1/δ).
    """
    epsilon = check_scalar(epsilon, "epsilon", owner="approx_dp_to_zcdp", low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner="approx_dp_to_zcdp", low=0.0, high=1.0, closed="neither")
    check_option(method, "method", ("tight", "bun_steinke"), owner="approx_dp_to_zcdp")
    L = math.log(1.0 / delta)
    closed = (math.sqrt(epsilon + L) - math.sqrt(L)) ** 2
    # rounding can put the closed form an ulp over the target: step down until it is feasible
    while closed > 0 and zcdp_to_approx_dp(closed, delta, method="bun_steinke") > epsilon:
        closed = math.nextafter(closed, 0.0)
    if method == "bun_steinke":
        return closed
    lo, hi = closed, closed
    while zcdp_to_approx_dp(hi, delta) <= epsilon:
        lo, hi = hi, hi * 2.0
    for _ in range(80):  # bisection; keep lo feasible
        mid = 0.5 * (lo + hi)
        if zcdp_to_approx_dp(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def gaussian_sigma_for_zcdp(rho: float, *, sensitivity: float = 1.0) -> float:
    """σ = Δ/√(2ρ): the Gaussian mechanism with ℓ2-sensitivity Δ is ρ-zCDP (Bun & Steinke 2016)."""
    rho = check_scalar(rho, "rho", owner="gaussian_sigma_for_zcdp", low=0.0, closed="neither", allow_inf=True)
    sensitivity = check_scalar(sensitivity, "sensitivity", owner="gaussian_sigma_for_zcdp", low=0.0)
    return 0.0 if math.isinf(rho) else sensitivity / math.sqrt(2.0 * rho)


def calibration_table(mechanism: str, epsilon: float, delta: float, sensitivity: float = 1.0,
                      compositions: int = 1) -> dict[str, object]:
    """Noise for ``compositions`` releases of a query of sensitivity ``sensitivity`` at (ε, δ)
    (:func:`calibrate_gaussian` / :func:`calibrate_laplace`, with the PLD accountant), and the ε
    that the PLD and RDP accountants give for it at ``delta_evaluated`` =
    :func:`~privrl.privacy.budget.reporting_delta` of the budget (ε, δ): δ itself, or 0 for pure DP,
    where both report the pure ε (basic composition, exact). ``mechanism`` is ``"gaussian"``
    (ℓ2 sensitivity, δ > 0) or ``"laplace"`` (ℓ1)."""
    check_option(mechanism, "mechanism", ("gaussian", "laplace"), owner="calibration_table")
    if mechanism == "gaussian":
        scale = calibrate_gaussian(epsilon, delta, sensitivity=sensitivity, compositions=compositions)
        event, std = events.gaussian(scale / sensitivity), scale
    else:
        scale = calibrate_laplace(epsilon, delta, sensitivity=sensitivity, compositions=compositions)
        event, std = events.laplace(scale / sensitivity), math.sqrt(2.0) * scale
    ledger = Ledger([events.self_composed(event, compositions)])
    at = reporting_delta(PrivacyBudget(epsilon=epsilon, delta=delta))
    return {"mechanism": mechanism, "epsilon": epsilon, "delta": delta, "sensitivity": sensitivity,
            "compositions": compositions, "noise_std": std, "noise_scale": scale,
            "noise_multiplier": scale / sensitivity, "calibrated_with": "pld",
            "delta_evaluated": at,
            "epsilon_pld": ledger.epsilon(at, accountant="pld"),
            "epsilon_rdp": ledger.epsilon(at, accountant="rdp")}
