"""Monte Carlo policy evaluation from on-policy logs: the value J(π) = E[return] of the logging
policy at the logged start distribution, and optionally the values of public state groups.

* :class:`MonteCarlo` — non-private: the mean return Ĵ = (1/n) Σ_i G_i of the n logged
  trajectories, and per public group g the mean first-visit return V̂_g = S_g / N_g.
* :class:`DPMonteCarlo` — the same, released with the least noise the tight accountant certifies.

Privacy unit: one whole trajectory. Public: n under ``neighboring="replace_one"`` (the default),
the bounds R_max and F_max, γ, the group map and the per-trajectory group cap.

Statistics (private, never stored): G_i = Σ_t γ^t r_t ∈ [0, F_max] the return of trajectory i
(rewards validated against [0, R_max], returns against F_max: an error, not clipping, unless
``clip_returns=True``); for a group g, a trajectory's first-visit return is its return from the
first step at which it is in a state of g (its recorded terminal state counts as a visit with
return 0, ``record_terminal``). S_g sums them over the trajectories that enter g, N_g counts those
trajectories. A trajectory enters at most k groups: k = min(G, ``max_groups_per_trajectory``,
L (+1 for its terminal state)) with L a public bound on the episode length (the dataset's horizon,
or ``metadata["max_episode_length"]`` from :func:`privrl.data.truncate_to_horizon`);
``max_groups_per_trajectory`` keeps only the first groups a trajectory enters (a per-trajectory
map: it may bias late groups, never the guarantee).

Sensitivities, in units where a return is divided by F_max (so every released coordinate moves by
at most 1 per trajectory and group):

* **J, replace one** (n public): the released statistic is S/F_max = Σ_i G_i/F_max; replacing one
  trajectory moves it by |G − G'|/F_max ≤ 1 (ℓ1 = ℓ2 = 1; attained by returns 0 and F_max), and
  Ĵ = F_max·(S/F_max + noise)/n.
* **J, add or remove one** (n not public): n itself is private. The released statistic is the
  pair (S/F_max, n); adding or removing one trajectory moves it by (G/F_max, 1): ℓ2 ≤ √2,
  ℓ1 ≤ 2; Ĵ = F_max·S̃/ñ (ñ clipped below at 1), a post-processing of the released pair.
* **Groups** (both relations): the released statistic is the 2G-vector (S_g/F_max, N_g)_g — the
  counts are data-dependent, so they are released too, and V̂_g = F_max·S̃_g/Ñ_g. Let A and B be
  the groups the old and the new trajectory enter (|A|, |B| ≤ k). A group of A ∩ B moves by at most
  1 in S_g/F_max and 0 in N_g; a group of A △ B by at most 1 in each. Replace one: ‖Δ‖₁ and ‖Δ‖₂²
  are at most |A ∩ B| + 2|A △ B| = 2(|A| + |B|) − 3|A ∩ B|, with |A ∩ B| ≥ |A| + |B| − G; the
  maximum is 2·min(2k, G) (disjoint A and B of k groups each, or filling all G groups), attained
  by a trajectory with first-visit returns F_max in k groups replaced by one with returns F_max in
  k other groups (γ = 1, the reward at the end). Add or remove one: B = ∅, so 2·min(k, G).
  ℓ2 sensitivity √(2·min(2k, G)) (replace) / √(2·min(k, G)) (add/remove); ℓ1 the square of it.

Calibration (:class:`MonteCarloMechanism`): the two streams (J and the groups) are one release of
the accountant. Gaussian noise for a ρ budget and (ε, δ) budgets: the composition is one Gaussian
with μ² = Σ_i Δ_i²/σ_i², μ = √(2ρ) or the exact analytic-Gaussian μ of (ε, δ)
(:func:`~privrl.privacy.calibration.gaussian_mu`), split across the streams by
:func:`~privrl.privacy.calibration.split_gaussian_streams` to minimise σ_J + G·σ_G (the group
errors are divided by counts about G/k times smaller than n: a public weight). Laplace noise for a
pure ε budget: ε = ε_J + ε_G with ε_i ∝ √(w_i Δ₁ᵢ) (minimising Σ w_i b_i, b_i = Δ₁ᵢ/ε_i) — basic
composition, exact for pure DP. For an (ε, δ > 0) budget ``mechanism="auto"`` takes the plan with
the smaller weighted noise std (Laplace, pure ε-DP, wins for the scalar J up to ε ≈ 3 at
δ = 10⁻⁶). Every noise draw goes through the fit's :class:`~privrl.privacy.release.Releaser`:
one ``GaussianDpEvent(σ/Δ)`` or ``LaplaceDpEvent(b/Δ)`` per stream in ``privacy_ledger_``. The noise
scales are public (they depend on the budget, F_max, G, k and the relation only), so the noise std
of Ĵ, F_max·σ_J/n under replace one, is public too (``value_std_``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import check_array, check_group_map, check_option, check_scalar, param_error
from privrl.base import CALIBRATION, Estimator, PrivateEstimator, check_is_fitted, param
from privrl.data.bounds import (
    checked_rewards,
    dataset_arrays,
    return_bound,
    reward_bound,
    terminal_states,
)
from privrl.data.streaming import SAME
from privrl.errors import InvalidDataError, UtilityWarning
from privrl.least_squares.diagnostics import clipped_error, clipped_error_floor, noise_exceeds_signal
from privrl.least_squares.statistics import discounted_returns, first_visit_statistics
from privrl.policy_evaluation.estimators import CLIP_RETURNS, F_MAX, R_MAX, RECORD_TERMINAL
from privrl.privacy import events
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.calibration import gaussian_mu, split_gaussian_streams
from privrl.privacy.release import Releaser

if TYPE_CHECKING:
    from dp_accounting import DpEvent
    from typing_extensions import NotRequired  # annotations only (typing.NotRequired: Python 3.11)

__all__ = ["MonteCarlo", "DPMonteCarlo", "MonteCarloMechanism", "ReturnStatistics", "ReturnRoute", "return_statistics",
           "group_sensitivity", "groups_per_trajectory", "MECHANISMS", "RELATIONS"]

MECHANISMS = ("auto", "gaussian", "laplace")
RELATIONS = (Neighboring.REPLACE_ONE.value, Neighboring.ADD_OR_REMOVE_ONE.value)
# keeps float rounding of the ledger's own sums (Σ Δ/b) from reporting a spend an ulp above the budget
_SLACK = 1.0 + 1e-9


# =========================================================================== statistics
@dataclass(frozen=True)
class ReturnRoute:
    """The public choices :class:`ReturnStatistics` were built with: the parameters of the
    estimator that built them (``gamma``, ``groups`` as a tuple or None, ``max_groups_per_trajectory``,
    ``record_terminal``, ``clip_returns``) and the bounds they resolved to — ``r_max``, ``F_max`` and
    k = ``max_groups`` (from the declared length bound). The sensitivities depend on F_max, G and k:
    a fit on the statistics checks the route against its own parameters."""

    gamma: float
    r_max: float
    F_max: float
    groups: tuple[int, ...] | None
    max_groups_per_trajectory: int | None
    max_groups: int
    record_terminal: bool
    clip_returns: bool


@dataclass(frozen=True)
class ReturnStatistics:
    """The sums a Monte Carlo fit reads from the data — **private** (never store them).

    ``return_sum`` = Σ_i G_i; ``group_sums[g]`` = S_g and ``group_counts[g]`` = N_g (None without
    groups); ``n_trajectories`` = n; ``route`` the public choices they were built with
    (:class:`ReturnRoute`; None for sums built by hand, which a fit refuses). Sums of disjoint
    batches add (``privrl.data.streaming.SumReducer``, which keeps the route)."""

    n_trajectories: int
    return_sum: float
    group_sums: np.ndarray | None = None
    group_counts: np.ndarray | None = None
    route: ReturnRoute | None = field(default=None, metadata=SAME)


def return_statistics(rewards: np.ndarray, episode_starts: np.ndarray, gamma: float, f_max: float, *,
                      clip_returns: bool = False, state_groups: np.ndarray | None = None,
                      n_groups: int = 0, terminal_groups: np.ndarray | None = None,
                      max_groups: int | None = None) -> ReturnStatistics:
    """Σ_i G_i over the trajectories (returns checked against [0, F_max]) and, with
    ``state_groups`` (the group of each transition's state), the first-visit sums and counts per
    group (:func:`~privrl.least_squares.statistics.first_visit_statistics` on the group labels,
    at most ``max_groups`` groups per trajectory)."""
    starts = np.asarray(episode_starts, dtype=np.int64)
    returns = discounted_returns(rewards, starts, gamma)[starts[:-1]]
    if returns.size and float(returns.max()) > f_max * (1 + 1e-9):
        if not clip_returns:
            # the return itself is private: say which bound broke and how to fix it, not by how much
            raise InvalidDataError(
                f"A return of the dataset exceeds the public return bound F_max = {f_max!r}. Declare a public "
                "F_max that holds for every trajectory, or pass clip_returns=True to clip returns to it (a "
                "per-trajectory map that keeps the guarantee).")
        returns = np.minimum(returns, f_max)
    n = starts.size - 1
    if state_groups is None:
        return ReturnStatistics(n, float(np.sum(returns)))
    stats = first_visit_statistics(state_groups, rewards, starts, n_groups, gamma, terminal_states=terminal_groups,
                                   return_bound=f_max, clip_returns=clip_returns, max_visits=max_groups)
    return ReturnStatistics(n, float(np.sum(returns)), group_sums=stats.return_sums,
                            group_counts=stats.counts.astype(float))


def groups_per_trajectory(n_groups: int, cap: int | None, max_length: int | None, terminal: bool) -> int:
    """k, the public bound on the groups one trajectory enters: G, at most ``cap``
    (``max_groups_per_trajectory``) and, for episodes of at most L steps (a public length bound),
    at most L (+1 when the terminal state counts as a visit)."""
    k = n_groups if cap is None else min(n_groups, int(cap))
    return k if max_length is None else min(k, int(max_length) + (1 if terminal else 0))


def group_sensitivity(n_groups: int, max_groups: int, relation: str) -> float:
    """‖Δ‖₂² = ‖Δ‖₁ of the normalised group statistic (S_g/F_max, N_g)_g under one trajectory
    replaced (2·min(2k, G)) or added/removed (2·min(k, G)) — module docstring."""
    k = min(max_groups, n_groups)
    return 2.0 * (min(2 * k, n_groups) if relation == Neighboring.REPLACE_ONE.value else k)


# =========================================================================== mechanism
class Estimate(TypedDict):
    """The post-processed release (:meth:`MonteCarloMechanism.estimate`): Ĵ, its noise std and the
    count it divides by; with groups, the group values, their released counts and noise stds."""

    value: float
    value_std: float
    count: float
    group_values: NotRequired[np.ndarray]
    group_counts: NotRequired[np.ndarray]
    group_std: NotRequired[np.ndarray]


@dataclass(frozen=True)
class MonteCarloMechanism:
    """The public noise plan of one Monte Carlo release (module docstring) and its release step.

    ``kind`` is ``"gaussian"``, ``"laplace"`` or ``"none"`` (infinite budget); ``sensitivities``
    and ``scales`` hold, per stream (J, then the groups when ``n_groups > 0``), the ℓ2 (Gaussian) or
    ℓ1 (Laplace) sensitivity of the normalised statistic and the noise std σ or Laplace scale b."""

    kind: str
    F_max: float
    relation: str
    n_groups: int
    max_groups: int
    sensitivities: tuple[float, ...]
    scales: tuple[float, ...]

    @classmethod
    def create(cls, budget: PrivacyBudget, F_max: float, *, n_groups: int = 0, max_groups: int | None = None,
               relation: str = "replace_one", mechanism: str = "auto",
               owner: str = "MonteCarloMechanism") -> MonteCarloMechanism:
        f_max = check_scalar(F_max, "F_max", owner=owner, low=0.0, closed="neither")
        relation = check_option(relation, "neighboring", RELATIONS, owner=owner)
        mechanism = check_option(mechanism, "mechanism", MECHANISMS, owner=owner)
        k = n_groups if max_groups is None else min(int(max_groups), n_groups)
        replace = relation == Neighboring.REPLACE_ONE.value
        l1 = [1.0 if replace else 2.0]
        if n_groups:
            l1.append(group_sensitivity(n_groups, k, relation))
        l2 = [math.sqrt(v) if i else (1.0 if replace else math.sqrt(2.0)) for i, v in enumerate(l1)]
        weights = [1.0, float(n_groups)][: len(l1)]
        common = {"F_max": f_max, "relation": relation, "n_groups": n_groups, "max_groups": k}
        if not budget.is_private:
            return cls(kind="none", sensitivities=tuple(l2), scales=(0.0,) * len(l2), **common)
        pure = budget.rho is None and not budget.delta
        if budget.rho is not None and mechanism == "laplace":
            raise param_error("mechanism", owner, "'gaussian' or 'auto' for a rho budget (Laplace noise is "
                              "calibrated to an epsilon budget)", mechanism)
        if pure and mechanism == "gaussian":
            raise param_error("mechanism", owner, "'laplace' or 'auto' for a pure epsilon budget (delta = 0: "
                              "Gaussian noise cannot give pure DP)", mechanism)
        plans = {}
        if not pure and mechanism in ("auto", "gaussian"):
            stds = split_gaussian_streams(gaussian_mu(budget), l2, weights=weights)
            plans["gaussian"] = (tuple(l2), tuple(float(s) for s in stds), stds)
        if budget.epsilon is not None and mechanism in ("auto", "laplace"):
            share = np.sqrt(np.asarray(weights) * np.asarray(l1))
            eps = float(budget.epsilon) * share / share.sum()
            b = np.asarray(l1) / eps * _SLACK
            plans["laplace"] = (tuple(l1), tuple(float(x) for x in b), math.sqrt(2.0) * b)
        kind = min(plans, key=lambda name: float(np.dot(weights, plans[name][2])))
        sens, scales, _ = plans[kind]
        return cls(kind=kind, sensitivities=sens, scales=scales, **common)

    @property
    def is_private(self) -> bool:
        return self.kind != "none"

    @property
    def stds(self) -> tuple[float, ...]:
        """The noise standard deviation of each normalised stream (√2·b for Laplace)."""
        factor = math.sqrt(2.0) if self.kind == "laplace" else 1.0
        return tuple(factor * s for s in self.scales)

    def events(self) -> list[DpEvent]:
        """The ledger entries of one release, one per stream (what :meth:`release` appends)."""
        if not self.is_private:
            return []
        make = events.gaussian if self.kind == "gaussian" else events.laplace
        return [make(scale / sens) for sens, scale in zip(self.sensitivities, self.scales)]

    def _draw(self, value: np.ndarray, stream: int, rel: Releaser) -> np.ndarray:
        sens, scale = self.sensitivities[stream], self.scales[stream]
        if self.kind == "gaussian":
            return rel.gaussian(value, sensitivity=sens, std=scale)
        return rel.laplace(value, sensitivity=sens, scale=scale)

    def statistic(self, stats: ReturnStatistics) -> tuple[np.ndarray, np.ndarray | None]:
        """The normalised statistics the release perturbs: (S/F_max) or (S/F_max, n), and
        (S_g/F_max, N_g)_g (2G entries) — private."""
        value = np.array([stats.return_sum / self.F_max] if self.relation == Neighboring.REPLACE_ONE.value
                         else [stats.return_sum / self.F_max, float(stats.n_trajectories)])
        if not self.n_groups:
            return value, None
        if stats.group_sums is None or stats.group_counts is None:
            raise InvalidDataError("The statistics of a group release need group sums and counts.")
        return value, np.concatenate([stats.group_sums / self.F_max, stats.group_counts])

    def release(self, value: ArrayLike, groups: ArrayLike | None,
                rel: Releaser) -> tuple[np.ndarray, np.ndarray | None]:
        """The noisy normalised statistics (leading batch axes allowed: one draw per row), one
        event per stream appended to ``rel``'s ledger. A pure function of the public plan, the
        statistics and the noise source (audits call it many times)."""
        if not self.is_private:
            return np.array(value, dtype=float), None if groups is None else np.array(groups, dtype=float)
        out = self._draw(np.asarray(value, dtype=float), 0, rel)
        return out, None if groups is None else self._draw(np.asarray(groups, dtype=float), 1, rel)

    def estimate(self, value: np.ndarray, groups: np.ndarray | None, n: int | None) -> Estimate:
        """Post-processing of the released statistics: Ĵ, its noise std (public under replace one,
        a delta-method estimate from the released count under add/remove) and the group values
        V̂_g = F_max·S̃_g/Ñ_g clipped to [0, F_max] (F_max/2, the trivial estimate, where Ñ_g < 1),
        with delta-method stds F_max σ_G √(1 + (V̂_g/F_max)²)/Ñ_g (∞ where Ñ_g < 1)."""
        f, std = self.F_max, self.stds
        if self.relation == Neighboring.REPLACE_ONE.value:
            if n is None:
                raise param_error("n", "MonteCarloMechanism.estimate", "the public number of trajectories "
                                  "(replace-one relation)", n)
            count = float(n)
            j = f * float(value[0]) / count
            j_std = f * std[0] / count
        else:
            count = max(float(value[1]), 1.0)
            j = f * float(value[0]) / count
            j_std = f * std[0] * math.sqrt(1.0 + min(max(j / f, 0.0), 1.0) ** 2) / count
        out: Estimate = {"value": j, "value_std": j_std, "count": count}
        if groups is not None:
            g = self.n_groups
            sums, counts = groups[:g], groups[g:]
            ok = counts >= 1.0
            ratio = np.divide(sums, counts, out=np.full(g, 0.5), where=ok)
            vals = f * np.clip(ratio, 0.0, 1.0)
            spread = f * std[1] * np.sqrt(1.0 + (vals / f) ** 2) if self.is_private else np.zeros(g)
            out["group_values"], out["group_counts"] = vals, counts
            out["group_std"] = np.divide(spread, counts, out=np.full(g, math.inf), where=ok)
        return out


# =========================================================================== estimators
def _groups(value: object, name: str, owner: str) -> np.ndarray:
    arr = check_array(value, name, owner=owner, ndim=1, low=-1.0)
    if arr.size == 0 or not np.all(arr == np.floor(arr)) or arr.max() < 0:
        raise param_error(name, owner, "a non-empty (n_states,) array of group indices (ints ≥ 0; −1 for a state "
                          "in no group, never entered)", "other values")
    return arr.astype(np.int64)


_CALIBRATION_HELP = "noise calibration: 'tight' (the exact accountant; there is no paper calibration to reproduce)"


class _MonteCarlo(Estimator):
    """Shared parameters and steps: validated statistics under the public bounds, the plan, fitted
    attributes."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    gamma: float = param("discount factor γ of the return (1: the undiscounted episodic return)", default=1.0,
                         low=0.0, high=1.0)
    groups: ArrayLike | None = param("public map state → group (n_states,) ints, fixed without looking at the "
                                     "data: also release the mean first-visit return of each group; −1 for a state "
                                     "in no group (never entered, e.g. a terminal state); None = J only",
                                     default=None, kind="array", none_ok=True, check=_groups, cli=False,
                                     bad=(np.array([0.5, 1.0]),))
    max_groups_per_trajectory: int | None = param("count at most this many groups per trajectory (the first it "
                                                  "enters); None = all (bounded by the episode-length bound "
                                                  "when declared)", default=None, kind="int", low=1, none_ok=True)
    r_max: float | None = R_MAX
    F_max: float | None = F_MAX
    clip_returns: bool = CLIP_RETURNS
    record_terminal: bool = RECORD_TERMINAL

    def statistics(self, dataset: object) -> ReturnStatistics:
        """The sums a fit reads from ``dataset`` — **private**: never store or print them — with the
        public choices they were built with (``route``). Sums of disjoint batches add: a log of any
        size is ``privrl.data.streaming.stream_statistics(chunks, est.statistics,
        reducer=SumReducer(), **declared)`` (whole trajectories per batch, so first visits, the
        group cap and the return bound see each one whole), and ``fit`` takes the result."""
        return self._statistics(dataset, self._validated())[0]

    def _statistics(self, dataset: object, p: dict[str, Any]) -> tuple[ReturnStatistics, float, int, int]:
        """(private statistics with their route, F_max, number of groups G, per-trajectory group bound k)."""
        owner = type(self).__name__
        groups = p["groups"]
        arrays = dataset_arrays(dataset, owner, tabular=groups is not None)
        if groups is not None:     # one entry per state, ids below the states (the map's length if undeclared)
            check_group_map(groups, groups.size if arrays["n_states"] is None else int(arrays["n_states"]), "groups",
                            owner)
        r_max = reward_bound(p["r_max"], arrays["reward_bounds"], owner)
        f_max = return_bound(r_max, p["gamma"], p["F_max"], arrays["max_length"], owner)
        rewards = checked_rewards(arrays["rewards"], r_max, p["clip_returns"], owner)
        route = {"gamma": float(p["gamma"]), "r_max": float(r_max), "F_max": float(f_max),
                 "max_groups_per_trajectory": p["max_groups_per_trajectory"],
                 "record_terminal": bool(p["record_terminal"]), "clip_returns": bool(p["clip_returns"])}
        if groups is None:
            stats = return_statistics(rewards, arrays["episode_starts"], p["gamma"], f_max,
                                      clip_returns=p["clip_returns"])
            return replace(stats, route=ReturnRoute(groups=None, max_groups=0, **route)), f_max, 0, 0
        obs = arrays["observations"]
        if obs.size and (obs.min() < 0 or obs.max() >= groups.size or np.any(groups[obs] < 0)):
            raise InvalidDataError(f"The dataset visits a state outside the groups of {owner} (states "
                                   f"0..{groups.size - 1}, −1 for a state never entered): give one group per state "
                                   "the data visit.")
        n_groups = int(groups.max()) + 1
        terminals = terminal_states(arrays, groups.size, owner) if p["record_terminal"] else None
        k = groups_per_trajectory(n_groups, p["max_groups_per_trajectory"], arrays["max_length"],
                                  terminals is not None)
        # a terminal state in no group (−1) is not recorded: its value is 0, nothing to estimate
        terminal_groups = None if terminals is None else np.where(terminals >= 0, groups[terminals], -1)
        stats = return_statistics(rewards, arrays["episode_starts"], p["gamma"], f_max,
                                  clip_returns=p["clip_returns"], state_groups=groups[obs], n_groups=n_groups,
                                  terminal_groups=terminal_groups, max_groups=k)
        route_groups = tuple(int(g) for g in groups)
        return replace(stats, route=ReturnRoute(groups=route_groups, max_groups=k, **route)), f_max, n_groups, k

    def _prepared(self, data: object, p: dict[str, Any]) -> tuple[ReturnStatistics, float, int, int]:
        """:meth:`_statistics` of a dataset, or given :class:`ReturnStatistics` checked against the
        fit's parameters (their route: the sensitivities depend on F_max, G and k)."""
        if not isinstance(data, ReturnStatistics):
            return self._statistics(data, p)
        owner = type(self).__name__
        route = data.route
        if route is None:
            raise InvalidDataError(f"{owner}: these ReturnStatistics do not record the public choices they were "
                                   f"built with (route is None): build them with {owner}(...).statistics(dataset).")
        own: dict[str, object] = {
            "gamma": float(p["gamma"]), "max_groups_per_trajectory": p["max_groups_per_trajectory"],
            "record_terminal": bool(p["record_terminal"]), "clip_returns": bool(p["clip_returns"]),
            "groups": None if p["groups"] is None else tuple(int(g) for g in p["groups"])}
        own.update({k: float(p[k]) for k in ("r_max", "F_max") if p[k] is not None})
        diff = [f"{k} ({'a group map' if k == 'groups' and v is not None else repr(v)} / "
                f"{'a different group map' if k == 'groups' and own[k] is not None else repr(own[k])})"
                for k, v in ((k, getattr(route, k)) for k in own) if v != own[k]]
        if diff:
            raise InvalidDataError(f"{owner}: the statistics were built with other public choices than this fit's "
                                   f"(built with / asked for: {', '.join(diff)}); the sensitivity, so the privacy "
                                   f"guarantee, depends on them. Build them with this estimator's statistics().")
        n_groups = 0 if route.groups is None else max(route.groups) + 1
        return data, route.F_max, n_groups, route.max_groups

    def _store(self, est: Estimate, mech: MonteCarloMechanism, groups: np.ndarray | None,
               n: int | None) -> None:
        self.value_ = est["value"]
        self.value_std_ = est["value_std"]
        self.F_max_ = mech.F_max
        self.n_trajectories_ = n
        self.mechanism_ = mech
        entered = None
        if groups is not None:
            entered = _entered(groups, mech.n_groups, est["group_counts"])
            self.group_values_ = est["group_values"]
            self.group_counts_ = est["group_counts"]
            self.group_std_ = est["group_std"]
            self.groups_entered_ = entered
            self.values_ = np.where(groups >= 0, self.group_values_[np.maximum(groups, 0)], np.nan)
        self.utility_ = _utility(est, mech, entered)

    def predict(self, states: ArrayLike) -> np.ndarray:
        """V̂ of the group of each state (group values only; NaN for a state in no group)."""
        values = check_is_fitted(self, "values_")
        return values[np.asarray(states, dtype=np.int64)]


