"""DP Q-learning with functional noise (Wang & Hegde 2019) and its baselines — one family package.

* :mod:`~privrl.q_learning.estimators` — :class:`DPQLearning` (Algorithm 1), :class:`QLearning`,
  :class:`InputPerturbationQLearning`, :class:`DPSGDQLearning`; :mod:`~privrl.q_learning.balle` —
  :class:`BalleQLearning` (not DP under the reward-function model);
* :mod:`~privrl.q_learning.calibration` — paper / sound / tight calibrations;
* :mod:`~privrl.q_learning.gaussian_process` — the lazy OU sampler (functional noise);
* :mod:`~privrl.q_learning.training` — the NumPy learner (torch only for the reference learner);
* :mod:`~privrl.q_learning.experiments` — Figures 1, 2(a), 2(b) and the frontier;
  :mod:`~privrl.q_learning.audit` — the audit targets.

Observations of a Box environment are rescaled to [0, 1]^d by the estimators from public bounds
(``obs_low``/``obs_high``, default the space's); :class:`UnitBoxObservation` is the same map as a
Gymnasium wrapper.
"""

from privrl.envs.center_walk import UnitBoxObservation
from privrl.family import Algorithm, Family
from privrl.q_learning.balle import BalleQLearning
from privrl.q_learning.calibration import (
    FunctionalNoiseCalibration,
    calibrate_functional_noise,
    delta_g,
    dpsgd_noise_multiplier,
    epsilon_exact,
    epsilon_paper,
    input_perturbation_std,
    ou_sup_tail,
    rkhs_sensitivity,
    sigma_paper_printed,
    sigma_paper_proof,
    tail_delta,
    tight_functional_noise,
)
from privrl.q_learning.configs import CONFIGS, TrainingConfig, get_config
from privrl.q_learning.estimators import (
    DPQLearning,
    DPSGDQLearning,
    InputPerturbationQLearning,
    QLearning,
)

FAMILY = Family(
    __name__,
    paper="Wang & Hegde (NeurIPS 2019)",
    estimators=("DPQLearning", "QLearning", "InputPerturbationQLearning", "DPSGDQLearning", "BalleQLearning"),
    algorithms=(
        Algorithm("DP Q-learning (functional noise)", ("DPQLearning",),
                  "Q-learning in continuous state spaces; baselines: input perturbation, DP-SGD, Balle-style"),
    ),
    docs="docs/q_learning.md",
    experiments=("experiments",),
    frontiers=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
    bench=("privrl.bench.entries.q_learning",),
    extra="deep",
    extra_reason="torch, for the reference learner",
)

__all__ = [
    "BalleQLearning", "CONFIGS", "DPQLearning", "DPSGDQLearning", "FunctionalNoiseCalibration",
    "InputPerturbationQLearning", "QLearning", "TrainingConfig", "UnitBoxObservation",
    "calibrate_functional_noise", "delta_g", "dpsgd_noise_multiplier", "epsilon_exact", "epsilon_paper",
    "get_config", "input_perturbation_std", "ou_sup_tail", "rkhs_sensitivity", "sigma_paper_printed",
    "sigma_paper_proof", "tail_delta", "tight_functional_noise",
]

