"""Utility diagnostics of a released value estimate, computed from public quantities and the
released output only (never from σ_X, the counts or the returns).

Two ways a private value estimate can be useless without saying so:

* **Noise-dominated.** The trivial estimate F_max/2 (for every state) has error at most F_max/2
  at every state, whatever the true values in [0, F_max]. A release whose noise has standard
  deviation s ≥ F_max/2 at a state is no better there: E(V̂_s − V_s)² ≥ s² ≥ (V_s − F_max/2)².
  When s is public (the Monte Carlo estimators) the check is direct. When it is data-dependent
  (DP-LSW / DP-LSL's σ_X), it is read off the release: for V_s ∈ [0, F_max] and
  V̂_s = V_s + e, e ~ N(0, s²), the expected squared distance of V̂_s to [0, F_max] is
  g(F_max − V_s) + g(V_s) with g(a) = E(e − a)₊², convex in V_s, so at most its value at an edge,
  U(s) = s²(1/2 + E(z − F_max/s)₊²) (z standard normal), which increases with s. The mean
  squared distance of the released values outside [0, F_max] exceeding U(F_max/2) =
  (0.3556 F_max)² therefore means (in expectation over the states) a noise std of at least
  F_max/2: :data:`NOISE_DOMINATED_RMS`.
* **Shrunk to zero by regularisation** (DP-LSL's ridge). θ^λ = (ΦᵀΓ_XΦ + cI)^{-1}ΦᵀΓ_X F_X,
  c = λ/(2m), keeps a fraction e/(e + c) of the least-squares fit along an eigen-direction of
  ΦᵀΓ_XΦ with eigenvalue e: at least 10% iff e ≥ c/9. The eigenvalues are at most
  λ_min = ‖Φ‖²‖ρ‖∞ and sum to trace(ΦᵀΓ_XΦ) = Σ_s ρ_s |X_s|/m ‖φ_s‖² ≤ ‖ρ‖∞ max_s‖φ_s‖² L, with L a
  public bound on the distinct states one trajectory visits (its length bound, or the number of
  states). So at most ⌊9 ‖ρ‖∞ max_s‖φ_s‖² L / c⌋ directions — none when c > 9 λ_min — keep 10%
  of their size (:func:`directions_kept`), whatever the data.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NOISE_DOMINATED_RMS", "outside_rms", "directions_kept", "KEPT_FRACTION"]


def _edge_excursion(a: float) -> float:
    """E(z − a)₊² for z standard normal: (1 + a²)Φ̄(a) − aφ(a)."""
    tail = 0.5 * math.erfc(a / math.sqrt(2.0))
    return (1.0 + a * a) * tail - a * math.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)


#: RMS distance of the released values outside [0, F_max], in units of F_max, above which the
#: noise std is (in expectation) at least F_max/2: √U(F_max/2)/F_max = ½√(½ + E(z − 2)₊²) ≈ 0.3556
NOISE_DOMINATED_RMS = 0.5 * math.sqrt(0.5 + _edge_excursion(2.0))
#: a direction "keeps" the fit when the ridge leaves it at least this fraction of its size
KEPT_FRACTION = 0.1


def outside_rms(values: np.ndarray, f_max: float) -> float:
    """RMS over the states of the distance of the released values to [0, F_max], in units of F_max."""
    values = np.asarray(values, dtype=float)
    return float(np.sqrt(np.mean((values - np.clip(values, 0.0, f_max)) ** 2)) / f_max)


def directions_kept(features: np.ndarray, relevance: np.ndarray, lam: float, m: int, visits: int, *,
                    phi_norm: float | None = None) -> int:
    """A public upper bound on the number of directions of the ridge fit that keep at least
    :data:`KEPT_FRACTION` of their least-squares size (module docstring), for m trajectories each
    visiting at most ``visits`` distinct states (``phi_norm`` = ‖Φ‖₂ when already known)."""
    features = np.asarray(features, dtype=float)
    c = lam / (2.0 * m)
    ratio = (1.0 - KEPT_FRACTION) / KEPT_FRACTION     # e/(e + c) ≥ 0.1 ⇔ e ≥ c/9
    d = features.shape[1]
    rho_max = float(np.max(relevance))
    norm = float(np.linalg.norm(features, 2)) if phi_norm is None else float(phi_norm)
    if norm ** 2 * rho_max * ratio < c:
        return 0
    trace = rho_max * float(np.max(np.sum(features ** 2, axis=1))) * visits
    return int(min(d, math.floor(ratio * trace / c)))