def _entered(groups: np.ndarray, n_groups: int, counts: np.ndarray) -> np.ndarray:
    """Which groups were entered: a state maps to them (the declared structure) and their released
    count Ñ_g is at least 1 (post-processing of the release). The others have no estimate: their
    value is reported as the trivial F_max/2 with an infinite std, and they are left out of the
    diagnostics."""
    has_state = np.bincount(groups[groups >= 0], minlength=n_groups) > 0
    return has_state & (np.asarray(counts) >= 1.0)


def _utility(est: Estimate, mech: MonteCarloMechanism, entered: np.ndarray | None = None) -> dict[str, float]:
    """Public diagnostics: the noise std of Ĵ and whether it reaches F_max/2 (then Ĵ is no better
    than the trivial F_max/2, whose error is at most F_max/2 for every value in [0, F_max]); over the
    **entered** groups (:func:`_entered`; the others have no estimate), how many have a noise std
    (from the released counts) of at least F_max/2, ``group_error_rms`` — the estimated RMS error
    the noise adds to their values, √(mean_g E(clip(V_g + s_g z, 0, F_max) − V_g)²) with the
    released V̂_g for V_g and s_g the delta-method std
    (:func:`~privrl.least_squares.diagnostics.clipped_error`; the error against the non-private
    group values, the sampling error not counted) — and whether the group values as a whole are no
    better than the zero estimate (the least error their clipped noise can cause, whatever the true
    values, at least the signal max(V̂_g² − s_g², 0) they carry:
    :func:`~privrl.least_squares.diagnostics.noise_exceeds_signal`) — post-processing of the
    release and the public noise scale only."""
    half = mech.F_max / 2.0
    out: dict[str, float] = {"value_std": est["value_std"], "noise_dominated": bool(est["value_std"] >= half)}
    if "group_std" in est:
        on = np.ones(mech.n_groups, dtype=bool) if entered is None else entered
        std = np.minimum(est["group_std"][on], 1e154)
        values = est["group_values"][on]
        private = mech.is_private and bool(on.any())
        floor = clipped_error_floor(std, mech.F_max) if private else np.zeros_like(std)
        error = clipped_error(std, values, mech.F_max) if private else np.zeros_like(std)
        out.update(n_groups=mech.n_groups, groups_entered=int(on.sum()),
                   groups_noise_dominated=int(np.sum(std >= half)),
                   group_std_median=float(np.median(std)) if on.any() else math.inf,
                   group_error_rms=float(np.sqrt(np.mean(error))) if on.any() else math.nan,
                   groups_no_better_than_zero=private and noise_exceeds_signal(values, std ** 2, floor))
    return out


