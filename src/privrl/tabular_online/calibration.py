"""The count privatizers of private tabular exploration: noise scales, ledger events and E_{ε,β}.

Privacy unit: one user = one episode; neighbours replace one user's trajectory (JDP: the central
agent's releases; LDP: any two inputs of one user's local randomizer). The learner sees the data
only through two families of count streams (DP-UCBVI, spec §2): ``N_h(s, a)`` (``H·S·A``
coordinates) and ``N_h(s, a, s′)`` (``H·S·A·S``). One user's item — the indicators of her
trajectory — is ``H``-hot in each family (one ``(s, a)`` and one ``(s, a, s′)`` per step ``h``).

Sensitivities (replace-one; both families released together, ``D = H·S·A·(S + 1)`` coordinates per
item): replacing a trajectory moves each step's one-hot by at most 2 in ℓ1 and √2 in ℓ2, so

* ℓ1: ``Δ₁ = 2H`` per family, ``4H`` for both (Laplace);
* ℓ2: ``Δ₂ = √(2H)`` per family, ``2√H`` for both (Gaussian).

Pooled counts (``pooled=True``: one count per ``(s, a)`` for all steps, for time-homogeneous MDPs,
``D = S·A·(S + 1)``): the item is a count vector of total ``H`` per family, so ℓ1 is unchanged
(``4H``) but ℓ2 grows to ``√2·H`` per family (all ``H`` visits on one coordinate, the replacement's on
another), ``2H`` for both.

The privatizers (all draw one ``D``-row of noise per insert from the fit's releaser, ``K − 1``
inserts: episode K's data is never used):

* **central, Laplace binary tree** (pure ε-JDP; Qiao & Wang §5.1, Chan, Shi & Song 2011 Alg. 2):
  each item lies in at most ``m = max_membership(K − 1)`` tree nodes, each node a Laplace release
  of ℓ1-sensitivity ``4H``: ``b = 4H·m/ε`` gives ``m·4H/b = ε`` (``tight`` = ``sound``: pure
  composition is exact). ``paper``: as printed, ``ε′ = ε/(2H log K)`` per node and family, node
  noise ``Lap(1/ε′) = Lap(2H log₂K/ε)`` — derived there with the add/remove sensitivity ``H``; the
  ledger records the replace-one truth (ε spent ≈ 2ε·m/log₂K).
* **central, Gaussian tree** (ρ-zCDP or (ε, δ)-JDP): ``m`` Gaussian node releases of ℓ2-sensitivity
  ``2√H`` compose to one Gaussian mechanism with ``μ = √m·2√H/σ``; ``tight``: ``σ = √m·2√H/μ`` with
  μ the budget's exact Gaussian μ (:func:`privrl.privacy.calibration.gaussian_mu`); ``sound``: the
  same from the closed-form ρ of (ε, δ) (Bun & Steinke 2016).
* **central, Gaussian BLT** (Dvijotham et al. 2024; :class:`privrl.privacy.factorization.BLTCounter`):
  one Gaussian release of multiplier ``σ/(s_C·2√H)``; ``σ = s_C·2√H/μ`` (tight only).
* **local, Laplace** (pure ε-LDP; §5.2): each user adds ``Lap(b)`` to every indicator of both
  families; ``b = 4H/ε`` (ℓ1 of any two inputs). ``paper``: ``Lap(2H/ε)`` as printed (add/remove
  reading; the ledger records ``2ε``).
* **local, Gaussian** ((ε, δ)- or ρ-LDP; derived): ``σ = 2√H/μ``.

E_{ε,β} (Assumption 3.1, Lemma 5.8): the post-processing (:mod:`.postprocess`) needs
``|N̂ − N| ≤ E/4`` for every released coordinate with probability ``1 − β/3``. The released noise
of a coordinate at episode k is a sum of at most ``M`` i.i.d. node draws (the tree's ``m``, the
local privatizer's ``K − 1``) or, for the BLT, Gaussian of variance ``σ²·s_B²``. With
``n = K·D`` released coordinates, ``E/4`` is the least ``x`` with ``n·P(|noise| > x) ≤ β/3``:
Gaussian tails exactly (``Φ``), Laplace sums by the Chernoff bound
``P(Σ_{i≤M} L_i > x) ≤ min_t e^{−tx}(1 − b²t²)^{−M}`` (minimiser in closed form). No big-O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from privrl._validation import check_option, param_error
from privrl.privacy import events
from privrl.privacy.calibration import approx_dp_to_zcdp, gaussian_mu
from privrl.privacy.draws import NoiseDeclaration
from privrl.privacy.factorization import BLT, blt_factorization
from privrl.privacy.tree import max_membership

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = ["PRIVATIZERS", "COUNTERS", "CountNoise", "count_noise", "item_size", "laplace_sum_quantile",
           "gaussian_quantile", "l1_sensitivity", "l2_sensitivity"]

PRIVATIZERS = ("central", "local", "none")
COUNTERS = ("auto", "tree", "blt")


def item_size(horizon: int, n_states: int, n_actions: int, pooled: bool = False) -> int:
    """``D = H·S·A·(S + 1)`` (``S·A·(S + 1)`` pooled): the coordinates of one user's item (both families)."""
    return (1 if pooled else int(horizon)) * int(n_states) * int(n_actions) * (int(n_states) + 1)


