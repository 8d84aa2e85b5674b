"""TD3+BC for continuous actions (Fujimoto & Gu, NeurIPS 2021, "A minimalist approach to offline reinforcement
learning") on logged trajectories of continuous states, and its DP-SGD counterpart with one trajectory as the
privacy unit.

:class:`TD3BC` is TD3 (twin critics with the clipped double-Q target, target policy smoothing, delayed actor
and target updates) whose actor maximises eq. (3), ``E[λ Q(s, π(s)) − (π(s) − a)²]`` with
``λ = α / mean |Q|`` (:mod:`privrl.deep_offline._td3bc_learner` has the losses). Step ``t`` of ``T`` draws one
batch of trajectories by Poisson sampling (each with probability ``q``); a trajectory's losses are sums over
its transitions. The critic moves every step, the actor and the targets every ``d``-th (``policy_delay``).

:class:`DPTD3BC` is the same learner made (ε, δ)-DP per trajectory (add/remove one trajectory):

* each sampled trajectory's total gradient of the critic's loss (both Q-networks: one parameter vector) and,
  on an actor step, of the actor's loss are clipped to ℓ2 norm ``C`` (``clip_norm``) each. A trajectory's
  contribution to a critic-only step has norm at most ``C``, to an actor step (the concatenation of its two
  clipped gradients) at most ``√2 C``: the **sensitivity** is ``Δ_t = C`` or ``√2 C``;
* the released step is ``Σ_u clip(g_u) + N(0, (z Δ_t)² I)``: the noise std follows each step's sensitivity,
  so every step — critic-only or not — is the Poisson-subsampled Gaussian of multiplier ``z``;
* accounting: the fit is ``T`` such steps, exactly ``dpsgd_event(z, q, T)`` (the ledger holds one event per
  kind of step, ``T − ⌊T/d⌋`` critic-only and ``⌊T/d⌋`` actor steps: :class:`privrl.deep.dpsgd.
  SubsampledGaussianStepKinds`; their composition is the ``T``-fold one), and ``z`` is DP-BC's calibration
  (:func:`privrl.deep_offline.estimators.noise_multiplier`, the least ``z`` whose ``T`` steps meet (ε, δ));
* structure and post-processing (no privacy cost): the targets (Polyak averages of released parameters), the
  target policy smoothing (noise drawn from the fit's batch stream, independent of the data, inside the TD
  target), the delayed actor update (a public schedule), the TD target ``y`` and the Adam moments.

Data-dependent quantities outside the noisy steps — none:

* observation normalisation: TD3+BC standardises the states by the dataset's mean and standard deviation;
  here the scaling uses the public bounds ``obs_low``/``obs_high`` (or none) — no statistic of the data;
* ``λ = α / mean |Q|``: data-dependent, computed *inside* each trajectory's clipped gradient from that
  trajectory's own transitions and the step's released critic and actor (the paper averages over the batch,
  which would couple the sampled trajectories' gradients and void the per-trajectory bound): part of the actor
  loss, covered by the clipping;
* rewards are not normalised (no return statistic); ``T`` is fixed (no early stopping, no model selection, the
  last iterate); the noisy sum is not divided by the batch size (Adam is scale-invariant); the number of
  trajectories is not released; the action bound ``max_action`` is public and validated (an action outside
  it is an error).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import param_error
from privrl.base import BUDGET, CALIBRATION, param
from privrl.deep.dpsgd import SubsampledGaussianStepKinds
from privrl.deep.networks import MLP
from privrl.deep_offline._utility import n_parameters
from privrl.deep_offline.continuous_data import ContinuousTransitions
from privrl.deep_offline.estimators import (
    LEARNING_RATE,
    N_STEPS,
    OBS_HIGH,
    OBS_LOW,
    Dataset,
    Privatize,
    Release,
    _check_budget,
    _Learner,
    _NonPrivate,
    _Private,
)
from privrl.errors import InvalidDataError
from privrl.privacy import PrivacyBudget

if TYPE_CHECKING:  # annotations only
    from privrl.deep_offline._td3bc_learner import TD3BCConfig, Transitions
    from privrl.privacy.release import Releaser

__all__ = ["TD3BC", "DPTD3BC"]

_STREAMS = ("init", "batches", "privacy")
#: networks an actor step releases (the critic — both Q-networks — and the actor): its sensitivity is √2 C
N_NETWORKS = 2


class _TD3PlusBC(_Learner):
    """What TD3+BC and DP-TD3+BC share: the training parameters, TD3's and eq. (3)'s constants, the data
    checks (continuous actions within the public bound), the public observation scaling and the actor."""

    n_steps: int = param(like=N_STEPS, default=1000)
    learning_rate: float = param(like=LEARNING_RATE, default=1e-3)
    obs_low: np.ndarray | None = OBS_LOW
    obs_high: np.ndarray | None = OBS_HIGH
    max_action: float = param("public bound a_max on every action coordinate (the actor's range; an action "
                              "outside it is an error)", default=1.0, low=0.0, closed="neither")
    gamma: float = param("discount factor γ of the TD target", default=0.99, low=0.0, high=1.0, closed="left")
    alpha: float = param("α of eq. (3): the actor maximises λ Q − (π − a)² with λ = α / mean |Q|", default=2.5,
                         low=0.0, closed="neither")
    polyak: float = param("Polyak rate of the target networks (moved on each actor step)", default=0.05, low=0.0,
                          high=1.0, closed="right")
    policy_noise: float = param("std σ of the target policy smoothing noise, in units of max_action", default=0.2,
                                low=0.0)
    noise_clip: float = param("clip c of the target policy smoothing noise, in units of max_action", default=0.5,
                              low=0.0)
    policy_delay: int = param("d: the actor and the targets move every d-th step (TD3's delayed update)", default=2,
                              kind="int", low=1)

    def _transitions(self, p: dict[str, Any], data: Dataset) -> tuple[TD3BCConfig, Transitions]:
        from privrl.deep_offline import _td3bc_learner  # torch: the 'deep' extra, loaded only to fit

        owner = f"{type(self).__name__}.fit"
        if not isinstance(data, ContinuousTransitions):
            raise param_error("dataset", owner, "a ContinuousTransitions (continuous actions)", type(data).__name__)
        obs, actions = self._checked(p["max_action"], data, owner)
        self._set_scale(p, obs.shape[1], owner)
        k, d, hidden, a_max = obs.shape[1], actions.shape[1], p["hidden"], p["max_action"]
        cfg = _td3bc_learner.TD3BCConfig(gamma=p["gamma"], polyak=p["polyak"], alpha=p["alpha"], max_action=a_max,
                                         smoothing_std=p["policy_noise"] * a_max,
                                         smoothing_clip=p["noise_clip"] * a_max, policy_delay=p["policy_delay"],
                                         q_sizes=(k + d, *hidden, 1), actor_sizes=(k, *hidden, d))
        out = _td3bc_learner.Transitions(
            self._scaled(obs), actions, np.asarray(data.rewards, dtype=np.float64),
            self._scaled(np.asarray(data.next_observations, dtype=np.float64)),
            1.0 - np.asarray(data.terminals, dtype=np.float64), np.asarray(data.episode_starts))
        return cfg, out

    @staticmethod
    def _checked(max_action: float, data: ContinuousTransitions, owner: str) -> tuple[np.ndarray, np.ndarray]:
        obs, actions = np.asarray(data.observations, dtype=np.float64), np.asarray(data.actions, dtype=np.float64)
        if obs.ndim != 2 or actions.ndim != 2 or len(actions) != len(obs):
            raise InvalidDataError(f"{owner}: the observations and actions must be (n, k) and (n, d) float arrays; "
                                   f"got shapes {obs.shape} and {actions.shape}.")
        if not np.all(np.abs(actions) <= max_action):
            raise InvalidDataError(f"{owner}: every action must lie in [-max_action, max_action] = "
                                   f"[{-max_action:g}, {max_action:g}]; the largest |action| is "
                                   f"{float(np.nanmax(np.abs(actions))):g}.")
        return obs, actions

    def _train(self, p: dict[str, Any], data: Dataset, rng: RngLike, *, clip: float | None,
               release: Release | None) -> None:
        from privrl.deep_offline import _td3bc_learner

        cfg, transitions = self._transitions(p, data)
        rngs = child_rngs(rng, *_STREAMS)
        critic0 = np.concatenate([MLP.init(cfg.q_sizes, rngs["init"]).params for _ in range(2)])
        actor0 = MLP.init(cfg.actor_sizes, rngs["init"]).params
        privatize = None if release is None else release(cfg.blocks, rngs["privacy"])
        out = _td3bc_learner.train(critic0, actor0, transitions, cfg, steps=p["n_steps"],
                                   sampling_rate=p["sampling_rate"], learning_rate=p["learning_rate"],
                                   rng=rngs["batches"], clip=clip, privatize=privatize)
        self.q_sizes_, self.sizes_ = cfg.q_sizes, cfg.actor_sizes
        self.q_params_, self.params_ = out["critic"], out["actor"]
        self.target_q_params_, self.target_params_ = out["critic_target"], out["actor_target"]
        self._max_action = cfg.max_action

    def predict(self, observations: ArrayLike) -> np.ndarray:
        """``(n, d)``: the actor's action ``π_φ(s) = a_max tanh(f_φ(s))`` at each observation."""
        obs = np.atleast_2d(np.asarray(observations, dtype=np.float64))
        return self._max_action * np.tanh(MLP(self.sizes_, self.params_)(self._scaled(obs)))

    def q_values(self, observations: ArrayLike, actions: ArrayLike) -> np.ndarray:
        """``(n, 2)``: the twin critics ``Q_θ1(s, a)``, ``Q_θ2(s, a)`` at each observation and action."""
        obs = self._scaled(np.atleast_2d(np.asarray(observations, dtype=np.float64)))
        x = np.concatenate([obs, np.asarray(actions, dtype=np.float64).reshape(len(obs), -1)], axis=1)
        half = self.q_params_.size // 2
        return np.stack([MLP(self.q_sizes_, w)(x)[:, 0] for w in (self.q_params_[:half], self.q_params_[half:])], 1)


