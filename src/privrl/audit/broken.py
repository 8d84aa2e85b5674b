"""Deliberately broken copies of releases, for the negative controls of the audits.

Nothing here edits an algorithm module: each helper returns a *copy* of a mechanism (or wraps a
release function) with one privacy-relevant piece removed, so the audit can show that it catches
the bug. A control that is not caught is a failed audit design, not a pass.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from privrl._validation import check_scalar
from privrl.privacy.mechanisms import SymmetricGaussianMatrixMechanism
from privrl.privacy.noise import NoiseSource, NumpyNoise, ScaledNoise
from privrl.privacy.release import Release

__all__ = ["NOISE_DIVISOR", "NOISE_DIVISORS", "divide_noise", "noise_divisor", "scaled_source",
           "DiagonalNoiseFreeMatrixMechanism", "EveryOtherDrawNoiseFree"]

#: The noise divisor of the "noise-div-10" controls.
NOISE_DIVISOR = 10.0

#: The noise divisor of each scaled-noise control, by variant name.
NOISE_DIVISORS = {"noise-div-2": 2.0, "noise-div-10": NOISE_DIVISOR, "noise-div-100": 100.0}


def noise_divisor(broken: str | None) -> float:
    """The noise divisor of the variant ``broken`` (1 for the real release or another variant)."""
    return NOISE_DIVISORS.get(broken or "", 1.0)


def scaled_source(rng: np.random.Generator, broken: str | None) -> NoiseSource:
    """The noise source of one audited release: seeded NumPy, or for a scaled-noise control
    ``ScaledNoise(·, 1/divisor)`` (the generic broken implementation: less noise, same claim)."""
    base = NumpyNoise(rng)
    divisor = noise_divisor(broken)
    return base if divisor == 1.0 else ScaledNoise(base, 1.0 / divisor)


def divide_noise(mechanism: Any, divisor: float = NOISE_DIVISOR) -> Any:
    """A copy of an additive mechanism (``noise_multiplier`` attribute) whose noise is ``divisor``
    times smaller, while its ``event()`` still claims the original multiplier — the bug of a noise
    scale computed with the wrong sensitivity or budget."""
    divisor = check_scalar(divisor, "divisor", owner="divide_noise", low=1.0, closed="neither")
    broken = copy.copy(mechanism)
    claimed = mechanism.event()
    broken.noise_multiplier = mechanism.noise_multiplier / divisor
    broken.event = lambda: claimed
    return broken


class DiagonalNoiseFreeMatrixMechanism(SymmetricGaussianMatrixMechanism):
    """The symmetric matrix mechanism with the diagonal's noise dropped (noise drawn on the strict
    upper triangle only): a classic indexing bug (``triu_indices(d, 1)``). A neighbour that moves a
    diagonal entry (e.g. φφᵀ with φ a basis vector) is then released exactly."""

    def _release(self, value, noise):
        noisy, event = super()._release(value, noise)
        exact = np.triu(np.asarray(value, dtype=float)) + np.triu(np.asarray(value, dtype=float), 1).T
        diagonal_noise = np.diag(np.diag(noisy - exact - self.shift * np.eye(exact.shape[0])))
        return Release(noisy - diagonal_noise, event)


class EveryOtherDrawNoiseFree(NoiseSource):
    """A noise source that returns zeros on every other round of ``period`` draws (the 1st, 3rd, ...)
    and ``base``'s noise otherwise: for tree counters that draw ``period`` nodes per insert, every
    other node of each counter drawn without noise (half the tree's noise removed, e.g. a
    level-indexing bug). Claims are unchanged, so an audit must flag it."""

    def __init__(self, base: NoiseSource, period: int = 1) -> None:
        self.base, self.calls, self.secure = base, 0, base.secure
        self.period = int(period)

    def _standard(self, kind: str, shape: tuple) -> np.ndarray:
        self.calls += 1
        noise = self.base._standard(kind, shape)
        return np.zeros(shape) if ((self.calls - 1) // self.period) % 2 == 0 else noise
