"""Additive noise mechanisms: ``release(value, *, rng) -> (noisy_value, DpEvent)``.

Each mechanism is constructed from the query's ``sensitivity`` Δ and either ``noise_multiplier``
(σ/Δ, or b/Δ for Laplace) or ``noise_std`` (σ; for Laplace ``noise_scale`` b). Δ is measured under
the algorithm's own neighbouring relation (see :mod:`privrl.privacy.accounting` for the
convention and why the ledger uses dp-accounting's add/remove relation).

Guarantees (Dwork & Roth 2014; Balle & Wang 2018):

* Gaussian: ``N(0, σ² I)`` on a query of ℓ2-sensitivity Δ has the privacy curve of
  ``N(0,1)`` vs ``N(Δ/σ, 1)``; it is ρ-zCDP with ρ = Δ²/(2σ²).
* Laplace: i.i.d. ``Lap(b)`` on a query of ℓ1-sensitivity Δ is (Δ/b)-DP.
* Symmetric matrix: Gaussian noise on the upper triangle (diagonal included) mirrored below.
  Δ is the ℓ2-sensitivity of the upper-triangle vector, which is at most the Frobenius
  sensitivity of the matrix; the release is the Gaussian mechanism on that vector followed by
  post-processing (mirroring).

A noise multiplier of 0 is allowed and means "no noise" (non-private); its event is
``NonPrivateDpEvent`` and the ledger then reports ε = ∞.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.privacy.secure import check_secure_rng, secure_gaussian, secure_laplace

__all__ = ["GaussianMechanism", "LaplaceMechanism", "SymmetricGaussianMatrixMechanism"]


class _AdditiveMechanism:
    _std_name = "noise_std"

    def __init__(self, *, sensitivity: float = 1.0, noise_multiplier: float | None = None,
                 noise_std: float | None = None, secure: bool = False) -> None:
        owner = type(self).__name__
        self.sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0, closed="neither")
        if (noise_multiplier is None) == (noise_std is None):
            raise param_error(f"noise_multiplier/{self._std_name}", owner,
                              f"exactly one of noise_multiplier or {self._std_name}",
                              {"noise_multiplier": noise_multiplier, self._std_name: noise_std})
        if noise_multiplier is not None:
            noise_multiplier = check_scalar(noise_multiplier, "noise_multiplier", owner=owner, low=0.0)
            self.noise_multiplier = noise_multiplier
        else:
            std = check_scalar(noise_std, self._std_name, owner=owner, low=0.0)
            self.noise_multiplier = std / self.sensitivity
        if not isinstance(secure, (bool, np.bool_)):
            raise param_error("secure", owner, "a bool", secure)
        self.secure = bool(secure)

    @property
    def scale(self) -> float:
        """The per-coordinate noise scale (σ, or b for Laplace)."""
        return self.noise_multiplier * self.sensitivity

    def _noise_event(self) -> dp_accounting.DpEvent:
        raise NotImplementedError

    def event(self) -> dp_accounting.DpEvent:
        """The event of one release."""
        if self.noise_multiplier == 0:
            return dp_accounting.NonPrivateDpEvent()
        return self._noise_event()

    def _add_noise(self, value: np.ndarray, rng: RngLike) -> np.ndarray:
        raise NotImplementedError

    def release(self, value: Any, *, rng: RngLike = None) -> tuple[np.ndarray, dp_accounting.DpEvent]:
        """Return ``(value + noise, event)``. ``rng`` must be None when ``secure=True``."""
        owner = type(self).__name__
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise param_error("value", f"{owner}.release", "finite", "array with non-finite entries")
        if self.secure:
            check_secure_rng(rng, f"{owner}.release")
        elif rng is None:
            raise param_error("rng", f"{owner}.release",
                              "a numpy Generator or int seed (or secure=True for unseeded OS randomness)", rng)
        if self.noise_multiplier == 0:
            return arr.copy(), self.event()
        return self._add_noise(arr, rng), self.event()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self.sensitivity!r}, "
                f"noise_multiplier={self.noise_multiplier!r}, secure={self.secure!r})")


class GaussianMechanism(_AdditiveMechanism):
    """``value + N(0, σ² I)`` for a query of ℓ2-sensitivity Δ; event ``GaussianDpEvent(σ/Δ)``."""

    def _noise_event(self) -> dp_accounting.DpEvent:
        return dp_accounting.GaussianDpEvent(self.noise_multiplier)

    @property
    def rho(self) -> float:
        """zCDP parameter Δ²/(2σ²) of one release."""
        return math.inf if self.noise_multiplier == 0 else 1.0 / (2.0 * self.noise_multiplier**2)

    def _add_noise(self, value, rng):
        if self.secure:
            return secure_gaussian(value, self.scale)
        return value + as_generator(rng).normal(0.0, self.scale, size=value.shape)


class LaplaceMechanism(_AdditiveMechanism):
    """``value + Lap(b)`` i.i.d. for a query of ℓ1-sensitivity Δ; (Δ/b)-DP; event ``LaplaceDpEvent(b/Δ)``."""

    _std_name = "noise_scale"

    def __init__(self, *, sensitivity: float = 1.0, noise_multiplier: float | None = None,
                 noise_scale: float | None = None, secure: bool = False) -> None:
        super().__init__(sensitivity=sensitivity, noise_multiplier=noise_multiplier,
                         noise_std=noise_scale, secure=secure)

    @property
    def epsilon(self) -> float:
        """Pure ε = Δ/b of one release."""
        return math.inf if self.noise_multiplier == 0 else 1.0 / self.noise_multiplier

    def _noise_event(self) -> dp_accounting.DpEvent:
        return dp_accounting.LaplaceDpEvent(self.noise_multiplier)

    def _add_noise(self, value, rng):
        if self.secure:
            return secure_laplace(value, self.scale)
        return value + as_generator(rng).laplace(0.0, self.scale, size=value.shape)


class SymmetricGaussianMatrixMechanism(GaussianMechanism):
    """Symmetric Gaussian noise for symmetric matrices: i.i.d. ``N(0, σ²)`` on the upper triangle
    (diagonal included), mirrored below. Δ is the ℓ2-sensitivity of the upper triangle.

    An optional ``shift`` adds ``shift · I`` after the noise (a public, data-independent constant,
    e.g. to keep a noisy Gram matrix positive definite with high probability); it is
    post-processing and does not change the event.
    """

    def __init__(self, *, sensitivity: float = 1.0, noise_multiplier: float | None = None,
                 noise_std: float | None = None, shift: float = 0.0, secure: bool = False) -> None:
        super().__init__(sensitivity=sensitivity, noise_multiplier=noise_multiplier,
                         noise_std=noise_std, secure=secure)
        self.shift = check_scalar(shift, "shift", owner=type(self).__name__)

    def release(self, value: Any, *, rng: RngLike = None) -> tuple[np.ndarray, dp_accounting.DpEvent]:
        arr = np.asarray(value, dtype=float)
        owner = type(self).__name__
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise param_error("value", f"{owner}.release", "a square matrix", f"shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise param_error("value", f"{owner}.release", "finite", "array with non-finite entries")
        if not np.allclose(arr, arr.T, rtol=1e-10, atol=1e-12):
            raise param_error("value", f"{owner}.release", "a symmetric matrix", "a non-symmetric matrix")
        arr = np.triu(arr) + np.triu(arr, 1).T  # exactly symmetric (upper triangle mirrored)
        noisy, event = super().release(arr, rng=rng)
        if self.shift:
            noisy = noisy + self.shift * np.eye(arr.shape[0])
        return noisy, event

    def _add_noise(self, value, rng):
        d = value.shape[0]
        iu = np.triu_indices(d)
        if self.secure:
            upper = secure_gaussian(np.zeros(len(iu[0])), self.scale)
        else:
            upper = as_generator(rng).normal(0.0, self.scale, size=len(iu[0]))
        noise = np.zeros((d, d))
        noise[iu] = upper
        noise = noise + np.triu(noise, 1).T
        return value + noise
