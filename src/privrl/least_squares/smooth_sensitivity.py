"""Smooth upper bounds on local sensitivity for DP-LSW and DP-LSL (Balle, Gomrokchi & Precup 2016).

Both algorithms release ``θ_X + N(0, σ_X² I_d)`` with a data-dependent σ_X. Lemma 1 (main text,
attributed to Nissim, Raskhodnikova & Smith) says this is (ε, δ)-DP when, for every pair of
neighbouring datasets X ≃ X',

(a) σ_X ≥ α ‖θ_X − θ_X'‖₂ and (b) |ln σ_X² − ln σ_X'²| ≤ β.

Both algorithms bound the local sensitivity by ``C √φ(⟨X⟩)`` where ``⟨X⟩`` is the *signature*
(first-visit counts |X_s|, which move by at most 1 per state when one trajectory is replaced) and
use the smallest β-smooth upper bound of φ (Lemma 4, eq. 16)::

    ψ(v) = sup_{k ≥ 0} e^{-kβ} φ_k(v),   φ_k(v) = max_{‖v' − v‖∞ ≤ k} φ(v').

σ_X = α C √ψ(⟨X⟩) then satisfies (a) because ψ ≥ φ and (b) because ψ(v) ≤ e^β ψ(v') for
signature neighbours.

This module holds the two printed constant sets (Lemma 1 and Appendix A's Lemma 14), the signature
functions φ^w (eq. 15 / Lemma 5) and φ^λ (eq. 12 / Lemma 9, with the paper's ``max`` typo corrected
to ``min``), and fast exact evaluations of ψ^w and ψ^λ. The certified calibrations of (α, β) are in
:mod:`privrl.least_squares.calibration`.

Counts are private: error messages about them never show their values.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privrl._validation import check_array, check_option, check_scalar, param_error

__all__ = [
    "SMOOTHINGS",
    "smoothing_constants",
    "phi_w",
    "phi_w_k",
    "psi_w",
    "phi_lambda",
    "phi_lambda_k",
    "psi_lambda",
]

#: The printed smoothing constants: ``"main_text"``: Lemma 1 / Algorithms 1–2 (default).
#: ``"appendix_a"``: Lemma 14 (proved in the paper's Appendix A, worse constants, needs ε ≤ 5).
SMOOTHINGS = ("main_text", "appendix_a")

_CHUNK = 1 << 20  # elements per vectorised block when scanning k


def smoothing_constants(epsilon: float, delta: float, d: int,
                        smoothing: str = "main_text") -> tuple[float, float]:
    """Noise multiplier α and smoothness β of the smoothed Gaussian mechanism, as printed.

    * ``"main_text"`` (Lemma 1): α = 5√(2 ln(2/δ))/ε, β = ε / (4 (d + ln(2/δ))).
    * ``"appendix_a"`` (Lemma 14): α = 15√(2 ln(4/δ))/ε,
      β = (2 ln 2) ε / (5 (√d + √(2 ln(4/δ)))²) — a *division*, not a product; requires ε ≤ 5.

    ``d`` is the dimension of the released vector (number of features).
    """
    owner = "smoothing_constants"
    check_option(smoothing, "smoothing", SMOOTHINGS, owner=owner)
    high = 5.0 if smoothing == "appendix_a" else None
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, high=high, closed="right"
                           if high is not None else "neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither")
    d = check_scalar(d, "d", owner=owner, kind=int, low=1)
    if smoothing == "main_text":
        log_term = math.log(2.0 / delta)
        return 5.0 * math.sqrt(2.0 * log_term) / epsilon, epsilon / (4.0 * (d + log_term))
    c_delta = math.sqrt(2.0 * math.log(4.0 / delta))
    alpha = 15.0 * c_delta / epsilon
    beta = (2.0 * math.log(2.0)) * epsilon / (5.0 * (math.sqrt(d) + c_delta) ** 2)
    return alpha, beta


# --------------------------------------------------------------------------- validation helpers
def _counts(counts: object, owner: str) -> np.ndarray:
    arr = check_array(counts, "counts", owner=owner, ndim=1, dtype=np.float64, low=0.0)
    if arr.size == 0:
        raise param_error("counts", owner, "a non-empty 1-D array of visit counts", arr.shape)
    if not np.all(arr == np.floor(arr)):
        raise param_error("counts", owner, "integer visit counts", "non-integer counts")
    return arr.astype(np.int64)


def _weights(weights: object, n: int, name: str, owner: str) -> np.ndarray:
    w = check_array(weights, name, owner=owner, shape=(n,), low=0.0)
    return w


def _beta(beta: float, owner: str) -> float:
    return check_scalar(beta, "beta", owner=owner, low=0.0, closed="neither")


# --------------------------------------------------------------------------- the scan over k
def _smoothed_max(phi_of: Callable[[np.ndarray], np.ndarray], phi0: float, k_last: int, beta: float,
                  chunk: int) -> float:
    """``max(phi0, max_{1 ≤ k ≤ k_last} e^{-kβ} φ(k))`` for a φ non-decreasing in k, ``phi_of``
    evaluating it on a float array of k (at most ``chunk`` at a time), exactly the maximum of the
    full scan.

    The k are cut into intervals ``[a, b]`` of about √k_last; φ is evaluated at every right end
    first, and an interval is scanned only where its bound ``e^{-aβ} φ(b)`` — no smaller than every
    ``e^{-kβ} φ(k)`` inside it, in floating point too (φ, exp and the product are monotone) — can
    still beat the best value found (with a relative margin of 1e-9). ψ usually peaks near k = 0, so
    a few intervals are scanned instead of all ``k_last`` values.
    """
    best = phi0
    if k_last < 1:
        return best
    width = max(1, math.isqrt(k_last))
    lo = np.arange(1, k_last + 1, width, dtype=np.float64)
    hi = np.minimum(lo + (width - 1), float(k_last))
    top = np.concatenate([phi_of(hi[i:i + chunk]) for i in range(0, hi.size, chunk)])
    best = max(best, float(np.max(np.exp(-beta * hi) * top)))   # values at the right ends: candidates
    bound = np.exp(-beta * lo) * top
    for j in np.argsort(-bound, kind="stable"):
        if bound[j] < best * (1.0 - 1e-9):
            break                                                  # sorted: no later interval can beat it
        for start in range(int(lo[j]), int(hi[j]) + 1, chunk):
            k = np.arange(start, min(start + chunk, int(hi[j]) + 1), dtype=np.float64)
            best = max(best, float(np.max(np.exp(-beta * k) * phi_of(k))))
    return best


# --------------------------------------------------------------------------- DP-LSW (eqs. 9, 15)
def phi_w(v: np.ndarray, w: np.ndarray) -> float:
    """φ^w(v) = Σ_s w_s / max(v_s, 1)² (Corollary 3, eq. 15)."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.sum(np.asarray(w, dtype=np.float64) / np.maximum(v, 1.0) ** 2))


