"""The estimators of Qiao & Wang (2023): APVI and DP-APVI (tabular, Algorithm 1) here, and PEVI, VAPVI
and DP-VAPVI (linear MDPs, Algorithm 2) from :mod:`privrl.offline.linear_estimators` — thin shells
that validate, call the kernels of :mod:`privrl.offline.tabular` and :mod:`privrl.offline.linear` with
the noise plans of :mod:`privrl.offline.calibration`, and keep the fitted state.

Privacy unit: one trajectory, replace-one neighbours, dataset size public (each class's docstring
names its guarantee; the sensitivities are derived in the kernel modules).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike
from privrl._validation import check_group_map, param_error
from privrl.base import CONSTANTS, Estimator, PrivateEstimator, param
from privrl.errors import InvalidDataError
from privrl.offline._common import (
    Statistics,
    check_public_shape,
    check_reward_bounds,
    check_statistics,
    degenerate_output,
    padded_episodes,
    public_reward,
    transition_statistics,
)
from privrl.offline._utility import improvement_evidence, warn_no_improvement
from privrl.offline.baseline import (
    AUTO_LOGGING_SHARE,
    BASELINES,
    PRIOR_VISITS,
    behaviour_probs,
    behaviour_steps,
    check_behaviour_policy,
    group_policy,
    logging_estimate,
    one_hot,
    reference_q,
    state_logging_estimate,
    state_spibb,
)
from privrl.offline.calibration import (
    MECHANISMS,
    CountNoise,
    LoggingNoise,
    auto_split_power,
    count_noise,
    resolve_mechanism,
    split_logging_share,
)
from privrl.offline.grouping import check_route, check_state_groups, group_reward, grouped_statistics
from privrl.offline.linear_estimators import DPVAPVI, PEVI, VAPVI
from privrl.offline.routes import ROUTE_KEYS, Shape, choose_route, no_noise
from privrl.offline.tabular import TABULAR_PRESETS, TRANSITIONS_LIMIT, TabularFit, dp_apvi
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.release import Releaser

__all__ = ["APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI"]


# --------------------------------------------------------------------------- tabular (Algorithm 1)
def _tabular_knob(help_text: str, low: float, closed: str) -> Any:
    return param(f"{help_text} (None: from the 'constants' preset)", default=None, low=low, closed=closed,
                 none_ok=True)


DELTA_FAIL = param("failure probability δ of the utility analysis (not a DP δ)", default=0.05, low=0.0,
                   high=1.0, closed="neither")
C1 = _tabular_knob("C1, scale of the Bernstein penalty", 0.0, "left")
C_UNVISITED = _tabular_knob("C' > 1: penalty C'·H of pairs below the threshold", 1.0, "neither")
R_MAX = param("logged rewards: declared bound R_max, every reward in [0, R_max] (checked; privacy relies on it; "
              "unused with a public reward)", default=1.0, low=0.0, high=1.0, closed="right")
F_MAX = param("logged rewards: declared bound on each trajectory's total reward (checked; an outcome reward has "
              "F_max = 1); None = H·R_max", default=None, low=0.0, closed="neither", none_ok=True)


STATE_GROUPS = param("public map state → group (n_states,) ints, fixed without looking at the data: learn on the "
                     "grouped counts (an approximation: the grouped process treated as Markov) and play each "
                     "group's action in its states; with route='auto' a list of candidate maps (the route "
                     "chooses one, or the states); None = the states themselves", default=None, kind="array",
                     none_ok=True, check=check_state_groups, cli=False, bad=(np.array([0.5, 1.0]),))
ROUTE = param("'explicit': the route parameters as given; 'auto': state_groups (among the candidates), "
              "stationary, max_visits, cell_threshold and fallback chosen by the route plan "
              "(privrl.offline.routes) from public quantities only — n, S, A, H, the budget and the candidates' "
              "sizes, never the data: the choice costs no privacy; the choice is reported in route_; "
              "'auto' also sets baseline='logging' (safe improvement)",
              default="explicit", kind="option", options=("explicit", "auto"))
STATIONARY = param("pool the counts over the H steps (time-homogeneous dynamics): one released step with about H "
                   "times the count per cell; the policy stays per step", default=False, kind="bool")
MAX_VISITS = param("only with stationary=True (refused without): each trajectory keeps only its first max_visits "
                   "visits of any (group, action) pair, later ones dropped (clipping you ask for; the pooled counts' "
                   "l2 sensitivity falls from sqrt(2)·H to sqrt(2·c·H) for c = max_visits); None = keep all",
                   default=None, kind="int", low=1, none_ok=True)
FALLBACK = param("how ties of the greedy step are broken (e.g. where no pair of (h, s) clears the count threshold "
                 "and every Q-value is 0): 'tie-break' (the lowest action index) or 'behaviour' (the tied action "
                 "with the largest released visit count: the behaviour-cloned action)",
                 default="tie-break", kind="option", options=("tie-break", "behaviour"))
BASELINE = param("safe improvement over a baseline (SPIBB, Laroche et al. 2019): 'none' (Algorithm 1's greedy "
                 "policy) or 'logging' (follow the logging policy estimated from the released visit counts wherever "
                 "they do not support a change, improve on it only where they do; post-processing, no budget)",
                 default="none", kind="option", options=BASELINES)
BASELINE_GROUPS = param("public map state → group (n_states,) ints, fixed without looking at the data: a coarser "
                        "level of the estimated logging policy's shrinkage (with baseline='logging'; ignored with "
                        "state_groups, whose groups are the states learned on); None = no such level",
                        default=None, kind="array", none_ok=True, check=check_state_groups, cli=False,
                        bad=(np.array([0.5, 1.0]),))
BEHAVIOUR_POLICY = param("a public logging policy, (n_states, n_actions) or (horizon, n_states, n_actions) "
                         "probabilities (rows >= 0 summing to 1; checked), known without the data — a deployed "
                         "decision rule, a written protocol: it IS SPIBB's baseline (implies baseline='logging'; no "
                         "estimate, no privacy cost: public input); on public state groups each state keeps its own "
                         "row; None = estimate the logging policy from the released counts", default=None,
                         kind="array", none_ok=True, check=check_behaviour_policy, cli=False,
                         bad=(np.array([[0.5, 0.6]]),))
SUPPORT_COUNT = param("SPIBB's N∧ (baseline='logging'): a pair may take the baseline's probability only with at "
                      "least this many released visits (and counts above the confidence bound E)", default=10.0,
                      low=0.0)


class _TabularBase(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    def _routes(self) -> dict[str, Any]:
        """The validated parameters of a fit or a plan; a list of candidate ``state_groups`` only with
        ``route="auto"``, ``max_visits`` only with ``stationary=True`` (per step a trajectory visits a
        pair at most once: a cap would silently change nothing) — refused, not ignored."""
        p = self._validated()
        if isinstance(p["state_groups"], list) and p["route"] != "auto":
            raise param_error("state_groups", type(self).__name__, "one (n_states,) array unless route='auto' (a list "
                              "of candidate maps is for the route plan)", f"a list with route={p['route']!r}")
        if p.get("logging_share") and (p["route"] != "auto" and (p["baseline"] != "logging"
                                                                  or p["state_groups"] is None)):
            raise param_error("logging_share", type(self).__name__, "0 or None unless the fit is on public "
                              "state_groups with baseline='logging' (or route='auto'): the per-state logging counts "
                              "serve the safe baseline on groups", p["logging_share"])
        if p["max_visits"] is not None and not p["stationary"]:
            raise param_error("max_visits", type(self).__name__, "left unset unless stationary=True (per step a "
                              "trajectory visits a pair at most once: the cap applies to counts pooled over the "
                              "steps)", p["max_visits"])
        return p

    def _resolve_route(self, p: dict[str, Any], n_episodes: int, n_states: int, n_actions: int,
                       horizon: int, *, capped: bool = True) -> dict[str, Any]:
        """``p`` with the route resolved (``route="auto"``: :func:`~privrl.offline.routes.choose_route`
        over the candidate ``state_groups`` from the public sizes and the budget only; no data read)
        and ``self.route_`` set: the route's parameters (:data:`~privrl.offline.routes.ROUTE_KEYS`)."""
        if p["route"] == "auto":
            given = p["state_groups"]
            candidates = [] if given is None else (given if isinstance(given, list) else [given])
            candidates = [self._groups({"state_groups": g}, n_states) for g in candidates]
            k = self._constants(p)
            chosen = choose_route(self._route_noise(p, horizon, n_states, n_actions, n_episodes),
                                  Shape(int(n_episodes), int(n_states), int(n_actions), int(horizon)),
                                  [int(g.max()) + 1 for g in candidates], float(k.get("threshold_multiplier") or 0.0),
                                  capped=capped, support_count=float(p["support_count"]),
                                  c2=float(k.get("c2") or 0.0), delta_fail=p["delta_fail"])
            route = chosen.route
            groups = None if route.candidate is None else candidates[route.candidate]
            p = {**p, **{k: v for k, v in route.params().items() if k in p}, "state_groups": groups}
            # the auto route is the safe one: it follows the estimated logging policy wherever the released
            # counts do not support a change (post-processing); per state, the finest candidate grouping
            # is the coarse level of that estimate unless baseline_groups is given
            p["baseline"] = "logging"
            if groups is None and p.get("baseline_groups") is None and candidates:
                p["baseline_groups"] = max(candidates, key=lambda g: int(g.max()))
        if p.get("behaviour_policy") is not None:
            p["baseline"] = "logging"          # the public logging policy is the SPIBB baseline
        self.route_ = {k: p[k] for k in (*ROUTE_KEYS, "baseline", "baseline_groups") if k in p
                       and (k != "baseline_groups" or p[k] is not None)}
        return p

    def _route_noise(self, p: dict[str, Any], horizon: int, n_states: int, n_actions: int, n_episodes: int) -> Any:
        """The noise plan of each candidate route: none for a non-private estimator."""
        return no_noise

    def _constants(self, p: dict[str, Any]) -> dict[str, Any]:
        """The utility constants: the preset's, each replaced by the value given (floats; the
        split power may be 'auto')."""
        preset = dict(TABULAR_PRESETS[p["constants"]])
        return {k: (preset[k] if p[k] is None else (p[k] if isinstance(p[k], str) else float(p[k])))
                for k in preset if k in p}

    def _inputs(self, p: dict[str, Any], dataset: Any, reward: Any) -> tuple[Statistics, np.ndarray | None]:
        """(sparse statistics, the public reward ``(H,S,A)`` or None for logged rewards), validated:
        states and actions in range, a fixed horizon, rewards in [0, 1] — in [0, r_max] and returns
        at most F_max when the rewards are logged (privacy relies on them)."""
        owner = type(self).__name__
        r = None if reward is None else public_reward(reward, owner)
        if r is not None:
            S, A = r.shape[-2:]
            check_public_shape(dataset, S, A, "reward", "(H, {S}, {A}) or ({S}, {A})", r.shape, owner)
        elif isinstance(dataset, Statistics):
            S, A = dataset.route.n_states, dataset.shape[2]
        elif getattr(dataset, "n_states", None) is not None and getattr(dataset, "n_actions", None) is not None:
            S, A = int(dataset.n_states), int(dataset.n_actions)
        else:
            raise param_error("reward", owner, "a public reward function, or (logged rewards) a dataset that "
                              "declares n_states and n_actions", None)
        # before the data are read: ids beyond S would cost for nothing; route="auto" resolves its groups
        # below and takes per-step statistics only (it chooses the grouping and pooling itself)
        auto = p["route"] == "auto"
        groups = None if auto else self._groups(p, S)
        known = None if p["behaviour_policy"] is None else behaviour_probs(p["behaviour_policy"], S, A, owner)
        horizon = r.shape[0] if r is not None and r.ndim == 3 else None
        r_max = float(p["r_max"]) if r is None else 1.0
        routed = False
        if isinstance(dataset, Statistics):
            # statistics on the fit's route are fitted as they are; others are refused (the sensitivity)
            routed = check_route(dataset, groups, False if auto else p["stationary"],
                                 None if auto else p["max_visits"], owner)
            check_statistics(dataset, owner, n_states=S, n_actions=A, horizon=horizon, routes=True)
            stats = dataset
        else:
            data = padded_episodes(dataset, owner, n_states=S, n_actions=A, horizon=horizon,
                                   reward_bounds=(0.0, r_max))
            stats = transition_statistics(data, S, A)
        H = stats.route.horizon
        if r is None:
            check_reward_bounds(stats, owner, r_max=r_max, F_max=None if p["F_max"] is None else float(p["F_max"]))
        self._horizon, self._n_states = H, S
        self._behaviour = None if known is None else behaviour_steps(known, H, owner)
        p.update(self._resolve_route(p, stats.n_episodes, S, A, H, capped=not isinstance(dataset, Statistics)))
        groups = self._groups(p, S)
        r = None if r is None else np.broadcast_to(r, (H, S, A)).astype(float)
        grouped_reward = r if r is None or groups is None else group_reward(r, groups)
        if routed:
            return stats, grouped_reward
        if groups is None and not p["stationary"]:
            return stats, r
        source = stats if isinstance(dataset, Statistics) else data
        return grouped_statistics(source, groups, S, A, stationary=p["stationary"], max_visits=p["max_visits"],
                                  owner=owner), grouped_reward

    def _groups(self, p: dict[str, Any], n_states: int) -> np.ndarray | None:
        """The declared state groups, checked against the number of states (None without groups)."""
        groups = p["state_groups"]
        return None if groups is None else check_group_map(groups, n_states, "state_groups", type(self).__name__)

    def _route(self, p: dict[str, Any]) -> dict[str, Any]:
        """The kernel's route arguments: the planning horizon of pooled statistics and the fallback."""
        return {"horizon": self._horizon, "fallback": p["fallback"]}

    def _baseline(self, p: dict[str, Any], sigma: float) -> dict[str, Any]:
        """The kernel's baseline arguments: the estimated logging policy as a function of the
        released visit counts (noise std ``sigma`` per cell; :func:`~privrl.offline.baseline.logging_estimate`),
        always computed (the warning compares with it), and SPIBB on it with ``baseline="logging"``."""
        coarse = None if p["state_groups"] is not None or p["baseline_groups"] is None else \
            self._groups({"state_groups": p["baseline_groups"]}, self._n_states)
        grouped = p["state_groups"] is not None
        known, groups = self._behaviour, self._groups(p, self._n_states)
        if known is not None:               # public: the baseline itself (the groups' mean on groups)
            prior = known if groups is None else group_policy(known, groups)
            return {"baseline": lambda released: prior, "safe": True, "support_count": float(p["support_count"])}
        return {"baseline": lambda released: logging_estimate(released, sigma, coarse, coarse_states=grouped),
                "safe": p["baseline"] == "logging", "support_count": float(p["support_count"])}

    def _advice(self, p: dict[str, Any]) -> list[str]:
        """What could help that this fit does not already use (never an option already set)."""
        out = [] if p["baseline"] == "logging" else ["baseline='logging' (keeps the estimated logging policy "
                                                      "wherever the released counts do not support a change)"]
        out += [] if p["constants"] == "practical" else ["constants='practical'"]
        out += [] if p["state_groups"] is not None else ["public state_groups="]
        out += [] if p["stationary"] else ["stationary=True (pooled counts)"]
        return out + ["more data" + (" or a larger budget" if getattr(self, "_is_noisy", False) else "")]

    def _store(self, fit: TabularFit, p: dict[str, Any], sigma: float = 0.0,
               logging: tuple[np.ndarray, float] | None = None) -> None:
        """Keep the fit — mapped back from groups to states (state s plays its group's action;
        ``transitions_`` is then None) — and warn when the released evidence does not show a gain
        over the estimated logging policy (:mod:`privrl.offline._utility`; released quantities and the
        transition counts' public noise std ``sigma`` only).
        ``policy_probs_`` ``(H, S, A)``: the SPIBB policy's probabilities with a baseline, the
        one-hot of ``policy_`` without; ``logging_policy_`` the estimated logging policy — per state on
        groups when it is public or ``logging`` (the released per-state visit counts and their noise
        std) is given, each state then taking SPIBB's step on its own row."""
        A = fit.q_values.shape[-1]
        # dp_apvi fills these whenever it is given a baseline function, as _baseline always does
        assert fit.prior is not None and fit.supported is not None and fit.q_upper is not None
        assert fit.released is not None
        probs = one_hot(fit.policy, A) if fit.probs is None else fit.probs
        evidence = improvement_evidence(probs, fit.prior, fit.supported, fit.q_values,
                                        reference_q(fit.q_values, fit.q_upper), fit.released, sigma)
        kind = "weak output" if degenerate_output(fit.q_values, fit.policy) is None else "degenerate output"
        warn_no_improvement(type(self).__name__, evidence, self._advice(p), kind)
        groups = self._groups(p, self._n_states)
        to_states = (lambda x: x) if groups is None else (lambda x: x[:, groups])
        known, rows = self._behaviour, None
        if known is None and logging is not None and groups is not None:
            known, rows = (state_logging_estimate(fit.prior, *logging, groups, narrow) for narrow in (True, False))
        if groups is not None and known is not None:     # each state's own baseline, the group's Q and support
            probs = state_spibb(fit.q_values, fit.q_upper, fit.supported, known, groups, rows=rows)
            self.policy_, self.policy_probs_, self.logging_policy_ = np.argmax(probs, axis=-1), probs, known
        else:
            self.policy_, self.policy_probs_, self.logging_policy_ = (to_states(fit.policy), to_states(probs),
                                                                      to_states(fit.prior))
        self.improvement_evidence_ = evidence
        self.values_ = to_states(fit.values)
        self.q_values_ = to_states(fit.q_values)
        self.transitions_ = fit.transitions if groups is None and not p["stationary"] else None
        self.counts_ = to_states(fit.counts)


