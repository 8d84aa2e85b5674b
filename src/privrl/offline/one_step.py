"""Private one-step policy improvement on the logging policy (DP-OneStep).

Offline RL by one step of policy improvement: estimate the logging policy's action values Q^μ from
the logged data and play, in each state, the action whose value beats the logged average with
confidence, and the logging policy elsewhere — the "one-step" method of Brandfonbrener et al. (2021,
*Offline RL without off-policy evaluation*), made safe in the manner of SPIBB (Laroche et al. 2019:
change the baseline only where the evidence supports it). Stationary, tabular, pooled over steps.

The statistics are *value-relevant sums*, not transition rows: a transition row of a dense task
holds ~80 next-state counts, each of which DP-APVI must privatise; here a pair (s, a) costs two
numbers whatever its number of next states.

**Statistics** (per trajectory, first visits only: one term per distinct state, per distinct pair).
Returns and targets are normalised to u = x / F_max ∈ [0, 1] (F_max: the public return bound,
default R_max · L for episodes of at most L steps).

1. State values (share ``value_share`` of the budget): for every state s, first-visit
   Monte Carlo sums ``(Σ u(G), Σ 1 − u(G))`` → V̂(s) = F_max · Σu / (Σu + Σ(1 − u)) (Balle et al.
   2016, eq. 4's first-visit returns).
2. Action values (the rest): for every pair (s, a), at its first visit, the one-step target
   y = r + V̂(s') (0 after a terminal transition), clipped to [0, F_max] (a per-transition map fixed
   before the data are read, V̂ being released) → sums ``(Σ u(y), Σ 1 − u(y))`` → Q̂(s, a) and
   the released first-visit count N̂(s, a) = their total.
3. One scalar (share ``variance_share``): Σ u(y)² over the first visits of step 2, for the pooled
   within-pair variance v̂ = (Σu² − Σ_{s,a} Ŷ²/N̂) / Σ N̂ (a conservative estimate: it counts the
   pairs that fall below the support threshold as variance).

**Sensitivity** (replace one trajectory; L the public bound on episode length). A trajectory
contributes, to the vector of step 1 or of step 2, at most L nonzero 2-vectors (u, 1 − u) of norm
≤ 1, each in a distinct cell; replacing it changes the vector by at most √(2L) in ℓ2 (disjoint cells
give 2L, a shared cell at most 2(u − u')² ≤ 2). The scalar of step 3 changes by at most L. Each
stream is a Gaussian release with μ_i = √(share_i) · μ, where μ is the budget's Gaussian
composition (:func:`~privrl.privacy.calibration.gaussian_mu`): Σ μ_i² = μ², so the three spend
exactly the budget; σ_i = Δ_i / μ_i. Every draw goes through the release seam (``secure=True``:
OpenDP); the ledger holds one event per stream.

**Policy** (post-processing of the releases). In state s, the supported actions are those with
N̂(s, a) ≥ ``support`` · σ₂; the candidate a* maximises the lower bound
Q̂(s, a) − c · se(s, a), se² = v̂ / N̂ + σ₂² (Q̂² + (1 − Q̂)²) / N̂² (sampling, then noise, in u
units), ``c`` = ``confidence``; the state switches to a* when that bound exceeds the logged average
b̂(s) = Σ_a Ŷ(s, a) / Σ_a N̂(s, a). Elsewhere the policy is the baseline: the public
``behaviour_policy`` when given (no privacy cost), else the logging policy estimated from the
released counts (supported cells, normalised; all cells when none is supported).
"""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import param_error
from privrl.base import PrivateEstimator, param
from privrl.data.bounds import (
    DatasetArrays,
    checked_rewards,
    dataset_arrays,
    return_bound,
    reward_bound,
)
from privrl.errors import InvalidDataError, UtilityWarning
from privrl.least_squares.statistics import first_visit_statistics
from privrl.offline.baseline import behaviour_probs, behaviour_steps
from privrl.offline.estimators import BEHAVIOUR_POLICY, F_MAX, R_MAX
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.calibration import gaussian_mu
from privrl.privacy.release import Releaser

