"""Audit targets of the continual counters: the binary tree (:mod:`privrl.privacy.tree`; Chan et
al. 2011, Zhou 2022 Lemma 6.1) and the BLT factorization (:mod:`privrl.privacy.factorization`).

``tree-counter``: a stream of ``n_items = 7`` scalars, ℓ2-sensitivity 1 per item, node noise σ
calibrated by :func:`calibrate_gaussian` for ``max_membership(7) = 3`` Gaussian releases (the
counter's own :meth:`~privrl.privacy.tree.BinaryCounter.event`). The released output is the whole
sequence of prefix sums (the streaming release). D is the all-zero stream; D' changes item 1, which
lies in the most nodes (levels 0, 1, 2) and in every prefix. ``N`` independent counters run at once
(the counter's leading batch axis), so 10⁴ trials are one vectorised run. The node noise is drawn
through :class:`~privrl.privacy.tree.NodeNoise` from a noise source.

``tree-matrix``: the same for a stream of symmetric 2×2 matrices with the PSD shift; D' adds
e₁e₁ᵀ to item 1.

``blt-counter`` / ``blt-matrix``: the same streams under
:class:`~privrl.privacy.factorization.BLTCounter`: one Gaussian release of ``C x`` with σ calibrated
for 1 release of sensitivity ``s_C`` (the counter's own event); item 1 is the worst case (the first
column of ``C`` has the largest norm).

Release-point audits: the Fisher discriminant (``"lda"``: the prefix sums' noise is correlated).
Negative controls (the same claim, a broken noise source): ``noise-div-2`` (release point) and
``noise-div-10`` — ``ScaledNoise(·, 1/2)``, ``ScaledNoise(·, 1/10)``; ``half-nodes-noise-free`` —
every other node drawn without noise (:class:`~privrl.audit.broken.EveryOtherDrawNoiseFree`);
``no-shift`` (matrix, public post-processing: must stay consistent).
"""

from __future__ import annotations

import numpy as np

from privrl.audit.broken import EveryOtherDrawNoiseFree, scaled_source
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10, claimed_epsilon
from privrl.privacy import NumpyNoise, calibrate_gaussian
from privrl.privacy.factorization import BLTCounter
from privrl.privacy.tree import BinaryCounter, NodeNoise, max_membership

N_ITEMS = 7

HALF_NODES = BrokenVariant("half-nodes-noise-free", "every other tree node drawn without noise "
                           "(half the tree noise removed)")


def broken_source(rng: np.random.Generator, broken: str | None, counters: int = 1):
    """The noise source of one audited run: seeded NumPy, or the negative control's broken copy
    (``counters``: how many tree counters draw one node each per insert)."""
    if broken == "half-nodes-noise-free":
        return EveryOtherDrawNoiseFree(NumpyNoise(rng), period=counters)
    return scaled_source(rng, broken)


def _counter_pair(epsilon: float, delta: float, broken: str | None, item_shape: tuple[int, ...],
                  change: np.ndarray, symmetric: bool, kind: str = "tree") -> AuditPair:
    shift = 0.0 if (not symmetric or broken == "no-shift") else 3.0
    if kind == "tree":
        sigma = calibrate_gaussian(epsilon, delta, compositions=max_membership(N_ITEMS))
        probe: BinaryCounter | BLTCounter = BinaryCounter(item_shape, n_items=N_ITEMS, sigma=sigma,
                                                         symmetric=symmetric, sensitivity=1.0)
    else:                               # one release of C x: σ = (its σ/Δ at ε) × s_C
        factor = BLTCounter(item_shape, n_items=N_ITEMS).factor
        sigma = calibrate_gaussian(epsilon, delta, compositions=1) * factor
        probe = BLTCounter(item_shape, n_items=N_ITEMS, sigma=sigma, symmetric=symmetric, sensitivity=1.0,
                           source=NumpyNoise(0))
    claimed = claimed_epsilon(probe.event(), delta)

    def make(n: int, rng: np.random.Generator) -> BinaryCounter | BLTCounter:
        source = broken_source(rng, broken)
        if kind == "tree":
            return BinaryCounter((n, *item_shape), n_items=N_ITEMS, sigma=sigma, symmetric=symmetric, shift=shift,
                                 noise=NodeNoise(source, sigma), sensitivity=1.0)
        return BLTCounter((n, *item_shape), n_items=N_ITEMS, sigma=sigma, symmetric=symmetric, shift=shift,
                          source=source, sensitivity=1.0)

    def on(first_item: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            counter = make(n, rng)
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


def _scalars(kind: str):
    return lambda epsilon, delta, broken: _counter_pair(epsilon, delta, broken, (1,), np.ones(1), False, kind)


def _matrices(kind: str):
    e1 = np.eye(2)[0]
    return lambda epsilon, delta, broken: _counter_pair(epsilon, delta, broken, (2, 2), np.outer(e1, e1), True, kind)


_tree, _tree_matrix = _scalars("tree"), _matrices("tree")


register_target(AuditTarget(
    name="tree-counter", description=f"binary tree counter, {N_ITEMS} scalar items, all prefix sums released",
    privacy_unit="one stream item (one user's contribution)", build=_tree, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2, HALF_NODES), optimal="lda",
))
register_target(AuditTarget(
    name="tree-matrix", description=f"binary tree counter, {N_ITEMS} symmetric 2x2 items, shift 3 I",
    privacy_unit="one stream item (one user's contribution)", build=_tree_matrix, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2, HALF_NODES,
              BrokenVariant("no-shift", "PSD shift removed: public post-processing, must stay consistent",
                            caught=False)), optimal="lda",
))
register_target(AuditTarget(
    name="blt-counter", description=f"BLT factorization counter, {N_ITEMS} scalar items, all prefix sums released",
    privacy_unit="one stream item (one user's contribution)", build=_scalars("blt"), epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), optimal="lda",
))
register_target(AuditTarget(
    name="blt-matrix", description=f"BLT factorization counter, {N_ITEMS} symmetric 2x2 items, shift 3 I",
    privacy_unit="one stream item (one user's contribution)", build=_matrices("blt"), epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2,
              BrokenVariant("no-shift", "PSD shift removed: public post-processing, must stay consistent",
                            caught=False)), optimal="lda",
))
