"""DPQLearning (Wang & Hegde 2019, Algorithm 1) and its baselines (App. E.2) as estimators.

Privacy unit: the reward function; neighbours ``||r - r'||_inf <= 1`` (Thm 5). Transitions and
visited states are public. Every privacy-noise draw goes through the fit's
:class:`~privrl.privacy.release.Releaser` (``rel``):

* :class:`DPQLearning` — functional (Gaussian-process) noise: the OU paths draw their standard
  normals from ``rel.noise`` (one spawned source per action, :func:`~privrl.q_learning.gaussian_process.spawn_sources`);
  the releases are recorded with ``rel.record``: one Gaussian event of multiplier
  ``sigma / Delta_H`` per SGD update (by Cameron–Martin the GP mechanism has the privacy curve of the
  1-D Gaussian mechanism with the RKHS sensitivity Delta_H) and the tail event
  ``ApproxDpEvent(0, delta_g)`` ("some path exceeds the amplitude bound k the sensitivity needs").
  Calibrated by :func:`~privrl.q_learning.calibration.calibrate_functional_noise` (``"tight"``
  default, ``"sound"``, ``"paper"``); certification needs Algorithm 1's loop (``config="paper"``),
  a fresh path per update (``reset="iteration"``, spec A9) and 1-D states, else
  :class:`~privrl.errors.CertificationError`. ``budget=None``: an *uncertified* run with the given
  ``noise_std``/``kernel_beta`` (Figure 1; any configuration; d > 1), claiming no ε.
  The release is ``Q_theta + g`` with fresh paths (spec A11): :meth:`DPQLearning.release_q`.
* :class:`InputPerturbationQLearning` — every reward released as ``r + N(0, s^2)`` (``rel.gaussian``,
  sensitivity 1) as it is received; ``n_samples`` releases.
* :class:`DPSGDQLearning` — DP-SGD with q = 1: per-sample gradients clipped to ``clip_norm``; under
  sup-norm neighbours every sample's clipped gradient may change, so the sum has l2-sensitivity
  ``2 B clip_norm`` (the paper calibration assumes ``B clip_norm``, spec §5.5; the ledger records
  the true one); one ``rel.gaussian`` per update.
* :class:`QLearning` — the non-private counterpart (same loop, no noise).

Observations: a Box observation is mapped to [0, 1]^d by ``(obs - obs_low) / (obs_high - obs_low)``
with public bounds (default: the space's own; required when the space is unbounded, e.g.
CartPole's velocities). The analysis is on [0, 1], so an observation outside the bounds is an
error. :meth:`release_q` and :meth:`greedy_action` take raw observations and apply the same map
(:class:`~privrl.envs.center_walk.UnitBoxObservation` is the map as a Gymnasium wrapper).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import check_array, param_error
from privrl.base import BUDGET, CONSTANTS, Estimator, PrivateEstimator, check_is_fitted, param
from privrl.envs.center_walk import make_env
from privrl.errors import CertificationError, PrivacyLeakWarning, UtilityWarning
from privrl.privacy import events
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.draws import ANY_SCALE, NoiseDeclaration
from privrl.privacy.release import Releaser
from privrl.q_learning.calibration import (
    FunctionalNoiseCalibration,
    calibrate_functional_noise,
    dpsgd_noise_multiplier,
    input_perturbation_std,
    release_events,
)
from privrl.q_learning.configs import TrainingConfig, get_config, planned_updates
from privrl.q_learning.training import Privatizer, TrainingRun, TrainResult, UnitMap, functional_noise, train_many

if TYPE_CHECKING:
    import gymnasium as gym
    from typing_extensions import Self  # annotations only (typing.Self: Python 3.11)

__all__ = ["QLearning", "DPQLearning", "InputPerturbationQLearning", "DPSGDQLearning", "LEARNING_RATES", "fit_many"]

_STREAMS = ("env", "init", "policy", "replay", "dpsgd", "reward", "privacy")

#: The step-size presets of the baselines (``constants=``; privacy never depends on the step size of
#: Q-learning, input perturbation or DP-SGD — it is post-processing of their releases). ``theory``:
#: the configuration's own (App. E.3: 3e-4 for Algorithm 1's SGD; 0.01 for the authors' RMSprop).
#: ``practical``: the best mean return of the last half over a grid, non-private, on seeds 100-104
#: (never the figures' or benchmarks' seeds 0-9), 5000 samples: paper config grid
#: {3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1} -> 0.1 (0.89 vs 0.68: Algorithm 1's greedy learner walks into a
#: wall at every step size in its 79 updates); reference config {1e-3, 3e-3, 1e-2, 3e-2} -> 3e-3
#: (20.38 vs 20.32 at 0.01, within one seed sd). DPQLearning has no preset: its step size enters
#: the sensitivity (D = 4 alpha L (k + 1)), so it is a privacy parameter, not a utility knob.
LEARNING_RATES = {"theory": {"paper": 3e-4, "reference": 0.01}, "practical": {"paper": 0.1, "reference": 3e-3}}


# --------------------------------------------------------------------------- declared parameters
def _check_env(value: object, name: str, owner: str) -> str | gym.Env:
    import gymnasium as gym

    if not isinstance(value, (str, gym.Env)):
        raise param_error(name, owner, "a Gymnasium id or a gymnasium.Env", type(value).__name__)
    return value


def _check_hidden(value: Any, name: str, owner: str) -> tuple[int, ...]:
    try:
        widths = tuple(value)
    except TypeError:
        raise param_error(name, owner, "a sequence of layer widths (ints >= 1)", value) from None
    if not widths or not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h >= 1
                             for h in widths):
        raise param_error(name, owner, "a non-empty sequence of layer widths (ints >= 1)", value)
    return tuple(int(h) for h in widths)


def _check_pair(value: Any, name: str, owner: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise param_error(name, owner, "a pair (low, high) of finite floats with low <= high", value) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise param_error(name, owner, "a pair (low, high) of finite floats with low <= high", value)
    return lo, hi


def _check_bounds_array(value: object, name: str, owner: str) -> np.ndarray:
    return check_array(value, name, owner=owner, ndim=1)


def _check_budget(value: Any, name: str, owner: str) -> Any:
    if value is not None and value.is_private and (value.is_zcdp or not value.delta):
        raise param_error(name, owner, "an (epsilon, delta) budget with delta > 0 (the Gaussian-process "
                          "mechanism is not pure DP)", value)
    return value


def _epsilon_delta(budget: PrivacyBudget) -> tuple[float, float]:
    """(ε, δ) of a private budget that passed :func:`_check_budget` (an (ε, δ > 0) budget)."""
    assert budget.epsilon is not None and budget.delta is not None
    return float(budget.epsilon), float(budget.delta)


#: the parameters the four learners share (declared once; each class lists them last)
ENV = param("a Gymnasium id or gymnasium.Env (discrete actions, Box observations)", default="privrl/CenterWalk-v0",
            kind="object", check=_check_env, cli=False)
N_SAMPLES = param("environment samples T (None: the configuration's 5000)", default=None, kind="int", low=1,
                  none_ok=True)
LEARNING_RATE = param("step size (None: the configuration's, or the 'constants' preset)", default=None, low=0.0,
                      closed="neither", none_ok=True)
BATCH_SIZE = param("transitions per SGD step B (None: the configuration's)", default=None, kind="int", low=1,
                   none_ok=True)
HIDDEN = param("hidden layer widths of the ReLU MLP", default=(16, 16), kind="object", check=_check_hidden,
               cli=False)
REWARD_BOUNDS = param("declared (low, high) of every reward (checked, never clipped)", default=(-1.0, 1.0),
                      kind="object", check=_check_pair, cli=False)
OBS_LOW = param("public lower bounds of the observations, mapped to 0 (None: the Box space's own; needed "
                "where it is unbounded)", default=None, kind="array", none_ok=True, check=_check_bounds_array)
OBS_HIGH = param("public upper bounds of the observations, mapped to 1 (None: the Box space's own)", default=None,
                 kind="array", none_ok=True, check=_check_bounds_array)


def _config(default: str) -> Any:
    return param("training loop: 'paper' (Algorithm 1's plain SGD, App. E.3) or 'reference' (the authors' "
                 "released DQN-style loop)", default=default, kind="option", options=("paper", "reference"))


# --------------------------------------------------------------------------- observations
def _unit_map(space: object, low: np.ndarray | None, high: np.ndarray | None, owner: str, env_name: str) -> UnitMap:
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Box):
        raise param_error("env", owner, "an environment with a Box observation space", type(space).__name__)
    d = int(np.prod(space.shape))
    lo = np.asarray(space.low, float).ravel() if low is None else low
    hi = np.asarray(space.high, float).ravel() if high is None else high
    for name, arr in (("obs_low", lo), ("obs_high", hi)):
        if arr.shape != (d,):
            raise param_error(name, owner, f"{d} bounds (one per observation coordinate)", f"{arr.size} values")
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise param_error(name, owner, f"finite in every coordinate: {env_name} declares unbounded "
                              f"observations in coordinates {bad.tolist()}, so give public finite bounds",
                              "the space's own bounds" if (low if name == "obs_low" else high) is None
                              else arr.tolist())
    if np.any(hi <= lo):
        raise param_error("obs_high", owner, "greater than 'obs_low' in every coordinate", hi.tolist())
    return UnitMap(lo, hi, owner)


# --------------------------------------------------------------------------- shared machinery
@dataclass
class _Fit:
    """A fit split at its training run: ``run`` (what :func:`~privrl.q_learning.training.train_many`
    trains) and ``finish(result)`` (records the result, the ledger, the warnings)."""

    estimator: _QLearner
    run: TrainingRun
    finish: Callable[[TrainResult], None]


_Learner = TypeVar("_Learner", bound="_QLearner")


def fit_many(estimators: Sequence[_Learner], *, rngs: Sequence[RngLike],
             envs: Sequence[str | gym.Env | None] | None = None) -> list[_Learner]:
    """Fit DP Q-learning estimators together: each exactly as ``est.fit(env, rng=rng)`` would
    (same streams, same episodes), with the runs whose loops agree advanced in lockstep
    (:func:`~privrl.q_learning.training.train_many`) — many seeds or settings at the cost of few."""
    given: list[str | gym.Env | None] = [None] * len(estimators) if envs is None else list(envs)
    fits = [est._start(env, rng) for est, env, rng in zip(estimators, given, rngs)]
    for fit, res in zip(fits, train_many([f.run for f in fits])):
        fit.finish(res)
    return list(estimators)


class _QLearner(Estimator):
    """The learners' shared parameters (the environment, the training knobs and the public bounds);
    a private learner lists :class:`PrivateEstimator` after this class, so that its budget still
    comes first, and declares its own parameters (the configuration among them) after these."""

    privacy_unit = PrivacyUnit.REWARD_FUNCTION
    neighboring = Neighboring.SUP_NORM_ONE
    guarantee: ClassVar[str | None] = "(epsilon, delta)-DP"
    _backend = "numpy"   # "torch": the PyTorch reference learner (same draws; benchmarks and tests)
    env: str | gym.Env = ENV
    n_samples: int | None = N_SAMPLES
    learning_rate: float | None = LEARNING_RATE
    batch_size: int | None = BATCH_SIZE
    hidden: tuple[int, ...] = HIDDEN
    reward_bounds: tuple[float, float] = REWARD_BOUNDS
    obs_low: ArrayLike | None = OBS_LOW
    obs_high: ArrayLike | None = OBS_HIGH

    @property
    def is_private(self) -> bool:
        budget = getattr(self, "budget", None)
        return self.guarantee is not None and budget is not None and budget.is_private

    def _setup(self, p: dict[str, Any], env: str | gym.Env | None) -> tuple[Any, TrainingConfig, tuple[float, float]]:
        import gymnasium as gym

        owner = type(self).__name__
        given = p["env"] if env is None else _check_env(env, "env", owner)
        name = given if isinstance(given, str) else type(given.unwrapped).__name__
        live = make_env(given, owner=owner) if isinstance(given, str) else given
        if not isinstance(live.action_space, gym.spaces.Discrete):
            raise param_error("env", owner, "an environment with discrete actions", type(live.action_space).__name__)
        cfg = self._training_config(p)
        self._obs_map = _unit_map(live.observation_space, p["obs_low"], p["obs_high"], owner, str(name))
        self.obs_low_ = self._obs_map.low.copy()      # the public bounds used (mapped to 0 and 1)
        self.obs_high_ = self._obs_map.low + self._obs_map.span
        return live, cfg, p["reward_bounds"]

    @staticmethod
    def _training_config(p: dict[str, Any]) -> TrainingConfig:
        """The training configuration of the parameters (public: no environment needed)."""
        lr = p["learning_rate"]
        if lr is None and "constants" in p:
            lr = LEARNING_RATES[p["constants"]][p["config"]]
        return get_config(p["config"], n_samples=p["n_samples"], learning_rate=lr, batch_size=p["batch_size"],
                          hidden=p["hidden"])

    def _start(self, env: str | gym.Env | None, rng: RngLike, **kw: Any) -> _Fit:  # pragma: no cover - abstract
        raise NotImplementedError

    def _plan(self, env: gym.Env, cfg: TrainingConfig, privatizer: Privatizer, rngs: dict[str, np.random.Generator],
              bounds: tuple[float, float], finish: Callable[[TrainResult], None], trace: bool = False) -> _Fit:
        """The training run of this fit and what to do with its result (after :meth:`_store`)."""
        def done(res: TrainResult) -> None:
            self._store(res, env, cfg)
            finish(res)

        return _Fit(self, TrainingRun(env, cfg, privatizer, rngs, bounds, self._obs_map, trace), done)

    def _store(self, res: TrainResult, env: Any, cfg: TrainingConfig) -> None:
        self._network = res.network
        self.returns_ = res.returns
        self.n_updates_ = res.n_updates
        self.training_config_ = cfg
        self.n_actions_ = int(env.action_space.n)
        self.obs_dim_ = int(np.prod(env.observation_space.shape))
        self._trace = res.trace

    def fit(self, env: str | gym.Env | None = None, *, rng: RngLike = None, **kw: Any) -> Self:
        """Train on ``env`` (default: the ``env`` parameter) with the random streams of ``rng``."""
        fit = self._start(env, rng, **kw)
        fit.finish(train_many([fit.run], backend=self._backend)[0])
        return self

    def _unit(self, states: ArrayLike) -> np.ndarray:
        check_is_fitted(self, "returns_")
        return self._obs_map.batch(states)

    def _q(self, states: ArrayLike) -> np.ndarray:
        """Q_theta at raw observations (not released by the private estimators)."""
        return self._network(self._unit(states))

    def release_q(self, states: ArrayLike) -> np.ndarray:
        """The released Q-function at raw observations ``states`` (``(n, d)`` or ``(n,)`` for d = 1):
        ``(n, m)``. For baselines whose privacy comes from training (input perturbation, DP-SGD)
        Q_theta is post-processing of the releases and released as is."""
        return self._q(states)

    def greedy_action(self, states: ArrayLike) -> np.ndarray:
        """argmax of :meth:`release_q` at raw observations (post-processing of the release)."""
        return np.argmax(self.release_q(states), axis=1)


def _warn_noise_dominates(owner: str, noise: float, scale: float, what: str, knob: str) -> None:
    """UtilityWarning when a (public) noise std is at least ``scale`` (a public bound of the signal
    it perturbs): the released policy is then driven by the noise (Figure 1: with rewards in
    [0, 0.5], sigma >= 0.8 already gives the return of random play). Public quantities only."""
    if noise >= scale:
        warnings.warn(f"{owner}: degenerate output: the privacy noise std {noise:.3g} is at least {what} "
                      f"({scale:.3g}), so the learned policy is driven by the noise. {knob}", UtilityWarning,
                      stacklevel=3)


# --------------------------------------------------------------------------- estimators
class QLearning(_QLearner):
    """Non-private deep Q-learning in either configuration (the sigma = 0 counterpart)."""

    guarantee = None
    config: str = _config("reference")
    constants: str = CONSTANTS

    def _start(self, env: str | gym.Env | None, rng: RngLike, **kw: object) -> _Fit:
        p = self._validated()
        live, cfg, bounds = self._setup(p, env)

        def finish(res: TrainResult) -> None:
            self.privacy_ledger_ = Ledger()

        return self._plan(live, cfg, Privatizer(), child_rngs(rng, *_STREAMS), bounds, finish)


#: what the events of release_events draw (privrl.privacy.draws): the updates' releases are Gaussian-process
#: paths (standard normals turned into the paths' values at the queried states: no fixed size), the tail
#: event of the amplitude bound draws nothing of its own
_FUNCTIONAL_DECLARATIONS = (
    NoiseDeclaration("gaussian", ANY_SCALE, None, note="Gaussian-process paths at the queried states"),
    NoiseDeclaration("none", None, 0, note="the tail event of the amplitude bound k"))


class DPQLearning(_QLearner, PrivateEstimator):
    """Algorithm 1 of Wang & Hegde (2019): Q-learning with functional noise (module docstring).

    With a budget, sigma, beta and the noise bound k come from the calibration (an infinite budget
    means no noise); ``noise_std``/``kernel_beta`` are used only with ``budget=None`` (uncertified).
    Fitted: ``noise_std_``, ``kernel_beta_`` (public), ``calibration_``
    (:class:`~privrl.q_learning.calibration.FunctionalNoiseCalibration` or None), ``certified_``
    (the ledger meets the budget), ``privacy_ledger_``, ``returns_``, ``n_updates_``.
    """

    budget: PrivacyBudget | None = param(  # type: ignore[assignment]  # None: an uncertified run
        like=BUDGET, help="the privacy budget PrivacyBudget(epsilon=..., delta=...) (an infinite budget gives "
        "QLearning exactly), or None: an uncertified run with noise_std and kernel_beta that claims no epsilon",
        none_ok=True, check=_check_budget)
    noise_std: float = param("functional noise sigma of an uncertified run (budget None)", default=0.0, low=0.0)
    kernel_beta: float | None = param("kernel width beta of an uncertified run (None: 1)", default=None, low=0.0,
                                      closed="neither", none_ok=True)
    kappa: float | str = param("noise amplitude bound k of the sensitivity argument ('auto': chosen by the "
                               "calibration; paper: 23)", default="auto", low=0.0, closed="neither",
                               options=("auto",))
    lipschitz: float = param("declared Lipschitz constant L of Q (assumed, not enforced; L^2 = 16 in App. E.3)",
                             default=4.0, low=0.0, closed="neither")
    reset: str = param("fresh noise paths after every update ('iteration', J = T/B; needed for a certificate), "
                       "every episode, or never", default="iteration", kind="option",
                       options=("iteration", "episode", "never"))
    config: str = _config("paper")

    def fit(self, env: str | gym.Env | None = None, *, rng: RngLike = None, trace: bool = False,
            **kw: object) -> DPQLearning:
        """Train on ``env`` (default: the ``env`` parameter); ``trace`` keeps the noise of every update."""
        return super().fit(env, rng=rng, trace=trace)

    def _start(self, env: str | gym.Env | None, rng: RngLike, trace: bool = False, **kw: object) -> _Fit:
        p = self._validated()
        rng = self._fit_rng(rng)
        owner = "DPQLearning"
        live, cfg, bounds = self._setup(p, env)
        budget: PrivacyBudget | None = p["budget"]
        m = int(live.action_space.n)
        dim = int(np.prod(live.observation_space.shape))
        cal: FunctionalNoiseCalibration | None = None
        if budget is None:  # uncertified: sigma and beta as given
            sigma = p["noise_std"]
            beta = 1.0 if p["kernel_beta"] is None else p["kernel_beta"]
        elif not budget.is_private:
            sigma, beta = 0.0, 1.0
        else:
            cal = self.functional_calibration(m, dim)
            sigma, beta = cal.sigma, cal.beta
        rngs = child_rngs(rng, *_STREAMS)
        rel = self._privacy(None if p["secure"] else rngs["privacy"])
        noise = functional_noise(dim, m, beta, sigma, rel.noise) if sigma > 0 else None
        t_noise = functional_noise(dim, m, beta, sigma, rel.noise) \
            if sigma > 0 and cfg.target_noise == "separate" else None

        def finish(res: TrainResult) -> None:
            self._release_noise = functional_noise(dim, m, beta, sigma, rel.noise) if sigma > 0 else None
            self.calibration_ = cal
            self.noise_std_ = float(sigma)
            self.kernel_beta_ = float(beta)
            self.certified_ = False
            if budget is None:
                rel.record(events.non_private())   # uncertified: no epsilon is claimed
            elif cal is not None:
                # T' releases Q_theta + g (Gaussian mechanisms with the RKHS sensitivity, exact by
                # Cameron–Martin) and the tail event of the amplitude bound k
                for event, declared in zip(release_events(cal, res.n_updates), _FUNCTIONAL_DECLARATIONS):
                    rel.record(event, noise=declared)
                eps, delta = _epsilon_delta(budget)
                spent = self.privacy_ledger_.epsilon(delta)
                self.certified_ = bool(spent <= eps * (1.0 + 1e-9))
                if not self.certified_:
                    self._warn_uncertified(cal, spent, delta)
                else:
                    _warn_noise_dominates(owner, sigma, (bounds[1] - bounds[0]) / 2.0, "half the declared reward "
                                          "range", "A larger budget, a smaller learning_rate or lipschitz (the "
                                          "sensitivity is proportional to both) or fewer updates reduce it; the "
                                          "paper's own sigma is not certified (docs/q_learning.md).")

        return self._plan(live, cfg, Privatizer(noise=noise, target_noise=t_noise, reset=p["reset"]), rngs, bounds,
                          finish, trace=trace)

    def functional_calibration(self, n_actions: int, obs_dim: int = 1) -> FunctionalNoiseCalibration:
        """σ, β and the tail event of a certified run with ``n_actions`` actions and ``obs_dim``-dimensional
        observations (public: the budget, the training configuration, L; what ``fit`` and ``privrl
        plan`` use). Raises :class:`~privrl.errors.CertificationError` for a run the analysis does
        not cover."""
        p = self._validated()
        owner = type(self).__name__
        budget = p["budget"]
        cfg = self._training_config(p)
        why = []
        if p["config"] != "paper":
            why.append("the analysis covers Algorithm 1's plain SGD loop only (the 'paper' config), "
                       f"not the {p['config']!r} config")
        if p["reset"] != "iteration":
            why.append("composition over updates needs a fresh noise path per update (reset "
                       f"'iteration', spec A9), not {p['reset']!r}")
        if obs_dim != 1:
            why.append(f"the sensitivity is derived for 1-D states only (got dimension {obs_dim}); for an "
                       "uncertified run give no budget and a noise_std")
        if budget is None or not budget.is_private:
            why.append("an uncertified or non-private run has no calibrated noise")
        if why:
            raise CertificationError(f"{owner} cannot certify this run: " + "; ".join(why) + ".")
        return calibrate_functional_noise(
            *_epsilon_delta(budget), n_samples=cfg.n_samples, batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate, lipschitz=p["lipschitz"], n_actions=int(n_actions),
            calibration=p["calibration"], kappa=p["kappa"])

    def _warn_uncertified(self, cal: FunctionalNoiseCalibration, spent: float, delta: float) -> None:
        why = []
        if cal.calibration == "paper" and not cal.side_condition_holds:
            why.append("Theorem 5's side condition 2k > 8.68 sqrt(beta) sigma fails (the paper's own tail "
                       "term is 1)")
        if cal.claimed_sensitivity < cal.sensitivity:
            why.append(f"the calibration assumed the RKHS sensitivity {cal.claimed_sensitivity:.4g} where the "
                       f"corrected chain gives {cal.sensitivity:.4g} (spec A1, A7)")
        warnings.warn(f"DPQLearning: calibration {cal.calibration!r} does not certify the budget: "
                      + "; ".join(why or ["the ledger exceeds the budget"])
                      + f". The ledger records what the noise truly spends: epsilon = {spent:.4g} at delta = "
                      f"{delta:g}; certified_ is False.", PrivacyLeakWarning, stacklevel=3)

    def release_q(self, states: ArrayLike) -> np.ndarray:
        """``Q_theta(s, .) + g(s)`` at raw observations with fresh paths independent of training
        (spec A11), lazily and consistently evaluated: the same state always gets the same value."""
        q = self._q(states)
        if self._release_noise is None:
            return q
        return q + self._release_noise(self._unit(states))


class _Baseline(_QLearner, PrivateEstimator):
    """The two baselines' parameters: the budget (an (epsilon, delta) budget; infinite: the noiseless
    learner), the utility preset and the configuration (a baseline's own come after them)."""

    budget: PrivacyBudget = param(like=BUDGET, help="the privacy budget PrivacyBudget(epsilon=..., delta=...); an "
                                  "infinite budget gives the noiseless learner", check=_check_budget)
    constants: str = CONSTANTS
    config: str = _config("reference")


class _RewardReleases:
    """Input perturbation's releases: ``release(r) = r + N(0, s^2)``, one per received reward, each
    a Gaussian release of sensitivity 1 (the reward's range under sup-norm neighbours) recorded as
    its own event, exactly as ``rel.gaussian(r, sensitivity=1, std=s)`` would.

    A streaming privatizer: the noise of up to ``n_max`` releases is drawn from ``rel.noise`` in
    one block at the first release (the noise does not depend on the rewards), so seeded NumPy
    noise gives the same normals, in the same order, as one draw per reward; each release then
    costs an addition and the event's record."""

    def __init__(self, rel: Releaser, std: float, n_max: int) -> None:
        self._rel, self._std, self._n_max = rel, float(std), max(int(n_max), 1)
        self._event = events.gaussian(math.inf if std == 0 else float(std))   # sigma / Delta, Delta = 1
        # one reward a release; the noise of n_max releases is drawn in blocks (size not fixed)
        self._declared = NoiseDeclaration("gaussian", float(std), None, sensitivity=1.0)
        self._noise: list[float] = []
        self._pos = 0

    def __call__(self, r: float) -> float:
        if self._pos == len(self._noise):
            self._noise = self._rel.noise.gaussian(self._n_max, self._std).tolist()
            self._pos = 0
        value = r + self._noise[self._pos]
        self._pos += 1
        self._rel.record(self._event, noise=self._declared)
        return value


class InputPerturbationQLearning(_Baseline):
    """Gaussian noise on every reward ([Ven13]-style baseline of App. E.2; spec §5.5).

    ``n_samples`` reward releases of sensitivity 1 compose to one Gaussian mechanism with
    ``mu = sqrt(n) / s``: ``tight`` (= ``sound``, today's exact calibration) takes the smallest s
    meeting the budget exactly; ``paper`` the paper's own composition formula (more noise)."""


    def _start(self, env: str | gym.Env | None, rng: RngLike, **kw: object) -> _Fit:
        p = self._validated()
        rng = self._fit_rng(rng)
        live, cfg, bounds = self._setup(p, env)
        budget: PrivacyBudget = p["budget"]
        std = 0.0
        if budget.is_private:
            std = input_perturbation_std(*_epsilon_delta(budget), cfg.n_samples, p["calibration"])
        rngs = child_rngs(rng, *_STREAMS)
        rel = self._privacy(None if p["secure"] else rngs["reward"])
        release = _RewardReleases(rel, std, cfg.n_samples)

        def finish(res: TrainResult) -> None:
            self.reward_noise_std_ = std
            self.noise_std_ = std
            self.certified_ = _certified(self, budget, "the paper's composition formula sqrt(2 T ln(e + eps/delta))"
                                         "/eps is not an upper bound of ε at this budget")
            if budget.is_private:
                _warn_noise_dominates(type(self).__name__, std, bounds[1] - bounds[0], "the declared reward range",
                                      "Only a larger budget or fewer samples (fewer releases) reduce it.")

        return self._plan(live, cfg, Privatizer(release_reward=release if std > 0 else None), rngs, bounds, finish)


class DPSGDQLearning(_Baseline):
    """DP-SGD baseline ([ACG+16], App. E.2) with sampling rate q = 1 (spec §5.5).

    Each update releases the sum of the B per-sample clipped gradients plus ``N(0, (z S)^2 I)``,
    ``S = 2 B clip_norm`` its sensitivity (every reward, hence every clipped gradient, may change).
    No amplification by sampling: every record differs between neighbours. The ``n_updates``
    releases compose to one Gaussian mechanism; ``tight`` (= ``sound``) calibrates z exactly;
    ``paper`` uses Abadi et al.'s Theorem 1 (c2 = sqrt 2) on the sensitivity ``B clip_norm`` — the
    ledger records the true sensitivity, so its ε spent is larger than the budget
    (``certified_`` False, with a warning)."""

    clip_norm: float = param("per-sample gradient clipping norm C (l2)", default=1.0, low=0.0, closed="neither")

    def _start(self, env: str | gym.Env | None, rng: RngLike, **kw: object) -> _Fit:
        p = self._validated()
        rng = self._fit_rng(rng)
        live, cfg, bounds = self._setup(p, env)
        budget: PrivacyBudget = p["budget"]
        n_steps = planned_updates(cfg)
        clip = p["clip_norm"]
        multiplier = 0.0
        if budget.is_private:
            multiplier = dpsgd_noise_multiplier(*_epsilon_delta(budget), max(n_steps, 1), p["calibration"])
        true_sens = 2.0 * cfg.batch_size * clip       # every sample's clipped gradient may flip
        claimed = (1.0 if p["calibration"] == "paper" else 2.0) * cfg.batch_size * clip
        std = multiplier * claimed
        rngs = child_rngs(rng, *_STREAMS)
        rel = self._privacy(None if p["secure"] else rngs["dpsgd"])

        def release(grad_sum: np.ndarray) -> np.ndarray:
            return rel.gaussian(grad_sum, sensitivity=true_sens, std=std)

        def finish(res: TrainResult) -> None:
            self.noise_multiplier_ = std / true_sens
            self.noise_std_ = std
            self.certified_ = _certified(self, budget, "it assumes the clipped-gradient sum has sensitivity B "
                                         "clip_norm, but every sample's gradient may flip under sup-norm neighbours "
                                         "(2 B clip_norm)")
            if budget.is_private:
                _warn_noise_dominates(type(self).__name__, std, cfg.batch_size * clip, "the largest norm of the "
                                      "clipped-gradient sum B clip_norm", "A larger budget or fewer updates reduce it.")

        return self._plan(live, cfg, Privatizer(clip_norm=clip, release_gradient=release if std > 0 else None), rngs,
                          bounds, finish)


def _certified(est: PrivateEstimator, budget: PrivacyBudget, why: str) -> bool:
    """Whether the fit's ledger meets ``budget`` (ε at its δ); a PrivacyLeakWarning saying ``why`` and
    what the ledger truly spends when it does not (the paper calibrations)."""
    if not budget.is_private:
        return False
    eps, delta = _epsilon_delta(budget)
    spent = est.privacy_ledger_.epsilon(delta)
    if spent <= eps * (1.0 + 1e-9):
        return True
    warnings.warn(f"{type(est).__name__}: calibration {est.calibration!r} does not certify the budget: {why}. The "
                  f"ledger records the true spend: epsilon = {spent:.4g} at delta = {delta:g}; "
                  "certified_ is False.", PrivacyLeakWarning, stacklevel=3)
    return False