__all__ = ["DPOneStep"]

_OWNER = "DPOneStep"


def _budget_check(budget: object) -> None:
    if isinstance(budget, PrivacyBudget) and budget.is_private and budget.rho is None and not budget.delta:
        raise param_error("budget", _OWNER, "an (epsilon, delta > 0) or a rho budget (the releases are Gaussian)",
                          budget)


def stream_stds(budget: PrivacyBudget, length: int, value_share: float, variance_share: float) -> np.ndarray:
    """The public noise stds (σ₁, σ₂, σ₃) of the state values, the action values and the variance
    scalar (module docstring): σ_i = Δ_i / (√share_i · μ) with Δ = (√(2L), √(2L), L); zeros for an
    infinite budget."""
    if not budget.is_private:
        return np.zeros(3)
    shares = np.array([value_share, 1.0 - value_share - variance_share, variance_share])
    if shares[1] <= 0:
        raise param_error("value_share", _OWNER, "value_share + variance_share < 1", value_share + variance_share)
    sens = np.array([math.sqrt(2.0 * length), math.sqrt(2.0 * length), float(length)])
    return np.asarray(sens / (np.sqrt(shares) * gaussian_mu(budget)))


def _pair_sums(labels: np.ndarray, x: np.ndarray, starts: np.ndarray, n_labels: int,
               max_visits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First-visit sums of u, of 1 − u and of u² per label (x ∈ [0, 1]; the shared first-visit
    kernel with γ = 0 reads the value at the first visit itself)."""
    sums = first_visit_statistics(labels, x, starts, n_labels, 0.0, return_bound=1.0, max_visits=max_visits)
    sq = first_visit_statistics(labels, x * x, starts, n_labels, 0.0, return_bound=1.0, max_visits=max_visits)
    assert sums.return_sums is not None and sq.return_sums is not None
    return sums.return_sums, sums.counts - sums.return_sums, sq.return_sums


class DPOneStep(PrivateEstimator):
    """Private one-step policy improvement on the logging policy (module docstring for the
    derivation). ``fit(dataset)`` reads a tabular :class:`~privrl.data.TrajectoryDataset` with logged
    rewards in [0, R_max]; an infinite budget gives the non-private one-step method exactly.

    Fitted: ``policy_probs_`` (H, S, A) (the baseline's rows; a switched state's action at every
    step), ``policy_`` (H, S) its most likely action, ``switched_`` (S,) the states that left the
    baseline, ``q_values_`` (S, A) and ``values_`` (S,) in return units, ``counts_`` (S, A) the
    released first-visit counts, ``variance_`` v̂, ``confirmed_`` (S,) the switches that survive
    with the state values' error counted too, ``baseline_error_`` the estimated logging policy's
    visit-weighted total-variation error (0 with a public one), ``stds_`` the public noise stds of the
    three streams, ``privacy_ledger_``."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    calibration: str = param("noise calibration: 'tight' (the only one: no printed constants to reproduce)",
                             default="tight", kind="option", options=("tight",), cli=False)
    r_max: float = R_MAX
    F_max: float | None = F_MAX
    value_share: float = param("share of the budget for the state values V̂ (step 1)", default=0.2, low=0.0,
                               high=1.0, closed="neither")
    variance_share: float = param("share of the budget for the pooled variance scalar (step 3)", default=0.02,
                                  low=0.0, high=1.0, closed="neither")
    confidence: float = param("c: a state switches when Q̂ − c·se beats the logged average (2: about one-sided "
                              "97.7 % per comparison)", default=2.0, low=0.0)
    support: float = param("an action is supported when its released count is at least this many noise stds "
                           "of the count, and at least the family-wise level over all S·A cells (support_level)",
                           default=3.0, low=0.0)
    behaviour_policy: ArrayLike | None = param(
        like=BEHAVIOUR_POLICY, default=None,
        help="a public logging policy, (n_states, n_actions) or (horizon, n_states, n_actions) probabilities, "
             "known without the data: the baseline where no action clears its bound (no privacy cost); None = "
             "estimated from the released counts")

    def fit(self, dataset: object, *, rng: RngLike = None) -> DPOneStep:
        """Release the three streams through one Releaser and build the policy."""
        p = self._validated()
        _budget_check(p["budget"])
        rng = self._fit_rng(rng)
        arrays = dataset_arrays(dataset, _OWNER)
        S, A = _sizes(dataset)
        length = arrays["max_length"]
        if length is None:
            raise InvalidDataError(f"{_OWNER} needs a public bound on the episode length (the dataset's horizon).")
        r_max = reward_bound(p["r_max"], arrays["reward_bounds"], _OWNER)
        f_max = return_bound(r_max, 1.0, p["F_max"], length, _OWNER)
        rewards = checked_rewards(arrays["rewards"], r_max, False, _OWNER)
        stds = stream_stds(p["budget"], length, p["value_share"], p["variance_share"])
        baseline = _public_baseline(p["behaviour_policy"], length, S, A)
        rel = self._privacy(None if rng is None else child_rngs(rng, "privacy")["privacy"],
                            n_units=arrays["episode_starts"].size - 1)
        values, value_se = _state_values(arrays, rewards, f_max, S, length, stds[0], rel)
        y = _targets(arrays, rewards, values, f_max)
        succ, fail, sq = _pair_sums(arrays["observations"] * A + _actions(dataset, A),
                                    y, arrays["episode_starts"], S * A, length)
        Y, F = _release_pair(succ, fail, length, stds[1], rel)
        Y, F = Y.reshape(S, A), F.reshape(S, A)
        N = Y + F
        supported = (N > 0) & (N >= support_level(p["support"], S * A) * math.sqrt(2.0) * stds[1])
        # the cells are chosen from released counts (adaptive composition): Σu² over their first visits
        sq_kept = float(np.sum(sq.reshape(S, A)[supported]))
        sq_released = float(rel.gaussian(np.array([sq_kept]), sensitivity=float(length), std=stds[2])[0])
        self._store(Y, N, supported, sq_released, (values, value_se), baseline, stds, f_max, length)
        return self

    @property
    def guarantee(self) -> str:  # type: ignore[override]
        """``"rho-zCDP"`` for a ρ budget, ``"(epsilon, delta)-DP"`` otherwise."""
        budget = getattr(self, "budget", None)
        return "rho-zCDP" if isinstance(budget, PrivacyBudget) and budget.rho is not None else "(epsilon, delta)-DP"

    def _store(self, Y: np.ndarray, N: np.ndarray, supported: np.ndarray, sq: float,
               state_values: tuple[np.ndarray, float], baseline: np.ndarray | None, stds: np.ndarray, f_max: float,
               length: int) -> None:
        c = float(self.confidence)
        values, value_se = state_values
        Nv = np.maximum(N, 1.0)
        Q = np.clip(Y / Nv, 0.0, 1.0)
        variance = _pooled_variance(Y, N, supported, sq)
        se = np.sqrt(variance / Nv + stds[1] ** 2 * (Q ** 2 + (1 - Q) ** 2) / Nv ** 2)
        lcb = np.where(supported, Q - c * se, -np.inf)
        best = lcb.argmax(axis=1)
        logged = Y.sum(axis=1) / np.maximum(N.sum(axis=1), 1.0)
        switched = lcb[np.arange(best.size), best] > logged
        base = (np.broadcast_to(_estimated_baseline(N, supported), (length, *N.shape)) if baseline is None
                else baseline)
        probs = np.array(base, dtype=float)
        probs[:, switched] = 0.0
        probs[:, switched, best[switched]] = 1.0
        self.policy_probs_, self.policy_ = probs, probs.argmax(axis=-1)
        self.switched_, self.logging_policy_ = switched, base
        self.q_values_, self.values_, self.counts_ = Q * f_max, values * f_max, N
        self.variance_, self.stds_ = variance * f_max ** 2, stds
        # the switches that survive once the error of the released state values is counted too (every
        # target reads V̂; its visit-weighted standard error, not averaged over next states)
        rows = np.arange(best.size)
        se_total = np.sqrt(se[rows, best] ** 2 + value_se ** 2)
        self.confirmed_ = switched & (Q[rows, best] - c * se_total > logged)
        self.baseline_error_ = 0.0 if baseline is not None else _baseline_error(N, stds[1])
        _warn(self, baseline is not None, stds[1], c, value_se)


