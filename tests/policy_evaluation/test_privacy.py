"""Privacy of DP-LSW / DP-LSL: sensitivity bounds and Lemma 1's conditions on adversarial neighbours
(T15, T16), an end-to-end Monte Carlo check with a negative control (T17) and the noise law (T18)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from privrl.least_squares.smooth_sensitivity import phi_lambda, phi_w, smoothing_constants
from privrl.policy_evaluation import (
    DPLSLMechanism,
    DPLSWMechanism,
    VisitStatistics,
    lambda_min,
)
from privrl.privacy import Ledger, NumpyNoise


def _stats(returns):
    """Per-trajectory first-visit returns (m, N), NaN = not visited → VisitStatistics."""
    visited = ~np.isnan(returns)
    counts = visited.sum(axis=0)
    sums = np.where(visited, returns, 0.0).sum(axis=0)
    mean = np.divide(sums, counts, out=np.zeros(returns.shape[1]), where=counts > 0)
    return VisitStatistics(counts=counts, mean_returns=mean, n_trajectories=returns.shape[0])


def _random_instance(rng, f_max):
    n = int(rng.integers(2, 7))
    m = int(rng.integers(1, 9))
    kind = rng.integers(0, 3)
    if kind == 0:
        phi = np.eye(n)
    elif kind == 1:
        phi = np.zeros((n, (n + 1) // 2))
        phi[np.arange(n), np.arange(n) // 2] = 1.0
    else:
        phi = rng.normal(size=(n, int(rng.integers(1, n + 1))))
    w = np.full(n, 1.0 / n) if rng.random() < 0.3 else rng.uniform(0.05, 1.0, n)
    rho = rng.uniform(0.05, 1.0, n)
    returns = np.where(rng.random((m, n)) < 0.5, rng.choice([0.0, f_max, f_max / 3], (m, n)), np.nan)
    neighbour = returns.copy()
    i = int(rng.integers(0, m))
    neighbour[i] = np.where(rng.random(n) < 0.5, rng.choice([0.0, f_max], n), np.nan)
    return phi, w, rho, returns, neighbour


def _pairs(n_instances, seed=0, f_max=3.0):
    rng = np.random.default_rng(seed)
    return [_random_instance(rng, f_max) for _ in range(n_instances)]


F_MAX = 3.0
EPS, DELTA = 1.0, 0.1


def test_local_sensitivity_bounds_hold_and_lsw_bound_is_tight():
    """T15: Corollaries 3 and 8 on adversarial neighbours; DP-LSW's bound is attained (ratio ≥ 0.95)."""
    worst_w, worst_l = 0.0, 0.0
    for phi, w, rho, x, x2 in _pairs(1500):
        a, b = _stats(x), _stats(x2)
        mw = DPLSWMechanism.create(features=phi, weights=w, F_max=F_MAX, epsilon=EPS, delta=DELTA)
        bound_w = F_MAX * mw.pinv_norm * math.sqrt(phi_w(a.counts, w))
        ratio_w = np.linalg.norm(mw.solve(a) - mw.solve(b)) / bound_w
        lam = lambda_min(phi, rho) * 1.05 + 0.01
        ml = DPLSLMechanism.create(features=phi, relevance=rho, lam=lam, F_max=F_MAX, epsilon=EPS, delta=DELTA)
        c_lam = ml.phi_norm * rho.max() / math.sqrt(2 * lam)
        bound_l = (2 * F_MAX * ml.phi_norm / (lam - lambda_min(phi, rho))
                   * math.sqrt(phi_lambda(a.counts, rho, c_lam, a.n_trajectories)))
        ratio_l = np.linalg.norm(ml.solve(a) - ml.solve(b)) / bound_l
        assert ratio_w <= 1 + 1e-9 and ratio_l <= 1 + 1e-9
        worst_w, worst_l = max(worst_w, ratio_w), max(worst_l, ratio_l)
    assert worst_w >= 0.95
    assert worst_l > 0.01  # the neighbours do move θ^λ (Corollary 8 is loose, unlike Corollary 3)


@pytest.mark.parametrize("calibration,smoothing,constants", [
    ("paper", "main_text", "theory"), ("paper", "appendix_a", "theory"),
    ("tight", "main_text", "theory"), ("tight", "main_text", "practical")])
