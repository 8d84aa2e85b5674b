"""A test-only ``privrl fit`` command (``test-mean``): the private mean reward of a .npz file.

Each row of ``rewards`` (one per trajectory, values in [0, reward_bound]) is one privacy unit;
replace-one neighbours move the mean by at most reward_bound / n, the ℓ2-sensitivity Δ. The noise
is calibrated from Δ alone: σ = calibrate_gaussian(ε, δ, sensitivity=Δ) (PLD), or
σ = Δ/√(2ρ) for a ρ-zCDP budget — never from the data values.
"""

from __future__ import annotations

import math

import numpy as np

from privrl.base import Estimator
from privrl.errors import InvalidDataError
from privrl.fitters import FitCommand, FitOutput, register_fit
from privrl.privacy import GaussianMechanism, Ledger, Neighboring, PrivacyUnit, calibrate_gaussian
from privrl.privacy.calibration import gaussian_sigma_for_zcdp


class PrivateMeanReward(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget, reward_bound=1.0, rng=None):
        self.budget = budget
        self.reward_bound = reward_bound
        self.rng = rng

    def fit(self, rewards):
        rewards = np.asarray(rewards, dtype=float)
        if rewards.ndim != 1 or rewards.size == 0 or np.any(rewards < 0) or np.any(rewards > self.reward_bound):
            raise InvalidDataError(f"rewards must be a non-empty 1-d array in [0, {self.reward_bound}].")
        delta_sens = self.reward_bound / rewards.size
        if not self.budget.is_private:
            sigma = 0.0
        elif self.budget.is_zcdp:
            sigma = gaussian_sigma_for_zcdp(self.budget.rho, sensitivity=delta_sens)
        else:
            sigma = calibrate_gaussian(self.budget.epsilon, self.budget.delta, sensitivity=delta_sens)
        mech = GaussianMechanism(sensitivity=delta_sens, noise_std=sigma)
        value, event = mech.release(rewards.mean(), rng=self.rng)
        self.mean_ = float(value)
        self.privacy_ledger_ = Ledger([event])
        return self


def _add_arguments(parser):
    parser.add_argument("--reward-bound", type=float, default=1.0)


def _run(args):
    if args.data is None:
        raise InvalidDataError("test-mean needs --data")
    with np.load(args.data) as npz:
        rewards = npz["rewards"]
    est = PrivateMeanReward(budget=args.budget, reward_bound=args.reward_bound, rng=args.rng).fit(rewards)
    return FitOutput(est, arrays={"mean": np.array([est.mean_])},
                     summary={"n": int(rewards.size), "mean": est.mean_, "finite": math.isfinite(est.mean_)})


register_fit(FitCommand("test-mean", "private mean reward (test only)", _add_arguments, _run))
