"""Contract cases for DP Q-learning (Wang & Hegde 2019) and its baselines."""

import warnings

import numpy as np

from privrl.privacy import PrivacyBudget
from privrl.q_learning import DPQLearning, DPSGDQLearning, InputPerturbationQLearning, QLearning
from privrl.q_learning.balle import BalleQLearning
from privrl.testing import ContractCase

_SMALL = dict(config="paper", n_samples=256, hidden=(8,))
_GRID = np.linspace(0.0, 1.0, 11)
_BUDGET = PrivacyBudget(epsilon=0.9, delta=1e-4)


def _fit(est, rng):
    with warnings.catch_warnings():   # the certified noise dominates at this budget (UtilityWarning)
        warnings.simplefilter("ignore")
        return est.fit(rng=rng)


def _out(est):
    return est.release_q(_GRID)


CASES = [
    ContractCase(
        name="DPQLearning",
        make=lambda budget: DPQLearning(budget=budget, **_SMALL),
        variants=({"calibration": "paper"},),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        make_baseline=lambda: QLearning(**_SMALL),
        bad_params=[{"reset": "often"}, {"calibration": "nope"}, {"lipschitz": -1.0}, {"n_samples": 0},
                    {"kappa": -3.0}, {"budget": PrivacyBudget(rho=1.0)}, {"obs_low": [0.0, 0.0]}],
    ),
    ContractCase(
        name="DPQLearning-sound",
        make=lambda budget: DPQLearning(budget=budget, calibration="sound", **_SMALL),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        make_baseline=lambda: QLearning(**_SMALL),
    ),
    ContractCase(
        name="QLearning",
        make=lambda budget: QLearning(**_SMALL),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        bad_params=[{"config": "x"}, {"hidden": (0,)}, {"reward_bounds": (2.0, 1.0)}],
    ),
    ContractCase(
        name="InputPerturbationQLearning",
        make=lambda budget: InputPerturbationQLearning(budget=budget, **_SMALL),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        make_baseline=lambda: QLearning(**_SMALL), bad_params=[{"calibration": "x"}, {"budget": None}],
    ),
    ContractCase(
        name="DPSGDQLearning",
        make=lambda budget: DPSGDQLearning(budget=budget, **_SMALL),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        bad_params=[{"clip_norm": 0.0}],
    ),
    ContractCase(
        name="BalleQLearning",
        make=lambda budget: BalleQLearning(budget=budget, n_samples=300, n_rounds=3),
        fit=_fit, output=_out, budget=_BUDGET, delta=1e-4,
        bad_params=[{"n_bins": 0}, {"gamma": 1.0}, {"n_rounds": 0}, {"n_rounds": 301}],
    ),
]
