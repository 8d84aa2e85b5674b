"""Learning-curve properties at smoke scale (spec T30, T31, T33; reference configuration, 1000
samples, seeds 0 and 1).

Every threshold is a property of CenterWalk's exact returns (spec T29, ``test_env.py``): the
optimum (threshold policy) earns 20.71, uniform random play 10.86, always one direction 0.92.

* Learning (T30): the final return is closer to the optimum than to random play, i.e. above the
  midpoint 15.8. (Measured: 20.07 / 20.29.)
* Noise destroys learning (T31): with sigma = 1, beta = 1 the difference of the two actions'
  noise has sd sqrt(2) = 1.41, several times the learned action gaps (0.24–0.53 at the median
  state, ``test_paper_scale.py``), so acting is noise-driven: the final return stays below the
  midpoint and at least 4 below the non-private one (measured 12.1 / 11.9 vs 20.1 / 20.3).
* Input perturbation (T33): the per-reward std (tight, ε = 0.9, δ = 1e-4, 1000 rewards) exceeds 100
  times the reward range [0, 0.5], so the rewards the learner sees carry almost no signal: its
  final return stays below the midpoint.
"""

import numpy as np
import pytest

from privrl.envs.center_walk import REFERENCE_RETURNS
from privrl.privacy import PrivacyBudget
from privrl.q_learning import DPQLearning, InputPerturbationQLearning, QLearning

N = 1000
OPTIMUM, RANDOM = REFERENCE_RETURNS["threshold"][0], REFERENCE_RETURNS["uniform"][0]
MIDPOINT = (OPTIMUM + RANDOM) / 2
pytestmark = pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")


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
    assert all(finals[("np", s)] > MIDPOINT for s in (0, 1))


def test_more_noise_lower_return(finals):  # T31 (smoke scale)
    np_mean = np.mean([finals[("np", s)] for s in (0, 1)])
    noisy = np.mean([finals[("s1", s)] for s in (0, 1)])
    assert noisy < MIDPOINT and np_mean - noisy >= 4.0


def test_input_perturbation_does_not_learn():  # T33 (smoke scale)
    est = InputPerturbationQLearning(budget=PrivacyBudget(epsilon=0.9, delta=1e-4), config="reference",
                                     n_samples=N).fit(rng=0)
    assert est.reward_noise_std_ > 100 * 0.5
    assert _final(est) < MIDPOINT