#: the estimated logging policy's visit-weighted total-variation error above which the fit warns
BASELINE_ERROR = 0.05


def _baseline_error(N: np.ndarray, std: float) -> float:
    """The expected total-variation error of the logging policy estimated from released counts,
    visit-weighted: a state's row of A counts with noise std σ and total N_s is off by about
    ½·A·σ·√(2/π)/N_s (capped at 1)."""
    visits = np.maximum(N, 0.0).sum(axis=1)
    if visits.sum() <= 0:
        return 1.0
    err = np.minimum(1.0, 0.5 * N.shape[1] * std * math.sqrt(2.0 / math.pi) / np.maximum(visits, 1.0))
    return float(np.sum(visits * err) / visits.sum())


def _warn(est: DPOneStep, public: bool, std: float, c: float, value_se: float) -> None:
    """UtilityWarnings: the estimated baseline is noisy (it may lose against the logging policy); no
    state switched (the output is the baseline); or no switch survives the error of the state values."""
    if not public and est.baseline_error_ > BASELINE_ERROR:
        warnings.warn(f"{_OWNER}: the logging policy estimated from the released counts is off by about "
                      f"{est.baseline_error_:.2f} in total variation per visit (noise std {std:.3g} per "
                      f"count; warned above {BASELINE_ERROR:g}), so wherever the policy follows it, it may play worse "
                      "than the logging policy. Give the public behaviour_policy if there is one; more trajectories "
                      "or a larger epsilon reduce it.", UtilityWarning, stacklevel=4)
    if not np.any(est.switched_):
        warnings.warn(f"{_OWNER}: no action's lower confidence bound beat its state's logged average, so the policy "
                      "is the logging policy ("
                      f"{'the public behaviour_policy' if public else 'estimated from the released counts'}"
                      "): no improvement. More trajectories or a larger epsilon narrow the bounds (noise std "
                      f"{std:.3g} per released count; confidence c = {c:g}).", UtilityWarning, stacklevel=4)
    elif not np.any(est.confirmed_):
        warnings.warn(f"{_OWNER}: {int(est.switched_.sum())} states left the logging policy at confidence c = {c:g}, "
                      f"but none does once the error of the released state values (standard error {value_se:.3g}) is "
                      "counted: the changes may be noise, and the policy may be worse than the logging policy. More "
                      f"trajectories or a larger epsilon narrow the bounds (noise std {std:.3g} per released count).",
                      UtilityWarning, stacklevel=4)


