"""The auditor's statistics: Clopper–Pearson intervals, the ε bound, the test procedure."""

import math

import numpy as np
import pytest
from scipy import stats

from privrl.audit.core import (
    VIOLATION,
    audit_mechanism,
    audit_samples,
    clopper_pearson,
    epsilon_lower_bound,
)
from privrl.errors import InvalidParameterError
from privrl.privacy import LaplaceMechanism


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (7, 5000), (4990, 5000)])
def test_clopper_pearson_matches_beta_quantiles(k, n):
    alpha = 0.05
    lo, hi = clopper_pearson(k, n, alpha)
    want_lo = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
    want_hi = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    assert float(lo) == pytest.approx(want_lo, rel=1e-12, abs=1e-15)
    assert float(hi) == pytest.approx(want_hi, rel=1e-12, abs=1e-15)


def test_clopper_pearson_known_values_and_exactness():
    # k = 0: upper = 1 - (alpha/2)^(1/n); k = n: lower = (alpha/2)^(1/n)
    lo, hi = clopper_pearson(0, 10, 0.05)
    assert float(lo) == 0.0 and float(hi) == pytest.approx(1 - 0.025 ** 0.1, rel=1e-12)
    lo, hi = clopper_pearson(20, 20, 0.05)
    assert float(lo) == pytest.approx(0.025 ** (1 / 20), rel=1e-12) and float(hi) == 1.0
    # defining property: P[Bin(n, hi) <= k] = alpha/2 and P[Bin(n, lo) >= k] = alpha/2
    k, n = 12, 300
    lo, hi = clopper_pearson(k, n, 0.05)
    assert stats.binom.cdf(k, n, float(hi)) == pytest.approx(0.025, rel=1e-9)
    assert stats.binom.sf(k - 1, n, float(lo)) == pytest.approx(0.025, rel=1e-9)


def test_clopper_pearson_vectorised_and_rejects_bad_counts():
    lo, hi = clopper_pearson(np.array([0, 5, 10]), 10, 0.1)
    assert lo.shape == hi.shape == (3,) and np.all(lo <= hi)
    with pytest.raises(InvalidParameterError, match="k/n"):
        clopper_pearson(11, 10, 0.05)
    with pytest.raises(InvalidParameterError, match="alpha"):
        clopper_pearson(1, 10, 1.5)


def test_epsilon_lower_bound_formula():
    assert float(epsilon_lower_bound(0.01, 0.5, 0.0)) == pytest.approx(math.log(0.5 / 0.01))
    assert float(epsilon_lower_bound(0.01, 0.5, 0.1)) == pytest.approx(math.log(0.4 / 0.01))
    assert float(epsilon_lower_bound(0.6, 0.5, 0.0)) == 0.0        # worse than chance: 0, never negative
    assert float(epsilon_lower_bound(0.2, 0.95, 0.1)) == 0.0       # numerator <= 0
    assert math.isinf(float(epsilon_lower_bound(0.0, 0.5, 0.0)))


def test_perfectly_separated_samples_give_the_exact_bound():
    # Outputs never overlap: FP = FN = 0 on the evaluation half of n = 500 per input.
    a = np.full((1000, 1), 1.0) + np.linspace(0, 0.1, 1000)[:, None]
    b = -a
    res = audit_samples(a, b, epsilon=1.0, delta=1e-5, confidence=0.95)
    n, alpha = 500, 0.05
    fpr_hi = 1 - (alpha / 4) ** (1 / n)          # each rate's two-sided interval at level 1 - alpha/2
    want = math.log((1 - 1e-5 - fpr_hi) / fpr_hi)
    assert res.fpr == 0 and res.fnr == 0
    assert res.epsilon_lower == pytest.approx(want, rel=1e-9)
    assert res.verdict == VIOLATION and math.isinf(res.ci[1])


def test_identical_distributions_are_consistent():
    rng = np.random.default_rng(1)
    res = audit_samples(rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3)), epsilon=0.1, delta=0.0)
    assert res.verdict == "consistent"
    assert res.epsilon_lower < 0.1


def test_false_alarm_rate_is_controlled():
    """An honest 1-DP Laplace mechanism audited 30 times with independent seeds: at confidence 0.95,
    at most a few false alarms are possible; none is expected with these fixed seeds (stated
    tolerance: <= 2 of 30, a binomial tail probability < 0.2 even at the nominal 5 %)."""
    mech = LaplaceMechanism(sensitivity=1.0, noise_scale=1.0)

    def on(v):
        return lambda n, rng: mech.release(np.full((n, 1), v), rng=rng)[0]
    alarms = sum(audit_mechanism(on(0.0), on(1.0), epsilon=1.0, delta=0.0, trials=2000, rng=s).violation
                 for s in range(30))
    assert alarms <= 2


def test_custom_statistic_and_bad_input():
    rng = np.random.default_rng(2)
    a, b = rng.normal(3.0, 1.0, size=(2000, 2)), rng.normal(0.0, 1.0, size=(2000, 2))

    def first_coordinate(sel_a, sel_b):
        return lambda x: x[:, 0]
    res = audit_samples(a, b, epsilon=10.0, delta=0.0, statistics=[first_coordinate])
    assert res.statistic == "first_coordinate" and res.epsilon_lower > 1.0
    with pytest.raises(InvalidParameterError, match="samples_a"):
        audit_samples(a[:2], b, epsilon=1.0, delta=0.0)
    with pytest.raises(InvalidParameterError, match="samples_b"):
        audit_samples(a, b[:, :1], epsilon=1.0, delta=0.0)
    with pytest.raises(InvalidParameterError, match="confidence"):
        audit_samples(a, b, epsilon=1.0, delta=0.0, confidence=1.0)
    with pytest.raises(InvalidParameterError, match="statistics"):
        audit_samples(a, b, epsilon=1.0, delta=0.0, statistics=["nope"])
    with pytest.raises(InvalidParameterError, match="trials"):
        audit_mechanism(lambda n, r: a[:n], lambda n, r: b[:n], epsilon=1.0, delta=0.0, trials=2)
    with pytest.raises(InvalidParameterError, match="sample_a"):
        audit_mechanism(lambda n, r: a[:5], lambda n, r: b[:n], epsilon=1.0, delta=0.0, trials=100)


def test_raw_floats_reveal_the_floating_point_lattice_and_rounding_removes_it():
    """Mironov (2012): ``fl(1 + n)`` near 0 lies on the 2⁻⁵³ lattice, ``fl(0 + n) = n`` does not.
    A statistic reading the last bits separates a 1-DP Laplace release far beyond ε = 1 on raw
    floats; the default rounding (``resolution_bits=40``) audits the calibration instead."""
    mech = LaplaceMechanism(sensitivity=1.0, noise_scale=1.0)
    rng = np.random.default_rng(7)
    a = mech.release(np.full((200_000, 1), 1.0), rng=rng)[0]
    b = mech.release(np.full((200_000, 1), 0.0), rng=rng)[0]

    def on_lattice_near_zero(sel_a, sel_b):
        def score(x):
            x = x[:, 0]
            return ((np.abs(x) < 2.0**-4) & (np.floor(x * 2.0**53) == x * 2.0**53)).astype(float)
        return score
    raw = audit_samples(a, b, epsilon=1.0, delta=0.0, statistics=[on_lattice_near_zero], resolution_bits=None)
    assert raw.verdict == VIOLATION and raw.epsilon_lower > 1.5
    rounded = audit_samples(a, b, epsilon=1.0, delta=0.0, statistics=[on_lattice_near_zero])
    assert rounded.verdict == "consistent"
