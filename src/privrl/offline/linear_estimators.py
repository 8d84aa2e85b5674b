"""The estimators of Qiao & Wang (2023) for linear MDPs: PEVI, VAPVI and DP-VAPVI (Algorithm 2) —
thin shells that validate, call the kernel of :mod:`privrl.offline.linear` with the noise plans of
:mod:`privrl.offline.calibration`, and keep the fitted state (the tabular ones, Algorithm 1, are in
:mod:`privrl.offline.estimators`, which re-exports these).

Privacy unit: one trajectory, replace-one neighbours, dataset size public (each class's docstring
names its guarantee; the sensitivities are derived in the kernel module).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from privrl._rng import RngLike
from privrl._validation import param_error
from privrl.base import CONSTANTS, Estimator, PrivateEstimator, param
from privrl.errors import InvalidDataError, PrivacyLeakWarning, UtilityWarning
from privrl.offline._common import (
    Statistics,
    check_public_shape,
    check_reward_bounds,
    check_statistics,
    degenerate_output,
    padded_episodes,
    transition_statistics,
    warn_degenerate,
)
from privrl.offline.calibration import LinearNoise, linear_noise, linear_noise_to_signal
from privrl.offline.linear import LINEAR_PRESETS, LinearFit, check_features, linear_pessimistic_vi
from privrl.planning import HOPELESS
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["PEVI", "VAPVI", "DPVAPVI"]


# --------------------------------------------------------------------------- linear (Algorithm 2)
def _knob(help_text: str, low: float = 0.0, closed: str = "left") -> Any:
    return param(f"{help_text} (None: from the 'constants' preset)", default=None, low=low, closed=closed,
                 none_ok=True)


LAM = _knob("ridge parameter λ (the presets give it in units of feature_norm_bound²)", closed="neither")
FEATURE_BOUND = param("declared max ||phi(s,a)||_2 (privacy relies on it)", default=1.0, low=0.0,
                      closed="neither")
SPLIT = param("two halves as in Algorithm 2 (False: all data in both stages, as in the paper's experiments)",
              default=True, kind="bool")
C_PARAM = _knob("penalty constant C of C·sqrt(d)·||phi||_{Λ⁻¹}")
D_PARAM = _knob("additive penalty D (term D/K)")


class _LinearBase(Estimator):
    """Shared ``fit(dataset, features)`` for PEVI, VAPVI and DP-VAPVI."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    _knob_hint = ("The penalty exceeds the estimated values: lower C / beta or use constants='practical', "
                  "or collect more data.")

    def _constants(self, p: dict[str, Any]) -> dict[str, float]:
        preset = LINEAR_PRESETS[p["constants"]]
        out = {k: (preset[k] if p[k] is None else float(p[k])) for k in preset if k in p}
        if p["lam"] is None:    # the presets' λ is in units of B²; an explicit lam is used as given
            out["lam"] *= float(p["feature_norm_bound"]) ** 2
        return out

    def _prepare(self, p: dict[str, Any], dataset: object, features: object, *, split: bool | None
                 ) -> tuple[np.ndarray, Statistics, Statistics | None, int]:
        """(features, statistics of the regression data, of the variance data or None, K)."""
        owner = type(self).__name__
        phi = check_features(features, owner, float(p["feature_norm_bound"]))
        S, A, _ = phi.shape
        check_public_shape(dataset, S, A, "features", "({S}, {A}, d)", phi.shape, owner)
        if isinstance(dataset, Statistics):
            K = check_statistics(dataset, owner, n_states=S, n_actions=A)
            check_reward_bounds(dataset, owner, r_max=1.0)
            if split:
                raise param_error("split", owner, "False when the data are given as Statistics (the halves of "
                                  "Algorithm 2 need the trajectories)", split)
            return phi, dataset, (None if split is None else dataset), K
        data = padded_episodes(dataset, owner, n_states=S, n_actions=A)
        if split is None:
            return phi, transition_statistics(data, S, A), None, data["actions"].shape[0]
        if not split:
            stats = transition_statistics(data, S, A)
            return phi, stats, stats, data["actions"].shape[0]
        K = data["actions"].shape[0]
        if K < 2:
            raise InvalidDataError(f"{owner}: split=True needs at least 2 trajectories. Got {K} instead.")
        half = (K + 1) // 2
        first = transition_statistics({k: v[:half] for k, v in data.items()}, S, A)
        second = transition_statistics({k: v[half:] for k, v in data.items()}, S, A)
        return phi, first, second, half

    def _store(self, fit: LinearFit) -> None:
        self.policy_ = fit.policy
        self.values_ = fit.values
        self.q_values_ = fit.q_values
        self.weights_ = fit.weights
        self.variances_ = fit.variances
        self.pd_guard_count_ = fit.pd_guard_count
        warn_degenerate(type(self).__name__, degenerate_output(fit.q_values, fit.policy), self._knob_hint)


