"""Audit targets ``dp-bc-step``, ``dp-iql-step`` and ``dp-td3bc-step``: DP-BC's, DP-IQL's and DP-TD3+BC's
clipped noisy gradient steps on two neighbouring datasets.

A :class:`~privrl.deep_offline.DPBC` of one step at sampling rate 1 (``T = 1``, ``q = 1``: the step is
then a plain Gaussian mechanism, so the audit's neighbours are worst case without a sampling lottery)
is fitted at the audited budget on ``D`` (a few short CartPole trajectories); the claim is its
``privacy_spent(δ)``. The samplers compute the step's clipped sum of per-trajectory gradients at the
fit's initial parameters on ``D`` and on ``D'`` = ``D`` plus one trajectory (whose total gradient is
larger than ``C``, so it is clipped to norm exactly ``C`` = the sensitivity), with the estimator's own
code (:func:`privrl.deep_offline._learner.unit_gradients`, :func:`privrl.deep.dpsgd.clipped_sum`), and
release it through :class:`privrl.deep.dpsgd.SubsampledGaussianSteps` with the fit's multiplier.

``dp-iql-step`` is the same for :class:`~privrl.deep_offline.DPIQL`: the step's sums are
:func:`privrl.deep_offline._iql_learner.clipped_step` of the Q, V and policy gradients of each trajectory
(each network's clipped to ``C``; the fifth trajectory's three gradients all exceed ``C``, so its
contribution has norm exactly ``√3 C``, the sensitivity the estimator states), released with the noise
std ``z · √3 C`` the estimator uses.

``dp-td3bc-step`` is the same for :class:`~privrl.deep_offline.DPTD3BC`'s actor step (``policy_delay`` = 1, so
the one step updates the critic and the actor): :func:`privrl.deep_offline._td3bc_learner.clipped_step` of the
critic's and the actor's gradients of each of 5 short Pendulum trajectories (the fifth's two gradients both
exceed ``C``: its contribution has norm exactly ``√2 C``), released with the noise std ``z · √2 C``.

Negative controls (same claim): ``noise-div-10`` and ``noise-div-2`` — the noise std divided by 10 and by
2 (``ScaledNoise``): a step that adds less noise than its ledger says.

Not audited here: the subsampling amplification over ``T > 1`` steps (dp-accounting's PLD accounting
of the Poisson-subsampled Gaussian, checked against dp-accounting directly in the tests).
"""

from __future__ import annotations

import functools
import warnings
from typing import TypeVar

import numpy as np

from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.registry import AuditPair, AuditTarget, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10
from privrl.data import TrajectoryDataset
from privrl.deep.dpsgd import SubsampledGaussianSteps, clipped_sum
from privrl.deep.networks import MLP
from privrl.deep_offline.continuous_data import ContinuousTransitions, pendulum_dataset
from privrl.deep_offline.datasets import cartpole_dataset
from privrl.deep_offline.estimators import DPBC
from privrl.deep_offline.iql import DPIQL
from privrl.deep_offline.td3bc import DPTD3BC
from privrl.privacy import Ledger, NumpyNoise, PrivacyBudget, Releaser, ScaledNoise
from privrl.privacy.noise import NoiseSource

__all__ = ["NOISE_DIV_2", "step_sums", "iql_step_sums", "td3bc_step_sums"]

Fitted = TypeVar("Fitted", DPBC, DPIQL, DPTD3BC)

HIDDEN = (4,)
CLIP = 1.0
#: DP-IQL's audited clip: small enough that every network's gradient of the added trajectory exceeds it
IQL_CLIP = 0.01
#: DP-TD3+BC's audited clip and its one-step settings (an actor step: the critic and the actor released)
TD3BC_CLIP = 0.01
#: the actor bound of the audited Pendulum data
TD3BC_MAX_ACTION = 2.0


@functools.cache
def step_sums() -> tuple[np.ndarray, np.ndarray]:
    """The clipped sums of one step on ``D`` (4 trajectories) and on ``D'`` (``D`` and a fifth)."""
    from privrl.deep_offline import _learner  # torch: the 'deep' extra

    data = cartpole_dataset(5, max_steps=20, rng=0)
    obs, actions = np.asarray(data.observations, float), np.asarray(data.actions, np.int64)
    sizes = (obs.shape[1], *HIDDEN, 2)
    theta = MLP.init(sizes, np.random.default_rng(0)).params
    starts = data.episode_starts
    rows = [np.arange(starts[u], starts[u + 1]) for u in range(data.n_episodes)]
    grads = _learner.unit_gradients(theta, rows, obs, actions, sizes)
    return clipped_sum(grads[:-1], CLIP), clipped_sum(grads, CLIP)