def utility_text(utility: Mapping[str, float]) -> str:
    """The main utility diagnostic in one line (the ``privrl fit`` summary prints it)."""
    text = f"noise std of J = {utility['value_std']:.3g}" + (" (≥ F_max/2: noise-dominated)"
                                                              if utility["noise_dominated"] else "")
    if "n_groups" in utility:
        entered = utility.get("groups_entered", utility["n_groups"])
        text += ((f"; {utility['n_groups'] - entered} of {utility['n_groups']} groups never entered"
                  if entered < utility["n_groups"] else "")
                 + f"; {utility['groups_noise_dominated']} of {entered} entered group values noise-dominated "
                 f"(std ≥ F_max/2), median group std {utility['group_std_median']:.3g}, estimated RMS error "
                 f"{utility['group_error_rms']:.3g}"
                 + ("; the group values are no better than the zero estimate"
                    if utility.get("groups_no_better_than_zero") else ""))
    return text


class MonteCarlo(_MonteCarlo):
    """Non-private Monte Carlo evaluation: Ĵ = mean return, V̂_g = mean first-visit return of group g.

    Parameters: ``gamma`` (default 1), ``groups`` (public map state → group, optional),
    ``max_groups_per_trajectory``, ``r_max`` and ``F_max`` (public bounds; F_max default as in
    :func:`~privrl.data.bounds.return_bound`), ``clip_returns``, ``record_terminal``.
    Fitted: ``value_`` Ĵ, ``value_std_`` (0), ``F_max_``, ``n_trajectories_``, and with groups
    ``group_values_``, ``group_counts_``, ``values_`` (per state); an empty ``privacy_ledger_``.
    """

    def fit(self, dataset: object, *, rng: RngLike = None) -> MonteCarlo:
        """Fit on a :class:`~privrl.data.TrajectoryDataset` (tabular observations only with groups), or
        on :class:`ReturnStatistics` from :meth:`statistics` (e.g. summed over a stream) built with
        this estimator's parameters (checked)."""
        p = self._validated()
        stats, f_max, n_groups, k = self._prepared(dataset, p)
        mech = MonteCarloMechanism.create(PrivacyBudget.non_private(), f_max, n_groups=n_groups, max_groups=k,
                                          owner=type(self).__name__)
        value, groups = mech.statistic(stats)
        self._store(mech.estimate(value, groups, stats.n_trajectories), mech, p["groups"], stats.n_trajectories)
        self.privacy_ledger_ = Ledger()
        return self


