"""Online private RL in linear mixture MDPs (Zhou 2022): LinOpt-VI, LinOpt-PO and their privatizers.

* :mod:`.calibration` — noise plans (paper / sound / tight), sensitivities, Assumption 2 constants,
  Lemma 3.1 radii, regret bounds;
* :mod:`.regularizers` — ``NonPrivate``, ``CentralTreePrivatizer`` (JDP, the paper's tree),
  ``CentralFactorizationPrivatizer`` (JDP, square-root factorization counter), ``LocalPrivatizer`` (LDP, derived);
* :mod:`.estimators` — ``LinOptVI`` (Algorithm 1), ``LinOptPO`` (Algorithm 2) with declared parameters;
* :mod:`.engine` — the lockstep kernel (many runs at once);
* :mod:`.experiments` — ``zhou2022-regret`` and ``frontier-linear-mixture``; :mod:`.audit` — audit targets.
"""

from privrl.family import Algorithm, Family
from privrl.linear_mixture.calibration import NoisePlan, noise_plan
from privrl.linear_mixture.estimators import LINOPT_PRESETS, LinOptPO, LinOptVI, optimistic_q
from privrl.linear_mixture.regularizers import (
    CentralFactorizationPrivatizer,
    CentralTreePrivatizer,
    LocalPrivatizer,
    NonPrivate,
    Regularizer,
)

FAMILY = Family(
    __name__,
    paper="Zhou (2022)",
    estimators=("LinOptVI", "LinOptPO"),
    algorithms=(
        Algorithm("UCRL-VTR / Private-LinOpt-VI", ("LinOptVI",), "online RL, linear mixture MDPs, JDP and LDP"),
        Algorithm("OPPO / Private-LinOpt-PO", ("LinOptPO",),
                  "online policy optimisation, linear mixture MDPs, JDP and LDP"),
    ),
    docs="docs/linear_mixture.md",
    experiments=("experiments",),
    frontiers=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
    bench=("privrl.bench.entries.linear_mixture",),
)

__all__ = ["LinOptVI", "LinOptPO", "optimistic_q", "Regularizer", "NonPrivate", "CentralTreePrivatizer",
           "CentralFactorizationPrivatizer", "LocalPrivatizer", "NoisePlan", "noise_plan", "LINOPT_PRESETS"]
