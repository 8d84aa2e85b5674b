"""Noise calibration of DP Q-learning (Wang & Hegde 2019, Thm 5, App. E.3) and of its baselines.

Notation (spec §2.1): ``T'`` noisy releases (SGD updates), ``k`` ("kappa") the bound on the noise
amplitude the sensitivity argument needs, ``beta`` the kernel width of ``K(x, y) = e^{-beta|x-y|}``,
``L`` the declared Lipschitz constant, ``alpha`` the learning rate, ``m`` actions.

Three calibrations of the functional noise (``calibration=``):

* ``"paper"`` — Algorithm 1 line 5 / Theorem 5 **as printed**: ``sigma = sqrt(2 T' ln(e + eps/delta'))
  C / eps`` with ``C = (v^2 + v) L^2`` *outside* the square root, ``v = 4 alpha (k+1) / B``, ``k = 23``,
  ``T' = T/B`` (78.125), ``delta' = delta/2``, ``beta = 1/v``. Reproduces sigma = 0.3132 at
  (0.9, 1e-4). What it *claims* is not what it spends: the printed side condition
  ``2k > 8.68 sqrt(beta) sigma`` fails (130.9 > 46, so the paper's own tail term is 1) and the
  proof's sensitivity is ``sqrt(C)`` without the 1/B (spec A1, A7). The estimator's ledger therefore
  records the true spend (the corrected sensitivity :func:`rkhs_sensitivity` at the paper's
  ``(k, beta)`` and the valid tail bound :func:`tail_delta`), and ``certified_`` is False when that
  exceeds the budget.
* ``"sound"`` — the proof with the corrections of spec A4, A5, A7 in closed form: per-update sup-norm
  change ``D = 4 alpha L (k+1)`` (no 1/B), ``||f||_H^2 <= (1 + beta/2) D^2 + 2 L^2 / beta``
  (:func:`rkhs_sensitivity`) at ``beta = 1/v``, ``v = 4 alpha (k+1)``, i.e. ``(v^2 + 2.5 v) L^2``;
  delta split evenly: the ``T'`` Gaussian releases exactly at delta/2
  (:func:`~privrl.privacy.calibration.calibrate_gaussian`), the tail event "some path exceeds k"
  at probability <= delta/2 by Lemma 8 with Borell–TIS (``E max g <= 8.684 sqrt(beta) sigma``,
  two-sided, over ``T' m`` paths), k the smallest on a geometric grid.
* ``"tight"`` (default) — the same corrected sensitivity chain, with ``(k, beta, sigma)`` and the
  delta split chosen jointly to minimise sigma (:func:`tight_functional_noise`):

  - ``beta`` is free: the norm bound holds for every beta > 0 (Lemma 6), it need not be ``1/v``;
  - the tail bound is the better of Lemma 8 + Borell–TIS and the reflection bound of
    :func:`ou_sup_tail` (the OU path is a time-changed Brownian motion; per path
    ``P(sup_[0,1] |g| >= z sigma) <= 4 N Phi-bar(z e^{-beta/N})`` for every integer N), which
    grows like ``sqrt(log beta)`` instead of ``sqrt(beta)``;
  - the delta split is exact: the ledger holds ``T'`` Gaussian events of multiplier
    ``sigma/Delta_H`` (one Gaussian mechanism with ``mu = sqrt(T') Delta_H / sigma``, exact by
    Cameron–Martin) and ``ApproxDpEvent(0, delta_g)``, whose composition has
    ``delta(eps) = delta_g + (1 - delta_g) delta_mu(eps)`` exactly; so for each ``delta_g`` the
    Gaussian part gets ``delta_G = (delta - delta_g)/(1 - delta_g)`` and
    ``mu = gaussian_mu(eps, delta_G)``.

  With ``k = z sigma`` (z from the tail bound at ``delta_g``) the privacy constraint
  ``sigma^2 mu^2 = T' [(1 + beta/2) w^2 (z sigma + 1)^2 + 2 L^2/beta]``, ``w = 4 alpha L``, is a
  quadratic in sigma with a positive root iff ``c z^2 < 1``, ``c = T' (1 + beta/2) w^2 / mu^2``:
  certification is possible only when ``sqrt(T') 4 alpha L z / mu < 1`` (at beta -> 0). At E.3's
  numbers that holds at eps = 0.9 (sigma ~ 1.2e3) and fails at eps = 0.45: the paper's approach
  cannot be certified there, at any noise level (``docs/q_learning.md``).

Limitations kept from the paper's proof in every mode (documented, not fixed): the
adaptive-composition gap (A12) and the declared ``L`` being assumed, not enforced (A6).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq, minimize
from scipy.special import ndtr, ndtri
from scipy.stats import norm

from privrl._validation import check_option, check_scalar
from privrl.errors import CertificationError
from privrl.privacy import events
from privrl.privacy.accounting import Ledger, gaussian_delta, gaussian_epsilon
from privrl.privacy.calibration import CALIBRATIONS, calibrate_gaussian, gaussian_multiplier

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = [
    "LEMMA8_CONSTANT", "PAPER_SUP_CONSTANT", "lemma8_constant", "kernel_v", "sigma_paper_printed",
    "sigma_paper_proof", "delta_g", "epsilon_exact", "epsilon_paper", "rkhs_sensitivity", "ou_sup_tail",
    "tail_delta", "FunctionalNoiseCalibration", "calibrate_functional_noise", "tight_functional_noise",
    "paper_epsilon_for_sigma", "tight_epsilon_for_sigma", "release_events", "spent_epsilon", "input_perturbation_std",
    "dpsgd_noise_multiplier",
]

PAPER_SUP_CONSTANT = 8.68


def lemma8_constant(terms: int = 400) -> float:
    """``1/sqrt(pi) + sum_i (sqrt(i) + 1 + e^{-(sqrt(i)+1)}) 2^{-i/2}`` = 8.6838 (Lemma 8 proof)."""
    i = np.arange(terms, dtype=float)
    return float(1.0 / math.sqrt(math.pi)
                 + np.sum((np.sqrt(i) + 1.0 + np.exp(-(np.sqrt(i) + 1.0))) * 2.0 ** (-i / 2)))


LEMMA8_CONSTANT = 8.684  # rounded up from 8.6838 (the paper's "< 8.68" is slightly too small)


def kernel_v(alpha: float, kappa: float, batch_size: float = 1.0) -> float:
    """``v = 4 alpha (k + 1) / B`` (proof of Thm 5); ``batch_size=1`` gives the sound v (A7)."""
    return 4.0 * alpha * (kappa + 1.0) / batch_size


def sigma_paper_printed(epsilon: float, delta: float, T: float, B: float, alpha: float,
                        kappa: float, L: float) -> float:
    """Alg. 1 line 5 as printed: ``sqrt(2 (T/B) ln(e + eps/delta)) C / eps``, ``C = (v^2+v) L^2``."""
    v = kernel_v(alpha, kappa, B)
    C = (v * v + v) * L * L
    return math.sqrt(2.0 * (T / B) * math.log(math.e + epsilon / delta)) * C / epsilon


def sigma_paper_proof(epsilon: float, delta: float, T: float, B: float, alpha: float,
                      kappa: float, L: float) -> float:
    """The proof's sufficient condition: as :func:`sigma_paper_printed` with ``sqrt(C)``."""
    v = kernel_v(alpha, kappa, B)
    C = (v * v + v) * L * L
    return math.sqrt(2.0 * (T / B) * math.log(math.e + epsilon / delta)) * math.sqrt(C) / epsilon