def l1_sensitivity(horizon: int) -> float:
    """``4H``: replace-one ℓ1 change of one item (both families, module doc)."""
    return 4.0 * horizon


def l2_sensitivity(horizon: int, pooled: bool = False) -> float:
    """``2√H`` (``2H`` pooled): replace-one ℓ2 change of one item (both families, module doc)."""
    return 2.0 * (horizon if pooled else math.sqrt(horizon))


def gaussian_quantile(std: float, n_coords: float, failure: float) -> float:
    """The least ``x`` with ``n·P(|N(0, std²)| > x) ≤ failure`` (union bound)."""
    if std == 0:
        return 0.0
    return std * NormalDist().inv_cdf(1.0 - failure / (2.0 * n_coords))


def _log_laplace_tail(x: float, b: float, terms: int) -> float:
    """log of the Chernoff bound on ``P(Σ_{i≤M} Lap(b)_i > x)`` (module doc), ``x > 0``."""
    t = (math.sqrt(terms * terms * b * b + x * x) - terms * b) / (x * b)   # the minimiser, in (0, 1/b)
    return -t * x - terms * math.log1p(-(b * t) ** 2)


def laplace_sum_quantile(b: float, terms: int, n_coords: float, failure: float) -> float:
    """The least ``x`` (to 1e-9 relative) with ``n·2·Chernoff(x) ≤ failure`` for a sum of ``terms``
    i.i.d. ``Lap(b)`` (module doc)."""
    if b == 0 or terms == 0:
        return 0.0
    target = math.log(failure / (2.0 * n_coords))
    lo, hi = 0.0, b * max(terms, 1)
    while _log_laplace_tail(hi, b, terms) > target:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid > 0 and _log_laplace_tail(mid, b, terms) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * hi:
            break
    return hi


@dataclass(frozen=True)
class CountNoise:
    """The public noise of one run's count privatizer (module doc).

    ``kind`` "laplace" / "gaussian" / "none"; ``counter`` "tree" / "blt" (central), "local" or
    "none"; ``scale`` the node / message / BLT-input noise (b or σ) of every coordinate of a draw;
    ``sensitivity`` Δ of one item (ℓ1 for Laplace, ℓ2 for Gaussian); ``terms`` the most draws summed
    into one released coordinate (``m``, ``K − 1``; 0 for the BLT); ``variance_factor`` the BLT's
    ``s_B²`` (per-coordinate variance / σ²); ``error_bound`` E_{ε,β}; ``blt`` the factorization.
    """

    privatizer: str
    kind: str
    counter: str
    calibration: str
    scale: float
    sensitivity: float
    n_episodes: int
    horizon: int
    n_states: int
    n_actions: int
    beta: float
    pooled: bool = False
    terms: int = 0
    variance_factor: float = 0.0
    release_factor: float = 1.0
    error_bound: float = 0.0
    blt: BLT | None = field(default=None, repr=False)

    @property
    def is_private(self) -> bool:
        return self.kind != "none" and self.scale > 0

    @property
    def n_items(self) -> int:
        return max(self.n_episodes - 1, 0)

    @property
    def dim(self) -> int:
        return item_size(self.horizon, self.n_states, self.n_actions, self.pooled)

    def event(self) -> DpEvent:
        """The ledger event of the whole run (module doc)."""
        if not self.is_private:
            return events.gaussian(math.inf)
        nm = self.scale / (self.release_factor * self.sensitivity)
        base = events.laplace(nm) if self.kind == "laplace" else events.gaussian(nm)
        if self.counter == "tree" and self.terms > 1:
            return events.self_composed(base, self.terms)
        return base

    def declaration(self) -> NoiseDeclaration:
        """What the run draws: ``K − 1`` rows of ``D`` numbers at ``scale`` (release invariant)."""
        sens = self.release_factor * self.sensitivity if self.counter != "tree" or self.terms <= 1 else None
        return NoiseDeclaration(self.kind, float(self.scale), self.n_items * self.dim,
                                None if sens is None else float(sens),
                                note=f"{self.counter} count noise: one {self.dim}-row per user")

    def std_per_release(self) -> float:
        """The largest std of the noise of one released coordinate (public)."""
        if not self.is_private:
            return 0.0
        per_draw = self.scale * (math.sqrt(2.0) if self.kind == "laplace" else 1.0)
        if self.counter == "blt":
            return self.scale * math.sqrt(self.variance_factor)
        return per_draw * math.sqrt(self.terms)

    def public(self) -> dict[str, object]:
        return {"privatizer": self.privatizer, "noise": self.kind, "counter": self.counter,
                "calibration": self.calibration, "scale": self.scale, "sensitivity": self.sensitivity,
                "terms": self.terms, "error_bound": self.error_bound, "beta": self.beta, "pooled": self.pooled}


