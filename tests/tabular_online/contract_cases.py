"""Contract cases of the tabular online family: UCBVI (non-private), DP-UCBVI, Private-UCB-VI and
Private-UCB-PO with the central Laplace tree (pure ε-JDP, the default for a pure budget), and the
Gaussian BLT under a ρ budget; the release-changing options are declared as variants."""

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.river_swim import river_swim
from privrl.tabular_online import DPUCBVI, UCBVI, PrivateUCBPO, PrivateUCBVI
from privrl.testing import ContractCase

MODEL = river_swim(3, 3)
K = 30
_BAD = ({"n_episodes": 0}, {"privatizer": "global"}, {"beta": 0.0}, {"constants": "tuned"},
        {"counter": "blt"}, {"calibration": "loose"})
#: what changes the release: the privatizer, the counter, the calibration, pooling
_VARIANTS = ({"privatizer": "local"}, {"calibration": "paper"}, {"pooled": True},
             {"privatizer": "local", "pooled": True})
_GAUSS_VARIANTS = ({"counter": "tree"}, {"counter": "tree", "calibration": "sound"}, {"privatizer": "local"},
                   {"pooled": True})


#: a larger mirror step, so that a 30-episode PO run's policy (and regret) moves with the data
_EXTRA = {PrivateUCBPO: {"eta": 1.0}}


def _fit(est, rng):
    return est.fit(MODEL, rng=rng)


def _output(est):
    return np.asarray(est.regret_)


CASES = [
    ContractCase(name="UCBVI", make=lambda budget: UCBVI(n_episodes=K), fit=_fit, output=_output,
                 budget=PrivacyBudget.non_private(), bad_params=({"n_episodes": 0}, {"beta": 1.5})),
]
for _cls in (DPUCBVI, PrivateUCBVI, PrivateUCBPO):
    CASES.append(ContractCase(
        name=f"{_cls.__name__}-laplace",
        make=lambda budget, cls=_cls: cls(n_episodes=K, budget=budget, constants="practical", **_EXTRA.get(cls, {})),
        fit=_fit, output=_output, budget=PrivacyBudget(epsilon=1.0), bad_params=_BAD, variants=_VARIANTS))
    CASES.append(ContractCase(
        name=f"{_cls.__name__}-zcdp",
        make=lambda budget, cls=_cls: cls(n_episodes=K, budget=budget, constants="practical", **_EXTRA.get(cls, {})),
        fit=_fit, output=_output, budget=PrivacyBudget(rho=0.5), bad_params=({"calibration": "paper"},),
        variants=_GAUSS_VARIANTS))
