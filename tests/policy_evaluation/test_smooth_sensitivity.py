"""Constants of Lemma 1 / Lemma 14 and the smooth bounds ψ^w, ψ^λ (spec §6, T1, T11–T13)."""

import itertools
import math

import numpy as np
import pytest

from privrl.errors import InvalidParameterError
from privrl.least_squares.smooth_sensitivity import (
    phi_lambda,
    phi_lambda_k,
    phi_w,
    phi_w_k,
    psi_lambda,
    psi_w,
    smoothing_constants,
)


@pytest.mark.parametrize("eps,delta,d,alpha,beta", [
    (0.1, 0.1, 40, 122.387342, 5.8145306e-4),
    (0.1, 0.1, 20, 122.387342, 1.0871582e-3),
    (0.1, 0.1, 10, 122.387342, 1.9237085e-3),
    (1, 0.1, 2, 12.238734, 5.0042714e-2),
    (1, 0.1, 4, 12.238734, 3.5736073e-2),
    (1, 1e-5, 10, 24.704324, 1.1258182e-2),
])
def test_main_text_constants(eps, delta, d, alpha, beta):
    a, b = smoothing_constants(eps, delta, d)
    assert a == pytest.approx(alpha, rel=1e-7)
    assert b == pytest.approx(beta, rel=1e-7)


@pytest.mark.parametrize("eps,delta,d,alpha,beta", [
    (0.1, 0.1, 40, 407.430455, 3.3921553e-4),
    (1, 0.1, 2, 40.743045, 1.6251660e-2),
])
def test_appendix_a_constants(eps, delta, d, alpha, beta):
    a, b = smoothing_constants(eps, delta, d, "appendix_a")
    assert a == pytest.approx(alpha, rel=1e-7)
    assert b == pytest.approx(beta, rel=1e-7)
    # operator precedence regression: (2 eps / 5)(sqrt d + C)^2 would be ~1e4 times larger
    wrong = (2 * eps / 5) * (math.sqrt(d) + math.sqrt(2 * math.log(4 / delta))) ** 2
    assert b < wrong / 100


@pytest.mark.parametrize("kwargs", [
    dict(epsilon=0.0, delta=0.1, d=2), dict(epsilon=1.0, delta=0.0, d=2),
    dict(epsilon=1.0, delta=1.0, d=2), dict(epsilon=1.0, delta=0.1, d=0),
    dict(epsilon=6.0, delta=0.1, d=2, smoothing="appendix_a"),
    dict(epsilon=1.0, delta=0.1, d=2, smoothing="lemma2"),
])
def test_constants_reject_bad_input(kwargs):
    with pytest.raises(InvalidParameterError):
        smoothing_constants(**kwargs)


def _ball(v, k, m):
    ranges = [range(max(0, x - k), min(m, x + k) + 1) for x in v]
    return itertools.product(*ranges)


def test_lemma5_and_lemma9_closed_forms_by_brute_force():
    """T11: max of φ over the ℓ∞ ball of radius k (inside [0, m]^N) equals the closed forms."""
    rng = np.random.default_rng(0)
    m, n = 6, 3
    w = rng.uniform(0.1, 1.0, n)
    rho = rng.uniform(0.1, 1.0, n)
    c_lam = 0.7
    for v in itertools.product(range(m + 1), repeat=n):
        for k in range(5):
            ball = list(_ball(v, k, m))
            brute_w = max(phi_w(np.array(u), w) for u in ball)
            brute_l = max(phi_lambda(np.array(u), rho, c_lam, m) for u in ball)
            assert brute_w == phi_w_k(np.array(v), w, k)
            assert brute_l == phi_lambda_k(np.array(v), rho, c_lam, m, k)


def _direct_psi_w(v, w, beta, k_max):
    return max(math.exp(-k * beta) * phi_w_k(v, w, k) for k in range(k_max + 1))


def _direct_psi_l(v, rho, c, m, beta):
    return max(math.exp(-k * beta) * phi_lambda_k(v, rho, c, m, k) for k in range(m + 1))