def _actions(dataset: object, A: int) -> np.ndarray:
    actions = np.asarray(getattr(dataset, "actions", None))
    if actions.dtype.kind not in "iu" or (actions.size and (actions.min() < 0 or actions.max() >= A)):
        raise InvalidDataError(f"{_OWNER} needs integer actions in 0..{A - 1}, one per transition.")
    return actions.astype(np.int64)


def _sizes(dataset: object) -> tuple[int, int]:
    S, A = getattr(dataset, "n_states", None), getattr(dataset, "n_actions", None)
    if S is None or A is None:
        raise InvalidDataError(f"{_OWNER} needs a dataset that declares n_states and n_actions (public sizes).")
    return int(S), int(A)


def _public_baseline(policy: ArrayLike | None, length: int, S: int, A: int) -> np.ndarray | None:
    """The public logging policy as (L, S, A) probabilities, or None."""
    if policy is None:
        return None
    return behaviour_steps(behaviour_probs(np.asarray(policy, dtype=float), S, A, _OWNER), length, _OWNER)


def support_level(floor: float, cells: int) -> float:
    """z: a released count N̂ = Ŷ + F̂ (noise std √2·σ₂) is supported when N̂ ≥ z·√2·σ₂, with
    z = max(``support``, Φ⁻¹(1 − 0.05/cells)): over all S·A cells, a cell that nobody visited
    passes with probability at most 5 % (a pure-noise cell would otherwise read as a random value)."""
    return max(float(floor), NormalDist().inv_cdf(1.0 - 0.05 / max(cells, 1)))


