"""Noise calibration of DP Q-learning with functional noise (Wang & Hegde 2019, Thm 5, App. E.3).

Notation (spec §2.1): ``T' `` noisy releases (SGD updates), ``v = 4 alpha (k+1) / B``, kernel
``beta = 1/v``, ``C = (v^2 + v) L^2`` (a bound on the *squared* RKHS sensitivity, proof of Thm 5
step 5), ``k`` ("kappa") the high-probability bound on the noise amplitude.

Two calibrations:

* ``"paper"`` — Algorithm 1 line 5 / Theorem 5 exactly as printed:
  ``sigma = sqrt(2 T' ln(e + eps/delta')) * C / eps`` with ``C`` *outside* the square root,
  ``T' = T/B`` (78.125), ``k = 23``, ``delta' = delta/2`` (App. E.3 splits delta between the
  Gaussian part and the tail event). Reproduces sigma = 0.3132 for (0.9, 1e-4). The printed
  side condition ``2k > 8.68 sqrt(beta) sigma`` fails at these numbers (130.9 > 46), so the
  paper's tail term is vacuous; paper mode records this but does not enforce it (labelled
  "as claimed in the paper").
* ``"sound"`` — the proof's form of the sensitivity with the corrections of spec A4, A5, A7:
  per-update sup-norm change ``D = 4 alpha L (k+1)`` (no 1/B: every reward of the batch may
  differ, A7), derivative term ``(2L)^2/(2 beta)`` (both networks are L-Lipschitz, A5), so at
  ``beta = 1/v``, ``v = 4 alpha (k+1)``: ``||f||_H^2 <= (1 + beta/2) D^2 + 2 L^2 / beta =
  (v^2 + 2.5 v) L^2 =: C_sound`` and the RKHS sensitivity is ``Delta_H = sqrt(C_sound)``.
  By Cameron–Martin the privacy loss of ``G(h, sigma^2 K)`` vs ``G(0, sigma^2 K)`` is exactly
  that of a 1-D Gaussian mechanism with sensitivity ``||h||_H``, so the ``T'`` releases are
  ``T'`` Gaussian events of multiplier ``sigma / Delta_H`` composed exactly (PLD accountant)
  at ``delta/2``. The tail event (some path exceeds ``k`` in absolute value; Borell–TIS with
  ``E max g <= 8.684 sqrt(beta) sigma``, two-sided, ``J*m`` paths) must have probability
  ``delta_g <= delta/2``; it is added to the ledger as an ``ApproxDpEvent(0, delta_g)``.
  If no ``k`` satisfies the side condition, :class:`~privrl.errors.CertificationError` is
  raised. Certification also requires a fresh path every update (``J = T'``, spec A9).
  Limitations kept from the paper (documented, not fixed): the adaptive-composition gap (A12)
  and the declared ``L`` being assumed, not enforced (A6).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from privrl._validation import check_option, check_scalar
from privrl.errors import CertificationError
from privrl.privacy.calibration import calibrate_gaussian

__all__ = [
    "LEMMA8_CONSTANT", "PAPER_SUP_CONSTANT", "lemma8_constant", "kernel_v", "sigma_paper_printed",
    "sigma_paper_proof", "delta_g", "epsilon_exact", "epsilon_paper", "FunctionalNoiseCalibration",
    "calibrate_functional_noise", "input_perturbation_std", "dpsgd_noise_multiplier",
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
    """Probability that some noise path violates the amplitude bound (Thm 5, App. E.3).

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


