"""Audit target ``dp-bc-step``: DP-BC's clipped noisy gradient step on two neighbouring datasets.

A :class:`~privrl.deep_offline.DPBC` of one step at sampling rate 1 (``T = 1``, ``q = 1``: the step is
then a plain Gaussian mechanism, so the audit's neighbours are worst case without a sampling lottery)
is fitted at the audited budget on ``D`` (a few short CartPole trajectories); the claim is its
``privacy_spent(δ)``. The samplers compute the step's clipped sum of per-trajectory gradients at the
fit's initial parameters on ``D`` and on ``D'`` = ``D`` plus one trajectory (whose total gradient is
larger than ``C``, so it is clipped to norm exactly ``C`` = the sensitivity), with the estimator's own
code (:func:`privrl.deep_offline._learner.unit_gradients`, :func:`privrl.deep.dpsgd.clipped_sum`), and
release it through :class:`privrl.deep.dpsgd.SubsampledGaussianSteps` with the fit's multiplier.

Negative controls (same claim): ``noise-div-10`` and ``noise-div-2`` — the noise std divided by 10 and by
2 (``ScaledNoise``): a step that adds less noise than its ledger says.

Not audited here: the subsampling amplification over ``T > 1`` steps (dp-accounting's PLD accounting
of the Poisson-subsampled Gaussian, checked against dp-accounting directly in the tests).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.registry import AuditPair, AuditTarget, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10
from privrl.deep.dpsgd import SubsampledGaussianSteps, clipped_sum
from privrl.deep.networks import MLP
from privrl.deep_offline.datasets import cartpole_dataset
from privrl.deep_offline.estimators import DPBC
from privrl.privacy import Ledger, NumpyNoise, PrivacyBudget, Releaser, ScaledNoise
from privrl.privacy.noise import NoiseSource

__all__ = ["NOISE_DIV_2", "step_sums"]

HIDDEN = (4,)
CLIP = 1.0


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


def _build(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    budget = PrivacyBudget(epsilon=epsilon, delta=delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # δ ≥ 1/n on the tiny data: the audit checks the step, not δ
        est = DPBC(budget=budget, n_steps=1, sampling_rate=1.0, hidden=HIDDEN, clip_norm=CLIP).fit(
            cartpole_dataset(4, max_steps=20, rng=0), rng=0)
    claimed = est.privacy_spent(delta)
    z = est.noise_multiplier_

    def on(total: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            noise: NoiseSource = NumpyNoise(rng)
            if broken is not None:
                noise = ScaledNoise(noise, 1.0 / (NOISE_DIVISOR if broken == "noise-div-10" else 2.0))
            steps = SubsampledGaussianSteps(Releaser(noise, Ledger()), clip=CLIP, noise_multiplier=z,
                                            sampling_rate=1.0, steps=1, size=n * total.size)
            return steps.release(np.tile(total, n)).reshape(n, total.size)
        return sample

    a, b = step_sums()
    return AuditPair(on(a), on(b), claimed, delta)


register_target(AuditTarget(
    name="dp-bc-step", description="DP-BC's clipped noisy gradient step (one trajectory added), q = 1, T = 1",
    privacy_unit="one trajectory (add/remove)", build=_build, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
