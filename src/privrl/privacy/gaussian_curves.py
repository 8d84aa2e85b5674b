"""Exact privacy curves (Balle & Wang 2018, Thm. 8) behind the ledger of
:mod:`privrl.privacy.accounting`: the Gaussian mechanism's hockey-stick divergence δ(ε), its
inverse ε(δ), and δ(ε) of a Gaussian loss plus a discrete one (the worst-case losses of (ε, δ)
events, :func:`privrl.privacy.accounting._approx_losses`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from privrl._search import bisect_boundary

__all__ = ["gaussian_delta", "gaussian_epsilon"]


def _gaussian_hockey_stick(sigma: float, x: np.ndarray) -> np.ndarray:
    """E[(1 − e^{x − L})₊] for the Gaussian privacy loss L ~ N(μ²/2, μ²), μ = 1/σ, at every real x
    (Balle & Wang 2018, Thm. 8): Φ(μ/2 − x/μ) − e^x Φ(−μ/2 − x/μ), computed in log space."""
    t = x * sigma + 1.0 / (2.0 * sigma)
    from scipy import special

    log_a = special.log_ndtr(1.0 / sigma - t)
    log_b = x + special.log_ndtr(-t)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.exp(log_a) * -np.expm1(np.minimum(log_b - log_a, 0.0))
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def gaussian_delta(sigma: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with multiplier σ = std/sensitivity
    (Balle & Wang 2018, Thm. 8): δ = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ)."""
    if math.isinf(epsilon):
        return 0.0
    return float(_gaussian_hockey_stick(sigma, np.asarray(float(epsilon))))


def _delta_fn(sigma: float | None, parts: tuple[np.ndarray, np.ndarray, float]) -> Callable[[float], float]:
    """δ(ε) = p_∞ + Σ_j p_j · h(ε − l_j) for the loss L = L_G + L_A, L_A with atoms (l_j, p_j)
    and mass p_∞ at +∞ and L_G the Gaussian loss of multiplier σ (h = the exact Gaussian hockey
    stick, Balle & Wang 2018, Thm. 8) or none (h(x) = (1 − e^x)₊)."""
    losses, probs, inf_mass = parts

    def delta(epsilon: float) -> float:
        x = epsilon - losses
        h = _gaussian_hockey_stick(sigma, x) if sigma is not None else -np.expm1(np.minimum(x, 0.0))
        return min(1.0, inf_mass + float(np.dot(probs, h)))

    return delta


def _epsilon_from_delta_fn(delta_fn: Callable[[float], float], delta: float) -> float:
    """The smallest ε ≥ 0 (to 1e-9) with ``delta_fn(ε) ≤ delta``; ``delta_fn`` is non-increasing."""
    if delta_fn(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while delta_fn(hi) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e15:  # pragma: no cover - far beyond any meaningful ε; report "no guarantee"
            return math.inf
    return bisect_boundary(lambda e: delta_fn(e) <= delta, hi, lo, rel_tol=1e-9, abs_tol=1e-9)


def gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """The exact ε(δ) of the Gaussian mechanism with multiplier σ/Δ (Balle & Wang 2018, Thm. 8),
    as a certified upper bound: bisection on the exact δ(ε) keeping the feasible end, to a relative
    tolerance of 1e-10 (dp-accounting's ``get_epsilon_gaussian`` may land just below the root)."""
    if noise_multiplier == 0 or delta == 0:
        return math.inf
    if math.isinf(noise_multiplier) or delta >= 1 or gaussian_delta(noise_multiplier, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0 / noise_multiplier + 1.0
    while gaussian_delta(noise_multiplier, hi) > delta:
        lo, hi = hi, 2.0 * hi
    return bisect_boundary(lambda e: gaussian_delta(noise_multiplier, e) <= delta, hi, lo, rel_tol=1e-10)
