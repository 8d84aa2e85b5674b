"""Private deep offline RL on multi-dimensional continuous states: DP-SGD learners whose privacy unit is
one logged trajectory (Poisson-sampled batches of trajectories, each trajectory's total gradient
clipped, the subsampled Gaussian steps accounted with dp-accounting's PLD accountant).

Estimators: :class:`BC` and :class:`DPBC` (behaviour cloning, discrete actions); :class:`IQL` and
:class:`DPIQL` (implicit Q-learning, Kostrikov et al. 2022, discrete actions); :class:`TD3BC` and
:class:`DPTD3BC` (TD3+BC, Fujimoto & Gu 2021, continuous actions). Datasets:
:mod:`privrl.deep_offline.datasets` (behaviour data generated locally from scripted policies, written
and read as Minari datasets). Torch (the ``deep`` extra) is loaded only to fit.
"""

from privrl.deep_offline.estimators import BC, DPBC
from privrl.deep_offline.iql import DPIQL, IQL
from privrl.deep_offline.td3bc import DPTD3BC, TD3BC
from privrl.family import Algorithm, Family

FAMILY = Family(
    __name__,
    paper="Abadi et al. (CCS 2016), DP-SGD with one trajectory as the unit",
    estimators=("BC", "DPBC", "IQL", "DPIQL", "TD3BC", "DPTD3BC"),
    algorithms=(Algorithm("BC, DP-BC", ("BC", "DPBC"),
                          "offline behaviour cloning on continuous states (trajectory-level DP-SGD)"),
                Algorithm("IQL, DP-IQL", ("IQL", "DPIQL"),
                          "offline implicit Q-learning, discrete actions (Kostrikov et al. ICLR 2022; trajectory-level "
                          "DP-SGD on Q, V and the policy)"),
                Algorithm("TD3+BC, DP-TD3+BC", ("TD3BC", "DPTD3BC"),
                          "offline TD3+BC, continuous actions (Fujimoto & Gu NeurIPS 2021; trajectory-level DP-SGD on "
                          "the twin critics and the actor)")),
    docs="docs/deep_offline.md",
    experiments=("experiments",),
    fit=("fit",),
    audit=("audit", "canary"),
    plans=("plan",),
    bench=("privrl.bench.entries.deep_offline",),
    extra="deep",
    extra_reason="torch, for the per-trajectory gradients",
)

__all__ = ["BC", "DPBC", "IQL", "DPIQL", "TD3BC", "DPTD3BC"]