def test_lemma1_conditions_on_adversarial_neighbours(calibration, smoothing, constants):
    """T16: σ_X ≥ α‖θ_X − θ_X'‖ and |ln σ_X² − ln σ_X'²| ≤ β, both directions, both algorithms, with the
    (α, β) of each calibration (under "tight" ψ is rounded up to e^{jβ}: the gap is then 0 or β)."""
    hit_beta = 0.0
    opts = {"epsilon": EPS, "delta": DELTA, "calibration": calibration, "smoothing": smoothing,
            "constants": constants}
    for phi, w, rho, x, x2 in _pairs(800, seed=1):
        lam = lambda_min(phi, rho) * 1.5 + 0.1
        mechs = [DPLSWMechanism.create(features=phi, weights=w, F_max=F_MAX, **opts),
                 DPLSLMechanism.create(features=phi, relevance=rho, lam=lam, F_max=F_MAX, **opts)]
        for mech in mechs:
            alpha, beta = mech.smoothed.alpha, mech.smoothed.beta
            if calibration == "paper":
                assert (alpha, beta) == smoothing_constants(EPS, DELTA, phi.shape[1], smoothing)
            for a, b in ((_stats(x), _stats(x2)), (_stats(x2), _stats(x))):
                sa = mech.noise_scale(a.counts, a.n_trajectories)
                sb = mech.noise_scale(b.counts, b.n_trajectories)
                assert sa >= alpha * np.linalg.norm(mech.solve(a) - mech.solve(b)) * (1 - 1e-12)
                gap = abs(math.log(sa**2) - math.log(sb**2))
                assert gap <= beta * (1 + 1e-9)
                if calibration == "tight":
                    assert min(gap, abs(gap - beta)) <= 1e-9 * beta  # rounded: t ∈ {−β, 0, β}
                hit_beta = max(hit_beta, gap / beta)
    assert hit_beta > 0.5  # the smoothness constraint is actually exercised


# --------------------------------------------------------------------------- T17
def _t17_pair():
    """N = d = 21 tabular, γ = 0.9: X has two trajectories through all states (reward 1 per step)
    and eight that only visit state 20 (reward 0); X' replaces one of the first by one of the second."""
    n, gamma = 21, 0.9
    full = np.array([sum(gamma**t for t in range(n - s)) for s in range(n)])
    only20 = np.full(n, np.nan)
    only20[20] = 0.0
    x = np.vstack([full, full] + [only20] * 8)
    x2 = np.vstack([full] + [only20] * 9)
    return _stats(x), _stats(x2)


def _hockey_stick(mu_p, s_p, mu_q, s_q, eps, n_samples, rng):
    """δ(ε) = E_{Z~P}[(1 − e^{ε − L(Z)})_+], L = ln p/q for P = N(μ_p, s_p² I), Q = N(μ_q, s_q² I)."""
    d = mu_p.size
    z = mu_p + s_p * rng.standard_normal((n_samples, d))
    loss = (d * math.log(s_q / s_p) + ((z - mu_q) ** 2).sum(1) / (2 * s_q**2)
            - ((z - mu_p) ** 2).sum(1) / (2 * s_p**2))
    vals = np.maximum(0.0, 1.0 - np.exp(eps - loss))
    return vals.mean(), vals.std() / math.sqrt(n_samples)


@pytest.mark.stat
def test_monte_carlo_privacy_with_negative_control():
    """T17: the smoothed mechanism passes δ(1) ≤ 0.1 in both directions; noise from the local
    sensitivity alone (ψ → φ(⟨X⟩)) fails it — the smoothing is what makes it private."""
    a, b = _t17_pair()
    phi, w = np.eye(21), np.full(21, 1 / 21)
    mech = DPLSWMechanism.create(features=phi, weights=w, F_max=10.0, epsilon=1.0, delta=0.1, calibration="paper")
    sa, sb = mech.noise_scale(a.counts, 10), mech.noise_scale(b.counts, 10)
    assert sa == pytest.approx(544.66, rel=1e-4) and sb == pytest.approx(547.47, rel=1e-4)
    ta, tb = mech.solve(a), mech.solve(b)
    rng = np.random.default_rng(2024)
    ledger_delta = Ledger([mech.event]).delta(1.0)
    for p, q in (((ta, sa), (tb, sb)), ((tb, sb), (ta, sa))):
        est, se = _hockey_stick(p[0], p[1], q[0], q[1], 1.0, 400_000, rng)
        assert est + 4 * se <= 0.1
        assert est <= ledger_delta + 4 * se

    alpha, _ = smoothing_constants(1.0, 0.1, 21)
    local = [alpha * 10.0 * mech.pinv_norm * math.sqrt(phi_w(s.counts, w)) for s in (a, b)]
    assert local[0] == pytest.approx(273.94, rel=1e-4) and local[1] == pytest.approx(547.47, rel=1e-4)
    worst = max(_hockey_stick(ta, local[0], tb, local[1], 1.0, 400_000, rng)[0],
                _hockey_stick(tb, local[1], ta, local[0], 1.0, 400_000, rng)[0])
    assert worst > 0.5  # ≈ 0.95: a gross violation of δ = 0.1, detected