def delta_g(kappa: float, beta: float, sigma: float, J: float, m: int = 1, *, tail: str = "paper",
            sided: str = "paper", constant: float = PAPER_SUP_CONSTANT) -> float:
    """Probability that some noise path violates the amplitude bound by Lemma 8 (Thm 5, App. E.3).

    ``u = c_k - constant sqrt(beta) sigma`` with ``c_k = 2k`` (paper) or ``k`` (two-sided);
    per-path tail ``e^{-u^2/2}`` (paper) or ``e^{-u^2/(2 sigma^2)}`` (Borell–TIS), doubled when
    two-sided; ``delta_g = 1 - (1 - p)^(J m)``. Returns 1.0 (vacuous) when ``u <= 0``.
    """
    check_option(tail, "tail", ("paper", "borell"), owner="delta_g")
    check_option(sided, "sided", ("paper", "two"), owner="delta_g")
    c_k = 2.0 * kappa if sided == "paper" else kappa
    u = c_k - constant * math.sqrt(beta) * sigma
    if u <= 0:
        return 1.0
    if tail == "paper":
        p = math.exp(-u * u / 2.0)
    else:
        p = 0.0 if sigma == 0 else math.exp(-u * u / (2.0 * sigma * sigma))
    if sided == "two":
        p = min(1.0, 2.0 * p)
    n = J * (m if sided == "two" else 1)
    return float(-math.expm1(n * math.log1p(-p))) if p < 1 else 1.0


