"""PEVI / VAPVI / DP-VAPVI (Qiao & Wang 2023, Algorithm 2)."""

import math
import warnings

import numpy as np
import pytest

from privrl import (
    InvalidDataError,
    InvalidParameterError,
    Ledger,
    PrivacyBudget,
    PrivacyLeakWarning,
    UtilityWarning,
)
from privrl.envs.synthetic_linear import (
    FEATURE_SCALE,
    synthetic_behaviour_policy,
    synthetic_features,
    synthetic_linear_mdp,
)
from privrl.offline import DPVAPVI, PEVI, VAPVI
from privrl.offline.calibration import linear_noise
from privrl.offline.linear import release_statistic, theory_L
from privrl.privacy import Releaser, make_noise, zcdp_to_approx_dp

LAM = 1.0 / FEATURE_SCALE**2   # = λ 1 on the raw Appendix F features
GRAM_BAR, SECOND, FIRST, GRAM, TARGET = range(5)


def linear_mechanisms(H, d, rho, *, calibration="sound", **kwargs):
    return linear_noise(H, d, PrivacyBudget(rho=rho), calibration=calibration, **kwargs)


def _rel(rng):
    return Releaser(make_noise(rng), Ledger())


@pytest.fixture(scope="module")
def env5():
    return synthetic_linear_mdp(horizon=5, rng=1), synthetic_behaviour_policy()


# ----------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("rho,std1,std2,var_z", [(0.1, 17888.54, 894.427, 250.0), (1.0, 5656.854, 282.843, 25.0),
                                                 (5.0, 2529.822, 126.491, 5.0), (25.0, 1131.371, 56.569, 1.0)])
def test_paper_noise_table(rho, std1, std2, var_z):
    noise = linear_mechanisms(20, 10, rho, calibration="paper")
    assert np.allclose(noise.std[SECOND], std1, atol=6e-3)
    assert np.allclose(noise.std[FIRST], std2, atol=6e-4)
    assert np.allclose(noise.std[TARGET], std2, atol=6e-4)
    # mechanism std on T(M) is sqrt(2)·s, s² = Var Z_ij
    assert np.allclose((noise.std[[GRAM_BAR, GRAM]] / math.sqrt(2)) ** 2, var_z, rtol=1e-9)
    sound = linear_mechanisms(20, 10, rho, calibration="sound")
    assert np.allclose((sound.std[GRAM] / math.sqrt(2)) ** 2, 2 * var_z, rtol=1e-9)   # Var Z = 1/(2ρ0)
    np.testing.assert_array_equal(sound.std[SECOND], noise.std[SECOND])


def test_matrix_noise_distribution():
    rho0 = 0.01
    noise = linear_mechanisms(20, 4, rho0 * 100, calibration="paper")
    rng = np.random.default_rng(0)
    draws = np.array([release_statistic(_rel(rng), noise, GRAM, 0, np.zeros((4, 4))) for _ in range(20000)])
    draws -= noise.shift[1, 0] * np.eye(4)
    assert np.allclose(draws, np.swapaxes(draws, 1, 2))
    assert draws[:, 0, 1].var() == pytest.approx(1 / (4 * rho0), rel=0.05)
    assert draws[:, 2, 2].var() == pytest.approx(1 / (2 * rho0), rel=0.05)


@pytest.mark.parametrize("rho,E", [(1.0, 120.844), (0.1, 382.143), (5.0, 54.043), (25.0, 24.169)])
def test_shift_E(rho, E):
    assert np.allclose(2 * linear_mechanisms(20, 10, rho, calibration="paper").shift, E, rtol=1e-4)
    assert np.allclose(2 * linear_mechanisms(20, 10, rho).shift, math.sqrt(2) * E, rtol=1e-4)


def test_release_statistic_is_pure_and_accounted():
    noise = linear_mechanisms(5, 3, 1.0)
    M = np.eye(3)
    ra, rb = _rel(np.random.default_rng(4)), _rel(np.random.default_rng(4))
    a = release_statistic(ra, noise, GRAM, 2, M)
    b = release_statistic(rb, noise, GRAM, 2, M)
    np.testing.assert_array_equal(a, b)
    assert np.allclose(a, a.T) and not np.allclose(a, M)
    assert ra.ledger.zcdp_rho() == pytest.approx(1.0 / 25)            # ρ0 = ρ/(5H)
    rv = _rel(0)
    release_statistic(rv, noise, TARGET, 0, np.zeros(3))
    assert rv.ledger.zcdp_rho() == pytest.approx(1.0 / 25)


