"""The square-root factorization counter for streams of arrays (continual counting by a matrix
mechanism: Fichtenberger, Henzinger & Upadhyay 2023, "Constant matters: fine-grained error bound on
differentially private continual observation"; Henzinger, Upadhyay & Upadhyay 2023).

The prefix sums of a stream ``x_1, …, x_n`` are ``L x`` with ``L`` the all-ones lower-triangular
``n × n`` matrix. With ``c_k = binom(2k, k)/4^k`` (the Taylor coefficients of ``(1 − x)^{−1/2}``) and
``A`` the lower-triangular Toeplitz matrix with first column ``(c_0, …, c_{n−1})``, ``A·A = L``
(the square of the series is ``(1 − x)^{−1}``). The counter releases

    ``L x + A z = A (A x + z)``,  ``z_j`` i.i.d. ``N(0, σ²)`` (symmetric Gaussian for matrix streams),

i.e. post-processing (multiplication by the public, invertible ``A``) of the Gaussian mechanism
``A x + z``. The prefix release after ``t`` inserts is ``Σ_{j≤t} x_j + n_t`` with
``n_t = Σ_{j≤t} c_{t−j} z_j``: per-entry variance ``σ² Σ_{k<t} c_k² ≤ σ² s_n²`` where
``s_n² = Σ_{k<n} c_k² ≈ 1 + ln(n)/π`` — against ``σ² popcount(t)`` (≤ ``σ² ⌈log2 n⌉``) for the
binary tree with ``⌈log2 n⌉`` node releases per item.

Privacy. Replacing item ``i`` by ``x_i'`` (``‖x_i − x_i'‖ ≤ Δ``, Δ the ℓ2-sensitivity of one item
under the algorithm's own replace-one relation, exactly the Δ the tree's nodes use) changes ``A x``
by ``(A e_i) ⊗ (x_i − x_i')``, of ℓ2 norm ``‖A e_i‖ Δ = √(Σ_{k<n−i+1} c_k²) Δ ≤ s_n Δ``. So the
whole stream is **one** Gaussian release with noise multiplier ``σ/(s_n Δ)`` (the tree: ``⌈log2 n⌉``
releases with multiplier ``σ/Δ`` each). Items chosen adaptively from earlier releases (an online
learner) do not change this: for a lower-triangular factorization the release of ``A x + z`` on an
adaptive stream has the privacy of the non-adaptive Gaussian mechanism (Denisov, McMahan, Rush,
Smith & Thakurta 2022, "Improved differential privacy for SGD via optimal private linear operators on
adaptive streams", NeurIPS). Matrix streams use symmetric noise as the tree does (upper triangle
i.i.d., diagonal included, mirrored), so Δ is the ℓ2-sensitivity of the upper triangle.

Implementation. ``z`` is data-independent, so the whole noise sequence ``n_1, …, n_n`` is drawn
from the noise source at the first insert (one draw per counter, ``(n, *shape)`` standard normals
scaled by σ — :func:`~privrl.privacy.tree.scaled_noise`) and convolved with ``c`` by FFT; memory
``n × prod(shape)`` floats. The counter keeps the exact running sum, so zero noise gives the plain
running sum bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privrl._validation import check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.noise import NoiseSource
from privrl.privacy.tree import (
    counter_settings,
    noise_multipliers,
    row_scales,
    scaled_noise,
    with_shift,
)

__all__ = ["sqrt_coefficients", "sqrt_factor_matrix", "sqrt_sensitivity_factor", "prefix_variance_factor",
           "FactorizationCounter"]


def sqrt_coefficients(n: int) -> np.ndarray:
    """``c_k = binom(2k, k)/4^k`` for ``k < n`` (``c_0 = 1``, ``c_k = c_{k−1}(2k−1)/(2k)``)."""
    n = check_scalar(n, "n", owner="sqrt_coefficients", kind=int, low=0)
    if n == 0:
        return np.zeros(0)
    k = np.arange(1, n, dtype=float)
    return np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])


def sqrt_factor_matrix(n: int) -> np.ndarray:
    """``A``: the ``n × n`` lower-triangular Toeplitz matrix with first column ``c`` (``A·A = L``)."""
    c = sqrt_coefficients(n)
    i, j = np.indices((n, n))
    return np.where(i >= j, c[np.clip(i - j, 0, None)], 0.0)


def prefix_variance_factor(n: int) -> float:
    """``s_n² = Σ_{k<n} c_k²``: the largest column norm² of ``A`` and the largest per-entry variance
    of a prefix release in units of σ² (``1`` for ``n ≤ 1``)."""
    c = sqrt_coefficients(max(int(n), 1))
    return float(np.sum(c * c))


def sqrt_sensitivity_factor(n: int) -> float:
    """``s_n = √(Σ_{k<n} c_k²)``: the ℓ2-sensitivity of ``A x`` per unit of item sensitivity."""
    return math.sqrt(prefix_variance_factor(n))


class FactorizationCounter:
    """Running sums of a stream of arrays under the square-root factorization (module doc).

    The interface of :class:`~privrl.privacy.tree.BinaryCounter` (``insert``, ``release``,
    ``noise_sum``, ``event``). ``shape``, ``n_items``, ``sigma`` (one float or one per counter of a
    stack along the first axis), ``symmetric``, ``shift`` as there; ``source`` the fit's
    :class:`~privrl.privacy.noise.NoiseSource` (``z`` is drawn from it at the first insert);
    ``sensitivity`` the ℓ2-sensitivity Δ of one item (per counter of the stack or one float) — the
    event is one Gaussian release of multiplier ``σ/(s_n Δ)``.
    """

    def __init__(self, shape: tuple[int, ...], *, n_items: int, sigma: Any = 0.0, symmetric: bool = False,
                 shift: float = 0.0, source: NoiseSource | None = None, sensitivity: Any = None) -> None:
        owner = "FactorizationCounter"
        self.shape, self.n_items, self.sigma, self.symmetric, self.shift = counter_settings(
            owner, shape, n_items, sigma, symmetric, shift, scalar_ok=False)
        noisy = bool(np.any(np.asarray(self.sigma) > 0))
        if noisy and not isinstance(source, NoiseSource):
            raise param_error("source", owner, "a privrl NoiseSource when sigma > 0", type(source).__name__)
        self.source = source
        self.sensitivity = None if sensitivity is None else row_scales(sensitivity, self.shape[0], owner)
        self.factor = sqrt_sensitivity_factor(self.n_items)
        self.t = 0
        self._exact = np.zeros(self.shape)
        self._noise: np.ndarray | None = None if noisy else np.zeros((0, *self.shape))
        self._release: np.ndarray | None = None

    # -- noise
    def noise_sequence(self) -> np.ndarray:
        """``(n_items, *shape)``: ``n_t = Σ_{j≤t} c_{t−j} z_j`` for ``t = 1 … n_items`` (drawn at the
        first call; zeros when σ = 0)."""
        if self._noise is None:   # noisy: __init__ checked that there is a source
            assert self.source is not None
            n = self.n_items
            sig = np.broadcast_to(np.asarray(self.sigma, dtype=float), (self.shape[0],))
            z = scaled_noise(self.source, (n, *self.shape), self.symmetric, sig, axis=1)
            if n and np.any(z):
                from scipy.signal import fftconvolve

                c = sqrt_coefficients(n).reshape(n, *([1] * len(self.shape)))
                out = fftconvolve(z, c, axes=0)[:n]
                if self.symmetric:                                      # exactly symmetric
                    out = np.triu(out) + np.swapaxes(np.triu(out, 1), -1, -2)
                self._noise = out
            else:
                self._noise = np.zeros((n, *self.shape))
        return self._noise

    # -- stream
    def insert(self, item: Any) -> None:
        x = np.asarray(item, dtype=float)
        if x.shape != self.shape:
            raise param_error("item", "FactorizationCounter.insert", f"an array of shape {self.shape}",
                              f"shape {x.shape}")
        if self.t >= self.n_items:
            raise param_error("item", "FactorizationCounter.insert",
                              f"at most n_items={self.n_items} inserts (the accounting assumes it)",
                              f"insert number {self.t + 1}")
        if self._noise is None:
            self.noise_sequence()
        self.t += 1
        self._exact = self._exact + x
        self._release = None

    def noise_sum(self) -> np.ndarray:
        """The noise of the current release, ``n_t`` (zeros before the first insert)."""
        if self.t == 0:
            return np.zeros(self.shape)
        noise = self.noise_sequence()   # drawn at the first insert
        return noise[self.t - 1] if len(noise) else np.zeros(self.shape)

    def release(self) -> np.ndarray:
        """``Σ_{j≤t} x_j + n_t (+ shift·I)``; repeated calls without an insert return the same array."""
        if self._release is None:
            out = self._exact + self.noise_sum() if self.t and len(self.noise_sequence()) else self._exact.copy()
            self._release = with_shift(out, self.shift)
        return self._release

    # -- privacy
    def noise_multiplier(self) -> Any:
        """``σ/(s_n Δ)`` of the one Gaussian release of ``A x`` (∞ when Δ = 0), per counter of the
        stack when σ or Δ is given per counter."""
        return noise_multipliers(self.sigma, self.sensitivity, owner="FactorizationCounter", factor=self.factor)

    def event(self) -> Any:
        """The privacy loss of one item: one Gaussian release per counter of the stack (composed)."""
        parts = [events.self_composed(events.gaussian(float(x)), 1) if 0 < x < math.inf else events.gaussian(float(x))
                 for x in np.atleast_1d(self.noise_multiplier())]
        return parts[0] if len(parts) == 1 else events.composed(parts)