def _gdp_delta(eps: float, mu: float) -> float:
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def epsilon_exact(Delta_H: float, sigma: float, T_prime: float, delta: float) -> float:
    """Exact ε of ``T'`` composed Gaussian(-process) releases: mu-GDP with ``mu = sqrt(T') Delta/sigma``."""
    mu = math.sqrt(T_prime) * Delta_H / sigma
    if _gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while _gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(brentq(lambda e: _gdp_delta(e, mu) - delta, 0.0, hi, xtol=1e-12))


def epsilon_paper(Delta_H: float, sigma: float, T_prime: float, delta: float) -> float:
    """The paper's composition (proof of Thm 5, after [KOV13]): ``rho/2 + sqrt(2 rho ln(e + sqrt(rho)/delta))``."""
    rho = T_prime * Delta_H ** 2 / sigma ** 2
    return rho / 2.0 + math.sqrt(2.0 * rho * math.log(math.e + math.sqrt(rho) / delta))


# --------------------------------------------------------------------------- the corrected chain
def rkhs_sensitivity(lipschitz: float, learning_rate: float, kappa: float, beta: float) -> float:
    """RKHS sensitivity of one update's release under the corrected chain (spec A5, A7):
    ``Delta_H = sqrt((1 + beta/2) D^2 + 2 L^2 / beta)``, ``D = 4 alpha L (k + 1)`` — the norm bound
    of §3.2 (Lemma 6's inner product) for ``f = Q - Q'`` with ``|f| <= D`` and ``|f'| <= 2L``."""
    D = 4.0 * learning_rate * lipschitz * (kappa + 1.0)
    return math.sqrt((1.0 + beta / 2.0) * D * D + 2.0 * lipschitz * lipschitz / beta)


_N_GRID = np.unique(np.concatenate([np.arange(1, 64), np.round(np.geomspace(64, 1e9, 600))])).astype(float)


def ou_sup_tail(z: float, beta: float) -> float:
    """A bound on ``P(sup_{x in [0,1]} |g(x)| >= z sigma)`` for one OU path ``g ~ G(0, sigma^2 e^{-beta|x-y|})``:
    the smaller of

    * Lemma 8 with Borell–TIS (two-sided): ``2 exp(-(z - 8.684 sqrt(beta))^2 / 2)``;
    * the reflection bound: ``g(t) = sigma e^{-beta t} W(e^{2 beta t})`` with W a Brownian motion,
      so on an interval ``[t0, t0 + h]`` the event ``g > z sigma`` implies
      ``sup_{s <= e^{2 beta (t0+h)}} W(s) > z e^{beta t0}``, of probability
      ``2 Phi-bar(z e^{-beta h})`` (reflection principle); a union over ``N = 1/h`` intervals and
      the two signs gives ``4 N Phi-bar(z e^{-beta/N})``, minimised over integers N >= 1.
    """
    borell = 1.0 if z <= LEMMA8_CONSTANT * math.sqrt(beta) else \
        2.0 * math.exp(-(z - LEMMA8_CONSTANT * math.sqrt(beta)) ** 2 / 2.0)
    x = beta / _N_GRID
    ok = x < 700.0
    refl = float(np.min(4.0 * _N_GRID[ok] * ndtr(-z * np.exp(-x[ok])))) if ok.any() else 1.0
    return min(1.0, borell, refl)


