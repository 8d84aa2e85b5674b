"""Matrix-mechanism counters for streams of arrays: the square-root factorization and its
constant-memory stand-in, the buffered linear Toeplitz (BLT) factorization.

Square root (continual counting by a matrix
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

BLT (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024, "Efficient and near-optimal noise
generation for streaming differential privacy"; McKenna 2024). ``C`` is lower-triangular Toeplitz
with first column ``c_0 = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}`` (``k ≥ 1``; ``d`` buffers, ``θ_i ∈ (0, 1)``,
``ω_i > 0``) and ``B = L C⁻¹``, so ``B C = L``. The counter releases ``B (C x + z) = L x + B z``:
post-processing of the Gaussian mechanism ``C x + z``. One item's change moves ``C x`` by
``(C e_i) ⊗ (x_i − x_i')``, of norm ``‖C e_i‖ Δ ≤ ‖C e_1‖ Δ = s_C Δ`` with
``s_C² = Σ_{k<n} c_k²`` (the largest column norm of ``C``: every column is a truncation of the
first), so the whole stream is one Gaussian release of multiplier ``σ/(s_C Δ)`` — the privacy unit
and the adaptivity argument are the square root's. The prefix noise ``n_t = Σ_{j≤t} b_{t−j} z_j``
has per-entry variance ``σ² Σ_{k<t} b_k² ≤ σ² s_B²``, ``s_B² = Σ_{k<n} b_k²`` (rows of ``B`` grow
with ``t``). ``C⁻¹`` is the inverse of a linear recurrence with ``d`` states, so ``n_t`` is computed
as the noise arrives, in memory ``(d + 1) × prod(shape)`` floats whatever ``n``:

    ``y_t = z_t − Σ_i ω_i s_i``,  ``s_i ← θ_i s_i + y_t``,  ``n_t = n_{t−1} + y_t``

(``y = C⁻¹ z``, the buffers ``s_i = Σ_{j<t} θ_i^{t−1−j} y_j``). ``(θ, ω)`` are chosen once per ``n``
(data-independent) to minimise the max error ``s_C · s_B`` by L-BFGS on its closed form
(:func:`blt_factorization`); with ``d = max(4, ⌈log10 n⌉)`` buffers it is within 0.2% of the square
root's ``s_n²`` at ``n = 10⁴`` and ``10⁵`` (measured, ``benchmarks/bench_linear_mixture.py``).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.noise import NoiseSource
from privrl.privacy.tree import (
    NodeNoise,
    counter_settings,
    noise_multipliers,
    row_scales,
    scaled_noise,
    with_shift,
)

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["sqrt_coefficients", "sqrt_factor_matrix", "sqrt_sensitivity_factor", "prefix_variance_factor",
           "FactorizationCounter", "BLT", "blt_factorization", "blt_advance", "BLTCounter"]


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


# --------------------------------------------------------------------------- BLT
@dataclass(frozen=True)
class BLT:
    """A buffered linear Toeplitz factorization ``C = BLT(θ, ω)`` of the prefix-sum matrix (module
    doc): ``c_0 = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}``; ``B = L C⁻¹``. Public, data-independent."""

    theta: tuple[float, ...]
    omega: tuple[float, ...]

    @property
    def buffers(self) -> int:
        return len(self.theta)

    def coefficients(self, n: int) -> np.ndarray:
        """``(c_0, …, c_{n−1})``: the first column of ``C``."""
        k = np.arange(1, max(int(n), 1), dtype=float)[:, None]
        th, om = np.array(self.theta), np.array(self.omega)
        return np.concatenate([[1.0], (om * th ** (k - 1)).sum(axis=1)])[:max(int(n), 0)]

    def noise_coefficients(self, n: int) -> np.ndarray:
        """``(b_0, …, b_{n−1})``: the first column of ``B = L C⁻¹``, by the counter's own recurrence
        (:func:`blt_advance`) on the impulse ``z = e_1``."""
        th, om = np.array(self.theta), np.array(self.omega)
        state, total = np.zeros((len(th), 1)), np.zeros(1)
        out = np.empty(max(int(n), 0))
        for t in range(len(out)):
            total = blt_advance(np.array([1.0 if t == 0 else 0.0]), state, total, th, om)
            out[t] = total[0]
        return out

    def column_norm2(self, n: int) -> float:
        """``s_C² = Σ_{k<n} c_k²`` (closed form): the largest column norm² of the ``n × n`` ``C``."""
        return _norms_of(self.theta, self.omega, int(n))[0]

    def row_norm2(self, n: int) -> float:
        """``s_B² = Σ_{k<n} b_k²`` (closed form): the largest row norm² of the ``n × n`` ``B``, i.e. the
        largest per-entry prefix-noise variance in units of σ²."""
        return _norms_of(self.theta, self.omega, int(n))[1]

    def max_error(self, n: int) -> float:
        """``s_C · s_B``: the largest prefix-noise std per unit of item sensitivity and noise multiplier."""
        return math.sqrt(self.column_norm2(n) * self.row_norm2(n))


@functools.lru_cache(maxsize=256)
def _norms_of(theta: tuple[float, ...], omega: tuple[float, ...], n: int) -> tuple[float, float]:
    sc, sb = _blt_norms(np.array([theta]), np.array([omega]), n)
    return float(sc[0]), float(sb[0])


def _power_sums(p: np.ndarray, m: int) -> np.ndarray:
    """``Σ_{k<m} p^k = (1 − p^m)/(1 − p)`` elementwise (complex allowed)."""
    return (1 - p**m) / (1 - p)


def _blt_norms(theta: np.ndarray, omega: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms of ``(s_C², s_B²)`` for a batch ``(m, d)`` of BLT parameters (NaN where ``C⁻¹``'s
    recurrence is unstable). ``C⁻¹`` is the recurrence with state matrix ``M = diag(θ) − 1ωᵀ``:
    ``C⁻¹``'s column is ``1, −ωᵀM^{k−1}1``, so with ``M = VΛV⁻¹`` its partial sums are
    ``b_k = β − Σ_i g_i λ_i^k`` and ``Σ_{k<n} b_k²`` is a sum of geometric series."""
    m, d = theta.shape
    tt = theta[:, :, None] * theta[:, None, :]
    sc = 1 + np.einsum("mi,mj,mij->m", omega, omega, _power_sums(tt, n - 1)) if n > 1 else np.ones(m)
    M = theta[:, :, None] * np.eye(d) - omega[:, None, :]
    lam, V = np.linalg.eig(M)
    a = -np.einsum("mi,mij->mj", omega.astype(complex), V) * np.linalg.solve(V, np.ones((m, d, 1), complex))[..., 0]
    g = a / (1 - lam)
    beta = 1 + g.sum(axis=1)
    sb = (n * beta**2 - 2 * beta * np.sum(g * _power_sums(lam, n), axis=1)
          + np.einsum("mi,mj,mij->m", g, g, _power_sums(lam[:, :, None] * lam[:, None, :], n))).real
    sb = np.where(np.abs(lam).max(axis=1) < 1, sb, np.nan)
    return sc, sb