@functools.cache
def iql_step_sums() -> tuple[np.ndarray, np.ndarray]:
    """DP-IQL's step sums (Q, V and π blocks) on ``D`` (4 trajectories) and on ``D'`` (``D`` and a fifth),
    at the fit's initial parameters with the target equal to the Q-network."""
    from privrl.deep_offline import _iql_learner  # torch: the 'deep' extra

    est = DPIQL(budget=PrivacyBudget.non_private(), hidden=HIDDEN)
    cfg, data = est._transitions(est._validated(), cartpole_dataset(5, max_steps=20, rng=0))
    theta = np.concatenate([MLP.init(s, np.random.default_rng(i)).params
                            for i, s in enumerate((cfg.q_sizes, cfg.v_sizes, cfg.pi_sizes))])
    grads = _iql_learner.unit_gradients(theta, _iql_learner.split(theta, cfg)[0], data.rows(range(5)), data, cfg)
    return (_iql_learner.clipped_step(tuple(g[:-1] for g in grads), IQL_CLIP),
            _iql_learner.clipped_step(grads, IQL_CLIP))


@functools.cache
def td3bc_step_sums() -> tuple[np.ndarray, np.ndarray]:
    """DP-TD3+BC's actor-step sums (critic and actor blocks) on ``D`` (4 Pendulum trajectories) and on ``D'``
    (``D`` and a fifth), at initial parameters with the targets equal to them."""
    from privrl.deep_offline import _td3bc_learner  # torch: the 'deep' extra

    est = DPTD3BC(budget=PrivacyBudget.non_private(), hidden=HIDDEN, policy_delay=1, max_action=TD3BC_MAX_ACTION)
    cfg, data = est._transitions(est._validated(), pendulum_dataset(5, max_steps=20, rng=0))
    critic = np.concatenate([MLP.init(cfg.q_sizes, np.random.default_rng(i)).params for i in range(2)])
    actor = MLP.init(cfg.actor_sizes, np.random.default_rng(2)).params
    eps = np.zeros((5, 20, 1))   # the target smoothing draws: any value; the sensitivity holds for each
    grads = _td3bc_learner.unit_gradients(critic, actor, (critic, actor), data.rows(range(5)), data, eps, cfg,
                                          with_actor=True)
    return (_td3bc_learner.clipped_step(tuple(g[:-1] for g in grads), TD3BC_CLIP),
            _td3bc_learner.clipped_step(grads, TD3BC_CLIP))


def _pair(est: DPBC | DPIQL | DPTD3BC, sums: tuple[np.ndarray, np.ndarray], sensitivity: float, delta: float,
          broken: str | None) -> AuditPair:
    """The fitted one-step estimator's claim against its step released on the two sums with its
    multiplier and stated sensitivity (the noise scaled down for a broken variant)."""
    z = est.noise_multiplier_

    def on(total: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            noise: NoiseSource = NumpyNoise(rng)
            if broken is not None:
                noise = ScaledNoise(noise, 1.0 / (NOISE_DIVISOR if broken == "noise-div-10" else 2.0))
            steps = SubsampledGaussianSteps(Releaser(noise, Ledger()), clip=sensitivity, noise_multiplier=z,
                                            sampling_rate=1.0, steps=1, size=n * total.size)
            return steps.release(np.tile(total, n)).reshape(n, total.size)
        return sample

    return AuditPair(on(sums[0]), on(sums[1]), est.privacy_spent(delta), delta)


def _one_step(cls: type[Fitted], clip: float, epsilon: float, delta: float) -> Fitted:
    return _fitted(cls(budget=PrivacyBudget(epsilon=epsilon, delta=delta), n_steps=1, sampling_rate=1.0, hidden=HIDDEN,
                       clip_norm=clip), cartpole_dataset(4, max_steps=20, rng=0))


def _fitted(est: Fitted, data: TrajectoryDataset | ContinuousTransitions) -> Fitted:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # δ ≥ 1/n on the tiny data: the audit checks the step, not δ
        return est.fit(data, rng=0)


def _build(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(_one_step(DPBC, CLIP, epsilon, delta), step_sums(), CLIP, delta, broken)


def _build_iql(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(_one_step(DPIQL, IQL_CLIP, epsilon, delta), iql_step_sums(), DPIQL.sensitivity_factor * IQL_CLIP,
                 delta, broken)


def _build_td3bc(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    est = _fitted(DPTD3BC(budget=PrivacyBudget(epsilon=epsilon, delta=delta), n_steps=1, sampling_rate=1.0,
                          hidden=HIDDEN, clip_norm=TD3BC_CLIP, policy_delay=1, max_action=TD3BC_MAX_ACTION),
                  pendulum_dataset(4, max_steps=20, rng=0))
    return _pair(est, td3bc_step_sums(), DPTD3BC.sensitivity_factor * TD3BC_CLIP, delta, broken)


register_target(AuditTarget(
    name="dp-bc-step", description="DP-BC's clipped noisy gradient step (one trajectory added), q = 1, T = 1",
    privacy_unit="one trajectory (add/remove)", build=_build, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
register_target(AuditTarget(
    name="dp-iql-step", description="DP-IQL's clipped noisy step on Q, V and the policy (one trajectory added), "
                                    "q = 1, T = 1",
    privacy_unit="one trajectory (add/remove)", build=_build_iql, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
register_target(AuditTarget(
    name="dp-td3bc-step", description="DP-TD3+BC's clipped noisy actor step on the critic and the actor (one "
                                      "trajectory added), q = 1, T = 1",
    privacy_unit="one trajectory (add/remove)", build=_build_td3bc, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