class TD3BC(_TD3PlusBC, _NonPrivate):
    """TD3+BC for continuous actions (non-private; module docstring). Fitted: ``params_`` and ``sizes_`` (the
    actor), ``q_params_`` (both Q-networks) and ``q_sizes_`` (one's layers), ``target_params_``,
    ``target_q_params_``, ``n_trajectories_``; ``predict`` (the actor's action), ``q_values``."""


class DPTD3BC(_TD3PlusBC, _Private):
    """DP TD3+BC: (ε, δ)-DP per trajectory under add/remove-one neighbours — the critic's and (on an actor step)
    the actor's gradients of each Poisson-sampled trajectory clipped to ``C`` each, released with Gaussian noise
    of std ``z C`` (critic-only step) or ``z √2 C`` (actor step) (module docstring). An infinite budget is
    :class:`TD3BC` exactly. Fitted: as :class:`TD3BC` but not the number of trajectories;
    ``noise_multiplier_`` (``z``, public) and ``privacy_ledger_``."""

    guarantee = "(epsilon, delta)-DP"
    budget: PrivacyBudget = param(like=BUDGET, check=_check_budget)
    calibration: str = param(like=CALIBRATION, default="tight", options=("tight", "sound"), bad=("paper",))
    clip_norm: float = param("ℓ2 bound C on one trajectory's total gradient of each network's loss in a step "
                             "(sensitivity C on a critic-only step, √2 C on an actor step)", default=1.0, low=0.0,
                             closed="neither")

    #: an actor step's sensitivity in units of ``clip_norm`` (a critic-only step's is 1)
    sensitivity_factor: ClassVar[float] = math.sqrt(N_NETWORKS)
    planner: ClassVar[str] = "dp-td3bc"
    step_name: ClassVar[str] = "one actor step"

    @classmethod
    def step_networks(cls, features: int, actions: int, hidden: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
        """An actor step's networks: the critic (both Q-networks on ``(s, a)``) and the actor (``actions``: the
        action dimension), each with noise ``z √2 C`` per coordinate."""
        return (("critic", 2 * n_parameters(features + actions, hidden, 1)),
                ("actor", n_parameters(features, hidden, actions)))

    def _public_dims(self, dataset: Dataset) -> tuple[int, int]:
        return int(np.shape(dataset.observations)[1]), int(np.shape(dataset.actions)[1])

    def _privatizer(self, rel: Releaser, p: dict[str, Any], z: float, size: int | tuple[int, int]) -> Privatize:
        """Critic-only steps release the critic's ``P_Q`` coordinates with sensitivity ``C``, actor steps the
        critic's and the actor's ``P_Q + P_π`` with ``√2 C``; both at multiplier ``z``."""
        from privrl.deep_offline._td3bc_learner import actor_steps

        assert isinstance(size, tuple), size   # _train hands the critic's and the actor's parameter counts
        p_critic, p_actor = size
        clip, steps = p["clip_norm"], p["n_steps"]
        n_actor = actor_steps(steps, p["policy_delay"])
        kinds = SubsampledGaussianStepKinds(rel, noise_multiplier=z, sampling_rate=p["sampling_rate"], kinds={
            "critic": (steps - n_actor, p_critic, clip),
            "actor": (n_actor, p_critic + p_actor, self.sensitivity_factor * clip)})
        return lambda total, with_actor: kinds.release(total, "actor" if with_actor else "critic")
