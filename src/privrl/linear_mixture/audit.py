"""Audit targets of LinOpt-VI / LinOpt-PO's privatizers (Zhou 2022, Sec 6.1; the LDP one derived).

Everything the learners do after the privatizer is post-processing of its released statistics, so
the audit targets the privatizers (a full online run per trial would be far too expensive). Each
target uses the estimator's own objects: ``LinOptVI(privatizer=..., budget=(ε, δ))`` (default
calibration "tight") gives the privatizer (:meth:`~privrl.linear_mixture.estimators.LinOptVI.regularizer`)
and its noise plan; the privatizer is started with a :class:`~privrl.privacy.release.Releaser` whose
ledger receives exactly the events a fit records, and the claimed ε is that ledger's ε(δ).

* ``linopt-central`` (JDP) — :class:`~privrl.linear_mixture.regularizers.CentralTreePrivatizer`:
  ``start`` then the K − 1 user ``update`` calls; the audited output is the whole transcript of
  released statistics ``(Λ_p, u_p, Λ_r, u_r)`` after every update (what the learner sees).
  K = 4, H = 2, d1 = d2 = 1. User 1's item lies in the most tree nodes.
* ``linopt-central-factorization`` / ``linopt-central-blt`` (JDP) — the same with
  ``counter="factorization"`` / ``counter="blt"`` (the default under tight calibration)
  (:class:`~privrl.linear_mixture.regularizers.CentralFactorizationPrivatizer`).
* ``linopt-local`` (LDP) — :meth:`~privrl.linear_mixture.regularizers.LocalPrivatizer.local_randomizer`,
  the messages one user sends (vectorised over trials).

Neighbours (:func:`user_contributions`; replace one user's responses, worst case within the bounds
the privatizers enforce, see :func:`~privrl.linear_mixture.regularizers.check_contributions`): at
step 0 user 1 contributes ``x_p = +b, y_p = c`` in D and ``x_p = −a·b, y_p = c`` in D' (``b = L_ϕ/H``,
``c = H − 1``: the tight plan's per-step bounds), ``x_r = 1`` resp. ``−a_r``, ``y_r = 1``; at the last
step ``ϕ ≡ 0`` and ``V ≡ 0``; every other user contributes zeros. With ``a = 1`` the moment items
move by their full replace-one sensitivity (2bc and 2) and the Gram items not at all (d = 1): no
user moves both by their full sensitivity, which the plan composes. :func:`worst_opposite`
chooses ``a`` (and ``a_r``) to move the released statistics most against the plan's noise
(``a ≈ 0.21``: the Gaussian shift of the whole release is then ≈ 0.78 of what the claim allows,
against ≈ 0.76 at ``a = 1``).

The central samplers run ``n`` trials at once (:func:`batched`): the privatizer's own counters,
built by its own ``_setup`` with the plan's noise and sensitivities, hold the ``n`` runs on a
second axis ``(H, n, ...)`` (the plan's per-step scales stay on the first); the released
statistics are the counters' noisy prefix sums plus the public shift γ·I, before the PD floor
(post-processing that depends only on the noise). The release-point statistic is the Fisher
discriminant (``"lda"``: Gaussian noise, correlated across the prefix sums).

Negative controls draw the same releases from a broken noise source with the same claim:
``noise-div-2`` (release point) and ``noise-div-10`` (``ScaledNoise(·, 1/2)``, ``ScaledNoise(·, 1/10)``),
central: ``half-nodes-noise-free`` (every other node without noise) and ``no-shift`` (the shift γ·I
removed — public post-processing, must stay consistent).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from privrl.audit.core import Sampler
from privrl.audit.neighbors import replace_one_user
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10
from privrl.audit.targets_tree import HALF_NODES, broken_source
from privrl.envs.linear_mixture import random_mixture
from privrl.linear_mixture.calibration import NoisePlan
from privrl.linear_mixture.estimators import LinOptVI
from privrl.linear_mixture.regularizers import (
    CentralFactorizationPrivatizer,
    CentralTreePrivatizer,
    LocalPrivatizer,
    Regularizer,
    _shifted,
)
from privrl.privacy import Ledger, PrivacyBudget, Releaser
from privrl.privacy.noise import NumpyNoise

__all__ = ["K", "H", "D1", "D2", "batched", "insert_all", "privatizer", "user_contributions", "user_streams",
           "worst_opposite"]

K, H, D1, D2 = 4, 2, 1, 1
#: a model of the audited sizes (public: the privatizer needs only H, d1, d2 and L_ϕ = √d1·H)
_MODEL = random_mixture(2, 2, H, D1, D2, rng=0)


def privatizer(kind: str, epsilon: float, delta: float, counter: str = "tree") -> tuple[LinOptVI, Regularizer]:
    """``(estimator, fresh privatizer)`` of the audited run (calibration "tight"; ``counter`` of the
    central privatizer: the paper's binary tree, the square-root or the BLT factorization)."""
    kw: dict[str, Any] = {"counter": counter} if kind == "central" else {}
    est = LinOptVI(n_episodes=K, privatizer=kind, budget=PrivacyBudget(epsilon=epsilon, delta=delta), **kw)
    return est, est.regularizer(_MODEL)


def user_contributions(which: int, x_bound: np.ndarray, y_bound: np.ndarray,
                       opposite: tuple[float, float] = (1.0, 1.0)) -> tuple[np.ndarray, ...]:
    """``(x_p, y_p, x_r, y_r)`` of the audited user: features ``+`` (``which = 0``) or ``−opposite``
    (``which = 1``; value and reward features) times their per-step bound, maximal targets."""
    a_p, a_r = (1.0, 1.0) if which == 0 else (-opposite[0], -opposite[1])
    return (a_p * np.asarray(x_bound, dtype=float).reshape(H, D1), np.asarray(y_bound, dtype=float).copy(),
            np.full((H, D2), a_r), np.ones(H))


def worst_opposite(plan: NoisePlan) -> tuple[float, float]:
    """``(a, a_r)`` in [0, 1] maximising ``Σ_h (ΔG_h/σ_G,h)² + (Δu_h/σ_u,h)²`` with ``ΔG = (1 − a²)b²``,
    ``Δu = (1 + a)bc`` — the Gram and moment streams' shift against the plan's noise when D' has
    the features ``−a·b`` (``b, c``: the value streams' per-step bounds; 1 and 1 for the reward
    streams)."""
    a = np.linspace(0.0, 1.0, 1001)[:, None]
    std = np.asarray(plan.std, dtype=float)
    inv_var = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0) ** 2, 0.0)
    ones = np.ones(std.shape[1])
    out = []
    for g, u, b, c in ((0, 1, np.asarray(plan.x_bound, float), np.asarray(plan.y_bound, float)), (2, 3, ones, ones)):
        shift2 = ((1 - a**2) * b**2) ** 2 * inv_var[g] + ((1 + a) * b * c) ** 2 * inv_var[u]
        out.append(float(a[np.argmax(shift2.sum(axis=1)), 0]))
    return out[0], out[1]


