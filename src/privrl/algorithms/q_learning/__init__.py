"""DP Q-learning with functional noise (Wang & Hegde 2019) and its baselines.

Training runs on a NumPy learner (``training.py``); torch (extra ``deep``) is needed only for the
PyTorch reference learner that the tests compare it with.
"""

from privrl.algorithms.q_learning.calibration import (
    FunctionalNoiseCalibration,
    calibrate_functional_noise,
    delta_g,
    dpsgd_noise_multiplier,
    epsilon_exact,
    epsilon_paper,
    input_perturbation_std,
    sigma_paper_printed,
    sigma_paper_proof,
)
from privrl.algorithms.q_learning.configs import CONFIGS, TrainingConfig, get_config
from privrl.algorithms.q_learning.estimators import (
    DPQLearning,
    DPSGDQLearning,
    InputPerturbationQLearning,
    QLearning,
)

__all__ = [
    "CONFIGS", "DPQLearning", "DPSGDQLearning", "FunctionalNoiseCalibration", "InputPerturbationQLearning",
    "QLearning", "TrainingConfig", "calibrate_functional_noise", "delta_g", "dpsgd_noise_multiplier",
    "epsilon_exact", "epsilon_paper", "get_config", "input_perturbation_std", "sigma_paper_printed",
    "sigma_paper_proof",
]
