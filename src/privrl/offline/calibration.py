"""Noise plans of DP-APVI and DP-VAPVI (Qiao & Wang 2023): budget + calibration → per-stream noise.

A *plan* is a pure function of public quantities (the budget, the calibration, the horizon, the
sizes S, A, d, the declared bounds and ``delta_fail``): it never sees data. The estimators draw
their noise through the fit's :class:`~privrl.privacy.release.Releaser` with the plan's scales;
audits build the same plan from an estimator (``DPAPVI.count_noise`` / ``DPVAPVI.linear_noise``).

Calibrations (one switch, ``calibration``; see ``docs/offline.md``):

* ``"paper"`` — as printed: ρ-zCDP budgets as in Eq. (2) / Algorithm 2, an (ε, δ) budget turned into
  ρ by the paper's Lemma E.15 (Bun–Steinke), DP-VAPVI's add/remove matrix noise (labelled; the
  ledger records its true replace-one cost 1.4ρ);
* ``"sound"`` — the corrected closed forms: the same formulas with replace-one-safe matrix noise and
  the tightest zCDP → (ε, δ) conversion (Canonne, Kamath & Steinke 2020);
* ``"tight"`` (default) — the releases are one Gaussian composition, calibrated *exactly*:
  μ = :func:`~privrl.privacy.calibration.gaussian_mu` (√(2ρ), or the analytic Gaussian μ of
  (ε, δ)), and the budget split across the streams to minimise the algorithm's error bound
  (:func:`~privrl.privacy.calibration.split_gaussian_streams`, weights derived below).

DP-APVI split (two count families, both of ℓ2-sensitivity √(2H)). With uniform noise bounds E_sa
(on n_{s,a}) and E_sas (on n_{s,a,s'}), Lemma C.3 becomes |ñ_sa − n_sa| ≤ E_sa, |ñ_sas' − n_sas'|
≤ E_sas, and the proof of Lemma C.4 (Eq. 16) gives, with ñ_sa = Σ_s' ñ_sas',

    ‖P̃_h(·|s,a) − P̂_h(·|s,a)‖₁ ≤ Σ_s' (E_sas·ñ_sa + ñ_sas'·E_sa)/(n_sa ñ_sa) = (S·E_sas + E_sa)/n_sa,

so the error term of Theorem 3.4 alone is minimised by the weights (1, S) (σ_sas/σ_sa = S^{-1/3}).
But E_sa also sets the coverage condition (Remark C.8: a pair counts only once ñ_sa ≥ 3E_sa, and the
algorithm's threshold drops pairs below E_sa), which that term does not see and which dominates
wherever privacy costs utility: on held-out random MDPs (S = 10, A = 5, H = 10; C2 = 0) the
normalised gap at n = 3000, ε = 1 is 0.28 with (1, S), 0.18 with the even split and 0.05 with (S, 1),
while at n ≥ 10⁴ all three are within 10⁻³ of 0. With the coverage constant unspecified, no split
follows from the bound alone, so the split is a utility knob of DP-APVI (``split_power`` k: weights
(S^k, 1); it never changes μ, i.e. the privacy loss): ``constants="theory"`` keeps the paper's even
split (k = 0); ``"practical"`` uses ``"auto"`` (:func:`auto_split_power`): k = 1 when the data are
coverage-limited (average pair count n/(SA) below E/2), the even split otherwise — chosen on
held-out instances (``benchmarks/tune_offline.py``). The pessimism term uses the
combination of the lemma, ``c2·H·ι·(S·E_sas + E_sa)/((1 + 1/S)·ñ)`` — exactly the paper's
``c2·S·H·E·ι/ñ`` when E_sa = E_sas. Pure ε budgets use Laplace noise; the same weights give
b_i ∝ 1/√w_i (minimising Σ w_i b_i subject to Σ 2H/b_i = ε).

DP-APVI with logged rewards (``logged_rewards=True``; the paper's reward is public): a third
family, the per-(h, s, a) reward sums R, rewards declared in [0, R_max] and each trajectory's
return declared at most F_max (default H·R_max; an outcome reward has F_max = R_max = 1). One
trajectory adds a vector v ≥ 0 to R with one entry per step, each ≤ R_max, summing to ≤ F_max, so
‖v‖₂² ≤ m = R_max²·⌊F_max/R_max⌋ + (F_max − R_max⌊F_max/R_max⌋)² (at most H·R_max²). Replacing it
by another, w: ‖w − v‖₂² ≤ ‖w‖₂² + ‖v‖₂² ≤ 2m (v, w ≥ 0), so Δ₂ = √(2m) — √2 for an outcome reward
against √(2H) for per-step rewards in [0, 1] — and Δ₁ ≤ ‖w‖₁ + ‖v‖₁ = 2·min(F_max, H·R_max). The
reward error enters Q as E_R/ñ where the n_sa noise enters as H·E_sa/ñ, so its tight-split weight
is the n_sa weight over H: (S^k, 1, S^k/H). ``"sound"`` splits ρ (or ε) evenly over the three
families (ρ/3 each: σ_i² = 3Δ_i²/(2ρ), b_i = 3Δ_i/ε); ``"paper"`` refuses logged rewards. Bound
E_R = 2σ_R√(2 log(4HS²A/δ)) (Laplace 2b_R log(2HS²A/δ)), the counts' union bound.

DP-VAPVI split (5H statistics). Tight calibration also uses the per-step sensitivities that the
algorithm's own clipping guarantees at step h (0-indexed, c = H − h): Ṽ_{h+1} ≤ c − 1 and
r + Ṽ_{h+1} ≤ c, so Σφ̄Ṽ², Σφ̄Ṽ, Σφ(r+Ṽ)/σ̃² move by at most 2B(c−1)², 2B(c−1), 2Bc under
replacement (the paper uses 2BH², 2BH, 2BH at every step); the Gram matrices keep √2·B². At the
last step Ṽ_H ≡ 0, so the first stage (lines 4–8) is exactly σ̃² ≡ 1 whatever is released: tight
calibration releases nothing there (3 releases saved). Weights (error in Q̂_h per unit noise std;
the sub-optimality is bounded by Σ_h of these errors, Lemma D.3):

* target φ3: φᵀΛ̃⁻¹φ3 — weight 1 (per unit of ‖Λ̃⁻¹φ‖√d, common to both second-stage streams);
* Gram K2: φᵀΛ̃⁻¹K2 w_h with ‖K2 w_h‖ ≈ (σ/√2)√d‖w_h‖ and ‖w_h‖ ≈ c/B (a Q-function of range c along
  features of norm B) — weight c/(√2 B);
* first stage (φ1, φ2, K1): Var̃ = φᵀβ̃ − (φᵀθ̃)² errs by ‖Σ̃⁻¹φ‖√d(σ1 + 2(c−1)σ2 + 3(c−1)²σ_K1/(√2B))
  (‖β‖ ≈ (c−1)²/B, ‖θ‖ ≈ (c−1)/B). It enters Q̂_h only through the weights 1/σ̃²: an over-estimated
  σ̃² shrinks the weighted Gram Λ̃ and inflates the second-stage noise error in proportion (Lemma
  D.10 needs it to be lower order), so its error in Q̂_h is the second-stage noise error e₂ times
  the relative variance error (σ̃² ≥ 1). We evaluate e₂ where privacy decides utility — a total
  sub-optimality of order 1 spread over the H steps, e₂ = 1/H — giving the weights
  (1, 2(c−1), 3(c−1)²/(√2B))/H for (φ1, φ2, K1).

On held-out instances (Appendix F MDP, instance seeds 2–5, ρ = 1) this split lowers the mean gap
from 4.33/3.85/0.75 (sound) to 3.24/1.84/0.35 at K = 10³/10⁴/10⁵.

The matrix shift is E_h/2 with E_h = 4s(√d + √log(10H/δ_fail)), s = σ/√2 the std of Z_ij (spec §3.1),
so each noisy Gram is PSD with probability ≥ 1 − δ_fail/(5H) whatever its σ.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from privrl._validation import check_option, param_error
from privrl.privacy.budget import PrivacyBudget
from privrl.privacy.calibration import (
    CALIBRATIONS,
    approx_dp_to_zcdp,
    gaussian_mu,
    split_gaussian_streams,
)

__all__ = ["CountNoise", "count_noise", "resolve_mechanism", "budget_rho", "LinearNoise", "linear_noise",
           "LINEAR_STREAMS", "MATRIX_STREAMS", "MECHANISMS", "matrix_shift", "auto_split_power",
           "reward_sensitivity", "count_sensitivity", "contribution_sensitivity", "LinearSignal",
           "linear_noise_to_signal", "LoggingNoise", "split_logging_share"]

MECHANISMS = ("auto", "gaussian", "laplace")
_SQRT2 = math.sqrt(2.0)
# tight plans sit exactly on the budget; this relative slack keeps float rounding of the ledger's
# own sums (Σ Δ²/(2σ²), Σ Δ/b) from reporting a spend an ulp above it
_SLACK = 1.0 + 1e-9


# --------------------------------------------------------------------------- budgets
def resolve_mechanism(mechanism: str, budget: Any, owner: str) -> str:
    """``"gaussian"`` or ``"laplace"``: ``"auto"`` is Laplace for a pure ε budget (δ = 0) and
    Gaussian for a ρ or an (ε, δ > 0) budget. Raises when the budget cannot be met."""
    mechanism = check_option(mechanism, "mechanism", MECHANISMS, owner=owner)
    if not isinstance(budget, PrivacyBudget):
        raise param_error("budget", owner, "a PrivacyBudget (e.g. PrivacyBudget(rho=1.0))", budget)
    pure = budget.rho is None and not budget.delta
    if mechanism == "auto":
        return "laplace" if pure else "gaussian"
    if mechanism == "laplace" and budget.epsilon is None:
        raise param_error("mechanism", owner, "'gaussian' or 'auto' for a rho budget (Laplace noise is "
                          "calibrated to an epsilon budget)", mechanism)
    if mechanism == "gaussian" and pure and budget.is_private:
        raise param_error("mechanism", owner, "'laplace' or 'auto' for a pure epsilon budget (delta = 0: "
                          "Gaussian noise cannot give pure DP)", mechanism)
    return mechanism


def budget_rho(budget: PrivacyBudget, calibration: str, owner: str) -> float:
    """ρ of a budget for the closed-form calibrations: ρ itself, or for (ε, δ > 0) the largest ρ
    whose zCDP → DP conversion meets it — Lemma E.15 (Bun–Steinke) for ``"paper"``, the tightest
    conversion for ``"sound"``. ∞ for an infinite budget."""
    if budget.rho is not None:
        return float(budget.rho)
    if not budget.is_private:
        return math.inf
    if not budget.delta:
        raise param_error("budget", owner, "a rho budget or an (epsilon, delta) budget with delta > 0 "
                          "(Gaussian noise cannot give pure DP)", budget)
    method = "bun_steinke" if calibration == "paper" else "tight"
    return approx_dp_to_zcdp(float(budget.epsilon), float(budget.delta), method=method)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- DP-APVI
class CountNoise(NamedTuple):
    """Noise of Eq. (2) for the two count families ``(n_sa, n_sas)`` (and, for logged rewards, of
    the reward sums: ``reward_*``).

    ``sensitivity``: ℓ2 (Gaussian) or ℓ1 (Laplace) per family; ``scale``: σ or b per family;
    ``bound``: E per family — with probability ≥ 1 − δ_fail every noise is at most E/2 (Lemma C.2);
    all zero for an infinite budget (the result is then APVI)."""

    mechanism: str
    sensitivity: tuple[float, float]
    scale: tuple[float, float]
    bound: tuple[float, float]
    n_states: int
    #: the reward sums' family (logged rewards; all 0 for a public reward): Δ, σ or b, E
    reward_sensitivity: float = 0.0
    reward_scale: float = 0.0
    reward_bound: float = 0.0

    @property
    def is_private(self) -> bool:
        return any(s > 0 for s in self.scale)

    @property
    def penalty_bound(self) -> float:
        """Ē = (S·E_sas + E_sa)/(S + 1): the combination of the two bounds that enters the
        transition error (module docstring); E when both are equal."""
        S = self.n_states
        return (S * self.bound[1] + self.bound[0]) / (S + 1)

    @property
    def noise_std(self) -> tuple[float, float]:
        """Per-family standard deviation (σ, or √2·b for Laplace)."""
        f = 1.0 if self.mechanism == "gaussian" else _SQRT2
        return (f * self.scale[0], f * self.scale[1])


def auto_split_power(horizon: int, n_states: int, n_actions: int, budget: PrivacyBudget, n_episodes: int, *,
                     mechanism: str = "auto", delta_fail: float = 0.05, **rewards: Any) -> float:
    """``split_power="auto"``: 1 — weights (S, 1), the smaller noise on n_sa — when the data are
    coverage-limited, i.e. the average count of a step's pair, n/(S·A), is below half the even
    split's noise bound E; 0 (the even split) otherwise. Public: n, S, A, H, the budget
    (``rewards``: the logged-reward and pooling arguments of :func:`count_noise`; counts pooled over
    the steps have on average H times more per pair)."""
    even = count_noise(horizon, n_states, n_actions, budget, mechanism=mechanism, delta_fail=delta_fail,
                       split_power=0.0, **rewards)
    per_pair = n_episodes * (int(horizon) if rewards.get("stationary") else 1) / (n_states * n_actions)
    return 1.0 if per_pair < 0.5 * even.bound[0] else 0.0


def contribution_sensitivity(per_cell: float, total: float, mechanism: str) -> float:
    """Replace-one sensitivity of a family of sums to which one trajectory adds a vector ``v >= 0``
    with every entry at most ``per_cell`` (b) and the entries summing to at most ``total`` (T).

    ℓ2: ``‖v‖₂² <= m = b²⌊T/b⌋ + (T − b⌊T/b⌋)²`` (for a fixed sum, Σv² is largest with the mass in
    as few entries as possible, each full), and for two such vectors ``‖w − v‖₂² <= ‖w‖₂² + ‖v‖₂² <=
    2m`` (non-negative entries), so Δ₂ = √(2m) — attained by two trajectories on disjoint cells.
    ℓ1: ``‖w − v‖₁ <= ‖w‖₁ + ‖v‖₁``: Δ₁ = 2T."""
    b, T = float(per_cell), float(total)
    if mechanism == "laplace":
        return 2.0 * T
    b = min(b, T)
    full = math.floor(T / b + 1e-12) if b > 0 else 0
    m = b * b * full + max(T - b * full, 0.0) ** 2
    return math.sqrt(2.0 * m)


def reward_sensitivity(horizon: int, r_max: float, F_max: float | None, mechanism: str, *,
                       max_visits: int | None = None, stationary: bool = False) -> float:
    """Replace-one sensitivity of the reward sums (module docstring): per-step sums ``(h, s, a)``
    get at most R_max per cell (one visit per step), so ℓ2 √(2m) with m = R_max²⌊F/R_max⌋ +
    (F − R_max⌊F/R_max⌋)² ≤ H·R_max², ℓ1 2F (F = min(F_max, H·R_max)). Sums pooled over the steps
    (``stationary``) get at most ``max_visits``·R_max per cell (F without a cap)
    (:func:`contribution_sensitivity`)."""
    H, r = int(horizon), float(r_max)
    F = H * r if F_max is None else min(float(F_max), H * r)
    return contribution_sensitivity(_visits_per_cell(H, max_visits, stationary) * r, F, mechanism)


def _visits_per_cell(horizon: int, max_visits: int | None, stationary: bool) -> int:
    """Most visits one trajectory adds to one released cell: 1 per step, ``H`` pooled over the steps,
    ``min(c, H)`` pooled with the cap ``c`` (per step a cap c >= 1 changes nothing)."""
    if not stationary:
        return 1
    return int(horizon) if max_visits is None else min(int(max_visits), int(horizon))


def count_sensitivity(horizon: int, mechanism: str, *, max_visits: int | None = None,
                      stationary: bool = False) -> float:
    """Replace-one sensitivity of each count family (``n_sa`` and ``n_sas``; module docstring).

    One trajectory makes H transitions: it adds a vector ``v >= 0`` summing to H to each family.
    Per step (Lemma C.1) every entry is 0 or 1: Δ₂ = √(2H), Δ₁ = 2H. Pooled over the steps
    (``stationary``) an entry can reach H: Δ₂ = √2·H. With the per-trajectory cap ``c`` on the
    visits of each pair (``max_visits``; the extra visits dropped, so every ``n_sa`` and ``n_sas``
    entry is at most c) Δ₂ = √(2m), m = c²⌊H/c⌋ + (H − c⌊H/c⌋)² ≤ c·H — √(2H) for c = 1 — and
    Δ₁ = 2H in every case (:func:`contribution_sensitivity`). State groups change nothing: each
    transition still lands in exactly one cell."""
    H = int(horizon)
    return contribution_sensitivity(_visits_per_cell(H, max_visits, stationary), H, mechanism)


def count_noise(horizon: int, n_states: int, n_actions: int, budget: PrivacyBudget, *, mechanism: str = "auto",
                calibration: str = "tight", delta_fail: float = 0.05, split_power: float = 0.0,
                logged_rewards: bool = False, r_max: float = 1.0, F_max: float | None = None,
                stationary: bool = False, max_visits: int | None = None,
                owner: str = "count_noise") -> CountNoise:
    """The :class:`CountNoise` of DP-APVI for ``budget`` (module docstring). Sensitivities (Lemma C.1):
    one trajectory replaced moves ≤ 2 entries of each family per step by 1 — ℓ2 √(2H), ℓ1 2H.

    Gaussian: paper/sound σ² = 2H/ρ per family (ρ/2 each); tight σ from the exact μ split with
    weights w = (S^k, 1). Laplace (pure ε): paper/sound b = 4H/ε (ε/2 each); tight b_i = 2H(Σ√w)/(ε√w_i).
    Bounds: Gaussian E = 2σ√(2 log(4HS²A/δ)) (Algorithm 1, line 2), Laplace E = 2b·log(2HS²A/δ).
    ``split_power`` k: the tight split's error weights are (S^k, 1) for (n_sa, n_sas) — k = 0 is the
    paper's even split, k = −1 the error term's (1, S); it never changes the total privacy loss (a
    utility knob of DP-APVI). ``logged_rewards``: a third family, the reward sums, with rewards in
    [0, ``r_max``] and returns at most ``F_max`` (module docstring; not under ``"paper"``).
    ``stationary``: the counts (and reward sums) are pooled over the H steps, one released step;
    ``max_visits``: each trajectory adds at most that many visits to any pair (dropped beyond) —
    sensitivities :func:`count_sensitivity`, :func:`reward_sensitivity`; ``n_states`` is then the
    number of (grouped) states released. The bounds' union bound runs over the released cells
    (``H_rel·S²·A``, ``H_rel`` = 1 when pooled).
    """
    check_option(calibration, "calibration", CALIBRATIONS, owner=owner)
    mech = resolve_mechanism(mechanism, budget, owner)
    if logged_rewards and calibration == "paper":
        raise param_error("calibration", owner, "'tight' or 'sound' when the rewards are logged (the paper's "
                          "reward function is public: pass it to fit)", calibration)
    H, S, A = int(horizon), int(n_states), int(n_actions)
    k = 3 if logged_rewards else 2
    w = np.array([float(S) ** float(split_power), 1.0, float(S) ** float(split_power) / H])[:k]
    H_rel = 1 if stationary else H
    counts_sens = count_sensitivity(H, mech, max_visits=max_visits, stationary=stationary)
    sens: np.ndarray = np.array([counts_sens, counts_sens, reward_sensitivity(
        H, r_max, F_max, mech, max_visits=max_visits, stationary=stationary)], dtype=float)[:k]
    if mech == "gaussian":
        if calibration == "tight":
            mu = gaussian_mu(budget)
            scale = (split_gaussian_streams(mu, sens.tolist(), weights=w.tolist()) * _SLACK if math.isfinite(mu)
                     else np.zeros(k))
        else:
            rho = budget_rho(budget, calibration, owner)
            scale = np.zeros(k) if math.isinf(rho) else sens * math.sqrt(k / (2.0 * rho))
        log_term = math.sqrt(2.0 * math.log(4.0 * H_rel * S * S * A / delta_fail))
        bound = 2.0 * scale * log_term
    else:
        eps = float(budget.epsilon)  # type: ignore[arg-type]
        if math.isinf(eps):
            scale = np.zeros(k)
        elif calibration == "tight":
            scale = np.sqrt(sens / w) * np.sqrt(sens * w).sum() / eps * _SLACK
        else:
            scale = k * sens / eps
        bound = 2.0 * scale * math.log(2.0 * H_rel * S * S * A / delta_fail)
    rewards = (float(sens[2]), float(scale[2]), float(bound[2])) if logged_rewards else (0.0, 0.0, 0.0)
    return CountNoise(mech, (float(sens[0]), float(sens[1])), (float(scale[0]), float(scale[1])),
                      (float(bound[0]), float(bound[1])), S, *rewards)


class LoggingNoise(NamedTuple):
    """Noise of the per-state logging counts (``DPAPVI(logging_share=s)`` on public groups): the
    mechanism, the replace-one sensitivity (ℓ2 Gaussian, ℓ1 Laplace) and σ or b per cell."""

    mechanism: str
    sensitivity: float
    scale: float

    @property
    def noise_std(self) -> float:
        return self.scale * (1.0 if self.mechanism == "gaussian" else _SQRT2)


def split_logging_share(budget: PrivacyBudget, share: float, horizon: int, *, mechanism: str = "auto",
                        calibration: str = "tight", max_visits: int | None = None,
                        owner: str = "split_logging_share") -> tuple[PrivacyBudget, LoggingNoise]:
    """``(the main fit's budget, the logging counts' noise)`` when a share ``s`` of ``budget`` goes to
    the per-state action visit counts pooled over the steps ``n(s, a) = Σ_h n_h(s, a)``.

    Sensitivity (replace-one, one trajectory; :func:`count_sensitivity` with ``stationary=True``): a
    trajectory adds a vector ``v >= 0`` summing to at most H, each entry at most ``min(c, H)`` — c the
    route's ``max_visits`` (the visits the route keeps: at most c per (group, action), so per (state,
    action)), H without a cap — so Δ₂ = √(2m), m = c²⌊H/c⌋ + (H − c⌊H/c⌋)² (√(2H) at c = 1, √2·H
    uncapped) and Δ₁ = 2H.

    The split keeps the total exactly at the budget. Gaussian: the releases are one Gaussian
    composition, μ² = Σ (Δ_i/σ_i)² (μ-GDP composes exactly; zCDP adds ρ likewise), so the logging
    counts get μ_L = √s·μ (σ = Δ₂/μ_L) and the main fit a ρ budget of (1 − s)·μ²/2 (μ_main = √(1 − s)·μ)
    — μ = :func:`~privrl.privacy.calibration.gaussian_mu` of the budget under ``"tight"``, √(2ρ) with
    the calibration's ρ (:func:`budget_rho`) under ``"sound"`` / ``"paper"``. Laplace (pure ε): ε adds
    up, b = Δ₁/(s·ε) and the main fit gets (1 − s)·ε. ``share`` in (0, 1)."""
    mech = resolve_mechanism(mechanism, budget, owner)
    s = float(share)
    sens = count_sensitivity(horizon, mech, max_visits=max_visits, stationary=True)
    if not budget.is_private:
        return budget, LoggingNoise(mech, sens, 0.0)
    if mech == "laplace":
        eps = float(budget.epsilon)  # type: ignore[arg-type]
        return PrivacyBudget(epsilon=(1.0 - s) * eps), LoggingNoise(mech, sens, sens / (s * eps) * _SLACK)
    mu = gaussian_mu(budget) if calibration == "tight" else math.sqrt(2.0 * budget_rho(budget, calibration, owner))
    return PrivacyBudget(rho=(1.0 - s) * mu * mu / 2.0), LoggingNoise(mech, sens, sens / (math.sqrt(s) * mu) * _SLACK)


# --------------------------------------------------------------------------- DP-VAPVI
#: the five statistics of Algorithm 2 at each step, in release order
LINEAR_STREAMS = ("gram_bar", "second_moment", "first_moment", "gram", "target")
#: indices of the two Gram matrices in :data:`LINEAR_STREAMS`
MATRIX_STREAMS = (0, 3)


class LinearNoise(NamedTuple):
    """Noise of Algorithm 2: ``std``, ``sensitivity`` ``(5, H)`` (rows in :data:`LINEAR_STREAMS`
    order; a stream with sensitivity 0 at a step is not released there) and ``shift`` ``(2, H)``
    (E/2 of the two Gram releases). Matrix stds are those of the Gaussian mechanism on
    T(M) = (M_ii, √2 M_ij)_{i≤j} (‖T(M)‖₂ = ‖M‖_F): σ = √2·s with s the std of the paper's Z_ij."""

    std: np.ndarray
    sensitivity: np.ndarray
    shift: np.ndarray

    @property
    def is_private(self) -> bool:
        return bool(np.any(self.std > 0))

    def released(self, stream: int, h: int) -> bool:
        return bool(self.sensitivity[stream, h] > 0)


