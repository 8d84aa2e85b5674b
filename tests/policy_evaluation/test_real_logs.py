"""Real episodic logs and no silent useless output: γ = 1 with F_max, truncation, one name for the
state weights, the full-rank error, and the utility warnings of DP-LSW / DP-LSL."""

import math
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.data import truncate_to_horizon
from privrl.envs.chain import sample_chain
from privrl.errors import InvalidDataError, InvalidParameterError, UtilityWarning
from privrl.least_squares.diagnostics import NOISE_DOMINATED_RMS, directions_kept
from privrl.policy_evaluation import DPLSL, DPLSW, LSL, LSW

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)


# --------------------------------------------------------------------------- γ = 1
def test_gamma_one_uses_the_declared_return_bound(toy):
    with pytest.raises(InvalidParameterError, match="'F_max'.*gamma = 1"):
        LSW(gamma=1.0).fit(toy)
    est = LSW(gamma=1.0, F_max=2.0).fit(toy)
    # undiscounted first-visit returns: state 0 → 1 and 1 (episodes 1 and 3), state 2 → 1, 1, 2
    np.testing.assert_allclose(est.values_, [1.0, 1.0, 4.0 / 3.0, 0.0])
    assert est.F_max_ == 2.0
    dp = DPLSW(budget=BUDGET, gamma=1.0, F_max=2.0).fit(toy, rng=0)
    assert dp.privacy_spent() <= 1.0 and np.all(np.isfinite(dp.values_))
    for cls in (LSL, DPLSL):
        kwargs = {"budget": BUDGET} if cls is DPLSL else {}
        assert np.all(np.isfinite(cls(gamma=1.0, F_max=2.0, lam=5.0, **kwargs).fit(toy, rng=0).values_))


def test_truncation_gives_the_public_return_bound(toy):
    cut = truncate_to_horizon(toy, 2)
    assert LSW(gamma=1.0).fit(cut).F_max_ == 2.0                        # R_max · H
    assert LSW(gamma=0.5).fit(cut).F_max_ == pytest.approx(1.5)         # R_max (1 − γ^H)/(1 − γ)
    with pytest.raises(InvalidDataError, match="F_max"):
        LSW(gamma=1.0, F_max=0.5).fit(cut)                               # validated, not clipped


def test_a_false_length_bound_is_refused(toy):
    toy.metadata["max_episode_length"] = 2
    with pytest.raises(InvalidDataError, match="max_episode_length"):
        LSW(gamma=1.0).fit(toy)


# --------------------------------------------------------------------------- one name for the weights
def test_lsl_weights_and_the_deprecated_relevance(toy):
    rho = np.array([1.0, 0.5, 0.5, 0.2])
    new = LSL(gamma=0.9, lam=3.0, weights=rho).fit(toy)
    with pytest.warns(DeprecationWarning, match="'relevance'.*'weights'"):
        old = LSL(gamma=0.9, lam=3.0, relevance=rho).fit(toy)
    np.testing.assert_array_equal(new.values_, old.values_)
    assert not np.allclose(new.values_, LSL(gamma=0.9, lam=3.0).fit(toy).values_)
    with pytest.raises(InvalidParameterError, match="'relevance'"):
        LSL(gamma=0.9, lam=3.0, relevance=rho, weights=rho).fit(toy)
    with pytest.raises(InvalidParameterError, match="'weights'"):
        DPLSL(budget=BUDGET, gamma=0.9, weights=np.full(4, 2.0)).fit(toy, rng=0)


def test_full_rank_error_names_the_smallest_singular_values(toy):
    weights = np.array([1.0, 1.0, 0.0, 1.0])           # state 2 carries all of feature 2: rank 3 < 4
    with pytest.raises(InvalidParameterError, match=r"smallest singular values \[0\.0, 1\.0"):
        LSW(gamma=0.9, weights=weights).fit(toy)


# --------------------------------------------------------------------------- utility warnings
def test_noise_dominated_threshold_is_the_gaussian_edge_bound():
    from scipy import stats

    tail = stats.norm.expect(lambda z: (z - 2.0) ** 2, lb=2.0)
    assert NOISE_DOMINATED_RMS == pytest.approx(0.5 * math.sqrt(0.5 + tail), rel=1e-9)
    # Monte Carlo: values at an edge with noise std F_max/2 give that RMS distance outside [0, F_max]
    z = np.random.default_rng(0).normal(0.0, 0.5, 400_000)
    assert np.sqrt(np.mean((z - np.clip(z, 0.0, 1.0)) ** 2)) == pytest.approx(NOISE_DOMINATED_RMS, rel=0.01)