class PEVI(_LinearBase):
    """Pessimistic value iteration (Jin et al. 2021): ridge regression, penalty ``β ||φ||_{Λ⁻¹}``.

    ``beta``, ``lam`` from ``constants`` (theory: β = 0.1, the spec's reproduction value — the
    theory's ``c d H sqrt(log(2dHK/ξ))`` is far more pessimistic — and λ = 1·B²) unless given.
    ``fit(dataset, features)`` with features ``(S, A, d)`` (or a LinearMDP, or a TabularMDP: one-hot).
    """

    guarantee = None
    constants: str = CONSTANTS
    beta: float | None = _knob("penalty β of β·||phi||_{Λ⁻¹}")
    lam: float | None = LAM
    feature_norm_bound: float = FEATURE_BOUND

    def fit(self, dataset: object, features: object, *, rng: RngLike = None) -> PEVI:
        p = self._validated()
        k = self._constants(p)
        phi, stats, _, _ = self._prepare(p, dataset, features, split=None)
        self.privacy_ledger_ = Ledger()
        self._store(linear_pessimistic_vi(phi, stats, None, lam=k["lam"], penalty_coef=k["beta"], additive=0.0))
        return self


class VAPVI(_LinearBase):
    """Variance-aware pessimistic value iteration (Yin et al. 2022): Algorithm 2 without noise.

    Penalty ``C sqrt(d) ||φ||_{Λ̂⁻¹} + D/K`` (``K`` = trajectories in the regression half); ``C, D,
    lam`` from ``constants`` unless given (Yin et al.'s additive ``2H³√d/K`` term is exposed through
    ``D``); ``split=True`` (two halves as in the theory; ``split=False`` uses all data twice, as in
    the paper's experiments). All are public, data-independent parameters.
    """

    guarantee = None
    constants: str = CONSTANTS
    C: float | None = C_PARAM
    D: float | None = D_PARAM
    lam: float | None = LAM
    split: bool = SPLIT
    feature_norm_bound: float = FEATURE_BOUND

    def fit(self, dataset: object, features: object, *, rng: RngLike = None) -> VAPVI:
        p = self._validated()
        k = self._constants(p)
        phi, stats, stats_bar, K = self._prepare(p, dataset, features, split=p["split"])
        self.privacy_ledger_ = Ledger()
        self._store(linear_pessimistic_vi(phi, stats, stats_bar, lam=k["lam"], penalty_coef=k["C"] * math.sqrt(
            phi.shape[2]), additive=k["D"] / K))
        return self


