"""Least-squares policy evaluation, non-private and differentially private
(Balle, Gomrokchi & Precup, "Differentially Private Policy Evaluation", ICML 2016).

Estimators
----------
* :class:`LSW` — weighted least squares on first-visit Monte Carlo returns, θ^w_X (eq. 8).
* :class:`LSL` — ridge regression weighted by visit counts, θ^λ_X (eq. 11).
* :class:`DPLSW` — Algorithm 1: θ^w_X + N(0, σ_X² I_d) with a smoothed-sensitivity σ_X.
* :class:`DPLSL` — Algorithm 2: θ^λ_X + N(0, σ_X² I_d) with a smoothed-sensitivity σ_X.

Privacy unit: one whole trajectory, replaced (same number m of trajectories; m is public).

Kernels are pure functions on arrays:

* :func:`discounted_returns`, :func:`first_visit_statistics` — the signature ⟨X⟩ = (|X_s|)_s and the
  average first-visit returns F_X (eq. 4), vectorised over the flat transition arrays;
* :func:`lsw_solve`, :func:`lsl_solve` — eqs. (8) and (11);
* :class:`DPLSWMechanism`, :class:`DPLSLMechanism` — the release step as a function of the public
  parameters, the signature, θ and ``rng`` only (cheap to call many times in an audit).

σ_X depends on the data through ⟨X⟩: the estimators never store it. It is available only through
the mechanisms' ``noise_scale`` (explicitly non-private diagnostics).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from dp_accounting import dp_event

from privrl._rng import RngLike, as_generator, child_rngs
from privrl._validation import check_array, check_option, check_scalar, param_error
from privrl.base import Estimator, check_is_fitted
from privrl.errors import InvalidDataError, InvalidParameterError, UtilityWarning
from privrl.privacy.accounting import ApproxDpEvent, Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.smooth_sensitivity import CONSTANT_SETS, psi_lambda, psi_w, smoothing_constants

__all__ = [
    "VisitStatistics",
    "discounted_returns",
    "first_visit_statistics",
    "lsw_solve",
    "lsl_solve",
    "lambda_min",
    "sqrt_lambda_schedule",
    "DPLSWMechanism",
    "DPLSLMechanism",
    "LSW",
    "LSL",
    "DPLSW",
    "DPLSL",
]


# =========================================================================== statistics
@dataclass(frozen=True)
class VisitStatistics:
    """First-visit statistics of a dataset — **private** (never store them on an estimator).

    ``counts[s]`` = |X_s| (number of trajectories visiting s), ``mean_returns[s]`` = F_X(s)
    (eq. 4; 0 where unvisited), ``n_trajectories`` = m.
    """

    counts: np.ndarray
    mean_returns: np.ndarray
    n_trajectories: int


def discounted_returns(rewards: np.ndarray, episode_starts: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = Σ_{j ≥ t, same episode} γ^{j−t} r_j for every transition of a flat dataset.

    A parallel (Hillis–Steele) scan of the recurrence G_t = r_t + a_t G_{t+1}, with a_t = γ inside an
    episode and 0 at its last step: ⌈log₂ T_max⌉ vectorised passes, no loop over steps, and only
    sums of non-negative terms (no γ^{-t} rescaling, so no overflow or cancellation).
    """
    b = np.array(rewards, dtype=np.float64, copy=True)
    n = b.size
    starts = np.asarray(episode_starts, dtype=np.int64)
    if n == 0:
        return b
    a = np.full(n, float(gamma))
    a[starts[1:] - 1] = 0.0
    max_len = int(np.max(np.diff(starts)))
    d = 1
    while d < max_len:
        b[: n - d] += a[: n - d] * b[d:]
        a[: n - d] *= a[d:]
        d *= 2
    return b