def test_dp_lsw_warns_when_no_better_than_the_constant():
    """ε = 1.5: the released values lie 0.44 F_max (RMS) outside [0, F_max] — below the old
    threshold (F_max), above the new one — and are indeed worse than the constant F_max/2."""
    data = sample_chain(2000, n_states=10, rng=1)
    exact = LSW(gamma=0.9, F_max=1.0).fit(data).values_
    with pytest.warns(UtilityWarning, match="no better than the constant F_max/2"):
        est = DPLSW(budget=PrivacyBudget(epsilon=1.5, delta=1e-5), gamma=0.9, F_max=1.0).fit(data, rng=0)
    assert NOISE_DOMINATED_RMS < est.utility_["outside_rms"] < 1.0
    assert np.sqrt(np.mean((est.values_ - exact) ** 2)) > np.sqrt(np.mean((0.5 - exact) ** 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        DPLSW(budget=PrivacyBudget(epsilon=3.0, delta=1e-5), gamma=0.9, F_max=1.0).fit(data, rng=0)


def test_dp_lsl_warns_when_the_ridge_shrinks_the_values_to_zero():
    """Short episodes over many states (the clinic's shape): with λ = λ_min + √m the data term of a
    state is ≈ ρ·(visits per trajectory)/N, far below λ/(2m); the values are shrunk to a few per
    cent of the truth and the warning says so — from public quantities only (the old check,
    λ/(2m) ≥ 10 λ_min, stays silent here)."""
    data = truncate_to_horizon(sample_chain(10_000, n_states=200, rng=0), 3)
    exact = LSW(gamma=1.0, F_max=1.0).fit(data).values_
    with pytest.warns(UtilityWarning, match="shrunk towards zero by the ridge term"):
        est = DPLSL(budget=BUDGET, gamma=1.0, F_max=1.0).fit(data, rng=0)
    assert est.lam_ / (2 * 10_000) < 10 * 1.0 / 200                    # the old check would not fire
    assert est.utility_["shrunk"] and est.utility_["directions_kept"] <= 100
    assert np.max(np.abs(est.values_)) < 0.05 < 0.5 < np.max(exact)     # ≈ 0 (noise) where the truth reaches 0.68
    # a small λ keeps the directions (no shrinkage warning), but on these near-zero values the
    # noise it no longer damps makes the release worse than the zero estimate, which is now said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        small = DPLSL(budget=BUDGET, gamma=1.0, F_max=1.0, lam=5.0).fit(data, rng=0)
    messages = [str(w.message) for w in caught]
    assert not any("shrunk towards zero" in m for m in messages)
    assert any("no better than the zero estimate" in m for m in messages)
    assert np.sqrt(np.mean((small.values_ - exact) ** 2)) > 2 * np.sqrt(np.mean(exact ** 2))   # 0.14 vs 0.053


def test_directions_kept_bounds_the_ridge_shrinkage():
    """On random signatures, the number of eigen-directions with shrink factor ≥ 10% never exceeds
    the public bound."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        n_states, m, visits = 30, 500, int(rng.integers(1, 8))
        phi = rng.normal(size=(n_states, 5))
        rho = rng.uniform(0, 1, n_states)
        counts = np.zeros(n_states)
        for _ in range(m):
            counts[rng.choice(n_states, visits, replace=False)] += 1
        lam = float(rng.uniform(1, 500))
        eig = np.linalg.eigvalsh(phi.T @ ((rho * counts / m)[:, None] * phi))
        kept = int(np.sum(eig / (eig + lam / (2 * m)) >= 0.1))
        assert kept <= directions_kept(phi, rho, lam, m, visits)


def test_weights_and_aggregation_control_the_rare_state_noise():
    """Two rarely visited states (counts 1 and 2 against 300) set DP-LSW's σ_X whatever the
    features: aggregation alone lowers it by < 2×; weight 0 on the rare states (public: fixed
    without the data) by > 100× (docs/policy_evaluation.md, "Rare states")."""
    from privrl.policy_evaluation import DPLSWMechanism

    counts, m = np.array([1, 2, 300, 300, 300, 300, 300, 300]), 400
    uniform, common = np.full(8, 1 / 8), np.r_[0.0, 0.0, np.full(6, 1 / 6)]
    groups = np.zeros((8, 3))
    groups[[0, 1, 2], 0] = groups[[3, 4, 5], 1] = groups[[6, 7], 2] = 1.0

    def sigma(phi, w):
        return DPLSWMechanism.create(features=phi, weights=w, F_max=1.0, epsilon=1.0, delta=1e-5,
                                     constants="practical").noise_scale(counts, m)

    tabular = sigma(np.eye(8), uniform)
    assert tabular / 2 < sigma(groups, uniform) < tabular
    assert sigma(groups, common) < tabular / 100
    assert sigma(np.ones((8, 1)), common) < sigma(np.ones((8, 1)), uniform) / 100
    with pytest.raises(InvalidParameterError, match="smallest singular values"):
        sigma(np.eye(8), common)                      # a weight-0 state's own feature cannot be fitted
