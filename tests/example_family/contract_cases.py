"""Contract cases of the example family: the private mean return under an (ε, δ) and a ρ budget."""

import numpy as np

from example_family.estimators import PrivateMeanReturn
from example_family.experiments import one_step_episodes
from privrl import PrivacyBudget
from privrl.base import Estimator
from privrl.testing import ContractCase

DATA = one_step_episodes(np.random.default_rng(0).uniform(0.0, 1.0, size=500))


def _fit(est: Estimator, rng: np.random.Generator | None) -> PrivateMeanReturn:
    assert isinstance(est, PrivateMeanReturn)
    return est.fit(DATA, rng=rng)


def _output(est: Estimator) -> np.ndarray:
    assert isinstance(est, PrivateMeanReturn)
    return np.array([est.mean_])


CASES = [
    ContractCase(name="PrivateMeanReturn", make=lambda budget: PrivateMeanReturn(budget=budget), fit=_fit,
                 output=_output, budget=PrivacyBudget(epsilon=1.0, delta=1e-5),
                 bad_params=[{"return_bound": 0.0}, {"calibration": "loose"}]),
    ContractCase(name="PrivateMeanReturn-zCDP", make=lambda budget: PrivateMeanReturn(budget=budget), fit=_fit,
                 output=_output, budget=PrivacyBudget(rho=0.5)),
]
