"""PEVI, VAPVI and DP-VAPVI (Qiao & Wang 2023, Section 4, Algorithm 2) — linear MDPs.

One backward-induction kernel, :func:`linear_pessimistic_vi`, serves all three:

* PEVI (Jin et al. 2021): unweighted ridge regression, penalty ``β ||φ||_{Λ^{-1}}``;
* VAPVI (Yin et al. 2022): first stage (lines 4–8) estimates ``Var_h Ṽ_{h+1}``, second stage
  (lines 9–10) is variance-weighted ridge regression, penalty ``C√d ||φ||_{Λ^{-1}} + D/K``;
* DP-VAPVI: VAPVI where the five statistics of every step are released by Gaussian mechanisms
  (:func:`linear_mechanisms`), i.e. 5H releases of ρ0 = ρ/(5H) each.

The features are a public table ``φ(s, a)`` of shape ``(S, A, d)`` over a finite state set and a
finite action set (the greedy step and ``Ṽ_{h+1}(s')`` need ``φ(s', a)`` for every action).

Privacy unit: one trajectory, replace-one neighbours, dataset size public. Assumptions that privacy
relies on, all validated: ``||φ(s,a)||_2 <= B`` (``feature_norm_bound``), rewards in [0, 1].
At step h (0-indexed, ``Ṽ_{h+1} <= H − h − 1``, ``σ̃² >= 1``) one replacement changes one term of
each sum, so the sensitivities are

=========================================  ============  ==============================
statistic (per step h)                     ℓ2 sens. Δ    σ (sound)
=========================================  ============  ==============================
``Σ φ̄ Ṽ²_{h+1}``                           ``2 B H²``    ``Δ/sqrt(2ρ0)`` = sqrt(2H⁴/ρ0)
``Σ φ̄ Ṽ_{h+1}``                            ``2 B H``     ``Δ/sqrt(2ρ0)`` = sqrt(2H²/ρ0)
``Σ φ (r + Ṽ_{h+1}) / σ̃²``                 ``2 B H``     ``Δ/sqrt(2ρ0)``
``Σ φ̄φ̄ᵀ`` and ``Σ φφᵀ/σ̃²`` (Frobenius)     ``sqrt(2) B²``  see below
=========================================  ============  ==============================

(the σ column for B = 1). Matrix noise: the paper's ``(Z + Zᵀ)/√2`` with ``Z_ij ~ N(0, s²)``
(diagonal variance ``2s²``, off-diagonal ``s²``) is exactly the Gaussian mechanism on the vector
``T(M) = (M_ii, √2 M_ij)_{i<j}``, whose ℓ2 norm is ``||M||_F``, with σ = √2 s; we release it with
:class:`~privrl.privacy.SymmetricGaussianMatrixMechanism` on ``T(M)`` and undo ``T`` (post-processing).
Under replacement ``||φφᵀ − ψψᵀ||_F <= sqrt(2) B²`` (spec A-L3), so the sound calibration takes
``σ = sqrt(2) B² / sqrt(2ρ0)`` (``s² = B⁴/(2ρ0)``). ``calibration="paper"`` uses the paper's printed
``s² = 1/(4ρ0)`` (an add/remove sensitivity of 1): the ledger then records the true replace-one
cost, 2ρ0 per matrix, i.e. ``1.4ρ`` in total, and the fit is labelled "paper".
The data-independent shift ``(E/2) I`` with ``E = 4 s (sqrt(d) + sqrt(log(10H/δ)))`` keeps each noisy
matrix PSD w.p. ≥ 1 − δ/(5H) (spec §3.1); if a matrix is still not PD its eigenvalues are clipped
at λ (post-processing, counted in ``pd_guard_count_``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_option, check_scalar, param_error
from privrl.offline._common import budget_to_rho, check_budget, greedy, padded_episodes
from privrl.base import Estimator
from privrl.errors import InvalidDataError, PrivacyLeakWarning
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.mechanisms import GaussianMechanism, SymmetricGaussianMatrixMechanism

__all__ = ["PEVI", "VAPVI", "DPVAPVI", "LinearFit", "LinearNoise", "linear_mechanisms", "release_statistic",
           "matrix_noise_bound", "linear_pessimistic_vi", "theory_L", "theory_D", "check_features"]

_SQRT2 = math.sqrt(2.0)


# --------------------------------------------------------------------------- noise
def matrix_noise_bound(d: int, horizon: int, s: float, delta_fail: float) -> float:
    """``E = 4 s (sqrt(d) + sqrt(log(10H/δ)))``: ``||(Z+Zᵀ)/√2||_2 <= E/2`` w.p. ≥ 1 − δ/(5H) when
    ``Z_ij ~ N(0, s²)`` (Sudakov–Fernique + Gaussian concentration; spec §3.1, our explicit
    replacement of Lemma D.2's unspecified constants). With ``s = 1/(2 sqrt(ρ0))`` this is the spec's
    ``2(sqrt(d) + sqrt(log(10H/δ)))/sqrt(ρ0)``."""
    return 4.0 * s * (math.sqrt(d) + math.sqrt(math.log(10.0 * horizon / delta_fail)))


class LinearNoise(NamedTuple):
    """The five mechanisms of one step and the public shift ``E`` (Algorithm 2, line 2)."""

    gram_bar: SymmetricGaussianMatrixMechanism   # K1 on Σ φ̄φ̄ᵀ
    second_moment: GaussianMechanism             # φ1 on Σ φ̄ Ṽ²
    first_moment: GaussianMechanism              # φ2 on Σ φ̄ Ṽ
    gram: SymmetricGaussianMatrixMechanism       # K2 on Σ φφᵀ/σ̃²
    target: GaussianMechanism                    # φ3 on Σ φ (r + Ṽ)/σ̃²
    shift: float                                 # E (K_i = (E/2) I + noise)


def linear_mechanisms(horizon: int, d: int, rho: float, *, delta_fail: float = 0.05,
                      calibration: str = "sound", feature_norm_bound: float = 1.0) -> LinearNoise:
    """The mechanisms of Algorithm 2 for budget ρ: ρ0 = ρ/(5H) per statistic (see module docstring)."""
    H, B = horizon, feature_norm_bound
    rho0 = rho / (5.0 * H)
    vec_std = 1.0 / math.sqrt(2.0 * rho0)           # σ/Δ for a ρ0-zCDP Gaussian release
    # s = std of Z_ij: sound = replace-one Frobenius sensitivity sqrt(2)B², paper = 1/(2 sqrt(ρ0))
    s = B * B / math.sqrt(2.0 * rho0) if calibration == "sound" else 1.0 / (2.0 * math.sqrt(rho0))
    shift = matrix_noise_bound(d, H, s, delta_fail)

    def matrix() -> SymmetricGaussianMatrixMechanism:
        return SymmetricGaussianMatrixMechanism(sensitivity=_SQRT2 * B * B, noise_std=_SQRT2 * s,
                                                shift=shift / 2.0)

    return LinearNoise(
        gram_bar=matrix(),
        second_moment=GaussianMechanism(sensitivity=2.0 * B * H * H, noise_std=2.0 * B * H * H * vec_std),
        first_moment=GaussianMechanism(sensitivity=2.0 * B * H, noise_std=2.0 * B * H * vec_std),
        gram=matrix(),
        target=GaussianMechanism(sensitivity=2.0 * B * H, noise_std=2.0 * B * H * vec_std),
        shift=shift,
    )


def _release_matrix(mech: SymmetricGaussianMatrixMechanism, M: np.ndarray, rng: np.random.Generator):
    """The paper's ``M + (E/2) I + (Z+Zᵀ)/√2`` as the Gaussian mechanism on ``T(M)`` (post-processed)."""
    off = ~np.eye(M.shape[0], dtype=bool)
    scaled = np.where(off, M * _SQRT2, M)
    noisy, event = mech.release(scaled, rng=rng)
    return np.where(off, noisy / _SQRT2, noisy), event


def release_statistic(noise: LinearNoise, kind: str, value: np.ndarray, rng: np.random.Generator):
    """Release one statistic of Algorithm 2 (``kind`` is a field of :class:`LinearNoise`):
    ``(noisy value, DpEvent)``. A pure function of the statistic and ``rng`` (for audits)."""
    mech = getattr(noise, kind)
    if isinstance(mech, SymmetricGaussianMatrixMechanism):
        return _release_matrix(mech, value, rng)
    return mech.release(value, rng=rng)


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
    events: list


def _pd_inverse_parts(M: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """Eigen-decomposition of the symmetrised M with eigenvalues clipped at ``floor`` (PD guard)."""
    w, U = np.linalg.eigh((M + M.T) / 2.0)
    fired = bool(w.min() < floor * (1.0 - 1e-9))
    return np.maximum(w, floor), U, fired


def _solve(w: np.ndarray, U: np.ndarray, b: np.ndarray) -> np.ndarray:
    return U @ ((U.T @ b) / w)


def linear_pessimistic_vi(features: np.ndarray, data: dict[str, np.ndarray], data_bar: dict[str, np.ndarray] | None,
                          *, lam: float, penalty_coef: float, additive: float, noise: LinearNoise | None = None,
                          rng: np.random.Generator | None = None) -> LinearFit:
    """Algorithm 2 lines 3–15 (variance-aware when ``data_bar`` is given, PEVI otherwise).

    ``features`` ``(S, A, d)``; ``data``/``data_bar`` hold ``(K, H)`` ``observations, actions,
    rewards, next_observations``. ``noise`` (or None for the non-private algorithms) releases
    the five statistics of each step; every other quantity is computed from released values.
    Penalty: ``penalty_coef * sqrt(φᵀ Λ̃⁻¹ φ) + additive``.
    """
    S, A, d = features.shape
    K, H = data["actions"].shape
    flat = features.reshape(S * A, d)
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    W = np.zeros((H, d))
    sig2 = np.ones((H, S, A))
    events: list = []
    guards = 0
    eye = lam * np.eye(d)

    def release(kind: str, value: np.ndarray) -> np.ndarray:
        if noise is None:
            return value
        out, ev = release_statistic(noise, kind, value, rng)  # type: ignore[arg-type]
        events.append(ev)
        return out

    # Sufficient statistics: with finitely many (s, a) pairs every sum over trajectories is a sum
    # over pairs, Σ_k φ(s_k,a_k) y_k = Φᵀ bincount(pair, y) and Σ_k φφᵀ w(s_k,a_k) = Φᵀ diag(c·w) Φ.
    SA = S * A

    def sums(d_: dict[str, np.ndarray], h: int, values: np.ndarray | None) -> np.ndarray:
        pair = d_["observations"][:, h] * A + d_["actions"][:, h]
        return np.bincount(pair, weights=values, minlength=SA)

    for h in range(H - 1, -1, -1):
        cap = float(H - h)
        v_next = V[h + 1]
        if data_bar is not None:      # first stage, lines 4–8
            vb = v_next[data_bar["next_observations"][:, h]]
            counts_bar = sums(data_bar, h, None)
            ew, EU, fired = _pd_inverse_parts(release("gram_bar", flat.T @ (flat * counts_bar[:, None])) + eye, lam)
            guards += fired
            beta = _solve(ew, EU, release("second_moment", flat.T @ sums(data_bar, h, vb * vb)))
            theta = _solve(ew, EU, release("first_moment", flat.T @ sums(data_bar, h, vb)))
            var = np.clip(features @ beta, 0.0, cap * cap) - np.clip(features @ theta, 0.0, cap) ** 2
            sig2[h] = np.maximum(1.0, var)
        inv_s2 = 1.0 / sig2[h].ravel()
        y = data["rewards"][:, h] + v_next[data["next_observations"][:, h]]
        gram = flat.T @ (flat * (sums(data, h, None) * inv_s2)[:, None])
        lw, LU, fired = _pd_inverse_parts(release("gram", gram) + eye, lam)
        guards += fired
        W[h] = _solve(lw, LU, release("target", flat.T @ (sums(data, h, y) * inv_s2)))
        quad = (((flat @ LU) ** 2) / lw).sum(axis=1).reshape(S, A)
        gamma = penalty_coef * np.sqrt(quad) + additive
        Q[h] = np.clip(features @ W[h] - gamma, 0.0, cap)
        _, V[h] = greedy(Q[h])
    return LinearFit(np.argmax(Q, axis=-1), V, Q, W, sig2, guards, events)


# --------------------------------------------------------------------------- estimators
def check_features(features: Any, owner: str, bound: float) -> np.ndarray:
    """A public ``(S, A, d)`` feature table with ``max ||φ(s,a)||_2 <= bound`` (raises otherwise)."""
    if hasattr(features, "features") and not isinstance(features, np.ndarray):
        features = features.features
    phi = check_array(features, "features", owner=owner, ndim=3)
    norm = float(np.sqrt((phi**2).sum(axis=-1)).max()) if phi.size else 0.0
    if norm > bound * (1.0 + 1e-12):
        raise InvalidDataError(
            f"{owner}: the feature norms must be at most feature_norm_bound={bound!r} (privacy relies on "
            f"it). Got max ||phi(s,a)||_2 = {norm!r} instead; rescale the features by a public constant.")
    return phi


class _LinearBase(Estimator):
    """Shared ``fit(dataset, features)`` for PEVI, VAPVI and DP-VAPVI."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    lam: float
    feature_norm_bound: float

    def _prepare(self, dataset: Any, features: Any) -> tuple[np.ndarray, dict, dict | None]:
        owner = type(self).__name__
        bound = check_scalar(self.feature_norm_bound, "feature_norm_bound", owner=owner, low=0.0, closed="neither")
        check_scalar(self.lam, "lam", owner=owner, low=0.0, closed="neither")
        phi = check_features(features, owner, bound)
        S, A, _ = phi.shape
        data = padded_episodes(dataset, owner, n_states=S, n_actions=A)
        split = getattr(self, "split", None)
        if split is None:
            return phi, data, None
        if not isinstance(split, bool):
            raise param_error("split", owner, "a bool", split)
        if not split:
            return phi, data, data
        K = data["actions"].shape[0]
        if K < 2:
            raise InvalidDataError(f"{owner}: split=True needs at least 2 trajectories. Got {K} instead.")
        half = (K + 1) // 2
        return (phi, {k: v[:half] for k, v in data.items()}, {k: v[half:] for k, v in data.items()})

    def _store(self, fit: LinearFit, events: list) -> None:
        self.policy_ = fit.policy
        self.values_ = fit.values
        self.q_values_ = fit.q_values
        self.weights_ = fit.weights
        self.variances_ = fit.variances
        self.pd_guard_count_ = fit.pd_guard_count
        self.privacy_ledger_ = Ledger(events)


class PEVI(_LinearBase):
    """Pessimistic value iteration (Jin et al. 2021): ridge regression, penalty ``β ||φ||_{Λ⁻¹}``.

    ``beta`` (default 0.1, the spec's reproduction value; the theory's ``c d H sqrt(log(2dHK/ξ))``
    is far more pessimistic), ``lam`` (λ = 1) and ``feature_norm_bound`` are public constants.
    ``fit(dataset, features)`` with features ``(S, A, d)`` (or a model with ``.features``).
    """

    def __init__(self, *, beta: float = 0.1, lam: float = 1.0, feature_norm_bound: float = 1.0) -> None:
        self.beta = beta
        self.lam = lam
        self.feature_norm_bound = feature_norm_bound

    def fit(self, dataset: Any, features: Any, *, rng: RngLike = None) -> PEVI:
        beta = check_scalar(self.beta, "beta", owner="PEVI", low=0.0)
        phi, data, _ = self._prepare(dataset, features)
        fit = linear_pessimistic_vi(phi, data, None, lam=float(self.lam), penalty_coef=beta, additive=0.0)
        self._store(fit, [])
        return self


class VAPVI(_LinearBase):
    """Variance-aware pessimistic value iteration (Yin et al. 2022): Algorithm 2 without noise.

    Penalty ``C sqrt(d) ||φ||_{Λ̂⁻¹} + D/K`` (``K`` = trajectories in the regression half). ``C = 0.1``,
    ``D = 0`` (Yin et al.'s additive ``2H³√d/K`` term is exposed through ``D``), ``λ = 1``,
    ``split=True`` (two halves as in the theory; ``split=False`` uses all data twice, as in the
    paper's experiments). All are public, data-independent parameters.
    """

    def __init__(self, *, C: float = 0.1, D: float = 0.0, lam: float = 1.0, split: bool = True,
                 feature_norm_bound: float = 1.0) -> None:
        self.C = C
        self.D = D
        self.lam = lam
        self.split = split
        self.feature_norm_bound = feature_norm_bound

    def _penalty(self, d: int, K: int) -> tuple[float, float]:
        owner = type(self).__name__
        C = check_scalar(self.C, "C", owner=owner, low=0.0)
        D = check_scalar(self.D, "D", owner=owner, low=0.0)
        return C * math.sqrt(d), D / K

    def fit(self, dataset: Any, features: Any, *, rng: RngLike = None) -> VAPVI:
        phi, data, data_bar = self._prepare(dataset, features)
        coef, add = self._penalty(phi.shape[2], data["actions"].shape[0])
        fit = linear_pessimistic_vi(phi, data, data_bar, lam=float(self.lam), penalty_coef=coef, additive=add)
        self._store(fit, [])
        return self


class DPVAPVI(VAPVI):
    """DP-VAPVI (Qiao & Wang 2023, Algorithm 2): ρ-zCDP, one trajectory replaced.

    ``budget``: a ρ budget, or (ε, δ>0) converted to ρ. ``calibration="sound"`` (default) is
    replace-one-safe; ``"paper"`` uses the printed matrix noise ``Var Z_ij = 1/(4ρ0)`` and spends
    ``1.4ρ`` under replace-one (recorded in the ledger, warned about, labelled). ``delta_fail``
    sets the shift ``E``; ``C, D, lam, split, delta_fail`` never change the noise scales.
    With an infinite budget no noise is added and the result equals :class:`VAPVI` exactly.
    """

    guarantee = "rho-zCDP"

    def __init__(self, *, budget: PrivacyBudget | None = None, calibration: str = "sound", C: float = 0.1,
                 D: float = 0.0, lam: float = 1.0, delta_fail: float = 0.05, split: bool = True,
                 feature_norm_bound: float = 1.0) -> None:
        super().__init__(C=C, D=D, lam=lam, split=split, feature_norm_bound=feature_norm_bound)
        self.budget = budget
        self.calibration = calibration
        self.delta_fail = delta_fail

    def fit(self, dataset: Any, features: Any, *, rng: RngLike = None) -> DPVAPVI:
        owner = type(self).__name__
        rho = budget_to_rho(check_budget(self.budget, owner), owner)
        calibration = check_option(self.calibration, "calibration", ("sound", "paper"), owner=owner)
        delta_fail = check_scalar(self.delta_fail, "delta_fail", owner=owner, low=0.0, high=1.0, closed="neither")
        phi, data, data_bar = self._prepare(dataset, features)
        coef, add = self._penalty(phi.shape[2], data["actions"].shape[0])
        H = data["actions"].shape[1]
        noise = None
        if not math.isinf(rho):
            noise = linear_mechanisms(H, phi.shape[2], rho, delta_fail=delta_fail, calibration=calibration,
                                      feature_norm_bound=float(self.feature_norm_bound))
            if calibration == "paper":
                warnings.warn("DPVAPVI calibration='paper' uses the add/remove matrix noise of the paper: under "
                              "replace-one neighbours it spends 1.4*rho (recorded in privacy_ledger_).",
                              PrivacyLeakWarning, stacklevel=2)
        fit = linear_pessimistic_vi(phi, data, data_bar, lam=float(self.lam), penalty_coef=coef, additive=add,
                                    noise=noise, rng=as_generator(rng))
        self.noise_shift_ = 0.0 if noise is None else noise.shift
        self._store(fit, fit.events)
        return self
