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
step 0 user 1 contributes ``x_p = +b, y_p = c`` in D and ``x_p = −b, y_p = c`` in D' (``b = L_ϕ/H``,
``c = H − 1``: the tight plan's per-step bounds), ``x_r = ±1, y_r = 1``; at the last step ``ϕ ≡ 0``
and ``V ≡ 0``. The moment items move by their full replace-one sensitivity (2bc and 2), the Gram
items not at all (d = 1); every other user contributes zeros.

Negative controls draw the same releases from a broken noise source with the same claim:
``noise-div-10`` (``ScaledNoise(·, 1/10)``), central: ``half-nodes-noise-free`` (every other node
without noise) and ``no-shift`` (the shift γ·I removed — public post-processing, must stay
consistent).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.audit.neighbors import replace_one_user
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_10
from privrl.audit.targets_tree import HALF_NODES, broken_source
from privrl.envs.linear_mixture import random_mixture
from privrl.linear_mixture.estimators import LinOptVI
from privrl.linear_mixture.regularizers import CentralTreePrivatizer, LocalPrivatizer, Regularizer
from privrl.privacy import Ledger, PrivacyBudget, Releaser
from privrl.privacy.noise import NumpyNoise

__all__ = ["K", "H", "D1", "D2", "privatizer", "user_contributions", "user_streams"]

K, H, D1, D2 = 4, 2, 1, 1
#: a model of the audited sizes (public: the privatizer needs only H, d1, d2 and L_ϕ = √d1·H)
_MODEL = random_mixture(2, 2, H, D1, D2, rng=0)


def privatizer(kind: str, epsilon: float, delta: float, counter: str = "tree") -> tuple[LinOptVI, Regularizer]:
    """``(estimator, fresh privatizer)`` of the audited run (calibration "tight"; ``counter`` of the
    central privatizer: the paper's binary tree, the square-root or the BLT factorization)."""
    kw: dict[str, Any] = {"counter": counter} if kind == "central" else {}
    est = LinOptVI(n_episodes=K, privatizer=kind, budget=PrivacyBudget(epsilon=epsilon, delta=delta), **kw)
    return est, est.regularizer(_MODEL)


def user_contributions(which: int, x_bound: np.ndarray, y_bound: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(x_p, y_p, x_r, y_r)`` of the audited user: features ``+`` (``which = 0``) or ``−``
    (``which = 1``) times their per-step bound, maximal targets."""
    sign = 1.0 if which == 0 else -1.0
    return (sign * np.asarray(x_bound, dtype=float).reshape(H, D1), np.asarray(y_bound, dtype=float).copy(),
            np.full((H, D2), sign), np.ones(H))


def user_streams(which: int, x_bound: np.ndarray, y_bound: np.ndarray) -> list[np.ndarray]:
    """The K − 1 users' ``(x_p, y_p, x_r, y_r)`` as four ``(K − 1, H, ...)`` arrays: zeros, with
    user 0's responses replaced (:func:`~privrl.audit.neighbors.replace_one_user`)."""
    first = user_contributions(which, x_bound, y_bound)
    return [replace_one_user(np.zeros((K - 1, *x.shape)), 0, x) for x in first]


def _claimed(kind: str, epsilon: float, delta: float, counter: str = "tree") -> float:
    """The estimator's own claim: the ledger a fit records (the privatizer's events), ε at δ."""
    _, reg = privatizer(kind, epsilon, delta, counter)
    ledger = Ledger()
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rel=Releaser(NumpyNoise(0), ledger))
    return ledger.epsilon(delta)


def _central(epsilon: float, delta: float, broken: str | None, counter: str = "tree") -> AuditPair:
    claimed = _claimed("central", epsilon, delta, counter)

    def on(which: int):
        def once(rng: np.random.Generator) -> np.ndarray:
            _, reg = privatizer("central", epsilon, delta, counter)
            assert isinstance(reg, CentralTreePrivatizer)   # the tree's or the factorization's
            reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2,
                      rel=Releaser(broken_source(rng, broken, counters=4), Ledger()))
            if broken == "no-shift":
                reg.shift_p, reg.shift_r = np.zeros(H), np.zeros(H)
            streams = user_streams(which, *reg.bounds)
            out: list[np.ndarray] = []
            for t in range(K - 1):
                stats = reg.update(*(x[t] for x in streams))
                out.extend(np.asarray(s, float).ravel() for s in stats)
            return np.concatenate(out)
        return lambda n, rng: stack(once, n, rng)
    return AuditPair(on(0), on(1), claimed, delta)


def _local(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    claimed = _claimed("local", epsilon, delta)
    _, reg = privatizer("local", epsilon, delta)
    assert isinstance(reg, LocalPrivatizer)
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rel=Releaser(NumpyNoise(0), Ledger()))

    def on(which: int):
        items = reg.items(*user_contributions(which, *reg.bounds))

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
    variants=(NOISE_DIV_10, HALF_NODES,
              NO_SHIFT),
    trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="linopt-central-factorization",
    description=f"LinOpt central privatizer with the square-root factorization counter (JDP): released "
                f"statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one",
    build=lambda epsilon, delta, broken: _central(epsilon, delta, broken, "factorization"),
    epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,
              NO_SHIFT),
    trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="linopt-central-blt",
    description=f"LinOpt central privatizer with the BLT factorization counter (JDP, the default under tight "
                f"calibration): released statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one",
    build=lambda epsilon, delta, broken: _central(epsilon, delta, broken, "blt"),
    epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,),             # (the shift's control is the other central targets')
    trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="linopt-local", description=f"LinOpt local randomizer (LDP, derived): one user's messages, H={H}, d=1",
    privacy_unit="one user (episode), any two inputs", build=_local, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,),
))