def _blt_log_error(x: np.ndarray, n: int) -> np.ndarray:
    """``log(s_C² s_B²)`` for a batch of unconstrained parameters ``x = (logit θ, log ω)``."""
    d = x.shape[1] // 2
    with np.errstate(all="ignore"):
        sc, sb = _blt_norms(1 / (1 + np.exp(-x[:, :d])), np.exp(x[:, d:]), n)
        out = np.log(sc) + np.log(sb)
    return np.where(np.isfinite(out), out, 1e3)


@functools.lru_cache(maxsize=64)
def blt_factorization(n: int, buffers: int | None = None) -> BLT:
    """The BLT for streams of ``n`` items (``buffers`` default ``max(4, ⌈log10 n⌉)``) minimising the
    max error ``s_C s_B`` (L-BFGS on the closed form from a fixed start: deterministic; cached).
    ``n ≤ 1``: ``C = I`` (exact, nothing to factor)."""
    n = check_scalar(n, "n", owner="blt_factorization", kind=int, low=0)
    d = max(4, math.ceil(math.log10(max(n, 1)))) if buffers is None else int(buffers)
    if n <= 1:
        return BLT((0.5,) * d, (0.0,) * d)
    from scipy.optimize import minimize

    theta0 = 1 - np.geomspace(1.0 / n, 0.5, d)
    x0 = np.concatenate([np.log(theta0 / (1 - theta0)), np.log(np.full(d, 0.5 / d))])
    step = 1e-7

    def value_and_gradient(x: np.ndarray) -> tuple[float, np.ndarray]:
        f = _blt_log_error(np.vstack([x, x + step * np.eye(len(x))]), n)     # forward differences
        return float(f[0]), (f[1:] - f[0]) / step

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(value_and_gradient, x0, jac=True, method="L-BFGS-B",
                       options={"maxiter": 3000, "ftol": 1e-14, "gtol": 1e-10})
    x = res.x if res.fun <= _blt_log_error(x0[None], n)[0] else x0
    return BLT(tuple(float(v) for v in 1 / (1 + np.exp(-x[:d]))), tuple(float(v) for v in np.exp(x[d:])))


