"""The privacy layer: budgets, mechanisms, the ledger and its accountants, calibration."""

from privrl.privacy.accounting import ApproxDpEvent, Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
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

__all__ = [
    "ApproxDpEvent",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Ledger",
    "Neighboring",
    "PrivacyBudget",
    "PrivacyUnit",
    "SymmetricGaussianMatrixMechanism",
    "approx_dp_to_zcdp",
    "calibrate_gaussian",
    "calibrate_laplace",
    "gaussian_sigma_for_zcdp",
    "zcdp_to_approx_dp",
]
