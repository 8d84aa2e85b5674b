"""The binary counting mechanism (Chan, Shi & Song 2011, Algorithm 2) for streams of arrays.

Used by Zhou (2022, Sec 6.1, Lemma 6.1) to release the running Gram matrices and moment vectors of
an online learner. Item ``t`` (1-based) closes the dyadic block of level ``i = ctz(t)`` (the number
of trailing zeros of ``t``); that block is a *node* of the tree and gets fresh noise, drawn **once**
and reused by every later prefix release that covers it. After ``t`` inserts the prefix sum
``x_1 + … + x_t`` is covered by the nodes of the set bits of ``t`` (``popcount(t)`` of them).

Implementation note. Since every node is (exact block sum + its noise), the prefix release
``Σ_nodes (exact_i + noise_i)`` equals ``exact prefix sum + Σ_nodes noise_i``. We keep the exact
running sum and only the noise of the live nodes: the same released value (in exact arithmetic),
memory O(log K) arrays, and with zero noise the release is *bit-identical* to the plain running
sum, so an infinite budget reproduces the non-private learner exactly.

Privacy. One item belongs to at most ``max_membership(n_items)`` nodes (= ``n_items.bit_length()``
= ⌈log2 K⌉ when ``n_items = K − 1``; Lemma 6.1(i)), each a Gaussian mechanism with multiplier
``σ/Δ`` on the item's contribution; :meth:`BinaryCounter.event` is that composition. Matrix streams
use symmetric noise (upper triangle i.i.d. ``N(0, σ²)``, diagonal included, mirrored — the
construction of :class:`privrl.privacy.SymmetricGaussianMatrixMechanism`, Zhou 2022 footnote 3), so
Δ is the ℓ2-sensitivity of the upper triangle, at most the Frobenius sensitivity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import dp_accounting
import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error

__all__ = ["BinaryCounter", "GaussianNodeNoise", "ConstantNodeNoise", "tree_depth", "max_membership",
           "cover_levels", "symmetric_gaussian", "gaussian_rounds", "gaussian_round_layout"]

#: A node-noise source: ``noise(shape, symmetric) -> array of that shape``.
NoiseSource = Callable[[tuple, bool], np.ndarray]


def tree_depth(n_episodes: int) -> int:
    """``m = max(1, ⌈log2 K⌉)`` of Zhou (2022, Lemma 6.1), for a run of ``K`` episodes."""
    n_episodes = check_scalar(n_episodes, "n_episodes", owner="tree_depth", kind=int, low=1)
    return max(1, (n_episodes - 1).bit_length())


def max_membership(n_items: int) -> int:
    """The largest number of tree nodes that contain one item when ``n_items`` items are inserted:
    ``⌊log2 n_items⌋ + 1`` (0 for an empty stream). Equals ⌈log2 K⌉ for ``n_items = K − 1``."""
    n_items = check_scalar(n_items, "n_items", owner="max_membership", kind=int, low=0)
    return int(n_items).bit_length()


def cover_levels(t: int) -> list[int]:
    """The levels of the nodes covering the prefix ``[1, t]``: the set bits of ``t``."""
    return [i for i in range(int(t).bit_length()) if (t >> i) & 1]


def symmetric_gaussian(rng: np.random.Generator, shape: tuple, sigma: float) -> np.ndarray:
    """Symmetric Gaussian matrices of ``shape = (..., n, n)``: upper triangle (diagonal included)
    i.i.d. ``N(0, σ²)``, mirrored below; the diagonal has variance σ² (not 2σ²)."""
    n = shape[-1]
    rows, cols, flat, flat_t = _triu(n)
    upper = rng.normal(0.0, sigma, size=(*shape[:-2], len(rows)))
    out = np.empty((*shape[:-2], n * n))
    out[..., flat] = upper
    out[..., flat_t] = upper
    return out.reshape(shape)


def gaussian_round_layout(parts: list[tuple[tuple, bool, float]]) -> tuple[int, np.ndarray, np.ndarray]:
    """How one round of node noise is made from standard normals (see :func:`gaussian_rounds`).

    Returns ``(m, scale, index)``: a round draws ``m`` standard normals ``z`` and its parts, each
    flattened and concatenated in order, are ``(scale · z)[index]`` — ``scale`` holds each part's σ,
    ``index`` mirrors the upper triangle of symmetric parts; parts with ``σ = 0`` draw nothing and
    are zero (``index`` points at an appended 0).
    """
    scales, index, m = [], [], 0
    for shape, symmetric, sigma in parts:
        size = int(np.prod(shape, dtype=np.int64))
        if sigma == 0:
            index.append(np.full(size, -1, dtype=np.intp))
            continue
        if symmetric:
            n = shape[-1]
            lead = int(np.prod(shape[:-2], dtype=np.int64))
            rows, cols, _, _ = _triu(n)
            pos = np.empty((n, n), dtype=np.intp)
            pos[rows, cols] = np.arange(len(rows))
            pos[cols, rows] = np.arange(len(rows))
            ntri = len(rows)
            idx = (np.arange(lead)[:, None] * ntri + pos.ravel()[None, :]).ravel()
            count = lead * ntri
        else:
            idx, count = np.arange(size), size
        index.append(m + idx)
        scales.append(np.full(count, float(sigma)))
        m += count
    scale = np.concatenate(scales + [np.zeros(1)])
    out = np.concatenate(index) if index else np.zeros(0, dtype=np.intp)
    out[out < 0] = m                                                    # the appended zero
    return m, scale, out


def gaussian_rounds(rng: np.random.Generator, parts: list[tuple[tuple, bool, float]], n_rounds: int) -> list[np.ndarray]:
    """``n_rounds`` rounds of node noise drawn at once (a speed path for many inserts).

    Round ``i`` draws, for each part ``(shape, symmetric, sigma)`` in turn, what
    :class:`GaussianNodeNoise` ``(sigma, rng)`` draws for ``(shape, symmetric)`` — nothing when
    ``sigma = 0``; ``out[j][i]`` is part ``j`` of round ``i``, of shape ``shape_j``. The result is
    bit-identical to the ``n_rounds × len(parts)`` calls made one at a time on the same generator:
    NumPy's ``normal(0, σ)`` is ``σ·z`` on one sequential standard-normal stream (tested).
    """
    m, scale, index = gaussian_round_layout(parts)
    z = np.concatenate([rng.standard_normal((n_rounds, m)), np.zeros((n_rounds, 1))], axis=1)
    flat = (scale * z)[:, index]
    out, start = [], 0
    for shape, _, _ in parts:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(flat[:, start:start + size].reshape(n_rounds, *shape))
        start += size
    return out


_TRIU_CACHE: dict[int, tuple[np.ndarray, ...]] = {}


def _triu(n: int) -> tuple[np.ndarray, ...]:
    if n not in _TRIU_CACHE:
        rows, cols = np.triu_indices(n)
        _TRIU_CACHE[n] = (rows, cols, rows * n + cols, cols * n + rows)
    return _TRIU_CACHE[n]


class GaussianNodeNoise:
    """The default node noise: ``N(0, σ²)`` i.i.d. (symmetric Gaussian for matrix streams)."""

    def __init__(self, sigma: float, rng: RngLike) -> None:
        self.sigma = check_scalar(sigma, "sigma", owner="GaussianNodeNoise", low=0.0)
        self.rng = as_generator(rng)
        self.calls = 0

    def __call__(self, shape: tuple, symmetric: bool) -> np.ndarray:
        self.calls += 1
        if self.sigma == 0:
            return np.zeros(shape)
        if symmetric:
            return symmetric_gaussian(self.rng, shape, self.sigma)
        return self.rng.normal(0.0, self.sigma, size=shape)


class ConstantNodeNoise:
    """Test noise: the ``j``-th node drawn gets the constant ``values[j]`` (``j`` counts draws)."""

    def __init__(self, values: Any) -> None:
        self.values = np.asarray(values, dtype=float)
        self.calls = 0

    def __call__(self, shape: tuple, symmetric: bool) -> np.ndarray:
        value = self.values[self.calls]
        self.calls += 1
        return np.full(shape, value)


class BinaryCounter:
    """Running sums of a stream of arrays under the binary mechanism (Chan et al. 2011).

    Parameters
    ----------
    shape : the shape of one item; a batch of independent counters may be stacked in front
        (e.g. ``(H, d, d)`` for H matrix counters, which get independent noise).
    n_items : the most items that will be inserted (``K − 1`` for a K-episode learner, §6 A9 of
        the spec); inserting more raises, since the privacy accounting assumes this bound.
    sigma : the per-entry noise standard deviation of every node.
    symmetric : the last two axes are symmetric matrices (symmetric node noise).
    shift : a public constant added as ``shift · I`` to each released matrix (PSD shift,
        Zhou 2022 Sec 6.1: ``Λ = Ĝ + 2Υ I``); post-processing.
    noise : an injectable node-noise source ``(shape, symmetric) -> array``; default
        :class:`GaussianNodeNoise` ``(sigma, rng)``.
    sensitivity : the ℓ2-sensitivity Δ of one item (for :meth:`event`); ``None`` leaves it unset.
    """

    def __init__(self, shape: tuple[int, ...], *, n_items: int, sigma: float = 0.0, symmetric: bool = False,
                 shift: float = 0.0, noise: NoiseSource | None = None, rng: RngLike = None,
                 sensitivity: float | None = None) -> None:
        owner = "BinaryCounter"
        self.shape = tuple(int(s) for s in shape)
        if any(s < 1 for s in self.shape):
            raise param_error("shape", owner, "a tuple of positive ints", shape)
        self.n_items = check_scalar(n_items, "n_items", owner=owner, kind=int, low=0)
        self.sigma = check_scalar(sigma, "sigma", owner=owner, low=0.0)
        self.symmetric = bool(symmetric)
        if self.symmetric and (len(self.shape) < 2 or self.shape[-1] != self.shape[-2]):
            raise param_error("shape", owner, "(..., n, n) when symmetric=True", shape)
        self.shift = check_scalar(shift, "shift", owner=owner, low=0.0)
        if self.shift and not self.symmetric:
            raise param_error("shift", owner, "0 for vector streams (the shift adds shift*I)", shift)
        if sensitivity is not None:
            sensitivity = check_scalar(sensitivity, "sensitivity", owner=owner, low=0.0)
        self.sensitivity = sensitivity
        self.noise = noise if noise is not None else GaussianNodeNoise(self.sigma, rng)
        self.t = 0
        self._exact = np.zeros(self.shape)
        self._stack: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._release: np.ndarray | None = None

    # -- stream
    def insert(self, item: Any) -> None:
        """Insert item ``t + 1``: close the node at level ``ctz(t + 1)`` with fresh noise."""
        x = np.asarray(item, dtype=float)
        if x.shape != self.shape:
            raise param_error("item", "BinaryCounter.insert", f"an array of shape {self.shape}", f"shape {x.shape}")
        if self.t >= self.n_items:
            raise param_error("item", "BinaryCounter.insert",
                              f"at most n_items={self.n_items} inserts (the accounting assumes it)",
                              f"insert number {self.t + 1}")
        self.t += 1
        level = (self.t & -self.t).bit_length() - 1
        # live nodes form a stack ordered by decreasing level; closing level ``level`` pops every
        # node below it. Each entry keeps the running noise total from the top of the stack down,
        # so the release costs one addition (no subtraction, no drift).
        while self._stack and self._stack[-1][0] < level:
            self._stack.pop()
        noise = self.noise(self.shape, self.symmetric)
        below = self._stack[-1][2] if self._stack else 0.0
        self._stack.append((level, noise, below + noise))
        self._exact = self._exact + x
        self._release = None

    @property
    def levels(self) -> list[int]:
        """Levels of the live nodes (= the set bits of ``t``)."""
        return sorted(level for level, _, _ in self._stack)

    def node_noise(self) -> dict[int, np.ndarray]:
        """The noise of each live node, by level (for tests and audits)."""
        return {level: noise for level, noise, _ in self._stack}

    def noise_sum(self) -> np.ndarray:
        """The total noise of the current release (sum over the covering nodes)."""
        return self._stack[-1][2] if self._stack else np.zeros(self.shape)

    def release(self) -> np.ndarray:
        """The noisy prefix sum ``Σ_{j≤t} x_j + Σ_{covering nodes} noise (+ shift·I)``.

        Repeated calls without an insert return the same (cached) array: no new noise.
        """
        if self._release is None:
            out = self._exact + self.noise_sum()
            if self.shift:
                out = out + self.shift * np.eye(self.shape[-1])
            self._release = out
        return self._release

    # -- privacy
    def noise_multiplier(self) -> float:
        """σ/Δ of each node (∞ when Δ = 0, i.e. the counter touches no data)."""
        if self.sensitivity is None:
            raise param_error("sensitivity", "BinaryCounter", "set to compute the privacy event", None)
        if self.sensitivity == 0:
            return math.inf
        return self.sigma / self.sensitivity

    def event(self) -> dp_accounting.DpEvent:
        """The privacy loss of one item: ``max_membership(n_items)`` Gaussian node releases."""
        count = max(1, max_membership(self.n_items))
        nm = self.noise_multiplier()
        if nm == 0:
            return dp_accounting.NonPrivateDpEvent()
        if math.isinf(nm):
            return dp_accounting.NoOpDpEvent()
        base = dp_accounting.GaussianDpEvent(nm)
        return base if count == 1 else dp_accounting.SelfComposedDpEvent(base, count)
