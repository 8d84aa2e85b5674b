"""The certified calibrations of DP-LSW / DP-LSL (privrl.least_squares.calibration): the exact
δ of two Gaussians with different scales against independent computations (a second, 2-d quadrature
and Monte Carlo of the privacy loss), the worst-case reduction, the tight search, the proved bound
of the paper's mechanism, and the ledger of each calibration."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from privrl.errors import PrivacyLeakWarning
from privrl.least_squares.calibration import (
    ROUNDING_OFFSET,
    lemma1_delta,
    pure_scale_delta,
    scaled_gaussian_delta,
    smoothed_gaussian,
    tight_alpha,
)
from privrl.policy_evaluation import DPLSW, smoothing_constants
from privrl.privacy import PrivacyBudget
from privrl.privacy.accounting import gaussian_delta


def _loss(z, shift, t, d):
    """ln p(z) − ln q(z) for P = N(0, I_d), Q = N(shift·e₁, e^t I_d), straight from the densities."""
    s2 = math.exp(t)
    return 0.5 * d * t - 0.5 * np.sum(z**2, axis=-1) + (
        (z[..., 0] - shift) ** 2 + np.sum(z[..., 1:] ** 2, axis=-1)) / (2 * s2)


def _delta_2d(eps, shift, t, d, n=2001):
    """δ = E_P[(1 − e^{ε−L})₊] by a second, independent quadrature: a 2-d trapezoid rule over
    z₁ ~ N(0, 1) and r = ‖z_{2..d}‖ ~ χ_{d−1} (densities from scipy.stats), L written from the
    Gaussian densities — nothing shared with the incomplete-gamma integral but the definition."""
    k = d - 1
    z1 = np.linspace(-10.0, 10.0, n)
    r = np.linspace(0.0, stats.chi.ppf(1 - 1e-15, k), n)
    Z, R = np.meshgrid(z1, r, indexing="ij")
    loss = _loss(np.stack([Z, R], axis=-1), shift, t, 2) + 0.5 * (d - 2) * t  # ‖z₂..‖² = r² in any k
    f = stats.norm.pdf(Z) * stats.chi.pdf(R, k) * np.maximum(0.0, 1.0 - np.exp(eps - loss))
    return float(integrate.trapezoid(integrate.trapezoid(f, r, axis=1), z1))


@pytest.mark.parametrize("eps,shift,t,d", [(0.3, 0.4, 0.1, 5), (0.2, 0.3, -0.08, 8), (0.1, 0.26, 0.3, 3),
                                           (0.5, 0.8, -0.4, 2)])
def test_exact_delta_matches_a_second_quadrature(eps, shift, t, d):
    """The 1-d incomplete-gamma integral equals an independent 2-d quadrature of the privacy loss
    to 1e-4 relative (the two share nothing but the definition of δ)."""
    ours = scaled_gaussian_delta(eps, shift, t, d)
    ref = _delta_2d(eps, shift, t, d)
    assert ref > 1e-4
    assert ours == pytest.approx(ref, rel=1e-4)  # the trapezoid rule's error on this grid is ~1e-5


@pytest.mark.stat
@pytest.mark.parametrize("eps,shift,t,d", [(0.3, 0.4, 0.1, 40), (0.3, 0.4, -0.1, 40), (1.0, 1.0, 0.5, 1)])
def test_exact_delta_matches_monte_carlo_of_the_privacy_loss(eps, shift, t, d):
    """Monte Carlo of δ = E_P[(1 − e^{ε−L})₊] with 4·10⁵ draws: within 4 standard errors."""
    rng = np.random.default_rng(11)
    z = rng.standard_normal((400_000, d))
    vals = np.maximum(0.0, 1.0 - np.exp(eps - _loss(z, shift, t, d)))
    mc, se = vals.mean(), vals.std() / math.sqrt(vals.size)
    assert abs(scaled_gaussian_delta(eps, shift, t, d) - mc) <= 4 * se
    assert se < 0.05 * mc  # the check is informative


def test_equal_scales_reduce_to_the_gaussian_mechanism_and_pure_scale_closed_form():
    assert scaled_gaussian_delta(1.0, 0.3, 0.0, 7) == pytest.approx(gaussian_delta(1 / 0.3, 1.0), rel=1e-12)
    # a tiny scale change: continuous in t
    assert scaled_gaussian_delta(1.0, 0.3, 1e-9, 7) == pytest.approx(gaussian_delta(1 / 0.3, 1.0), rel=1e-6)
    # zero shift: the integral equals the χ² closed form
    for t in (0.2, -0.2):
        assert scaled_gaussian_delta(0.1, 0.0, t, 6) == pytest.approx(float(pure_scale_delta(0.1, t, 6)), rel=1e-7)


@pytest.mark.parametrize("t", [0.3, -0.3, 0.02])
def test_delta_is_non_decreasing_in_the_shift(t):
    """Step 2 of the derivation (the worst shift is the largest allowed one)."""
    values = [scaled_gaussian_delta(0.5, s, t, 10) for s in np.linspace(0.0, 1.0, 21)]
    assert all(b >= a * (1 - 1e-9) for a, b in zip(values, values[1:]))


def test_reverse_direction_is_the_same_family_with_t_negated():
    """Step 1: H(Q‖P) for Q = N(Δe₁, e^t I) equals H(P‖Q') with Q' = N(Δ e^{−t/2} e₁, e^{−t} I)."""
    eps, shift, t, d = 0.7, 0.35, 0.2, 4
    rng = np.random.default_rng(3)
    s = math.exp(t / 2)
    z = rng.standard_normal((400_000, d)) * s
    z[:, 0] += shift
    loss_qp = -_loss(z, shift, t, d)  # ln q − ln p at z ~ Q
    mc = np.maximum(0.0, 1.0 - np.exp(eps - loss_qp)).mean()
    assert scaled_gaussian_delta(eps, shift * math.exp(-t / 2), -t, d) == pytest.approx(mc, rel=0.03)


def test_printed_constants_are_far_from_tight():
    """Issue #11: Lemma 1's printed (α, β) leave δ many orders of magnitude below the claim."""
    alpha, beta = smoothing_constants(1.0, 1e-5, 40)
    true = max(scaled_gaussian_delta(1.0, 1 / alpha, beta, 40),
               scaled_gaussian_delta(1.0, math.exp(-beta / 2) / alpha, -beta, 40))
    assert true < 1e-30
    assert lemma1_delta(1.0, alpha, beta, 40, discrete=False) <= 1e-5


def test_triangle_bound_covers_every_scale_ratio():
    """The proved bound of the paper's mechanism is above the exact δ at every t in [−β, β]."""
    eps, alpha, beta, d = 1.0, 4.0, 0.02, 20
    bound = lemma1_delta(eps, alpha, beta, d, discrete=False)
    exact = [scaled_gaussian_delta(eps, min(1.0, math.exp(t / 2)) / alpha, t, d) for t in np.linspace(-beta, beta, 41)]
    assert bound >= max(exact)
    assert bound < 50 * max(exact)  # and not vacuous


@pytest.mark.parametrize("eps,delta,d", [(1.0, 1e-5, 40), (0.1, 1e-5, 40), (10.0, 1e-5, 40), (1.0, 0.1, 2)])
def test_tight_alpha_is_the_least_certified_multiplier(eps, delta, d):
    sg = smoothed_gaussian(eps, delta, d)
    alpha = sg.alpha / math.exp(0.5 * sg.beta * ROUNDING_OFFSET)   # the certified multiplier
    assert lemma1_delta(eps, alpha, sg.beta, d, discrete=True) <= delta
    assert lemma1_delta(eps, alpha * (1 - 1e-5), sg.beta, d, discrete=True) > delta
    assert alpha == pytest.approx(tight_alpha(eps, delta, sg.beta, d))
    paper_alpha, paper_beta = smoothing_constants(eps, delta, d)
    assert sg.beta == paper_beta and alpha < paper_alpha / 4     # same smoothing, ≥ 4× less noise


def test_practical_smoothing_trades_alpha_for_beta():
    theory, practical = smoothed_gaussian(1.0, 1e-5, 40), smoothed_gaussian(1.0, 1e-5, 40, constants="practical")
    assert practical.beta > 3 * theory.beta
    assert theory.alpha < practical.alpha <= 1.5 * 3.7307 * (1 + 1e-6)  # κ = 0.5 over the Gaussian multiplier
    assert practical.event == theory.event                              # privacy does not depend on the knob


@settings(max_examples=12, deadline=None)
@given(eps=st.floats(0.05, 20.0), log_delta=st.floats(-12.0, -2.0), d=st.integers(1, 60))
def test_tight_spends_the_budget_and_never_more(eps, log_delta, d):
    """Property (issue #11 §1): under "tight" the ledger's ε is in [0.99, 1.0] of the target."""
    delta = 10.0**log_delta
    sg = smoothed_gaussian(eps, delta, d)
    from privrl.privacy import Ledger

    spent = Ledger([sg.event]).epsilon(delta)
    assert 0.99 * eps <= spent <= eps * (1 + 1e-9)
    assert lemma1_delta(eps, sg.alpha, sg.beta, d, discrete=True) <= delta


def test_rounding_of_psi_keeps_neighbours_one_step_apart():
    sg = smoothed_gaussian(1.0, 1e-5, 10)
    beta = sg.beta
    for psi in (1.0, math.exp(-3 * beta), 0.37, 1e-9):   # exact grid points included (Σ w = 1 cases)
        r = sg.round_psi(psi)
        assert psi * math.exp(-beta * ROUNDING_OFFSET) <= r * (1 + 1e-12) and r < psi * math.exp(beta)
        for ratio in (math.exp(beta), math.exp(-beta), 1.0):
            step = math.log(sg.round_psi(psi * ratio) / r) / beta
            assert min(abs(step - j) for j in (-1, 0, 1)) < 1e-9


def test_sound_corrects_where_the_printed_lemma_fails_and_paper_records_it():
    """At ε = 100, δ = 1e-5, d = 1 Lemma 1's printed α is not private: "sound" raises α until the
    proved bound certifies ε; "paper" keeps it, warns, and its ledger says nothing is certified."""
    printed, _ = smoothing_constants(100.0, 1e-5, 1)
    sound = smoothed_gaussian(100.0, 1e-5, 1, calibration="sound")
    assert sound.corrected and sound.alpha > 5 * printed and sound.epsilon_spent <= 100.0
    paper = smoothed_gaussian(100.0, 1e-5, 1, calibration="paper")
    assert paper.alpha == printed and paper.epsilon_spent > 100.0
    from privrl.data import TrajectoryDataset

    data = TrajectoryDataset(np.array([0, 0]), np.zeros(2, int), np.array([0.0, 1.0]), np.array([0, 0]),
                             np.array([0, 1, 2]), n_states=1, reward_bounds=(0.0, 1.0))
    with pytest.warns(PrivacyLeakWarning, match="not"):
        DPLSW(budget=PrivacyBudget(epsilon=100.0, delta=1e-5), gamma=0.5, calibration="paper").fit(data, rng=0)
    # at ordinary budgets the printed constants are certified: sound = paper, and both spend far less
    assert smoothed_gaussian(1.0, 1e-5, 40, calibration="sound").alpha == smoothing_constants(1.0, 1e-5, 40)[0]
    assert smoothed_gaussian(1.0, 1e-5, 40, calibration="sound").epsilon_spent < 0.3