def user_streams(which: int, x_bound: np.ndarray, y_bound: np.ndarray,
                 opposite: tuple[float, float] = (1.0, 1.0)) -> list[np.ndarray]:
    """The K − 1 users' ``(x_p, y_p, x_r, y_r)`` as four ``(K − 1, H, ...)`` arrays: zeros, with
    user 0's responses replaced (:func:`~privrl.audit.neighbors.replace_one_user`)."""
    first = user_contributions(which, x_bound, y_bound, opposite)
    return [replace_one_user(np.zeros((K - 1, *x.shape)), 0, x) for x in first]


def _claimed(kind: str, epsilon: float, delta: float, counter: str = "tree") -> float:
    """The estimator's own claim: the ledger a fit records (the privatizer's events), ε at δ."""
    _, reg = privatizer(kind, epsilon, delta, counter)
    ledger = Ledger()
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rel=Releaser(NumpyNoise(0), ledger))
    return ledger.epsilon(delta)


class _Runs:
    """Mixin of :func:`batched`: every counter holds ``runs`` independent runs on a second axis."""

    runs = 1
    _counters: list[Any]
    shift_p: np.ndarray
    shift_r: np.ndarray

    def _shapes(self) -> list[tuple[int, ...]]:
        return [(s[0], self.runs, *s[1:]) for s in super()._shapes()]  # type: ignore[misc]

    def statistics(self) -> tuple[np.ndarray, ...]:
        """Per run ``(n, H, ...)``: the counters' noisy prefix sums, the Grams plus the public shift."""
        Lp, up, Lr, ur = (np.moveaxis(c.release(), 1, 0) for c in self._counters)
        return _shifted(Lp, self.shift_p), up, _shifted(Lr, self.shift_r), ur


