"""Closed-form constants of Zhou (2022): sensitivities, noise scales, regularity constants (Assumption 2),
confidence radii (Lemma 3.1), step size and regret bounds. Pure functions of public parameters.

Notation follows the spec (``specs/zhou-2022-linear-mixture.md``): ``m = max(1, ⌈log2 K⌉)``, the
operator-norm bound is ``Υ`` (the paper's ``Σ_{p,1}``), the four streams are ``p1`` (Gram of
``ϕ``), ``p2`` (``ϕ·V``), ``r1`` (Gram of ``φ``), ``r2`` (``φ·r``).

Sensitivities (spec §3.2, §6 A15). One user's item ``x`` with ``‖x‖ ≤ L`` and target ``|y| ≤ Y``:

* ``calibration="sound"`` (default; Def 2.2 is *replacement* neighbouring):
  ``‖xxᵀ − x'x'ᵀ‖_F ≤ √2 L²`` and ``‖xy − x'y'‖ ≤ 2LY``, so
  ``Δ_p1 = √2 L_ϕ²``, ``Δ_p2 = 2 L_ϕ H``, ``Δ_r1 = √2``, ``Δ_r2 = 2``.
* ``calibration="paper"``: the printed add/remove values ``L_ϕ², L_ϕ H, 1, 1`` (too small for
  replacement; results are labelled "paper calibration").

Noise (proof of Thm 6.4): ``σ_x = (H Δ_x/ε) √(32 m ln(4H/δ))``. Each P-sum is ``Δ²/(2σ²)``-zCDP, an
item enters ≤ m P-sums of each of the 4H counters, so the whole run is
``ρ = 4H·m·Δ²/(2σ²) = ε²/(16 H ln(4H/δ))``-zCDP, and the paper's basic composition gives
``(ε + ε²/(16H ln(4H/δ)), δ)`` (:func:`paper_epsilon_total`). ``sigma_rule="zcdp"`` instead
calibrates ``ρ* = (√(ln(1/δ)+ε) − √ln(1/δ))²`` and ``σ_x = Δ_x √(2mH/ρ*)`` (spec §3.2; not in the paper).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl.privacy.calibration import approx_dp_to_zcdp
from privrl.privacy.tree import symmetric_gaussian, tree_depth

__all__ = ["StreamScales", "RegularityConstants", "sensitivities", "noise_stds", "upsilon_theory",
           "upsilon_monte_carlo", "regularity_constants", "confidence_radii", "po_step_size",
           "paper_epsilon_total", "paper_rho_total", "vi_regret_bound", "po_regret_bound", "tree_depth"]

STREAMS = ("p1", "p2", "r1", "r2")


@dataclass(frozen=True)
class StreamScales:
    """One number per stream (sensitivity or noise std)."""

    p1: float
    p2: float
    r1: float
    r2: float

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in STREAMS}


@dataclass(frozen=True)
class RegularityConstants:
    """Assumption 2 constants (data-independent) and the shift ``γ`` and PD floor of each part."""

    lambda_max_p: float
    lambda_min_p: float
    nu_p: float
    lambda_max_r: float
    lambda_min_r: float
    nu_r: float
    shift_p: float
    shift_r: float
    upsilon_p: float = 0.0
    upsilon_r: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def sensitivities(d1: int, horizon: int, *, value_feature_bound: float | None = None,
                  calibration: str = "sound") -> StreamScales:
    """ℓ2 (Frobenius for Grams) sensitivities of one user's item in each stream (see module doc)."""
    L = math.sqrt(d1) * horizon if value_feature_bound is None else float(value_feature_bound)
    paper = StreamScales(L * L, L * horizon, 1.0, 1.0)
    if calibration == "paper":
        return paper
    return StreamScales(math.sqrt(2) * paper.p1, 2 * paper.p2, math.sqrt(2), 2.0)


def noise_stds(sens: StreamScales, *, horizon: int, epsilon: float, delta: float, depth: int,
               sigma_rule: str = "paper") -> StreamScales:
    """σ per stream. ``depth`` is ``m`` (central tree) or 1 (local randomiser, spec §3.4).

    ``"paper"``: ``σ = (HΔ/ε)√(32 m ln(4H/δ))`` (Thm 6.4 proof); ``"zcdp"``: ``σ = Δ√(2mH/ρ*)``.
    ``epsilon = inf`` gives 0 (non-private).
    """
    if math.isinf(epsilon):
        return StreamScales(0.0, 0.0, 0.0, 0.0)
    if sigma_rule == "paper":
        factor = horizon / epsilon * math.sqrt(32 * depth * math.log(4 * horizon / delta))
    else:
        rho = approx_dp_to_zcdp(epsilon, delta, method="bun_steinke")
        factor = math.sqrt(2 * depth * horizon / rho)
    return StreamScales(*(factor * v for v in sens.as_dict().values()))