def test_theory_L():
    assert theory_L(20, 10, 1.0, 0.05) == pytest.approx(4117.60, rel=1e-5)


@pytest.mark.parametrize("calibration", ["tight", "sound", "paper"])
def test_shift_keeps_noise_psd(calibration):
    """Lemma D.2: λ_min(K_i) >= 0 and ||K_i|| <= E in >= 1 − δ/(5H) of draws (10⁴ draws, d = 10)."""
    H, d, rho, delta = 20, 10, 1.0, 0.05
    noise = linear_mechanisms(H, d, rho, delta_fail=delta, calibration=calibration)
    rng = np.random.default_rng(1)
    s = noise.std[GRAM, 0] / math.sqrt(2)
    Z = rng.normal(0, s, (10000, d, d))
    K = noise.shift[1, 0] * np.eye(d) + (Z + np.swapaxes(Z, 1, 2)) / math.sqrt(2)
    ev = np.linalg.eigvalsh(K)
    assert np.mean(ev[:, 0] < 0) <= delta / (5 * H)
    assert np.mean(np.abs(ev).max(axis=1) > 2 * noise.shift[1, 0]) <= delta / (5 * H)


def test_ledger_spends_budget(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 50, rng=0)
    est = DPVAPVI(budget=PrivacyBudget(rho=2.0)).fit(data, mdp, rng=1)
    assert len(est.privacy_ledger_) == 5 * 5 - 3          # tight: no first stage at the last step
    assert est.privacy_ledger_.zcdp_rho() == pytest.approx(2.0, rel=1e-8)
    sound = DPVAPVI(budget=PrivacyBudget(rho=2.0), calibration="sound").fit(data, mdp, rng=1)
    assert len(sound.privacy_ledger_) == 5 * 5
    assert sound.privacy_ledger_.zcdp_rho() == pytest.approx(2.0, rel=1e-12)
    assert est.privacy_spent(1e-5) <= zcdp_to_approx_dp(2.0, 1e-5) + 1e-9
    with pytest.warns(PrivacyLeakWarning):
        paper = DPVAPVI(budget=PrivacyBudget(rho=2.0), calibration="paper").fit(data, mdp, rng=1)
    assert paper.privacy_ledger_.zcdp_rho() == pytest.approx(1.4 * 2.0, rel=1e-12)
    eps = DPVAPVI(budget=PrivacyBudget(epsilon=3.0, delta=1e-6)).fit(data, mdp, rng=1)
    assert eps.privacy_spent(1e-6) <= 3.0 * (1 + 1e-6)


def test_noise_scales_data_independent(env5):
    mdp, mu = env5
    a = DPVAPVI(budget=PrivacyBudget(rho=1.0)).fit(mdp.sample(mu, 20, rng=0), mdp, rng=1)
    b = DPVAPVI(budget=PrivacyBudget(rho=1.0), C=3.0, D=5.0, lam=2.0, delta_fail=0.2, split=False).fit(
        mdp.sample(mu, 700, rng=3), mdp, rng=1)
    assert a.privacy_ledger_.events == b.privacy_ledger_.events


def test_statistic_sensitivities():
    """Replace one trajectory: the five statistics move by at most 2H², 2H, 2H, sqrt(2), sqrt(2)."""
    rng = np.random.default_rng(0)
    H, d = 6, 5
    worst = np.zeros(5)
    for _ in range(2000):
        phi, psi = rng.normal(size=(2, d))
        phi /= max(1.0, np.linalg.norm(phi)) * rng.uniform(1, 1.5)
        psi /= np.linalg.norm(psi)
        v1, v2 = rng.uniform(0, H - 1, 2)
        r1, r2 = rng.uniform(0, 1, 2)
        s1, s2 = 1 + rng.exponential(size=2)
        worst = np.maximum(worst, [
            np.linalg.norm(phi * v1**2 - psi * v2**2), np.linalg.norm(phi * v1 - psi * v2),
            np.linalg.norm(phi * (r1 + v1) / s1 - psi * (r2 + v2) / s2),
            np.linalg.norm(np.outer(phi, phi) - np.outer(psi, psi)),
            np.linalg.norm(np.outer(phi, phi) / s1 - np.outer(psi, psi) / s2)])
    noise = linear_mechanisms(H, d, 1.0)
    bounds = noise.sensitivity[[SECOND, FIRST, TARGET, GRAM_BAR, GRAM], 0]
    assert np.all(worst <= np.array(bounds) + 1e-12)
    e1, e2 = np.eye(d)[:2]
    assert np.linalg.norm(np.outer(e1, e1) - np.outer(e2, e2)) == pytest.approx(noise.sensitivity[GRAM, 0])


