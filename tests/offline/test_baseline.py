"""Safe improvement with a baseline (SPIBB on the estimated logging policy, ``baseline="logging"``),
``policy_probs_`` and the tabular UtilityWarning (released evidence of a gain over the logging policy)."""

import functools
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget, UtilityWarning
from privrl.envs.real_shaped import real_shaped
from privrl.offline import APVI, DPAPVI
from privrl.offline._utility import GAIN_THRESHOLD, improvement_evidence
from privrl.offline.baseline import logging_estimate, spibb_step

#: tolerance of "never below the logging policy" on the small instance (values in [0, 1]; the logging
#: policy is worth 0.696): the estimated logging policy itself misses by up to 0.003 at ε = 1 on these seeds
TOL = 0.01
ROUTE = {"stationary": True, "max_visits": 1, "constants": "practical"}


@functools.lru_cache(maxsize=1)
def _task():
    """A small real-shaped task (low agreement: states of a level differ; a weak clone) and its logs."""
    model = real_shaped(n_states=50, n_actions=8, horizon=8, n_levels=8, n_next=6, n_admissible=3,
                        heterogeneity=1.0, habit_rank=0.6, habit_share=0.4, rng=3)
    return model, model.sample(model.logging_policy, 3000, rng=1, pad_to_horizon=8)


def _fit(est, data, model, seed=0):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        est.fit(data, model, rng=seed)
    return est, [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]


def _budget(eps):
    return PrivacyBudget(epsilon=eps, delta=1e-6)


# ----------------------------------------------------------------------------- the safe improvement
@pytest.mark.parametrize("eps", [None, 1.0, 10.0])
def test_baseline_never_plays_below_the_logging_policy(eps):
    """On every seed, private or not, the SPIBB policy's exact value is at least the logging
    policy's − TOL; at ε = 1 plain DP-APVI (Algorithm 1's greedy policy) on the same released
    counts falls below it."""
    model, data = _task()
    logging = model.value(model.logging_policy)
    worst_plain = np.inf
    for seed in range(3):
        make = (lambda **k: APVI(**ROUTE, **k)) if eps is None else (lambda **k: DPAPVI(budget=_budget(eps),
                                                                                      **ROUTE, **k))
        safe, _ = _fit(make(baseline="logging", baseline_groups=model.groups), data, model, seed)
        plain, _ = _fit(make(), data, model, seed)
        assert model.value(safe.policy_probs_) >= logging - TOL
        worst_plain = min(worst_plain, model.value(plain.policy_))
    if eps == 1.0:
        assert worst_plain < logging - TOL


def test_policy_probs_are_probabilities_and_policy_is_their_argmax():
    model, data = _task()
    for est in (APVI(**ROUTE), APVI(**ROUTE, baseline="logging"),
                DPAPVI(budget=_budget(1.0), **ROUTE, state_groups=model.groups),
                DPAPVI(budget=_budget(1.0), **ROUTE, state_groups=model.groups, baseline="logging")):
        est, _ = _fit(est, data, model)
        probs = est.policy_probs_
        assert probs.shape == (model.horizon, model.n_states, model.n_actions) and probs.min() >= 0.0
        np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(est.policy_, probs.argmax(axis=-1))
        if est.baseline == "none":
            assert set(np.unique(probs)) <= {0.0, 1.0}
        else:
            assert np.any((probs > 0) & (probs < 1))            # stochastic: the estimated logging policy


def test_the_baseline_spends_nothing_and_releases_the_same_counts():
    """Post-processing: the same ledger (events, ε) and the same released counts with and without."""
    model, data = _task()
    plain, _ = _fit(DPAPVI(budget=_budget(1.0), **ROUTE), data, model, seed=4)
    safe, _ = _fit(DPAPVI(budget=_budget(1.0), **ROUTE, baseline="logging"), data, model, seed=4)
    assert safe.privacy_ledger_ == plain.privacy_ledger_ and len(safe.privacy_ledger_) > 0
    assert safe.privacy_spent() == plain.privacy_spent()
    np.testing.assert_array_equal(safe.counts_, plain.counts_)


def test_spibb_moves_only_the_supported_mass():
    """Laroche et al. 2019, Πb-SPIBB with a margin: unsupported actions keep the baseline's
    probability; the supported mass goes to the best supported action only when its lower bound
    beats the baseline's reference value (row 1); not within the margin (row 2) nor on a tie (row 3)."""
    prior = np.tile([0.5, 0.3, 0.2], (3, 1))
    q = np.array([[0.0, 1.0, 5.0], [0.9, 1.0, 5.0], [0.0, 0.0, 0.0]])
    q_ref = q + 0.1
    q_ref[1] = q[1] + 0.5
    supported = np.tile([True, True, False], (3, 1))
    out = spibb_step(q, q_ref, prior, supported)
    np.testing.assert_allclose(out, [[0.0, 0.8, 0.2], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])


