"""Contract cases for the offline algorithms of Qiao & Wang (2023)."""

import numpy as np

from privrl import PrivacyBudget
from privrl.envs import sparse_tabular
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp
from privrl.offline import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI, DPOneStep
from privrl.testing import ContractCase

_TAB = random_tabular_mdp(n_states=3, n_actions=2, horizon=4, rng=3)
_TAB_DATA = _TAB.sample(covering_behaviour_policy(_TAB.optimal_policy(), 2), 300, rng=0)
_CLINIC = sparse_tabular(n_states=26, n_actions=5, horizon=6, n_levels=4, n_admissible=2, rng=1)
_CLINIC_DATA = _CLINIC.sample(_CLINIC.logging_policy, 2000, rng=0, pad_to_horizon=6)
_LIN = synthetic_linear_mdp(horizon=4, rng=0)
_LIN_DATA = _LIN.sample(synthetic_behaviour_policy(), 200, rng=0)


def _fit_tab(est, rng):
    return est.fit(_TAB_DATA, _TAB.rewards, rng=rng)


def _fit_logged(est, rng):
    return est.fit(_CLINIC_DATA, None, rng=rng)   # outcome rewards from the logs (released privately)


def _fit_lin(est, rng):
    return est.fit(_LIN_DATA, _LIN.features, rng=rng)


def _tab_output(est):
    # the released noisy counts (the policy alone is often identical across noise draws)
    return np.concatenate([est.counts_.ravel(), est.q_values_.ravel()])


def _lin_output(est):
    return np.concatenate([est.weights_.ravel(), est.q_values_.ravel()])


#: the options that change what DP-APVI releases (pooled steps, capped visits, public groups) and its
#: post-processing routes; the release invariant is checked on each, seeded and secure
_TAB_ROUTES = ({"stationary": True}, {"stationary": True, "max_visits": 1}, {"state_groups": np.array([0, 0, 1])},
               {"state_groups": np.array([0, 0, 1]), "stationary": True},
               {"cell_threshold": 3.0, "fallback": "behaviour"}, {"calibration": "sound"},
               {"route": "auto", "state_groups": [np.array([0, 0, 1]), np.array([0, 1, 1])]},
               {"state_groups": np.array([0, 0, 1]), "stationary": True, "max_visits": 1, "baseline": "logging",
                "logging_share": 0.2})

CASES = [
    ContractCase(
        name="DPAPVI-zCDP",
        make=lambda budget: DPAPVI(budget=budget, constants="practical"),
        fit=_fit_tab,
        output=_tab_output,
        budget=PrivacyBudget(rho=0.5),
        make_baseline=lambda: APVI(constants="practical"),
        bad_params=[{"delta_fail": 0.0}, {"c1": -1.0}, {"c_unvisited": 0.5}, {"mechanism": "x"},
                    {"budget": "rho=1"}, {"mechanism": "laplace"}],
        variants=_TAB_ROUTES,
    ),
    ContractCase(
        name="DPAPVI-approxDP",
        make=lambda budget: DPAPVI(budget=budget, constants="practical"),
        fit=_fit_tab,
        output=_tab_output,
        budget=PrivacyBudget(epsilon=1.0, delta=1e-3),
        delta=1e-3,
        make_baseline=lambda: APVI(constants="practical"),
    ),
    ContractCase(
        name="DPAPVI-Laplace",
        make=lambda budget: DPAPVI(budget=budget, constants="practical"),
        fit=_fit_tab,
        output=_tab_output,
        budget=PrivacyBudget(epsilon=2.0),
        delta=1e-6,
        make_baseline=lambda: APVI(constants="practical"),
        bad_params=[{"c2": -1.0}, {"threshold_multiplier": -0.1}, {"mechanism": "gaussian"}],
        variants=_TAB_ROUTES,
    ),
    ContractCase(
        name="DPAPVI-logged-rewards",
        make=lambda budget: DPAPVI(budget=budget, constants="practical", F_max=1.0),
        fit=_fit_logged,
        output=_tab_output,
        budget=PrivacyBudget(epsilon=1.0, delta=1e-6),
        delta=1e-6,
        make_baseline=lambda: APVI(constants="practical", F_max=1.0),
        bad_params=[{"r_max": 0.0}, {"r_max": 2.0}, {"F_max": -1.0}, {"calibration": "paper"}],
        variants=({"stationary": True}, {"stationary": True, "max_visits": 1},
                  {"state_groups": np.arange(26) // 4, "stationary": True}),
    ),
    ContractCase(
        name="DPVAPVI",
        make=lambda budget: DPVAPVI(budget=budget),
        fit=_fit_lin,
        output=_lin_output,
        budget=PrivacyBudget(rho=1.0),
        make_baseline=VAPVI,
        bad_params=[{"lam": 0.0}, {"C": -1.0}, {"D": -1.0}, {"delta_fail": 1.0}, {"calibration": "loose"},
                    {"feature_norm_bound": 0.0}, {"budget": PrivacyBudget(epsilon=1.0)}],
        variants=({"split": False}, {"calibration": "sound"}, {"calibration": "paper"}),
    ),
    ContractCase(
        name="DPVAPVI-approxDP",
        make=lambda budget: DPVAPVI(budget=budget, split=False),
        fit=_fit_lin,
        output=_lin_output,
        budget=PrivacyBudget(epsilon=4.0, delta=1e-5),
        make_baseline=lambda: VAPVI(split=False),
    ),
    ContractCase(name="APVI", make=lambda budget: APVI(), fit=_fit_tab, output=_tab_output,
                 budget=PrivacyBudget.non_private(), bad_params=[{"c1": -0.5}]),
    ContractCase(name="PEVI", make=lambda budget: PEVI(), fit=_fit_lin, output=_lin_output,
                 budget=PrivacyBudget.non_private(), bad_params=[{"beta": -1.0}, {"lam": 0.0}]),
    ContractCase(name="VAPVI", make=lambda budget: VAPVI(), fit=_fit_lin, output=_lin_output,
                 budget=PrivacyBudget.non_private(), bad_params=[{"split": "yes"}]),
    ContractCase(
        name="DPOneStep",
        make=lambda budget: DPOneStep(budget=budget, F_max=1.0),
        fit=lambda est, rng: est.fit(_CLINIC_DATA, rng=rng),
        output=lambda est: np.concatenate([est.counts_.ravel(), est.q_values_.ravel(), est.values_]),
        budget=PrivacyBudget(epsilon=1.0, delta=1e-4),
        delta=1e-4,
        bad_params=[{"confidence": -1.0}, {"value_share": 0.0}, {"variance_share": 1.0}, {"support": -1.0},
                    {"budget": PrivacyBudget(epsilon=1.0)}, {"value_share": 0.9, "variance_share": 0.2}],
        variants=({"value_share": 0.5}, {"behaviour_policy": _CLINIC.logging_policy}),
    ),
]