class APVI(_TabularBase):
    """Adaptive pessimistic value iteration (Yin & Wang 2021b), the non-private baseline.

    Exactly Algorithm 1 with the raw counts ``n``, ``P̂`` (Eq. 15) and ``E = 0``: penalty
    ``c1 sqrt(Var_P̂(V) ι / n)`` for visited pairs, ``c_unvisited·H`` otherwise. APVI's lower-order
    ``O(Hι/n)`` term is set to 0 so that DP-APVI with an infinite budget equals APVI exactly.
    ``fit(dataset, reward=None)``: ``dataset`` fixed-horizon trajectories (a
    :class:`~privrl.data.TrajectoryDataset`, a mapping of ``(K, H)`` arrays, or
    :class:`~privrl.offline.Statistics`); ``reward`` the public reward function, ``(H,S,A)`` or
    ``(S,A)`` in [0, 1], or a model carrying it (e.g. ``from_gymnasium_toy_text(env, horizon=H)``,
    a :class:`~privrl.envs.SparseTabularMDP`) — or None to learn from the logged rewards (declared
    in [0, ``r_max``], returns at most ``F_max``; e.g. an outcome reward, 1 on success): then
    ``r̂ = R/n``, the empirical mean reward of a pair.

    Complexity (``K`` trajectories): ``O(K·H log(K·H) + H·S·A)`` time and ``O(K·H + H·S·A)``
    memory — sparse statistics, then Algorithm 1 one step at a time on sparse rows
    (:mod:`privrl.offline.tabular`); never an ``(H, S, A, S)`` array: ``transitions_`` (the dense
    ``P̂``) is kept only when ``H·S·A·S <= 2^22``, None otherwise.

    Routes for coverage-limited data (all off by default; :mod:`privrl.offline.grouping`):
    ``state_groups`` — learn on the counts of public state groups (a practical approximation: the
    grouped process is treated as Markov; the group's reward is the unweighted mean of its states'
    public rewards), every state then plays its group's action (``policy_`` stays ``(H, S)``,
    ``transitions_`` is None); ``stationary`` — counts pooled over the steps (time-homogeneous
    dynamics), the policy still per step from backward induction over H; ``max_visits`` — with
    pooling, each trajectory keeps only its first c visits of each pair; ``fallback="behaviour"`` —
    ties of the greedy step (all Q-values clipped to 0 where no pair of ``(h, s)`` is confident)
    broken by the released visit counts: the most logged of the tied actions.
    """

    guarantee = None
    constants: str = CONSTANTS
    delta_fail: float = DELTA_FAIL
    c1: float | None = C1
    c_unvisited: float | None = C_UNVISITED
    r_max: float = R_MAX
    F_max: float | None = F_MAX
    state_groups: ArrayLike | None = STATE_GROUPS
    stationary: bool = STATIONARY
    max_visits: int | None = MAX_VISITS
    fallback: str = FALLBACK
    route: str = ROUTE
    baseline: str = BASELINE
    baseline_groups: ArrayLike | None = BASELINE_GROUPS
    behaviour_policy: ArrayLike | None = BEHAVIOUR_POLICY
    support_count: float = SUPPORT_COUNT

    def fit(self, dataset: Any, reward: Any = None, *, rng: RngLike = None) -> APVI:
        p = self._routes()
        stats, r = self._inputs(p, dataset, reward)
        self.privacy_ledger_ = Ledger()
        k = self._constants(p)
        H, S, A = stats.shape
        self._store(dp_apvi(stats, r, noise=None, delta_fail=p["delta_fail"], c1=k["c1"], c2=0.0,
                            c_unvisited=k["c_unvisited"], r_max=float(p["r_max"]),
                            keep_transitions=H * S * A * S <= TRANSITIONS_LIMIT, **self._route(p),
                            **self._baseline(p, 0.0)), p)
        return self