def tail_delta(kappa: float, beta: float, sigma: float, n_paths: float) -> float:
    """``delta_g = 1 - (1 - p)^{n_paths}``: probability that one of ``n_paths`` independent paths
    leaves ``[-k, k]`` somewhere on [0, 1], with ``p = ou_sup_tail(k / sigma, beta)``."""
    if sigma == 0:
        return 0.0
    p = ou_sup_tail(kappa / sigma, beta)
    return 1.0 if p >= 1 else float(-math.expm1(n_paths * math.log1p(-p)))


def _z_for(p: float, beta: float) -> float:
    """The smallest z (of the two bounds of :func:`ou_sup_tail`) with tail probability <= p."""
    z_borell = LEMMA8_CONSTANT * math.sqrt(beta) + math.sqrt(2.0 * math.log(2.0 / p))
    x = beta / _N_GRID
    ok = x < 50.0
    z_refl = float(np.min(np.exp(x[ok]) * -ndtri(np.minimum(p / (4.0 * _N_GRID[ok]), 0.5)))) if ok.any() else math.inf
    z = min(z_borell, z_refl) * (1.0 + 1e-12)
    while ou_sup_tail(z, beta) > p:  # rounding guard: the returned z always meets the bound
        z *= 1.0 + 1e-9
    return z


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class FunctionalNoiseCalibration:
    """Public result of a calibration (no data-dependent quantity).

    ``sensitivity`` is the RKHS sensitivity the ledger uses — the corrected one at ``(kappa,
    beta)`` in every mode; ``claimed_sensitivity`` what the calibration assumed (the printed ``C``
    in paper mode). ``delta_g`` is the valid tail bound at ``(kappa, beta, sigma)`` over
    ``n_paths`` paths (recorded in the ledger); ``delta_g_claimed`` what the mode's own formula says
    (paper: the printed Lemma 8 form, 1.0 when its side condition fails).
    """

    calibration: str
    epsilon: float
    delta: float
    sigma: float
    beta: float
    kappa: float
    v: float
    C: float
    sensitivity: float
    n_releases: float           # T' the calibration composes over
    n_paths: float              # paths the tail event covers (T' m)
    delta_gaussian: float
    delta_g: float
    side_condition_holds: bool
    claimed_sensitivity: float = math.nan
    delta_g_claimed: float = math.nan
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_inputs(epsilon: float, delta: float, n_samples: int, batch_size: int, learning_rate: float,
                  lipschitz: float, n_actions: int, calibration: str, kappa: float | str, owner: str
                  ) -> tuple[float, float, int, int, float, float, int, float | str]:
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither")
    T = check_scalar(n_samples, "n_samples", owner=owner, kind=int, low=1)
    B = check_scalar(batch_size, "batch_size", owner=owner, kind=int, low=1)
    alpha = check_scalar(learning_rate, "learning_rate", owner=owner, low=0.0, closed="neither")
    L = check_scalar(lipschitz, "lipschitz", owner=owner, low=0.0, closed="neither")
    m = check_scalar(n_actions, "n_actions", owner=owner, kind=int, low=1)
    check_option(calibration, "calibration", CALIBRATIONS, owner=owner)
    if kappa != "auto":
        kappa = check_scalar(kappa, "kappa", owner=owner, low=0.0, closed="neither")
    return epsilon, delta, T, B, alpha, L, m, kappa