def test_logging_estimate_gives_no_mass_to_actions_no_level_supports():
    """Actions 2, 3 are never logged; their released cells are noise. With σ = 5, per-(h, s) counts
    of 10 are thin, but the group level (all states) clears 3σ only for actions 0, 1: the estimate
    puts (almost) all its mass on them, near the logged proportions (a cell kept where its noise
    was large pulls its row up: selection)."""
    rng = np.random.default_rng(0)
    counts = np.zeros((4, 30, 4))
    counts[..., 0], counts[..., 1] = 7.0, 3.0
    noisy = counts + rng.normal(0.0, 5.0, counts.shape)
    est = logging_estimate(noisy, 5.0, np.zeros(30, dtype=int))
    np.testing.assert_allclose(est.sum(axis=-1), 1.0)
    assert est[..., 2:].max() < 1e-9
    assert abs(est[..., 0].mean() - 0.7) < 0.1
    exact = logging_estimate(counts, 0.0)                           # exact counts: the frequencies (shrunk
    np.testing.assert_allclose(exact[..., :2], np.broadcast_to([0.7, 0.3], (4, 30, 2)), atol=1e-5)  # to them)


# ----------------------------------------------------------------------------- the warning
def test_a_fit_that_is_the_logging_policy_warns_and_says_so():
    model, data = _task()
    est, msgs = _fit(DPAPVI(budget=_budget(0.05), **ROUTE, baseline="logging"), data, model)
    assert est.improvement_evidence_.gain <= GAIN_THRESHOLD
    assert len(msgs) == 1 and "no released evidence that the policy beats the logging policy" in msgs[0]
    assert "the estimated logging policy at 100%" in msgs[0]
    assert f"<= {GAIN_THRESHOLD:g}" in msgs[0] and msgs[0].count("<=") == 1      # one threshold


def test_no_advice_already_applied():
    model, data = _task()
    _, msgs = _fit(DPAPVI(budget=_budget(0.05), constants="practical", stationary=True, state_groups=model.groups,
                          baseline="logging"), data, model)
    assert msgs and all(opt not in msgs[0] for opt in ("baseline=", "constants=", "state_groups", "stationary"))
    assert "larger budget" in msgs[0]
    _, msgs = _fit(APVI(constants="theory", c1=100.0), data, model)          # every Q̄ clipped to 0
    assert msgs and "larger budget" not in msgs[0] and "baseline='logging'" in msgs[0]


def test_a_fit_with_a_clear_gain_does_not_warn():
    """Plenty of exact data on a task whose logging policy is weak: APVI's gain is large, and the
    warning stays silent, with or without the baseline."""
    model = real_shaped(n_states=50, n_actions=8, horizon=8, n_levels=8, n_next=6, n_admissible=3, habit_rank=0.0,
                        habit_share=0.6, rng=3)
    data = model.sample(model.logging_policy, 20_000, rng=1, pad_to_horizon=8)
    logging = model.value(model.logging_policy)
    for baseline in ("none", "logging"):
        est, msgs = _fit(APVI(**ROUTE, baseline=baseline), data, model)
        assert model.value(est.policy_probs_) - logging > 0.05 and not msgs


def test_evidence_of_constructed_policies():
    """The statistic on constructed arrays: the baseline itself gains 0; moving supported mass to
    a better supported action gains; the tie-break action where nothing is supported loses."""
    prior = np.full((1, 2, 3), 1 / 3)
    q = np.array([[[0.2, 0.5, 0.1], [0.0, 0.0, 0.0]]])
    supported = np.array([[[True, True, False], [False, False, False]]])
    released = np.ones((1, 2, 3))
    q_ref = q + 0.05
    assert improvement_evidence(prior, prior, supported, q, q_ref, released).gain == pytest.approx(0.0)
    better = prior.copy()
    better[0, 0] = [0.0, 2 / 3, 1 / 3]
    ev = improvement_evidence(better, prior, supported, q, q_ref, released)
    assert ev.gain == pytest.approx(0.5 * (0.5 - 0.25) / 3)             # half the visits; moved 1/3
    tie = prior.copy()
    tie[0, 0] = [1.0, 0.0, 0.0]
    q_tie = q.copy()
    q_tie[0, 0] = 0.0
    ev = improvement_evidence(tie, prior, np.zeros_like(supported), q_tie, q_tie, released)
    assert ev.gain <= 0.0 and ev.tie_break == pytest.approx(0.5)
