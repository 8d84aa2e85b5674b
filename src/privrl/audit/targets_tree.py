"""Audit targets of the binary tree counter (:mod:`privrl.privacy.tree`; Chan et al. 2011,
Zhou 2022 Lemma 6.1).

``tree-counter``: a stream of ``n_items = 7`` scalars, ℓ2-sensitivity 1 per item, node noise σ
calibrated by :func:`calibrate_gaussian` for ``max_membership(7) = 3`` Gaussian releases (the
counter's own :meth:`~privrl.privacy.tree.BinaryCounter.event`). The released output is the whole
sequence of prefix sums (the streaming release). D is the all-zero stream; D' changes item 1, which
lies in the most nodes (levels 0, 1, 2) and in every prefix. ``N`` independent counters run at once
(the counter's leading batch axis), so 10⁴ trials are one vectorised run. The node noise is drawn
through :class:`~privrl.privacy.tree.NodeNoise` from a noise source.

``tree-matrix``: the same for a stream of symmetric 2×2 matrices with the PSD shift; D' adds
e₁e₁ᵀ to item 1.

Negative controls (the same claim, a broken noise source): ``noise-div-10`` —
``ScaledNoise(·, 1/10)``; ``half-nodes-noise-free`` — every other node drawn without noise
(:class:`~privrl.audit.broken.EveryOtherDrawNoiseFree`); ``no-shift`` (matrix, public
post-processing: must stay consistent).
"""

from __future__ import annotations

import numpy as np

from privrl.audit.broken import NOISE_DIVISOR, EveryOtherDrawNoiseFree
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_10, claimed_epsilon
from privrl.privacy import NumpyNoise, ScaledNoise, calibrate_gaussian
from privrl.privacy.tree import BinaryCounter, NodeNoise, max_membership

N_ITEMS = 7

HALF_NODES = BrokenVariant("half-nodes-noise-free", "every other tree node drawn without noise "
                           "(half the tree noise removed)")


def broken_source(rng: np.random.Generator, broken: str | None, counters: int = 1):
    """The noise source of one audited run: seeded NumPy, or the negative control's broken copy
    (``counters``: how many tree counters draw one node each per insert)."""
    base = NumpyNoise(rng)
    if broken == "noise-div-10":
        return ScaledNoise(base, 1.0 / NOISE_DIVISOR)
    if broken == "half-nodes-noise-free":
        return EveryOtherDrawNoiseFree(base, period=counters)
    return base


def _counter_pair(epsilon: float, delta: float, broken: str | None, item_shape: tuple[int, ...],
                  change: np.ndarray, symmetric: bool) -> AuditPair:
    count = max_membership(N_ITEMS)
    sigma = calibrate_gaussian(epsilon, delta, compositions=count)
    shift = 0.0 if (not symmetric or broken == "no-shift") else 3.0
    probe = BinaryCounter(item_shape, n_items=N_ITEMS, sigma=sigma, symmetric=symmetric, sensitivity=1.0)
    claimed = claimed_epsilon(probe.event(), delta)

    def on(first_item: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            counter = BinaryCounter((n, *item_shape), n_items=N_ITEMS, sigma=sigma, symmetric=symmetric,
                                    shift=shift, noise=NodeNoise(broken_source(rng, broken), sigma), sensitivity=1.0)
            outs = []
            for t in range(N_ITEMS):
                item = np.broadcast_to(first_item if t == 0 else np.zeros(item_shape), (n, *item_shape))
                counter.insert(item)
                outs.append(counter.release().reshape(n, -1))
            out = np.concatenate(outs, axis=1)
            if symmetric:  # keep the upper triangles only (the lower ones are copies)
                d = item_shape[-1]
                iu = np.triu_indices(d)
                mask = np.zeros((d, d), bool)
                mask[iu] = True
                out = out.reshape(n, N_ITEMS, d * d)[:, :, mask.ravel()].reshape(n, -1)
            return out
        return sample

    zero = np.zeros(item_shape)
    return AuditPair(on(zero), on(zero + change), claimed, delta)


def _tree(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _counter_pair(epsilon, delta, broken, (1,), np.ones(1), symmetric=False)


def _tree_matrix(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    e1 = np.eye(2)[0]
    return _counter_pair(epsilon, delta, broken, (2, 2), np.outer(e1, e1), symmetric=True)


register_target(AuditTarget(
    name="tree-counter", description=f"binary tree counter, {N_ITEMS} scalar items, all prefix sums released",
    privacy_unit="one stream item (one user's contribution)", build=_tree, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, HALF_NODES),
))
register_target(AuditTarget(
    name="tree-matrix", description=f"binary tree counter, {N_ITEMS} symmetric 2x2 items, shift 3 I",
    privacy_unit="one stream item (one user's contribution)", build=_tree_matrix, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, HALF_NODES,
              BrokenVariant("no-shift", "PSD shift removed: public post-processing, must stay consistent",
                            caught=False)),
))