def first_visit_statistics(
    observations: np.ndarray,
    rewards: np.ndarray,
    episode_starts: np.ndarray,
    n_states: int,
    gamma: float,
    *,
    terminal_states: np.ndarray | None = None,
    return_bound: float | None = None,
    clip_returns: bool = False,
) -> VisitStatistics:
    """Counts |X_s| and average first-visit returns F_X (§2.2, eq. 4), vectorised.

    ``terminal_states`` (E,) int gives, per episode, a terminal state reached by its last
    transition (or −1): it counts as visited at the end of the episode with return 0 (the
    absorbing state has value 0), unless the episode visited it before. Every first-visit
    return must lie in [0, ``return_bound``]; larger ones raise :class:`InvalidDataError`, or are
    clipped to the bound when ``clip_returns`` (a per-trajectory, data-independent map, so the
    guarantee is kept).
    """
    obs = np.asarray(observations, dtype=np.int64)
    starts = np.asarray(episode_starts, dtype=np.int64)
    m = starts.size - 1
    returns = discounted_returns(rewards, starts, gamma)
    episode = np.repeat(np.arange(m, dtype=np.int64), np.diff(starts))
    key = episode * n_states + obs
    order = np.argsort(key, kind="stable")  # stable: the earliest visit of a key comes first
    sorted_key = key[order]
    is_first = np.ones(sorted_key.size, dtype=bool)
    is_first[1:] = sorted_key[1:] != sorted_key[:-1]
    first = order[is_first]
    first_states = obs[first]
    first_returns = returns[first]
    extra_states = np.zeros(0, dtype=np.int64)
    if terminal_states is not None:  # terminal states not visited earlier in their episode
        term = np.asarray(terminal_states, dtype=np.int64)
        has = np.flatnonzero(term >= 0)
        tkey = has * n_states + term[has]
        pos = np.minimum(np.searchsorted(sorted_key, tkey), max(sorted_key.size - 1, 0))
        seen = sorted_key[pos] == tkey if sorted_key.size else np.zeros(tkey.size, dtype=bool)
        extra_states = term[has][~seen]
    if return_bound is not None and first_returns.size:
        top = float(first_returns.max())
        if top > return_bound * (1 + 1e-9) and not clip_returns:
            raise InvalidDataError(
                f"A first-visit return is {top!r}, above the public return bound F_max = "
                f"{return_bound!r}. Pass a larger F_max or clip_returns=True."
            )
        first_returns = np.minimum(first_returns, return_bound)
    counts = np.bincount(first_states, minlength=n_states) + np.bincount(extra_states, minlength=n_states)
    sums = np.bincount(first_states, weights=first_returns, minlength=n_states)  # extra visits add 0
    mean = np.divide(sums, counts, out=np.zeros(n_states), where=counts > 0)
    return VisitStatistics(counts=counts.astype(np.int64), mean_returns=mean, n_trajectories=m)


# =========================================================================== solvers
def _spectral(matrix: np.ndarray) -> np.ndarray:
    return np.linalg.svd(matrix, compute_uv=False)


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


def sqrt_lambda_schedule(m: int, features: np.ndarray, relevance: np.ndarray, c: float) -> float:
    """λ = λ_min + c √m — the schedule the paper found best for DP-LSL (§6). Depends on m only."""
    return lambda_min(features, relevance) + float(c) * math.sqrt(m)


# =========================================================================== public parameters
def _check_features(features: Any, owner: str) -> np.ndarray:
    phi = check_array(features, "features", owner=owner, ndim=2)
    if phi.shape[0] == 0 or phi.shape[1] == 0:
        raise param_error("features", owner, "a non-empty (n_states, d) matrix", phi.shape)
    return phi


def _check_budget(budget: Any, owner: str, constants: str) -> tuple[float, float]:
    if not isinstance(budget, PrivacyBudget) or budget.is_zcdp:
        raise param_error("budget", owner, "a PrivacyBudget(epsilon=..., delta=...)", budget)
    eps, delta = float(budget.epsilon or 0.0), float(budget.delta or 0.0)
    if math.isinf(eps):
        return eps, delta
    if not 0.0 < delta < 1.0:
        raise param_error("budget", owner, "a PrivacyBudget with delta in (0.0, 1.0) (Lemma 1 needs delta > 0)",
                          budget)
    if constants == "appendix_a" and eps > 5.0:
        raise param_error("budget", owner, "a PrivacyBudget with epsilon in (0.0, 5.0] when "
                          "constants='appendix_a' (Lemma 14)", budget)
    if eps > 1.0:
        warnings.warn(f"{owner}: epsilon = {eps} > 1 is outside the usual regime of the smoothed "
                      "Gaussian lemma (Lemma 1).", UtilityWarning, stacklevel=3)
    return eps, delta