# ----------------------------------------------------------------------------- algorithm
def test_infinite_budget_equals_vapvi(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 300, rng=0)
    for split in (True, False):
        base = VAPVI(split=split, lam=LAM).fit(data, mdp)
        dp = DPVAPVI(budget=PrivacyBudget(rho=math.inf), split=split, lam=LAM).fit(data, mdp, rng=1)
        np.testing.assert_array_equal(dp.policy_, base.policy_)
        np.testing.assert_array_equal(dp.weights_, base.weights_)
        np.testing.assert_array_equal(dp.variances_, base.variances_)
        assert len(dp.privacy_ledger_) == 0 and dp.privacy_spent(1e-5) == math.inf


def test_ridge_identity_and_variance_floor(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 200, rng=0)
    est = VAPVI(split=False, lam=LAM, C=0.0).fit(data, mdp)
    assert est.variances_.min() >= 1.0
    h = 2
    phi = mdp.features
    X = phi[data["observations"][:, h], data["actions"][:, h]]
    y = data["rewards"][:, h] + est.values_[h + 1][data["next_observations"][:, h]]
    w = 1 / np.sqrt(est.variances_[h][data["observations"][:, h], data["actions"][:, h]])
    A = np.vstack([X * w[:, None], math.sqrt(LAM) * np.eye(10)])
    b = np.r_[y * w, np.zeros(10)]
    np.testing.assert_allclose(est.weights_[h], np.linalg.lstsq(A, b, rcond=None)[0], atol=1e-8)
    pevi = PEVI(beta=0.0, lam=LAM).fit(data, mdp)
    y = data["rewards"][:, h] + pevi.values_[h + 1][data["next_observations"][:, h]]
    A = np.vstack([X, math.sqrt(LAM) * np.eye(10)])
    np.testing.assert_allclose(pevi.weights_[h], np.linalg.lstsq(A, np.r_[y, np.zeros(10)], rcond=None)[0],
                               atol=1e-8)


def test_pd_guard_counts_and_output_finite(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 30, rng=0)
    est = DPVAPVI(budget=PrivacyBudget(rho=1.0), delta_fail=0.999999).fit(data, mdp, rng=2)
    assert np.all(np.isfinite(est.q_values_)) and est.pd_guard_count_ >= 0
    assert est.q_values_.min() >= 0 and np.all(est.q_values_[0] <= 5)


def test_gap_falls_with_K_and_rho(env5):
    mdp, mu = env5
    v_star = mdp.optimal_value()

    def gap(make, K):
        out = []
        for rep in range(5):
            data = mdp.sample(mu, K, rng=rep)
            out.append(v_star - mdp.value(make().fit(data, mdp, rng=100 + rep).policy_))
        assert min(out) >= -1e-12
        return np.mean(out)

    def dp(rho):
        return lambda: DPVAPVI(budget=PrivacyBudget(rho=rho), split=False, lam=LAM)

    assert gap(dp(1.0), 20000) < gap(dp(1.0), 200) - 0.3
    assert gap(dp(1e4), 200) < gap(dp(1.0), 200) - 0.3
    assert gap(lambda: VAPVI(split=False, lam=LAM), 2000) <= gap(lambda: VAPVI(split=False, lam=LAM), 50)
    assert gap(lambda: PEVI(lam=LAM), 2000) < gap(lambda: PEVI(lam=LAM), 50)


def test_regression_guard_paper_scale_baselines():
    """Spec test 31: K = 1000, H = 20 — VAPVI and PEVI reach a mean gap < 0.1."""
    mdp, mu = synthetic_linear_mdp(horizon=20, rng=0), synthetic_behaviour_policy()
    gaps = {"vapvi": [], "pevi": []}
    for rep in range(3):
        data = mdp.sample(mu, 1000, rng=rep)
        gaps["vapvi"].append(mdp.optimal_value() - mdp.value(VAPVI(split=False, lam=LAM).fit(data, mdp).policy_))
        gaps["pevi"].append(mdp.optimal_value() - mdp.value(PEVI(lam=LAM).fit(data, mdp).policy_))
    assert np.mean(gaps["vapvi"]) < 0.1 and np.mean(gaps["pevi"]) < 0.1