def _error_bound(kind: str, counter: str, scale: float, terms: int, variance_factor: float, n_coords: float,
                 beta: float) -> float:
    """``E = 4x`` with ``x`` the union-bound quantile of the released noise at failure β/3."""
    failure = beta / 3.0
    if scale == 0:
        return 0.0
    if kind == "laplace":
        return 4.0 * laplace_sum_quantile(scale, terms, n_coords, failure)
    std = scale * math.sqrt(variance_factor if counter == "blt" else terms)
    return 4.0 * gaussian_quantile(std, n_coords, failure)


def count_noise(privatizer: str, budget: Any, calibration: str = "tight", counter: str = "auto", *,
                n_episodes: int, horizon: int, n_states: int, n_actions: int, beta: float = 0.05,
                pooled: bool = False, owner: str = "count_noise") -> CountNoise:
    """The noise of a run (module doc): pure ε budgets get Laplace, (ε, δ > 0) and ρ budgets Gaussian."""
    check_option(privatizer, "privatizer", PRIVATIZERS, owner=owner)
    check_option(counter, "counter", COUNTERS, owner=owner)
    K, H, S, A = int(n_episodes), int(horizon), int(n_states), int(n_actions)
    common: dict[str, Any] = {"calibration": calibration, "n_episodes": K, "horizon": H, "n_states": S,
                              "n_actions": A, "beta": float(beta), "pooled": bool(pooled)}
    if privatizer == "none" or not budget.is_private:
        return CountNoise(privatizer, "none", "none", scale=0.0, sensitivity=0.0, **common)
    pure = budget.rho is None and not budget.delta
    n_items = max(K - 1, 0)
    n_coords = float(K) * item_size(H, S, A, pooled)
    if pure:
        if counter == "blt":
            raise param_error("counter", owner, "'tree' or 'auto' with a pure epsilon budget (the BLT counter is "
                              "Gaussian: give a delta > 0 or a rho budget)", counter)
        eps = float(budget.epsilon)
        sens = l1_sensitivity(H)
        if privatizer == "central":
            m = max(1, max_membership(n_items))
            if calibration == "paper":
                b = 2.0 * H * math.log2(max(K, 2)) / eps
            else:
                b = sens * m / eps
            err = _error_bound("laplace", "tree", b, m, 0.0, n_coords, beta)
            return CountNoise(privatizer, "laplace", "tree", scale=b, sensitivity=sens, terms=m,
                              error_bound=err, **common)
        b = (2.0 * H if calibration == "paper" else sens) / eps
        err = _error_bound("laplace", "local", b, n_items, 0.0, n_coords, beta)
        return CountNoise(privatizer, "laplace", "local", scale=b, sensitivity=sens, terms=n_items,
                          error_bound=err, **common)
    if calibration == "paper":
        raise param_error("calibration", owner, "'tight' or 'sound' with a Gaussian (delta > 0 or rho) budget (the "
                          "paper prints only the Laplace mechanism)", calibration)
    if calibration == "sound" and budget.rho is None:
        mu = math.sqrt(2.0 * approx_dp_to_zcdp(float(budget.epsilon), float(budget.delta), method="bun_steinke"))
    else:
        mu = gaussian_mu(budget)
    sens = l2_sensitivity(H, pooled)
    if privatizer == "local":
        sigma = sens / mu
        err = _error_bound("gaussian", "local", sigma, n_items, 0.0, n_coords, beta)
        return CountNoise(privatizer, "gaussian", "local", scale=sigma, sensitivity=sens, terms=n_items,
                          error_bound=err, **common)
    kind = "blt" if counter == "blt" or (counter == "auto" and calibration == "tight") else "tree"
    if kind == "blt" and calibration != "tight":
        raise param_error("counter", owner, "'tree' or 'auto' when the 'calibration' parameter is "
                          f"{calibration!r} (the BLT is calibrated tightly only)", counter)
    if kind == "blt":
        blt = blt_factorization(max(n_items, 1))
        s_c = math.sqrt(blt.column_norm2(n_items)) if n_items else 1.0
        var = blt.row_norm2(n_items) if n_items else 0.0
        sigma = s_c * sens / mu
        err = _error_bound("gaussian", "blt", sigma, 0, var, n_coords, beta)
        return CountNoise(privatizer, "gaussian", "blt", scale=sigma, sensitivity=sens, variance_factor=var,
                          release_factor=s_c, error_bound=err, blt=blt, **common)
    m = max(1, max_membership(n_items))
    sigma = math.sqrt(m) * sens / mu
    err = _error_bound("gaussian", "tree", sigma, m, 0.0, n_coords, beta)
    return CountNoise(privatizer, "gaussian", "tree", scale=sigma, sensitivity=sens, terms=m, error_bound=err,
                      **common)