def _check_bound(value: float, name: str, owner: str) -> float:
    return check_scalar(value, name, owner=owner, low=0.0, closed="neither")


@dataclass(frozen=True)
class _Mechanism:
    epsilon: float
    delta: float
    constants: str
    F_max: float

    @property
    def is_private(self) -> bool:
        return not math.isinf(self.epsilon)

    def _alpha_beta(self, d: int) -> tuple[float, float]:
        return smoothing_constants(self.epsilon, self.delta, d, self.constants)

    def release(self, theta: np.ndarray, counts: np.ndarray, m: int, rng: RngLike) -> np.ndarray:
        """θ + N(0, σ_X² I_d): a pure function of the public parameters, ⟨X⟩, θ and ``rng``.
        An infinite ε returns θ unchanged (no noise drawn)."""
        theta = np.asarray(theta, dtype=np.float64)
        if not self.is_private:
            return theta.copy()
        sigma = self.noise_scale(counts, m)
        return theta + sigma * as_generator(rng).standard_normal(theta.shape)

    def noise_scale(self, counts: np.ndarray, m: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def solve(self, stats: VisitStatistics) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def event(self) -> dp_event.DpEvent:
        """The ledger entry of one release: (ε, δ)-DP by Lemma 1 / Lemma 14."""
        if not self.is_private:
            return dp_event.NonPrivateDpEvent()
        return ApproxDpEvent(self.epsilon, self.delta)


@dataclass(frozen=True)
class DPLSWMechanism(_Mechanism):
    """The release step of DP-LSW (Algorithm 1) for fixed public Φ, w, F_max, ε, δ.

    Derivation of σ_X (lines 2–4): by eq. (13) and Corollary 3, for every neighbour X' of X,
    ‖θ^w_X − θ^w_X'‖₂ ≤ ‖(Γ^{1/2}Φ)^†‖ · F_max · √φ^w(⟨X⟩), with φ^w(v) = Σ_s w_s / max(v_s, 1)².
    σ_X = α F_max ‖(Γ^{1/2}Φ)^†‖ √ψ^w_X, with ψ^w the smallest β-smooth upper bound of φ^w
    (Lemma 5), satisfies both conditions of Lemma 1, so one release is (ε, δ)-DP. ‖·‖ is the
    spectral norm: ‖(Γ^{1/2}Φ)^†‖ = 1 / σ_min(Γ^{1/2}Φ).
    """

    features: np.ndarray = None  # type: ignore[assignment]
    weights: np.ndarray = None  # type: ignore[assignment]
    pinv_norm: float = 0.0

    @classmethod
    def create(cls, *, features: Any, weights: Any, F_max: float, epsilon: float, delta: float,
               constants: str = "main_text", owner: str = "DPLSWMechanism") -> DPLSWMechanism:
        phi = _check_features(features, owner)
        w = check_array(weights, "weights", owner=owner, shape=(phi.shape[0],), low=0.0)
        check_option(constants, "constants", CONSTANT_SETS, owner=owner)
        sv = _spectral(np.sqrt(w)[:, None] * phi)
        if sv.size < phi.shape[1] or sv[-1] <= sv[0] * max(phi.shape) * np.finfo(float).eps:
            raise InvalidParameterError(
                f"The 'features' and 'weights' parameters of {owner} must make Γ^1/2 Φ full column "
                f"rank (d = {phi.shape[1]}). Got singular values {sv.tolist()[:8]} instead."
            )
        return cls(epsilon=epsilon, delta=delta, constants=constants,
                   F_max=_check_bound(F_max, "F_max", owner), features=phi, weights=w,
                   pinv_norm=float(1.0 / sv[-1]))

    def noise_scale(self, counts: np.ndarray, m: int | None = None) -> float:
        """σ_X = α F_max ‖(Γ^{1/2}Φ)^†‖ √ψ^w_X (Algorithm 1, line 4). Data-dependent: NOT private."""
        if not self.is_private:
            return 0.0
        alpha, beta = self._alpha_beta(self.features.shape[1])
        return alpha * self.F_max * self.pinv_norm * math.sqrt(psi_w(counts, self.weights, beta))

    def solve(self, stats: VisitStatistics) -> np.ndarray:
        return lsw_solve(stats.mean_returns, self.features, self.weights)


@dataclass(frozen=True)
class DPLSLMechanism(_Mechanism):
    """The release step of DP-LSL (Algorithm 2) for fixed public Φ, ρ, λ, F_max, ε, δ.

    Derivation of σ_X (lines 2–4): Corollary 8 gives, for λ > λ_min = ‖Φ‖²‖ρ‖∞ and every neighbour X',
    ‖θ^λ_X − θ^λ_X'‖₂ ≤ 2 F_max ‖Φ‖ / (λ − λ_min) · √φ^λ(⟨X⟩), with
    φ^λ(v) = (c_λ √(Σ_s ρ_s min(v_s, m)) + ‖ρ‖₂)², c_λ = ‖Φ‖ ‖ρ‖∞ / √(2λ) (``min``: typo fix A3).
    σ_X = α · 2 F_max ‖Φ‖ / (λ − λ_min) · √ψ^λ_X (Lemma 9 for ψ^λ) satisfies Lemma 1.
    """

    features: np.ndarray = None  # type: ignore[assignment]
    relevance: np.ndarray = None  # type: ignore[assignment]
    lam: float = 0.0
    phi_norm: float = 0.0

    @classmethod
    def create(cls, *, features: Any, relevance: Any, lam: float, F_max: float, epsilon: float,
               delta: float, constants: str = "main_text", owner: str = "DPLSLMechanism") -> DPLSLMechanism:
        phi = _check_features(features, owner)
        rho = check_array(relevance, "relevance", owner=owner, shape=(phi.shape[0],), low=0.0, high=1.0)
        if not np.any(rho > 0):
            raise param_error("relevance", owner, "weights in [0, 1], not all zero", rho.tolist()[:8])
        check_option(constants, "constants", CONSTANT_SETS, owner=owner)
        phi_norm = float(_spectral(phi)[0])
        lam_low = phi_norm**2 * float(rho.max())
        lam = check_scalar(lam, "lam", owner=owner)
        if not lam > lam_low:
            raise param_error("lam", owner, f"a float > ‖Φ‖²‖ρ‖∞ = {lam_low!r} (Corollary 8)", lam)
        return cls(epsilon=epsilon, delta=delta, constants=constants,
                   F_max=_check_bound(F_max, "F_max", owner), features=phi, relevance=rho,
                   lam=lam, phi_norm=phi_norm)

    def noise_scale(self, counts: np.ndarray, m: int) -> float:
        """σ_X = 2α F_max ‖Φ‖ √ψ^λ_X / (λ − ‖Φ‖²‖ρ‖∞) (Algorithm 2, line 4). Data-dependent: NOT private."""
        if not self.is_private:
            return 0.0
        alpha, beta = self._alpha_beta(self.features.shape[1])
        rho_inf = float(self.relevance.max())
        c_lam = self.phi_norm * rho_inf / math.sqrt(2.0 * self.lam)
        psi = psi_lambda(counts, self.relevance, c_lam, m, beta)
        return 2.0 * alpha * self.F_max * self.phi_norm * math.sqrt(psi) / (
            self.lam - self.phi_norm**2 * rho_inf)

    def solve(self, stats: VisitStatistics) -> np.ndarray:
        return lsl_solve(stats.mean_returns, stats.counts, stats.n_trajectories, self.features,
                         self.relevance, self.lam)


# =========================================================================== estimators
def _dataset_arrays(dataset: Any, owner: str) -> dict[str, Any]:
    try:
        obs = np.asarray(dataset.observations)
        rewards = np.asarray(dataset.rewards, dtype=np.float64)
        starts = np.asarray(dataset.episode_starts, dtype=np.int64)
    except AttributeError:
        raise param_error("dataset", f"{owner}.fit", "a privrl.data.TrajectoryDataset",
                          type(dataset).__name__) from None
    if obs.ndim != 1 or obs.dtype.kind not in "iu":
        raise InvalidDataError(f"{owner} needs tabular (integer) observations; got dtype "
                               f"{obs.dtype} and shape {obs.shape}.")
    terminals = getattr(dataset, "terminals", None)
    nxt = getattr(dataset, "next_observations", None)
    return {"observations": obs, "rewards": rewards, "episode_starts": starts,
            "terminals": None if terminals is None else np.asarray(terminals, dtype=bool),
            "next_observations": None if nxt is None else np.asarray(nxt),
            "n_states": getattr(dataset, "n_states", None),
            "reward_bounds": getattr(dataset, "reward_bounds", None)}


class LSW(Estimator):
    """Non-private LSW: θ^w_X = argmin_θ Σ_s w_s (F_X(s) − φ_sᵀθ)² (eqs. 6–8).

    Parameters
    ----------
    gamma : discount factor γ in [0, 1).
    features : Φ, (n_states, d); ``None`` = one-hot (tabular, d = n_states).
    weights : w, (n_states,) ≥ 0, data-independent; ``None`` = uniform 1/n_states. Γ^{1/2}Φ must
        have full column rank.
    r_max : public reward bound R_max (rewards must lie in [0, R_max]); ``None`` = the dataset's
        declared upper reward bound.
    F_max : public bound on first-visit returns; ``None`` = R_max / (1 − γ).
    clip_returns : clip rewards to [0, R_max] and returns to [0, F_max] instead of raising.
    record_terminal : count the terminal state reached by an episode's last transition as visited
        with return 0 (the absorbing state of the §6 chain).
    """

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    def __init__(self, *, gamma: float, features: Any = None, weights: Any = None,
                 r_max: float | None = None, F_max: float | None = None,
                 clip_returns: bool = False, record_terminal: bool = True) -> None:
        self.gamma = gamma
        self.features = features
        self.weights = weights
        self.r_max = r_max
        self.F_max = F_max
        self.clip_returns = clip_returns
        self.record_terminal = record_terminal

    # -- shared steps
    def _prepare(self, dataset: Any) -> tuple[VisitStatistics, np.ndarray, float]:
        owner = type(self).__name__
        gamma = check_scalar(self.gamma, "gamma", owner=owner, low=0.0, high=1.0, closed="left")
        if not isinstance(self.clip_returns, bool):
            raise param_error("clip_returns", owner, "a bool", self.clip_returns)
        arrays = _dataset_arrays(dataset, owner)
        obs = arrays["observations"]
        if self.features is None:
            # the number of states must be public: never infer it from the visited states
            if arrays["n_states"] is None:
                raise param_error("features", owner, "a feature matrix when the dataset declares no "
                                  "n_states (the state count must be public, not inferred from the data)", None)
            phi = np.eye(int(arrays["n_states"]))
        else:
            phi = _check_features(self.features, owner)
        n_states = phi.shape[0]
        if obs.size and (obs.min() < 0 or obs.max() >= n_states):
            raise InvalidDataError(
                f"The dataset visits state {int(obs.max()) if obs.max() >= n_states else int(obs.min())}, "
                f"outside the feature matrix of {owner} (states 0..{n_states - 1})."
            )
        r_max = self.r_max
        if r_max is None:
            bounds = arrays["reward_bounds"]
            if bounds is None:
                raise param_error("r_max", owner, "a positive float (the dataset declares no reward bounds)", None)
            if float(bounds[0]) < 0:
                raise InvalidDataError(f"{owner} needs rewards in [0, R_max] (the privacy proofs use r ≥ 0); "
                                       f"the dataset declares reward bounds {tuple(bounds)}. Shift the rewards.")
            r_max = float(bounds[1])
        r_max = _check_bound(r_max, "r_max", owner)
        f_max = r_max / (1.0 - gamma) if self.F_max is None else _check_bound(self.F_max, "F_max", owner)
        rewards = arrays["rewards"]
        if rewards.size and (rewards.min() < 0.0 or rewards.max() > r_max):
            if not self.clip_returns:
                raise InvalidDataError(
                    f"Rewards must lie in [0, r_max = {r_max!r}] for {owner}; got range "
                    f"[{rewards.min()!r}, {rewards.max()!r}]. Pass clip_returns=True to clip."
                )
            rewards = np.clip(rewards, 0.0, r_max)
        starts = arrays["episode_starts"]
        if starts.size < 2:
            raise InvalidDataError(f"{owner} needs at least one trajectory.")
        terminal_states = None
        if self.record_terminal and arrays["terminals"] is not None and arrays["next_observations"] is not None:
            last = starts[1:] - 1
            done = arrays["terminals"][last]
            nxt = np.asarray(arrays["next_observations"])[last].astype(np.int64)
            if np.any(done & ((nxt < 0) | (nxt >= n_states))):
                raise InvalidDataError(f"A terminal state of the dataset is outside the feature matrix of {owner}.")
            terminal_states = np.where(done, nxt, -1)
        stats = first_visit_statistics(obs, rewards, starts, n_states, gamma,
                                       terminal_states=terminal_states, return_bound=f_max,
                                       clip_returns=self.clip_returns)
        return stats, phi, f_max

    def _mechanism(self, phi: np.ndarray, f_max: float, epsilon: float, delta: float,
                   constants: str) -> _Mechanism:
        weights = np.full(phi.shape[0], 1.0 / phi.shape[0]) if self.weights is None else self.weights
        return DPLSWMechanism.create(features=phi, weights=weights, F_max=f_max, epsilon=epsilon,
                                     delta=delta, constants=constants, owner=type(self).__name__)

    def _fit(self, dataset: Any, epsilon: float, delta: float, constants: str,
             rng: RngLike) -> _Mechanism:
        stats, phi, f_max = self._prepare(dataset)
        mech = self._mechanism(phi, f_max, epsilon, delta, constants)
        theta = mech.solve(stats)
        released = mech.release(theta, stats.counts, stats.n_trajectories, rng)
        self.theta_ = released
        self.values_ = phi @ released
        self.n_features_ = phi.shape[1]
        self.n_trajectories_ = stats.n_trajectories
        self.F_max_ = f_max
        return mech

    def fit(self, dataset: Any, rng: RngLike = None) -> LSW:
        """Fit on a :class:`~privrl.data.TrajectoryDataset` (tabular observations)."""
        self._fit(dataset, math.inf, 0.0, "main_text", rng)
        self.privacy_ledger_ = Ledger()
        return self

    def predict(self, states: Any) -> np.ndarray:
        """V̂(s) = φ_sᵀθ̂ for an array of state indices."""
        values = check_is_fitted(self, "values_")
        return values[np.asarray(states, dtype=np.int64)]


class LSL(LSW):
    """Non-private LSL: θ^λ_X, ridge regression weighted by ρ_s |X_s| / m (eqs. 10–11).

    ``relevance`` is ρ ∈ [0, 1]^N (``None`` = uniform 1/n_states), ``lam`` is λ > 0 (public, a
    function of m at most — see :func:`sqrt_lambda_schedule`). Other parameters as :class:`LSW`.
    """

    def __init__(self, *, gamma: float, lam: float, features: Any = None, relevance: Any = None,
                 r_max: float | None = None, F_max: float | None = None,
                 clip_returns: bool = False, record_terminal: bool = True) -> None:
        self.gamma = gamma
        self.lam = lam
        self.features = features
        self.relevance = relevance
        self.r_max = r_max
        self.F_max = F_max
        self.clip_returns = clip_returns
        self.record_terminal = record_terminal

    def _mechanism(self, phi: np.ndarray, f_max: float, epsilon: float, delta: float,
                   constants: str) -> _Mechanism:
        rho = np.full(phi.shape[0], 1.0 / phi.shape[0]) if self.relevance is None else self.relevance
        owner = type(self).__name__
        if math.isinf(epsilon):  # non-private: any λ > 0
            lam = check_scalar(self.lam, "lam", owner=owner, low=0.0, closed="neither")
            rho_arr = check_array(rho, "relevance", owner=owner, shape=(phi.shape[0],), low=0.0, high=1.0)
            return DPLSLMechanism(epsilon=epsilon, delta=delta, constants=constants, F_max=f_max,
                                  features=phi, relevance=rho_arr, lam=lam, phi_norm=0.0)
        return DPLSLMechanism.create(features=phi, relevance=rho, lam=self.lam, F_max=f_max,
                                     epsilon=epsilon, delta=delta, constants=constants, owner=owner)


def _private_fit(est: Any, dataset: Any, rng: RngLike) -> None:
    """Algorithms 1/2: validate the budget, fit, release with the "privacy" child stream, record
    the (ε, δ) event in the ledger."""
    owner = type(est).__name__
    check_option(est.constants, "constants", CONSTANT_SETS, owner=owner)
    epsilon, delta = _check_budget(est.budget, owner, est.constants)
    mech = est._fit(dataset, epsilon, delta, est.constants, child_rngs(rng, "privacy")["privacy"])
    est.privacy_ledger_ = Ledger([mech.event])


class DPLSW(LSW):
    """DP-LSW (Algorithm 1): (ε, δ)-DP for one trajectory replaced.

    ``budget`` is a ``PrivacyBudget(epsilon, delta)`` with δ ∈ (0, 1) (ε = ∞ gives exactly
    :class:`LSW`); ``constants`` is ``"main_text"`` (Lemma 1, default) or ``"appendix_a"``
    (Lemma 14, ε ≤ 5). Noise derivation: :class:`DPLSWMechanism`. Fitted: ``theta_``, ``values_``,
    ``F_max_`` (public), ``privacy_ledger_`` with one ``ApproxDpEvent(ε, δ)``; σ_X is not stored.
    """

    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget: PrivacyBudget, gamma: float, features: Any = None,
                 weights: Any = None, r_max: float | None = None, F_max: float | None = None,
                 constants: str = "main_text", clip_returns: bool = False,
                 record_terminal: bool = True) -> None:
        super().__init__(gamma=gamma, features=features, weights=weights, r_max=r_max, F_max=F_max,
                         clip_returns=clip_returns, record_terminal=record_terminal)
        self.budget = budget
        self.constants = constants

    def fit(self, dataset: Any, rng: RngLike = None) -> Any:
        """Fit and release θ̂ (one (ε, δ)-DP event in ``privacy_ledger_``)."""
        _private_fit(self, dataset, rng)
        return self


class DPLSL(LSL):
    """DP-LSL (Algorithm 2): (ε, δ)-DP for one trajectory replaced; needs λ > ‖Φ‖²‖ρ‖∞.

    Parameters as :class:`LSL` plus ``budget`` and ``constants`` as :class:`DPLSW`. Noise
    derivation: :class:`DPLSLMechanism`.
    """

    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget: PrivacyBudget, gamma: float, lam: float, features: Any = None,
                 relevance: Any = None, r_max: float | None = None, F_max: float | None = None,
                 constants: str = "main_text", clip_returns: bool = False,
                 record_terminal: bool = True) -> None:
        super().__init__(gamma=gamma, lam=lam, features=features, relevance=relevance, r_max=r_max,
                         F_max=F_max, clip_returns=clip_returns, record_terminal=record_terminal)
        self.budget = budget
        self.constants = constants

    def fit(self, dataset: Any, rng: RngLike = None) -> Any:
        """Fit and release θ̂ (one (ε, δ)-DP event in ``privacy_ledger_``)."""
        _private_fit(self, dataset, rng)
        return self