class DPMonteCarlo(_MonteCarlo, PrivateEstimator):
    """Differentially private Monte Carlo evaluation (module docstring for the derivation).

    ``budget``: ``PrivacyBudget(epsilon, delta)``, a pure ``PrivacyBudget(epsilon)`` or
    ``PrivacyBudget(rho)`` (an infinite budget gives exactly :class:`MonteCarlo`); ``neighboring``
    ``"replace_one"`` (default; n public) or ``"add_or_remove_one"`` (n private: ``n_trajectories_``
    is None and ``released_count_`` holds the noisy count); ``mechanism`` ``"auto"`` |
    ``"gaussian"`` | ``"laplace"``; ``calibration`` is ``"tight"`` only (the shared parameter; there
    are no printed constants to reproduce); ``secure`` draws from OpenDP.
    Other parameters as :class:`MonteCarlo`. Fitted: as MonteCarlo, with ``value_std_`` the public
    noise std of Ĵ, ``group_std_`` the delta-method noise std of each group value from the released
    counts, ``mechanism_`` the public noise plan (:class:`MonteCarloMechanism`; ``mechanism_.kind``
    the noise chosen), ``utility_`` the diagnostics, and ``privacy_ledger_``
    one event per released stream (J; the groups).
    """

    calibration: str = param(like=CALIBRATION, default="tight", options=("tight",), cli=False,
                             help=_CALIBRATION_HELP)
    # the relation is a parameter here: the field replaces Estimator's class attribute of the same name
    neighboring: str = param("privacy relation: 'replace_one' (n public: the mean is released) or "  # type: ignore[misc, assignment]
                             "'add_or_remove_one' (n private: a noisy sum and a noisy count are released)",
                             default=Neighboring.REPLACE_ONE.value, kind="option", options=RELATIONS)
    mechanism: str = param("noise: 'auto' (Gaussian for a rho budget, Laplace for a pure epsilon budget, the "
                           "smaller noise for (epsilon, delta)), 'gaussian' or 'laplace'", default="auto",
                           kind="option", options=MECHANISMS)

    @property
    def guarantee(self) -> str:  # type: ignore[override]
        """``"rho-zCDP"`` for a ρ budget, ``"(epsilon, delta)-DP"`` otherwise (a pure ε budget, or
        the Laplace plan, is certified as epsilon-DP by the ledger)."""
        budget = getattr(self, "budget", None)
        return "rho-zCDP" if isinstance(budget, PrivacyBudget) and budget.rho is not None else "(epsilon, delta)-DP"

    def fit(self, dataset: object, *, rng: RngLike = None) -> DPMonteCarlo:
        """Fit and release Ĵ (and the group values) through one Releaser; ``dataset`` as
        :meth:`MonteCarlo.fit` (a dataset, or the :class:`ReturnStatistics` of :meth:`statistics`)."""
        p = self._validated()
        rng = self._fit_rng(rng)
        owner = type(self).__name__
        stats, f_max, n_groups, k = self._prepared(dataset, p)
        mech = MonteCarloMechanism.create(p["budget"], f_max, n_groups=n_groups, max_groups=k,
                                          relation=p["neighboring"], mechanism=p["mechanism"], owner=owner)
        public_n = p["neighboring"] == Neighboring.REPLACE_ONE.value
        n = stats.n_trajectories if public_n else None
        rel = self._privacy(None if rng is None else child_rngs(rng, "privacy")["privacy"], n_units=n)
        value, groups = mech.release(*mech.statistic(stats), rel=rel)
        est = mech.estimate(value, groups, n)
        self._store(est, mech, p["groups"], n)
        if not public_n:
            self.released_count_ = est["count"]
        if mech.is_private:
            _warn_utility(self)
        return self


