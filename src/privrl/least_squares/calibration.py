"""Certified calibration of the smoothed Gaussian mechanism of DP-LSW and DP-LSL
(Balle, Gomrokchi & Precup 2016, Lemma 1 / Lemma 14).

Both algorithms release ``Z ~ N(θ_X, σ_X² I_d)`` with a data-dependent σ_X = α·C·√ψ_X such that,
for every pair of neighbours X ≃ X',

(a) ‖θ_X − θ_X'‖₂ ≤ min(σ_X, σ_X')/α and (b) |ln σ_X² − ln σ_X'²| ≤ β.

This module computes, for given (α, β, d), how private that is — the largest hockey-stick
divergence δ(ε) over all pairs of Gaussians allowed by (a) and (b) — and runs the search the
other way (target (ε, δ) → α, β). The derivation (docs/policy_evaluation.md, "Tight calibration"):

1. *Reduction.* Translating, rotating and rescaling both Gaussians by the same map changes no
   divergence, so every allowed pair is ``P = N(0, I_d)`` against ``Q = N(Δ e₁, e^t I_d)`` with
   |t| ≤ β and 0 ≤ Δ ≤ min(1, e^{t/2})/α. The reverse direction (Q against P) is the same family
   with t → −t (rescale by e^{−t/2}: Δ → Δ e^{−t/2} ≤ min(1, e^{−t/2})/α), so one direction of one
   family covers both.
2. *Worst shift.* For fixed t, δ_{P‖Q}(ε) is non-decreasing in Δ: its derivative is
   −e^ε e^{−t} E_Q[(z₁ − Δ) 1_A] with A = {L > ε}; writing z₁ = Δ + u, the loss satisfies
   L(Δ + u) − L(Δ − u) = −2uΔ (the other coordinates fixed), so for u > 0, Δ + u ∈ A implies
   Δ − u ∈ A, and as u is symmetric under Q the expectation is ≤ 0.
   Hence Δ = Δ_max(t) = min(1, e^{t/2})/α.
3. *Exact δ at one (Δ, t).* With z = (z₁, r), R = ‖r‖² ~ χ²_{d−1} under P and ‖r‖² = e^t χ²_{d−1}
   under Q, the loss is L = a(z₁) + cR, a(z₁) = dt/2 − z₁²/2 + (z₁ − Δ)²/(2e^t), c = (e^{−t} − 1)/2,
   so δ = ∫ [φ(z₁) P(cR > ε − a(z₁)) − e^ε q(z₁) P(c e^t R > ε − a(z₁))] dz₁: a one-dimensional
   integral of regularised incomplete gamma functions, computed by adaptive Gauss–Kronrod
   quadrature (breakpoints at the roots of a(z₁) = ε) and reported as value + error estimate
   (:func:`scaled_gaussian_delta`).
4. *The scale ratios.* Under the ``"tight"`` calibration the mechanism rounds ψ_X up to the grid
   e^{jβ}, j ∈ ℤ (:meth:`SmoothedGaussian.round_psi`, j = ⌈ln ψ_X/β − τ⌉ with a tiny offset τ
   against floating-point error, paid for by raising α by e^{βτ/2}): (a) still holds and, since ψ
   is β-smooth, the two j of neighbours differ by at most one, so t ∈ {−β, 0, β} exactly.
   The worst case is then the maximum of three exact values (:func:`lemma1_delta` with
   ``discrete=True``); rounding costs at most a factor e^{β/2} in σ_X.
   The paper's mechanism (``"sound"``, ``"paper"``) does not round, t ranges over [−β, β], and
   we bound it by the weak triangle inequality through R = N(Δ e₁, I_d) (H_{e^{ε₁+ε₂}}(P‖Q) ≤
   H_{e^{ε₁}}(P‖R) + e^{ε₁} H_{e^{ε₂}}(R‖Q), both orders): an exact Gaussian shift part
   (Balle & Wang 2018) plus an exact pure-scale part (a χ²_d tail), the latter non-decreasing in
   |t| (the channel z ↦ a z + √(1−a²) ξ fixes N(0, I) and maps N(0, s²I) to N(0, (1 + a²(s² − 1))I)),
   minimised over the split ε₁ + ε₂ = ε. Looser, but proved for every t.

The calibrations (:func:`smoothed_gaussian`):

* ``"paper"`` — (α, β) as printed (Lemma 1, or Lemma 14 with ``smoothing="appendix_a"``); the
  ledger records the ε the triangle bound certifies at the budget's δ (larger than the budget
  where the printed lemma fails, e.g. ε = 100, δ = 10⁻⁵, d = 1).
* ``"sound"`` — the same closed forms, certified by the triangle bound; where they are not
  certified, α is raised to the least certified value (the correction).
* ``"tight"`` — β from the utility preset (``constants="theory"``: the printed β, capped where it
  would more than double α — only at large ε, where the printed β grows like ε; ``"practical"``:
  :func:`practical_beta`), α the least value whose exact worst case (step 4) meets (ε, δ),
  found by bisection; ψ rounded up as in step 4.

Every result records ``epsilon_spent``, the ledger's ``ApproxDpEvent(epsilon_spent, δ)``: for
``"tight"`` the target ε itself (certified, whatever β the utility preset chose); for ``"sound"``
and ``"paper"`` the smallest ε (bisection, feasible end kept) whose certified δ(ε) is at most the
budget's δ — what the printed constants truly spend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._search import bisect_boundary
from privrl._validation import check_option, check_scalar, param_error
from privrl.errors import CertificationError
from privrl.least_squares.smooth_sensitivity import SMOOTHINGS, smoothing_constants
from privrl.privacy import events
from privrl.privacy.accounting import _gaussian_hockey_stick, gaussian_delta
from privrl.privacy.calibration import CALIBRATIONS, CONSTANT_PRESETS, gaussian_multiplier

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["scaled_gaussian_delta", "pure_scale_delta", "lemma1_delta", "lemma1_epsilon", "tight_alpha",
           "practical_beta", "PRACTICAL_KAPPA", "SmoothedGaussian", "smoothed_gaussian", "EPSILON_CAP",
           "ROUNDING_OFFSET"]

#: Practical smoothing preset: the largest β whose certified α is at most (1 + κ) times the
#: multiplier of a plain Gaussian mechanism (β = 0). κ was chosen once on held-out chains
#: (docs/policy_evaluation.md, "Practical constants").
PRACTICAL_KAPPA = 0.5
#: Budgets with ε above this are calibrated at this ε (a smaller ε is a valid claim at any larger
#: one). Where e^ε would overflow, the computations below drop (clip) the subtracted term, which
#: only raises δ: the results stay upper bounds.
EPSILON_CAP = 1e12
_EXP_MAX = 700.0
_TARGET_SLACK = 1e-8
_Z_RANGE = 40.0
#: ψ is rounded to e^{β⌈ln ψ/β − τ⌉}: the offset τ absorbs floating-point error in ln ψ/β (which is
#: often an exact integer in theory, e.g. ψ = e^{−kβ} Σ_s w_s with Σ_s w_s = 1), and α is raised by
#: e^{βτ/2} to pay for the e^{−βτ} that the offset can take off ψ
ROUNDING_OFFSET = 1e-6  # |z₁| ≤ 40: the integrand is at most φ(z₁), and Φ(−40) < 10⁻³⁴⁹

# 15-point Gauss–Kronrod nodes on [−1, 1] with the 7-point Gauss rule embedded at odd indices
_XK = np.array([-0.991455371120813, -0.949107912342759, -0.864864423359769, -0.741531185599394,
                -0.586087235467691, -0.405845151377397, -0.207784955007898, 0.0,
                0.207784955007898, 0.405845151377397, 0.586087235467691, 0.741531185599394,
                0.864864423359769, 0.949107912342759, 0.991455371120813])
_WK = np.array([0.022935322010529, 0.063092092629979, 0.104790010322250, 0.140653259715525,
                0.169004726639267, 0.190350578064785, 0.204432940075298, 0.209482141084728,
                0.204432940075298, 0.190350578064785, 0.169004726639267, 0.140653259715525,
                0.104790010322250, 0.063092092629979, 0.022935322010529])
_WG = np.array([0.129484966168870, 0.279705391489277, 0.381830050505119, 0.417959183673469,
                0.381830050505119, 0.279705391489277, 0.129484966168870])


def _integrate(f: Any, edges: np.ndarray, rtol: float = 1e-9, max_rounds: int = 50,
               max_panels: int = 4096) -> tuple[float, float]:
    """∫ f over [edges[0], edges[-1]] by vectorised adaptive G7–K15 quadrature; returns (K15 sum,
    sum of the |K15 − G7| error estimates). A panel is accepted when its error estimate is below
    rtol times its share (by width) of the running total, or rtol times its own value; panels
    still open after ``max_rounds`` rounds (or beyond ``max_panels``) are counted with their error."""
    a, b = edges[:-1], edges[1:]
    keep = b > a
    a, b = a[keep], b[keep]
    width = float(b[-1] - a[0]) if a.size else 0.0
    total, error, scale = 0.0, 0.0, None
    for round_ in range(max_rounds + 1):
        if a.size == 0:
            break
        mid, half = 0.5 * (a + b), 0.5 * (b - a)
        fx = f((mid[:, None] + half[:, None] * _XK[None, :]).ravel()).reshape(-1, _XK.size)
        k15 = (fx @ _WK) * half
        err = np.abs(k15 - (fx[:, 1::2] @ _WG) * half)
        if scale is None:
            scale = float(np.abs(k15).sum())
        share = rtol * max(scale, total + float(np.abs(k15).sum())) * (2.0 * half) / width
        done = (err <= np.maximum(rtol * np.abs(k15), share)) | (round_ == max_rounds) \
            | (2 * a.size > max_panels)
        total += float(k15[done].sum())
        error += float(err[done].sum())
        a, b, mid = a[~done], b[~done], mid[~done]
        a, b = np.concatenate([a, mid]), np.concatenate([mid, b])
    return total, error


def _chi2_sf(k: int, x: np.ndarray) -> np.ndarray:
    """P(χ²_k > x), 1 for x ≤ 0 (k ≥ 1)."""
    from scipy import special

    return np.where(x <= 0, 1.0, special.gammaincc(0.5 * k, 0.5 * np.maximum(x, 0.0)))


def _chi2_cdf(k: int, x: np.ndarray) -> np.ndarray:
    """P(χ²_k < x), 0 for x ≤ 0 (k ≥ 1)."""
    from scipy import special

    return np.where(x <= 0, 0.0, special.gammainc(0.5 * k, 0.5 * np.maximum(x, 0.0)))


def scaled_gaussian_delta(epsilon: float, shift: float, log_var_ratio: float, d: int) -> float:
    """An upper bound (exact value + quadrature error estimate) on δ(ε) = H_{e^ε}(P‖Q) for
    P = N(0, I_d), Q = N(shift·e₁, e^t I_d), t = ``log_var_ratio`` (module docstring, step 3).
    t = 0 is the Gaussian mechanism (Balle & Wang 2018, Thm. 8, in closed form)."""
    eps, dlt, t = float(epsilon), float(shift), float(log_var_ratio)
    if t == 0.0:
        return 0.0 if dlt == 0 else gaussian_delta(1.0 / dlt, eps)
    if abs(t) > _EXP_MAX:
        return 1.0  # a variance ratio beyond e^700: no useful bound
    s2 = math.exp(t)
    k = int(d) - 1
    c = 0.5 * (1.0 / s2 - 1.0)
    log_norm = -0.5 * math.log(2.0 * math.pi)

    def b_of(z: np.ndarray) -> np.ndarray:  # ε − a(z₁)
        return eps - (0.5 * d * t - 0.5 * z * z + (z - dlt) ** 2 / (2.0 * s2))

    def prob(b: np.ndarray, scale: float) -> np.ndarray:  # P(c·scale·R > b), R ~ χ²_k
        if k == 0:
            return (b < 0).astype(float)
        x = b / (c * scale)
        return _chi2_sf(k, x) if c > 0 else _chi2_cdf(k, x)

    def f(z: np.ndarray) -> np.ndarray:
        b = b_of(z)
        p = np.exp(log_norm - 0.5 * z * z)
        log_q = log_norm - 0.5 * math.log(s2) - 0.5 * (z - dlt) ** 2 / s2
        # e^ε q(z₁) is clipped at e^700: that only shrinks the subtracted term (an upper bound)
        val = p * prob(b, 1.0) - np.exp(np.minimum(eps + log_q, _EXP_MAX)) * prob(b, s2)
        return np.clip(val, 0.0, None)

    # breakpoints: 0, the shift and the roots of a(z₁) = ε (A z² + B z + C = 0)
    A, B, C = c, -dlt / s2, dlt * dlt / (2.0 * s2) + 0.5 * d * t - eps
    points = [-_Z_RANGE, 0.0, dlt, _Z_RANGE]
    disc = B * B - 4.0 * A * C
    if disc >= 0 and A != 0:
        root = math.sqrt(disc)
        points += [(-B - root) / (2 * A), (-B + root) / (2 * A)]
    elif A == 0 and B != 0:
        points.append(-C / B)
    edges = np.unique(np.clip(np.concatenate([points, np.linspace(-_Z_RANGE, _Z_RANGE, 41)]),
                              -_Z_RANGE, _Z_RANGE))
    value, err = _integrate(f, edges)
    return float(min(1.0, value + err))


def pure_scale_delta(epsilon: float | np.ndarray, log_var_ratio: float, d: int) -> np.ndarray:
    """δ(ε) = H_{e^ε}(N(0, I_d) ‖ N(0, e^t I_d)) in closed form (χ²_d tails), vectorised over ε.
    With L = (d/2)t + c‖z‖², c = (e^{−t} − 1)/2, and ‖z‖² ~ χ²_d under P, e^t χ²_d under Q."""
    eps = np.asarray(epsilon, dtype=float)
    t = float(log_var_ratio)
    if t == 0.0:
        return np.zeros_like(eps)
    if abs(t) > _EXP_MAX:
        return np.ones_like(eps)
    s2 = math.exp(t)
    c = 0.5 * (1.0 / s2 - 1.0)
    w0 = (eps - 0.5 * d * t) / c
    if c > 0:
        p, q = _chi2_sf(d, w0), _chi2_sf(d, w0 / s2)
    else:
        p, q = _chi2_cdf(d, w0), _chi2_cdf(d, w0 / s2)
    out = p - np.exp(np.minimum(eps, _EXP_MAX)) * q  # clipping e^ε only raises the result
    return np.clip(out, 0.0, 1.0)


def _shift_delta(alpha: float, eps: np.ndarray) -> np.ndarray:
    """Exact δ(ε) of the Gaussian shift N(0, I) vs N(e₁/α, I), vectorised over ε ≥ 0."""
    return _gaussian_hockey_stick(float(alpha), np.asarray(eps, dtype=float))


def _triangle_delta(epsilon: float, alpha: float, beta: float, d: int) -> float:
    """The proved bound of the module docstring (step 4, continuous t): min over the split
    ε₁ + ε₂ = ε of max(G(ε₁) + e^{ε₁} S(ε₂), S(ε₂) + e^{ε₂} G(ε₁)), G the Gaussian shift with
    multiplier α, S the worse of the two pure scale changes e^{±β}."""
    eps = float(epsilon)
    e1 = np.concatenate([np.linspace(0.0, eps, 801), eps * (1.0 - np.logspace(-8, -1, 200))])
    e2 = eps - e1
    g = np.zeros_like(e1) if math.isinf(alpha) else _shift_delta(alpha, e1)
    s = np.maximum(pure_scale_delta(e2, beta, d), pure_scale_delta(e2, -beta, d))
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.maximum(g + np.exp(e1) * s, s + np.exp(e2) * g)
    bound = np.where(np.isnan(bound), np.inf, bound)  # inf·0 where e^ε overflows: no bound there
    return float(min(1.0, bound.min()))


def lemma1_delta(epsilon: float, alpha: float, beta: float, d: int, *, discrete: bool) -> float:
    """Certified δ(ε) of the smoothed Gaussian mechanism with multiplier α, smoothness β (of σ²)
    and dimension d, over every pair allowed by Lemma 1's conditions (a) and (b).

    ``discrete=True`` (ψ rounded up to the grid e^{jβ}): the exact maximum over t ∈ {−β, 0, β}.
    ``discrete=False`` (the paper's mechanism): the triangle bound, valid for every t ∈ [−β, β]."""
    eps = min(float(epsilon), EPSILON_CAP)
    shift = 0.0 if math.isinf(alpha) else float(_shift_delta(alpha, np.asarray(eps)))
    if beta == 0.0:
        return shift
    if not discrete:
        return _triangle_delta(eps, alpha, beta, d)
    inv = 0.0 if math.isinf(alpha) else 1.0 / alpha
    return max(shift, scaled_gaussian_delta(eps, inv, beta, d),
               scaled_gaussian_delta(eps, math.exp(-0.5 * min(beta, _EXP_MAX)) * inv, -beta, d))


def lemma1_epsilon(delta: float, alpha: float, beta: float, d: int, *, discrete: bool,
                   upper: float | None = None) -> float:
    """The smallest ε (bisection to 1e-7 relative, feasible end kept) whose certified δ(ε) is at
    most ``delta``; ``math.inf`` when none up to :data:`EPSILON_CAP` is."""
    def ok(e: float) -> bool:
        return lemma1_delta(e, alpha, beta, d, discrete=discrete) <= delta

    hi = EPSILON_CAP if upper is None else min(float(upper), EPSILON_CAP)
    lo = 0.0
    if not ok(hi):
        if hi >= EPSILON_CAP or not ok(EPSILON_CAP):
            return math.inf
        lo, hi = hi, EPSILON_CAP
    elif ok(lo):
        return 0.0
    return bisect_boundary(ok, hi, lo, rel_tol=1e-7)


def _bisect_alpha(ok: Any, start: float) -> float:
    """The smallest α (relative tolerance 1e-7, feasible end kept) with ``ok(α)``, or inf."""
    hi = max(start, 1e-6)
    n = 0
    while not ok(hi):
        hi *= 2.0
        n += 1
        if n > 60:
            return math.inf
    lo = hi / 2.0
    while ok(lo) and lo > 1e-12:
        hi, lo = lo, lo / 2.0
    return bisect_boundary(ok, hi, lo, rel_tol=1e-7)


def tight_alpha(epsilon: float, delta: float, beta: float, d: int, *, discrete: bool = True) -> float:
    """The least α whose certified worst case (:func:`lemma1_delta`) meets (ε, δ) at smoothness
    β; ``math.inf`` when no α does (the scale change alone costs more than δ)."""
    eps = min(float(epsilon), EPSILON_CAP)
    if lemma1_delta(eps, math.inf, beta, d, discrete=discrete) > delta:
        return math.inf
    return _bisect_alpha(lambda a: lemma1_delta(eps, a, beta, d, discrete=discrete) <= delta,
                         gaussian_multiplier(eps, delta))


def practical_beta(epsilon: float, delta: float, d: int, kappa: float = PRACTICAL_KAPPA) -> float:
    """The largest β (bisection, relative tolerance 1e-4) at which α = (1 + κ)·α₀ still meets
    (ε, δ) under the discrete certificate, α₀ the plain Gaussian multiplier (β = 0). Depends on
    (ε, δ, d) only."""
    eps = min(float(epsilon), EPSILON_CAP)
    alpha = (1.0 + kappa) * gaussian_multiplier(eps, delta)

    def ok(b: float) -> bool:
        return lemma1_delta(eps, alpha, b, d, discrete=True) <= delta

    lo, hi = 0.0, 1e-3
    while ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 50:
            return lo
    return bisect_boundary(ok, lo, hi, rel_tol=1e-4)


@dataclass(frozen=True)
class SmoothedGaussian:
    """The calibrated constants of one smoothed Gaussian release (all public: functions of
    (ε, δ, d) and the calibration choices only).

    ``alpha`` multiplies the local-sensitivity bound (under ``discrete``, the certified multiplier
    times e^{βτ/2}, see :data:`ROUNDING_OFFSET`), ``beta`` is the smoothness of σ² (of ψ);
    ``discrete`` rounds ψ up to the grid e^{jβ} (the tight calibration, module docstring step 4);
    ``epsilon_spent`` is the certified ε at ``delta``; ``corrected`` marks a sound calibration
    whose printed α had to be raised."""

    epsilon: float
    delta: float
    d: int
    calibration: str
    smoothing: str
    constants: str
    alpha: float
    beta: float
    discrete: bool
    epsilon_spent: float
    corrected: bool = False

    @property
    def is_private(self) -> bool:
        return not math.isinf(self.epsilon)

    @property
    def event(self) -> DpEvent:
        """The ledger entry of one release: ``ApproxDpEvent(epsilon_spent, δ)`` (non-private for an
        infinite budget)."""
        if not self.is_private:
            return events.non_private()
        return events.approx(self.epsilon_spent, self.delta)

    def round_psi(self, psi: float) -> float:
        """ψ as the mechanism uses it: e^{jβ}, j = ⌈ln ψ/β − τ⌉, when ``discrete`` (so
        e^{−βτ} ψ ≤ result < e^β ψ; ``alpha`` already includes the factor e^{βτ/2})."""
        if not self.discrete or psi <= 0:
            return float(psi)
        return float(math.exp(self.beta * math.ceil(math.log(psi) / self.beta - ROUNDING_OFFSET)))


def _check(epsilon: float, delta: float, d: int, calibration: str, smoothing: str, constants: str,
           owner: str) -> tuple[float, float, int]:
    check_option(calibration, "calibration", CALIBRATIONS, owner=owner)
    check_option(smoothing, "smoothing", SMOOTHINGS, owner=owner)
    check_option(constants, "constants", CONSTANT_PRESETS, owner=owner)
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither", allow_inf=True)
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither")
    d = check_scalar(d, "d", owner=owner, kind=int, low=1)
    return epsilon, delta, d


def smoothed_gaussian(epsilon: float, delta: float, d: int, *, calibration: str = "tight",
                      smoothing: str = "main_text", constants: str = "theory",
                      owner: str = "smoothed_gaussian") -> SmoothedGaussian:
    """The (α, β) of one release for the budget (ε, δ) in dimension d (module docstring).

    Raises :class:`~privrl.errors.CertificationError` when a sound calibration cannot be
    certified (no α meets the budget at the printed β) and ``InvalidParameterError`` for Lemma 14
    (``smoothing="appendix_a"``) with ε > 5 under the sound and paper calibrations.
    """
    epsilon, delta, d = _check(epsilon, delta, d, calibration, smoothing, constants, owner)
    if calibration != "tight" and smoothing == "appendix_a" and epsilon > 5.0:
        raise param_error("budget", owner, "a PrivacyBudget with epsilon in (0.0, 5.0] when "
                          "smoothing='appendix_a' (Lemma 14) under the sound and paper calibrations", epsilon)
    return _smoothed_gaussian(epsilon, delta, d, calibration, smoothing, constants)


@lru_cache(maxsize=512)
def _smoothed_gaussian(epsilon: float, delta: float, d: int, calibration: str, smoothing: str,
                       constants: str) -> SmoothedGaussian:
    common: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "d": d, "calibration": calibration,
                              "smoothing": smoothing, "constants": constants}
    if math.isinf(epsilon):
        return SmoothedGaussian(**common, alpha=0.0, beta=math.inf, discrete=False, epsilon_spent=math.inf)
    eps = min(epsilon, EPSILON_CAP)
    if calibration == "tight":
        eps *= 1.0 - _TARGET_SLACK  # strictly inside the target: the ledger's own bisection may add ~1e-9
        if constants == "practical":
            beta = practical_beta(eps, delta, d)
            alpha = tight_alpha(eps, delta, beta, d)
        else:
            printed_eps = min(epsilon, EPSILON_CAP)
            beta = smoothing_constants(min(printed_eps, 5.0) if smoothing == "appendix_a" else printed_eps,
                                       delta, d, smoothing)[1]
            alpha = tight_alpha(eps, delta, beta, d)
            if not alpha <= 2.0 * gaussian_multiplier(eps, delta):
                # the printed β grows like ε: at large ε it costs more than doubling α (or cannot be
                # certified at all); cap it where α doubles
                beta = practical_beta(eps, delta, d, kappa=1.0)
                alpha = tight_alpha(eps, delta, beta, d)
        if math.isinf(alpha):  # pragma: no cover - practical_beta keeps β feasible by construction
            raise CertificationError(f"No noise multiplier certifies ({epsilon}, {delta})-DP at smoothness "
                                     f"beta = {beta} in d = {d}.")
        # certified at the target itself (tight_alpha's bisection keeps the feasible end): the ledger
        # records (ε, δ) whatever the utility knobs chose for β
        return SmoothedGaussian(**common, alpha=alpha * math.exp(0.5 * beta * ROUNDING_OFFSET), beta=beta,
                                discrete=True, epsilon_spent=eps)
    alpha, beta = smoothing_constants(epsilon, delta, d, smoothing)
    corrected = False
    if calibration == "sound" and lemma1_delta(eps, alpha, beta, d, discrete=False) > delta:
        fixed = _bisect_alpha(lambda a: lemma1_delta(eps, a, beta, d, discrete=False) <= delta, alpha)
        if math.isinf(fixed):
            raise CertificationError(
                f"The {smoothing} smoothing constants cannot be certified at ({epsilon}, {delta}) in d = {d}: "
                "the change of scale alone costs more than delta. Use calibration='tight'.")
        alpha, corrected = fixed, True
    spent = lemma1_epsilon(delta, alpha, beta, d, discrete=False, upper=eps)
    return SmoothedGaussian(**common, alpha=alpha, beta=beta, discrete=False, epsilon_spent=spent,
                            corrected=corrected)
