"""Utility facts (T20) and chain trends (T23; paper-scale versions are `slow`)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from privrl.data.features import one_hot, state_aggregation
from privrl.envs.chain import chain_values, sample_chain_statistics
from privrl.least_squares.smooth_sensitivity import psi_w
from privrl.policy_evaluation import DPLSLMechanism, DPLSWMechanism, VisitStatistics
from privrl.privacy import NumpyNoise


def _expected_term(m, p, beta):
    """E[max_k e^{-kβ} / max(B − k, 1)²], B ~ Bin(m, p), exactly (via psi_w on one state)."""
    a = np.arange(m + 1)
    terms = np.array([psi_w(np.array([k]), np.array([1.0]), beta) for k in a])
    return float(np.sum(sps.binom.pmf(a, m, p) * terms))


@pytest.mark.parametrize("m,p,beta", [(50, 0.3, 0.05), (200, 0.1, 0.5), (300, 1.0, 0.01), (100, 0.02, 2.0)])
def test_corrected_lemma25_bound_holds(m, p, beta):
    """T20: the corrected Lemma 25 bound (e^β instead of e²β²/4) holds exactly."""
    lhs = _expected_term(m, p, beta)
    rhs = 6 / (p**2 * (m + 1) * (m + 2)) + math.exp(beta) * (1 - (1 - math.exp(-beta)) * p) ** m
    assert lhs <= rhs


def test_printed_lemma25_bound_fails():
    """T20: the printed bound is violated (β = 10⁻³, p = 1, m = 1000: 0.368 vs 6.7·10⁻⁶)."""
    beta, m = 1e-3, 1000
    lhs = psi_w(np.array([m]), np.array([1.0]), beta)  # B = m surely
    printed = 6 / ((m + 1) * (m + 2)) + math.e**2 * beta**2 / 4 * (1 - (1 - math.exp(-beta))) ** m
    assert lhs == pytest.approx(math.exp(-beta * (m - 1)), rel=1e-12)
    assert lhs == pytest.approx(0.3682, abs=1e-4) and printed < 1e-5 < lhs


def _chain_runs(ms, runs, f_max=1.0):
    truth = chain_values()
    w = np.full(40, 1 / 40)
    out = {}
    for name, phi in (("tabular", one_hot(40)), ("pairs", state_aggregation(40, 2))):
        lsw = DPLSWMechanism.create(features=phi, weights=w, F_max=f_max, epsilon=0.1, delta=0.1,
                                    calibration="paper")
        for m in ms:
            lsl = DPLSLMechanism.create(features=phi, relevance=w, lam=2 / 40 + math.sqrt(m),
                                        F_max=f_max, epsilon=0.1, delta=0.1, calibration="paper")
            for run in range(runs):
                counts, mean = sample_chain_statistics(m, 0.99, rng=run * 1000 + m % 997)
                st = VisitStatistics(counts, mean, m)
                noise = NumpyNoise(run)
                rec = {}
                for key, mech in (("lsw", lsw), ("lsl", lsl)):
                    theta = mech.solve(st)
                    rec[key + "_sigma"] = mech.noise_scale(counts, m)
                    released = mech.release(theta, counts, m, noise=noise).value
                    rec[key + "_rmse"] = math.sqrt(np.mean((phi @ released - truth) ** 2))
                out.setdefault((name, m), []).append(rec)
    return {k: {f: float(np.mean([r[f] for r in v])) for f in v[0]} for k, v in out.items()}


@pytest.mark.stat
def test_noise_scales_decrease_with_batch_size():
    """T23 (quick version): E[σ_X] is non-increasing in m for both algorithms and feature maps."""
    res = _chain_runs([100, 1000, 10_000], runs=3)
    for name in ("tabular", "pairs"):
        for alg in ("lsw", "lsl"):
            s = [res[(name, m)][alg + "_sigma"] for m in (100, 1000, 10_000)]
            assert s[0] >= s[1] >= s[2]


@pytest.mark.slow
def test_chain_trends_at_paper_scale():
    """T23: at m = 10⁶ (F_max = 1) DP-LSW's RMSE < 0.2 and beats DP-LSL, DP-LSL wins at small m,
    and pair aggregation gives DP-LSW a smaller σ than tabular (larger β)."""
    res = _chain_runs([100, 10**6], runs=5)
    big, small = res[("tabular", 10**6)], res[("tabular", 100)]
    assert big["lsw_rmse"] < 0.2
    assert big["lsw_rmse"] < big["lsl_rmse"]
    assert small["lsl_rmse"] < small["lsw_rmse"]
    assert res[("pairs", 10**6)]["lsw_sigma"] < big["lsw_sigma"]
