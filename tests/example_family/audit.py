"""Audit target ``example-mean``: the release of :class:`PrivateMeanReturn` on two neighbours.

D: 10 one-step episodes of return 0; D' replaces one by an episode of return 1 (= the bound), so the
means differ by exactly the sensitivity 1/10. The claim is ``privacy_spent(δ)`` of the estimator
fitted on D; the samplers draw the release through a Releaser with the estimator's σ. The negative
control divides the noise by 10 (``ScaledNoise``) under the same claim.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.registry import AuditPair, AuditTarget, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_10
from privrl.privacy import Ledger, NoiseSource, NumpyNoise, PrivacyBudget, Releaser, ScaledNoise

from .estimators import PrivateMeanReturn, noise_std
from .experiments import one_step_episodes

N = 10


def _build(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    est = PrivateMeanReturn(budget=PrivacyBudget(epsilon=epsilon, delta=delta))
    claimed = est.fit(one_step_episodes(np.zeros(N)), rng=0).privacy_spent(delta)
    sensitivity = 1.0 / N
    std = noise_std(est.budget, sensitivity, est.calibration)

    def on(mean: float) -> Callable[[int, np.random.Generator], np.ndarray]:
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            noise: NoiseSource = NumpyNoise(rng)
            if broken == "noise-div-10":
                noise = ScaledNoise(noise, 1.0 / NOISE_DIVISOR)
            return Releaser(noise, Ledger()).gaussian(np.full((n, 1), mean), sensitivity=sensitivity, std=std)
        return sample

    return AuditPair(on(0.0), on(sensitivity), claimed, delta)


register_target(AuditTarget(
    name="example-mean", description="private mean return (the example family), sensitivity 1/10",
    privacy_unit="one episode", build=_build, epsilon=1.0, delta=1e-5, variants=(NOISE_DIV_10,),
))
