"""privrl — differentially private reinforcement learning.

The flat public API. Names import lazily (``privrl.DPLSW`` imports its family's package on first
use, ``privrl.PrivacyBudget`` the privacy layer; the estimators' names come from the families'
records, :mod:`privrl._family_api`) so that ``import privrl`` stays fast (no NumPy, no
dp-accounting, no Gymnasium, no torch) and does not need the optional extras (torch for DP
Q-learning).

``import privrl`` registers the ``privrl/...`` Gymnasium ids: at once when Gymnasium is already
imported, otherwise as soon as it is (a one-shot import hook), so ``gymnasium.make("privrl/Chain-v0")``
works in either import order without making ``import privrl`` pay for Gymnasium.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from privrl._family_api import FAMILY_ESTIMATORS
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

__version__ = "0.4.0"

# name -> module that defines it (imported on first access: ``import privrl`` and ``privrl --help``
# stay free of NumPy and dp-accounting)
_LAZY = {
    # privacy layer
    **{name: "privrl.privacy" for name in (
        "ConstantNoise", "GaussianMechanism", "LaplaceMechanism", "Ledger", "Neighboring", "PrivacyBudget",
        "PrivacyUnit", "ScaledNoise", "SecureNoise", "SymmetricGaussianMatrixMechanism", "approx_dp_to_zcdp",
        "calibrate_gaussian", "calibrate_laplace", "zcdp_to_approx_dp")},
    # data and models
    "TrajectoryDataset": "privrl.data.trajectories",
    "collect": "privrl.data.trajectories",
    "TabularMDP": "privrl.envs.tabular",
    "from_gymnasium_toy_text": "privrl.envs.tabular",
    "SparseTabularMDP": "privrl.envs.sparse_tabular",
    "sparse_tabular": "privrl.envs.sparse_tabular",
    "LinearMDP": "privrl.envs.linear",
    "LinearMixtureMDP": "privrl.envs.linear_mixture",
    # contract
    "Estimator": "privrl.base",
    "PrivateEstimator": "privrl.base",
    "Param": "privrl._params",
    "use_noise": "privrl.testing",
    # planning before the data
    "plan": "privrl.planning",
    "Plan": "privrl.planning",
    # the families' estimators, read from their records (privrl.family)
    **FAMILY_ESTIMATORS,
}

__all__ = [
    "__version__",
    "BudgetExceededError",
    "CertificationError",
    "InvalidDataError",
    "InvalidParameterError",
    "NotFittedError",
    "PrivacyLeakWarning",
    "PrivrlError",
    "UtilityWarning",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'privrl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)


def _register_gym_ids() -> None:
    # here, not at the top: privrl.envs imports Gymnasium, which import privrl must not pay for
    from privrl.envs.registration import register_envs

    register_envs()


class _RegisterWhenGymnasiumLoads:
    """Runs :func:`_register_gym_ids` right after ``gymnasium`` is first imported (then removes itself)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gymnasium":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            _register_gym_ids()

        loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


if "gymnasium" in sys.modules:
    _register_gym_ids()
elif not any(isinstance(f, _RegisterWhenGymnasiumLoads) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterWhenGymnasiumLoads())
