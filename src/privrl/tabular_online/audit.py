"""Audit targets of the tabular online privatizers (the count releases; everything the learners do
after them is post-processing).

Each target takes the estimator's own noise plan (``DPUCBVI(n_episodes=K, budget=..., privatizer=...,
counter=...).noise_for(H, S, A)``, default calibration "tight") and claims the ε at δ of the ledger a
fit records (:meth:`~privrl.tabular_online.calibration.CountNoise.event`). The audited output is the
whole transcript the learner sees: the K − 1 released count vectors (both families) after every
insert, the counter's noise from :func:`~privrl.tabular_online._kernels.noise_releases` — the
kernel the fits run — and the draws from the audited noise source.

Sizes: K = 4 (3 inserts; user 1's item lies in the most tree nodes, m = 2), H = 1, S = 2, A = 1
(D = 6). Neighbours: user 1's trajectory is ``(s = 0, a = 0, s′ = 0)`` in D and
``(s = 1, a = 0, s′ = 1)`` in D′ — the replace-one worst case (ℓ1 change 4H, ℓ2 change 2√H); every
other user contributes zeros (counts of other users shift both transcripts alike).
``tabular-online-central-blt-pooled``: H = 2 and counts pooled over the steps; user 1 stays in
state 0 (D) or 1 (D′) for both steps, so each family's pooled count moves by H on one coordinate
(ℓ2 change 2H for both families, the pooled sensitivity).

Negative controls (same claim): ``noise-div-2`` and ``noise-div-10`` (``ScaledNoise`` ÷ 2, ÷ 10). The
targets run 10⁵ trials (fast) so that the audit of the real release also catches a factor-2 error
in a stated sensitivity (e.g. the add/remove ``2H`` for the replace-one ``4H``; checked by hand).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2
from privrl.audit.targets_mechanisms import NOISE_DIV_10 as _DIV_10
from privrl.privacy import Ledger, NumpyNoise, PrivacyBudget, Releaser, ScaledNoise
from privrl.privacy.noise import NoiseSource
from privrl.tabular_online import _kernels as kern
from privrl.tabular_online.calibration import CountNoise
from privrl.tabular_online.estimators import DPUCBVI

__all__ = ["K", "H", "S", "A", "noise_plan", "user_items", "NOISE_DIV_2"]

K, H, S, A = 4, 1, 2, 1
#: ÷ 10 is caught with far fewer trials than the targets' (which are sized to catch a factor 2)
NOISE_DIV_10 = BrokenVariant(_DIV_10.name, _DIV_10.description, trials=20_000, fast_trials=10_000)
_COUNTERS = {"tree": kern.TREE, "blt": kern.BLT, "local": kern.LOCAL}


def noise_plan(privatizer: str, counter: str, epsilon: float, delta: float, gaussian: bool,
               horizon: int = H, pooled: bool = False) -> CountNoise:
    """The audited run's plan: a pure ε budget (Laplace) or (ε, δ) (Gaussian), calibration tight."""
    budget = PrivacyBudget(epsilon=epsilon, delta=delta) if gaussian else PrivacyBudget(epsilon=epsilon)
    est = DPUCBVI(n_episodes=K, budget=budget, privatizer=privatizer, counter=counter, pooled=pooled)
    return est.noise_for(horizon, S, A)


def user_items(which: int, horizon: int = H, pooled: bool = False) -> np.ndarray:
    """The K − 1 users' items ``(K − 1, D)``: zeros, user 1 staying in state ``s = which`` (action 0)
    for all ``horizon`` steps, in the item layout of :mod:`._kernels` — with pooled counts all her
    visits land on one coordinate per family (the pooled ℓ2 worst case, 2H for both families)."""
    steps = 1 if pooled else horizon
    items = np.zeros((K - 1, steps * S * A * (S + 1)))
    s = which
    for h in range(horizon):
        i = ((0 if pooled else h) * S + s) * A       # (h, s, a = 0)
        items[0, i] += 1.0                           # N_h(s, 0)
        items[0, steps * S * A + i * S + s] += 1.0   # N_h(s, 0, s' = s)
    return items


