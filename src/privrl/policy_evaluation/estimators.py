"""Least-squares policy evaluation, non-private and differentially private
(Balle, Gomrokchi & Precup, "Differentially Private Policy Evaluation", ICML 2016).

* :class:`LSW` — weighted least squares on first-visit Monte Carlo returns, θ^w_X (eq. 8).
* :class:`LSL` — ridge regression weighted by visit counts, θ^λ_X (eq. 11).
* :class:`DPLSW` — Algorithm 1: θ^w_X + N(0, σ_X² I_d) with a smoothed-sensitivity σ_X.
* :class:`DPLSL` — Algorithm 2: θ^λ_X + N(0, σ_X² I_d) with a smoothed-sensitivity σ_X.

Privacy unit: one whole trajectory, replaced (same number m of trajectories; m is public). The
private estimators draw their one noise vector through the fit's ``Releaser``
(``rel.with_event(θ, std=σ_X, event=ApproxDpEvent(ε spent, δ))``); σ_X depends on the data and is
never stored. Parameters are declared once (annotated fields); ``calibration`` selects (α, β)
(:mod:`privrl.least_squares.calibration`), ``smoothing`` the printed constant set,
``constants`` the utility presets (smoothing rate β under the tight calibration, DP-LSL's λ).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import check_array, param_error
from privrl.base import BUDGET, CONSTANTS, Estimator, PrivateEstimator, check_is_fitted, param
from privrl.data.bounds import (
    checked_rewards,
    dataset_arrays,
    distinct_states_bound,
    return_bound,
    reward_bound,
    terminal_states,
)
from privrl.errors import InvalidDataError
from privrl.least_squares.diagnostics import NOISE_DOMINATED_RMS
from privrl.least_squares.mechanism import (
    DPLSLMechanism,
    DPLSWMechanism,
    _SmoothedRelease,
    check_features,
    lambda_min,
    release_utility,
    warn_if_overspent,
    warn_utility,
)
from privrl.least_squares.smooth_sensitivity import SMOOTHINGS
from privrl.least_squares.statistics import VisitStatistics, first_visit_statistics
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

if TYPE_CHECKING:
    from typing_extensions import Self  # annotations only (typing.Self: Python 3.11)

__all__ = ["LSW", "LSL", "DPLSW", "DPLSL", "sqrt_lambda_schedule", "lambda_schedule",
           "PRACTICAL_LAMBDA_COEF"]

#: DP-LSL's practical λ preset, λ = λ_min + c·‖ρ‖∞·α^{2/5}·m^{3/5} (the bias–noise balance of the
#: docs, "Practical constants"); c chosen once on held-out chains.
PRACTICAL_LAMBDA_COEF = 5.0


def sqrt_lambda_schedule(m: int, features: np.ndarray, relevance: np.ndarray, c: float) -> float:
    """λ = λ_min + c √m — the schedule the paper found best for DP-LSL (§6). Depends on m only."""
    return lambda_min(features, relevance) + float(c) * math.sqrt(m)


def lambda_schedule(m: int, features: np.ndarray, relevance: np.ndarray, *, constants: str = "theory",
                    alpha: float = 0.0, coef: float | None = None) -> float:
    """DP-LSL's λ when none is given (public: m, Φ, ρ and the public multiplier α only).

    ``"theory"``: λ_min + √m (the paper's §6 schedule λ ∝ √m, unit coefficient).
    ``"practical"``: λ_min + c‖ρ‖∞ α^{2/5} m^{3/5}, c = :data:`PRACTICAL_LAMBDA_COEF` unless ``coef``
    is given (the tuning script's grid) (minimises
    bias² ∝ (λ/m)² plus noise² ∝ α² m / λ³ for large m; ‖ρ‖∞ keeps the (ρ, λ) scale invariance)."""
    if constants == "theory" or alpha <= 0:
        return sqrt_lambda_schedule(m, features, relevance, 1.0)
    c = PRACTICAL_LAMBDA_COEF if coef is None else float(coef)
    return lambda_min(features, relevance) + c * float(np.max(relevance)) * alpha ** 0.4 * m ** 0.6


# =========================================================================== declared parameters
def _features(value: object, name: str, owner: str) -> np.ndarray:
    return check_features(value, name, owner)


def _nonneg_vector(value: object, name: str, owner: str) -> np.ndarray:
    return check_array(value, name, owner=owner, ndim=1, low=0.0)


def _unit_weights(value: object, name: str, owner: str) -> np.ndarray:
    return check_array(value, name, owner=owner, ndim=1, low=0.0, high=1.0)


def _deprecated_relevance(value: object, name: str, owner: str) -> np.ndarray:
    warnings.warn(f"The 'relevance' parameter of {owner} is deprecated: it is now called 'weights' (the same "
                  "name as in LSW); 'relevance' is mapped to it.", DeprecationWarning, stacklevel=4)
    return _unit_weights(value, name, owner)




def _approx_budget(value: PrivacyBudget, name: str, owner: str) -> PrivacyBudget:
    if value.is_zcdp:
        raise param_error(name, owner, "a PrivacyBudget(epsilon=..., delta=...) (Lemma 1 is an (epsilon, "
                          "delta) guarantee)", value)
    if value.is_private and not 0.0 < float(value.delta or 0.0) < 1.0:
        raise param_error(name, owner, "a PrivacyBudget with delta in (0.0, 1.0) (Lemma 1 needs delta > 0)", value)
    return value


#: the parameters the four estimators share (declared once; required ones reused with ``like=``)
GAMMA = param("discount factor γ (1 for episodic data whose returns F_max bounds)", low=0.0, high=1.0)
FEATURES = param("feature matrix Φ (n_states, d); None = one-hot (the dataset's declared n_states)",
                 default=None, kind="array", none_ok=True, check=_features, cli=False, bad=(np.zeros((0, 2)),))
R_MAX = param("public reward bound R_max (rewards in [0, R_max]); None = the dataset's declared upper reward "
              "bound", default=None, low=0.0, closed="neither", none_ok=True)
F_MAX = param("public bound on first-visit returns; None = R_max·(1 − γ^L)/(1 − γ) for episodes of at most L "
              "steps (the dataset's horizon or max_episode_length), else R_max/(1 − γ)", default=None, low=0.0,
              closed="neither", none_ok=True)
CLIP_RETURNS = param("clip rewards to [0, R_max] and returns to [0, F_max] instead of raising (a "
                     "per-trajectory map: the guarantee is kept)", default=False, kind="bool")
RECORD_TERMINAL = param("count the terminal state an episode ends in as visited with return 0 (the "
                        "absorbing state of the §6 chain)", default=True, kind="bool")
WEIGHTS = param("public state weights w ≥ 0 (n_states,) of the least-squares fit, fixed without looking at the "
                "data; None = uniform 1/n_states; Γ^1/2 Φ must have full column rank", default=None,
                kind="array", none_ok=True, check=_nonneg_vector, cli=False, bad=(-np.ones(3),))
WEIGHTS_LSL = param("public state weights ρ in [0, 1]^n_states of the ridge fit (the paper's relevance), fixed "
                    "without looking at the data; None = uniform 1/n_states", default=None, kind="array",
                    none_ok=True, check=_unit_weights, cli=False, bad=(np.full(3, 2.0),))
RELEVANCE = param("deprecated name of 'weights'", default=None, kind="array", none_ok=True,
                  check=_deprecated_relevance, cli=False, bad=(np.full(3, 2.0),))

# =========================================================================== shared fit steps
class _PolicyEvaluation(Estimator):
    """Shared steps: first-visit statistics of a dataset under public bounds, fitted attributes."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE

    def _prepare(self, dataset: object, p: dict[str, Any]) -> tuple[VisitStatistics, np.ndarray, float, int]:
        """(first-visit statistics (private), Φ, F_max, a public bound on the distinct states one
        trajectory visits)."""
        owner = type(self).__name__
        arrays = dataset_arrays(dataset, owner)
        obs = arrays["observations"]
        if p["features"] is None:
            # the number of states must be public: never inferred from the visited states
            if arrays["n_states"] is None:
                raise param_error("features", owner, "a feature matrix when the dataset declares no "
                                  "n_states (the state count must be public, not inferred from the data)", None)
            phi = np.eye(int(arrays["n_states"]))
        else:
            phi = p["features"]
        n_states = phi.shape[0]
        if obs.size and (obs.min() < 0 or obs.max() >= n_states):
            raise InvalidDataError(
                f"The dataset visits a state outside the feature matrix of {owner} (states 0..{n_states - 1}): "
                "give features with one row per state of the environment.")
        r_max = reward_bound(p["r_max"], arrays["reward_bounds"], owner)
        f_max = return_bound(r_max, p["gamma"], p["F_max"], arrays["max_length"], owner)
        rewards = checked_rewards(arrays["rewards"], r_max, p["clip_returns"], owner)
        terminals = terminal_states(arrays, n_states, owner) if p["record_terminal"] else None
        stats = first_visit_statistics(obs, rewards, arrays["episode_starts"], n_states, p["gamma"],
                                       terminal_states=terminals, return_bound=f_max,
                                       clip_returns=p["clip_returns"])
        visits = distinct_states_bound(arrays["max_length"], n_states, p["record_terminal"])
        return stats, phi, f_max, visits

    def _from_statistics(self, stats: object, p: dict[str, Any]) -> tuple[VisitStatistics, np.ndarray, float]:
        """The public Φ and F_max for first-visit statistics given directly, with the checks the
        statistics allow (their per-trajectory returns were bounded when they were computed)."""
        owner = type(self).__name__
        if not isinstance(stats, VisitStatistics):
            raise param_error("statistics", f"{owner}.fit_statistics", "a VisitStatistics", type(stats).__name__)
        counts = np.asarray(stats.counts)
        phi = np.eye(counts.size) if p["features"] is None else p["features"]
        if counts.shape != (phi.shape[0],) or np.asarray(stats.mean_returns).shape != counts.shape:
            raise InvalidDataError(f"The statistics given to {owner}.fit_statistics must have one count and one "
                                   f"mean return per row of the feature matrix ({phi.shape[0]} states).")
        m = int(stats.n_trajectories)
        if m < 1 or counts.min() < 0 or counts.max() > m:
            raise InvalidDataError(f"The statistics given to {owner}.fit_statistics must count at least one "
                                   "trajectory and every state at most once per trajectory.")
        if p["F_max"] is not None or p["r_max"] is not None:
            f_max = return_bound(p["r_max"] or 0.0, p["gamma"], p["F_max"], None, owner)
        else:
            raise param_error("F_max", owner, "a positive float (or r_max) when fitting on statistics, which "
                              "carry no reward bounds", None)
        means = np.asarray(stats.mean_returns)
        if means.size and (means.min() < 0.0 or means.max() > f_max):
            # never print the statistics: they are private
            raise InvalidDataError(f"The mean first-visit returns given to {owner}.fit_statistics lie outside the "
                                   f"public bounds [0, F_max = {f_max!r}]: compute them with those bounds "
                                   "(first_visit_statistics(..., return_bound=F_max)).")
        return stats, phi, f_max

    def _mechanism(self, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> _SmoothedRelease:
        raise NotImplementedError  # pragma: no cover - abstract

    def _store(self, theta: np.ndarray, phi: np.ndarray, stats: VisitStatistics, f_max: float,
               mech: _SmoothedRelease) -> None:
        self.theta_ = theta
        self.values_ = phi @ theta
        self.n_features_ = phi.shape[1]
        self.n_trajectories_ = stats.n_trajectories
        self.F_max_ = f_max
        self.mechanism_ = mech

    def _fit_prepared(self, stats: VisitStatistics, phi: np.ndarray, f_max: float, p: dict[str, object],
                      privacy_rng: RngLike, visits: int) -> Self:
        """The non-private fit: θ_X exactly, an empty ledger (``visits``: a public bound on the
        distinct states one trajectory visits, for the utility diagnostics)."""
        mech = self._mechanism(phi, f_max, {**p, "budget": PrivacyBudget.non_private()}, stats.n_trajectories)
        self._store(mech.solve(stats), phi, stats, f_max, mech)
        self.utility_ = release_utility(self.values_, f_max, mech, stats.n_trajectories, visits)
        self.privacy_ledger_ = Ledger()
        return self

    def _fit_rng(self, rng: RngLike) -> RngLike:
        return rng

    def _fit_non_private(self, dataset: object) -> Self:
        p = self._validated()
        stats, phi, f_max, visits = self._prepare(dataset, p)
        return self._fit_prepared(stats, phi, f_max, p, None, visits)

    def fit_statistics(self, statistics: VisitStatistics, *, rng: RngLike = None) -> Self:
        """Fit on the first-visit statistics of a batch (§2.2: the counts |X_s|, the mean
        first-visit returns F_X and m) instead of a dataset — e.g. one fit per nested prefix
        X_{m_1} ⊂ X_{m_2} ⊂ … drawn in one pass by
        :func:`~privrl.envs.chain.sample_chain_statistics_nested`.

        The statistics must come from trajectories whose first-visit returns all lie in
        [0, F_max] (:func:`~privrl.least_squares.statistics.first_visit_statistics` with
        ``return_bound=F_max`` checks each one; here only their means can be checked); features
        default to one-hot over ``len(counts)`` states, and F_max to r_max / (1 − γ). ``rng`` is the
        privacy-noise stream itself (a Generator is drawn from in place, no child stream), so that
        fits on successive batches draw in turn from one stream. Each fit is one (ε, δ)-DP
        release of its own batch, recorded in its own ledger; fits on batches that share
        trajectories compose, which a ledger of one fit does not show."""
        p = self._validated()
        rng = self._fit_rng(rng)
        stats, phi, f_max = self._from_statistics(statistics, p)
        return self._fit_prepared(stats, phi, f_max, p, rng, phi.shape[0])

    def predict(self, states: ArrayLike) -> np.ndarray:
        """V̂(s) = φ_sᵀθ̂ for an array of state indices."""
        values = check_is_fitted(self, "values_")
        return values[np.asarray(states, dtype=np.int64)]


def _uniform(n: int) -> np.ndarray:
    return np.full(n, 1.0 / n)


def _release_options(est: Any, p: dict[str, Any]) -> dict[str, Any]:
    """The budget and calibration choices of a mechanism (ε = ∞ for non-private fits; δ is then unused)."""
    budget = p["budget"]
    private = budget.is_private
    return {"epsilon": float(budget.epsilon) if private else math.inf,
            "delta": float(budget.delta) if private else 0.5,
            "calibration": p.get("calibration", "tight"), "smoothing": p.get("smoothing", "main_text"),
            "constants": p.get("constants", "theory"), "owner": type(est).__name__}


def _lsw_mechanism(est: Any, phi: np.ndarray, f_max: float, p: dict[str, Any]) -> DPLSWMechanism:
    weights = _uniform(phi.shape[0]) if p["weights"] is None else p["weights"]
    return DPLSWMechanism.create(features=phi, weights=weights, F_max=f_max, **_release_options(est, p))


def _lsl_mechanism(est: Any, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> DPLSLMechanism:
    weights = p["weights"]
    if p.get("relevance") is not None:
        if weights is not None:
            raise param_error("relevance", type(est).__name__, "None when 'weights' is given (it is the "
                              "deprecated name of 'weights')", "an array")
        weights = p["relevance"]
    rho = _uniform(phi.shape[0]) if weights is None else weights
    common = {"features": phi, "relevance": rho, "F_max": f_max, **_release_options(est, p)}
    lam = p["lam"]
    if lam is None:  # the preset schedule: needs the public α of this budget
        rho_arr = check_array(rho, "weights", owner=type(est).__name__, shape=(phi.shape[0],), low=0.0, high=1.0)
        probe = DPLSLMechanism.create(**common, lam=lambda_min(phi, rho_arr) * 2 + 1.0)
        lam = lambda_schedule(m, phi, rho_arr, constants=common["constants"], alpha=probe.smoothed.alpha)
    return DPLSLMechanism.create(**common, lam=lam)


# =========================================================================== non-private
class LSW(_PolicyEvaluation):
    """Non-private LSW: θ^w_X = argmin_θ Σ_s w_s (F_X(s) − φ_sᵀθ)² (eqs. 6–8).

    Parameters: ``gamma`` (γ = 1 for episodic data); ``features`` Φ (None = one-hot); ``weights``
    w ≥ 0 (None = uniform); ``r_max`` and ``F_max`` public bounds (rewards in [0, R_max], first-visit
    returns in [0, F_max]; default :func:`~privrl.data.bounds.return_bound`);
    ``clip_returns``; ``record_terminal``. Fitted: ``theta_``, ``values_`` = Φθ̂, ``F_max_``,
    ``n_features_``, ``n_trajectories_``, ``mechanism_`` (the release step's public constants: Φ,
    F_max, the smoothing (α, β)), ``utility_`` (public diagnostics,
    :mod:`~privrl.least_squares.diagnostics`), an empty ``privacy_ledger_``.
    :meth:`fit_statistics` fits on first-visit statistics instead of a dataset.
    """

    gamma: float = param(like=GAMMA)
    features: ArrayLike | None = FEATURES
    weights: ArrayLike | None = WEIGHTS
    r_max: float | None = R_MAX
    F_max: float | None = F_MAX
    clip_returns: bool = CLIP_RETURNS
    record_terminal: bool = RECORD_TERMINAL

    def _mechanism(self, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> _SmoothedRelease:
        return _lsw_mechanism(self, phi, f_max, p)

    def fit(self, dataset: object, *, rng: RngLike = None) -> LSW:
        """Fit on a :class:`~privrl.data.TrajectoryDataset` (tabular observations); deterministic."""
        return self._fit_non_private(dataset)


class LSL(_PolicyEvaluation):
    """Non-private LSL: θ^λ_X, ridge regression weighted by ρ_s |X_s| / m (eqs. 10–11).

    ``lam`` λ > 0 (public, a function of m at most — see :func:`sqrt_lambda_schedule`), ``weights``
    ρ ∈ [0, 1]^N (the paper's relevance; None = uniform 1/N; ``relevance=`` is a deprecated alias);
    other parameters as :class:`LSW`.
    """

    gamma: float = param(like=GAMMA)
    lam: float = param("ridge parameter λ > 0 (public; a function of m at most)", low=0.0, closed="neither")
    features: ArrayLike | None = FEATURES
    weights: ArrayLike | None = WEIGHTS_LSL
    r_max: float | None = R_MAX
    F_max: float | None = F_MAX
    clip_returns: bool = CLIP_RETURNS
    record_terminal: bool = RECORD_TERMINAL
    relevance: ArrayLike | None = RELEVANCE

    def _mechanism(self, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> _SmoothedRelease:
        return _lsl_mechanism(self, phi, f_max, p, m)

    def fit(self, dataset: object, *, rng: RngLike = None) -> LSL:
        """Fit on a :class:`~privrl.data.TrajectoryDataset` (tabular observations); deterministic."""
        return self._fit_non_private(dataset)


# =========================================================================== private
class _PrivatePolicyEvaluation(PrivateEstimator, _PolicyEvaluation):
    guarantee = "(epsilon, delta)-DP"

    budget: PrivacyBudget = param(like=BUDGET, check=_approx_budget, bad=(PrivacyBudget(rho=1.0),))
    constants: str = CONSTANTS
    smoothing: str = param("printed smoothing constants: 'main_text' (Lemma 1) or 'appendix_a' (Lemma 14, "
                           "epsilon ≤ 5 under the sound and paper calibrations); under the tight calibration "
                           "with constants='theory' it sets β", default="main_text", kind="option",
                           options=SMOOTHINGS)

    def fit(self, dataset: object, *, rng: RngLike = None) -> Self:
        """Fit and release θ̂ = θ_X + N(0, σ_X² I_d) (one event in ``privacy_ledger_``)."""
        p = self._validated()
        rng = self._fit_rng(rng)
        stats, phi, f_max, visits = self._prepare(dataset, p)
        return self._fit_prepared(stats, phi, f_max, p, None if rng is None else child_rngs(rng, "privacy")["privacy"],
                                  visits)

    def _fit_prepared(self, stats: VisitStatistics, phi: np.ndarray, f_max: float, p: dict[str, Any],
                      privacy_rng: RngLike, visits: int) -> Self:
        m = stats.n_trajectories
        mech = self._mechanism(phi, f_max, p, m)
        rel = self._privacy(privacy_rng, n_units=m)
        theta = rel.with_event(mech.solve(stats), std=mech.noise_scale(stats.counts, m), event=mech.event)
        self._store(theta, phi, stats, f_max, mech)
        if isinstance(mech, DPLSLMechanism):
            self.lam_ = mech.lam
        self.utility_ = release_utility(self.values_, f_max, mech, m, visits)
        if mech.is_private:
            warn_if_overspent(mech, type(self).__name__, stacklevel=2)
            warn_utility(self.utility_, mech, m, type(self).__name__, stacklevel=2)
        return self

    def release_mechanism(self, n_trajectories: int, F_max: float, n_states: int | None = None) -> _SmoothedRelease:
        """The release step of a fit on ``n_trajectories`` trajectories with the public return bound
        ``F_max`` (features: the declared ones, or one-hot over ``n_states``): public, no data —
        what a fit builds, and what ``privrl plan`` reads σ_X from (``noise_scale`` at assumed
        counts, ``noise_bound`` for the worst case)."""
        p = self._validated()
        if p["features"] is None and n_states is None:
            raise param_error("n_states", f"{type(self).__name__}.release_mechanism", "the number of states "
                              "when no features are declared", None)
        phi = np.eye(int(n_states)) if p["features"] is None else p["features"]  # type: ignore[arg-type]
        return self._mechanism(phi, float(F_max), p, int(n_trajectories))


def utility_text(utility: dict[str, object]) -> str:
    """The main utility diagnostic in one line (the ``privrl fit`` summary prints it)."""
    parts = []
    if "shrunk" in utility:
        parts.append(f"at most {utility['directions_kept']} of {utility['n_directions']} directions keep 10% of "
                     "their unregularised size" + (" (shrunk towards zero)" if utility["shrunk"] else ""))
    parts.append(f"RMS distance of the values outside [0, F_max] = {utility['outside_rms']:.3g} F_max"
                 + (f" (≥ {NOISE_DOMINATED_RMS:.3g}: noise-dominated)" if utility["noise_dominated"] else
                    " (no better than the zero estimate)" if utility.get("no_better_than_zero") else ""))
    return "; ".join(parts)


class DPLSW(_PrivatePolicyEvaluation):
    """DP-LSW (Algorithm 1): (ε, δ)-DP for one trajectory replaced.

    ``budget`` is a ``PrivacyBudget(epsilon, delta)`` with δ ∈ (0, 1) (an infinite budget gives
    exactly :class:`LSW`); ``calibration`` ``"tight"`` (default), ``"sound"`` or ``"paper"``
    (:mod:`~privrl.least_squares.calibration`); ``smoothing`` the printed constant set;
    ``constants`` the utility preset (β under the tight calibration); ``secure`` draws from OpenDP.
    Other parameters as :class:`LSW`. Noise derivation: :class:`DPLSWMechanism`. Fitted: as LSW,
    with ``privacy_ledger_`` holding one ``ApproxDpEvent(ε spent, δ)``; σ_X is not stored.
    """

    gamma: float = param(like=GAMMA)
    features: ArrayLike | None = FEATURES
    weights: ArrayLike | None = WEIGHTS
    r_max: float | None = R_MAX
    F_max: float | None = F_MAX
    clip_returns: bool = CLIP_RETURNS
    record_terminal: bool = RECORD_TERMINAL

    def _mechanism(self, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> _SmoothedRelease:
        return _lsw_mechanism(self, phi, f_max, p)


class DPLSL(_PrivatePolicyEvaluation):
    """DP-LSL (Algorithm 2): (ε, δ)-DP for one trajectory replaced; needs λ > ‖Φ‖²‖ρ‖∞.

    ``lam`` None uses the ``constants`` preset (:func:`lambda_schedule`; the λ used is ``lam_``,
    public). Other parameters as :class:`LSL` and :class:`DPLSW`. Noise derivation:
    :class:`DPLSLMechanism`.
    """

    gamma: float = param(like=GAMMA)
    lam: float | None = param("ridge parameter λ > ‖Φ‖²‖ρ‖∞ (public; a function of m at most); None = the "
                              "preset schedule of 'constants' (theory: λ_min + √m)", default=None, low=0.0,
                              closed="neither", none_ok=True)
    features: ArrayLike | None = FEATURES
    weights: ArrayLike | None = WEIGHTS_LSL
    r_max: float | None = R_MAX
    F_max: float | None = F_MAX
    clip_returns: bool = CLIP_RETURNS
    record_terminal: bool = RECORD_TERMINAL
    relevance: ArrayLike | None = RELEVANCE

    def _mechanism(self, phi: np.ndarray, f_max: float, p: dict[str, Any], m: int) -> _SmoothedRelease:
        return _lsl_mechanism(self, phi, f_max, p, m)

