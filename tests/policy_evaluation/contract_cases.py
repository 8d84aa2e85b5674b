"""Contract cases for DP-LSW and DP-LSL (Balle et al. 2016) and the Monte Carlo estimators on a
small chain batch (the declared parameters' bad values and ``secure=True`` are checked by the
contract test itself)."""

import numpy as np

from privrl.data.features import state_aggregation
from privrl.envs.chain import sample_chain
from privrl.policy_evaluation import DPLSL, DPLSW, LSL, LSW, DPMonteCarlo, MonteCarlo
from privrl.privacy import PrivacyBudget
from privrl.testing import ContractCase

_DATA = sample_chain(200, n_states=8, rng=0)
_PHI = state_aggregation(8, 2)
_BUDGET = PrivacyBudget(epsilon=0.5, delta=0.1)


def _fit(est, rng):
    return est.fit(_DATA, rng=rng)


def _out(est):
    return est.theta_


def _mc_out(est):
    return np.concatenate([[est.value_], est.group_values_])


_GROUPS = np.arange(8) // 2


CASES = [
    ContractCase(
        name="DPLSW",
        make=lambda budget: DPLSW(budget=budget, gamma=0.9, features=_PHI, F_max=1.0),
        fit=_fit, output=_out, budget=_BUDGET, delta=0.1,
        make_baseline=lambda: LSW(gamma=0.9, features=_PHI, F_max=1.0),
        bad_params=({"gamma": 1.5}, {"F_max": 0.0}, {"constants": "other"}, {"constants": "main_text"},
                    {"smoothing": "lemma2"}, {"weights": -np.ones(8)},
                    {"budget": PrivacyBudget(epsilon=1.0, delta=0.0)}),
        variants=({"smoothing": "appendix_a"}, {"calibration": "sound"}, {"calibration": "paper"}),
    ),
    ContractCase(
        name="DPLSL",
        make=lambda budget: DPLSL(budget=budget, gamma=0.9, lam=5.0, features=_PHI, F_max=1.0),
        fit=_fit, output=_out, budget=_BUDGET, delta=0.1,
        make_baseline=lambda: LSL(gamma=0.9, lam=5.0, features=_PHI, F_max=1.0),
        bad_params=({"lam": 0.1}, {"relevance": np.full(8, 2.0)}, {"gamma": -0.1},
                    {"budget": PrivacyBudget(rho=1.0)}),
    ),
    ContractCase(
        name="DPMonteCarlo",
        make=lambda budget: DPMonteCarlo(budget=budget, F_max=1.0, groups=_GROUPS),
        fit=_fit, output=_mc_out, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), delta=1e-5,
        make_baseline=lambda: MonteCarlo(F_max=1.0, groups=_GROUPS),
        bad_params=({"gamma": 1.5}, {"F_max": -1.0}, {"groups": np.array([0.5, 1.0])},
                    {"max_groups_per_trajectory": 0}, {"neighboring": "replace"}),
        variants=({"groups": None}, {"mechanism": "laplace"}, {"max_groups_per_trajectory": 1}),
    ),
    ContractCase(
        name="DPMonteCarlo-add-remove-pure",
        make=lambda budget: DPMonteCarlo(budget=budget, F_max=1.0, groups=_GROUPS, neighboring="add_or_remove_one",
                                         max_groups_per_trajectory=2),
        fit=_fit, output=_mc_out, budget=PrivacyBudget(epsilon=1.0), delta=1e-5,
        make_baseline=lambda: MonteCarlo(F_max=1.0, groups=_GROUPS, max_groups_per_trajectory=2),
        bad_params=({"mechanism": "gaussian"},),
    ),
]
