"""Private exploration in tabular episodic MDPs: UCBVI (Azar et al. 2017), DP-UCBVI (Qiao & Wang
2023), Private-UCB-VI and Private-UCB-PO (after Chowdhury & Zhou 2022), under JDP and LDP.

* :mod:`.calibration` — the count privatizers (Laplace binary tree, Gaussian tree and BLT, local
  Laplace / Gaussian): sensitivities, noise scales, ledger events, E_{ε,β} from the counters' tails;
* :mod:`._kernels` — post-processing (§5.3), the counters' noise, planning, rollouts (numba);
* :mod:`.engine` — the online loop, many runs in lockstep; :mod:`.estimators` — the learners;
* :mod:`.experiments` — RiverSwim regret; :mod:`.audit` — the count releases' audit targets.
"""

from privrl.family import Algorithm, Family
from privrl.tabular_online.calibration import CountNoise, count_noise
from privrl.tabular_online.engine import fit_many
from privrl.tabular_online.estimators import DPUCBVI, PRESETS, UCBVI, PrivateUCBPO, PrivateUCBVI

FAMILY = Family(
    __name__,
    paper="Qiao & Wang (AISTATS 2023); Chowdhury & Zhou (AAAI 2022)",
    estimators=("UCBVI", "DPUCBVI", "PrivateUCBVI", "PrivateUCBPO"),
    algorithms=(
        Algorithm("UCBVI / DP-UCBVI", ("UCBVI", "DPUCBVI"), "online exploration, tabular episodic MDPs, JDP and LDP"),
        Algorithm("Private-UCB-VI / Private-UCB-PO", ("PrivateUCBVI", "PrivateUCBPO"),
                  "online RL and policy optimisation, tabular episodic MDPs, JDP and LDP"),
    ),
    docs="docs/tabular_online.md",
    experiments=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
    bench=("privrl.bench.entries.tabular_online",),
)

__all__ = ["UCBVI", "DPUCBVI", "PrivateUCBVI", "PrivateUCBPO", "PRESETS", "CountNoise", "count_noise", "fit_many"]