def calibrate_functional_noise(epsilon: float, delta: float, *, n_samples: int, batch_size: int,
                               learning_rate: float, lipschitz: float, n_actions: int = 2,
                               calibration: str = "tight", kappa: float | str = "auto"
                               ) -> FunctionalNoiseCalibration:
    """sigma, beta and the tail event of Algorithm 1 for a target (ε, δ) (module docstring).

    ``kappa="auto"``: 23 in paper mode (App. E.3); sound: the smallest k on a geometric grid whose
    tail event has probability <= δ/2; tight: chosen jointly with beta and sigma.
    """
    owner = "calibrate_functional_noise"
    epsilon, delta, T, B, alpha, L, m, kappa = _check_inputs(
        epsilon, delta, n_samples, batch_size, learning_rate, lipschitz, n_actions, calibration, kappa, owner)
    if calibration == "tight":
        return tight_functional_noise(epsilon, delta, n_releases=math.ceil(T / B), learning_rate=alpha,
                                      lipschitz=L, n_actions=m, kappa=kappa)
    if calibration == "paper":
        return _paper(epsilon, delta, T, B, alpha, L, m, 23.0 if kappa == "auto" else float(kappa))
    return _sound(epsilon, delta, T, B, alpha, L, m, kappa)


def _paper(epsilon: float, delta: float, T: int, B: int, alpha: float, L: float, m: int,
           k: float) -> FunctionalNoiseCalibration:
    T_prime = T / B
    J = math.floor(T / B)
    v = kernel_v(alpha, k, B)
    beta = 1.0 / v
    C = (v * v + v) * L * L
    sigma = sigma_paper_printed(epsilon, delta / 2, T, B, alpha, k, L)
    claimed = delta_g(k, beta, sigma, J)
    n_paths = math.ceil(T / B) * m
    true_dg = tail_delta(k, beta, sigma, n_paths)
    return FunctionalNoiseCalibration(
        "paper", epsilon, delta, sigma, beta, k, v, C, rkhs_sensitivity(L, alpha, k, beta), T_prime, n_paths,
        delta / 2, true_dg, claimed < 1.0, claimed_sensitivity=C, delta_g_claimed=claimed,
        notes=("paper calibration (as printed): C outside the square root (Alg. 1 line 5), 1/B in v, "
               "side condition 2k > 8.68 sqrt(beta) sigma " + ("holds" if claimed < 1 else "FAILS")
               + "; the ledger records the corrected sensitivity at the paper's (k, beta)",))


def _sound(epsilon: float, delta: float, T: int, B: int, alpha: float, L: float, m: int,
           kappa: float | str) -> FunctionalNoiseCalibration:
    T_prime = math.ceil(T / B)
    sigma_unit = calibrate_gaussian(epsilon, delta / 2, sensitivity=1.0, compositions=T_prime)

    def at(k: float) -> tuple[float, float, float, float, float]:
        v = kernel_v(alpha, k)
        beta = 1.0 / v
        C = (v * v + 2.5 * v) * L * L
        sigma = math.sqrt(C) * sigma_unit
        dg = delta_g(k, beta, sigma, T_prime, m, tail="borell", sided="two", constant=LEMMA8_CONSTANT)
        return v, beta, C, sigma, dg

    if kappa == "auto":
        chosen = None
        for k in np.geomspace(1e-2, 1e9, 2000):
            if at(float(k))[4] <= delta / 2:
                chosen = float(k)
                break
        if chosen is None:
            raise CertificationError(
                f"Sound calibration of DP Q-learning refuses to certify (epsilon={epsilon}, "
                f"delta={delta}): for no noise bound k in [1e-2, 1e9] does the tail event "
                f"'some of the {T_prime * m} noise paths exceeds k' have probability <= delta/2 "
                f"(Borell-TIS with E max g <= 8.684 sqrt(beta) sigma): with learning_rate={alpha} "
                f"and lipschitz={L} the required sigma grows faster in k than k itself. Use a "
                "smaller learning rate, a smaller Lipschitz bound, calibration 'tight' or a larger budget.")
        k = chosen
    else:
        k = float(kappa)
    v, beta, C, sigma, dg = at(k)
    if dg > delta / 2:
        raise CertificationError(
            f"Sound calibration of DP Q-learning refuses to certify with kappa={k}: the side condition "
            f"fails: k - 8.684 sqrt(beta) sigma = {k - LEMMA8_CONSTANT * math.sqrt(beta) * sigma:.4g} "
            f"(beta={beta:.6g}, sigma={sigma:.6g}) gives a tail probability delta_g={dg:.3g} > "
            f"delta/2={delta / 2:.3g}, so the sensitivity bound of Theorem 5 does not hold with the "
            "required probability. Set kappa to 'auto'.")
    return FunctionalNoiseCalibration(
        "sound", epsilon, delta, sigma, beta, k, v, C, math.sqrt(C), T_prime, T_prime * m, delta / 2, dg, True,
        claimed_sensitivity=math.sqrt(C), delta_g_claimed=dg,
        notes=("sound calibration: Delta_H = sqrt((v^2 + 2.5 v) L^2), v = 4 alpha (k+1) (A5, A7), exact "
               "Gaussian composition over T' = ceil(T/B) releases at delta/2, Borell-TIS two-sided tail "
               "over T' m paths at delta/2",))