def _release_pair(succ: np.ndarray, fail: np.ndarray, length: int, std: float,
                  rel: Releaser) -> tuple[np.ndarray, np.ndarray]:
    """One Gaussian release of the vector (Σu, Σ(1 − u)) over the cells: ℓ2-sensitivity √(2L)."""
    out = rel.gaussian(np.concatenate([succ, fail]), sensitivity=math.sqrt(2.0 * length), std=std)
    return out[:succ.size], out[succ.size:]


def _state_values(arrays: DatasetArrays, rewards: np.ndarray, f_max: float, S: int, length: int, std: float,
                  rel: Releaser) -> tuple[np.ndarray, float]:
    """Step 1: released first-visit Monte Carlo values V̂(s)/F_max ∈ [0, 1] (states below the
    support of 3 noise stds take the pooled mean) and their visit-weighted standard error (sampling,
    V(1 − V)/T, plus noise, σ²(V² + (1 − V)²)/T², for a state of released total T)."""
    starts = arrays["episode_starts"]
    stats = first_visit_statistics(arrays["observations"], rewards / f_max, starts, S, 1.0, return_bound=1.0,
                                   max_visits=length)
    assert stats.return_sums is not None
    succ, fail = _release_pair(stats.return_sums, stats.counts - stats.return_sums, length, std, rel)
    total = succ + fail
    pooled = float(np.clip(succ.sum() / max(total.sum(), 1.0), 0.0, 1.0))
    own = np.clip(succ / np.maximum(total, 1.0), 0.0, 1.0)
    kept = total >= 3.0 * std
    values = np.where(kept, own, pooled)
    T = np.maximum(total, 1.0)
    se = np.where(kept, np.sqrt(values * (1 - values) / T + std ** 2 * (values ** 2 + (1 - values) ** 2) / T ** 2),
                  0.5)
    w = np.maximum(total, 0.0)
    return values, float(np.sum(w * se) / w.sum()) if w.sum() > 0 else 0.5


def _targets(arrays: DatasetArrays, rewards: np.ndarray, values: np.ndarray, f_max: float) -> np.ndarray:
    """Step 2's one-step targets u(y) = clip((r + V̂(s')) / F_max, 0, 1), V̂ = 0 after a terminal."""
    nxt = arrays["next_observations"]
    if nxt is None:
        raise InvalidDataError(f"{_OWNER} needs next_observations.")
    term = arrays["terminals"]
    after = values[np.asarray(nxt, dtype=np.int64)]
    if term is not None:
        after = np.where(term, 0.0, after)
    return np.clip(rewards / f_max + after, 0.0, 1.0)


def _pooled_variance(Y: np.ndarray, N: np.ndarray, supported: np.ndarray, sq: float) -> float:
    """v̂ = (Σu² − Σ Ŷ²/N̂) / Σ N̂ over the supported cells, in [1e-4, 1/4] (u units)."""
    n = float(N[supported].sum())
    if not np.any(supported) or n <= 0:
        return 0.25
    between = float(np.sum(Y[supported] ** 2 / N[supported]))
    return float(np.clip((sq - between) / n, 1e-4, 0.25))


def _estimated_baseline(N: np.ndarray, supported: np.ndarray) -> np.ndarray:
    """The logging policy from the released counts: supported cells normalised per state; a state
    without a supported cell uses its positive counts; a state without any, uniform."""
    kept = np.where(supported, np.maximum(N, 0.0), 0.0)
    none = kept.sum(axis=1) <= 0
    kept[none] = np.maximum(N[none], 0.0)
    total = kept.sum(axis=1, keepdims=True)
    return np.where(total > 0, kept / np.maximum(total, 1e-300), 1.0 / N.shape[1])
