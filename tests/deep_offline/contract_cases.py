"""Contract cases of the deep offline family: DP-BC and DP-IQL (and BC, IQL, their infinite budgets) on a tiny
CartPole dataset; DP-TD3+BC (and TD3+BC) on a tiny Pendulum dataset."""

import warnings

import numpy as np

from privrl.deep_offline import BC, DPBC, DPIQL, DPTD3BC, IQL, TD3BC
from privrl.deep_offline.continuous_data import pendulum_dataset
from privrl.deep_offline.datasets import cartpole_dataset
from privrl.privacy import PrivacyBudget
from privrl.testing import ContractCase

DATA = cartpole_dataset(12, max_steps=15, rng=0)
SMALL = dict(hidden=(4,), n_steps=3, sampling_rate=0.5)
PROBE = np.random.default_rng(1).normal(size=(8, 4))
PENDULUM = pendulum_dataset(6, max_steps=10, rng=0)
#: TD3+BC's tiny settings: 4 steps, so that two are actor steps (policy_delay 2) and two critic-only
TD3_SMALL = dict(hidden=(4,), n_steps=4, sampling_rate=0.5, max_action=2.0)
PENDULUM_PROBE = np.random.default_rng(1).normal(size=(8, 3))


def _fit(est, rng):
    with warnings.catch_warnings():   # δ ≥ 1/n on 12 trajectories (UtilityWarning)
        warnings.simplefilter("ignore")
        return est.fit(DATA, rng=rng)


def _output(est):
    return np.concatenate([est.params_, est.action_probabilities(PROBE).ravel()])


def _fit_pendulum(est, rng):
    with warnings.catch_warnings():   # δ ≥ 1/n on 6 trajectories (UtilityWarning)
        warnings.simplefilter("ignore")
        return est.fit(PENDULUM, rng=rng)


def _td3bc_output(est):
    return np.concatenate([est.params_, est.q_params_, est.predict(PENDULUM_PROBE).ravel()])


def _iql_output(est):
    return np.concatenate([_output(est), est.q_values(PROBE).ravel(), est.values(PROBE)])


CASES = [
    ContractCase(
        name="DPBC", make=lambda budget: DPBC(budget=budget, **SMALL), fit=_fit, output=_output,
        budget=PrivacyBudget(epsilon=2.0, delta=1e-5), make_baseline=lambda: BC(**SMALL),
        variants=({"clip_norm": 0.1}, {"sampling_rate": 1.0}),
        bad_params=[{"clip_norm": 0.0}, {"calibration": "paper"}, {"sampling_rate": 1.5}, {"n_steps": 0},
                    {"hidden": (0,)}, {"budget": PrivacyBudget(rho=1.0)}, {"budget": PrivacyBudget(epsilon=1.0)},
                    {"n_actions": 0}, {"obs_low": np.zeros(3), "obs_high": np.ones(4)}],
    ),
    ContractCase(
        name="BC", make=lambda budget: BC(**SMALL), fit=_fit, output=_output, budget=PrivacyBudget(epsilon=2.0,
                                                                                                   delta=1e-5),
        bad_params=[{"learning_rate": 0.0}, {"hidden": ()}, {"obs_high": np.ones(3), "obs_low": np.zeros(3)}],
    ),
    ContractCase(
        name="DPIQL", make=lambda budget: DPIQL(budget=budget, **SMALL), fit=_fit, output=_iql_output,
        budget=PrivacyBudget(epsilon=2.0, delta=1e-5), make_baseline=lambda: IQL(**SMALL),
        variants=({"clip_norm": 0.1}, {"sampling_rate": 1.0}),
        bad_params=[{"clip_norm": 0.0}, {"calibration": "paper"}, {"expectile": 0.4}, {"expectile": 1.0},
                    {"gamma": 1.0}, {"polyak": 0.0}, {"temperature": -1.0}, {"budget": PrivacyBudget(rho=1.0)},
                    {"budget": PrivacyBudget(epsilon=1.0)}],
    ),
    ContractCase(
        name="IQL", make=lambda budget: IQL(**SMALL), fit=_fit, output=_iql_output,
        budget=PrivacyBudget(epsilon=2.0, delta=1e-5),
        bad_params=[{"learning_rate": 0.0}, {"hidden": ()}, {"n_steps": 0}],
    ),
    ContractCase(
        name="DPTD3BC", make=lambda budget: DPTD3BC(budget=budget, **TD3_SMALL), fit=_fit_pendulum,
        output=_td3bc_output, budget=PrivacyBudget(epsilon=2.0, delta=1e-5), make_baseline=lambda: TD3BC(**TD3_SMALL),
        variants=({"clip_norm": 0.1}, {"sampling_rate": 1.0}, {"policy_delay": 1}, {"policy_delay": 5}),
        bad_params=[{"clip_norm": 0.0}, {"calibration": "paper"}, {"max_action": 0.0}, {"policy_delay": 0},
                    {"gamma": 1.0}, {"alpha": 0.0}, {"polyak": 0.0}, {"budget": PrivacyBudget(rho=1.0)},
                    {"budget": PrivacyBudget(epsilon=1.0)}],
    ),
    ContractCase(
        name="TD3BC", make=lambda budget: TD3BC(**TD3_SMALL), fit=_fit_pendulum, output=_td3bc_output,
        budget=PrivacyBudget(epsilon=2.0, delta=1e-5),
        bad_params=[{"learning_rate": 0.0}, {"hidden": ()}, {"n_steps": 0}, {"policy_noise": -1.0}],
    ),
]