@pytest.mark.stat
@pytest.mark.parametrize("kind", ["lsw", "lsl"])
def test_noise_is_gaussian_with_scale_sigma(kind):
    """T18: (θ̂ − θ)/σ_X is N(0, 1) per coordinate (KS test), uncorrelated across coordinates,
    and its variance matches σ_X² (the release adds exactly the derived noise)."""
    a, _ = _t17_pair()
    phi = np.zeros((21, 7))
    phi[np.arange(21), np.arange(21) // 3] = 1.0
    if kind == "lsw":
        mech = DPLSWMechanism.create(features=phi, weights=np.full(21, 1 / 21), F_max=10.0, epsilon=1.0, delta=0.1)
    else:
        mech = DPLSLMechanism.create(features=phi, relevance=np.full(21, 1 / 21), lam=5.0, F_max=10.0,
                                     epsilon=1.0, delta=0.1)
    theta = mech.solve(a)
    sigma = mech.noise_scale(a.counts, a.n_trajectories)
    rng = np.random.default_rng(9)
    noise = NumpyNoise(rng)
    z = np.array([(mech.release(theta, a.counts, a.n_trajectories, noise=noise).value - theta) / sigma
                  for _ in range(4000)])
    for j in range(z.shape[1]):
        assert sps.kstest(z[:, j], "norm").pvalue > 1e-3
    # variance within 4 standard errors of 1 (sd of the sample variance ≈ √(2/n))
    assert np.all(np.abs(z.var(axis=0) - 1) < 4 * math.sqrt(2 / z.shape[0]))
    corr = np.corrcoef(z.T)[np.triu_indices(z.shape[1], 1)]
    assert np.max(np.abs(corr)) < 0.08


@pytest.mark.stat
def test_excess_risk_identities():
    """T19: E_η[J^w(θ̂) − J^w(θ)] = σ²‖Γ^{1/2}Φ‖_F² (Lemma 22) and the DP-LSL identity (Lemma 29)."""
    a, _ = _t17_pair()
    phi = np.zeros((21, 7))
    phi[np.arange(21), np.arange(21) // 3] = 1.0
    w = np.full(21, 1 / 21)
    rng = np.random.default_rng(4)
    mw = DPLSWMechanism.create(features=phi, weights=w, F_max=10.0, epsilon=1.0, delta=0.1)
    sigma = mw.noise_scale(a.counts, a.n_trajectories)
    eta = sigma * rng.standard_normal((100_000, 7))
    excess = np.einsum("ij,jk,ik->i", eta, phi.T @ np.diag(w) @ phi, eta)
    assert excess.mean() == pytest.approx(sigma**2 * np.sum(w[:, None] * phi**2), rel=0.02)
    lam, m = 5.0, a.n_trajectories
    ml = DPLSLMechanism.create(features=phi, relevance=w, lam=lam, F_max=10.0, epsilon=1.0, delta=0.1)
    sigma = ml.noise_scale(a.counts, m)
    hess = phi.T @ np.diag(w * a.counts / m) @ phi + lam / (2 * m) * np.eye(7)
    eta = sigma * rng.standard_normal((100_000, 7))
    excess = np.einsum("ij,jk,ik->i", eta, hess, eta)
    expected = sigma**2 * (lam * 7 / (2 * m) + np.sum(w * (phi**2).sum(1) * a.counts) / m)
    assert excess.mean() == pytest.approx(expected, rel=0.02)


def test_lemma1_conditions_through_the_estimator_on_replaced_trajectories():
    """End to end on TrajectoryDatasets: for chain batches and neighbours built with
    ``replace_episode`` (a trajectory sweeping every state with maximal return, or one that sits in
    the absorbing state), the fitted statistics satisfy Lemma 1's (a) and (b) for both algorithms."""
    from privrl.data import TrajectoryDataset
    from privrl.envs.chain import sample_chain
    from privrl.policy_evaluation import DPLSL, DPLSW
    from privrl.privacy import PrivacyBudget

    n = 6
    sweep = TrajectoryDataset(np.arange(n - 1), np.zeros(n - 1, int), np.r_[np.zeros(n - 2), 1.0],
                              np.arange(1, n), np.array([0, n - 1]),
                              terminals=np.r_[np.zeros(n - 2, bool), True], n_states=n, n_actions=1)
    idle = TrajectoryDataset(np.array([n - 1]), np.array([0]), np.array([0.0]), np.array([n - 1]),
                             np.array([0, 1]), terminals=np.array([True]), n_states=n, n_actions=1)
    budget = PrivacyBudget(epsilon=1.0, delta=0.1)
    phi = np.zeros((n, 3))
    phi[np.arange(n), np.arange(n) // 2] = 1.0
    ests = [DPLSW(budget=budget, gamma=0.9, features=phi, F_max=1.0),
            DPLSL(budget=budget, gamma=0.9, features=phi, F_max=1.0, lam=3.0)]
    for seed in range(8):
        data = sample_chain(12, n_states=n, rng=seed)
        for i in (0, 5):
            for other in (sweep, idle):
                pair = (data, data.replace_episode(i, other))
                for est in ests:
                    p = est._validated()
                    stats = [est._prepare(x, p)[0] for x in pair]
                    mech = est._mechanism(phi, 1.0, p, 12)
                    alpha, beta = mech.smoothed.alpha, mech.smoothed.beta
                    thetas = [mech.solve(s) for s in stats]
                    sig = [mech.noise_scale(s.counts, s.n_trajectories) for s in stats]
                    shift = np.linalg.norm(thetas[0] - thetas[1])
                    assert min(sig) >= alpha * shift * (1 - 1e-12)
                    assert abs(math.log(sig[0] ** 2 / sig[1] ** 2)) <= beta * (1 + 1e-9)
