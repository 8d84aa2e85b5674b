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

Every draw goes through :mod:`privrl.privacy.release` and a pluggable
:class:`~privrl.privacy.noise.NoiseSource`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._rng import RngLike
from privrl._validation import check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.noise import NoiseSource, make_noise
from privrl.privacy.release import Release, release_gaussian, release_laplace

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["GaussianMechanism", "LaplaceMechanism", "SymmetricGaussianMatrixMechanism"]


class _AdditiveMechanism:
    _std_name = "noise_std"
    #: the noise drawn ("gaussian" or "laplace") and whether it is symmetric (upper triangle)
    kind = "gaussian"
    symmetric = False

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

    def event(self) -> DpEvent:
        """The event of one release."""
        raise NotImplementedError

    def _release(self, value: object, noise: NoiseSource) -> Release:
        raise NotImplementedError

    def release(self, value: Any, *, rng: RngLike = None,
                noise: NoiseSource | None = None) -> tuple[np.ndarray, Any]:
        """Return ``(value + noise, event)``.

        The noise comes from ``noise`` (any :class:`~privrl.privacy.noise.NoiseSource`) or, when it
        is None, from ``rng`` (seeded NumPy) — or from OpenDP when ``secure=True``, which refuses
        ``rng``.
        """
        owner = f"{type(self).__name__}.release"
        if not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise param_error("value", owner, "finite", "array with non-finite entries")
        if noise is None:
            noise = make_noise(rng, secure=self.secure, owner=owner)
        elif rng is not None:
            raise param_error("rng", owner, "None when a noise source is given", type(rng).__name__)
        return tuple(self._release(value, noise))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self.sensitivity!r}, "
                f"noise_multiplier={self.noise_multiplier!r}, secure={self.secure!r})")


class GaussianMechanism(_AdditiveMechanism):
    """``value + N(0, σ² I)`` for a query of ℓ2-sensitivity Δ; event ``GaussianDpEvent(σ/Δ)``."""

    def event(self) -> DpEvent:
        return events.gaussian(self.noise_multiplier)

    @property
    def rho(self) -> float:
        """zCDP parameter Δ²/(2σ²) of one release."""
        return math.inf if self.noise_multiplier == 0 else 1.0 / (2.0 * self.noise_multiplier**2)

    def _release(self, value: object, noise: NoiseSource) -> Release:
        return release_gaussian(value, sensitivity=self.sensitivity, std=self.scale, noise=noise)


class LaplaceMechanism(_AdditiveMechanism):
    """``value + Lap(b)`` i.i.d. for a query of ℓ1-sensitivity Δ; (Δ/b)-DP; event ``LaplaceDpEvent(b/Δ)``."""

    kind = "laplace"

    _std_name = "noise_scale"

    def __init__(self, *, sensitivity: float = 1.0, noise_multiplier: float | None = None,
                 noise_scale: float | None = None, secure: bool = False) -> None:
        super().__init__(sensitivity=sensitivity, noise_multiplier=noise_multiplier,
                         noise_std=noise_scale, secure=secure)

    @property
    def epsilon(self) -> float:
        """Pure ε = Δ/b of one release."""
        return math.inf if self.noise_multiplier == 0 else 1.0 / self.noise_multiplier

    def event(self) -> DpEvent:
        return events.laplace(self.noise_multiplier)

    def _release(self, value: object, noise: NoiseSource) -> Release:
        return release_laplace(value, sensitivity=self.sensitivity, scale=self.scale, noise=noise)


class SymmetricGaussianMatrixMechanism(GaussianMechanism):
    """Symmetric Gaussian noise for symmetric matrices: i.i.d. ``N(0, σ²)`` on the upper triangle
    (diagonal included), mirrored below. Δ is the ℓ2-sensitivity of the upper triangle.

    An optional ``shift`` adds ``shift · I`` after the noise (a public, data-independent constant,
    e.g. to keep a noisy Gram matrix positive definite with high probability); it is
    post-processing and does not change the event.
    """

    symmetric = True

    def __init__(self, *, sensitivity: float = 1.0, noise_multiplier: float | None = None,
                 noise_std: float | None = None, shift: float = 0.0, secure: bool = False) -> None:
        super().__init__(sensitivity=sensitivity, noise_multiplier=noise_multiplier,
                         noise_std=noise_std, secure=secure)
        self.shift = check_scalar(shift, "shift", owner=type(self).__name__)

    def _release(self, value: object, noise: NoiseSource) -> Release:
        arr = np.asarray(value, dtype=float)
        owner = f"{type(self).__name__}.release"
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise param_error("value", owner, "a square matrix", f"shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise param_error("value", owner, "finite", "array with non-finite entries")
        if not np.allclose(arr, arr.T, rtol=1e-10, atol=1e-12):
            raise param_error("value", owner, "a symmetric matrix", "a non-symmetric matrix")
        arr = np.triu(arr) + np.triu(arr, 1).T  # exactly symmetric (upper triangle mirrored)
        noisy, event = release_gaussian(arr, sensitivity=self.sensitivity, std=self.scale, noise=noise,
                                        symmetric=True)
        if self.shift:
            noisy = noisy + self.shift * np.eye(arr.shape[0])
        return Release(noisy, event)
