"""Calibration: from a target budget to a noise scale, by root finding over the accountant, and the
zCDP ↔ (ε, δ) conversions.

Calibration never overshoots: the returned noise multiplier's ε (under the chosen accountant) is
at most the target. We bisect on the noise multiplier and always keep the feasible end of the
bracket (every returned value was itself checked with a fresh accountant), to a relative tolerance
of 1e-5 (Gaussian) / 5e-5 (Laplace) on the multiplier.
"""

from __future__ import annotations

import math

import dp_accounting

from privrl._validation import check_option, check_scalar
from privrl.privacy.accounting import epsilon_of, make_accountant

# relative bisection tolerance on the noise multiplier: the result is feasible and within this of
# the smallest feasible multiplier (PLD's own discretisation error is ~1e-4 in ε)
_REL_TOL = {"gaussian": 1e-5, "laplace": 5e-5}

__all__ = ["calibrate_gaussian", "calibrate_laplace", "zcdp_to_approx_dp", "approx_dp_to_zcdp",
           "gaussian_sigma_for_zcdp"]


def _calibrate(kind: str, epsilon: float, delta: float, sensitivity: float, compositions: int,
               accountant: str, owner: str) -> float:
    """The noise multiplier (scale/Δ), by bisection over the accountant's ε of the event of
    ``compositions`` releases, kept on the feasible side (ε ≤ target)."""
    event_cls = dp_accounting.GaussianDpEvent if kind == "gaussian" else dp_accounting.LaplaceDpEvent

    def make_event(nm: float) -> dp_accounting.DpEvent:
        base = event_cls(nm)
        return base if compositions == 1 else dp_accounting.SelfComposedDpEvent(base, compositions)

    if kind == "gaussian":
        # The exact analytic multiplier (Balle & Wang 2018) lower-bounds what any accountant needs
        # (PLD is pessimistic, RDP looser still); k Gaussian releases compose to one Gaussian with
        # multiplier σ/√k. PLD needs only ~1e-4 more, so the first bracket is narrow.
        exact = dp_accounting.get_sigma_gaussian(epsilon, delta) * math.sqrt(compositions)
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
                  owner: str, *, delta_closed: str) -> tuple[float, float, float, int]:
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed=delta_closed)
    sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0, closed="neither")
    compositions = check_scalar(compositions, "compositions", owner=owner, kind=int, low=1)
    check_option(accountant, "accountant", ("pld", "rdp"), owner=owner)
    return epsilon, delta, sensitivity, compositions


def calibrate_gaussian(epsilon: float, delta: float, *, sensitivity: float = 1.0, compositions: int = 1,
                       accountant: str = "pld") -> float:
    """The smallest Gaussian noise std σ such that ``compositions`` releases of a query of
    ℓ2-sensitivity ``sensitivity`` are jointly (ε, δ)-DP under ``accountant``.

    Never overshoots: ε of ``SelfComposedDpEvent(GaussianDpEvent(σ/Δ), compositions)`` under
    ``accountant`` is ≤ ``epsilon`` (and :meth:`Ledger.epsilon`, exact for Gaussians, is smaller
    still). With ``"pld"`` σ is within ~1e-4 (relative) of the exact analytic σ of
    Balle & Wang (2018); ``"rdp"`` is looser (e.g. 4.045 instead of 3.731 at (1, 1e-5)).

    >>> round(calibrate_gaussian(1.0, 1e-5), 3)   # analytic Gaussian (Balle & Wang 2018): 3.7306
    3.731
    """
    owner = "calibrate_gaussian"
    epsilon, delta, sensitivity, compositions = _check_common(
        epsilon, delta, sensitivity, compositions, accountant, owner, delta_closed="neither")
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
    acc.compose(dp_accounting.ZCDpEvent(rho))
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
