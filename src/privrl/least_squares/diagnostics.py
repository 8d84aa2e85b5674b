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
* **No better than the zero estimate.** The zero estimate has squared error mean_s V_s², the
  release about mean_s s_s² (noise variance s_s² at state s). With V̂_s = V_s + e_s,
  E V̂_s² = V_s² + s_s², so max(V̂_s² − s_s², 0) estimates V_s², and the release is no better than
  zero (in expectation) when mean_s s_s² ≥ mean_s max(V̂_s² − s_s², 0)
  (:func:`noise_exceeds_signal`). The Monte Carlo group values pass their public noise variances
  (from the public noise scale and the released counts); their values are clipped to [0, F_max],
  so their error is taken as the least a clipped value with that noise std can have, whatever its
  true value (:func:`clipped_error_floor`; s²/2 for small s, F_max²/4 for large s). For DP-LSW / DP-LSL, whose σ_X is
  data-dependent, the noise variance is read off the release: the true values lie in [0, F_max],
  so E(V_s + e_s)₋² ≤ s²/2 (and likewise above F_max), and 2·(the mean squared distance of the
  released values outside [0, F_max]) is a lower estimate of the noise variance
  (:func:`outside_noise_variance`). Values near 0 relative to the noise — FrozenLake's, most of
  which are below 0.1 — are where this bites before the F_max/2 check does.
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

__all__ = ["NOISE_DOMINATED_RMS", "outside_rms", "directions_kept", "KEPT_FRACTION", "noise_exceeds_signal",
           "outside_noise_variance", "clipped_error_floor", "clipped_error"]


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


def outside_noise_variance(values: np.ndarray, f_max: float) -> float:
    """A lower estimate of the noise variance of released values whose true values lie in
    [0, F_max]: twice their mean squared distance to [0, F_max] (module docstring)."""
    return 2.0 * (outside_rms(values, f_max) * f_max) ** 2


def noise_exceeds_signal(values: np.ndarray, noise_var: np.ndarray | float,
                         error: np.ndarray | float | None = None) -> bool:
    """Whether a released value estimate is no better than the zero estimate in expectation: its
    mean squared error ``error`` (per state; default the noise variance) is at least the mean of
    max(V̂_s² − s_s², 0), the estimate of mean_s V_s² — the zero estimate's squared error (module
    docstring). ``noise_var`` s_s² per state or one number."""
    values = np.asarray(values, dtype=float)
    noise = np.broadcast_to(np.asarray(noise_var, dtype=float), values.shape)
    err = noise if error is None else np.broadcast_to(np.asarray(error, dtype=float), values.shape)
    return bool(values.size and np.mean(err) >= np.mean(np.maximum(values ** 2 - noise, 0.0)))


def _clipped_mse(s: np.ndarray, v: np.ndarray, f_max: float) -> np.ndarray:
    """E(clip(V + e, 0, F_max) − V)², e ~ N(0, s²), for s > 0 and V ∈ [0, F_max] (broadcast): with
    a = −V/s, b = (F_max − V)/s and z standard normal it is s²·E clip(z, a, b)² =
    s²[Φ(b) − Φ(a) − bφ(b) + aφ(a) + a²Φ(a) + b²(1 − Φ(b))]."""
    from scipy.special import ndtr  # Φ, vectorised (here, not at the top: SciPy loads on first use)

    a, b = np.maximum(-v / s, -40.0), np.minimum((f_max - v) / s, 40.0)   # beyond ±40 the tails vanish
    cdf_a, cdf_b = ndtr(a), ndtr(b)
    pdf_a, pdf_b = (np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) for x in (a, b))
    return s * s * (cdf_b - cdf_a - b * pdf_b + a * pdf_a + a * a * cdf_a + b * b * (1.0 - cdf_b))


def _positive(std: np.ndarray, f_max: float) -> np.ndarray:
    return np.clip(np.asarray(std, dtype=float), 1e-12 * f_max, 1e6 * f_max)


def clipped_error_floor(std: np.ndarray, f_max: float, grid: int = 41) -> np.ndarray:
    """min over V ∈ [0, F_max] of E(clip(V + e, 0, F_max) − V)², e ~ N(0, s²), per std s: the least
    squared error a value clipped to [0, F_max] with noise std s has, whatever its true value
    (:func:`_clipped_mse` minimised over a grid of V: s²/2 for s ≪ F_max, about 0.46·s² at
    s = F_max/2, F_max²/4 as s → ∞)."""
    std = np.asarray(std, dtype=float)
    s = _positive(std, f_max).reshape(-1, 1)
    v = np.linspace(0.0, f_max, grid).reshape(1, -1)
    return np.where(std > 0, _clipped_mse(s, v, f_max).min(axis=1).reshape(std.shape), 0.0)


def clipped_error(std: np.ndarray, values: np.ndarray, f_max: float) -> np.ndarray:
    """E(clip(V + e, 0, F_max) − V)², e ~ N(0, s²), per std s and value V (clipped to [0, F_max]):
    the expected squared error a released value clipped to [0, F_max] with noise std s has when its
    noiseless value is V — with the released value for V, an estimate of the error the noise adds
    (s² in the interior, about s²/2 at an edge, at most F_max²/4 + … as s → ∞)."""
    std = np.asarray(std, dtype=float)
    v = np.clip(np.broadcast_to(np.asarray(values, dtype=float), std.shape), 0.0, f_max)
    return np.where(std > 0, _clipped_mse(_positive(std, f_max), v, f_max), 0.0)


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
