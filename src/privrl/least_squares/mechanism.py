"""The release steps of DP-LSW and DP-LSL (Balle, Gomrokchi & Precup 2016, Algorithms 1 and 2).

A mechanism object holds the public parameters (Φ, w or ρ and λ, F_max) and the calibrated
constants of the smoothed Gaussian (:class:`~privrl.least_squares.calibration.SmoothedGaussian`),
and its :meth:`~_SmoothedRelease.release` is a pure function of those, the signature ⟨X⟩, θ and a
:class:`~privrl.privacy.NoiseSource`: it draws through the release seam
(:func:`~privrl.privacy.release_with_event`) and returns a :class:`~privrl.privacy.Release`
(θ + N(0, σ_X² I_d) and its event). Audits and the experiments call it many times without refitting;
the estimators draw the same noise through their ``Releaser``.

σ_X depends on the data through ⟨X⟩: it is never stored or released. ``noise_scale`` is an
explicitly non-private diagnostic; ``noise_bound`` is a data-independent upper bound.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_array, check_scalar, param_error
from privrl.errors import InvalidParameterError, PrivacyLeakWarning, UtilityWarning
from privrl.least_squares.calibration import EPSILON_CAP, SmoothedGaussian, smoothed_gaussian
from privrl.least_squares.diagnostics import (
    NOISE_DOMINATED_RMS,
    directions_kept,
    noise_exceeds_signal,
    outside_noise_variance,
    outside_rms,
)
from privrl.least_squares.smooth_sensitivity import psi_lambda, psi_w
from privrl.least_squares.statistics import VisitStatistics
from privrl.privacy.release import Release, release_with_event

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["lsw_solve", "lsl_solve", "lambda_min", "DPLSWMechanism", "DPLSLMechanism", "check_features",
           "warn_if_overspent", "release_utility", "warn_utility"]


# =========================================================================== solvers
#: the singular values of the last few matrices seen (public: features, weighted features); a sweep
#: over budgets or ``privrl plan``'s knob search builds the mechanism of the same Φ many times
_SINGULAR_VALUES: OrderedDict[tuple[object, ...], np.ndarray] = OrderedDict()
_CACHED_MATRICES = 8


def _spectral(matrix: np.ndarray) -> np.ndarray:
    """The singular values of ``matrix`` (descending), remembered for the last few matrices."""
    arr = np.ascontiguousarray(matrix, dtype=float)
    key = (arr.shape, hashlib.blake2b(arr.tobytes(), digest_size=16).digest())
    sv = _SINGULAR_VALUES.get(key)
    if sv is None:
        sv = np.linalg.svd(arr, compute_uv=False)
        sv.setflags(write=False)
        _SINGULAR_VALUES[key] = sv
        while len(_SINGULAR_VALUES) > _CACHED_MATRICES:
            _SINGULAR_VALUES.popitem(last=False)
    else:
        _SINGULAR_VALUES.move_to_end(key)
    return sv


def lsw_solve(mean_returns: np.ndarray, features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """θ^w_X = (Γ^{1/2} Φ)^† Γ^{1/2} F_X (eq. 8), Γ = diag(w). Γ^{1/2}Φ must have full column rank."""
    root = np.sqrt(weights)
    theta, *_ = np.linalg.lstsq(root[:, None] * features, root * mean_returns, rcond=None)
    return theta


def lsl_solve(mean_returns: np.ndarray, counts: np.ndarray, m: int, features: np.ndarray,
              relevance: np.ndarray, lam: float) -> np.ndarray:
    """θ^λ_X = (Φᵀ Γ_X Φ + λ/(2m) I)^{-1} Φᵀ Γ_X F_X with Γ_X = diag(ρ_s |X_s| / m) (eq. 11)."""
    g = relevance * counts / m
    gram = features.T @ (g[:, None] * features)
    gram[np.diag_indices_from(gram)] += lam / (2.0 * m)
    return np.linalg.solve(gram, features.T @ (g * mean_returns))


def lambda_min(features: np.ndarray, relevance: np.ndarray) -> float:
    """λ_min = ‖Φ‖² ‖ρ‖∞ (spectral norm): DP-LSL needs λ > λ_min (Corollary 8)."""
    return float(_spectral(np.asarray(features, float))[0] ** 2 * np.max(relevance))


def check_features(features: object, name: str, owner: str) -> np.ndarray:
    """Φ as a non-empty finite (n_states, d) float array."""
    phi = check_array(features, name, owner=owner, ndim=2)
    if phi.shape[0] == 0 or phi.shape[1] == 0:
        raise param_error(name, owner, "a non-empty (n_states, d) matrix", phi.shape)
    return phi


def _positive(value: float, name: str, owner: str) -> float:
    return check_scalar(value, name, owner=owner, low=0.0, closed="neither")


# =========================================================================== mechanisms
@dataclass(frozen=True)
class _SmoothedRelease:
    """θ + N(0, σ_X² I_d) with σ_X = α · C · √ψ_X (C public, ψ_X the β-smooth bound; Lemma 1)."""

    features: np.ndarray
    F_max: float
    smoothed: SmoothedGaussian
    scale: float = 0.0  # the public C of σ_X = α C √ψ_X

    @property
    def is_private(self) -> bool:
        return self.smoothed.is_private

    @property
    def event(self) -> DpEvent:
        """The ledger entry of one release (``ApproxDpEvent(ε spent, δ)``; non-private for ε = ∞)."""
        return self.smoothed.event

    def _psi(self, counts: np.ndarray, m: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _psi_max(self, m: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def solve(self, stats: VisitStatistics) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def noise_scale(self, counts: np.ndarray, m: int) -> float:
        """σ_X = α C √ψ_X (Algorithms 1–2, line 4; ψ rounded up to e^{jβ} under the tight
        calibration). **Data-dependent, not private**: a diagnostic only."""
        if not self.is_private:
            return 0.0
        sg = self.smoothed
        return sg.alpha * self.scale * math.sqrt(sg.round_psi(self._psi(counts, m)))

    def noise_bound(self, m: int) -> float:
        """A data-independent upper bound on σ_X for batches of m trajectories (ψ at its global
        maximum, i.e. the smooth bound of a signature that no neighbour sequence can raise)."""
        if not self.is_private:
            return 0.0
        sg = self.smoothed
        return sg.alpha * self.scale * math.sqrt(sg.round_psi(self._psi_max(m)))

    @property
    def overspends(self) -> bool:
        """Whether one release spends more than the target ε (possible only under
        ``calibration='paper'``: the printed constants are not (ε, δ)-DP for every d)."""
        sg = self.smoothed
        return sg.epsilon_spent > min(sg.epsilon, EPSILON_CAP) * (1 + 1e-9)

    def release(self, theta: Any, counts: np.ndarray, m: int, *, noise: Any) -> Release:
        """θ + N(0, σ_X² I) through the release seam, with this mechanism's event. ``theta`` may
        carry leading batch axes (one independent draw per row); ``noise`` is a NoiseSource."""
        sigma = self.noise_scale(counts, m)
        return release_with_event(theta, std=sigma, event=self.event, noise=noise)


def warn_if_overspent(mech: _SmoothedRelease, owner: str, *, stacklevel: int = 1) -> None:
    """A :class:`~privrl.errors.PrivacyLeakWarning` when ``mech`` spends more than its target ε
    (:attr:`_SmoothedRelease.overspends`); the ledger records the certified ε either way.
    ``stacklevel`` counts from the caller (1: the line that calls this function)."""
    if mech.overspends:
        sg = mech.smoothed
        warnings.warn(f"{owner}: calibration='paper' uses the printed smoothing constants, which are not "
                      f"({sg.epsilon}, {sg.delta})-DP here (d = {sg.d}); the ledger records the certified "
                      f"epsilon = {sg.epsilon_spent:.4g}. Use calibration='tight' or 'sound'.",
                      PrivacyLeakWarning, stacklevel=stacklevel + 1)


def _smoothed(epsilon: float, delta: float, d: int, calibration: str, smoothing: str, constants: str,
              owner: str) -> SmoothedGaussian:
    return smoothed_gaussian(epsilon, delta, d, calibration=calibration, smoothing=smoothing,
                             constants=constants, owner=owner)


@dataclass(frozen=True)
class DPLSWMechanism(_SmoothedRelease):
    """The release step of DP-LSW (Algorithm 1) for fixed public Φ, w, F_max and budget.

    Derivation of σ_X (lines 2–4): by eq. (13) and Corollary 3, for every neighbour X' of X,
    ‖θ^w_X − θ^w_X'‖₂ ≤ ‖(Γ^{1/2}Φ)^†‖ · F_max · √φ^w(⟨X⟩), with φ^w(v) = Σ_s w_s / max(v_s, 1)².
    σ_X = α F_max ‖(Γ^{1/2}Φ)^†‖ √ψ^w_X, with ψ^w the smallest β-smooth upper bound of φ^w
    (Lemma 5), satisfies Lemma 1's conditions (a) and (b); (α, β) come from the calibration
    (:func:`~privrl.least_squares.calibration.smoothed_gaussian`). ‖·‖ is the spectral norm:
    ‖(Γ^{1/2}Φ)^†‖ = 1 / σ_min(Γ^{1/2}Φ).
    """

    weights: np.ndarray = field(kw_only=True)

    @property
    def pinv_norm(self) -> float:
        """‖(Γ^{1/2}Φ)^†‖ (public)."""
        return self.scale / self.F_max

    @classmethod
    def create(cls, *, features: Any, weights: Any, F_max: float, epsilon: float, delta: float,
               calibration: str = "tight", smoothing: str = "main_text", constants: str = "theory",
               owner: str = "DPLSWMechanism") -> DPLSWMechanism:
        phi = check_features(features, "features", owner)
        w = check_array(weights, "weights", owner=owner, shape=(phi.shape[0],), low=0.0)
        sv = _spectral(np.sqrt(w)[:, None] * phi)
        if sv.size < phi.shape[1] or sv[-1] <= sv[0] * max(phi.shape) * np.finfo(float).eps:
            smallest = np.sort(np.concatenate([sv, np.zeros(phi.shape[1] - sv.size)]))[:8]
            raise InvalidParameterError(
                f"The 'features' and 'weights' parameters of {owner} must make Γ^1/2 Φ full column "
                f"rank (d = {phi.shape[1]}). Got smallest singular values {[float(f'{v:.3g}') for v in smallest]} "
                "instead: a feature that is zero on every state of positive weight cannot be fitted (give those "
                "states weight, or drop the feature)."
            )
        f_max = _positive(F_max, "F_max", owner)
        sg = _smoothed(epsilon, delta, phi.shape[1], calibration, smoothing, constants, owner)
        return cls(features=phi, F_max=f_max, smoothed=sg, scale=f_max / float(sv[-1]), weights=w)

    def _psi(self, counts: np.ndarray, m: int) -> float:
        return psi_w(counts, self.weights, self.smoothed.beta)

    def _psi_max(self, m: int) -> float:
        return float(self.weights.sum())  # φ^w_k(v) ≤ Σ_s w_s for every k (Lemma 5)

    def solve(self, stats: VisitStatistics) -> np.ndarray:
        return lsw_solve(stats.mean_returns, self.features, self.weights)


@dataclass(frozen=True)
class DPLSLMechanism(_SmoothedRelease):
    """The release step of DP-LSL (Algorithm 2) for fixed public Φ, ρ, λ, F_max and budget.

    Derivation of σ_X (lines 2–4): Corollary 8 gives, for λ > λ_min = ‖Φ‖²‖ρ‖∞ and every neighbour X',
    ‖θ^λ_X − θ^λ_X'‖₂ ≤ 2 F_max ‖Φ‖ / (λ − λ_min) · √φ^λ(⟨X⟩), with
    φ^λ(v) = (c_λ √(Σ_s ρ_s min(v_s, m)) + ‖ρ‖₂)², c_λ = ‖Φ‖ ‖ρ‖∞ / √(2λ) (``min``: typo fix A3).
    σ_X = α · 2 F_max ‖Φ‖ / (λ − λ_min) · √ψ^λ_X (Lemma 9 for ψ^λ) satisfies Lemma 1.
    """

    relevance: np.ndarray = field(kw_only=True)
    lam: float = 0.0
    phi_norm: float = 0.0

    @classmethod
    def create(cls, *, features: Any, relevance: Any, lam: float, F_max: float, epsilon: float,
               delta: float, calibration: str = "tight", smoothing: str = "main_text",
               constants: str = "theory", owner: str = "DPLSLMechanism") -> DPLSLMechanism:
        phi = check_features(features, "features", owner)
        rho = check_array(relevance, "relevance", owner=owner, shape=(phi.shape[0],), low=0.0, high=1.0)
        if not np.any(rho > 0):
            raise param_error("relevance", owner, "weights in [0, 1], not all zero", rho.tolist()[:8])
        f_max = _positive(F_max, "F_max", owner)
        phi_norm = float(_spectral(phi)[0])
        lam_low = phi_norm**2 * float(rho.max())
        sg = _smoothed(epsilon, delta, phi.shape[1], calibration, smoothing, constants, owner)
        if not sg.is_private:  # non-private LSL: any λ > 0
            lam = _positive(lam, "lam", owner)
            return cls(features=phi, F_max=f_max, smoothed=sg, relevance=rho, lam=lam, phi_norm=phi_norm)
        lam = check_scalar(lam, "lam", owner=owner)
        if not lam > lam_low:
            raise param_error("lam", owner, f"a float > ‖Φ‖²‖ρ‖∞ = {lam_low!r} (Corollary 8)", lam)
        return cls(features=phi, F_max=f_max, smoothed=sg, relevance=rho, lam=lam, phi_norm=phi_norm,
                   scale=2.0 * f_max * phi_norm / (lam - lam_low))

    @property
    def c_lambda(self) -> float:
        return self.phi_norm * float(self.relevance.max()) / math.sqrt(2.0 * self.lam)

    def _psi(self, counts: np.ndarray, m: int) -> float:
        return psi_lambda(counts, self.relevance, self.c_lambda, m, self.smoothed.beta)

    def _psi_max(self, m: int) -> float:  # φ^λ_k ≤ (c_λ √(m Σρ) + ‖ρ‖₂)² (Lemma 9)
        return (self.c_lambda * math.sqrt(m * float(self.relevance.sum()))
                + float(np.linalg.norm(self.relevance))) ** 2

    def solve(self, stats: VisitStatistics) -> np.ndarray:
        return lsl_solve(stats.mean_returns, stats.counts, stats.n_trajectories, self.features,
                         self.relevance, self.lam)


# =========================================================================== utility of a release
def release_utility(values: np.ndarray, f_max: float, mech: _SmoothedRelease, m: int, visits: int) -> dict[str, Any]:
    """The public utility diagnostics of a release V̂ = Φθ̂ (``values``) by ``mech`` on m trajectories
    (``visits``: a public bound on the distinct states one visits) (:mod:`~privrl.least_squares.diagnostics`):
    ``outside_rms`` (RMS distance of V̂ outside [0, F_max], in units of F_max), ``noise_dominated``
    (above :data:`NOISE_DOMINATED_RMS`: a noise std of at least F_max/2, no better than the constant
    F_max/2), ``no_better_than_zero`` (the noise variance read off the values outside [0, F_max]
    is at least the signal the values carry: :func:`~privrl.least_squares.diagnostics.noise_exceeds_signal`)
    and, for LSL, ``directions_kept`` (at most this many of the d directions keep 10% of
    their unregularised size) and ``shrunk`` (at most half do)."""
    out: dict[str, Any] = {"outside_rms": outside_rms(values, f_max)}
    out["noise_dominated"] = bool(mech.is_private and out["outside_rms"] >= NOISE_DOMINATED_RMS)
    out["no_better_than_zero"] = bool(mech.is_private and noise_exceeds_signal(
        values, outside_noise_variance(values, f_max)))
    if isinstance(mech, DPLSLMechanism):
        d = mech.features.shape[1]
        kept = directions_kept(mech.features, mech.relevance, mech.lam, m, visits, phi_norm=mech.phi_norm)
        out.update(directions_kept=kept, n_directions=d, shrunk=bool(2 * kept <= d))
    return out


def warn_utility(utility: dict[str, Any], mech: _SmoothedRelease, m: int, owner: str, *,
                 stacklevel: int = 1) -> None:
    """UtilityWarning for a degenerate release, judged on public quantities and the release only
    (:mod:`~privrl.least_squares.diagnostics`): (i) the released V̂ = Φθ̂ lies so far outside
    [0, F_max] that its noise std is at least F_max/2 — no better than the constant F_max/2;
    else (i') the noise variance that distance indicates is at least the values' signal — no
    better than the zero estimate; (ii) DP-LSL's ridge term leaves at most half of the directions
    of the fit 10% of their size. ``utility``: :func:`release_utility`'s; ``stacklevel`` counts
    from the caller (1: the line that calls this function)."""
    if utility["noise_dominated"]:
        warnings.warn(
            f"{owner}: the released estimate is no better than the constant F_max/2: its values lie so far outside "
            f"[0, F_max] (RMS {utility['outside_rms']:.2g} F_max) that the privacy noise has a standard deviation "
            "of at least F_max/2. More trajectories, a larger epsilon, a tighter public F_max, fewer features or "
            "state aggregation, weights that leave out rarely visited states, calibration='tight' or "
            "constants='practical' reduce it.", UtilityWarning, stacklevel=stacklevel + 1)
    elif utility.get("no_better_than_zero"):
        warnings.warn(
            f"{owner}: the released estimate is no better than the zero estimate: the spread of its values below 0 "
            f"and above F_max (RMS {utility['outside_rms']:.2g} F_max), which only the privacy noise produces, "
            "indicates a noise variance at least the signal the values carry (true values small next to the "
            "noise). More trajectories, a larger epsilon, fewer features or state aggregation, weights that leave "
            "out rarely visited states, calibration='tight' or constants='practical' reduce it.",
            UtilityWarning, stacklevel=stacklevel + 1)
    if utility.get("shrunk") and isinstance(mech, DPLSLMechanism):
        warnings.warn(
            f"{owner}: the estimate is shrunk towards zero by the ridge term "
            f"λ/(2m) = {mech.lam / (2 * m):.2g}: "
            f"whatever the data, at most {utility['directions_kept']} of its {utility['n_directions']} directions keep "
            "10% of their unregularised size. Use a smaller lam (λ = o(m)), constants='practical', larger "
            "weights on the states of interest, or fewer features.", UtilityWarning, stacklevel=stacklevel + 1)
