"""Online private RL in linear mixture MDPs (Zhou 2022): LinOpt-VI, LinOpt-PO and their regularizers.

* :mod:`.calibration` — sensitivities, σ, Assumption 2 constants, Lemma 3.1 radii, regret bounds;
* :mod:`.regularizers` — ``NonPrivate``, ``CentralTreePrivatizer`` (JDP), ``LocalPrivatizer`` (LDP, derived);
* :mod:`.learners` — ``LinOptVI`` (Algorithm 1), ``LinOptPO`` (Algorithm 2) and the shared kernel;
* :mod:`.planning` — exact DP for the pseudo-regret.
"""

from privrl.linear_mixture.learners import LinOptPO, LinOptVI, optimistic_q
from privrl.linear_mixture.regularizers import (
    CentralTreePrivatizer,
    LocalPrivatizer,
    NonPrivate,
    Regularizer,
)

__all__ = ["LinOptVI", "LinOptPO", "optimistic_q", "Regularizer", "NonPrivate", "CentralTreePrivatizer",
           "LocalPrivatizer"]
