"""APVI and DP-APVI (Qiao & Wang 2023, Section 3, Algorithm 1) — tabular offline RL.

Every step after :func:`release_counts` reads only the released counts, so it is post-processing.
The kernels are pure functions of sufficient statistics (per-step counts) and ``rng``:

* :func:`count_statistics` — ``n_{s,a}`` ``(H,S,A)`` and ``n_{s,a,s'}`` ``(H,S,A,S)`` per step h;
* :func:`release_counts` — Eq. (2) (Gaussian, ρ-zCDP) or the Laplace variant (ε-DP), then ``{·}^+``;
* :func:`consistent_counts` — Eq. (3)/(4) solved exactly in closed form;
* :func:`private_transitions` — Eq. (5);
* :func:`pessimistic_value_iteration` — lines 3–9 of Algorithm 1 (Bernstein penalty, truncation,
  greedy policy);
* :func:`dp_apvi_from_counts` — the whole algorithm on counts (what audits call 10⁴ times).

Privacy unit: one trajectory, replace-one neighbours, dataset size public.

Sensitivities (Lemma C.1). Replacing one trajectory changes, at each step h, one visit
``(s_h, a_h)`` (and one ``(s_h, a_h, s_{h+1})``) into another: at most two entries of each family
move by ±1 per step, so over the ``H`` steps

* ℓ2: ``||Δ n_{sa}||_2 <= sqrt(2H)`` and ``||Δ n_{sas'}||_2 <= sqrt(2H)``;
* ℓ1: ``||Δ n_{sa}||_1 <= 2H`` and ``||Δ n_{sas'}||_1 <= 2H`` (4H jointly).

Gaussian: σ² = 2H/ρ per entry gives each family ρ/2-zCDP (Δ²/(2σ²) = 2H·ρ/(4H)), ρ in total.
Laplace: b = 4H/ε per entry gives each family ε/2-DP (Δ1/b = 2H·ε/(4H)), ε in total.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_option, check_scalar, param_error
from privrl.offline._common import budget_to_rho, check_budget, greedy, padded_episodes
from privrl.base import Estimator
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = ["APVI", "DPAPVI", "TabularFit", "count_statistics", "release_counts", "consistent_counts",
           "private_transitions", "pessimistic_value_iteration", "gaussian_noise_bound",
           "laplace_noise_bound", "dp_apvi_from_counts"]


# --------------------------------------------------------------------------- statistics and noise
def count_statistics(observations: np.ndarray, actions: np.ndarray, next_observations: np.ndarray,
                     n_states: int, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-step counts from ``(K, H)`` index arrays: ``n_sa`` ``(H,S,A)``, ``n_sas`` ``(H,S,A,S)``."""
    K, H = actions.shape
    S, A = n_states, n_actions
    h = np.broadcast_to(np.arange(H), (K, H))
    flat = ((h * S + observations) * A + actions) * S + next_observations
    n_sas = np.bincount(flat.ravel(), minlength=H * S * A * S).reshape(H, S, A, S).astype(float)
    return n_sas.sum(axis=-1), n_sas


def gaussian_noise_bound(horizon: int, n_states: int, n_actions: int, rho: float, delta_fail: float) -> float:
    """``E_ρ = 4 sqrt(H log(4HS²A/δ) / ρ)`` (Algorithm 1 line 2): w.p. ≥ 1−δ every Gaussian count
    noise is at most ``E_ρ/2`` (Lemma C.2). 0 for ρ = ∞."""
    if math.isinf(rho):
        return 0.0
    H, S, A = horizon, n_states, n_actions
    return 4.0 * math.sqrt(H * math.log(4 * H * S * S * A / delta_fail) / rho)


def laplace_noise_bound(horizon: int, n_states: int, n_actions: int, epsilon: float, delta_fail: float) -> float:
    """``E_ε = (8H/ε) log(2HS²A/δ)`` (our constant for the paper's ``Õ(H/ε)``, spec §2.3): the
    union bound over ≤ 2HS²A Laplace(4H/ε) variables gives every noise ≤ ``E_ε/2`` w.p. ≥ 1−δ."""
    if math.isinf(epsilon):
        return 0.0
    H, S, A = horizon, n_states, n_actions
    return 8.0 * H / epsilon * math.log(2 * H * S * S * A / delta_fail)


def count_mechanisms(horizon: int, *, rho: float | None = None, epsilon: float | None = None
                     ) -> tuple[Any, Any]:
    """The two mechanisms of Eq. (2): one per count family (see the module docstring)."""
    H = horizon
    mech: Any
    if rho is not None:
        std = 0.0 if math.isinf(rho) else math.sqrt(2.0 * H / rho)
        mech = GaussianMechanism(sensitivity=math.sqrt(2.0 * H), noise_std=std)
    else:
        assert epsilon is not None
        scale = 0.0 if math.isinf(epsilon) else 4.0 * H / epsilon
        mech = LaplaceMechanism(sensitivity=2.0 * H, noise_scale=scale)
    return mech, mech


