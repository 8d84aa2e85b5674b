"""Behaviour cloning on logged trajectories of continuous states, and its DP-SGD counterpart with one
trajectory as the privacy unit.

:class:`BC` fits a softmax policy ``π_θ(a | s)`` (a ReLU MLP on the state vector, discrete actions) by
minimising the cross-entropy ``-Σ log π_θ(a_t | s_t)`` with Adam. Step ``t`` of ``T`` (``n_steps``) draws
a batch of trajectories by Poisson sampling — each trajectory independently with probability ``q``
(``sampling_rate``) — and uses the sum of the batch's gradients.

:class:`DPBC` is the same learner made (ε, δ)-DP per trajectory (DP-SGD, Abadi et al. 2016, with the
trajectory as the unit):

* **privacy unit** one trajectory; **neighbours** add or remove one trajectory (the relation for
  which dp-accounting's Poisson-subsampling amplification is stated);
* each sampled trajectory's *total* gradient (the sum over all its transitions) is clipped to ℓ2 norm
  ``C`` (``clip_norm``), so adding or removing one trajectory moves the clipped sum by at most
  ``Δ = C``; the released step is ``Σ clip(g_u) + N(0, (z C)² I)``;
* the ``T`` steps are the Poisson-subsampled Gaussian mechanism (rate ``q``, multiplier ``z``)
  composed ``T`` times, accounted by dp-accounting's PLD accountant as one ledger event
  (:class:`privrl.deep.dpsgd.SubsampledGaussianSteps`); ``calibration="tight"`` (default; ``"sound"``
  is the same: the PLD accountant is exact up to its discretisation, rounded up) takes the least
  ``z`` that meets (ε, δ) (:func:`privrl.deep.dpsgd.calibrate_noise_multiplier`). There is no paper
  calibration to follow: ``"paper"`` is refused.

Data-dependent quantities outside the noisy steps — none: the observation scaling uses the public
bounds ``obs_low``/``obs_high`` (or none: no normalisation statistics are computed from the data);
there is no early stopping and no model selection (``T`` is fixed in advance); the step uses the
noisy sum as is (Adam is scale-invariant; no division by the data's batch size); the number of
trajectories is not released (it tells add/remove neighbours apart; it sets only the δ ≥ 1/n warning and the
noise-dominated steps' warning, :mod:`privrl.deep_offline._utility`); the
number of actions is public (``n_actions``, or the dataset's declared ``n_actions``). The network's
initialisation and the batch sampling come from the fit's ``rng`` (independent of the data).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import check_array, param_error
from privrl.base import BUDGET, CALIBRATION, Estimator, PrivateEstimator, param
from privrl.data import TrajectoryDataset
from privrl.deep.dpsgd import SubsampledGaussianSteps, calibrate_noise_multiplier
from privrl.deep.networks import MLP
from privrl.deep_offline._utility import n_parameters, step_rows, warn_if_hopeless
from privrl.deep_offline.continuous_data import ContinuousTransitions
from privrl.errors import InvalidDataError
from privrl.privacy import Ledger, Neighboring, PrivacyBudget, PrivacyUnit

if TYPE_CHECKING:  # annotations only (typing.Self: Python 3.11)
    from typing_extensions import Self

    from privrl.privacy.release import Releaser

#: a fit's data: logged trajectories with discrete actions, or with continuous ones (TD3+BC)
Dataset = TrajectoryDataset | ContinuousTransitions
#: a step's noisy release of its clipped sum (DP-TD3+BC's also takes whether the step is an actor step)
Privatize = Callable[..., np.ndarray]
#: makes the fit's privatizer from the step's coordinates (per network block for DP-TD3+BC) and the privacy stream;
#: None for the non-private learner
Release = Callable[[int | tuple[int, int], np.random.Generator], Privatize | None]

__all__ = ["BC", "DPBC", "noise_multiplier"]

_STREAMS = ("init", "batches", "privacy")


def _check_hidden(value: Any, name: str, owner: str) -> tuple[int, ...]:
    try:
        widths = tuple(value)
    except TypeError:
        raise param_error(name, owner, "a non-empty sequence of layer widths (ints >= 1)", value) from None
    if not widths or not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h >= 1
                             for h in widths):
        raise param_error(name, owner, "a non-empty sequence of layer widths (ints >= 1)", value)
    return tuple(int(h) for h in widths)


def _check_vector(value: Any, name: str, owner: str) -> np.ndarray:
    return check_array(value, name, owner=owner, ndim=1)


def _check_budget(value: Any, name: str, owner: str) -> Any:
    if value is not None and value.is_private and (value.is_zcdp or not value.delta):
        raise param_error(name, owner, "an (epsilon, delta) budget with delta > 0 (DP-SGD's Gaussian steps are "
                          "not pure DP)", value)
    return value


HIDDEN = param("hidden layer widths of the ReLU MLP policy", default=(32, 32), kind="object", check=_check_hidden,
               cli=False)
N_STEPS = param("number of gradient steps T (public, fixed in advance: no early stopping)", default=200, kind="int",
                low=1)
SAMPLING_RATE = param("Poisson sampling rate q: each trajectory joins a step's batch with probability q",
                      default=0.1, low=0.0, high=1.0, closed="right")
LEARNING_RATE = param("Adam step size", default=1e-2, low=0.0, closed="neither")
N_ACTIONS = param("number of discrete actions (public; None: the dataset's declared n_actions)", default=None,
                  kind="int", low=1, none_ok=True)
OBS_LOW = param("public lower bounds of the observations, mapped to -1 (None: no scaling)", default=None,
                kind="array", none_ok=True, check=_check_vector)
OBS_HIGH = param("public upper bounds of the observations, mapped to +1 (None: no scaling)", default=None,
                 kind="array", none_ok=True, check=_check_vector)


def noise_multiplier(budget: PrivacyBudget, sampling_rate: float, n_steps: int) -> float:
    """``z``: the least noise multiplier whose ``n_steps`` Poisson-subsampled Gaussian steps at rate ``q``
    are (ε, δ)-DP by the PLD accountant (0 for an infinite budget). The noise std is ``z C``. A function
    of public numbers only, so it is cached (each PLD search takes seconds)."""
    if not budget.is_private:
        return 0.0
    assert budget.epsilon is not None and budget.delta is not None  # checked by the budget's declaration
    return _calibrated(float(budget.epsilon), float(budget.delta), float(sampling_rate), int(n_steps))


@functools.lru_cache(maxsize=256)
def _calibrated(epsilon: float, delta: float, sampling_rate: float, n_steps: int) -> float:
    return calibrate_noise_multiplier(epsilon, delta, sampling_rate, n_steps)


class _Learner(Estimator):
    """What every learner of the family shares: the privacy unit, the training parameters of the Adam loop
    over Poisson-sampled trajectories, and the public observation scaling (subclasses declare ``obs_low`` /
    ``obs_high``; :meth:`_set_scale` reads them)."""

    privacy_unit: ClassVar[PrivacyUnit | None] = PrivacyUnit.TRAJECTORY
    neighboring: ClassVar[Neighboring | None] = Neighboring.ADD_OR_REMOVE_ONE

    hidden: tuple[int, ...] = HIDDEN
    n_steps: int = N_STEPS
    sampling_rate: float = SAMPLING_RATE
    learning_rate: float = LEARNING_RATE

    def _train(self, p: dict[str, Any], dataset: Dataset, rng: RngLike, *, clip: float | None,
               release: Release | None) -> None:
        """Train on ``dataset``: each step's per-trajectory gradients clipped to ``clip`` (None: not clipped) and
        released through the privatizer ``release(size, privacy_rng)`` makes (None: the sums themselves)."""
        raise NotImplementedError

    def _public_dims(self, dataset: Dataset) -> tuple[int, int]:
        """``(features, actions)``: the data's declared sizes, which fix the networks' parameter counts (read
        after :meth:`_train` has checked the data)."""
        raise NotImplementedError

    def _set_scale(self, p: dict[str, Any], k: int, owner: str) -> None:
        """The public observation scaling of ``k``-dimensional observations from the bounds ``obs_low`` /
        ``obs_high`` (none without them; :meth:`_scaled` applies it)."""
        low, high = p["obs_low"], p["obs_high"]
        self._scale: tuple[np.ndarray, np.ndarray] | None = None
        if low is None and high is None:
            return
        for name, value in (("obs_low", low), ("obs_high", high)):
            if value is None or value.shape != (k,):
                raise param_error(name, owner, f"an array of {k} bounds, given with "
                                  f"{'obs_high' if name == 'obs_low' else 'obs_low'}",
                                  None if value is None else f"shape {value.shape}")
        if not np.all(high > low):
            raise param_error("obs_high", owner, "above obs_low in every coordinate", high.tolist())
        self._scale = 0.5 * (high + low), 0.5 * (high - low)

    def _scaled(self, obs: np.ndarray) -> np.ndarray:
        return obs if self._scale is None else (obs - self._scale[0]) / self._scale[1]


class _BehaviourCloning(_Learner):
    """What BC and DP-BC (and IQL, DP-IQL) share: the discrete-action data checks, the public observation
    scaling and the softmax policy. DP-BC lists :class:`_Private` (and so :class:`PrivateEstimator`) after
    this class; its budget still comes first (the base classes' parameters come first)."""

    n_actions: int | None = N_ACTIONS
    obs_low: np.ndarray | None = OBS_LOW
    obs_high: np.ndarray | None = OBS_HIGH

    def _inputs(self, p: dict[str, Any], dataset: Dataset) -> tuple[np.ndarray, np.ndarray, int]:
        owner = f"{type(self).__name__}.fit"
        if not isinstance(dataset, TrajectoryDataset):
            raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
        obs = np.asarray(dataset.observations, dtype=np.float64)
        if obs.ndim != 2:
            raise InvalidDataError(f"{owner}: the observations must be vectors (an (n, k) float array); got shape "
                                   f"{obs.shape}.")
        n_actions = self._n_actions(p["n_actions"], dataset, owner)
        actions = np.asarray(dataset.actions)
        if actions.ndim != 1 or not np.issubdtype(actions.dtype, np.integer) or actions.min() < 0 \
                or actions.max() >= n_actions:
            raise InvalidDataError(f"{owner}: the actions must be ints in [0, {n_actions}) (n_actions).")
        self._set_scale(p, obs.shape[1], owner)
        return self._scaled(obs), actions.astype(np.int64), int(n_actions)

    @staticmethod
    def _n_actions(declared: int | None, dataset: TrajectoryDataset, owner: str) -> int:
        """The public number of actions: the ``n_actions`` parameter, else the dataset's declared one."""
        n_actions = declared if declared is not None else dataset.n_actions
        if n_actions is None:
            raise param_error("n_actions", owner, "an int >= 1 (the dataset declares no n_actions)", None)
        return int(n_actions)

    def _public_dims(self, dataset: Dataset) -> tuple[int, int]:
        owner = f"{type(self).__name__}.fit"
        if not isinstance(dataset, TrajectoryDataset):
            raise param_error("dataset", owner, "a TrajectoryDataset", type(dataset).__name__)
        return int(np.shape(dataset.observations)[1]), self._n_actions(self.n_actions, dataset, owner)

    def _train(self, p: dict[str, Any], dataset: Dataset, rng: RngLike, *, clip: float | None,
               release: Release | None) -> None:
        from privrl.deep_offline import _learner  # torch: the 'deep' extra, loaded only to fit

        obs, actions, n_actions = self._inputs(p, dataset)
        rngs = child_rngs(rng, *_STREAMS)
        self.sizes_ = (obs.shape[1], *p["hidden"], n_actions)
        theta0 = MLP.init(self.sizes_, rngs["init"]).params
        privatize = None if release is None else release(theta0.size, rngs["privacy"])
        self.params_ = _learner.train(theta0, self.sizes_, obs, actions, np.asarray(dataset.episode_starts),
                                      steps=p["n_steps"], sampling_rate=p["sampling_rate"],
                                      learning_rate=p["learning_rate"], rng=rngs["batches"], clip=clip,
                                      privatize=privatize)

    def action_probabilities(self, observations: ArrayLike) -> np.ndarray:
        """``(n, A)``: ``π(· | s)`` at each observation (rows of an ``(n, k)`` array, or one ``(k,)``)."""
        obs = np.atleast_2d(np.asarray(observations, dtype=np.float64))
        logits = MLP(self.sizes_, self.params_)(self._scaled(obs))
        logits -= logits.max(1, keepdims=True)
        probs = np.exp(logits)
        return probs / probs.sum(1, keepdims=True)

    def predict(self, observations: ArrayLike) -> np.ndarray:
        """The greedy action ``argmax_a π(a | s)`` at each observation."""
        return self.action_probabilities(observations).argmax(1)


class _NonPrivate(_Learner):
    """The non-private fit of a learner: its own ``_train`` on Poisson-sampled trajectories without
    clipping or noise, and an empty ledger."""

    guarantee = None

    def fit(self, dataset: Dataset, *, rng: RngLike = None) -> Self:
        p = self._validated()
        self.privacy_ledger_ = Ledger()
        self._train(p, dataset, rng, clip=None, release=None)
        self.n_trajectories_ = int(dataset.n_episodes)
        return self


class BC(_BehaviourCloning, _NonPrivate):
    """Behaviour cloning (non-private): Adam on the summed cross-entropy of Poisson-sampled batches of
    trajectories (module docstring). Fitted: ``params_`` (flat W1, b1, ...), ``sizes_``,
    ``n_trajectories_``; ``predict``, ``action_probabilities``."""


class _Private(_Learner, PrivateEstimator):
    """The DP-SGD fit of a learner (module docstring): ``z`` calibrated to the budget over the T
    Poisson-sampled steps, each step's per-trajectory clipped gradients (bound ``clip_norm`` per
    network) released with noise ``z·sensitivity_factor·C`` through the release seam; an infinite
    budget trains as the non-private learner (no clipping, no noise)."""

    #: a step's sensitivity in units of ``clip_norm`` (√(networks) when each network is clipped apart)
    sensitivity_factor: ClassVar[float] = 1.0
    #: the planner of ``privrl plan`` and the step its rows describe (:mod:`privrl.deep_offline._utility`)
    planner: ClassVar[str] = "dp-bc"
    step_name: ClassVar[str] = "one step"

    @classmethod
    def step_networks(cls, features: int, actions: int, hidden: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
        """The networks of one released step, ``(name, P)``, from the public sizes (DP-BC: the policy)."""
        return (("", n_parameters(features, hidden, actions)),)

    def fit(self, dataset: Dataset, *, rng: RngLike = None) -> Self:
        p = self._validated()
        rng = self._fit_rng(rng)
        budget: PrivacyBudget = p["budget"]
        z = noise_multiplier(budget, p["sampling_rate"], p["n_steps"])
        self.noise_multiplier_ = z

        def release(size: int | tuple[int, int], privacy_rng: np.random.Generator) -> Privatize | None:
            rel = self._privacy(None if p["secure"] else privacy_rng, n_units=dataset.n_episodes)
            if not budget.is_private:
                return None
            self._warn_if_hopeless(dataset, z, clip=p["clip_norm"], rate=p["sampling_rate"], hidden=p["hidden"])
            return self._privatizer(rel, p, z, size)

        self._train(p, dataset, rng, clip=p["clip_norm"] if budget.is_private else None, release=release)
        return self

    def _warn_if_hopeless(self, dataset: Dataset, z: float, *, clip: float, rate: float,
                          hidden: tuple[int, ...]) -> None:
        """The noise-dominated steps' :class:`~privrl.errors.UtilityWarning` from the planner's model and
        verdict (:mod:`privrl.deep_offline._utility`): public quantities only (n, q, T through z, C, the
        network sizes). Called from :meth:`_train`'s release (fit -> _train -> release -> here)."""
        n = int(dataset.n_episodes)
        rows = step_rows(z, self.sensitivity_factor, clip, rate, n,
                         self.step_networks(*self._public_dims(dataset), hidden), self.step_name)
        warn_if_hopeless(type(self).__name__, self.planner, rows, n, rate, stacklevel=5)

    def _privatizer(self, rel: Releaser, p: dict[str, Any], z: float, size: int | tuple[int, int]) -> Privatize:
        """The noisy release of each step (``size`` coordinates): the T steps' one
        :class:`SubsampledGaussianSteps` of sensitivity ``sensitivity_factor · C`` and multiplier ``z``."""
        assert isinstance(size, int), size   # one block: the learners' _train hand their parameter count
        return SubsampledGaussianSteps(rel, clip=self.sensitivity_factor * p["clip_norm"], noise_multiplier=z,
                                       sampling_rate=p["sampling_rate"], steps=p["n_steps"], size=size).release


class DPBC(_BehaviourCloning, _Private):
    """DP behaviour cloning: (ε, δ)-DP per trajectory under add/remove-one neighbours by DP-SGD with
    per-trajectory clipping and Poisson sampling of trajectories (module docstring). An infinite budget
    is :class:`BC` exactly (no clipping, no noise). Fitted: ``params_``, ``sizes_`` and ``noise_multiplier_``
    (``z``, public: it depends on (ε, δ, q, T) only) and ``privacy_ledger_`` — not the number of
    trajectories, which add/remove neighbours differ in."""

    guarantee = "(epsilon, delta)-DP"
    budget: PrivacyBudget = param(like=BUDGET, check=_check_budget)
    calibration: str = param(like=CALIBRATION, default="tight", options=("tight", "sound"), bad=("paper",))
    clip_norm: float = param("ℓ2 bound C on one trajectory's total gradient in a step (its sensitivity)",
                             default=1.0, low=0.0, closed="neither")