_BATCHED: dict[type, type] = {cls: type(f"Batched{cls.__name__}", (_Runs, cls), {})
            for cls in (CentralTreePrivatizer, CentralFactorizationPrivatizer)}


def batched(reg: Regularizer, n: int) -> Any:
    """A copy of the (not yet started) central privatizer ``reg`` running ``n`` independent runs at
    once (module docstring); feed it with :func:`insert_all`."""
    out: Any = copy.copy(reg)
    out.__class__ = _BATCHED[type(reg)]
    out.runs = n
    return out


def insert_all(reg: Any, contributions: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Insert one user's contributions (checked against the privatizer's bounds, as ``update``
    does) into every run of a :func:`batched` privatizer; its next statistics."""
    items = reg.items(*reg._check(*contributions))
    for counter, item in zip(reg._counters, items):
        counter.insert(np.broadcast_to(item[:, None], counter.shape))
    return reg.statistics()


def _central(epsilon: float, delta: float, broken: str | None, counter: str = "tree") -> AuditPair:
    claimed = _claimed("central", epsilon, delta, counter)

    def on(which: int) -> Sampler:
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            reg = batched(privatizer("central", epsilon, delta, counter)[1], n)
            reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2,
                      rel=Releaser(broken_source(rng, broken, counters=4), Ledger()))
            if broken == "no-shift":
                reg.shift_p, reg.shift_r = np.zeros(H), np.zeros(H)
            x_bound, y_bound = reg.bounds
            streams = user_streams(which, x_bound, y_bound, opposite=worst_opposite(reg.plan))
            out: list[np.ndarray] = []
            for t in range(K - 1):
                out.extend(s.reshape(n, -1) for s in insert_all(reg, tuple(x[t] for x in streams)))
            return np.concatenate(out, axis=1)
        return sample
    return AuditPair(on(0), on(1), claimed, delta)


def _local(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    claimed = _claimed("local", epsilon, delta)
    _, reg = privatizer("local", epsilon, delta)
    assert isinstance(reg, LocalPrivatizer)
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rel=Releaser(NumpyNoise(0), Ledger()))

    def on(which: int) -> Sampler:
        items = reg.items(*user_contributions(which, *reg.bounds, opposite=worst_opposite(reg.plan)))

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            batch = [np.broadcast_to(x, (n, *x.shape)) for x in items]
            msgs = reg.local_randomizer(batch, broken_source(rng, broken))
            return np.concatenate([m.reshape(n, -1) for m in msgs], axis=1)
        return sample
    return AuditPair(on(0), on(1), claimed, delta)


#: the shift γ·I removed: public post-processing, so the audit must stay consistent (a control)
NO_SHIFT = BrokenVariant("no-shift", "shift gamma*I removed: public post-processing, must stay consistent",
                         caught=False)


register_target(AuditTarget(
    name="linopt-central", description=f"LinOpt central tree privatizer (JDP): released statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one", build=_central, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2, HALF_NODES, NO_SHIFT),
    trials=10_000, fast_trials=3_000, optimal="lda", sharp_trials=1_000_000,
))
register_target(AuditTarget(
    name="linopt-central-factorization",
    description=f"LinOpt central privatizer with the square-root factorization counter (JDP): released "
                f"statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one",
    build=lambda epsilon, delta, broken: _central(epsilon, delta, broken, "factorization"),
    epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2, NO_SHIFT),
    trials=10_000, fast_trials=3_000, optimal="lda", sharp_trials=1_000_000,
))
register_target(AuditTarget(
    name="linopt-central-blt",
    description=f"LinOpt central privatizer with the BLT factorization counter (JDP, the default under tight "
                f"calibration): released statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one",
    build=lambda epsilon, delta, broken: _central(epsilon, delta, broken, "blt"),
    epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2),     # (the shift's control is the other central targets')
    trials=10_000, fast_trials=3_000, optimal="lda", sharp_trials=1_000_000,
))
register_target(AuditTarget(
    name="linopt-local", description=f"LinOpt local randomizer (LDP, derived): one user's messages, H={H}, d=1",
    privacy_unit="one user (episode), any two inputs", build=_local, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda", sharp_trials=1_000_000,
))