def blt_advance(z: np.ndarray, state: np.ndarray, total: np.ndarray, theta: object, omega: object) -> np.ndarray:
    """One insert of the BLT noise recurrence (module doc): ``y = z − Σ_i ω_i s_i``, ``s_i ← θ_i s_i + y``
    (``state`` ``(d, ...)``, updated in place); returns ``total + y``. ``theta``/``omega`` ``(d,)`` or
    broadcastable against ``state`` (e.g. ``(d, R, 1, 1)`` for a stack of runs). The same elementwise
    operations for every entry, so a stack of counters gives each counter's own result bit for bit."""
    shape = (-1,) + (1,) * (state.ndim - 1)
    th, om = (np.asarray(v, dtype=float) for v in (theta, omega))
    th, om = (v.reshape(shape) if v.ndim == 1 else v for v in (th, om))
    y = z - (om * state).sum(axis=0)
    state *= th
    state += y
    return total + y


# --------------------------------------------------------------------------- the counters
class _MatrixCounter:
    """What both factorization counters share: settings, the exact running sum, the release and
    the one Gaussian event of multiplier ``σ/(factor·Δ)``. Subclasses draw the noise."""

    owner = "FactorizationCounter"
    #: what Δ is multiplied by in the one release of ``C x`` (the largest column norm of ``C``)
    factor: float = 1.0

    def __init__(self, shape: tuple[int, ...], *, n_items: int, sigma: Any = 0.0, symmetric: bool = False,
                 shift: float = 0.0, source: NoiseSource | None = None, sensitivity: Any = None) -> None:
        owner = self.owner
        self.shape, self.n_items, self.sigma, self.symmetric, self.shift = counter_settings(
            owner, shape, n_items, sigma, symmetric, shift, scalar_ok=False)
        self.noisy = bool(np.any(np.asarray(self.sigma) > 0))
        if self.noisy and not isinstance(source, NoiseSource):
            raise param_error("source", owner, "a privrl NoiseSource when sigma > 0", type(source).__name__)
        self.source = source
        self.sensitivity = None if sensitivity is None else row_scales(sensitivity, self.shape[0], owner)
        self.t = 0
        self._exact = np.zeros(self.shape)
        self._release: np.ndarray | None = None

    def _advance(self) -> None:
        """The noise of insert ``t`` (``self.t`` already incremented)."""

    def insert(self, item: Any) -> None:
        x = np.asarray(item, dtype=float)
        if x.shape != self.shape:
            raise param_error("item", f"{self.owner}.insert", f"an array of shape {self.shape}", f"shape {x.shape}")
        if self.t >= self.n_items:
            raise param_error("item", f"{self.owner}.insert",
                              f"at most n_items={self.n_items} inserts (the accounting assumes it)",
                              f"insert number {self.t + 1}")
        self.t += 1
        self._advance()
        self._exact = self._exact + x
        self._release = None

    def noise_sum(self) -> np.ndarray:
        raise NotImplementedError

    def release(self) -> np.ndarray:
        """``Σ_{j≤t} x_j + n_t (+ shift·I)``; repeated calls without an insert return the same array."""
        if self._release is None:
            out = self._exact + self.noise_sum() if self.t and self.noisy else self._exact.copy()
            self._release = with_shift(out, self.shift)
        return self._release

    # -- privacy
    def noise_multiplier(self) -> Any:
        """``σ/(factor·Δ)`` of the one Gaussian release of ``C x`` (∞ when Δ = 0), per counter of the
        stack when σ or Δ is given per counter."""
        return noise_multipliers(self.sigma, self.sensitivity, owner=self.owner, factor=self.factor)

    def event(self) -> DpEvent:
        """The privacy loss of one item: one Gaussian release per counter of the stack (composed)."""
        parts = [events.self_composed(events.gaussian(float(x)), 1) if 0 < x < math.inf else events.gaussian(float(x))
                 for x in np.atleast_1d(self.noise_multiplier())]
        return parts[0] if len(parts) == 1 else events.composed(parts)


