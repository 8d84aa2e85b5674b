"""Noise plans and closed-form constants of Zhou (2022): sensitivities, noise scales (paper / sound /
tight), regularity constants (Assumption 2), confidence radii (Lemma 3.1), step size and regret
bounds. Pure functions of public parameters.

Notation follows the spec (``specs/zhou-2022-linear-mixture.md``): ``m = max(1, ⌈log2 K⌉)``, the
operator-norm bound is ``Υ`` (the paper's ``Σ_{p,1}``), the four streams are ``p1`` (Gram of
``ϕ``), ``p2`` (``ϕ·V``), ``r1`` (Gram of ``φ``), ``r2`` (``φ·r``), each one counter (central) or
one message (local) per step h. Steps are 0-indexed here: step h's optimistic Q is clipped to
``[0, H − h]``, so ``V_{h+1} ∈ [0, c_h]`` with ``c_h = H − h − 1`` and ``‖ϕ_h‖ ≤ L_ϕ·c_h/H``.

**A noise plan** (:class:`NoisePlan`, :func:`noise_plan`) gives the std and the ℓ2-sensitivity of
every (stream, step), the number of Gaussian releases of one user's item in each (``count``: the
``m`` tree nodes containing it, or 1 local message) and the bounds on ``(ϕ, V)`` the sensitivities
rely on (enforced by the privatizers). Calibrations (the one switch ``calibration``):

* ``"paper"`` — Thm 6.4's ``σ_x = (HΔ_x/ε)√(32 m ln(4H/δ))`` with the printed add/remove
  sensitivities ``Δ = L_ϕ², L_ϕH, 1, 1`` (labelled: too small for replace-one neighbours; the ledger
  records what the noise truly buys under replacement);
* ``"sound"`` — the same formula with the replace-one sensitivities ``√2L_ϕ², 2L_ϕH, √2, 2``
  (spec A15). The whole run is ``ρ = ε²/(16H ln(4H/δ))``-zCDP, ``(ε + ρ, δ)``-DP by the paper's
  composition (:func:`paper_epsilon_total`); the exact accountant gives only 0.13–0.22 of ε;
* ``"tight"`` (default) — the run is **one Gaussian mechanism**: one user's item enters ``count``
  releases of every (stream, step), so ``μ² = count·Σ_{x,h} Δ_{x,h}²/σ_{x,h}²``, and μ is set
  exactly to the budget (:func:`~privrl.privacy.calibration.gaussian_mu`: the analytic Gaussian μ of
  (ε, δ), or √(2ρ)). Sensitivities are those of the actual releases: per step,
  ``Δ_p1(h) = g(d1)·L_h²``, ``Δ_p2(h) = 2L_h·c_h`` (``L_h = L_ϕ c_h/H``; the last step's ``ϕ ≡ 0``
  and ``V ≡ 0``: nothing to release there), ``Δ_r1 = g(d2)``, ``Δ_r2 = 2``, with ``g(d) = √2`` for
  d ≥ 2 and 1 for d = 1 (a 1×1 Gram moves by at most ``L²``). μ is split across the (stream, step)
  pairs to minimise the private part of the regret bound (:func:`tight_stds`).

**The split** (the analysis of Thms 4.1/6.5 per step). Step h contributes
``2β_p(h)√(2Kd1κ) + 2Hβ_r(h)√(2Kd2κ)`` to the explicit regret bound, and the noise enters β only
through ``√(d λ_max) + ν`` (Lemma 3.1) with ``λ_max = 3Υ``, ``Υ = σ_1·k_Υ`` (Lemma B.4; the shift 2Υ
makes ``Z ⪰ Υ``) and ``ν = ‖z‖/√λ_min = σ_2 k_χ/√(σ_1 k_Υ)`` (Lemma B.5). So the noise stds enter as

    f(σ) = Σ_h √d1 [√(3 d1 k_Υp σ_p1) + k_χp σ_p2/√(k_Υp σ_p1)] + H√d2 [√(3 d2 k_Υr σ_r1) + k_χr σ_r2/√(k_Υr σ_r1)]

(``k_Υ = 4√d + √(8 ln(8KH/α))``, ``k_χ = √d + √(2 ln(4KH/α))``; the common factors √M and
``2√(2Kκ)`` drop out, the log terms κ_p, κ_r are taken equal). ``f`` is homogeneous of degree ½ and
the constraint of degree −2, so the optimum of ``f`` s.t. ``μ² = C(σ)`` minimises the scale-free
``f(σ)·C(σ)^{1/4}``; we solve that numerically (L-BFGS on log σ, analytic gradient) and rescale σ to μ
exactly. The weights use α = 0.05 whatever the estimator's ``alpha``, so the noise — and the ledger —
never depend on a utility knob. Central and local plans split alike (√M is common).

Closed forms kept for reference (spec §3.3): Υ (Lemma B.4), the shift ``2cΥ``, ``λ_min = (2c−1)Υ``,
``λ_max = (2c+1)Υ``, ``ν``, the radii β_p, β_r of Lemma 3.1 and the explicit regret bounds; all of
them accept per-step arrays (shape ``(H,)``) and reduce to the paper's scalars for uniform plans.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._threads import single_threaded_blas
from privrl._validation import check_option, param_error
from privrl.privacy import events
from privrl.privacy.budget import PrivacyBudget
from privrl.privacy.calibration import CALIBRATIONS, gaussian_mu
from privrl.privacy.factorization import (
    blt_factorization,
    prefix_variance_factor,
    sqrt_sensitivity_factor,
)
from privrl.privacy.tree import max_membership, symmetric_gaussian, tree_depth

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = ["StreamScales", "RegularityConstants", "NoisePlan", "noise_plan", "sensitivities",
           "tight_sensitivities", "noise_stds", "tight_stds", "split_objective", "upsilon_theory",
           "upsilon_monte_carlo", "regularity_constants", "confidence_radii", "po_step_size",
           "paper_epsilon_total", "paper_rho_total", "vi_regret_bound", "po_regret_bound", "tree_depth",
           "STREAMS", "PRIVATIZERS", "COUNTERS", "SPLIT_ALPHA"]

STREAMS = ("p1", "p2", "r1", "r2")
#: the noisy privatizers
PRIVATIZERS = ("central", "local")
#: the central continual counters: Zhou's binary tree (Lemma 6.1), the square-root factorization or
#: its constant-memory BLT stand-in (:mod:`privrl.privacy.factorization`; both tight calibration
#: only); "auto": the BLT under the tight calibration (the least noise at the budget in memory
#: independent of K), the tree otherwise
COUNTERS = ("auto", "tree", "factorization", "blt")
#: the counters that are one Gaussian release of a factorization ``C x`` (tight calibration only)
FACTORIZATIONS = ("factorization", "blt")
#: the α at which the tight split's weights are evaluated (never the estimator's own α: see module doc)
SPLIT_ALPHA = 0.05
# tight plans sit exactly on μ; this relative slack keeps the ledger's float sums inside the budget
_SLACK = 1.0 + 1e-9


@dataclass(frozen=True)
class StreamScales:
    """One number (or one per step, shape ``(H,)``) per stream: sensitivity or noise std."""

    p1: float | np.ndarray
    p2: float | np.ndarray
    r1: float | np.ndarray
    r2: float | np.ndarray

    def as_dict(self) -> dict[str, float | np.ndarray]:
        return {k: getattr(self, k) for k in STREAMS}

    def rows(self, horizon: int) -> np.ndarray:
        """The ``(4, H)`` table (scalars broadcast over the steps)."""
        return np.stack([np.broadcast_to(np.asarray(getattr(self, k), dtype=float), (horizon,)) for k in STREAMS])

    @classmethod
    def of_rows(cls, table: np.ndarray) -> StreamScales:
        return cls(*(np.asarray(row, dtype=float) for row in table))


@dataclass(frozen=True)
class RegularityConstants:
    """Assumption 2 constants (data-independent) and the shift ``γ`` and PD floor of each part;
    floats, or ``(H,)`` arrays (one per step)."""

    lambda_max_p: object
    lambda_min_p: object
    nu_p: object
    lambda_max_r: object
    lambda_min_r: object
    nu_r: object
    shift_p: float | np.ndarray
    shift_r: float | np.ndarray
    upsilon_p: object = 0.0
    upsilon_r: object = 0.0

    def as_dict(self) -> dict[str, object]:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}


# --------------------------------------------------------------------------- sensitivities and σ
def sensitivities(d1: int, horizon: int, *, value_feature_bound: float | None = None,
                  calibration: str = "sound") -> StreamScales:
    """ℓ2 (Frobenius for Grams) sensitivities of one user's item in each stream, uniform over the
    steps: ``"paper"`` the printed add/remove ``L_ϕ², L_ϕH, 1, 1``; otherwise replace-one
    ``√2L_ϕ², 2L_ϕH, √2, 2`` (``‖xxᵀ − x'x'ᵀ‖_F ≤ √2L²``, ``‖xy − x'y'‖ ≤ 2LY``)."""
    L = math.sqrt(d1) * horizon if value_feature_bound is None else float(value_feature_bound)
    paper = StreamScales(L * L, L * horizon, 1.0, 1.0)
    if calibration == "paper":
        return paper
    return StreamScales(math.sqrt(2) * paper.p1, 2 * paper.p2, math.sqrt(2), 2.0)


def step_ranges(horizon: int) -> np.ndarray:
    """``c_h = H − h − 1``: the range of ``V_{h+1}`` (0-indexed steps), so ``y_p[h] ∈ [0, c_h]``."""
    return horizon - 1.0 - np.arange(horizon, dtype=float)


def _gram_factor(d: int) -> float:
    """``sup ‖xxᵀ − yyᵀ‖`` over ``‖x‖, ‖y‖ ≤ 1`` on the released upper triangle: √2 (d ≥ 2), 1 (d = 1)."""
    return math.sqrt(2.0) if d >= 2 else 1.0


def tight_sensitivities(d1: int, d2: int, horizon: int, *, value_feature_bound: float | None = None) -> StreamScales:
    """Per-step replace-one sensitivities of the actual releases (module doc): ``(H,)`` arrays."""
    H = int(horizon)
    L = math.sqrt(d1) * H if value_feature_bound is None else float(value_feature_bound)
    c = step_ranges(H)
    Lh = L * c / H
    return StreamScales(_gram_factor(d1) * Lh**2, 2.0 * Lh * c, np.full(H, _gram_factor(d2)), np.full(H, 2.0))


def noise_stds(sens: StreamScales, *, horizon: int, epsilon: float, delta: float, depth: int) -> StreamScales:
    """Thm 6.4's σ per stream: ``σ = (HΔ/ε)√(32 m ln(4H/δ))``; ``depth`` is ``m`` (central tree)
    or 1 (local randomiser, spec §3.4). ``epsilon = inf`` gives 0 (non-private)."""
    if math.isinf(epsilon):
        return StreamScales(0.0, 0.0, 0.0, 0.0)
    factor = horizon / epsilon * math.sqrt(32 * depth * math.log(4 * horizon / delta))
    return StreamScales(*(factor * np.asarray(v) if np.ndim(v) else factor * v for v in sens.as_dict().values()))


def _split_constants(d1: int, d2: int, horizon: int, n_episodes: int) -> tuple[np.ndarray, ...]:
    """``(w, a, b)`` per part (p, r) of the split objective (module doc): the part's weight, the
    coefficient of ``√σ_1`` and of ``σ_2/√σ_1``."""
    H, K, alpha = int(horizon), int(n_episodes), SPLIT_ALPHA
    d = max(d1, d2)
    tail_u = math.sqrt(8 * math.log(8 * K * H / alpha))
    tail_x = math.sqrt(2 * math.log(4 * K * H / alpha))
    k_u = np.array([4 * math.sqrt(d) + tail_u, 4 * math.sqrt(d2) + tail_u])
    k_x = np.array([math.sqrt(d1) + tail_x, math.sqrt(d2) + tail_x])
    dims = np.array([d1, d2], dtype=float)
    w = np.array([math.sqrt(d1), H * math.sqrt(d2)])
    return w, np.sqrt(3 * dims * k_u), k_x / np.sqrt(k_u)


def split_objective(std: np.ndarray, *, d1: int, d2: int, n_episodes: int) -> float:
    """``f(σ)`` of the module doc for a ``(4, H)`` std table (steps with ``σ_1 = 0`` release nothing
    and contribute nothing)."""
    H = std.shape[1]
    w, a, b = _split_constants(d1, d2, H, n_episodes)
    total = 0.0
    for part, (i1, i2) in enumerate(((0, 1), (2, 3))):
        s1, s2 = std[i1], std[i2]
        on = s1 > 0
        total += w[part] * float(np.sum(a[part] * np.sqrt(s1[on]) + b[part] * s2[on] / np.sqrt(s1[on])))
    return total


def tight_stds(sens: np.ndarray, mu: float, count: int, *, d1: int, d2: int, n_episodes: int) -> np.ndarray:
    """The ``(4, H)`` stds with ``count·Σ Δ²/σ² = μ²`` (to relative 1e-9 below) minimising the
    split objective (module doc). Entries with Δ = 0 get σ = 0; ``mu = inf`` gives zeros."""
    sens = np.asarray(sens, dtype=float)
    out = np.zeros_like(sens)
    if math.isinf(mu):
        return out
    on = sens > 0
    if not np.any(on):
        return out
    H = sens.shape[1]
    # a step releases its Gram and its moment together (both vanish at the same steps)
    if not np.array_equal(on[0], on[1]) or not np.array_equal(on[2], on[3]):
        raise param_error("sens", "tight_stds", "Gram and moment sensitivities that vanish at the same steps", sens)
    w, a, b = _split_constants(d1, d2, H, n_episodes)
    load = count * sens[on] ** 2                                          # row-major: p1, p2, r1, r2
    n_on = [int(on[i].sum()) for i in range(4)]
    coef_a = np.concatenate([np.full(n_on[0], w[0] * a[0]), np.zeros(n_on[1]),
                             np.full(n_on[2], w[1] * a[1]), np.zeros(n_on[3])])
    idx = np.cumsum([0] + n_on)
    pairs = [(slice(idx[0], idx[1]), slice(idx[1], idx[2]), w[0] * b[0]),
             (slice(idx[2], idx[3]), slice(idx[3], idx[4]), w[1] * b[1])]

    def objective(u: np.ndarray) -> tuple[float, np.ndarray]:
        s = np.exp(u)
        grad_f = np.zeros_like(s)
        f = float(np.sum(coef_a * np.sqrt(s)))
        grad_f += 0.5 * coef_a * np.sqrt(s)                               # σ ∂/∂σ of a√σ
        for one, two, coef in pairs:
            term = coef * s[two] / np.sqrt(s[one])
            f += float(term.sum())
            grad_f[two] += term                                           # σ_2 ∂/∂σ_2
            grad_f[one] -= 0.5 * term                                     # σ_1 ∂/∂σ_1
        C = float(np.sum(load / s**2))
        grad_C = -2.0 * load / s**2                                       # σ ∂C/∂σ
        return math.log(f) + 0.25 * math.log(C), grad_f / f + 0.25 * grad_C / C

    from scipy.optimize import minimize

    start = np.log(np.sqrt(load))                                         # σ ∝ Δ: the even split
    with single_threaded_blas():                                          # a 4H-variable problem
        res = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-10})
    u = res.x if res.success or objective(res.x)[0] <= objective(start)[0] else start
    s = np.exp(u - u.max())
    used = float(np.sum(load / s**2))
    s = s * math.sqrt(used) / mu * _SLACK                                 # exactly μ (just below)
    out[on] = s
    return out


# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class NoisePlan:
    """The noise of one LinOpt run (module doc): ``std`` and ``sensitivity`` ``(4, H)`` (rows in
    :data:`STREAMS` order; the ledger's replace-one Δ of each Gaussian release), ``count`` Gaussian
    releases of one user's item per (stream, step) — ``m`` tree nodes (central tree), 1 release of
    ``A x`` (central factorization) or 1 message (local) — ``n_noise_terms`` the multiplier ``M`` of
    the per-entry noise variance ``Mσ²`` of one release (``m`` tree nodes, ``K`` messages, or
    ``s_n² = Σ_{k<n} c_k²`` for the factorization; a float), and the bounds the sensitivities rely
    on: ``‖x_p[h]‖ ≤ x_bound[h]``, ``y_p[h] ∈ [0, y_bound[h]]`` (``‖x_r‖ ≤ 1``, ``y_r ∈ [0, 1]``).
    ``counter`` names the central counter; ``sensitivity_factor`` is what the item's Δ was
    multiplied by to give ``sensitivity`` (``s_n`` for the factorization's one release of ``A x``,
    1 otherwise), so ``item_sensitivity`` is the Δ of one user's item."""

    privatizer: str
    calibration: str
    std: np.ndarray
    sensitivity: np.ndarray
    count: int
    n_noise_terms: float
    x_bound: np.ndarray
    y_bound: np.ndarray
    counter: str = "tree"
    sensitivity_factor: float = 1.0

    @property
    def item_sensitivity(self) -> np.ndarray:
        """The ``(4, H)`` replace-one ℓ2-sensitivities of one user's item (before ``sensitivity_factor``)."""
        return self.sensitivity / self.sensitivity_factor

    @property
    def horizon(self) -> int:
        return int(self.std.shape[1])

    @property
    def is_private(self) -> bool:
        return bool(np.any(self.std > 0))

    @property
    def sigma(self) -> StreamScales:
        return StreamScales.of_rows(self.std)

    @property
    def noise_std(self) -> float:
        """The largest stream's std (data-independent)."""
        return float(self.std.max())

    @property
    def mu(self) -> float:
        """``√(count·Σ Δ²/σ²)``: the whole run (one user) as one Gaussian mechanism; ∞ without noise."""
        on = self.sensitivity > 0
        if np.any(on & (self.std == 0)):
            return math.inf
        return math.sqrt(self.count * float(np.sum((self.sensitivity[on] / self.std[on]) ** 2)))

    def stream_event(self, j: int) -> object:
        """The privacy loss of one user in stream ``j`` (all its steps; the composition that
        :meth:`~privrl.privacy.tree.BinaryCounter.event` states for the stream's counters)."""
        parts = []
        for sigma, sens in zip(self.std[j], self.sensitivity[j]):
            nm = math.inf if sens == 0 else sigma / sens
            parts.append(events.self_composed(events.gaussian(nm), self.count) if 0 < nm < math.inf
                         else events.gaussian(nm))
        return parts[0] if len(parts) == 1 else events.composed(parts)

    def events(self) -> list[DpEvent]:
        """The privacy loss of one user: one event per stream (empty when non-private)."""
        return [self.stream_event(j) for j in range(4)] if self.is_private else []

    def public(self) -> dict[str, object]:
        return {"privatizer": self.privatizer, "calibration": self.calibration, "std": self.std.tolist(),
                "sensitivity": self.sensitivity.tolist(), "count": self.count, "n_noise_terms": self.n_noise_terms,
                "noise_std": self.noise_std, "mu": self.mu,
                **({"counter": self.counter} if self.privatizer == "central" else {})}


def noise_plan(privatizer: str, budget: PrivacyBudget, calibration: str = "tight", *, n_episodes: int, horizon: int,
               d1: int, d2: int, value_feature_bound: float | None = None, counter: str = "tree",
               owner: str = "noise_plan") -> NoisePlan:
    """The :class:`NoisePlan` of a LinOpt run (module doc). ``budget``: (ε, δ > 0), or ρ under
    ``"tight"``; an infinite budget gives zero noise (the non-private learner). ``counter``: the
    central privatizer's continual counter, ``"tree"`` (Zhou's binary tree: ``count = m`` node
    releases, ``M = m``), ``"factorization"`` (the square-root factorization: one Gaussian release
    of ``A x`` with sensitivity ``s_n Δ``, ``count = 1``, ``M = s_n²``, ``n = K − 1``) or ``"blt"``
    (the BLT factorization: one release of ``C x``, sensitivity ``s_C Δ``, ``M = s_B²``); the two
    factorizations under tight calibration only — Thm 6.4's closed forms are the tree's; ``"auto"``:
    the BLT under tight, the tree otherwise. Ignored by the local privatizer.
    Plans are cached (their arrays are read-only): a sweep computes each split once."""
    check_option(privatizer, "privatizer", PRIVATIZERS, owner=owner)
    check_option(calibration, "calibration", CALIBRATIONS, owner=owner)
    check_option(counter, "counter", COUNTERS, owner=owner)
    if counter == "auto":
        counter = "blt" if calibration == "tight" else "tree"
    if privatizer == "central" and counter in FACTORIZATIONS and calibration != "tight":
        raise param_error("counter", owner, "'tree' when the 'calibration' parameter is "
                          f"{calibration!r} (Thm 6.4's closed form is the binary tree's; the factorization "
                          "counters are calibrated by 'tight')", counter)
    if privatizer != "central":
        counter = "tree"
    if budget.is_private and calibration != "tight" and (budget.rho is not None or not budget.delta):
        raise param_error("budget", owner, f"an (epsilon, delta) budget with delta > 0 for calibration "
                          f"{calibration!r} (Thm 6.4's closed form; 'tight' also takes rho)", budget)
    L = math.sqrt(d1) * horizon if value_feature_bound is None else float(value_feature_bound)
    key = (budget.epsilon, budget.delta, budget.rho) if budget.is_private else None
    return _noise_plan(privatizer, key, calibration, int(n_episodes), int(horizon), int(d1), int(d2), L, counter)


@functools.lru_cache(maxsize=256)
def _noise_plan(privatizer: str, budget_key: tuple | None, calibration: str, K: int, H: int, d1: int, d2: int,
                L: float, counter: str = "tree") -> NoisePlan:
    if budget_key is None:
        budget = PrivacyBudget.non_private()
    else:
        eps, delta, rho = budget_key
        budget = PrivacyBudget(rho=rho) if rho is not None else PrivacyBudget(epsilon=eps, delta=delta)
    central = privatizer == "central"
    count = max(1, max_membership(K - 1)) if central else 1
    terms: float = tree_depth(K) if central else K
    factor = 1.0
    if central and counter == "factorization":
        # one Gaussian release of A x (n = K − 1 items): sensitivity s_n Δ, prefix variance ≤ s_n² σ²
        count, terms, factor = 1, prefix_variance_factor(K - 1), sqrt_sensitivity_factor(K - 1)
    elif central and counter == "blt":
        # one Gaussian release of C x: sensitivity s_C Δ, prefix variance ≤ s_B² σ² (n = K − 1 ≥ 2;
        # fewer items: C = I, B = L)
        n = K - 1
        blt = blt_factorization(n)
        count, terms = 1, (blt.row_norm2(n) if n > 1 else 1.0)
        factor = math.sqrt(blt.column_norm2(n)) if n > 1 else 1.0
    if calibration == "tight" and budget.is_private:
        sens = factor * tight_sensitivities(d1, d2, H, value_feature_bound=L).rows(H)
        c = step_ranges(H)
        x_bound, y_bound = L * c / H, c
        std = tight_stds(sens, gaussian_mu(budget), count, d1=d1, d2=d2, n_episodes=K)
    elif calibration == "tight":          # no noise: the non-private learner's bounds (exactly NonPrivate)
        sens = factor * tight_sensitivities(d1, d2, H, value_feature_bound=L).rows(H)
        x_bound, y_bound, std = np.full(H, L), np.full(H, float(H)), np.zeros_like(sens)
    else:
        sens = sensitivities(d1, H, value_feature_bound=L, calibration="sound").rows(H)
        x_bound, y_bound = np.full(H, L), np.full(H, float(H))
        if not budget.is_private:
            std = np.zeros_like(sens)
        else:
            assert budget.epsilon is not None and budget.delta is not None  # (ε, δ > 0): see noise_plan
            rule = sensitivities(d1, H, value_feature_bound=L, calibration=calibration)
            std = noise_stds(rule, horizon=H, epsilon=float(budget.epsilon), delta=float(budget.delta),
                             depth=tree_depth(K) if central else 1).rows(H)   # sound/paper: the tree
    arrays = [np.array(a, dtype=float) for a in (std, sens, x_bound, y_bound)]
    for a in arrays:
        a.setflags(write=False)
    std, sens, x_bound, y_bound = arrays
    return NoisePlan(privatizer, calibration, std, sens, count, terms, x_bound, y_bound, counter, factor)


# --------------------------------------------------------------------------- Assumption 2, Lemma 3.1
def upsilon_theory(sigma: float | np.ndarray, *, n_noise_terms: float, dim: int, n_episodes: int, horizon: int,
                   alpha: float) -> float | np.ndarray:
    """``Υ = σ √M (4√dim + √(8 ln(8KH/α)))`` (Lemma B.4 with entry variance ``Mσ²``, failure
    ``α/(4KH)`` per (k,h)); ``M = m`` (central tree), ``K`` (local) or ``s_n²`` (central
    factorization: its prefix noise is itself a symmetric Gaussian of entry variance
    ``σ² Σ_{k<t} c_k² ≤ s_n² σ²``) — the plan's ``n_noise_terms``."""
    return sigma * math.sqrt(n_noise_terms) * (4 * math.sqrt(dim)
                                               + math.sqrt(8 * math.log(8 * n_episodes * horizon / alpha)))


def upsilon_monte_carlo(sigma: float | np.ndarray, *, n_noise_terms: float, dim: int, n_episodes: int, horizon: int,
                        alpha: float, n_samples: int = 4000) -> float | np.ndarray:
    """A tighter data-independent ``Υ`` [derived; a knob, not the paper's]: the Monte-Carlo mean of
    ``‖N‖`` (fixed public seed, plus 3 standard errors) plus the Gaussian-concentration tail
    ``2s√(ln(4KH/α))``, ``s = σ√M``. ``‖N‖_op`` is ``√2 s``-Lipschitz in the standard Gaussian
    coordinates of the upper triangle (``‖N‖_op ≤ ‖N‖_F ≤ √2‖g‖``), so
    ``P(‖N‖ ≥ E‖N‖ + t) ≤ exp(−t²/(4s²)) = α/(4KH)``."""
    s = np.asarray(sigma, dtype=float) * math.sqrt(n_noise_terms)
    out = s * (_mc_norm_mean(int(dim), int(n_samples)) + 2 * math.sqrt(math.log(4 * n_episodes * horizon / alpha)))
    return out if out.ndim else float(out)


@functools.lru_cache(maxsize=64)
def _mc_norm_mean(dim: int, n_samples: int) -> float:
    """Monte-Carlo mean of ``‖N‖_op`` for a standard symmetric Gaussian ``dim × dim`` matrix, plus
    3 standard errors (fixed public seed: a constant of ``(dim, n_samples)``, cached)."""
    rng = np.random.default_rng(20220601 + dim)
    norms = np.linalg.norm(symmetric_gaussian(rng, (n_samples, dim, dim), 1.0), ord=2, axis=(1, 2))
    return float(norms.mean() + 3 * norms.std(ddof=1) / math.sqrt(n_samples))


def _chi_bound(sigma: float | np.ndarray, n_noise_terms: float, dim: int, n_episodes: int, horizon: int,
               alpha: float) -> float | np.ndarray:
    """``‖z‖ ≤ √M σ (√dim + √(2 ln(4KH/α)))`` (Lemma B.5, Laurent–Massart)."""
    return math.sqrt(n_noise_terms) * sigma * (math.sqrt(dim)
                                               + math.sqrt(2 * math.log(4 * n_episodes * horizon / alpha)))


def regularity_constants(sigmas: StreamScales, *, d1: int, d2: int, n_episodes: int, horizon: int, alpha: float,
                         n_noise_terms: float, upsilon: str = "theory", shift_scale: float = 1.0,
                         lam: float = 1.0) -> RegularityConstants:
    """Assumption 2 constants of a noisy privatizer (proof of Thm 6.5; spec §3.3, §3.4), per step
    when ``sigmas`` holds ``(H,)`` arrays.

    ``Z = N + γI`` with ``γ = 2c·Υ`` (``c = shift_scale``, paper: ``c = 1``); on ``‖N‖ ≤ Υ``:
    ``(2c−1)Υ I ⪯ Z ⪯ (2c+1)Υ I`` and ``ν = ‖z‖-bound/√λ_min``. Where a part has no noise (an
    infinite budget, or a step that releases nothing) it is ``NonPrivate(lam)``: ``λ_max = λ_min =
    γ = lam``, ``ν = 0``.
    """
    scalar = all(np.ndim(v) == 0 for v in sigmas.as_dict().values())
    if scalar and sigmas.p1 == 0 and sigmas.r1 == 0:
        return RegularityConstants(lam, lam, 0.0, lam, lam, 0.0, lam, lam)
    d = max(d1, d2)
    kw: dict[str, Any] = dict(n_noise_terms=n_noise_terms, n_episodes=n_episodes, horizon=horizon, alpha=alpha)
    ups = upsilon_theory if upsilon == "theory" else upsilon_monte_carlo
    lo, hi = 2 * shift_scale - 1, 2 * shift_scale + 1
    out = []
    for s1, s2, dim_u, dim in ((sigmas.p1, sigmas.p2, d if upsilon == "theory" else d1, d1),   # √d in Υ_p (A12)
                               (sigmas.r1, sigmas.r2, d2, d2)):
        u = ups(s1, dim=dim_u, **kw)
        chi = _chi_bound(s2, n_noise_terms, dim, n_episodes, horizon, alpha)
        if scalar:
            out.append((hi * u, lo * u, chi / math.sqrt(lo * u), 2 * shift_scale * u, u))
            continue
        u = np.asarray(u, dtype=float)
        noisy = u > 0
        lmin = np.where(noisy, lo * u, lam)
        out.append((np.where(noisy, hi * u, lam), lmin, np.asarray(chi, dtype=float) / np.sqrt(lmin),
                    np.where(noisy, 2 * shift_scale * u, lam), u))
    (xp, np_, nup, sp, up), (xr, nr, nur, sr, ur) = out
    return RegularityConstants(xp, np_, nup, xr, nr, nur, sp, sr, up, ur)


def confidence_radii(c: RegularityConstants, *, d1: int, d2: int, n_episodes: int, horizon: int, alpha: float,
                     value_feature_bound: ArrayLike | None = None,
                     noise_term_scale: float = 1.0) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``(β_p(α), β_r(α))`` of Lemma 3.1 (with ``K L²/(d1 λ_min,p)`` in the log-det term, which is
    the paper's ``K H²/λ_min,p`` for ``L = √d1 H``); per step when the constants (or the feature
    bound ``L``, e.g. ``L_ϕ c_h/H``) are ``(H,)`` arrays.

    Each radius is a self-normalised martingale term plus the regulariser's terms ``√(d λ_max) + ν``
    (the bias of the shift ``γI + N`` and the noise ``z`` of the moment release);
    ``noise_term_scale`` multiplies the latter where the privatizer adds noise (``Υ > 0``; 1: Lemma
    3.1; a utility knob, never the noise). A part without noise (the non-private ridge ``λI``) keeps
    its ``√(d λ)`` whole."""
    H, K = horizon, n_episodes
    L2 = d1 * H * H if value_feature_bound is None else np.asarray(value_feature_bound, dtype=float) ** 2
    s_p = np.where(np.asarray(c.upsilon_p) > 0, noise_term_scale, 1.0)
    s_r = np.where(np.asarray(c.upsilon_r) > 0, noise_term_scale, 1.0)
    beta_p = (H / 2) * np.sqrt(2 * math.log(H / alpha) + d1 * np.log1p(K * L2 / (d1 * np.asarray(c.lambda_min_p)))) \
        + s_p * (np.sqrt(d1 * np.asarray(c.lambda_max_p)) + c.nu_p)
    beta_r = 0.5 * np.sqrt(2 * math.log(H / alpha) + d2 * np.log1p(K / (d2 * np.asarray(c.lambda_min_r)))) \
        + s_r * (np.sqrt(d2 * np.asarray(c.lambda_max_r)) + c.nu_r)
    return _plain(beta_p), _plain(beta_r)


def _plain(x: ArrayLike) -> float | np.ndarray:
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def po_step_size(n_actions: int, n_episodes: int, horizon: int) -> float:
    """``η = √(2 ln|A| / (H² K))`` (Sec 8, term (i), after Cai et al. 2020)."""
    return math.sqrt(2 * math.log(n_actions) / (horizon**2 * n_episodes)) if n_actions > 1 else 0.0


def paper_rho_total(epsilon: float, delta: float, horizon: int) -> float:
    """zCDP of the whole central (or local) run with the paper's σ: ``ε²/(16 H ln(4H/δ))``."""
    return epsilon**2 / (16 * horizon * math.log(4 * horizon / delta))


def paper_epsilon_total(epsilon: float, delta: float, horizon: int) -> float:
    """The exact ε of Thm 6.4's own composition: ``ε + ε²/(16 H ln(4H/δ))`` (the paper: "O(ε, δ)")."""
    return epsilon + paper_rho_total(epsilon, delta, horizon)


def _kappas(c: RegularityConstants, n_episodes: int, horizon: int, d2: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.log1p(n_episodes * horizon**2 / np.asarray(c.lambda_min_p)),
            np.log1p(n_episodes / (d2 * np.asarray(c.lambda_min_r))))


def _private_terms(c: RegularityConstants, beta_p: ArrayLike, beta_r: ArrayLike, d1: int, d2: int, K: int,
                   H: int) -> float:
    """``Σ_h 2β_p(h)√(2Kd1κ_p) + 2Hβ_r(h)√(2Kd2κ_r)`` — for uniform constants the paper's
    ``2β_p√(2THd1κ_p) + 2Hβ_r√(2THd2κ_r)`` (``T = KH``)."""
    kp, kr = _kappas(c, K, H, d2)
    per_step = (2 * np.asarray(beta_p) * np.sqrt(2 * K * d1 * kp)
                + 2 * H * np.asarray(beta_r) * np.sqrt(2 * K * d2 * kr))
    return float(np.sum(np.broadcast_to(per_step, (H,))))


def vi_regret_bound(c: RegularityConstants, beta_p: ArrayLike, beta_r: ArrayLike, *, d1: int, d2: int, n_episodes: int,
                    horizon: int, alpha: float) -> float:
    """Explicit Thm 4.1 bound read off Sec 7.1, per step:
    ``Σ_h [2β_p√(2Kd1κ_p) + 2Hβ_r√(2Kd2κ_r)] + H√(2T ln(1/α))``, ``T = KH``."""
    H, T = horizon, n_episodes * horizon
    return _private_terms(c, beta_p, beta_r, d1, d2, n_episodes, H) + H * math.sqrt(2 * T * math.log(1 / alpha))


def po_regret_bound(c: RegularityConstants, beta_p: ArrayLike, beta_r: ArrayLike, *, d1: int, d2: int, n_episodes: int,
                    horizon: int, alpha: float, n_actions: int) -> float:
    """Explicit Thm 5.1 bound: ``√(2H³T ln|A|) + 4H√(2T ln(1/α))`` plus the per-step terms of
    :func:`vi_regret_bound`."""
    H, T = horizon, n_episodes * horizon
    return (math.sqrt(2 * H**3 * T * math.log(n_actions)) + 4 * H * math.sqrt(2 * T * math.log(1 / alpha))
            + _private_terms(c, beta_p, beta_r, d1, d2, n_episodes, H))
