"""Calibration never overshoots and is not wastefully loose (hypothesis), and the zCDP helpers."""

import math

import dp_accounting
import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent, SelfComposedDpEvent, ZCDpEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privrl.errors import InvalidParameterError
from privrl.privacy import (
    Ledger,
    approx_dp_to_zcdp,
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_sigma_for_zcdp,
    zcdp_to_approx_dp,
)
from privrl.privacy.accounting import epsilon_of

# PLD evaluations take ~0.05–0.5 s each, so keep example counts small.
FEW = settings(max_examples=15, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow])

epsilons = st.floats(min_value=0.2, max_value=1.2)  # PLD cost grows with ε; keep the suite fast
deltas = st.sampled_from([1e-7, 1e-6, 1e-5, 1e-4, 1e-3])
sensitivities = st.floats(min_value=0.1, max_value=10.0)
counts = st.integers(min_value=1, max_value=30)


def _event(cls, multiplier, k):
    return cls(multiplier) if k == 1 else SelfComposedDpEvent(cls(multiplier), k)


# --------------------------------------------------------------------------- Gaussian
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@FEW
@given(eps=epsilons, delta=deltas, sens=sensitivities, k=counts)
def test_calibrate_gaussian_never_overshoots_and_is_tight(accountant, eps, delta, sens, k):
    sigma = calibrate_gaussian(eps, delta, sensitivity=sens, compositions=k, accountant=accountant)
    nm = sigma / sens
    # never overshoots under the accountant it was calibrated with, nor in the ledger
    assert epsilon_of(_event(GaussianDpEvent, nm, k), delta, accountant) <= eps
    assert Ledger([GaussianDpEvent(nm)] * k).epsilon(delta, accountant=accountant) <= eps * (1 + 1e-12)
    # not wastefully loose: 0.5% less noise already overshoots under the same accountant
    assert epsilon_of(_event(GaussianDpEvent, 0.995 * nm, k), delta, accountant) > eps
    # and never below the exact analytic noise (nothing can certify less)
    exact = dp_accounting.get_sigma_gaussian(eps, delta) * math.sqrt(k)
    assert nm >= exact * (1 - 1e-9)
    if accountant == "pld":
        assert nm <= 1.01 * exact  # within 1% of the exact noise


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.5, 1e-6), (1.5, 1e-3)])
def test_calibrate_gaussian_single_release_within_1_percent_of_exact(eps, delta):
    exact = dp_accounting.get_sigma_gaussian(eps, delta)
    assert exact <= calibrate_gaussian(eps, delta) <= 1.01 * exact
    # RDP is looser but still within ~15% here, and never below exact
    assert exact <= calibrate_gaussian(eps, delta, accountant="rdp") <= 1.2 * exact


def test_calibrate_gaussian_scales_with_sensitivity_and_compositions():
    base = calibrate_gaussian(1.0, 1e-5, accountant="rdp")
    assert calibrate_gaussian(1.0, 1e-5, sensitivity=3.0, accountant="rdp") == pytest.approx(3 * base, rel=1e-5)
    # k Gaussians = one with multiplier σ/√k: exactly √k times the noise under PLD
    one = calibrate_gaussian(1.0, 1e-5)
    assert calibrate_gaussian(1.0, 1e-5, compositions=16) == pytest.approx(4 * one, rel=1e-4)


# --------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@FEW
@given(eps=epsilons, delta=st.sampled_from([1e-7, 1e-5, 1e-3]), sens=sensitivities,
       k=st.integers(min_value=1, max_value=20))
def test_calibrate_laplace_never_overshoots(accountant, eps, delta, sens, k):
    b = calibrate_laplace(eps, delta, sensitivity=sens, compositions=k, accountant=accountant)
    nm = b / sens
    pure = k / eps
    assert nm <= pure * (1 + 1e-12)  # never worse than basic composition
    # certified: by the accountant, or (when it is looser than basic composition) by the pure bound
    acc_eps = epsilon_of(_event(LaplaceDpEvent, nm, k), delta, accountant)
    assert acc_eps <= eps or nm == pytest.approx(pure, rel=1e-12)
    assert Ledger([LaplaceDpEvent(nm)] * k).epsilon(delta, accountant=accountant) <= eps * (1 + 1e-12)
    # not wastefully loose: 1% less noise overshoots (accountant and basic composition both)
    assert epsilon_of(_event(LaplaceDpEvent, 0.99 * nm, k), delta, accountant) > eps


def test_calibrate_laplace_pure_and_advanced():
    assert calibrate_laplace(0.5) == 2.0
    assert calibrate_laplace(0.5, sensitivity=3.0, compositions=4) == pytest.approx(24.0)
    # with δ > 0 and many releases the PLD beats basic composition clearly
    assert calibrate_laplace(1.0, 1e-5, compositions=100) < 0.5 * 100
    # ten releases at ε = 0.1 each reach 0.99898 at δ = 1e-6 (golden): calibration inverts it
    assert calibrate_laplace(0.99898, 1e-6, compositions=10) == pytest.approx(10.0, rel=1e-3)


@pytest.mark.parametrize("fn", [calibrate_gaussian, calibrate_laplace])
@pytest.mark.parametrize("kwargs,match", [
    (dict(epsilon=0.0, delta=1e-5),
     r"The 'epsilon' parameter of calibrate_\w+ must be a float in \(0.0, inf\). Got 0.0 instead."),
    (dict(epsilon=math.inf, delta=1e-5), r"'epsilon' .* Got inf"),
    (dict(epsilon=1.0, delta=1.0), r"'delta' parameter of calibrate_\w+ must be a float in [\[\(]0.0, 1.0\). Got 1.0"),
    (dict(epsilon=1.0, delta=-1e-5), r"'delta' .* Got -1e-05"),
    (dict(epsilon=1.0, delta=1e-5, sensitivity=0.0),
     r"'sensitivity' parameter of calibrate_\w+ must be a float in \(0.0, inf\)"),
    (dict(epsilon=1.0, delta=1e-5, compositions=0),
     r"'compositions' parameter of calibrate_\w+ must be an int in \[1, inf\). Got 0"),
    (dict(epsilon=1.0, delta=1e-5, compositions=2.5), r"'compositions' .* Got 2.5"),
    (dict(epsilon=1.0, delta=1e-5, accountant="moments"),
     r"'accountant' parameter of calibrate_\w+ must be one of (.exact., )?'pld', 'rdp'"),
])
def test_calibration_bad_input(fn, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        fn(**kwargs)


def test_calibrate_gaussian_requires_positive_delta():
    with pytest.raises(InvalidParameterError,
                       match=r"'delta' parameter of calibrate_gaussian must be a float in \(0.0, 1.0\). Got 0.0"):
        calibrate_gaussian(1.0, 0.0)


# --------------------------------------------------------------------------- zCDP helpers
def test_bun_steinke_closed_form():
    rho, delta = 0.5, 1e-5
    assert zcdp_to_approx_dp(rho, delta, method="bun_steinke") == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1e5)))
    eps = 1.0
    L = math.log(1 / delta)
    assert approx_dp_to_zcdp(eps, delta, method="bun_steinke") == pytest.approx(
        (math.sqrt(eps + L) - math.sqrt(L)) ** 2)


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.05, 0.5, 5.0, 50.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-2])
def test_tight_conversion_is_valid_and_never_above_bun_steinke(rho, delta):
    tight = zcdp_to_approx_dp(rho, delta)
    assert tight <= zcdp_to_approx_dp(rho, delta, method="bun_steinke") * (1 + 1e-12)
    # valid: equals dp-accounting's RDP conversion of a ZCDpEvent, or Bun–Steinke, whichever is smaller
    assert tight == pytest.approx(min(epsilon_of(ZCDpEvent(rho), delta, "rdp"),
                                      zcdp_to_approx_dp(rho, delta, method="bun_steinke")), rel=1e-12)
    # the Gaussian with ρ = 1/(2σ²) is ρ-zCDP, so its exact ε can only be smaller
    assert dp_accounting.get_epsilon_gaussian(1 / math.sqrt(2 * rho), delta) <= tight * (1 + 1e-9)


