"""Learning-curve regression shapes at smoke scale (spec T30, T31, T33; reference configuration).

Reference values (1000 samples, seeds 0-2, 1-16-16-2 network): non-private last-5 return
20.07 / 20.29 / 19.99; sigma = 1.0 (reset every update, beta = 1): 12.1 / 11.9 / 9.7. The
optimum is 20.7 and uniform random 10.9 (spec §5.1).
"""

import numpy as np
import pytest

from privrl.privacy import PrivacyBudget
from privrl.q_learning import DPQLearning, InputPerturbationQLearning, QLearning

N = 1000


def _final(est):
    return float(np.mean(est.returns_[-5:]))


@pytest.fixture(scope="module")
def finals():
    out = {}
    for seed in (0, 1):
        out[("np", seed)] = _final(QLearning(config="reference", n_samples=N).fit(rng=seed))
        out[("s1", seed)] = _final(DPQLearning(budget=None, noise_std=1.0, kernel_beta=1.0, config="reference",
                                               n_samples=N).fit(rng=seed))
    return out


def test_non_private_learns(finals):  # T30 (smoke scale)
    assert all(finals[("np", s)] >= 19.0 for s in (0, 1))


def test_more_noise_lower_return(finals):  # T31 (smoke scale)
    np_mean = np.mean([finals[("np", s)] for s in (0, 1)])
    noisy = np.mean([finals[("s1", s)] for s in (0, 1)])
    assert noisy <= 14.0 and np_mean - noisy >= 4.0


def test_input_perturbation_does_not_learn():  # T33 (smoke scale)
    est = InputPerturbationQLearning(budget=PrivacyBudget(epsilon=0.9, delta=1e-4), config="reference",
                                     n_samples=N).fit(rng=0)
    assert _final(est) < 15.0
    assert est.reward_noise_std_ > 100.0
