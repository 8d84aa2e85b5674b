"""The privacy layer: budgets, noise sources and the release seam, mechanisms, the ledger and its
accountants, calibration. dp-accounting is imported on first use, not by ``import privrl``."""

from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit, reporting_delta
from privrl.privacy.calibration import (
    approx_dp_to_zcdp,
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_sigma_for_zcdp,
    zcdp_to_approx_dp,
)
from privrl.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMatrixMechanism,
)
from privrl.privacy.noise import (
    ConstantNoise,
    NoiseSource,
    NumpyNoise,
    ScaledNoise,
    SecureNoise,
    make_noise,
)
from privrl.privacy.release import (
    Release,
    Releaser,
    release_gaussian,
    release_laplace,
    release_with_event,
)

__all__ = [
    "ApproxDpEvent",
    "ConstantNoise",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Ledger",
    "Neighboring",
    "NoiseSource",
    "NumpyNoise",
    "PrivacyBudget",
    "PrivacyUnit",
    "Release",
    "Releaser",
    "ScaledNoise",
    "SecureNoise",
    "SymmetricGaussianMatrixMechanism",
    "approx_dp_to_zcdp",
    "calibrate_gaussian",
    "calibrate_laplace",
    "gaussian_sigma_for_zcdp",
    "make_noise",
    "release_gaussian",
    "release_laplace",
    "release_with_event",
    "reporting_delta",
    "zcdp_to_approx_dp",
]


def __getattr__(name: str) -> object:
    if name == "ApproxDpEvent":  # subclasses dp-accounting's DpEvent: defined on first use
        from privrl.privacy.events import approx_event_class

        return approx_event_class()
    raise AttributeError(f"module 'privrl.privacy' has no attribute {name!r}")