def test_tight_conversion_is_strictly_better_in_the_usual_regime():
    assert zcdp_to_approx_dp(0.5, 1e-5) < 0.95 * zcdp_to_approx_dp(0.5, 1e-5, method="bun_steinke")


@pytest.mark.parametrize("method", ["tight", "bun_steinke"])
def test_conversions_are_monotone(method):
    rhos = [1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0, 3.0, 10.0]
    eps_r = [zcdp_to_approx_dp(r, 1e-5, method=method) for r in rhos]
    assert all(a < b for a, b in zip(eps_r, eps_r[1:]))
    deltas = [1e-10, 1e-8, 1e-6, 1e-4, 1e-2]
    eps_d = [zcdp_to_approx_dp(0.3, d, method=method) for d in deltas]
    assert all(a > b for a, b in zip(eps_d, eps_d[1:]))
    epss = [0.05, 0.1, 0.5, 1.0, 2.0, 8.0]
    rho_e = [approx_dp_to_zcdp(e, 1e-5, method=method) for e in epss]
    assert all(a < b for a, b in zip(rho_e, rho_e[1:]))


@pytest.mark.parametrize("method", ["tight", "bun_steinke"])
@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-5), (3.0, 1e-3), (10.0, 1e-8)])
def test_round_trip(method, eps, delta):
    """zcdp_to_approx_dp(approx_dp_to_zcdp(ε, δ), δ) ≤ ε and is ≈ ε (largest feasible ρ)."""
    rho = approx_dp_to_zcdp(eps, delta, method=method)
    back = zcdp_to_approx_dp(rho, delta, method=method)
    assert back <= eps
    assert back == pytest.approx(eps, rel=1e-6)
    assert zcdp_to_approx_dp(rho * (1 + 1e-4), delta, method=method) > eps
    # the ledger certifies the calibrated ρ
    assert Ledger([ZCDpEvent(rho)]).epsilon(delta) <= eps * (1 + 1e-12) if method == "tight" else True


def test_tight_inverse_gives_more_rho_than_bun_steinke():
    assert approx_dp_to_zcdp(1.0, 1e-5) > approx_dp_to_zcdp(1.0, 1e-5, method="bun_steinke")


def test_zcdp_edge_cases_and_sigma():
    assert zcdp_to_approx_dp(0.0, 1e-5) == 0.0
    assert zcdp_to_approx_dp(math.inf, 1e-5) == math.inf
    assert gaussian_sigma_for_zcdp(0.5) == pytest.approx(1.0)
    assert gaussian_sigma_for_zcdp(2.0, sensitivity=4.0) == pytest.approx(2.0)
    assert gaussian_sigma_for_zcdp(math.inf) == 0.0
    # σ = Δ/√(2ρ) gives a Gaussian event whose ledger ρ is exactly ρ
    assert Ledger([GaussianDpEvent(gaussian_sigma_for_zcdp(0.3))]).zcdp_rho() == pytest.approx(0.3)


@pytest.mark.parametrize("call,match", [
    (lambda: zcdp_to_approx_dp(-1.0, 1e-5),
     r"'rho' parameter of zcdp_to_approx_dp must be a float in \[0.0, inf\]. Got -1.0"),
    (lambda: zcdp_to_approx_dp(1.0, 0.0),
     r"'delta' parameter of zcdp_to_approx_dp must be a float in \(0.0, 1.0\). Got 0.0"),
    (lambda: zcdp_to_approx_dp(1.0, 1e-5, method="exact"),
     r"'method' parameter of zcdp_to_approx_dp must be one of 'tight', 'bun_steinke'"),
    (lambda: approx_dp_to_zcdp(0.0, 1e-5), r"'epsilon' parameter of approx_dp_to_zcdp must be a float in \(0.0, inf\)"),
    (lambda: approx_dp_to_zcdp(1.0, 1.0), r"'delta' parameter of approx_dp_to_zcdp"),
    (lambda: approx_dp_to_zcdp(1.0, 1e-5, method="x"), r"'method' parameter of approx_dp_to_zcdp"),
    (lambda: gaussian_sigma_for_zcdp(0.0),
     r"'rho' parameter of gaussian_sigma_for_zcdp must be a float in \(0.0, inf\]"),
])
def test_zcdp_bad_input(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()
