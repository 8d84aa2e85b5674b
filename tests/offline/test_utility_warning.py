"""The tabular UtilityWarning's bound (``privrl.offline._utility``): on the real-shaped grid a grouped
fit whose released model shows a gain it does not have (low agreement: the groups do not describe
the dynamics) warns, a fit with a real gain does not, and the message says what the policy plays
and only advice not already applied."""

import functools
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget, UtilityWarning
from privrl.envs.real_shaped import real_shaped_instance
from privrl.offline import APVI, DPAPVI
from privrl.offline._utility import GAIN_THRESHOLD, NOISE_SIGMAS, improvement_evidence

LOW = "low-agreement/sparse/narrow/good-clone"
HIGH = "high-agreement/sparse/narrow/good-clone"


@functools.lru_cache(maxsize=4)
def _data(name: str, seed: int):
    """The grid instance, its logging value and n = 10⁴ logged episodes (the bench's data seed)."""
    model = real_shaped_instance(name)
    data = model.sample(model.logging_policy, 10_000, rng=10_000 + seed, pad_to_horizon=model.horizon)
    return model, model.value(model.logging_policy), data


def _auto(epsilon, model):
    """The recommended route: route='auto' with the instance's levels as the one candidate grouping,
    without the per-state logging counts (``logging_share=0``: the group-level baseline, whose grouped
    fits can lose on low agreement — what the warning must catch)."""
    if epsilon is None:
        return APVI(constants="practical", route="auto", state_groups=[model.groups])
    return DPAPVI(budget=PrivacyBudget(epsilon=epsilon, delta=1e-6), constants="practical", route="auto",
                  state_groups=[model.groups], logging_share=0.0)


def _fit(name, seed, epsilon):
    model, logging, data = _data(name, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        est = _auto(epsilon, model).fit(data, model, rng=seed)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UtilityWarning)]
    return est, model.value(est.policy_probs_) - logging, msgs


@pytest.mark.parametrize(("seed", "epsilon"), [(3, None), (0, 10.0)])
def test_a_grouped_fit_below_the_logging_policy_warns(seed, epsilon):
    """Low agreement, n = 10⁴: the grouped fit is worth about 0.02 less than the logging policy,
    while the released model shows a gain above the threshold (G > 0.005: the old statistic was
    silent); its lower bound is not above it, so the fit warns."""
    est, gain, msgs = _fit(LOW, seed, epsilon)
    assert est.route_["state_groups"] is not None                 # the grouped route was chosen
    assert gain < -0.01 and est.improvement_evidence_.gain > 0.005
    assert est.improvement_evidence_.bound <= GAIN_THRESHOLD
    assert len(msgs) == 1 and "no released evidence that the policy beats the logging policy" in msgs[0]


@pytest.mark.parametrize("epsilon", [None, 10.0])
def test_a_grouped_fit_with_a_real_gain_does_not_warn(epsilon):
    """High agreement, n = 10⁴: the same route gains about 0.06 over the logging policy (most of
    the best non-private gain) and stays quiet."""
    est, gain, msgs = _fit(HIGH, 0, epsilon)
    assert gain > 0.05 and est.improvement_evidence_.bound > GAIN_THRESHOLD and not msgs


def test_the_message_says_what_the_policy_plays_and_only_advice_not_applied():
    est, _, msgs = _fit(LOW, 0, 10.0)
    (msg,) = msgs
    ev = est.improvement_evidence_
    for does in (f"the estimated logging policy at {ev.as_logging:.0%}",
                 f"the behaviour clone (most logged action) at {ev.as_clone:.0%}",
                 f"the tie-break action 0 at {ev.tie_break:.0%}"):
        assert does in msg
    assert f"lower bound of the gain {ev.bound:.3g} <= {GAIN_THRESHOLD:g}" in msg and msg.count("<=") == 1
    # route='auto' applied the baseline, the groups and the pooling; the constants were given
    assert all(opt not in msg for opt in ("baseline=", "constants=", "state_groups", "stationary"))
    assert "more data or a larger budget" in msg


def test_the_bound_on_constructed_arrays():
    """No move, no charge: the estimated logging policy's bound is 0 (it warns). Without noise the
    bound is the estimate; with σ > 0 a move is charged NOISE_SIGMAS·ν per unit of probability moved
    on either side, ν = σ‖V_{h+1} − mean‖₂ / ñ (no charge at the last step: V_H = 0)."""
    prior = np.full((2, 2, 3), 1 / 3)
    q = np.array([[[0.2, 0.5, 0.1], [0.3, 0.3, 0.3]], [[0.1, 0.2, 0.3], [0.0, 0.1, 0.0]]])
    supported = np.ones_like(q, dtype=bool)
    released = np.full((2, 2, 3), 50.0)
    q_ref = q + 0.05
    assert improvement_evidence(prior, prior, supported, q, q_ref, released, 10.0).bound == 0.0
    better = prior.copy()
    better[0, 0] = [0.0, 1.0, 0.0]
    exact = improvement_evidence(better, prior, supported, q, q_ref, released)
    assert exact.bound == exact.gain > 0.0
    noisy = improvement_evidence(better, prior, supported, q, q_ref, released, 10.0)
    v1 = (prior[1] * q[1]).sum(axis=-1)                              # V_1 of the two states
    nu = 10.0 * np.linalg.norm(v1 - v1.mean()) / 50.0
    moved = 4 / 3                                                  # 2/3 added, 1/3 + 1/3 taken; w = 1/2
    assert noisy.gain == pytest.approx(exact.gain)
    assert noisy.bound == pytest.approx(exact.gain - 0.5 * NOISE_SIGMAS * nu * moved)