@dataclass(frozen=True)
class FunctionalNoiseCalibration:
    """Public result of a calibration (no data-dependent quantity)."""

    calibration: str
    epsilon: float
    delta: float
    sigma: float
    beta: float
    kappa: float
    v: float
    C: float
    sensitivity: float          # the RKHS sensitivity Delta_H the ledger uses (C in paper mode)
    n_releases: float           # T'
    n_paths: float              # J
    delta_gaussian: float
    delta_g: float              # tail probability (paper mode: the paper's formula, vacuous)
    side_condition_holds: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calibrate_functional_noise(epsilon: float, delta: float, *, n_samples: int, batch_size: int,
                               learning_rate: float, lipschitz: float, n_actions: int = 2,
                               calibration: str = "sound", kappa: float | str = "auto"
                               ) -> FunctionalNoiseCalibration:
    """σ, β and the side condition of Algorithm 1 for a target (ε, δ) (module docstring).

    ``kappa="auto"``: 23 in paper mode (App. E.3); in sound mode the smallest k on a fine
    geometric grid for which the tail event has probability at most δ/2.
    """
    owner = "calibrate_functional_noise"
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither")
    T = check_scalar(n_samples, "n_samples", owner=owner, kind=int, low=1)
    B = check_scalar(batch_size, "batch_size", owner=owner, kind=int, low=1)
    alpha = check_scalar(learning_rate, "learning_rate", owner=owner, low=0.0, closed="neither")
    L = check_scalar(lipschitz, "lipschitz", owner=owner, low=0.0, closed="neither")
    m = check_scalar(n_actions, "n_actions", owner=owner, kind=int, low=1)
    check_option(calibration, "calibration", ("sound", "paper"), owner=owner)
    if kappa != "auto":
        kappa = check_scalar(kappa, "kappa", owner=owner, low=0.0, closed="neither")
    if calibration == "paper":
        k = 23.0 if kappa == "auto" else float(kappa)
        T_prime = T / B
        J = math.floor(T / B)
        v = kernel_v(alpha, k, B)
        beta = 1.0 / v
        C = (v * v + v) * L * L
        sigma = sigma_paper_printed(epsilon, delta / 2, T, B, alpha, k, L)
        dg = delta_g(k, beta, sigma, J)
        return FunctionalNoiseCalibration(
            "paper", epsilon, delta, sigma, beta, k, v, C, C, T_prime, J, delta / 2, dg, dg < 1.0,
            ("paper calibration: C outside the square root (Alg. 1 line 5), 1/B in v, "
             "side condition 2k > 8.68 sqrt(beta) sigma " + ("holds" if dg < 1 else "FAILS (not enforced)"),))
    # sound
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
                "smaller learning rate, a smaller Lipschitz bound or a larger budget.")
        k = chosen
    else:
        k = float(kappa)
    v, beta, C, sigma, dg = at(k)
    if dg > delta / 2:
        raise CertificationError(
            f"Sound calibration of DP Q-learning refuses to certify with k={k}: the side condition "
            f"fails: k - 8.684 sqrt(beta) sigma = {k - LEMMA8_CONSTANT * math.sqrt(beta) * sigma:.4g} "
            f"(beta={beta:.6g}, sigma={sigma:.6g}) gives a tail probability delta_g={dg:.3g} > "
            f"delta/2={delta / 2:.3g}, so the sensitivity bound of Theorem 5 does not hold with the "
            "required probability. Use kappa='auto'.")
    return FunctionalNoiseCalibration(
        "sound", epsilon, delta, sigma, beta, k, v, C, math.sqrt(C), T_prime, T_prime, delta / 2, dg, True,
        ("sound calibration: Delta_H = sqrt((v^2 + 2.5 v) L^2), v = 4 alpha (k+1) (A5, A7), exact "
         "Gaussian composition over T' = ceil(T/B) releases, Borell-TIS two-sided tail over J*m paths",))


@functools.lru_cache(maxsize=64)   # pure and costly (root finding over the accountant): reused across runs
def input_perturbation_std(epsilon: float, delta: float, n_rewards: int, calibration: str = "sound") -> float:
    """Per-reward Gaussian std for input perturbation (App. E.2, [Ven13] reconstruction).

    Each reward query has sensitivity 1 under sup-norm-1 neighbours; ``n_rewards`` queries are
    composed. Sound: exact (PLD) calibration. Paper: the paper's own composition
    ``sqrt(2 T ln(e + eps/delta)) / eps`` (335.3 at eps=0.9, delta=1e-4, T=5000).
    """
    check_option(calibration, "calibration", ("sound", "paper"), owner="input_perturbation_std")
    if calibration == "paper":
        return math.sqrt(2.0 * n_rewards * math.log(math.e + epsilon / delta)) / epsilon
    return calibrate_gaussian(epsilon, delta, sensitivity=1.0, compositions=int(n_rewards))


@functools.lru_cache(maxsize=64)   # pure and costly (root finding over the accountant): reused across runs
def dpsgd_noise_multiplier(epsilon: float, delta: float, n_steps: int, calibration: str = "sound") -> float:
    """DP-SGD noise multiplier with sampling rate q = 1 (spec §5.5).

    Sound: exact (PLD) calibration of ``n_steps`` Gaussian releases. Paper: Theorem 1 of
    [ACG+16] with c2 = sqrt(2), q = 1: ``sqrt(2) sqrt(n_steps log(1/delta)) / eps``.
    """
    check_option(calibration, "calibration", ("sound", "paper"), owner="dpsgd_noise_multiplier")
    if calibration == "paper":
        return math.sqrt(2.0) * math.sqrt(n_steps * math.log(1.0 / delta)) / epsilon
    return calibrate_gaussian(epsilon, delta, sensitivity=1.0, compositions=int(n_steps))