# ----------------------------------------------------------------------------- validation
def test_feature_bound_validated(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 20, rng=0)
    raw = synthetic_features()
    with pytest.raises(InvalidDataError, match="feature_norm_bound"):
        DPVAPVI(budget=PrivacyBudget(rho=1.0)).fit(data, raw, rng=0)
    # declaring the true bound is accepted and scales the sensitivities
    est = DPVAPVI(budget=PrivacyBudget(rho=1.0), feature_norm_bound=math.sqrt(7)).fit(data, raw, rng=0)
    assert est.privacy_ledger_.zcdp_rho() == pytest.approx(1.0, rel=1e-8)
    noise = linear_mechanisms(5, 10, 1.0, feature_norm_bound=math.sqrt(7))
    assert noise.sensitivity[SECOND, 0] == pytest.approx(2 * math.sqrt(7) * 25)
    assert noise.sensitivity[GRAM, 0] == pytest.approx(math.sqrt(2) * 7)


def test_bad_parameters(env5):
    mdp, mu = env5
    data = mdp.sample(mu, 20, rng=0)
    for est, name in [(DPVAPVI(budget=PrivacyBudget(rho=1.0), calibration="x"), "calibration"),
                      (DPVAPVI(budget=PrivacyBudget(rho=1.0), lam=0.0), "lam"),
                      (DPVAPVI(budget=PrivacyBudget(rho=1.0), C=-1.0), "C"),
                      (DPVAPVI(budget=PrivacyBudget(rho=1.0), delta_fail=0.0), "delta_fail"),
                      (DPVAPVI(budget=PrivacyBudget(epsilon=1.0)), "budget"),
                      (DPVAPVI(budget=None), "budget"),
                      (PEVI(beta=-1.0), "beta"),
                      (VAPVI(split="yes"), "split")]:
        with pytest.raises(InvalidParameterError, match=name):
            est.fit(data, mdp, rng=0)
    rewards = {k: v.copy() for k, v in data.items()}
    rewards["rewards"][0, 0] = 1.5
    with pytest.raises(InvalidDataError, match="rewards"):
        VAPVI().fit(rewards, mdp)
    with pytest.raises(InvalidDataError, match="split"):
        VAPVI().fit({k: v[:1] for k, v in data.items()}, mdp)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UtilityWarning)   # K = 10: noise-dominated (tested above)
        DPVAPVI(budget=PrivacyBudget(rho=1.0)).fit(data, mdp, rng=0)   # tight mode: no leak warning


@pytest.mark.slow
def test_paper_scale_dp_vapvi_meets_vapvi_at_large_K():
    """Spec test 23 at H = 20: with the sound calibration DP-VAPVI (ρ = 25) is within 0.1 of VAPVI
    at K = 10⁵ (5 seeds), and far from it at K = 1000."""
    mdp, mu = synthetic_linear_mdp(horizon=20, rng=0), synthetic_behaviour_policy()
    diffs = {}
    for K in (1000, 100_000):
        d = []
        for rep in range(5):
            data = mdp.sample(mu, K, rng=rep)
            dp = DPVAPVI(budget=PrivacyBudget(rho=25.0), split=False, lam=LAM).fit(data, mdp, rng=50 + rep)
            base = VAPVI(split=False, lam=LAM).fit(data, mdp)
            d.append(mdp.value(base.policy_) - mdp.value(dp.policy_))
        diffs[K] = np.mean(d)
    assert diffs[100_000] < 0.1 < diffs[1000]


def test_noise_dominated_release_warns(env5):
    """A fit whose released Gram matrix carries noise at least half its typical eigenvalue K·B²/d
    (the plan's 'hopeless' threshold) warns — here the policy is far from optimal (gap ≈ 1) although
    nothing is degenerate; with 100x the data the same budget is quiet and the policy optimal."""
    mdp, mu = env5
    v_star = mdp.optimal_value()
    for K, warned in [(200, True), (20000, False)]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = DPVAPVI(budget=PrivacyBudget(rho=1.0), split=False, lam=LAM).fit(mdp.sample(mu, K, rng=0), mdp,
                                                                                   rng=1)
        messages = [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]
        assert any("noise-dominated" in m for m in messages) == warned, messages
        gap = v_star - mdp.value(est.policy_)
        assert (gap > 0.5) if warned else (gap < 1e-9)
    with warnings.catch_warnings(record=True) as caught:     # non-private: never
        warnings.simplefilter("always")
        DPVAPVI(budget=PrivacyBudget(rho=math.inf), split=False, lam=LAM).fit(mdp.sample(mu, 200, rng=0), mdp, rng=1)
    assert not [w for w in caught if issubclass(w.category, UtilityWarning)]