class DPVAPVI(PrivateEstimator, _LinearBase):
    """DP-VAPVI (Qiao & Wang 2023, Algorithm 2): ρ-zCDP or (ε, δ)-DP, one trajectory replaced.

    ``budget``: a ρ budget or (ε, δ > 0). ``calibration`` "tight" (default: exact μ, per-step
    sensitivities, error-minimising split), "sound" (ρ0 = ρ/(5H), replace-one-safe matrices) or
    "paper" (the printed matrix noise ``Var Z_ij = 1/(4ρ0)``: spends 1.4ρ under replace-one, recorded
    in the ledger, warned about, labelled) — :mod:`privrl.offline.calibration`. ``delta_fail`` sets the
    shift ``E``; ``C, D, lam, split, delta_fail`` never change the noise scales. With an infinite
    budget no noise is added and the result equals :class:`VAPVI` exactly.
    """

    constants: str = CONSTANTS
    C: float | None = C_PARAM
    D: float | None = D_PARAM
    lam: float | None = LAM
    lam_shift: float | None = _knob("ridge added per unit of the public PSD shift E: λ = lam + lam_shift·E")
    delta_fail: float = param("failure probability of the PSD shift E (not a DP δ)", default=0.05, low=0.0,
                              high=1.0, closed="neither")
    split: bool = SPLIT
    feature_norm_bound: float = FEATURE_BOUND

    @property
    def guarantee(self) -> str:  # type: ignore[override]
        """``"rho-zCDP"`` for a ρ budget, ``"(epsilon, delta)-DP"`` for an (ε, δ) budget."""
        budget = getattr(self, "budget", None)
        return "rho-zCDP" if isinstance(budget, PrivacyBudget) and budget.rho is not None else "(epsilon, delta)-DP"

    def linear_noise(self, horizon: int, d: int) -> LinearNoise:
        """The noise plan of a fit with this horizon and feature dimension (public: no data needed)."""
        p = self._validated()
        return linear_noise(horizon, d, p["budget"], calibration=p["calibration"],
                            feature_norm_bound=float(p["feature_norm_bound"]), delta_fail=p["delta_fail"],
                            owner=type(self).__name__)

    def fit(self, dataset: object, features: object, *, rng: RngLike = None) -> DPVAPVI:
        p = self._validated()
        rng = self._fit_rng(rng)
        k = self._constants(p)
        phi, stats, stats_bar, K = self._prepare(p, dataset, features, split=p["split"])
        H = stats.horizon
        noise = self.linear_noise(H, phi.shape[2])
        k["lam"] += k["lam_shift"] * 2.0 * float(noise.shift.max())
        n_units = K if stats_bar is None or stats_bar is stats else K + stats_bar.n_episodes
        rel = self._privacy(rng, n_units=n_units)   # the fit draws no other randomness
        if p["calibration"] == "paper" and noise.is_private:
            warnings.warn("DPVAPVI calibration='paper' uses the add/remove matrix noise of the paper: under "
                          "replace-one neighbours it spends 1.4*rho (recorded in privacy_ledger_).",
                          PrivacyLeakWarning, stacklevel=2)
        fit = linear_pessimistic_vi(phi, stats, stats_bar, lam=k["lam"], penalty_coef=k["C"] * math.sqrt(phi.shape[2]),
                                    additive=k["D"] / K, noise=noise if noise.is_private else None, rel=rel)
        self.noise_std_ = noise.std
        self.noise_shift_ = noise.shift
        self._store(fit)
        if noise.is_private:
            _warn_noise_dominated(type(self).__name__, noise, K, float(p["feature_norm_bound"]), phi.shape[2])
        return self


def _warn_noise_dominated(owner: str, noise: LinearNoise, K: int, feature_norm_bound: float, d: int) -> None:
    """UtilityWarning when a released stream's noise is at least half its typical value (the
    ``hopeless`` threshold of ``privrl plan``): a Gram matrix whose noise E/2 reaches K·B²/d, or a
    vector whose σ reaches K·Δ/(4√d) (:func:`~privrl.offline.calibration.linear_noise_to_signal`).
    The policy is then driven by the noise, e.g. worse than the logging policy although every
    Q-value is positive. Public quantities only (K, B, d and the noise plan): nothing is released."""
    worst = max(linear_noise_to_signal(noise, K, feature_norm_bound, d), key=lambda s: s.ratio)
    if worst.ratio >= HOPELESS:
        warnings.warn(f"{owner}: noise-dominated release: the noise of '{worst.name}' ({worst.noise:.3g}, step "
                      f"{worst.h}) is {worst.ratio:.3g}x its typical value ({worst.signal:.3g}: K = {K} regression "
                      f"trajectories, d = {d} features of norm <= {feature_norm_bound:g}), so the learned policy is "
                      "driven by the noise. More data, fewer features or a larger budget reduce it "
                      "(privrl plan dp-vapvi says which is enough).", UtilityWarning, stacklevel=3)