def upsilon_theory(sigma: float, *, n_noise_terms: int, dim: int, n_episodes: int, horizon: int,
                   alpha: float) -> float:
    """``Υ = σ √M (4√dim + √(8 ln(8KH/α)))`` (Lemma B.4 with entry variance ``Mσ²``, failure
    ``α/(4KH)`` per (k,h)); ``M = m`` (central) or ``K`` (local)."""
    return sigma * math.sqrt(n_noise_terms) * (4 * math.sqrt(dim)
                                               + math.sqrt(8 * math.log(8 * n_episodes * horizon / alpha)))


def upsilon_monte_carlo(sigma: float, *, n_noise_terms: int, dim: int, n_episodes: int, horizon: int,
                        alpha: float, n_samples: int = 4000) -> float:
    """A tighter data-independent ``Υ`` [derived; a knob, not the paper's]: the Monte-Carlo mean of
    ``‖N‖`` (fixed public seed, plus 3 standard errors) plus the Gaussian-concentration tail
    ``2s√(ln(4KH/α))``, ``s = σ√M``. ``‖N‖_op`` is ``√2 s``-Lipschitz in the standard Gaussian
    coordinates of the upper triangle (``‖N‖_op ≤ ‖N‖_F ≤ √2‖g‖``), so
    ``P(‖N‖ ≥ E‖N‖ + t) ≤ exp(−t²/(4s²)) = α/(4KH)``."""
    s = sigma * math.sqrt(n_noise_terms)
    if s == 0:
        return 0.0
    return s * (_mc_norm_mean(int(dim), int(n_samples)) + 2 * math.sqrt(math.log(4 * n_episodes * horizon / alpha)))


@functools.lru_cache(maxsize=64)
def _mc_norm_mean(dim: int, n_samples: int) -> float:
    """Monte-Carlo mean of ``‖N‖_op`` for a standard symmetric Gaussian ``dim × dim`` matrix, plus
    3 standard errors (fixed public seed: a constant of ``(dim, n_samples)``, cached)."""
    rng = np.random.default_rng(20220601 + dim)
    norms = np.linalg.norm(symmetric_gaussian(rng, (n_samples, dim, dim), 1.0), ord=2, axis=(1, 2))
    return float(norms.mean() + 3 * norms.std(ddof=1) / math.sqrt(n_samples))


def _chi_bound(sigma: float, n_noise_terms: int, dim: int, n_episodes: int, horizon: int, alpha: float) -> float:
    """``‖z‖ ≤ √M σ (√dim + √(2 ln(4KH/α)))`` (Lemma B.5, Laurent–Massart)."""
    return math.sqrt(n_noise_terms) * sigma * (math.sqrt(dim) + math.sqrt(2 * math.log(4 * n_episodes * horizon / alpha)))


def regularity_constants(sigmas: StreamScales, *, d1: int, d2: int, n_episodes: int, horizon: int, alpha: float,
                         n_noise_terms: int, upsilon: str = "theory", shift_scale: float = 1.0,
                         lam: float = 1.0) -> RegularityConstants:
    """Assumption 2 constants of a noisy privatizer (proof of Thm 6.5; spec §3.3, §3.4).

    ``Z = N + γI`` with ``γ = 2c·Υ`` (``c = shift_scale``, paper: ``c = 1``); on ``‖N‖ ≤ Υ``:
    ``(2c−1)Υ I ⪯ Z ⪯ (2c+1)Υ I`` and ``ν = ‖z‖-bound/√λ_min``. With zero noise (infinite budget)
    it is ``NonPrivate(lam)``: ``λ_max = λ_min = γ = lam``, ``ν = 0``.
    """
    if sigmas.p1 == 0 and sigmas.r1 == 0:
        return RegularityConstants(lam, lam, 0.0, lam, lam, 0.0, lam, lam)
    d = max(d1, d2)
    kw: dict[str, Any] = dict(n_noise_terms=n_noise_terms, n_episodes=n_episodes, horizon=horizon, alpha=alpha)
    ups = upsilon_theory if upsilon == "theory" else upsilon_monte_carlo
    ups_p = ups(sigmas.p1, dim=d if upsilon == "theory" else d1, **kw)   # paper: √d in Υ_p (spec A12)
    ups_r = ups(sigmas.r1, dim=d2, **kw)
    lo, hi = 2 * shift_scale - 1, 2 * shift_scale + 1
    nu_p = _chi_bound(sigmas.p2, n_noise_terms, d1, n_episodes, horizon, alpha) / math.sqrt(lo * ups_p)
    nu_r = _chi_bound(sigmas.r2, n_noise_terms, d2, n_episodes, horizon, alpha) / math.sqrt(lo * ups_r)
    return RegularityConstants(hi * ups_p, lo * ups_p, nu_p, hi * ups_r, lo * ups_r, nu_r,
                               2 * shift_scale * ups_p, 2 * shift_scale * ups_r, ups_p, ups_r)