# --------------------------------------------------------------------------- tight
@functools.lru_cache(maxsize=256)
def _mu(epsilon: float, delta_gauss: float) -> float:
    return 1.0 / gaussian_multiplier(epsilon, delta_gauss)


class _Search:
    """sigma as a function of (delta_g fraction, log beta) for fixed public parameters."""

    def __init__(self, epsilon: float, delta: float, T: int, alpha: float, L: float, m: int,
                 kappa: float | str) -> None:
        self.epsilon, self.delta, self.T, self.alpha, self.L, self.m, self.kappa = \
            epsilon, delta, T, alpha, L, m, kappa
        self.w = 4.0 * alpha * L

    def parts(self, frac: float, log_beta: float) -> tuple[float, float, float, float]:
        """(sigma, beta, z, delta_g); sigma = inf when infeasible."""
        frac = min(max(frac, 1e-6), 1.0 - 1e-6)
        dg = frac * self.delta
        dG = (self.delta - dg) / (1.0 - dg)
        mu = _mu(self.epsilon, dG)
        p = -math.expm1(math.log1p(-dg) / (self.T * self.m))
        beta = math.exp(log_beta)
        z = _z_for(p, beta)
        if self.kappa == "auto":
            c = self.T * (1.0 + beta / 2.0) * self.w ** 2 / mu ** 2
            e = 2.0 * self.T * self.L ** 2 / (beta * mu ** 2)
            a = 1.0 - c * z * z
            if a <= 1e-12:
                return math.inf, beta, z, dg
            sigma = (c * z + math.sqrt(c * c * z * z + a * (c + e))) / a
        else:
            kappa = float(self.kappa)
            sigma = math.sqrt(self.T) * rkhs_sensitivity(self.L, self.alpha, kappa, beta) / mu
            if sigma * z > kappa:
                return math.inf, beta, z, dg
        return sigma, beta, z, dg

    def __call__(self, x: Sequence[float]) -> float:
        return self.parts(float(x[0]), float(x[1]))[0]


