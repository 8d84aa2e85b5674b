"""The canary audit of whole DP-BC training runs (``dp-bc-canary``, ``dp-bc-canary-secure``).

The audits themselves — the real target consistent, the ``noise-off`` control flagged — run in
tests/audit/test_targets.py (fast: 40 fits per dataset) and tests/audit/test_slow_audits.py (full). Here: the
canary is what it claims to be, and the scores become the bound of the standard construction (threshold on the
selection half, Clopper–Pearson on the evaluation half), checked against hand-computed values on synthetic
scores.
"""

import math

import numpy as np
import pytest
from scipy import stats

from privrl.audit.core import audit_samples
from privrl.audit.registry import get_target
from privrl.deep_offline import canary
from privrl.errors import InvalidParameterError

DELTA = 1e-5
ALPHA = 0.05


def _audit(a, b):
    return audit_samples(np.asarray(a, float)[:, None], np.asarray(b, float)[:, None], epsilon=1.0, delta=DELTA,
                         statistics=get_target("dp-bc-canary").statistics)


def _cp_upper(k, n):
    """The upper end of the two-sided Clopper–Pearson interval at level 1 − α/2 (each of the two rates)."""
    return 1.0 - (ALPHA / 4) ** (1 / n) if k == 0 else stats.beta.ppf(1 - ALPHA / 4, k + 1, n - k)


def test_the_canary_is_out_of_distribution_and_added_to_the_public_data():
    d, d_canary = canary.canary_datasets()
    assert d_canary.n_episodes == d.n_episodes + 1
    np.testing.assert_array_equal(d_canary.observations[:d.n_transitions], d.observations)
    z = d_canary.episode(d.n_episodes)
    assert np.all(np.asarray(z.actions) == canary.CANARY_ACTION)
    assert canary.CANARY_ACTION not in set(np.asarray(d.actions).tolist())      # an action nobody else takes
    assert np.all(np.asarray(d.observations)[:, 1] == 0.0)                     # public states on y = 0
    assert np.all(np.asarray(z.observations) == np.asarray(canary.CANARY_STATE))


def test_separated_scores_give_the_hand_computed_clopper_pearson_bound():
    """40 fits per dataset without overlap: no error on the evaluation halves (20 each), so
    ε_lower = ln((1 − δ − u) / u), u = 1 − (α/4)^(1/20) = 0.19676 — the largest the audit can certify."""
    rng = np.random.default_rng(0)
    res = _audit(rng.uniform(-20, -6, 40), rng.uniform(-1, 0, 40))
    u = 1 - 0.0125 ** (1 / 20)
    assert u == pytest.approx(0.19676, abs=1e-5)
    assert res.fpr == res.fnr == 0.0
    assert res.epsilon_lower == pytest.approx(math.log((1 - DELTA - u) / u), rel=1e-9)
    assert res.epsilon_lower == pytest.approx(canary.largest_certifiable_epsilon(40, DELTA), rel=1e-9)
    assert res.epsilon_lower == pytest.approx(1.4067, abs=1e-4) and res.violation


def test_the_threshold_comes_from_the_selection_half_and_the_errors_from_the_other():
    """The selection halves are separated at 0 (a below, b above); the evaluation halves hold 3 runs of b
    below it: with b as the "positive" input those are 3 false positives out of 20 at the threshold the
    selection half chose, and the bound is the hand-computed one for (fp, fn) = (3, 0)."""
    a = np.r_[np.linspace(-10, -1, 20), np.linspace(-10, -1, 20)]
    b = np.r_[np.linspace(1, 10, 20), -5.0, -4.0, -3.0, np.linspace(1, 10, 17)]
    res = _audit(a, b)
    assert (res.statistic, res.fpr * 20, res.fnr) == ("gap_midpoint", 3.0, 0.0)
    want = math.log((1 - DELTA - _cp_upper(0, 20)) / _cp_upper(3, 20))
    assert res.epsilon_lower == pytest.approx(want, rel=1e-9)
    assert res.epsilon_lower == pytest.approx(0.6701, abs=1e-4)


def test_the_gap_midpoint_leaves_room_where_the_edge_threshold_does_not():
    """A run of the evaluation half just beyond the selection half's extreme score: an error for a threshold
    at the edge of the gap (the score itself, ``coordinate``), none for the middle of the gap."""
    a = np.r_[np.linspace(-20, -6, 20), np.linspace(-20, -6, 20)]
    b = np.r_[np.linspace(-0.5, 0.0, 20), -1.0, np.linspace(-0.5, 0.0, 19)]
    edge = audit_samples(a[:, None], b[:, None], epsilon=1.0, delta=DELTA, statistics=("coordinate",))
    assert edge.fpr * 20 + edge.fnr * 20 == 1
    mid = _audit(a, b)
    assert mid.fpr == mid.fnr == 0.0 and mid.epsilon_lower > edge.epsilon_lower


def test_largest_certifiable_epsilon_refuses_too_few_runs():
    with pytest.raises(InvalidParameterError, match="'runs' parameter of largest_certifiable_epsilon"):
        canary.largest_certifiable_epsilon(3, DELTA)


def test_gap_midpoint_orientation_and_threshold():
    low, high = np.array([[-9.0], [-7.0]]), np.array([[-1.0], [3.0]])
    test = canary.gap_midpoint(high, low)            # "a" is the higher sample: +1 above m = -4
    np.testing.assert_array_equal(test(np.array([[-4.1], [-3.9]])), [-1.0, 1.0])
    test = canary.gap_midpoint(low, high)            # "a" is the lower sample: +1 below m
    np.testing.assert_array_equal(test(np.array([[-4.1], [-3.9]])), [1.0, -1.0])
    test = canary.gap_midpoint(np.array([[0.0], [4.0], [9.0]]), np.array([[-2.0], [1.0], [2.0]]))  # overlap
    np.testing.assert_array_equal(test(np.array([[2.4], [2.6]])), [-1.0, 1.0])       # medians' middle 2.5


def test_the_score_is_the_canary_log_likelihood():
    est = canary.audited_estimator(1.0, DELTA)
    est.sizes_, est.params_ = (2, 1, 3), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0])  # logits = b2
    assert canary.canary_score(est) == pytest.approx(3.0 - math.log(math.exp(1) + math.exp(2) + math.exp(3)))


def test_the_secure_audit_fits_with_opendp_noise():
    """``dp-bc-canary-secure`` trains with ``secure=True`` (no seed: OpenDP noise, init and batches from the OS)
    and claims what the seeded fit's ledger claims."""
    pytest.importorskip("opendp")
    pair = get_target("dp-bc-canary-secure").build(1.0, DELTA, None)
    scores = pair.sample_b(2, np.random.default_rng(0))
    assert scores.shape == (2, 1) and np.all(np.isfinite(scores)) and scores[0, 0] != scores[1, 0]
    assert pair.claimed_epsilon == pytest.approx(get_target("dp-bc-canary").build(1.0, DELTA, None).claimed_epsilon)
    assert 0.99 < pair.claimed_epsilon <= 1.0
