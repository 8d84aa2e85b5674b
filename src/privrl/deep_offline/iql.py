"""Implicit Q-learning for discrete actions (Kostrikov, Nair & Levine, ICLR 2022) on logged trajectories of
continuous states, and its DP-SGD counterpart with one trajectory as the privacy unit.

:class:`IQL` trains three ReLU MLPs jointly (the paper's Algorithm 1, on discrete actions): ``V_ψ`` by the
expectile regression of eq. (5) on the target Q-network, ``Q_θ`` by the TD regression of eq. (6) on
``V_ψ(s')`` (the max over actions is never taken: no out-of-distribution action is queried), and the
policy ``π_φ`` by the advantage-weighted regression of eq. (7), ``exp(β (Q_θ̂ − V_ψ))`` capped at 100; the
target ``Q_θ̂`` is the Polyak average ``θ̂ ← (1 − α) θ̂ + α θ``. Step ``t`` of ``T`` draws one batch of
trajectories by Poisson sampling (each with probability ``q``) for all three losses; a trajectory's losses
are sums over its transitions (:mod:`privrl.deep_offline._iql_learner`). The three gradients are taken at
the step's start parameters and applied together with Adam (Algorithm 1 updates V, then Q and π with
the new V; here Q and π see the V of the step's start — the one-step lag is what makes the step one release).

:class:`DPIQL` is the same learner made (ε, δ)-DP per trajectory (add/remove one trajectory):

* each sampled trajectory's total gradient of *each* network's loss is clipped to ℓ2 norm ``C``
  (``clip_norm``): its contribution to the step, the concatenation ``(clip(g^Q_u), clip(g^V_u),
  clip(g^π_u))``, has norm at most ``√3 C``, so adding or removing it moves the step's sum by at most
  **Δ = √3 C**; the released step is ``Σ_u (clip(g^Q_u), clip(g^V_u), clip(g^π_u)) + N(0, (z Δ)² I)``;
* accounting: every network update that touches data is in that one release per step, so the fit is
  ``T`` Poisson-subsampled Gaussian steps of multiplier ``z`` — DP-BC's event exactly
  (:class:`privrl.deep.dpsgd.SubsampledGaussianSteps`, one ledger event, PLD accountant), with ``z``
  from :func:`privrl.deep_offline.estimators.noise_multiplier`. Equivalently, the three blocks are three
  Gaussian mechanisms on the same sampled batch, each of multiplier ``√3 z`` (std ``z √3 C`` on
  sensitivity ``C``): their composition is the Gaussian of ``μ² = 3 / (3 z²) = 1/z²`` (Dong, Roth & Su
  2019, adaptive composition of Gaussians is exact), which the Poisson sampling of the shared batch then
  amplifies once. Sampling three independent batches instead (three streams of ``T`` steps at ``q``)
  would compose ``3T`` subsampled events: ``docs/deep_offline.md`` compares the two;
* the target network ``θ̂`` is a Polyak average of released parameters, the value target
  ``r + γ (1 − d) V_ψ(s')``, the advantage weights and the Adam moments are functions of released
  parameters and of the sampled transitions *inside* the clipped sums: post-processing.

Data-dependent quantities outside the noisy steps — none: the observation scaling uses the public bounds
``obs_low``/``obs_high`` (or none); rewards are not normalised (no return statistic is computed); there is
no early stopping and no model selection (``T`` fixed in advance, the last iterate returned); the noisy sum
is not divided by the batch size (Adam is scale-invariant); the number of trajectories is not released; the
number of actions is public. The initialisation and the batch sampling come from the fit's ``rng``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl.base import BUDGET, CALIBRATION, param
from privrl.deep.networks import MLP
from privrl.deep_offline._utility import n_parameters
from privrl.deep_offline.estimators import (
    N_STEPS,
    Dataset,
    Release,
    _BehaviourCloning,
    _check_budget,
    _NonPrivate,
    _Private,
)
from privrl.privacy import PrivacyBudget

__all__ = ["IQL", "DPIQL"]

_STREAMS = ("init", "batches", "privacy")
#: networks whose gradients every step releases (Q, V, π): the step's sensitivity is √3 C
N_NETWORKS = 3


class _ImplicitQLearning(_BehaviourCloning):
    """What IQL and DP-IQL share: BC's training parameters, data checks, public observation scaling and
    policy head (``action_probabilities``, ``predict`` read the extracted policy π_φ), and IQL's own
    constants. DP-IQL lists :class:`PrivateEstimator` after this class, so that its budget comes first."""

    # the value learner needs more steps than BC (the values grow towards r / (1 - γ) one step at a time)
    n_steps: int = param(like=N_STEPS, default=500)
    gamma: float = param("discount factor γ of the TD target, eq. (6)", default=0.95, low=0.0, high=1.0,
                         closed="left")
    expectile: float = param("expectile τ of the value loss, eq. (5) (0.5: the mean; towards 1: the max)",
                             default=0.7, low=0.5, high=1.0, closed="left")
    temperature: float = param("inverse temperature β of the advantage weights exp(β A), eq. (7)", default=3.0,
                               low=0.0)
    polyak: float = param("Polyak rate α of the target Q-network, θ̂ ← (1 − α) θ̂ + α θ", default=0.05, low=0.0,
                          high=1.0, closed="right")

    def _transitions(self, p: dict[str, Any], dataset: Dataset) -> tuple[Any, Any]:
        from privrl.deep_offline import _iql_learner  # torch: the 'deep' extra, loaded only to fit

        obs, actions, n_actions = self._inputs(p, dataset)
        k, hidden = obs.shape[1], p["hidden"]
        cfg = _iql_learner.IQLConfig(gamma=p["gamma"], expectile=p["expectile"], temperature=p["temperature"],
                                     polyak=p["polyak"], q_sizes=(k, *hidden, n_actions), v_sizes=(k, *hidden, 1),
                                     pi_sizes=(k, *hidden, n_actions))
        terminals = dataset.terminals
        not_done = np.ones(len(actions)) if terminals is None else 1.0 - np.asarray(terminals, dtype=np.float64)
        data = _iql_learner.Transitions(obs, actions, np.asarray(dataset.rewards, dtype=np.float64),
                                        self._scaled(np.asarray(dataset.next_observations, dtype=np.float64)),
                                        not_done, np.asarray(dataset.episode_starts))
        return cfg, data

    def _train(self, p: dict[str, Any], dataset: Dataset, rng: RngLike, *, clip: float | None,
               release: Release | None) -> None:
        from privrl.deep_offline import _iql_learner

        cfg, data = self._transitions(p, dataset)
        rngs = child_rngs(rng, *_STREAMS)
        theta0 = np.concatenate([MLP.init(s, rngs["init"]).params for s in (cfg.q_sizes, cfg.v_sizes, cfg.pi_sizes)])
        privatize = None if release is None else release(theta0.size, rngs["privacy"])
        theta, target = _iql_learner.train(theta0, data, cfg, steps=p["n_steps"], sampling_rate=p["sampling_rate"],
                                           learning_rate=p["learning_rate"], rng=rngs["batches"], clip=clip,
                                           privatize=privatize)
        q, v, pi = _iql_learner.split(theta, cfg)
        self.q_sizes_, self.v_sizes_, self.sizes_ = cfg.q_sizes, cfg.v_sizes, cfg.pi_sizes
        self.q_params_, self.v_params_, self.params_ = q.copy(), v.copy(), pi.copy()
        self.target_params_ = target

    def q_values(self, observations: ArrayLike) -> np.ndarray:
        """``(n, A)``: the learned ``Q_θ(s, ·)`` at each observation."""
        obs = np.atleast_2d(np.asarray(observations, dtype=np.float64))
        return MLP(self.q_sizes_, self.q_params_)(self._scaled(obs))

    def values(self, observations: ArrayLike) -> np.ndarray:
        """``(n,)``: the learned ``V_ψ(s)`` (an upper expectile of ``Q_θ̂(s, a)`` over the data's actions)."""
        obs = np.atleast_2d(np.asarray(observations, dtype=np.float64))
        return MLP(self.v_sizes_, self.v_params_)(self._scaled(obs))[:, 0]


class IQL(_ImplicitQLearning, _NonPrivate):
    """Implicit Q-learning for discrete actions (non-private; module docstring). Fitted: ``params_`` and
    ``sizes_`` (the policy π_φ), ``q_params_``, ``q_sizes_``, ``target_params_``, ``v_params_``,
    ``v_sizes_``, ``n_trajectories_``; ``predict`` (greedy in π_φ), ``action_probabilities``, ``q_values``,
    ``values``."""



class DPIQL(_ImplicitQLearning, _Private):
    """DP implicit Q-learning: (ε, δ)-DP per trajectory under add/remove-one neighbours — the Q, V and
    policy gradients of each Poisson-sampled trajectory clipped to ``C`` each and released together with
    Gaussian noise of std ``z √3 C`` (module docstring). An infinite budget is :class:`IQL` exactly.
    Fitted: as :class:`IQL` but not the number of trajectories; ``noise_multiplier_`` (``z``, public) and
    ``privacy_ledger_``."""

    guarantee = "(epsilon, delta)-DP"
    budget: PrivacyBudget = param(like=BUDGET, check=_check_budget)
    calibration: str = param(like=CALIBRATION, default="tight", options=("tight", "sound"), bad=("paper",))
    clip_norm: float = param("ℓ2 bound C on one trajectory's total gradient of each network's loss in a step "
                             "(the step's sensitivity is √3 C)", default=1.0, low=0.0, closed="neither")

    sensitivity_factor: ClassVar[float] = math.sqrt(N_NETWORKS)
    planner: ClassVar[str] = "dp-iql"

    @classmethod
    def step_networks(cls, features: int, actions: int, hidden: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
        """Q, V and the policy, each released with noise ``z √3 C`` per coordinate."""
        return (("Q", n_parameters(features, hidden, actions)), ("V", n_parameters(features, hidden, 1)),
                ("policy", n_parameters(features, hidden, actions)))