@functools.lru_cache(maxsize=64)
def tight_functional_noise(epsilon: float, delta: float, *, n_releases: int, learning_rate: float,
                           lipschitz: float, n_actions: int = 2, kappa: float | str = "auto"
                           ) -> FunctionalNoiseCalibration:
    """The tight calibration (module docstring): ``(k, beta, sigma)`` and the delta split minimising
    sigma under the corrected sensitivity chain, accounted exactly. Grid over (delta_g/delta,
    log beta), then Nelder–Mead from the best point; the result is checked against the exact
    privacy curve of its own ledger. :class:`~privrl.errors.CertificationError` when no choice
    certifies the budget."""
    owner = "tight_functional_noise"
    T = check_scalar(n_releases, "n_releases", owner=owner, kind=int, low=1)
    search = _Search(float(epsilon), float(delta), T, float(learning_rate), float(lipschitz), int(n_actions), kappa)
    best = (math.inf, 0.5, 0.0)
    for frac in np.linspace(0.05, 0.95, 10):
        for log_beta in np.linspace(math.log(1e-5), math.log(1e7), 49):
            s = search((frac, log_beta))
            if s < best[0]:
                best = (s, frac, log_beta)
    if not math.isfinite(best[0]):
        k_text = "any noise bound k" if kappa == "auto" else f"kappa={kappa}"
        raise CertificationError(
            f"Tight calibration of DP Q-learning cannot certify (epsilon={epsilon}, delta={delta}) with "
            f"{k_text}: under the corrected sensitivity chain the noise must exceed its own amplitude "
            f"bound (sqrt(T') 4 alpha L z / mu >= 1 with T' = {T} releases, alpha = {learning_rate}, "
            f"L = {lipschitz}) for every kernel width and delta split. Use a smaller learning rate, a smaller "
            "Lipschitz bound, fewer updates (a larger batch size or fewer samples)"
            + (", set kappa to 'auto'" if kappa != "auto" else "") + " or a larger budget.")
    res = minimize(search, x0=[best[1], best[2]], method="Nelder-Mead",
                   options={"xatol": 1e-4, "fatol": 1e-9 * best[0], "maxiter": 400})
    x = res.x if res.fun < best[0] else np.array([best[1], best[2]])
    sigma, beta, z, _ = search.parts(float(x[0]), float(x[1]))
    sigma *= 1.0 + 1e-9   # strictly inside the budget after rounding
    k = z * sigma if kappa == "auto" else float(kappa)
    sens = rkhs_sensitivity(lipschitz, learning_rate, k, beta)
    dg = tail_delta(k, beta, sigma, T * n_actions)
    mu_eff = math.sqrt(T) * sens / sigma
    total = dg + (1.0 - dg) * gaussian_delta(1.0 / mu_eff, epsilon)
    if not total <= delta * (1.0 + 1e-9):  # pragma: no cover - guarded by construction
        raise RuntimeError(f"{owner}: the calibrated release spends delta {total} > {delta} at epsilon")
    v = kernel_v(learning_rate, k)
    return FunctionalNoiseCalibration(
        "tight", float(epsilon), float(delta), sigma, beta, k, v, sens * sens, sens, T, T * n_actions,
        (delta - dg) / (1.0 - dg), dg, True, claimed_sensitivity=sens, delta_g_claimed=dg,
        notes=("tight calibration: Delta_H = sqrt((1 + beta/2) D^2 + 2 L^2/beta), D = 4 alpha L (k+1); "
               "(k, beta, sigma, delta_g) chosen jointly; tail: min(Lemma 8 + Borell-TIS, OU reflection "
               "bound); exact composition of T' Gaussian events and ApproxDpEvent(0, delta_g)",))


def release_events(cal: FunctionalNoiseCalibration, n_updates: int) -> list[DpEvent]:
    """The events of a run with calibration ``cal`` and ``n_updates`` updates: the updates' releases
    (Gaussian mechanisms of multiplier sigma / Delta_H, exact by Cameron–Martin), composed, and the
    tail event ``ApproxDpEvent(0, delta_g)`` of the amplitude bound k."""
    return [events.self_composed(events.gaussian(cal.sigma / cal.sensitivity), int(n_updates)),
            events.approx(0.0, cal.delta_g)]


def spent_epsilon(cal: FunctionalNoiseCalibration, n_updates: int, delta: float) -> float:
    """ε at δ of :func:`release_events` (the ledger's exact accounting): what the noise truly spends."""
    return Ledger(release_events(cal, n_updates)).epsilon(delta)


# --------------------------------------------------------------------------- ε bought by a given sigma
@functools.lru_cache(maxsize=64)
def paper_epsilon_for_sigma(sigma: float, delta: float, *, n_samples: int, batch_size: int, learning_rate: float,
                            lipschitz: float, kappa: float = 23.0) -> float:
    """The ε the paper's printed calibration (Alg. 1 line 5, App. E.3: k = 23, delta' = delta/2)
    claims for noise ``sigma``: the root of ``sigma_paper_printed(eps) = sigma`` (decreasing in eps)."""
    def gap(log_eps: float) -> float:
        return sigma_paper_printed(math.exp(log_eps), delta / 2, n_samples, batch_size, learning_rate, kappa,
                                   lipschitz) - sigma
    return float(math.exp(brentq(gap, math.log(1e-8), math.log(1e8), xtol=1e-12)))