def _warn_utility(est: DPMonteCarlo) -> None:
    utility = est.utility_
    owner = type(est).__name__
    if utility["noise_dominated"]:
        warnings.warn(f"{owner}: the noise std of the value estimate is at least F_max/2, so it is no better than "
                      "the constant F_max/2. More trajectories, a larger epsilon or a tighter public F_max reduce it.",
                      UtilityWarning, stacklevel=3)
    if "n_groups" in utility and 2 * utility["groups_noise_dominated"] >= max(utility["groups_entered"], 1):
        warnings.warn(f"{owner}: {utility['groups_noise_dominated']} of the {utility['groups_entered']} entered group "
                      "values have a "
                      "noise std of at least F_max/2 (judged from the released counts): they are no better than the "
                      "constant F_max/2. Fewer, larger groups, a smaller max_groups_per_trajectory, more trajectories "
                      "or a larger epsilon reduce it.", UtilityWarning, stacklevel=3)
    elif utility.get("groups_no_better_than_zero"):
        warnings.warn(f"{owner}: the group values are no better than the zero estimate: their noise (an RMS error "
                      f"of about {utility['group_error_rms']:.2g}, judged from the released counts) is at least the "
                      "signal they carry (most of the error sits in rarely entered groups, whose values are then "
                      "near-random in [0, F_max]). Fewer, larger groups (merge the rare states), a smaller "
                      "max_groups_per_trajectory, more trajectories or a larger epsilon reduce it.",
                      UtilityWarning, stacklevel=3)
