"""A family of real-shaped offline tasks: :func:`real_shaped` (a generator with knobs) and the named,
seeded grid :data:`INSTANCES` (:func:`real_shaped_instance`), with :func:`measure_knobs` to check an
instance is what its name says.

Why a family. DP-APVI's real-size route (public state groups, pooling, one visit per pair, a 3σ cell
threshold, the behaviour fallback) kept most of the best non-private gain on the clinic generator
(:func:`~privrl.envs.sparse_tabular`) and little on a task derived from real hospital data. Four
properties differed, and each is a knob here:

* **agreement** — how well the public groups describe the dynamics: the visit-weighted share of
  ``(h, s)`` whose optimal action is its group's most common optimal action (the clinic generator
  71 %, the real task 26 %). Knob ``heterogeneity`` ∈ [0, 1]: an action's quality in a state is
  ``√(1 − η)·(its level's quality) + √η·(its own)`` (same variance for every η), so η = 0 gives
  groups whose states share their best action and η → 1 states whose best actions are unrelated.
* **density** — next states per pair: ``n_next`` (success, failure and ``n_next − 2`` states of the
  better / same / worse level in proportions 3 : 2 : 3; the clinic generator 10, the real task
  about 82).
* **spread** — actions the logging policy uses per state: ``n_admissible`` (clinic 4, real 13).
* **clone quality** — how good the logging policy's most-logged action (its greedy clone) is:
  ``(V(clone) − V(logging)) / (V* − V(logging))`` (clinic ≈ 0.99: the behaviour fallback looks like
  success; real: the clone is worth little more than the clinicians). Knob ``habit_rank`` ∈ [0, 1]:
  each state's habitual action, logged with probability ``habit_share`` (the rest ∝ exp(tilt·q) over
  the other admissible actions), is the admissible action at that quantile of the state's own
  quality ranking (1: the best, 0.5: the median).

Every instance is a :class:`~privrl.envs.SparseTabularMDP` (time-homogeneous, sparse kernel, outcome
reward 1 on entering the absorbing success state, absorbing failure), so the value of any policy is
exact and fast (``O(H·S·A·k)``), and ``groups``, ``logging_policy`` and ``admissible`` are set.
The dynamics are those of :func:`~privrl.envs.sparse_tabular` (same outcome logits in the severity
and the action's quality), so a state's best-quality action is nearly always its optimal one (not
always: the listed next states of a pair are drawn per pair, and their values differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.envs.sparse_tabular import (
    _BAD_ACTION,
    SparseTabularMDP,
    _outcome_probabilities,
    _sparse_kernel,
    _unit_uniform,
)

__all__ = ["real_shaped", "real_shaped_instance", "measure_knobs", "Instance", "INSTANCES", "BANDS"]

_OWNER = "real_shaped"
#: proportions of the better / same / worse level among the listed next states (as sparse_tabular's 3 : 2 : 3)
_PROPORTIONS = np.array([3.0, 2.0, 3.0])


def _widths(n_next: int, pools: int) -> tuple[int, int, int]:
    """Listed next states in the better / same / worse level: ``n_next − 2`` split 3 : 2 : 3 (largest
    remainders), each at least 1 and at most ``pools`` (the smallest level's size)."""
    total = n_next - 2
    raw = _PROPORTIONS / _PROPORTIONS.sum() * total
    base = np.floor(raw).astype(int)
    base[np.argsort(-(raw - base))[: total - int(base.sum())]] += 1
    out = np.clip(base, 1, pools)
    return int(out[0]), int(out[1]), int(out[2])


def _quality(gen: np.random.Generator, level: np.ndarray, admissible_level: np.ndarray, spread: float,
             heterogeneity: float) -> np.ndarray:
    """``q (T, A)``: √(1−η)·level part + √η·state part, each centred with std ``spread``; actions
    outside the level's admissible set are markedly worse (mean −1.5)."""
    L, A = admissible_level.shape
    shared = _unit_uniform(gen, (L, A))[level]
    own = _unit_uniform(gen, (level.size, A))
    mix = np.sqrt(1.0 - heterogeneity) * shared + np.sqrt(heterogeneity) * own
    return np.where(admissible_level[level], 0.0, _BAD_ACTION) + spread * mix


def _logging(q: np.ndarray, admissible: np.ndarray, habit_rank: float, habit_share: float,
             tilt: float) -> np.ndarray:
    """The clinicians' policy ``(T, A)``: each state's habitual action (the admissible action at
    quantile ``habit_rank`` of its quality ranking) with probability ``habit_share`` (``1/k`` of the
    mass when there is one admissible action), the rest ∝ exp(tilt·q) over the other admissible ones."""
    T, _ = q.shape
    k = admissible.sum(axis=1)
    ranked = np.argsort(np.where(admissible, q, -np.inf), axis=1)[:, ::-1]      # best admissible first
    position = np.rint((1.0 - habit_rank) * (k - 1)).astype(int)
    habit = ranked[np.arange(T), position]
    weight = np.where(admissible, np.exp(tilt * (q - q.max(axis=1, keepdims=True))), 0.0)
    weight[np.arange(T), habit] = 0.0
    others = weight.sum(axis=1, keepdims=True)
    share = np.where(k > 1, habit_share, 1.0)[:, None]
    out = (1.0 - share) * weight / np.where(others > 0, others, 1.0)
    out[np.arange(T), habit] = share[:, 0]
    return out


def real_shaped(*, n_states: int = 700, n_actions: int = 25, horizon: int = 20, n_levels: int = 20,
                n_next: int = 10, n_admissible: int = 4, heterogeneity: float = 0.0, habit_rank: float = 1.0,
                habit_share: float = 0.4, quality_spread: float = 0.3, logging_tilt: float = 0.3,
                rng: RngLike = 0, name: str | None = None) -> SparseTabularMDP:
    """A real-shaped offline task (module docstring for the knobs), seeded by ``rng``.

    States: ``n_states − 2`` patient states in ``n_levels`` severity levels (the public groups, in
    index order), then absorbing success and failure (groups ``n_levels`` and ``n_levels + 1``).
    From level ℓ an action of quality q leads to success, the better level, the same level, the
    worse level or failure with :func:`~privrl.envs.sparse_tabular`'s logits; within a level the
    next state is one of the pair's listed states (Dirichlet(1) weights), ``n_next`` listed next
    states per pair in all. ``n_admissible`` actions per level are admissible (quality centred, std
    ``quality_spread``); the logging policy uses exactly those. Initial states uniform over the
    patient states.
    """
    S = check_scalar(n_states, "n_states", owner=_OWNER, kind=int, low=8)
    A = check_scalar(n_actions, "n_actions", owner=_OWNER, kind=int, low=2)
    H = check_scalar(horizon, "horizon", owner=_OWNER, kind=int, low=1)
    L = check_scalar(n_levels, "n_levels", owner=_OWNER, kind=int, low=2)
    k_next = check_scalar(n_next, "n_next", owner=_OWNER, kind=int, low=5)
    k_adm = check_scalar(n_admissible, "n_admissible", owner=_OWNER, kind=int, low=1, high=A)
    eta = check_scalar(heterogeneity, "heterogeneity", owner=_OWNER, low=0.0, high=1.0)
    rank = check_scalar(habit_rank, "habit_rank", owner=_OWNER, low=0.0, high=1.0)
    share = check_scalar(habit_share, "habit_share", owner=_OWNER, low=0.0, high=1.0, closed="neither")
    spread = check_scalar(quality_spread, "quality_spread", owner=_OWNER, low=0.0)
    tilt = check_scalar(logging_tilt, "logging_tilt", owner=_OWNER, low=0.0)
    T = S - 2
    if T < 3 * L:
        raise param_error("n_states", _OWNER, f"an int >= {3 * L + 2} (at least 3 patient states per level with "
                          f"n_levels={L})", S)
    gen = as_generator(rng)
    level = np.repeat(np.arange(L), np.diff(np.linspace(0, T, L + 1).round().astype(int)))
    members = [np.flatnonzero(level == lv) for lv in range(L)]
    widths = _widths(k_next, min(m.size for m in members))
    admissible_level = np.zeros((L, A), dtype=bool)
    for lv in range(L):
        admissible_level[lv, gen.choice(A, k_adm, replace=False)] = True
    q = _quality(gen, level, admissible_level, spread, eta)
    nxt, prob = _kernel(gen, q, level, widths)

    success, failure = T, T + 1
    entry = np.zeros(S)
    entry[success] = 1.0
    terminal = np.zeros(S, dtype=bool)
    terminal[[success, failure]] = True
    admissible = np.zeros((S, A), dtype=bool)
    admissible[:T] = admissible_level[level]
    admissible[T:, 0] = True
    logging = np.zeros((S, A))
    logging[:T] = _logging(q, admissible[:T], rank, share, tilt)
    logging[T:, 0] = 1.0
    if name is None:
        label = f", rng={int(rng)}" if isinstance(rng, (int, np.integer)) else ""
        name = (f"real_shaped(S={S}, A={A}, H={H}, n_next={k_next}, n_admissible={k_adm}, "
                f"heterogeneity={eta:g}, habit_rank={rank:g}{label})")
    return SparseTabularMDP(nxt, prob, horizon=H, entry_reward=entry, terminal_states=terminal,
                            groups=np.concatenate([level, [L, L + 1]]), logging_policy=logging,
                            admissible=admissible, name=name)


def _kernel(gen: np.random.Generator, q: np.ndarray, level: np.ndarray,
            widths: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(next_states, probs)`` ``(S, A, 2 + Σ widths)``: :func:`~privrl.envs.sparse_tabular`'s outcome
    probabilities and sparse kernel, ``width`` distinct states of the target level drawn per pair."""
    return _sparse_kernel(gen, level, _outcome_probabilities(level, q), widths)


def occupancy(model: SparseTabularMDP, policy: object) -> np.ndarray:
    """``d (H, S)``: the probability that an episode of ``policy`` is in state s at step h and has not
    ended (terminal states carry no mass: an episode ends on entering one)."""
    pi = model.policy_probabilities(policy)
    S, H = model.n_states, model.horizon
    live = ~model.terminal_states
    d = np.zeros((H, S))
    d[0] = model.initial
    for h in range(H - 1):
        flow = d[h][:, None, None] * pi[h][:, :, None] * model.probs            # (S, A, k)
        d[h + 1] = np.bincount(model.next_states.ravel(), weights=flow.ravel(), minlength=S) * live
    return d


def _agreement(model: SparseTabularMDP, visits: np.ndarray) -> float:
    """Visit-weighted share of (h, s) whose optimal action is its group's most visited optimal action."""
    best = model.optimal_policy()                                            # (H, S)
    groups, A = model.groups, model.n_actions
    assert groups is not None
    H, S = best.shape
    G = int(groups.max()) + 1
    votes = np.zeros((H, G, A))
    np.add.at(votes, (np.arange(H)[:, None], groups[None, :], best), visits)
    mode = votes.argmax(axis=2)                                              # (H, G)
    agree = best == mode[:, groups]
    return float((visits * agree).sum() / visits.sum())


def _density(model: SparseTabularMDP) -> float:
    """Mean number of distinct next states with positive probability over the non-terminal pairs."""
    live = ~model.terminal_states
    nxt = np.where(model.probs > 0, model.next_states, -1)[live].reshape(-1, model.max_next_states)
    ordered = np.sort(nxt, axis=1)
    distinct = (ordered >= 0) & np.concatenate([np.ones((ordered.shape[0], 1), bool),
                                                ordered[:, 1:] != ordered[:, :-1]], axis=1)
    return float(distinct.sum(axis=1).mean())


def measure_knobs(model: SparseTabularMDP) -> dict[str, float]:
    """The knobs of a task with public ``groups`` and a ``logging_policy``, measured exactly on the model.

    ``agreement`` (visit-weighted under the logging policy, :func:`occupancy`), ``density`` (mean
    distinct next states of a non-terminal pair), ``spread`` (visit-weighted mean number of actions
    the logging policy uses in a patient state), ``clone_quality`` ``(V(clone) − V(logging)) / (V* −
    V(logging))`` for the greedy clone (each state's most-logged action), and the three values."""
    if model.groups is None or model.logging_policy is None:
        raise param_error("model", "measure_knobs", "a SparseTabularMDP with groups and a logging_policy",
                          repr(model))
    logging = model.logging_policy
    visits = occupancy(model, logging)
    used = (logging > 0).sum(axis=1).astype(float)
    state_visits = visits.sum(axis=0) * ~model.terminal_states
    clone = logging.argmax(axis=1)
    v_log, v_opt, v_clone = model.value(logging), model.optimal_value(), model.value(clone)
    return {"agreement": _agreement(model, visits), "density": _density(model),
            "spread": float(state_visits @ used / state_visits.sum()),
            "clone_quality": (v_clone - v_log) / (v_opt - v_log), "logging_value": v_log,
            "optimal_value": v_opt, "clone_value": v_clone}


# ---------------------------------------------------------------------- the grid
#: what each label of an instance promises about its measured knob (:func:`measure_knobs`): (low, high)
BANDS: dict[str, dict[str, tuple[float, float]]] = {
    "agreement": {"high": (0.8, 1.0), "mid": (0.4, 0.7), "low": (0.15, 0.35)},
    "density": {"sparse": (5.0, 10.0), "mid": (30.0, 50.0), "dense": (70.0, 90.0)},
    "spread": {"narrow": (3.5, 4.5), "mid": (7.5, 8.5), "wide": (12.5, 13.5)},
    "clone_quality": {"good": (0.8, 1.0), "mid": (0.35, 0.75), "weak": (0.05, 0.3)},
}


@dataclass(frozen=True)
class Instance:
    """A named, seeded, public task of the grid: its generator arguments and the labels its name
    states (one per knob of :data:`BANDS`)."""

    name: str
    labels: Mapping[str, str]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    def build(self) -> SparseTabularMDP:
        return real_shaped(**self.kwargs, rng=self.seed, name=self.name)


def _instance(agreement: str, density: str, spread: str, clone: str, **kwargs: object) -> Instance:
    name = f"{agreement}-agreement/{density}/{spread}/{clone}-clone"
    return Instance(name, {"agreement": agreement, "density": density, "spread": spread, "clone_quality": clone},
                    kwargs)


_HABIT = {"good": {"habit_rank": 1.0}, "weak": {"habit_rank": 0.6}, "mid": {"habit_rank": 0.75}}

#: The grid (every instance S = 700, A = 25, H = 20, 20 public levels, seed 0): from the clinic shape
#: (groups describe the dynamics, sparse, 4 actions, a near-optimal clone) to the real task's shape
#: (``low-agreement/dense/wide/weak-clone``), varying one or two knobs at a time in between.
INSTANCES: dict[str, Instance] = {inst.name: inst for inst in (
    _instance("high", "sparse", "narrow", "good", heterogeneity=0.0, n_next=10, n_admissible=4, **_HABIT["good"]),
    _instance("low", "sparse", "narrow", "good", heterogeneity=1.0, n_next=10, n_admissible=4, **_HABIT["good"]),
    _instance("high", "dense", "narrow", "good", heterogeneity=0.0, n_next=85, n_admissible=4, **_HABIT["good"]),
    _instance("high", "sparse", "wide", "weak", heterogeneity=0.0, n_next=10, n_admissible=13, habit_share=0.15,
              **_HABIT["weak"]),
    _instance("mid", "mid", "mid", "mid", heterogeneity=0.25, n_next=40, n_admissible=8, habit_share=0.25,
              **_HABIT["mid"]),
    _instance("low", "sparse", "wide", "good", heterogeneity=0.9, n_next=10, n_admissible=13, habit_share=0.15,
              **_HABIT["good"]),
    _instance("low", "dense", "wide", "weak", heterogeneity=0.9, n_next=85, n_admissible=13, habit_share=0.15,
              **_HABIT["weak"]),
)}
#: the instance shaped like the held-out real task
REAL_LIKE = "low-agreement/dense/wide/weak-clone"


def real_shaped_instance(name: str) -> SparseTabularMDP:
    """The grid instance ``name`` (a key of :data:`INSTANCES`), built from its seed."""
    if name not in INSTANCES:
        raise param_error("name", "real_shaped_instance", f"one of {sorted(INSTANCES)}", name)
    return INSTANCES[name].build()
