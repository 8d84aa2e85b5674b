"""Audit targets of LinOpt-VI / LinOpt-PO's privatizers (Zhou 2022, Sec 6.1; the LDP one derived).

Everything the learners do after the privatizer is post-processing of its released statistics, so
the audit targets the privatizers (a full online run per trial would be far too expensive):

* ``linopt-central`` (JDP) — :class:`CentralTreePrivatizer`: ``start`` then the K − 1 user
  ``update`` calls; the audited output is the whole transcript of released statistics
  ``(Λ_p, u_p, Λ_r, u_r)`` after every update (what the learner sees). K = 4, H = 1,
  d1 = d2 = 1 (small, so that the discriminant is estimated well from a few thousand runs). Privacy unit: one user (episode); user 1's item lies in the most tree nodes.
* ``linopt-local`` (LDP) — :meth:`LocalPrivatizer.local_randomizer`, the messages one user sends
  (vectorised: the randomiser accepts a leading batch axis).

Neighbours (replace one user's responses, worst case within the bounds the privatizers enforce):
user 1 contributes ``x_p = L_ϕ, y_p = H, x_r = 1, y_r = 1`` in D and ``x_p = −L_ϕ, y_p = H,
x_r = −1, y_r = 1`` in D' (d = 1): the moment items move by their full replace-one sensitivity
2 L_ϕ H and 2, the Gram items not at all (no single replacement moves both to their bounds;
orthogonal features in d = 2 would give √2 L² and √2 L H instead); every other user contributes
zeros. The claimed ε is the ledger's: ``events()`` (per-user, sound sensitivities) composed by PLD.

Negative controls: ``noise-div-10`` (every σ / 10 after calibration, same claimed events);
central: ``half-nodes-noise-free`` (every other tree node drawn without noise) and ``no-shift``
(the 2Υ I shift removed — public post-processing, must stay consistent).
"""

from __future__ import annotations

import dataclasses

import dp_accounting
import numpy as np

from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.neighbors import replace_one_user
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_10, claimed_epsilon
from privrl.audit.targets_tree import HALF_NODES, _EveryOtherNodeNoiseFree
from privrl.linear_mixture.regularizers import CentralTreePrivatizer, LocalPrivatizer

K, H, D1, D2 = 4, 1, 1, 1


def user_contributions(which: int, L_phi: float) -> tuple[np.ndarray, ...]:
    """``(x_p, y_p, x_r, y_r)`` of the audited user: features ``+1`` (``which = 0``) or ``−1``
    (``which = 1``) times their bound, maximal targets."""
    sign = 1.0 if which == 0 else -1.0
    return (np.full((H, D1), sign * L_phi), np.full(H, float(H)), np.full((H, D2), sign), np.ones(H))


def user_streams(which: int, L_phi: float) -> list[np.ndarray]:
    """The K − 1 users' ``(x_p, y_p, x_r, y_r)`` as four ``(K − 1, H, ...)`` arrays: zeros, with
    user 0's responses replaced (:func:`~privrl.audit.neighbors.replace_one_user`)."""
    first = user_contributions(which, L_phi)
    return [replace_one_user(np.zeros((K - 1, *x.shape)), 0, x) for x in first]


def _central(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    def make(rng) -> CentralTreePrivatizer:
        reg = CentralTreePrivatizer(epsilon=epsilon, delta=delta)
        reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rng=rng)
        for c in reg._counters:
            if broken == "noise-div-10":
                c.noise.sigma = c.noise.sigma / NOISE_DIVISOR
            elif broken == "half-nodes-noise-free":
                c.noise = _EveryOtherNodeNoiseFree(c.noise.sigma, rng)
            elif broken == "no-shift":
                c.shift = 0.0
        return reg

    probe = CentralTreePrivatizer(epsilon=epsilon, delta=delta)
    probe.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rng=0)
    claimed = claimed_epsilon(dp_accounting.ComposedDpEvent(probe.events()), delta)

    def on(which: int):
        streams = user_streams(which, probe.L_phi)

        def once(rng):
            reg = make(rng)
            out = []
            for t in range(K - 1):
                stats = reg.update(*(x[t] for x in streams))
                out.extend(np.asarray(s, float).ravel() for s in stats)
            return np.concatenate(out)
        return lambda n, rng: stack(once, n, rng)
    return AuditPair(on(0), on(1), claimed, delta)


def _local(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    reg = LocalPrivatizer(epsilon=epsilon, delta=delta)
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rng=0)
    claimed = claimed_epsilon(dp_accounting.ComposedDpEvent(reg.events()), delta)
    if broken == "noise-div-10":
        reg.sigma = dataclasses.replace(reg.sigma, **{k: v / NOISE_DIVISOR for k, v in reg.sigma.as_dict().items()})

    def on(which: int):
        items = reg._items(*user_contributions(which, reg.L_phi))

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            batch = [np.broadcast_to(x, (n, *x.shape)) for x in items]
            msgs = reg.local_randomizer(batch, rng)
            return np.concatenate([m.reshape(n, -1) for m in msgs], axis=1)
        return sample
    return AuditPair(on(0), on(1), claimed, delta)


register_target(AuditTarget(
    name="linopt-central", description=f"LinOpt central tree privatizer (JDP): released statistics, K={K}, H={H}, d=1",
    privacy_unit="one user (episode), replace-one", build=_central, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, HALF_NODES,
              BrokenVariant("no-shift", "2*Upsilon*I shift removed: public post-processing, must stay consistent",
                            caught=False)),
    trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="linopt-local", description=f"LinOpt local randomizer (LDP, derived): one user's messages, H={H}, d=1",
    privacy_unit="one user (episode), any two inputs", build=_local, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,),
))