@functools.lru_cache(maxsize=64)
def tight_epsilon_for_sigma(sigma: float, delta: float, *, n_releases: int, learning_rate: float, lipschitz: float,
                            n_actions: int = 2, beta: float | None = None) -> float:
    """The smallest ε the tight analysis certifies at δ for noise ``sigma`` (the inverse of
    :func:`tight_functional_noise`): minimised over the noise bound k, the delta split and, when
    ``beta`` is None, the kernel width (else at the given beta, e.g. the beta = 1 of Figure 1)."""
    T, m = int(n_releases), int(n_actions)

    def eps(x: Sequence[float]) -> float:
        frac = min(max(float(x[0]), 1e-6), 1.0 - 1e-6)
        b = math.exp(float(x[1])) if beta is None else float(beta)
        dg = frac * delta
        p = -math.expm1(math.log1p(-dg) / (T * m))
        k = _z_for(p, b) * sigma
        mu = math.sqrt(T) * rkhs_sensitivity(lipschitz, learning_rate, k, b) / sigma
        return gaussian_epsilon(1.0 / mu, (delta - dg) / (1.0 - dg))

    betas = [0.0] if beta is not None else np.linspace(math.log(1e-5), math.log(1e7), 49)
    best = min((eps((f, lb)), f, lb) for f in np.linspace(0.05, 0.95, 10) for lb in betas)
    res = minimize(eps, x0=[best[1], best[2]], method="Nelder-Mead", options={"xatol": 1e-4, "maxiter": 300})
    return float(min(best[0], res.fun))


# --------------------------------------------------------------------------- baselines
@functools.lru_cache(maxsize=64)   # pure and costly to recompute across runs
def input_perturbation_std(epsilon: float, delta: float, n_rewards: int, calibration: str = "tight") -> float:
    """Per-reward Gaussian std for input perturbation (App. E.2, [Ven13] reconstruction).

    Each reward query has sensitivity 1 under sup-norm-1 neighbours; the ``n_rewards`` releases
    compose to one Gaussian mechanism with ``mu = sqrt(n) / s``. Tight (and sound, today's
    calibration, already exact): the smallest s whose exact Gaussian curve meets (ε, δ)
    (:func:`~privrl.privacy.calibration.calibrate_gaussian`). Paper: the paper's own composition
    ``sqrt(2 T ln(e + eps/delta)) / eps`` (335.3 at eps=0.9, delta=1e-4, T=5000).
    """
    check_option(calibration, "calibration", CALIBRATIONS, owner="input_perturbation_std")
    if calibration == "paper":
        return math.sqrt(2.0 * n_rewards * math.log(math.e + epsilon / delta)) / epsilon
    return calibrate_gaussian(epsilon, delta, sensitivity=1.0, compositions=int(n_rewards))


@functools.lru_cache(maxsize=64)
def dpsgd_noise_multiplier(epsilon: float, delta: float, n_steps: int, calibration: str = "tight") -> float:
    """DP-SGD noise multiplier (noise std / sensitivity of the clipped-gradient sum) with q = 1.

    Under sup-norm neighbours every reward may change, so there is no amplification by sampling:
    each step is a Gaussian mechanism on the whole batch and ``n_steps`` of them compose to one with
    ``mu = sqrt(n_steps) / multiplier``. Tight (= sound, already exact): the exact calibration.
    Paper: Theorem 1 of [ACG+16] with c2 = sqrt(2), q = 1: ``sqrt(2) sqrt(n_steps log(1/delta)) / eps``
    (applied to the paper's sensitivity ``B clip``; see :class:`~privrl.q_learning.DPSGDQLearning`).
    """
    check_option(calibration, "calibration", CALIBRATIONS, owner="dpsgd_noise_multiplier")
    if calibration == "paper":
        return math.sqrt(2.0) * math.sqrt(n_steps * math.log(1.0 / delta)) / epsilon
    return calibrate_gaussian(epsilon, delta, sensitivity=1.0, compositions=int(n_steps))
