"""Audit targets of the base mechanisms (:mod:`privrl.privacy.mechanisms`).

* ``gaussian`` — :class:`GaussianMechanism` calibrated by :func:`calibrate_gaussian` to (ε, δ),
  Δ₂ = 1; D gives 0 ∈ R³, D' gives e₁ (‖f(D) − f(D')‖₂ = Δ).
* ``laplace`` — :class:`LaplaceMechanism` with b = Δ₁/ε, D → 0, D' → e₁.
* ``symmetric-matrix`` — :class:`SymmetricGaussianMatrixMechanism` (3×3, shift 2 I) calibrated to
  (ε, δ); D → 0, D' → e₁e₁ᵀ, whose upper triangle has ℓ2 norm 1 = Δ and sits on the diagonal.

The claimed ε is the ledger's ε(δ) of the mechanism's own event, not the target's input.
Release-point audits: the Fisher discriminant (``"lda"``, the Gaussian likelihood ratio) for the
Gaussian releases, the Laplace likelihood ratio (``"laplace-llr"``) for the Laplace one; controls
``noise-div-2`` (release point) and ``noise-div-10`` (:func:`~privrl.audit.broken.divide_noise`).
"""

from __future__ import annotations

import numpy as np

from privrl.audit.broken import DiagonalNoiseFreeMatrixMechanism, divide_noise, noise_divisor
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target, stack
from privrl.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMatrixMechanism,
    calibrate_gaussian,
    calibrate_laplace,
)
from privrl.privacy.accounting import epsilon_of

NOISE_DIV_10 = BrokenVariant("noise-div-10", "noise standard deviation divided by 10, same claimed event")
#: the control every release-point audit must catch: a calibration off by a factor 2
NOISE_DIV_2 = BrokenVariant("noise-div-2", "noise standard deviation divided by 2, same claimed event "
                            "(audited at the release point)", sharp=True)


def broken_copy(mech, broken: str | None):
    """``mech``, or for a scaled-noise control its copy with the noise divided (same claim)."""
    divisor = noise_divisor(broken)
    return mech if divisor == 1.0 else divide_noise(mech, divisor)


def _vector_pair(mech, claimed: float, delta: float, a: np.ndarray, b: np.ndarray) -> AuditPair:
    def on(value: np.ndarray):
        return lambda n, rng: mech.release(np.broadcast_to(value, (n, *value.shape)), rng=rng)[0]
    return AuditPair(on(a), on(b), claimed, delta)


def claimed_epsilon(event, delta: float) -> float:
    """ε(δ) of ``event`` under privrl's ledger (PLD accountant for (ε, δ) events, RDP for zCDP)."""
    return float(epsilon_of(event, delta))


def _gaussian(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    mech = GaussianMechanism(sensitivity=1.0, noise_std=calibrate_gaussian(epsilon, delta))
    claimed = claimed_epsilon(mech.event(), delta)
    return _vector_pair(broken_copy(mech, broken), claimed, delta, np.zeros(3), np.eye(3)[0])


def _laplace(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    mech = LaplaceMechanism(sensitivity=1.0, noise_scale=calibrate_laplace(epsilon, delta))
    claimed = mech.epsilon if delta == 0 else claimed_epsilon(mech.event(), delta)
    return _vector_pair(broken_copy(mech, broken), claimed, delta, np.zeros(3), np.eye(3)[0])


def _matrix(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    cls = DiagonalNoiseFreeMatrixMechanism if broken == "diagonal-noise-free" else SymmetricGaussianMatrixMechanism
    shift = 0.0 if broken == "no-shift" else 2.0
    mech = cls(sensitivity=1.0, noise_std=calibrate_gaussian(epsilon, delta), shift=shift)
    claimed = claimed_epsilon(mech.event(), delta)
    mech = broken_copy(mech, broken)
    a, b = np.zeros((3, 3)), np.outer(np.eye(3)[0], np.eye(3)[0])

    def on(value: np.ndarray):
        return lambda n, rng: stack(lambda g: mech.release(value, rng=g)[0], n, rng)
    return AuditPair(on(a), on(b), claimed, delta)


register_target(AuditTarget(
    name="gaussian", description="Gaussian mechanism (calibrate_gaussian), l2-sensitivity 1",
    privacy_unit="any (sensitivity 1)", build=_gaussian, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
register_target(AuditTarget(
    name="laplace", description="Laplace mechanism, b = 1/epsilon, l1-sensitivity 1",
    privacy_unit="any (sensitivity 1)", build=_laplace, epsilon=1.0, delta=0.0,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="laplace-llr",
))
register_target(AuditTarget(
    name="symmetric-matrix", description="symmetric Gaussian matrix mechanism (3x3, shift 2 I)",
    privacy_unit="any (upper-triangle l2-sensitivity 1)", build=_matrix, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2,
              BrokenVariant("diagonal-noise-free", "noise on the strict upper triangle only (diagonal exact)"),
              BrokenVariant("no-shift", "PSD shift removed: public post-processing, must stay consistent",
                            caught=False)),
    trials=10_000, fast_trials=3_000, optimal="lda", sharp_trials=100_000, sharp_fast_trials=20_000,
))
