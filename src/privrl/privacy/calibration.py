"""Calibration: from a target budget to a noise scale, by root finding over the accountant, and the
zCDP ↔ (ε, δ) conversions.

Calibration never overshoots: the returned noise multiplier's ε (under the chosen accountant) is
at most the target. dp-accounting's ``calibrate_dp_mechanism`` bisects to a tolerance and returns the
safe end of the bracket; we re-check the result and widen it in the rare case the accountant's
discretisation put it a hair over.
"""

from __future__ import annotations

import math

import dp_accounting
from dp_accounting import mechanism_calibration

from privrl._validation import check_option, check_scalar
from privrl.privacy.accounting import epsilon_of, make_accountant

__all__ = ["calibrate_gaussian", "calibrate_laplace", "zcdp_to_approx_dp", "approx_dp_to_zcdp",
           "gaussian_sigma_for_zcdp"]


def _calibrate(kind: str, epsilon: float, delta: float, sensitivity: float, compositions: int,
               accountant: str, owner: str) -> float:
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0,
                         closed="right" if kind == "gaussian" else "left")
    if kind == "gaussian" and delta == 0:  # pragma: no cover - check_scalar already refuses
        raise ValueError
    sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0, closed="neither")
    compositions = check_scalar(compositions, "compositions", owner=owner, kind=int, low=1)
    check_option(accountant, "accountant", ("pld", "rdp"), owner=owner)
    event_cls = dp_accounting.GaussianDpEvent if kind == "gaussian" else dp_accounting.LaplaceDpEvent

    def make_event(nm: float) -> dp_accounting.DpEvent:
        base = event_cls(nm)
        return base if compositions == 1 else dp_accounting.SelfComposedDpEvent(base, compositions)

    if kind == "gaussian":
        # The exact analytic multiplier (Balle & Wang 2018) lower-bounds what any accountant needs;
        # k Gaussian releases compose to one with multiplier σ/√k.
        exact = dp_accounting.get_sigma_gaussian(epsilon, delta) * math.sqrt(compositions)
        bracket = mechanism_calibration.ExplicitBracketInterval(0.99 * exact, 4.0 * exact + 1e-3)
    else:
        guess = math.sqrt(compositions) / epsilon
        bracket = mechanism_calibration.LowerEndpointAndGuess(0.05 * guess, guess)
    nm = mechanism_calibration.calibrate_dp_mechanism(
        lambda: make_accountant(accountant), make_event, epsilon, delta, bracket, tol=1e-7,
    )
    for _ in range(60):
        if epsilon_of(make_event(nm), delta if delta > 0 else 1e-300, accountant) <= epsilon:
            break
        nm *= 1.0 + 1e-6
    return float(nm) * sensitivity


def calibrate_gaussian(epsilon: float, delta: float, *, sensitivity: float = 1.0, compositions: int = 1,
                       accountant: str = "pld") -> float:
    """The smallest Gaussian noise std σ such that ``compositions`` releases of a query of
    ℓ2-sensitivity ``sensitivity`` are jointly (ε, δ)-DP under ``accountant``.

    >>> round(calibrate_gaussian(1.0, 1e-5), 3)   # analytic Gaussian (Balle & Wang 2018): 3.7306
    3.731
    """
    return _calibrate("gaussian", epsilon, delta, sensitivity, compositions, accountant, "calibrate_gaussian")


def calibrate_laplace(epsilon: float, delta: float = 0.0, *, sensitivity: float = 1.0, compositions: int = 1,
                      accountant: str = "pld") -> float:
    """The smallest Laplace scale b such that ``compositions`` releases of a query of
    ℓ1-sensitivity ``sensitivity`` are jointly (ε, δ)-DP. With δ = 0 and one release, b = Δ/ε."""
    if compositions == 1 and delta == 0:
        epsilon = check_scalar(epsilon, "epsilon", owner="calibrate_laplace", low=0.0, closed="neither")
        sensitivity = check_scalar(sensitivity, "sensitivity", owner="calibrate_laplace", low=0.0, closed="neither")
        return sensitivity / epsilon
    return _calibrate("laplace", epsilon, max(delta, 1e-300) if delta == 0 else delta, sensitivity,
                      compositions, accountant, "calibrate_laplace")


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