def matrix_shift(std: np.ndarray, d: int, horizon: int, delta_fail: float) -> np.ndarray:
    """E/2 with E = 4s(√d + √log(10H/δ)), s = std/√2 (Sudakov–Fernique + Gaussian concentration:
    ‖(Z+Zᵀ)/√2‖₂ ≤ E/2 w.p. ≥ 1 − δ/(5H); spec §3.1's explicit replacement of Lemma D.2's constants)."""
    return 2.0 * (np.asarray(std) / _SQRT2) * (math.sqrt(d) + math.sqrt(math.log(10.0 * horizon / delta_fail)))


def _linear_weights(H: int, B: float, first_stage_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Tight per-step sensitivities and error weights ``(5, H)`` (module docstring)."""
    c = H - np.arange(H, dtype=float)          # range of r + Ṽ_{h+1} at step h
    cp = c - 1.0                               # range of Ṽ_{h+1}
    sens = np.vstack([np.where(cp > 0, _SQRT2 * B * B, 0.0), 2.0 * B * cp**2, 2.0 * B * cp,
                      np.full(H, _SQRT2 * B * B), 2.0 * B * c])
    weight = np.vstack([first_stage_weight * 3.0 * cp**2 / (_SQRT2 * B), np.full(H, first_stage_weight),
                        first_stage_weight * 2.0 * cp, c / (_SQRT2 * B), np.ones(H)])
    return sens, np.where(sens > 0, weight, 1.0)


def linear_noise(horizon: int, d: int, budget: PrivacyBudget, *, calibration: str = "tight",
                 feature_norm_bound: float = 1.0, delta_fail: float = 0.05, owner: str = "linear_noise"
                 ) -> LinearNoise:
    """The :class:`LinearNoise` of DP-VAPVI for ``budget`` (module docstring).

    paper/sound: ρ0 = ρ/(5H) per statistic, vectors σ = Δ/√(2ρ0) with Δ = 2BH², 2BH, 2BH; matrices
    sound s² = B⁴/(2ρ0) (replace-one Frobenius sensitivity √2·B²), paper s² = 1/(4ρ0) as printed
    (an add/remove sensitivity of 1: 2ρ0 per matrix under replacement, 1.4ρ in total).
    tight: the exact μ split over the released streams with per-step sensitivities."""
    check_option(calibration, "calibration", CALIBRATIONS, owner=owner)
    H, B = int(horizon), float(feature_norm_bound)
    if calibration == "tight":
        sens, weight = _linear_weights(H, B, 1.0 / H)
        if budget.rho is None and not budget.delta and budget.is_private:
            raise param_error("budget", owner, "a rho budget or an (epsilon, delta) budget with delta > 0 "
                              "(Gaussian noise cannot give pure DP)", budget)
        mu = gaussian_mu(budget)
        on = sens.ravel() > 0
        std: np.ndarray = np.zeros(sens.size)
        if math.isfinite(mu):
            std[on] = split_gaussian_streams(mu, sens.ravel()[on], weights=weight.ravel()[on]) * _SLACK
        std = std.reshape(sens.shape)
    else:
        rho = budget_rho(budget, calibration, owner)
        rho0 = rho / (5.0 * H)
        vec = 0.0 if math.isinf(rho) else 1.0 / math.sqrt(2.0 * rho0)      # σ/Δ of a ρ0-zCDP release
        sens = np.vstack([np.full(H, _SQRT2 * B * B), np.full(H, 2.0 * B * H * H), np.full(H, 2.0 * B * H),
                          np.full(H, _SQRT2 * B * B), np.full(H, 2.0 * B * H)])
        std = sens * vec
        if calibration == "paper":
            s = 0.0 if math.isinf(rho) else 1.0 / (2.0 * math.sqrt(rho0))
            std[list(MATRIX_STREAMS)] = _SQRT2 * s
    shift = matrix_shift(std[list(MATRIX_STREAMS)], d, H, delta_fail)
    return LinearNoise(std, sens, shift)


class LinearSignal(NamedTuple):
    """One released stream of DP-VAPVI against its typical value: ``name`` (in
    :data:`LINEAR_STREAMS`), the worst step ``h``, the noise (``noise``: operator-norm shift E/2
    of a Gram matrix, per-coordinate σ of a vector) and the typical ``signal`` it perturbs."""

    name: str
    h: int
    noise: float
    signal: float

    @property
    def ratio(self) -> float:
        return self.noise / self.signal if self.signal > 0 else math.inf


def linear_noise_to_signal(noise: LinearNoise, K: int, feature_norm_bound: float, d: int) -> list[LinearSignal]:
    """The noise of each released DP-VAPVI stream against its typical value, from public sizes only.

    A Gram matrix Σ φφᵀ over K regression trajectories of features of norm ≤ B has eigenvalues
    K·B²/d when the features spread evenly over the d directions; its noise is the shift E/2. A
    vector Σ φ·y with y in [0, Δ/(2B)] has coordinates of typical size K·Δ/(4√d); its noise is the
    stream's σ. Each stream is reported at its worst step; streams released at no step are left out.
    Shared by ``privrl plan dp-vapvi`` and the fit's "noise-dominated" warning."""
    B = float(feature_norm_bound)
    out = []
    for j, name in enumerate(LINEAR_STREAMS):
        on = [h for h in range(noise.std.shape[1]) if noise.released(j, h)]
        if not on:
            continue
        if j in MATRIX_STREAMS:
            m = MATRIX_STREAMS.index(j)
            h = max(on, key=lambda h: noise.shift[m, h])
            out.append(LinearSignal(name, h, float(noise.shift[m, h]), K * B * B / d))
        else:
            h = max(on, key=lambda h: noise.std[j, h] / noise.sensitivity[j, h])
            out.append(LinearSignal(name, h, float(noise.std[j, h]),
                                    K * float(noise.sensitivity[j, h]) / (4 * math.sqrt(d))))
    return out