def _claimed(plan: CountNoise, delta: float) -> float:
    ledger = Ledger()
    Releaser(NumpyNoise(0), ledger).record(plan.event(), noise=plan.declaration())
    return ledger.epsilon(delta)


def _source(rng: np.random.Generator, broken: str | None) -> NoiseSource:
    base = NumpyNoise(rng)
    if broken == "noise-div-10":
        return ScaledNoise(base, 0.1)
    if broken == "noise-div-2":
        return ScaledNoise(base, 0.5)
    return base


def _pair(privatizer: str, counter: str, gaussian: bool, epsilon: float, delta: float,
          broken: str | None, horizon: int = H, pooled: bool = False) -> AuditPair:
    plan = noise_plan(privatizer, counter, epsilon, delta, gaussian, horizon, pooled)
    claimed = _claimed(plan, delta)
    code = _COUNTERS[plan.counter]
    blt = plan.blt
    theta = np.array(blt.theta if blt is not None else [0.0])
    omega = np.array(blt.omega if blt is not None else [0.0])
    levels = max(1, plan.n_items.bit_length())

    # the releases' noise is linear in the draws: row t of M holds the weight of each insert's draw in
    # release t (the kernel run on unit impulses), so n trials are one product
    M = kern.noise_releases(code, np.eye(K - 1), levels, theta, omega).T

    def on(which: int):
        prefix = np.cumsum(user_items(which, horizon, pooled), axis=0)

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            src = _source(rng, broken)
            draw = src.laplace if plan.kind == "laplace" else src.gaussian
            Z = draw((n, K - 1, plan.dim), plan.scale)
            return (prefix + np.einsum("tj,njd->ntd", M, Z)).reshape(n, -1)
        return sample
    return AuditPair(on(0), on(1), claimed, delta)


def _builder(privatizer: str, counter: str, gaussian: bool, horizon: int = H,
             pooled: bool = False) -> Callable[[float, float, str | None], AuditPair]:
    return lambda epsilon, delta, broken: _pair(privatizer, counter, gaussian, epsilon, delta, broken, horizon,
                                                pooled)


_CONTROLS = (NOISE_DIV_2, NOISE_DIV_10)
for _name, _priv, _counter, _gauss, _what in (
    ("tabular-online-central-laplace", "central", "tree", False, "central Laplace binary tree (pure eps-JDP)"),
    ("tabular-online-central-tree", "central", "tree", True, "central Gaussian binary tree (JDP)"),
    ("tabular-online-central-blt", "central", "blt", True, "central Gaussian BLT counter (JDP)"),
    ("tabular-online-local-laplace", "local", "auto", False, "local Laplace randomizer (pure eps-LDP)"),
):
    register_target(AuditTarget(
        name=_name, description=f"tabular online count privatizer, {_what}: the released counts, K={K}, H={H}, "
                                f"S={S}, A={A}",
        privacy_unit="one user (episode), replace-one",
        build=_builder(_priv, _counter, _gauss),
        epsilon=1.0, delta=1e-5, variants=_CONTROLS, trials=200_000, fast_trials=100_000,
        optimal="lda" if _gauss else "laplace-llr",
    ))
register_target(AuditTarget(
    name="tabular-online-central-blt-pooled",
    description=f"tabular online count privatizer, central Gaussian BLT counter on counts pooled over the steps "
                f"(JDP; l2 sensitivity 2H): the released counts, K={K}, H=2, S={S}, A={A}",
    privacy_unit="one user (episode), replace-one", build=_builder("central", "blt", True, 2, True),
    epsilon=1.0, delta=1e-5, variants=_CONTROLS, trials=200_000, fast_trials=100_000, optimal="lda",
))