class FactorizationCounter(_MatrixCounter):
    """Running sums of a stream of arrays under the square-root factorization (module doc).

    The interface of :class:`~privrl.privacy.tree.BinaryCounter` (``insert``, ``release``,
    ``noise_sum``, ``event``). ``shape``, ``n_items``, ``sigma`` (one float or one per counter of a
    stack along the first axis), ``symmetric``, ``shift`` as there; ``source`` the fit's
    :class:`~privrl.privacy.noise.NoiseSource` (``z`` is drawn from it at the first insert);
    ``sensitivity`` the ℓ2-sensitivity Δ of one item (per counter of the stack or one float) — the
    event is one Gaussian release of multiplier ``σ/(s_n Δ)``. Memory ``n_items × prod(shape)``:
    :class:`BLTCounter` is the constant-memory counter.
    """

    def __init__(self, shape: tuple[int, ...], **kw: Any) -> None:
        super().__init__(shape, **kw)
        self.factor = sqrt_sensitivity_factor(self.n_items)
        self._noise: np.ndarray | None = None if self.noisy else np.zeros((0, *self.shape))

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

    def _advance(self) -> None:
        if self._noise is None:
            self.noise_sequence()

    def noise_sum(self) -> np.ndarray:
        """The noise of the current release, ``n_t`` (zeros before the first insert)."""
        if self.t == 0 or not self.noisy:
            return np.zeros(self.shape)
        return self.noise_sequence()[self.t - 1]


class BLTCounter(_MatrixCounter):
    """Running sums of a stream of arrays under the BLT factorization (module doc), in memory
    independent of ``n_items``: the exact sum, ``d`` buffers and the noise total.

    The interface and parameters of :class:`FactorizationCounter`; ``blt`` the factorization
    (default :func:`blt_factorization` ``(n_items)``). Insert ``t`` draws ``z_t`` from ``source`` as a
    binary-tree node does (:class:`~privrl.privacy.tree.NodeNoise`: ``σ_h``-scaled standard normals,
    symmetric for matrix streams), so the counter consumes the noise stream exactly like a tree
    counter. The event is one Gaussian release of multiplier ``σ/(s_C Δ)``.
    """

    owner = "BLTCounter"

    def __init__(self, shape: tuple[int, ...], *, blt: BLT | None = None, **kw: Any) -> None:
        super().__init__(shape, **kw)
        self.blt = blt_factorization(self.n_items) if blt is None else blt
        self.factor = math.sqrt(self.blt.column_norm2(self.n_items)) if self.n_items else 1.0
        # noisy: __init__ checked that there is a source
        self._draw = NodeNoise(self.source, self.sigma) if self.source is not None and self.noisy else None
        self._state = np.zeros((self.blt.buffers, *self.shape) if self.noisy else (0,))
        self._total = np.zeros(self.shape)

    def _advance(self) -> None:
        if self._draw is not None:
            self._total = blt_advance(self._draw(self.shape, self.symmetric), self._state, self._total,
                                      self.blt.theta, self.blt.omega)

    def noise_sum(self) -> np.ndarray:
        """The noise of the current release, ``n_t = Σ_{j≤t} b_{t−j} z_j`` (zeros before the first insert)."""
        return self._total
