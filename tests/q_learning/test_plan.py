"""Planning DP Q-learning (privrl.q_learning.plan): σ is the estimator's own calibration, set
against the declared reward range; a run no noise certifies plans as infinite noise."""

from __future__ import annotations

import math

from privrl import DPQLearning, PrivacyBudget, plan


def test_sigma_is_the_estimators_functional_calibration():
    p = plan("dp-q-learning", actions=2, n=2000, epsilon=0.9, delta=1e-4, params={"reward_bounds": (0.0, 0.5)},
             knobs=False)
    est = DPQLearning(budget=PrivacyBudget(epsilon=0.9, delta=1e-4), n_samples=2000, reward_bounds=(0.0, 0.5))
    row = p.row("Q(s, a)")
    assert row.noise_std == est.functional_calibration(2).sigma and row.signal == 0.5
    assert p.verdict == "hopeless"


def test_an_uncertifiable_run_is_planned_as_infinite_noise():
    p = plan("dp-q-learning", actions=2, epsilon=0.45, delta=1e-4)
    assert p.row("Q(s, a)").noise_std == math.inf and "no noise certifies this run" in p.notes[0]
    eps = p.knob("epsilon")
    assert eps.value is not None and eps.ratio <= 0.1
    assert plan("dp-q-learning", actions=2, epsilon=eps.value, delta=1e-4, knobs=False).verdict == "useful"
