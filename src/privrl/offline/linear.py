"""PEVI, VAPVI and DP-VAPVI (Qiao & Wang 2023, Section 4, Algorithm 2) — linear MDPs.

One backward-induction kernel, :func:`linear_pessimistic_vi`, serves all three:

* PEVI (Jin et al. 2021): unweighted ridge regression, penalty ``β ||φ||_{Λ^{-1}}``;
* VAPVI (Yin et al. 2022): first stage (lines 4–8) estimates ``Var_h Ṽ_{h+1}``, second stage
  (lines 9–10) is variance-weighted ridge regression, penalty ``C√d ||φ||_{Λ^{-1}} + D/K``;
* DP-VAPVI: VAPVI where the five statistics of every step are released by Gaussian mechanisms
  through the fit's :class:`~privrl.privacy.release.Releaser` with the scales of a
  :class:`~privrl.offline.calibration.LinearNoise` plan (:func:`release_statistic`).

The kernel works on sufficient statistics (:class:`~privrl.offline._common.Statistics`: per-step
transition counts and reward sums): with finitely many (s, a, s') every sum over trajectories is
``Σ_k φ(s_k,a_k) f(s'_k, r_k) = Φᵀ (N_h f)``, so a fit costs the same for any number of
trajectories. The features are a public table ``φ(s, a)`` of shape ``(S, A, d)`` (the greedy step
and ``Ṽ_{h+1}(s')`` need ``φ(s', a)`` for every action).

Privacy unit: one trajectory, replace-one neighbours, dataset size public. Assumptions that privacy
relies on, all validated: ``||φ(s,a)||_2 <= B`` (``feature_norm_bound``), rewards in [0, 1]; the
kernel's own clipping gives ``Ṽ_{h+1} <= H − h − 1`` and ``σ̃² >= 1``. Sensitivities and the noise of
each calibration: :mod:`privrl.offline.calibration` (sound: ``2BH², 2BH, 2BH`` for the vectors and
``√2·B²`` (Frobenius) for the two Gram matrices, ρ0 = ρ/(5H) each; tight: per-step sensitivities
and the exact μ split).

Matrix noise: the paper's ``(Z + Zᵀ)/√2`` with ``Z_ij ~ N(0, s²)`` is exactly the Gaussian mechanism
on the vector ``T(M) = (M_ii, √2 M_ij)_{i<j}``, whose ℓ2 norm is ``||M||_F``, with σ = √2 s; the
releaser adds symmetric noise to ``T(M)`` and ``T`` is undone (post-processing). The public shift
``(E/2) I`` keeps each noisy matrix PSD w.p. ≥ 1 − δ/(5H) (spec §3.1); a matrix still not PD has
its eigenvalues clipped at λ (post-processing, counted in ``pd_guard_count_``; never resampled).

Utility knobs (privacy never depends on them): ``C, D, lam`` (VAPVI/DP-VAPVI), ``beta, lam`` (PEVI),
presets ``constants="theory"|"practical"`` (:data:`LINEAR_PRESETS`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from privrl.errors import InvalidDataError
from privrl.offline._common import (
    Statistics,
    greedy,
    public_features,
)
from privrl.offline.calibration import MATRIX_STREAMS, LinearNoise

__all__ = ["LinearFit", "release_statistic", "linear_pessimistic_vi", "theory_L",
           "theory_D", "check_features", "LINEAR_PRESETS"]

_SQRT2 = math.sqrt(2.0)

#: Utility presets. ``theory``: the paper gives no values for C, λ, D (D = Õ(H²L/κ + …) is vacuous
#: when κ = 0) nor PEVI's β; these are the reproduction defaults of the spec (§5.3): C = 0.1, D = 0,
#: λ = 1, β = 0.1. ``practical``: chosen once on held-out instances of the Appendix F MDP (instance
#: seeds 2–5, never the figures' and benchmark's seeds 0 and 1; ``benchmarks/tune_offline.py``,
#: ``docs/offline.md``): DP-VAPVI's ridge grows with the public PSD shift, λ = B² + 0.5·E (E of the
#: noisiest Gram release), so it equals VAPVI's λ = B² without noise; the other knobs keep their
#: values (the non-private baselines were already tuned for this MDP by the spec). ``lam`` is in
#: units of B² (the declared feature bound), a public quantity.
LINEAR_PRESETS: dict[str, dict[str, float]] = {
    "theory": {"C": 0.1, "D": 0.0, "lam": 1.0, "beta": 0.1, "lam_shift": 0.0},
    "practical": {"C": 0.1, "D": 0.0, "lam": 1.0, "beta": 0.1, "lam_shift": 0.5},
}


# --------------------------------------------------------------------------- releases
def release_statistic(rel: Any, noise: LinearNoise, stream: int, h: int, value: np.ndarray) -> np.ndarray:
    """Release statistic ``LINEAR_STREAMS[stream]`` of step ``h`` through ``rel`` (a
    :class:`~privrl.privacy.release.Releaser`, which records its event) with ``noise``'s scale:
    vectors ``value + N(0, σ² I)``; matrices ``M + (E/2) I + (Z + Zᵀ)/√2`` as the Gaussian mechanism
    on ``T(M)`` (module docstring). A pure function of the statistic and the releaser (for audits)."""
    std, sens = float(noise.std[stream, h]), float(noise.sensitivity[stream, h])
    if stream not in MATRIX_STREAMS:
        return rel.gaussian(value, sensitivity=sens, std=std)
    diag = np.arange(value.shape[-1])          # a matrix, or a stack of them (audits)
    scaled = value * _SQRT2
    scaled[..., diag, diag] = value[..., diag, diag]
    noisy = rel.gaussian(scaled, sensitivity=sens, std=std, symmetric=True)
    out = noisy / _SQRT2
    out[..., diag, diag] = noisy[..., diag, diag] + noise.shift[MATRIX_STREAMS.index(stream), h]
    return out


def theory_L(horizon: int, d: int, rho: float, delta_fail: float) -> float:
    """``L = 2H sqrt((d/ρ0) log(10Hd/δ))`` (Lemma D.2): bound on ``||φ2||, ||φ3||`` (``||φ1|| <= HL``)."""
    rho0 = rho / (5.0 * horizon)
    return 2.0 * horizon * math.sqrt(d / rho0 * math.log(10.0 * horizon * d / delta_fail))


def theory_D(horizon: int, d: int, kappa: float, L: float, E: float) -> float:
    """Heuristic ``D = H²L/κ + H⁴E√d/κ^{3/2} + H³√d`` (Theorem 4.1) with every hidden constant 1."""
    H = horizon
    return H * H * L / kappa + H**4 * E * math.sqrt(d) / kappa**1.5 + H**3 * math.sqrt(d)


# --------------------------------------------------------------------------- kernel
class LinearFit(NamedTuple):
    policy: np.ndarray      # (H, S) greedy actions
    values: np.ndarray      # (H+1, S) pessimistic Ṽ
    q_values: np.ndarray    # (H, S, A) truncated Q̂
    weights: np.ndarray     # (H, d) w̃_h
    variances: np.ndarray   # (H, S, A) σ̃²_h (ones for PEVI)
    pd_guard_count: int


def _pd_inverse_parts(M: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """Eigen-decomposition of the symmetrised M with eigenvalues clipped at ``floor`` (PD guard)."""
    w, U = np.linalg.eigh((M + M.T) / 2.0)
    fired = bool(w.min() < floor * (1.0 - 1e-9))
    return np.maximum(w, floor), U, fired


def _solve(w: np.ndarray, U: np.ndarray, b: np.ndarray) -> np.ndarray:
    return U @ ((U.T @ b) / w)


def linear_pessimistic_vi(features: np.ndarray, stats: Statistics, stats_bar: Statistics | None, *, lam: float,
                          penalty_coef: float, additive: float, noise: LinearNoise | None = None,
                          rel: Any = None) -> LinearFit:
    """Algorithm 2 lines 3–15 (variance-aware when ``stats_bar`` is given, PEVI otherwise).

    ``features`` ``(S, A, d)``; ``stats``/``stats_bar`` the :class:`Statistics` of D and D̄.
    ``noise`` (None for the non-private algorithms) gives the scale of each of the five releases of
    each step, drawn through ``rel``; every other quantity is computed from released values. A
    first stage whose three statistics the plan does not release (tight calibration at the last
    step, where Ṽ_H ≡ 0 makes σ̃² ≡ 1 exactly) is skipped. Penalty:
    ``penalty_coef * sqrt(φᵀ Λ̃⁻¹ φ) + additive``.
    """
    S, A, d = features.shape
    H = stats.horizon
    SA = S * A
    flat = features.reshape(SA, d)
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    W = np.zeros((H, d))
    sig2 = np.ones((H, S, A))
    guards = 0
    eye = lam * np.eye(d)

    def release(stream: int, h: int, value: np.ndarray) -> np.ndarray:
        return value if noise is None else release_statistic(rel, noise, stream, h, value)

    for h in range(H - 1, -1, -1):
        cap = float(H - h)
        v_next = V[h + 1]
        first = stats_bar is not None and (noise is None or any(noise.released(k, h) for k in (0, 1, 2)))
        if first:                     # first stage, lines 4–8
            N_bar = stats_bar.step(h)  # type: ignore[union-attr]
            gram_bar = flat.T @ (flat * stats_bar.n_sa[h].reshape(SA)[:, None])  # type: ignore[union-attr]
            ew, EU, fired = _pd_inverse_parts(release(0, h, gram_bar) + eye, lam)
            guards += fired
            beta = _solve(ew, EU, release(1, h, flat.T @ (N_bar @ (v_next * v_next))))
            theta = _solve(ew, EU, release(2, h, flat.T @ (N_bar @ v_next)))
            var = np.clip(features @ beta, 0.0, cap * cap) - np.clip(features @ theta, 0.0, cap) ** 2
            sig2[h] = np.maximum(1.0, var)
        inv_s2 = 1.0 / sig2[h].ravel()
        N = stats.step(h)
        target = stats.reward_sums[h].reshape(SA) + N @ v_next
        gram = flat.T @ (flat * (stats.n_sa[h].reshape(SA) * inv_s2)[:, None])
        lw, LU, fired = _pd_inverse_parts(release(3, h, gram) + eye, lam)
        guards += fired
        W[h] = _solve(lw, LU, release(4, h, flat.T @ (target * inv_s2)))
        quad = (((flat @ LU) ** 2) / lw).sum(axis=1).reshape(S, A)
        gamma = penalty_coef * np.sqrt(quad) + additive
        Q[h] = np.clip(features @ W[h] - gamma, 0.0, cap)
        _, V[h] = greedy(Q[h])
    return LinearFit(np.argmax(Q, axis=-1), V, Q, W, sig2, guards)


# --------------------------------------------------------------------------- estimators
def check_features(features: object, owner: str, bound: float) -> np.ndarray:
    """A public ``(S, A, d)`` feature table (an array, a LinearMDP or a TabularMDP — one-hot) with
    ``max ||φ(s,a)||_2 <= bound`` (raises otherwise)."""
    phi = public_features(features, owner)
    norm = float(np.sqrt((phi**2).sum(axis=-1)).max()) if phi.size else 0.0
    if norm > bound * (1.0 + 1e-12):
        raise InvalidDataError(
            f"{owner}: the feature norms must be at most feature_norm_bound={bound!r} (privacy relies on "
            f"it). Got max ||phi(s,a)||_2 = {norm!r} instead; rescale the features by a public constant.")
    return phi
