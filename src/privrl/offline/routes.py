"""DP-APVI's routes for coverage-limited data, planned and ranked from public quantities only.

A *route* is a choice among DP-APVI's data-independent options (:class:`~privrl.offline.DPAPVI`):
the released grid's states (the S states, or one of the user's candidate public groupings of G
groups), ``stationary`` (counts pooled over the steps), ``max_visits`` (the per-trajectory cap,
pooled only), ``cell_threshold`` and ``fallback``. :func:`plan_route` sets the noise of a route's
released counts against their typical value; :func:`rank_routes` orders the candidates and
:func:`choose_route` is what ``DPAPVI(route="auto")`` plays. Everything here reads the public sizes
(n, S, A, H, the candidates' G), the budget, the estimator's own calibration and the assumptions the
user states — never the data: choosing costs no privacy.

**Noise** — the estimator's own :meth:`DPAPVI.count_noise <privrl.offline.DPAPVI.count_noise>` with
the route's parameters: per step the replace-one ℓ2 sensitivity is √(2H), pooled √2·H, pooled with
the cap c √(2m), m = c²⌊H/c⌋ + (H − c⌊H/c⌋)² (√(2H) at c = 1); groups change no sensitivity.

**Typical count** of a released visit cell ``n_sa`` (the model, checked on the real-shaped grid by
``benchmarks/bench_plan_routes.py`` against the count of the cell a logged visit falls in): an
episode is live for L steps (``visits``, default H; then absorbed or padded, in cells of their own)
and each live step makes one visit, spread evenly over the S_r·A_u cells of a step (S_r the states or
the G groups, A_u the actions the logging policy uses, ``admissible``, default A). Then

* per step: a live step carries the n episodes, so a visited cell counts **n/(S_r·A_u)**;
* pooled over the steps: the L live steps land in the same S_r·A_u cells: **n·L/(S_r·A_u)**, L times
  the per-step count (the sensitivity grows by √H: pooling pays when L > √H);
* pooled with the cap c: an episode keeps **κ = S_r·A_u·E[min(X, c)]** of its L visits, X Poisson
  with mean L/(S_r·A_u) (its visits thrown evenly over the cells: revisits are what the cap drops),
  so a cell counts n·κ/(S_r·A_u); κ ≤ min(L, c·S_r·A_u).

A transition cell ``n_sas'`` counts n_sa/k (the pair's visits spread over k next states,
``next_states``, default 1: the most favourable case).

**What the threshold and the fallback do.** DP-APVI trusts a pair (uses its estimated transitions)
when its released count clears the pair threshold ``threshold_multiplier·E`` (E the noise bound of
Algorithm 1, line 2); with ``cell_threshold = k`` a transition cell at most k·σ_sas is zeroed, which
removes the noise of the empty cells (S_r − k of each row) at the price of a typical cell under k·σ.
Where the typical pair does not clear its threshold, the greedy step has nothing to choose from and
the **fallback** decides: ``"tie-break"`` plays the lowest action index (no better than an arbitrary
action: hopeless), ``"behaviour"`` the most logged action — the behaviour clone, whose worth is not
public (:data:`UNDECIDED`: it depends on how good the logging policy's habit is).

**Verdict of a route** (:attr:`RoutePlan.verdict`): the noise verdict of :func:`privrl.planning.verdict`
on the route's effective ratio — the visit counts' ratio, and the transition counts' unless the 3σ
threshold zeroes them (then the pairs fall back, see above) — then the group level: how well a
public grouping describes the dynamics is **not public** (it needs the data, or a pilot, or domain
knowledge). A grouped route is :data:`UNDECIDED` unless the user states ``group_quality`` q (the share
of the best non-private gain that learning on the groups keeps): q ≥ :data:`USEFUL_SHARE` keeps the
noise verdict, below it the route is hopeless whatever the noise.

**Support of the safe baseline** (``baseline="logging"``, :mod:`privrl.offline.baseline`; what
``route="auto"`` plays): SPIBB keeps the estimated logging policy on every pair without support and
moves the policy only where a row has supported actions, so a route is worth what its supported
pairs let it move (:attr:`RoutePlan.support`), not what its noise-to-signal alone suggests. A pair
is supported when the count the fit reads for it clears the fit's confidence bound and SPIBB's
``N∧`` (``support_count``): ñ > t = max(E_sa, threshold_multiplier·E_sa, N∧). That count is not the
released visit count but the sum of the pair's consistent transition row (Eq. 3), whose cells at
most c·σ_sas are zeroed by the cell threshold c: a pair whose n_sa visits spread over k next states
keeps them only when each cell clears, n_sa/k > c·σ_sas, else ñ ≈ 0 — per state, with many next
states, the thin cells vanish and the pair has no support however many visits it has. Two public
facts are missing, and the model states what it assumes for them:

* the counts of the pairs are not all the typical count m (some states are visited far more than
  others): a pair's count is taken exponential with mean m (the maximum-entropy law of a positive
  count of a given mean), so a share exp(−x/m) of the pairs counts more than x;
* the number k of next states of a pair: ``next_states`` when stated, else unknown on [1, S_r] with
  the scale-free (log-uniform) law — every order of magnitude of k equally likely.

The modelled support is then the expected share of pairs that clear both,

    support = E_k[exp(−max(t, k·c·σ_sas)/m)],   k = next_states, or ln k ~ U[0, ln S_r],

non-decreasing in n and in ε (m grows, t and σ_sas fall). The row's actions share its visits and
its next states, so they clear together: the share of the policy SPIBB can move is the support
itself. With the baseline a learned route's predicted share of the best gain is support × the share
the noise keeps (× the group quality); a route that learns nothing plays the estimated logging
policy (share 0, whatever the fallback: SPIBB does not use it).

**Ranking** (:func:`rank_routes`): by verdict (useful, then undecided-but-useful-if-the-groups-agree,
marginal, hopeless), then fewer approximations (states before groups, per step before pooled), then
the share the noise (and, with the baseline, the support) leaves, then the smaller effective ratio.
Candidates: every grouping given × per step / pooled / pooled with
``max_visits=1`` × the 3σ threshold and the behaviour fallback (the ones the real-shaped grid found
never worse), plus their 0σ and tie-break variants for the plan's table.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privrl.offline.calibration import CountNoise
from privrl.planning import UNDECIDED as _UNDECIDED
from privrl.planning import verdict

__all__ = ["Route", "Shape", "RoutePlan", "UNDECIDED", "USEFUL_SHARE", "ROUTE_KEYS", "no_noise", "capped_visits",
           "typical_counts", "support_share", "plan_route", "candidate_routes", "rank_routes", "choose_route"]

#: the verdict of a route whose worth depends on something not public (group agreement, clone quality)
UNDECIDED = _UNDECIDED
#: the share of the best non-private gain a useful route keeps (the benchmark's criterion)
USEFUL_SHARE = 0.25
#: the estimator parameters a route sets (``route_`` of a fit with ``route="auto"``)
ROUTE_KEYS = ("state_groups", "stationary", "max_visits", "cell_threshold", "fallback")
_ORDER = {"useful": 0, UNDECIDED: 1, "marginal": 2, "hopeless": 3}


@dataclass(frozen=True)
class Route:
    """One route: ``groups`` G of candidate grouping ``candidate`` (None, None: the states),
    ``stationary``, ``max_visits``, ``cell_threshold``, ``fallback``."""

    groups: int | None = None
    candidate: int | None = None
    stationary: bool = False
    max_visits: int | None = None
    cell_threshold: float = 0.0
    fallback: str = "tie-break"

    @property
    def name(self) -> str:
        where = "states" if self.groups is None else f"groups{self.candidate or 0}[{self.groups}]"
        pooled = ["pooled", f"mv{self.max_visits}" if self.max_visits else "all-visits"] if self.stationary \
            else ["per-step"]
        return "/".join([where, *pooled, f"{self.cell_threshold:g}sigma", self.fallback])

    def params(self) -> dict[str, Any]:
        """The estimator parameters of the route other than ``state_groups``."""
        return {"stationary": self.stationary, "max_visits": self.max_visits,
                "cell_threshold": self.cell_threshold, "fallback": self.fallback}


@dataclass(frozen=True)
class Shape:
    """The public sizes and the stated assumptions a route plan reads (module docstring)."""

    n: int
    states: int
    actions: int
    horizon: int
    visits: float | None = None          # L: steps an episode is live (default H)
    admissible: int | None = None        # A_u: actions the logging policy uses (default A)
    next_states: int | None = None       # k: next states of a pair (default 1)
    group_quality: float | None = None   # q: share of the best gain the groups keep (not public)
    clone_quality: float | None = None   # share of the best gain the behaviour clone keeps (not public)

    @property
    def live(self) -> float:
        return float(self.horizon if self.visits is None else self.visits)

    @property
    def used(self) -> int:
        return int(self.actions if self.admissible is None else self.admissible)


def no_noise(route: Route) -> CountNoise:
    """The noise plan of a route without privacy (APVI): none."""
    return CountNoise("gaussian", (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), route.groups or 1)


def capped_visits(live: float, cells: float, cap: int | None) -> float:
    """κ: the visits an episode keeps under the cap ``cap`` when its ``live`` visits fall evenly at
    random on ``cells`` cells: cells·E[min(X, cap)], X Poisson(live/cells); ``live`` without a cap."""
    if cap is None or cap >= live:
        return float(live)
    lam = live / cells
    term, below, tail = math.exp(-lam), 0.0, 1.0       # P(X = x), Σ_{x<cap} x·P(x), P(X >= x)
    for x in range(int(cap)):
        below += x * term
        tail -= term
        term *= lam / (x + 1)
    return cells * (below + cap * tail)


def typical_counts(shape: Shape, route: Route) -> tuple[float, float, str]:
    """(typical ``n_sa``, typical ``n_sas'``, the basis in words) of a route (module docstring)."""
    S_r = shape.states if route.groups is None else route.groups
    cells = S_r * shape.used
    k = 1 if shape.next_states is None else min(shape.next_states, S_r)      # at most S_r next cells
    what = (f"S_r·A_u = {cells} cells of a step (S_r = {S_r} {'states' if route.groups is None else 'groups'}, "
            f"A_u = {shape.used} actions)")
    if not route.stationary:
        n_sa = shape.n / cells
        basis = f"n/(S_r·A_u) = {n_sa:.3g}: a live step carries the n episodes over the {what}"
    else:
        kept = capped_visits(shape.live, cells, route.max_visits)
        n_sa = shape.n * kept / cells
        cap = "" if route.max_visits is None else f" (κ = {kept:.3g} of L = {shape.live:g} kept under the cap " \
            f"{route.max_visits}: visits thrown evenly on the cells)"
        basis = f"n·κ/(S_r·A_u) = {n_sa:.3g}: the L = {shape.live:g} live steps pooled over the {what}{cap}"
    return n_sa, n_sa / k, basis


#: points of the midpoint rule over ln k in :func:`support_share` (k unknown: log-uniform on [1, S_r])
SPREAD_POINTS = 256


def support_share(count: float, clear: float, cell_floor: float, next_states: int | None, cells: int) -> float:
    """The modelled share of pairs the safe baseline supports (module docstring, "Support"):
    E_k[exp(−max(``clear``, k·``cell_floor``)/``count``)] — a pair's count exponential with mean
    ``count`` (the typical n_sa), ``clear`` = max(E_sa, threshold, N∧) the count it must exceed,
    ``cell_floor`` = c·σ_sas the floor each of its k next-state cells must clear (0: no cell
    threshold); k = ``next_states`` if stated, else log-uniform on [1, ``cells``] (S_r)."""
    if count <= 0:
        return 0.0
    if next_states is not None or cells <= 1:
        ks = [float(next_states or 1)]
    else:
        ks = [math.exp((i + 0.5) / SPREAD_POINTS * math.log(cells)) for i in range(SPREAD_POINTS)]
    return sum(math.exp(-max(clear, k * cell_floor) / count) for k in ks) / len(ks)


#: the effective noise-to-signal at which a learned route keeps half its ceiling: share = q/(1 + r/R_HALF)
#: (fitted on the real-shaped grid's grouped routes: docs/real_shaped.md, "The plan")
R_HALF = 0.06
#: how far the typical pair must clear its threshold for the tie-break fallback to be harmless: the
#: thinner pairs of a step (an order of magnitude below the typical one) fall back to action 0
TIE_BREAK_MARGIN = 10.0


@dataclass(frozen=True)
class RoutePlan:
    """A route's released counts against their typical values, the predicted share of the best
    non-private gain (None: undecided), the verdict and the reason (module docstring)."""

    route: Route
    sensitivity: float
    noise_sa: float
    noise_sas: float
    bound_sa: float
    threshold: float
    count_sa: float
    count_sas: float
    states: int
    penalty: float
    horizon: int
    basis: str
    share: float | None
    reason: str
    support: float = 1.0
    baseline: bool = False

    @property
    def ratio_sa(self) -> float:
        """σ_sa / typical n_sa."""
        return self.noise_sa / self.count_sa

    @property
    def ratio_sas(self) -> float:
        """σ_sas / typical n_sas'."""
        return self.noise_sas / self.count_sas

    @property
    def cleared(self) -> bool:
        """The typical transition cell clears the cell threshold k·σ_sas (always, without one)."""
        return self.count_sas > self.route.cell_threshold * self.noise_sas

    @property
    def ratio_row(self) -> float:
        """The error of a transition row's estimate P̃·V against the row's total n_sa: the noise of
        the m cells the row keeps adds up to √m·σ_sas (independent; V of unit spread) — m = k with
        the cell threshold (the empty cells zeroed), S_r without (every empty cell's noise kept) —
        plus the sampling error √n_sas' of each count; ∞ when the threshold zeroes the typical cell."""
        if self.route.cell_threshold > 0 and not self.cleared:
            return math.inf
        k = self.count_sa / self.count_sas
        m = k if self.route.cell_threshold > 0 else float(self.states)
        return math.sqrt(m * self.noise_sas**2 + k * self.count_sas) / self.count_sa

    @property
    def effective_ratio(self) -> float:
        """The worse of the visit counts' (noise and sampling) and the transition rows' ratios."""
        return max(math.sqrt(self.noise_sa**2 + self.count_sa) / self.count_sa, self.ratio_row)

    @property
    def margin(self) -> float:
        """How many times the typical pair's count clears its threshold threshold_multiplier·E."""
        return self.count_sa / self.threshold if self.threshold > 0 else math.inf

    @property
    def noise_verdict(self) -> str:
        """:func:`privrl.planning.verdict` of the effective ratio (the noise alone)."""
        return verdict(self.effective_ratio)

    @property
    def verdict(self) -> str:
        """On the predicted share s: useful (s ≥ :data:`USEFUL_SHARE`), marginal (0 < s), hopeless,
        or :data:`UNDECIDED`."""
        if self.share is None:
            return UNDECIDED
        return "useful" if self.share >= USEFUL_SHARE else ("marginal" if self.share > 0 else "hopeless")

    def sort_key(self) -> tuple[Any, ...]:
        """Verdict, predicted share, then (undecided routes) the noise verdict of a learned route,
        states before groups, finer groups before coarser (less approximation at the same noise
        verdict), the share the noise and the support leave (:attr:`movable`), per step before pooled,
        the smaller effective ratio."""
        r = self.route
        share = -1.0 if self.share is None else self.share
        noise = _ORDER[self.noise_verdict] if self.learns else len(_ORDER)
        return (_ORDER[self.verdict], -share, noise, r.groups is not None, -self.states, -self.movable,
                r.stationary, self.effective_ratio)

    @property
    def movable(self) -> float:
        """The share of its ceiling a learned route can reach: :attr:`kept`, times the :attr:`support`
        with the safe baseline (SPIBB moves only supported pairs; module docstring)."""
        return self.kept * (self.support if self.baseline else 1.0)

    @property
    def kept(self) -> float:
        """The share of its ceiling a learned route keeps, 1/(1 + r/:data:`R_HALF`) (0 when it falls back)."""
        return 1.0 / (1.0 + self.effective_ratio / R_HALF) if self.learns else 0.0

    @property
    def learns(self) -> bool:
        """The typical pair is trusted and its counts are not noise: the policy is learned, not the fallback."""
        return self.margin >= 1 and self.penalty < self.horizon and self.noise_verdict != "hopeless"


def _share(plan: RoutePlan, shape: Shape) -> tuple[float | None, str]:
    """(predicted share of the best non-private gain or None, the reason): module docstring."""
    r = plan.route
    noise = plan.noise_verdict
    if plan.baseline:
        return _safe_share(plan, shape)
    if not plan.learns or (r.fallback == "tie-break" and plan.margin < TIE_BREAK_MARGIN):
        why = ("the typical pair is below its threshold" if plan.margin < 1 else
               f"the privacy penalty c2·S·H·Ē·ι/ñ ({plan.penalty:.3g}) exceeds the value range H = {plan.horizon}"
               if plan.penalty >= plan.horizon else
               "the noise swamps the counts" if noise == "hopeless" else
               f"the thin pairs (the typical one clears its threshold only {plan.margin:.2g}x)")
        if r.fallback == "tie-break":
            return 0.0, f"{why}: the tie-break fallback plays action 0 there"
        if plan.ratio_sa >= 1:
            return 0.0, (f"{why}, and the visit counts' noise exceeds the typical count: the behaviour fallback's "
                         "argmax is random")
        if shape.clone_quality is None:
            return None, (f"{why}: the behaviour fallback plays the most logged action, worth what the logging "
                          "policy's habit is worth (not public: give clone_quality)")
        return shape.clone_quality, f"{why}: the behaviour clone, stated clone quality {shape.clone_quality:g}"
    kept = plan.kept
    if r.groups is None:
        return kept, f"learned on the counts (noise {noise}): keeps 1/(1 + r/{R_HALF:g}) = {kept:.2g}"
    if shape.group_quality is None:
        return None, (f"learned on the counts (noise {noise}); depends on how well the public groups describe the "
                      "dynamics (not public: give group_quality)")
    share = shape.group_quality * kept
    return share, (f"learned on the counts (noise {noise}): stated group quality {shape.group_quality:g} x "
                   f"1/(1 + r/{R_HALF:g}) = {share:.2g}")


def _safe_share(plan: RoutePlan, shape: Shape) -> tuple[float | None, str]:
    """(predicted share or None, the reason) with the safe baseline: SPIBB moves only the supported
    pairs, so a learned route keeps support × 1/(1 + r/R_HALF) (× the group quality); one that learns
    nothing plays the estimated logging policy (module docstring, "Support")."""
    if not plan.learns:
        why = ("the typical pair is below its threshold" if plan.margin < 1 else
               f"the privacy penalty c2·S·H·Ē·ι/ñ ({plan.penalty:.3g}) exceeds the value range H = {plan.horizon}"
               if plan.penalty >= plan.horizon else "the noise swamps the counts")
        return 0.0, f"{why}: the safe baseline keeps the estimated logging policy (no gain)"
    movable = plan.movable
    what = (f"learned on the counts (noise {plan.noise_verdict}), SPIBB moves the supported pairs only: modelled "
            f"support {plan.support:.2g} x 1/(1 + r/{R_HALF:g}) {plan.kept:.2g} = {movable:.2g}")
    if plan.route.groups is None:
        return movable, what
    if shape.group_quality is None:
        return None, f"{what}; depends on how well the public groups describe the dynamics (not public: give " \
            "group_quality)"
    share = shape.group_quality * movable
    return share, f"{what}, x stated group quality {shape.group_quality:g} = {share:.2g}"


def plan_route(noise_of: Callable[[Route], Any], shape: Shape, route: Route, threshold_multiplier: float = 0.5,
               c2: float = 0.0, delta_fail: float = 0.05, support_count: float | None = None) -> RoutePlan:
    """The :class:`RoutePlan` of ``route``: ``noise_of(route)`` is the estimator's own
    :class:`~privrl.offline.calibration.CountNoise` of the route; ``threshold_multiplier`` (the pair
    threshold in units of E), ``c2`` and ``delta_fail`` are the estimator's (the privacy penalty
    c2·S_r·H·Ē·ι/ñ of Algorithm 1 at the typical pair, ι = log(H_r·S_r·A/δ_fail)); ``support_count``
    SPIBB's N∧ of the safe baseline (``baseline="logging"``; None: no baseline): module docstring."""
    noise = noise_of(route)
    std_sa, std_sas = noise.noise_std
    n_sa, n_sas, basis = typical_counts(shape, route)
    S_r = shape.states if route.groups is None else route.groups
    iota = math.log((1 if route.stationary else shape.horizon) * S_r * shape.actions / delta_fail)
    penalty = c2 * S_r * shape.horizon * float(noise.penalty_bound) * iota / n_sa if noise.is_private else 0.0
    bound = float(noise.bound[0])
    clear = max(bound, threshold_multiplier * bound, support_count or 0.0)
    support = support_share(n_sa, clear, route.cell_threshold * float(std_sas), shape.next_states, S_r)
    pre = RoutePlan(route, float(noise.sensitivity[0]), float(std_sa), float(std_sas), bound,
                    threshold_multiplier * bound, n_sa, n_sas, S_r, penalty, shape.horizon, basis,
                    None, "", support, support_count is not None)
    share, reason = _share(pre, shape)
    return dataclasses.replace(pre, share=share, reason=reason)


def candidate_routes(group_sizes: Sequence[int], *, variants: bool = False, capped: bool = True) -> list[Route]:
    """The routes :func:`rank_routes` compares: the states and every candidate grouping (its size
    G) × per step / pooled / pooled with ``max_visits=1`` (``capped=False``: not the last, e.g. for
    statistics without the trajectories), with the 3σ threshold and the behaviour fallback;
    ``variants`` adds each one's 0σ and tie-break versions (the plan's table)."""
    where: list[tuple[int | None, int | None]] = [(None, None)] + [(int(g), i) for i, g in enumerate(group_sizes)]
    pooling = [(False, None), (True, None)] + ([(True, 1)] if capped else [])
    finish = [(3.0, "behaviour")] + ([(0.0, "behaviour"), (3.0, "tie-break")] if variants else [])
    return [Route(g, i, st, mv, t, f) for g, i in where for st, mv in pooling for t, f in finish]


def rank_routes(noise_of: Callable[[Route], Any], shape: Shape, routes: Sequence[Route],
                threshold_multiplier: float = 0.5, support_count: float | None = None,
                **penalty: float) -> list[RoutePlan]:
    """The routes' plans, best first (module docstring); deterministic (ties keep the given order).
    ``support_count`` and ``penalty`` (``c2``, ``delta_fail``): those of :func:`plan_route`."""
    plans = [plan_route(noise_of, shape, r, threshold_multiplier, support_count=support_count, **penalty)
             for r in routes]
    return sorted(plans, key=RoutePlan.sort_key)


def choose_route(noise_of: Callable[[Route], Any], shape: Shape, group_sizes: Sequence[int],
                 threshold_multiplier: float = 0.5, *, capped: bool = True, support_count: float | None = None,
                 **penalty: float) -> RoutePlan:
    """The best of :func:`candidate_routes` (public quantities only: costs no privacy);
    ``support_count``: SPIBB's N∧ when the fit applies the safe baseline (``route="auto"`` does)."""
    return rank_routes(noise_of, shape, candidate_routes(group_sizes, capped=capped), threshold_multiplier,
                       support_count, **penalty)[0]
