"""privrl — differentially private reinforcement learning.

The flat public API. Algorithms import lazily (``privrl.DPLSW`` imports
:mod:`privrl.algorithms.policy_evaluation` on first use) so that ``import privrl`` stays fast and
does not need the optional extras (torch for DP Q-learning).
"""

from __future__ import annotations

import importlib
from typing import Any

from privrl.errors import (
    BudgetExceededError,
    CertificationError,
    InvalidDataError,
    InvalidParameterError,
    NotFittedError,
    PrivacyLeakWarning,
    PrivrlError,
    UtilityWarning,
)
from privrl.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    Ledger,
    Neighboring,
    PrivacyBudget,
    PrivacyUnit,
    SymmetricGaussianMatrixMechanism,
    approx_dp_to_zcdp,
    calibrate_gaussian,
    calibrate_laplace,
    zcdp_to_approx_dp,
)

__version__ = "0.1.0"

# name -> module that defines it (imported on first access)
_LAZY = {
    # data and models
    "TrajectoryDataset": "privrl.data.trajectories",
    "collect": "privrl.data.trajectories",
    "TabularMDP": "privrl.envs.tabular",
    "from_gymnasium_toy_text": "privrl.envs.tabular",
    "LinearMDP": "privrl.envs.linear",
    "LinearMixtureMDP": "privrl.envs.linear_mixture",
    # algorithms
    "LSW": "privrl.algorithms.policy_evaluation",
    "LSL": "privrl.algorithms.policy_evaluation",
    "DPLSW": "privrl.algorithms.policy_evaluation",
    "DPLSL": "privrl.algorithms.policy_evaluation",
    "APVI": "privrl.algorithms.offline",
    "DPAPVI": "privrl.algorithms.offline",
    "PEVI": "privrl.algorithms.offline",
    "VAPVI": "privrl.algorithms.offline",
    "DPVAPVI": "privrl.algorithms.offline",
    "LinOptVI": "privrl.algorithms.linear_mixture",
    "LinOptPO": "privrl.algorithms.linear_mixture",
    "DPQLearning": "privrl.algorithms.q_learning",
}

__all__ = [
    "__version__",
    "BudgetExceededError",
    "CertificationError",
    "GaussianMechanism",
    "InvalidDataError",
    "InvalidParameterError",
    "LaplaceMechanism",
    "Ledger",
    "Neighboring",
    "NotFittedError",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "PrivacyUnit",
    "PrivrlError",
    "SymmetricGaussianMatrixMechanism",
    "UtilityWarning",
    "approx_dp_to_zcdp",
    "calibrate_gaussian",
    "calibrate_laplace",
    "zcdp_to_approx_dp",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'privrl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