def confidence_radii(c: RegularityConstants, *, d1: int, d2: int, n_episodes: int, horizon: int, alpha: float,
                     value_feature_bound: float | None = None) -> tuple[float, float]:
    """``(β_p(α), β_r(α))`` of Lemma 3.1 (with ``K L_ϕ²/(d1 λ_min,p)`` in the log-det term, which is
    the paper's ``K H²/λ_min,p`` for ``L_ϕ = √d1 H``)."""
    H, K = horizon, n_episodes
    L2 = d1 * H * H if value_feature_bound is None else float(value_feature_bound) ** 2
    beta_p = (H / 2) * math.sqrt(2 * math.log(H / alpha) + d1 * math.log(1 + K * L2 / (d1 * c.lambda_min_p))) \
        + math.sqrt(d1 * c.lambda_max_p) + c.nu_p
    beta_r = 0.5 * math.sqrt(2 * math.log(H / alpha) + d2 * math.log(1 + K / (d2 * c.lambda_min_r))) \
        + math.sqrt(d2 * c.lambda_max_r) + c.nu_r
    return beta_p, beta_r


def po_step_size(n_actions: int, n_episodes: int, horizon: int) -> float:
    """``η = √(2 ln|A| / (H² K))`` (Sec 8, term (i), after Cai et al. 2020)."""
    return math.sqrt(2 * math.log(n_actions) / (horizon**2 * n_episodes)) if n_actions > 1 else 0.0


def paper_rho_total(epsilon: float, delta: float, horizon: int) -> float:
    """zCDP of the whole central (or local) run with the paper's σ: ``ε²/(16 H ln(4H/δ))``."""
    return epsilon**2 / (16 * horizon * math.log(4 * horizon / delta))


def paper_epsilon_total(epsilon: float, delta: float, horizon: int) -> float:
    """The exact ε of Thm 6.4's own composition: ``ε + ε²/(16 H ln(4H/δ))`` (the paper: "O(ε, δ)")."""
    return epsilon + paper_rho_total(epsilon, delta, horizon)


def _kappas(c: RegularityConstants, n_episodes: int, horizon: int, d2: int) -> tuple[float, float]:
    return (math.log(1 + n_episodes * horizon**2 / c.lambda_min_p),
            math.log(1 + n_episodes / (d2 * c.lambda_min_r)))


def vi_regret_bound(c: RegularityConstants, beta_p: float, beta_r: float, *, d1: int, d2: int, n_episodes: int,
                    horizon: int, alpha: float) -> float:
    """Explicit Thm 4.1 bound read off Sec 7.1:
    ``2β_p√(2THd1κ_p) + 2Hβ_r√(2THd2κ_r) + H√(2T ln(1/α))``, ``T = KH``."""
    H, T = horizon, n_episodes * horizon
    kp, kr = _kappas(c, n_episodes, horizon, d2)
    return (2 * beta_p * math.sqrt(2 * T * H * d1 * kp) + 2 * H * beta_r * math.sqrt(2 * T * H * d2 * kr)
            + H * math.sqrt(2 * T * math.log(1 / alpha)))


def po_regret_bound(c: RegularityConstants, beta_p: float, beta_r: float, *, d1: int, d2: int, n_episodes: int,
                    horizon: int, alpha: float, n_actions: int) -> float:
    """Explicit Thm 5.1 bound: ``√(2H³T ln|A|) + 4H√(2T ln(1/α)) + 2β_p√(2THd1κ_p) + 2Hβ_r√(2THd2κ_r)``."""
    H, T = horizon, n_episodes * horizon
    kp, kr = _kappas(c, n_episodes, horizon, d2)
    return (math.sqrt(2 * H**3 * T * math.log(n_actions)) + 4 * H * math.sqrt(2 * T * math.log(1 / alpha))
            + 2 * beta_p * math.sqrt(2 * T * H * d1 * kp) + 2 * H * beta_r * math.sqrt(2 * T * H * d2 * kr))