def phi_w_k(v: np.ndarray, w: np.ndarray, k: int) -> float:
    """φ^w_k(v) = Σ_s w_s / max(v_s − k, 1)² (Lemma 5): φ^w maximised over the ℓ∞ ball of radius k."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.sum(np.asarray(w, dtype=np.float64) / np.maximum(v - k, 1.0) ** 2))


def psi_w(counts: np.ndarray, w: np.ndarray, beta: float) -> float:
    """ψ^w_X = max_{0 ≤ k ≤ K_X} e^{-kβ} φ^w_X(k) (Algorithm 1, line 3, eq. 9), computed exactly.

    The scan stops early where it provably cannot increase: φ^w_X(k) ≤ Σ_s w_s for all k, so no
    k with e^{-kβ} Σ_s w_s ≤ φ^w_X(0) can beat k = 0; and φ^w_X(k) is constant for k ≥ K_X − 1.
    With no visits at all (K_X = 0) the value is Σ_s w_s.
    """
    owner = "psi_w"
    c = _counts(counts, owner)
    w = _weights(w, c.size, "w", owner)
    beta = _beta(beta, owner)
    keep = w > 0
    c, w = c[keep], w[keep]
    if w.size == 0:
        return 0.0
    phi0 = float(np.sum(w / np.maximum(c, 1.0) ** 2))
    big = c > 1  # states whose term still changes with k
    if not np.any(big):
        return phi0
    k_last = int(c.max()) - 1
    total = float(w.sum())
    k_cap = math.floor(math.log(total / phi0) / beta) + 1 if total > phi0 else 0
    k_last = min(k_last, k_cap)
    const = float(w[~big].sum())
    cb, wb = c[big].astype(np.float64), w[big]

    def phi_of(k: np.ndarray) -> np.ndarray:
        return const + (wb / np.maximum(cb[None, :] - k[:, None], 1.0) ** 2).sum(axis=1)

    return _smoothed_max(phi_of, phi0, k_last, beta, max(1, _CHUNK // cb.size))


# --------------------------------------------------------------------------- DP-LSL (eq. 12)
def phi_lambda(v: np.ndarray, rho: np.ndarray, c_lambda: float, m: int) -> float:
    """φ^λ(v) = (c_λ √(Σ_s ρ_s min(v_s, m)) + ‖ρ‖₂)² (Corollary 8 with the ``min`` typo fix, A3)."""
    return phi_lambda_k(v, rho, c_lambda, m, 0)


def phi_lambda_k(v: np.ndarray, rho: np.ndarray, c_lambda: float, m: int, k: int) -> float:
    """φ^λ_k(v) = (c_λ √(Σ_s ρ_s min(v_s + k, m)) + ‖ρ‖₂)² (Lemma 9, corrected)."""
    rho = np.asarray(rho, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    s = float(np.sum(rho * np.minimum(v + k, float(m))))
    return (c_lambda * math.sqrt(s) + float(np.linalg.norm(rho))) ** 2


def psi_lambda(counts: np.ndarray, rho: np.ndarray, c_lambda: float, m: int, beta: float) -> float:
    """ψ^λ_X = max_{0 ≤ k ≤ m} e^{-kβ} φ^λ_X(k) (Algorithm 2, line 3, eq. 12), computed exactly.

    S(k) = Σ_s ρ_s min(|X_s| + k, m) is piecewise linear in k; it is evaluated for a whole block
    of k at once from sorted counts and cumulative sums, O(m log N). k stops at
    m − min_s |X_s| (after which φ^λ_X is constant) or earlier where e^{-kβ} times the global
    maximum (c_λ √(m Σρ) + ‖ρ‖₂)² cannot beat the best value found at k = 0.
    """
    owner = "psi_lambda"
    c = _counts(counts, owner)
    rho = _weights(rho, c.size, "rho", owner)
    c_lambda = check_scalar(c_lambda, "c_lambda", owner=owner, low=0.0)
    m = check_scalar(m, "m", owner=owner, kind=int, low=1)
    beta = _beta(beta, owner)
    if c.max() > m:
        raise param_error("counts", owner, f"counts at most m = {m}", "a larger count")
    rho_norm = float(np.linalg.norm(rho))
    order = np.argsort(c, kind="stable")
    cs = c[order].astype(np.float64)
    rs = rho[order]
    cum_rc = np.concatenate(([0.0], np.cumsum(rs * cs)))
    cum_r = np.concatenate(([0.0], np.cumsum(rs)))
    r_total = cum_r[-1]

    def phi_of(k: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(cs, m - k, side="left")  # states [idx:] are saturated at m
        s = cum_rc[idx] + k * cum_r[idx] + m * (r_total - cum_r[idx])
        return (c_lambda * np.sqrt(s) + rho_norm) ** 2

    phi0 = (c_lambda * math.sqrt(float(np.sum(rho * np.minimum(c, m)))) + rho_norm) ** 2  # direct: ψ ≥ φ exactly
    k_last = m - int(cs[0])
    phi_top = (c_lambda * math.sqrt(m * r_total) + rho_norm) ** 2
    if phi0 <= 0:
        return 0.0
    k_cap = math.floor(math.log(phi_top / phi0) / beta) + 1 if phi_top > phi0 else 0
    k_last = min(k_last, k_cap)
    return _smoothed_max(phi_of, phi0, k_last, beta, _CHUNK)
