"""Contract cases for LinOptVI / LinOptPO (Zhou 2022) with the central (JDP) and local (LDP)
privatizers, in tight (default) and sound calibration; the non-private baseline is the
privatizer 'none' with an infinite budget."""

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.linear_mixture import random_mixture
from privrl.linear_mixture import LinOptPO, LinOptVI
from privrl.testing import ContractCase

_MODEL = random_mixture(4, 3, 3, 2, 2, rng=11)
_BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-5)
_BAD = ({"n_episodes": 0}, {"privatizer": "global"}, {"alpha": 2.0}, {"beta_scale": -1.0},
        {"noise_term_scale": -0.5},
        {"shift_scale": 0.1}, {"calibration": "loose"}, {"constants": "tuned"}, {"lam": 0.0},
        {"privatizer": "none"}, {"budget": PrivacyBudget(epsilon=1.0)}, {"upsilon": "exact"})


def _fit(est, rng):
    return est.fit(_MODEL, rng=rng)


def _output(est):
    # θ̂ is the released-statistics output (the regret is a function of the same releases)
    return np.concatenate([est.theta_p_.ravel(), est.theta_r_.ravel(), est.regret_])


CASES = [
    ContractCase(
        name=f"{cls.__name__}-{priv}-{calibration}",
        make=lambda budget, cls=cls, priv=priv, calibration=calibration: cls(
            n_episodes=40, privatizer=priv, budget=budget, calibration=calibration, beta_scale=0.05),
        fit=_fit,
        output=_output,
        budget=_BUDGET,
        delta=1e-5,
        make_baseline=lambda cls=cls: cls(n_episodes=40, privatizer="none", budget=PrivacyBudget.non_private(),
                                          beta_scale=0.05),
        bad_params=_BAD,
        variants=({"counter": "tree"}, {"counter": "blt"}, {"counter": "factorization"})
        if priv == "central" and calibration == "tight" else (),
    )
    for cls in (LinOptVI, LinOptPO)
    for priv in ("central", "local")
    for calibration in ("tight", "sound")
]
