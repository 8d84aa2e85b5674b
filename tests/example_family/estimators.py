"""The private mean return of a batch of episodes (the Gaussian mechanism, Dwork & Roth 2014).

Privacy unit: one episode; neighbours replace one episode. Each episode's return G_i (the sum of its
rewards) lies in the public interval [0, return_bound]: a return outside it is an error, not
clipped. Replacing one episode moves the mean of n returns by at most return_bound / n, the
ℓ2-sensitivity Δ. The released mean is ``mean + N(0, σ²)`` with σ calibrated from Δ alone:

* (ε, δ) budgets: the least σ with ε_PLD(σ/Δ, δ) ≤ ε (:func:`privrl.calibrate_gaussian`, the
  ledger's own accountant) — tight and sound at once for a single Gaussian release; ``calibration
  ="paper"`` uses the classical σ = Δ·√(2 ln(1.25/δ))/ε (Theorem 3.22, proven for ε < 1 only);
* ρ-zCDP budgets: σ = Δ/√(2ρ) (Bun & Steinke 2016, Proposition 1.6).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from privrl._rng import RngLike
from privrl.base import PrivateEstimator, param
from privrl.data import TrajectoryDataset
from privrl.errors import InvalidDataError, UtilityWarning
from privrl.privacy import Neighboring, PrivacyBudget, PrivacyUnit, calibrate_gaussian
from privrl.privacy.calibration import gaussian_sigma_for_zcdp

__all__ = ["PrivateMeanReturn", "episode_returns", "noise_std"]


def episode_returns(dataset: TrajectoryDataset) -> np.ndarray:
    """The return (sum of rewards) of every episode of ``dataset``."""
    return np.add.reduceat(np.asarray(dataset.rewards, dtype=float), dataset.episode_starts[:-1])


def noise_std(budget: PrivacyBudget, sensitivity: float, calibration: str) -> float:
    """σ of the Gaussian release of a query of ℓ2-sensitivity Δ under ``budget`` (module docstring);
    0 for an infinite budget."""
    if not budget.is_private:
        return 0.0
    if budget.rho is not None:
        return float(gaussian_sigma_for_zcdp(budget.rho, sensitivity=sensitivity))
    epsilon, delta = float(budget.epsilon or 0.0), float(budget.delta or 0.0)   # both set: not a ρ budget
    if calibration == "paper":
        return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return float(calibrate_gaussian(epsilon, delta, sensitivity=sensitivity))


class PrivateMeanReturn(PrivateEstimator):
    """The mean return of the episodes of a dataset, (ε, δ)-DP or ρ-zCDP per episode.

    Fitted attributes: ``mean_`` (the released mean), ``n_episodes_``, ``privacy_ledger_``.
    """

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"
    return_bound: float = param("public bound on an episode's return (returns lie in [0, bound])", default=1.0,
                                low=0.0, closed="neither")

    def fit(self, dataset: TrajectoryDataset, *, rng: RngLike = None) -> PrivateMeanReturn:
        p = self._validated()
        rng = self._fit_rng(rng)
        returns = episode_returns(dataset)
        bound = p["return_bound"]
        if np.any(returns < 0.0) or np.any(returns > bound):
            raise InvalidDataError(f"An episode's return lies outside the public bounds [0, {bound:g}] "
                                   "('return_bound'): declare a bound that holds for every episode.")
        rel = self._privacy(rng, n_units=returns.size)   # the fit draws no other randomness
        sensitivity = bound / returns.size
        std = noise_std(p["budget"], sensitivity, p["calibration"])
        if std >= bound / 2:
            warnings.warn(f"PrivateMeanReturn: the noise std {std:.3g} is at least half the return bound: "
                          "the released mean is no better than the midpoint of the bounds.", UtilityWarning,
                          stacklevel=2)
        self.mean_ = float(rel.gaussian(returns.mean(), sensitivity=sensitivity, std=std))
        self.n_episodes_ = int(returns.size)
        return self