def release_counts(n_sa: np.ndarray, n_sas: np.ndarray, *, rho: float | None = None,
                   epsilon: float | None = None, rng: RngLike = None
                   ) -> tuple[np.ndarray, np.ndarray, list]:
    """Eq. (2): ``n' = {n + noise}^+`` for every ``(h, s, a[, s'])``, independent noise per entry.

    Exactly one of ``rho`` (Gaussian, σ² = 2H/ρ) or ``epsilon`` (Laplace, b = 4H/ε). Returns the
    two noisy families and the two DpEvents. ``{·}^+`` is post-processing (spec A-T1).
    """
    rng = as_generator(rng)
    mech_sa, mech_sas = count_mechanisms(n_sa.shape[0], rho=rho, epsilon=epsilon)
    noisy_sa, ev_sa = mech_sa.release(n_sa, rng=rng)
    noisy_sas, ev_sas = mech_sas.release(n_sas, rng=rng)
    return np.maximum(noisy_sa, 0.0), np.maximum(noisy_sas, 0.0), [ev_sa, ev_sas]


# --------------------------------------------------------------------------- post-processing
def consistent_counts(noisy_sa: np.ndarray, noisy_sas: np.ndarray, bound: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3): for every ``(h,s,a)``, ``argmin_x max_s' |x_s' − n'_{sas'}|`` s.t.
    ``|Σ x − n'_{sa}| <= bound/2`` and ``x >= 0``, solved in closed form (spec §2.5).

    With ``T = Σ n'_{sas'}``, ``lo/hi = n'_{sa} ∓ bound/2``: if ``lo <= T <= hi`` keep ``n'``;
    if ``T < lo`` raise every entry by ``(lo − T)/S``; if ``T > hi`` lower by the water level
    ``t`` with ``Σ max(0, n' − t) = hi``. Needs ``n' >= 0`` (always feasible then).
    Returns ``(ñ_sa, ñ_sas)`` with ``ñ_sa = Σ_s' ñ_sas'``.
    """
    S = noisy_sas.shape[-1]
    total = noisy_sas.sum(axis=-1)
    lo = noisy_sa - bound / 2.0
    hi = noisy_sa + bound / 2.0
    out = noisy_sas.copy()
    low_mask = total < lo
    out[low_mask] += ((lo - total)[low_mask] / S)[:, None]
    high_mask = total > hi
    if np.any(high_mask):
        rows = noisy_sas[high_mask]
        u = -np.sort(-rows, axis=1)
        css = np.cumsum(u, axis=1)
        levels = (css - hi[high_mask][:, None]) / np.arange(1, S + 1)
        k = np.maximum((u > levels).sum(axis=1), 1)
        t = levels[np.arange(len(rows)), k - 1]
        out[high_mask] = np.maximum(rows - t[:, None], 0.0)
    return out.sum(axis=-1), out


def private_transitions(n_sa: np.ndarray, n_sas: np.ndarray, threshold: float) -> np.ndarray:
    """Eq. (5): ``ñ_{sas'}/ñ_{sa}`` where ``ñ_{sa} > threshold``, the uniform ``1/S`` otherwise."""
    S = n_sas.shape[-1]
    ok = n_sa > threshold
    safe = np.where(ok, n_sa, 1.0)
    return np.where(ok[..., None], n_sas / safe[..., None], 1.0 / S)


def pessimistic_value_iteration(P: np.ndarray, reward: np.ndarray, counts: np.ndarray, *, bound: float,
                                iota: float, c1: float, c2: float, c_unvisited: float, threshold: float
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lines 3–9 of Algorithm 1, vectorised over ``(s, a)``.

    ``Γ = c1 sqrt(Var_P(V) ι / (n − E)) + c2 S H E ι / n`` where ``n > threshold``, ``c_unvisited·H``
    elsewhere; ``Q̄_h = min{r + PV − Γ, H − h}^+`` (0-indexed h); greedy policy. Returns
    ``(policy (H,S), V (H+1,S), Q̄ (H,S,A))``.
    """
    H, S, A, _ = P.shape
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    ok = counts > threshold
    safe_n = np.where(ok, counts, 1.0)
    safe_gap = np.where(ok, np.maximum(counts - bound, 1e-300), 1.0)
    lower = c2 * S * H * bound * iota / safe_n
    for h in range(H - 1, -1, -1):
        pv = P[h] @ V[h + 1]
        var = np.maximum(P[h] @ (V[h + 1] ** 2) - pv**2, 0.0)
        gamma = np.where(ok[h], c1 * np.sqrt(var * iota / safe_gap[h]) + lower[h], c_unvisited * H)
        Q[h] = np.clip(reward[h] + pv - gamma, 0.0, H - h)
        _, V[h] = greedy(Q[h])
    return np.argmax(Q, axis=-1), V, Q


class TabularFit(NamedTuple):
    policy: np.ndarray
    values: np.ndarray
    q_values: np.ndarray
    transitions: np.ndarray
    counts: np.ndarray
    events: list


def dp_apvi_from_counts(n_sa: np.ndarray, n_sas: np.ndarray, reward: np.ndarray, *, delta_fail: float = 0.05,
                        rho: float | None = None, epsilon: float | None = None, c1: float = math.sqrt(2.0),
                        c2: float = 16.0, c_unvisited: float = 2.0, threshold_multiplier: float = 1.0,
                        rng: RngLike = None) -> TabularFit:
    """Algorithm 1 on sufficient statistics: release (2), consistency (3), P̃ (5), lines 3–9.

    With ``rho = inf`` (or ``epsilon = inf``) no noise is added, ``E = 0`` and the result is APVI.
    Counts must be non-negative with ``n_sas.sum(-1) == n_sa`` (what one fixed-horizon dataset gives).
    """
    owner = "dp_apvi_from_counts"
    n_sa = check_array(n_sa, "n_sa", owner=owner, ndim=3, low=0.0)
    H, S, A = n_sa.shape
    n_sas = check_array(n_sas, "n_sas", owner=owner, shape=(H, S, A, S), low=0.0)
    reward = check_array(reward, "reward", owner=owner, shape=(H, S, A), low=0.0, high=1.0)
    if not np.allclose(n_sas.sum(axis=-1), n_sa, rtol=0.0, atol=1e-9):
        raise param_error("n_sas", owner, "counts whose sum over s' equals n_sa", "inconsistent counts")
    if (rho is None) == (epsilon is None):
        raise param_error("rho/epsilon", owner, "exactly one of rho or epsilon", {"rho": rho, "epsilon": epsilon})
    if rho is not None:
        rho = check_scalar(rho, "rho", owner=owner, low=0.0, closed="right", allow_inf=True)
    else:
        epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="right", allow_inf=True)
    if rho is not None:
        bound = gaussian_noise_bound(H, S, A, rho, delta_fail)
    else:
        bound = laplace_noise_bound(H, S, A, epsilon, delta_fail)  # type: ignore[arg-type]
    noisy_sa, noisy_sas, events = release_counts(n_sa, n_sas, rho=rho, epsilon=epsilon, rng=rng)
    cnt_sa, cnt_sas = consistent_counts(noisy_sa, noisy_sas, bound)
    threshold = threshold_multiplier * bound
    P = private_transitions(cnt_sa, cnt_sas, threshold)
    iota = math.log(H * S * A / delta_fail)
    policy, V, Q = pessimistic_value_iteration(P, reward, cnt_sa, bound=bound, iota=iota, c1=c1, c2=c2,
                                               c_unvisited=c_unvisited, threshold=threshold)
    return TabularFit(policy, V, Q, P, cnt_sa, events)


# --------------------------------------------------------------------------- estimators
def _check_reward(reward: Any, owner: str) -> np.ndarray:
    r = check_array(reward, "reward", owner=owner, low=0.0, high=1.0)
    if r.ndim not in (2, 3):
        raise param_error("reward", owner, "an (H, S, A) or (S, A) array", f"shape {r.shape}")
    return r


class _TabularBase(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    delta_fail: float
    c1: float
    c_unvisited: float

    def _common_checks(self) -> None:
        owner = type(self).__name__
        check_scalar(self.delta_fail, "delta_fail", owner=owner, low=0.0, high=1.0, closed="neither")
        check_scalar(self.c1, "c1", owner=owner, low=0.0)
        check_scalar(self.c_unvisited, "c_unvisited", owner=owner, low=1.0, closed="neither")

    def _statistics(self, dataset: Any, reward: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        owner = type(self).__name__
        r = _check_reward(reward, owner)
        S, A = r.shape[-2:]
        data = padded_episodes(dataset, owner, n_states=S, n_actions=A,
                               horizon=r.shape[0] if r.ndim == 3 else None)
        H = data["actions"].shape[1]
        r = np.broadcast_to(r, (H, S, A)).astype(float)
        n_sa, n_sas = count_statistics(data["observations"], data["actions"], data["next_observations"], S, A)
        return n_sa, n_sas, r

    def _store(self, fit: TabularFit) -> None:
        self.policy_ = fit.policy
        self.values_ = fit.values
        self.q_values_ = fit.q_values
        self.transitions_ = fit.transitions
        self.counts_ = fit.counts
        self.privacy_ledger_ = Ledger(fit.events if self.guarantee is not None else [])


class APVI(_TabularBase):
    """Adaptive pessimistic value iteration (Yin & Wang 2021b), the non-private baseline.

    Exactly Algorithm 1 with the raw counts ``n``, ``P̂`` (Eq. 15) and ``E_ρ = 0``: penalty
    ``c1 sqrt(Var_P̂(V) ι / n)`` for visited pairs, ``c_unvisited·H`` otherwise. APVI's lower-order
    ``O(Hι/n)`` term is set to 0 so that DP-APVI with an infinite budget equals APVI exactly.
    ``fit(dataset, reward)``: ``reward`` is the public reward function, ``(H,S,A)`` or ``(S,A)`` in [0, 1].
    """

    guarantee = None

    def __init__(self, *, delta_fail: float = 0.05, c1: float = math.sqrt(2.0), c_unvisited: float = 2.0) -> None:
        self.delta_fail = delta_fail
        self.c1 = c1
        self.c_unvisited = c_unvisited

    def fit(self, dataset: Any, reward: Any, *, rng: RngLike = None) -> APVI:
        self._common_checks()
        n_sa, n_sas, r = self._statistics(dataset, reward)
        self._store(dp_apvi_from_counts(n_sa, n_sas, r, delta_fail=self.delta_fail, rho=math.inf,
                                        c1=self.c1, c2=0.0, c_unvisited=self.c_unvisited))
        return self


class DPAPVI(_TabularBase):
    """DP-APVI (Qiao & Wang 2023, Algorithm 1): ρ-zCDP (Gaussian, Eq. 2) or ε-DP (Laplace).

    ``mechanism="auto"`` uses Gaussian noise for a ρ budget or an (ε, δ>0) budget (ρ from the
    zCDP→DP conversion) and Laplace noise for a pure ε budget. ``delta_fail`` is the failure
    probability of the utility analysis (not a DP δ); ``c1, c2, c_unvisited`` (C1 = √2, C2 = 16,
    C' > 1) and ``threshold_multiplier`` are public, data-independent constants. None of them
    affects privacy. ``fit(dataset, reward)`` with a public reward ``(H,S,A)`` or ``(S,A)`` in [0, 1].
    """

    guarantee = "rho-zCDP"

    def __init__(self, *, budget: PrivacyBudget | None = None, mechanism: str = "auto", delta_fail: float = 0.05,
                 c1: float = math.sqrt(2.0), c2: float = 16.0, c_unvisited: float = 2.0,
                 threshold_multiplier: float = 1.0) -> None:
        self.budget = budget
        self.mechanism = mechanism
        self.delta_fail = delta_fail
        self.c1 = c1
        self.c2 = c2
        self.c_unvisited = c_unvisited
        self.threshold_multiplier = threshold_multiplier

    def _noise(self) -> dict[str, float]:
        owner = type(self).__name__
        budget = check_budget(self.budget, owner)
        mech = check_option(self.mechanism, "mechanism", ("auto", "gaussian", "laplace"), owner=owner)
        if mech == "auto":
            mech = "gaussian" if (budget.rho is not None or budget.delta) else "laplace"
        if mech == "laplace":
            if budget.epsilon is None:
                raise param_error("budget", owner, "an epsilon budget when mechanism='laplace'", budget)
            self.guarantee = "(epsilon, delta)-DP"  # type: ignore[misc]  # per fit: Laplace is pure DP
            return {"epsilon": float(budget.epsilon)}  # type: ignore[arg-type]
        self.guarantee = "rho-zCDP"  # type: ignore[misc]
        return {"rho": budget_to_rho(budget, owner)}

    def fit(self, dataset: Any, reward: Any, *, rng: RngLike = None) -> DPAPVI:
        owner = type(self).__name__
        self._common_checks()
        check_scalar(self.c2, "c2", owner=owner, low=0.0)
        check_scalar(self.threshold_multiplier, "threshold_multiplier", owner=owner, low=0.0)
        noise = self._noise()
        n_sa, n_sas, r = self._statistics(dataset, reward)
        fit = dp_apvi_from_counts(n_sa, n_sas, r, delta_fail=self.delta_fail, c1=self.c1, c2=self.c2,
                                  c_unvisited=self.c_unvisited, threshold_multiplier=self.threshold_multiplier,
                                  rng=as_generator(rng), **noise)
        H, S, A = n_sa.shape
        self.noise_bound_ = (gaussian_noise_bound(H, S, A, noise["rho"], self.delta_fail) if "rho" in noise
                             else laplace_noise_bound(H, S, A, noise["epsilon"], self.delta_fail))
        self._store(fit)
        return self