@pytest.mark.parametrize("beta", [0.05, 0.5])
def test_smooth_bounds_are_beta_smooth_upper_bounds(beta):
    """T12: ψ ≥ φ and |ln ψ(v) − ln ψ(v')| ≤ β for all signature neighbours in [0, m]^N."""
    rng = np.random.default_rng(1)
    m, n = 6, 3
    w = rng.uniform(0.05, 1.0, n)
    rho = rng.uniform(0.05, 1.0, n)
    c = 0.9
    vs = list(itertools.product(range(m + 1), repeat=n))
    pw = {v: psi_w(np.array(v), w, beta) for v in vs}
    pl = {v: psi_lambda(np.array(v), rho, c, m, beta) for v in vs}
    for v in vs:
        assert pw[v] >= phi_w(np.array(v), w)
        assert pl[v] >= phi_lambda(np.array(v), rho, c, m)
        for u in _ball(v, 1, m):
            assert abs(math.log(pw[v]) - math.log(pw[u])) <= beta * (1 + 1e-9)
            assert abs(math.log(pl[v]) - math.log(pl[u])) <= beta * (1 + 1e-9)


def test_k_range_is_sufficient_and_fast_path_is_exact():
    """T13: the fast ψ equals the direct scan over a longer k range; K_X = 0 gives Σ w."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(1, 7))
        m = int(rng.integers(1, 60))
        v = rng.integers(0, m + 1, n)
        w = rng.uniform(0, 1, n)
        w[0] = max(w[0], 0.1)
        rho = rng.uniform(0, 1, n)
        beta = float(rng.choice([1e-3, 0.02, 0.3]))
        assert psi_w(v, w, beta) == pytest.approx(_direct_psi_w(v, w, beta, int(v.max()) + 100), rel=1e-12)
        assert psi_lambda(v, rho, 0.8, m, beta) == pytest.approx(_direct_psi_l(v, rho, 0.8, m, beta), rel=1e-12)
    w = np.array([0.2, 0.3, 0.1])
    assert psi_w(np.zeros(3), w, 0.1) == pytest.approx(0.6)


def test_psi_lambda_rejects_counts_above_m():
    with pytest.raises(InvalidParameterError, match="counts"):
        psi_lambda(np.array([3, 1]), np.array([0.5, 0.5]), 1.0, 2, 0.1)
    with pytest.raises(InvalidParameterError, match="counts"):
        psi_w(np.array([-1, 1]), np.array([0.5, 0.5]), 0.1)


def test_the_interval_bounds_skip_no_maximum_at_large_counts():
    """The scan skips the k intervals whose bound e^{-aβ} φ(b) cannot beat the best value: with the
    chain's batch sizes (counts to 10⁶, β ≈ 6e-4: tens of thousands of k) the result is exactly the
    maximum of the full vectorised scan over every k."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 41))
        m = int(10 ** rng.uniform(2, 6))
        v = np.minimum(rng.multinomial(m, rng.dirichlet(np.ones(n))), m)
        w = rng.dirichlet(np.ones(n))
        beta = float(10 ** rng.uniform(-4, -1))
        k = np.arange(0, int(v.max()) + 1, dtype=float)
        phi = (w / np.maximum(v[None, :] - k[:, None], 1.0) ** 2).sum(axis=1)
        assert psi_w(v, w, beta) == pytest.approx(float(np.max(np.exp(-beta * k) * phi)), rel=1e-12)
        c = float(rng.uniform(0.01, 2.0))
        k = np.arange(0, m - int(v.min()) + 1, dtype=float)
        s = (w[None, :] * np.minimum(v[None, :] + k[:, None], m)).sum(axis=1)
        full = float(np.max(np.exp(-beta * k) * (c * np.sqrt(s) + np.linalg.norm(w)) ** 2))
        assert psi_lambda(v, w, c, m, beta) == pytest.approx(full, rel=1e-12)