class DPAPVI(PrivateEstimator, _TabularBase):
    """DP-APVI (Qiao & Wang 2023, Algorithm 1): ρ-zCDP / (ε, δ)-DP (Gaussian, Eq. 2) or ε-DP (Laplace).

    ``mechanism="auto"`` resolves from the budget before any fit: Laplace for a pure ε budget
    (δ = 0), Gaussian otherwise; ``guarantee`` follows from the parameters and never changes in a
    fit. ``calibration`` "tight" (default) / "sound" / "paper" (:mod:`privrl.offline.calibration`).
    ``delta_fail`` is the failure probability of the utility analysis (not a DP δ); ``c1, c2,
    c_unvisited, threshold_multiplier`` (presets ``constants``) are public, data-independent
    constants: none of them affects privacy. With logged rewards the per-(h, s, a) reward sums are
    released too (a third family of the plan, sensitivity √2·min(F_max, …) from the declared
    ``r_max``/``F_max``: :mod:`privrl.offline.calibration`; not under ``calibration="paper"``).
    ``fit(dataset, reward=None, *, rng)`` as :class:`APVI`.

    Routes for coverage-limited data (:class:`APVI`'s, plus ``cell_threshold``; all off by default):
    every one is a public, data-independent map of the trajectories before the release, or
    post-processing after it. Groups do not change the sensitivity (each transition still lands in
    one cell). Pooling over the steps does: one trajectory adds a vector ``v >= 0`` summing to H to
    each count family, an entry up to H when pooled, so the replace-one ℓ2 sensitivity grows from
    √(2H) (per step, Lemma C.1: entries 0/1) to √2·H; the cap ``max_visits = c`` bounds every entry
    by c, so ``‖v‖² <= m = c²⌊H/c⌋ + (H − c⌊H/c⌋)² <= c·H`` and ``‖v − w‖² <= ‖v‖² + ‖w‖² <= 2m``:
    Δ₂ = √(2m) (√(2H) at c = 1: pooled counts at per-step cost, with up to H times the count per
    cell). The logged reward sums follow with entries ``<= c·r_max`` and total ``<= F_max``; ℓ1
    (Laplace) stays 2H. The plan (:meth:`count_noise`) uses these Δ, and its bound E a union
    over the released cells (one step when pooled); the ledger records σ/Δ.
    ``cell_threshold = k``: released transition cells at most k·σ are set to 0; the fallback's
    behaviour-cloned action is the argmax of the released ``ñ_sa`` — both post-processing.

    Complexity (``K`` trajectories): ``O(K·H log(K·H) + H·S·A·S)`` time — one noise draw per
    released cell: the zero counts get their noise too, drawn where it is consumed, row block by
    row block — and ``O(K·H + H·S·A)`` memory (plus one block of ``2^20`` noisy cells); never an
    ``(H, S, A, S)`` array: ``transitions_`` (the dense ``P̃``) is kept only when
    ``H·S·A·S <= 2^22``, None otherwise.
    """

    constants: str = CONSTANTS
    mechanism: str = param("noise: 'auto' (Laplace for a pure epsilon budget, Gaussian otherwise), 'gaussian' "
                           "or 'laplace'", default="auto", kind="option", options=MECHANISMS)
    delta_fail: float = DELTA_FAIL
    c1: float | None = C1
    c2: float | None = _tabular_knob("C2, scale of the privacy penalty C2·S·H·E·ι/ñ", 0.0, "left")
    c_unvisited: float | None = C_UNVISITED
    threshold_multiplier: float | None = _tabular_knob("pairs with ñ_sa <= threshold_multiplier·E use the "
                                                       "uniform transition and penalty C'·H", 0.0, "left")
    split_power: float | str | None = param(
        "tight calibration: error weights (S^k, 1) of the n_sa and n_sas count families in the budget split "
        "(0: even, as in the paper; -1: the error term's (1, S); 'auto': 1 when the data are coverage-limited, "
        "else 0); never changes the privacy loss (None: from the 'constants' preset)", default=None,
        low=-3.0, high=3.0, none_ok=True, options=("auto",))
    r_max: float = R_MAX
    F_max: float | None = F_MAX
    state_groups: ArrayLike | None = STATE_GROUPS
    stationary: bool = STATIONARY
    max_visits: int | None = MAX_VISITS
    cell_threshold: float = param("released transition cells at most cell_threshold·σ (the n_sas noise std) are "
                                  "set to 0 before P̃ is formed (post-processing; 0 = off)", default=0.0, low=0.0)
    fallback: str = FALLBACK
    route: str = ROUTE
    baseline: str = BASELINE
    baseline_groups: ArrayLike | None = BASELINE_GROUPS
    behaviour_policy: ArrayLike | None = BEHAVIOUR_POLICY
    support_count: float = SUPPORT_COUNT
    logging_share: float | None = param(
        "share s of the budget spent on the per-state action visit counts pooled over the steps, released "
        "on public state_groups (the finest level of the estimated logging policy, SPIBB's baseline; the "
        "rest of the fit gets the remaining 1 - s: the total is the budget); 0 = off; None = "
        f"{AUTO_LOGGING_SHARE:g} with route='auto' when it plays a grouped route, else 0; needs "
        "baseline='logging' (or route='auto') and no public behaviour_policy", default=None, low=0.0, high=1.0,
        closed="left", none_ok=True)

    @property
    def guarantee(self) -> str:  # type: ignore[override]
        """``"rho-zCDP"`` for a ρ budget (Gaussian), ``"(epsilon, delta)-DP"`` for an (ε, δ) budget
        (Gaussian calibrated to it, or Laplace: δ = 0). A property of the parameters only."""
        budget = getattr(self, "budget", None)
        return "rho-zCDP" if isinstance(budget, PrivacyBudget) and budget.rho is not None else "(epsilon, delta)-DP"

    def count_noise(self, horizon: int, n_states: int, n_actions: int, n_episodes: int | None = None, *,
                    logged_rewards: bool = False) -> CountNoise:
        """The noise plan of a fit on ``n_episodes`` trajectories of this shape (public: no data needed;
        ``n_episodes`` is used by ``split_power="auto"`` and ``route="auto"``, which first resolves the
        route from these sizes as a fit does); ``logged_rewards`` adds the reward sums' family (a fit with
        ``reward=None``). With ``state_groups`` the released grid has the groups as its states
        (``n_states`` ignored); ``stationary`` and ``max_visits`` set the sensitivity
        (:func:`~privrl.offline.calibration.count_sensitivity`); with a ``logging_share`` on public groups,
        the noise of the counts the rest of the budget pays for (:meth:`logging_noise`: the share's)."""
        p = self._routes()
        if p["route"] == "auto":
            if n_episodes is None:
                raise param_error("n_episodes", f"{type(self).__name__}.count_noise", "the number of trajectories "
                                  "when route='auto'", None)
            p = self._resolve_route(p, int(n_episodes), n_states, n_actions, horizon)
        return self._count_noise(p, horizon, n_states, n_actions, n_episodes, logged_rewards=logged_rewards)

    def _count_noise(self, p: dict[str, Any], horizon: int, n_states: int, n_actions: int,
                     n_episodes: int | None, *, logged_rewards: bool = False, grouped: bool | None = None,
                     states: int | None = None) -> CountNoise:
        """:meth:`count_noise` for the validated, resolved parameters ``p`` (``grouped``: the route is on
        public groups, default: ``p`` has ``state_groups``; ``states``: the number of states S, default
        the groups' map's length or ``n_states``), on the budget the logging share leaves."""
        owner = type(self).__name__
        grouped = p["state_groups"] is not None if grouped is None else grouped
        if states is None:
            states = n_states if p["state_groups"] is None else int(np.size(p["state_groups"]))
        p = {**p, "budget": self._split(p, horizon, grouped, (n_episodes, states, n_actions))[0]}
        if p["state_groups"] is not None:
            n_states = int(p["state_groups"].max()) + 1
        rewards = {"logged_rewards": logged_rewards, "r_max": float(p["r_max"]), "F_max": p["F_max"],
                   "stationary": bool(p["stationary"]), "max_visits": p["max_visits"]}
        power = self._constants(p)["split_power"]
        if power == "auto":
            if n_episodes is None:
                raise param_error("n_episodes", f"{owner}.count_noise", "the number of trajectories when "
                                  "split_power='auto'", None)
            power = auto_split_power(horizon, n_states, n_actions, p["budget"], int(n_episodes),
                                     mechanism=resolve_mechanism(p["mechanism"], p["budget"], owner),
                                     delta_fail=p["delta_fail"], **rewards)
        return count_noise(horizon, n_states, n_actions, p["budget"], mechanism=p["mechanism"],
                           calibration=p["calibration"], delta_fail=p["delta_fail"], split_power=power,
                           owner=owner, **rewards)

    def _route_noise(self, p: dict[str, Any], horizon: int, n_states: int, n_actions: int, n_episodes: int) -> Any:
        """The estimator's own noise plan of each candidate route (its parameters in place of ``p``'s)."""
        return lambda route: self._count_noise({**p, **route.params(), "state_groups": None}, horizon,
                                               route.groups or n_states, n_actions, n_episodes,
                                               grouped=route.groups is not None, states=n_states)

    def _split(self, p: dict[str, Any], horizon: int, grouped: bool,
               sizes: tuple[int | None, int | None, int] | None = None) -> tuple[PrivacyBudget, LoggingNoise | None]:
        """(the main fit's budget, the per-state logging counts' noise or None):
        :func:`~privrl.offline.calibration.split_logging_share` of the budget (the budget itself, None,
        without a share or without privacy). The share: 0 off public groups or with a public
        ``behaviour_policy``; ``None`` is :data:`~privrl.offline.baseline.AUTO_LOGGING_SHARE` with
        ``route="auto"`` — unless the public ``sizes`` (n, S, A) show that the typical state's row would
        not be measured: its n·H/S visits below the prior strength ``PRIOR_VISITS + σ√A`` of its level
        (:mod:`~privrl.offline.baseline`), where the release would buy nothing (then 0) — else 0."""
        default = p["logging_share"] is None and p["route"] == "auto"
        share = 0.0 if not grouped or p["behaviour_policy"] is not None else float(
            AUTO_LOGGING_SHARE if default else p["logging_share"] or 0.0)
        if share <= 0.0 or not p["budget"].is_private:
            return p["budget"], None
        main, plan = split_logging_share(p["budget"], share, horizon, mechanism=p["mechanism"],
                                         calibration=p["calibration"], max_visits=p["max_visits"],
                                         owner=type(self).__name__)
        n, S, A = sizes if sizes is not None else (None, None, 0)
        if default and n is not None and S is not None and n * horizon / S < PRIOR_VISITS + plan.noise_std * A**0.5:
            return p["budget"], None
        return main, plan

    def logging_noise(self, horizon: int) -> LoggingNoise | None:
        """The noise plan of the per-state logging counts a fit on public ``state_groups`` with an explicit
        ``logging_share`` releases (public: no data needed; None without a share or without privacy)."""
        p = self._routes()
        return self._split(p, horizon, p["state_groups"] is not None)[1]

    def _release_logging(self, plan: LoggingNoise | None, stats: Statistics, rel: Releaser
                         ) -> tuple[np.ndarray, float] | None:
        """The released per-state visit counts pooled over the steps ``(S, A)`` (before ``{·}^+``) and
        their noise std, through the fit's releaser (one ledger event, declared), or None without a
        logging share (``plan``: :func:`~privrl.offline.calibration.split_logging_share`'s noise)."""
        if plan is None:
            return None
        if stats.state_visits is None:
            raise InvalidDataError(f"{type(self).__name__}: logging_share needs the per-state visit counts of the "
                                   "route: give the trajectories, per-step statistics, or statistics built by "
                                   "route_statistics / stream_statistics on public groups.")
        visits = stats.state_visits
        out = (rel.gaussian(visits, sensitivity=plan.sensitivity, std=plan.scale) if plan.mechanism == "gaussian"
               else rel.laplace(visits, sensitivity=plan.sensitivity, scale=plan.scale))
        return out, plan.noise_std

    def resolved_mechanism(self) -> str:
        """``"gaussian"`` or ``"laplace"``: what ``mechanism="auto"`` means for this budget."""
        p = self._validated()
        return resolve_mechanism(p["mechanism"], p["budget"], type(self).__name__)

    def fit(self, dataset: Any, reward: Any = None, *, rng: RngLike = None) -> DPAPVI:
        p = self._routes()
        rng = self._fit_rng(rng)
        stats, r = self._inputs(p, dataset, reward)
        _, S, A = stats.shape
        H = self._horizon
        noise = self._count_noise(p, H, S, A, stats.n_episodes, logged_rewards=r is None)
        rel = self._privacy(rng, n_units=stats.n_episodes)   # the fit draws no other randomness: rng is the noise's
        k = self._constants(p)
        k.pop("split_power")
        fit = dp_apvi(stats, r, noise=noise, rel=rel, delta_fail=p["delta_fail"], c1=k["c1"], c2=k["c2"],
                      c_unvisited=k["c_unvisited"], threshold_multiplier=k["threshold_multiplier"],
                      r_max=float(p["r_max"]), keep_transitions=H * S * A * S <= TRANSITIONS_LIMIT,
                      cell_threshold=float(p["cell_threshold"]), **self._route(p),
                      **self._baseline(p, noise.noise_std[0] if noise.is_private else 0.0))
        self._is_noisy = noise.is_private
        self.noise_std_ = noise.noise_std
        self.noise_bound_ = noise.penalty_bound if noise.is_private else 0.0
        plan = self._split(p, H, p["state_groups"] is not None, (stats.n_episodes, self._n_states, A))[1]
        logging = self._release_logging(plan, stats, rel)
        self._store(fit, p, noise.noise_std[1] if noise.is_private else 0.0, logging)
        return self
