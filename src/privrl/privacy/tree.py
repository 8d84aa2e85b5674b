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
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.privacy import events
from privrl.privacy.noise import NoiseSource, NumpyNoise, triu_pairs

if TYPE_CHECKING:  # annotations only
    from dp_accounting import DpEvent

__all__ = ["with_shift", "noise_multipliers", "counter_settings", "BinaryCounter", "NodeNoise", "GaussianNodeNoise",
           "tree_depth", "max_membership", "cover_levels", "symmetric_gaussian", "gaussian_rounds",
           "gaussian_round_layout", "row_scales", "scaled_noise"]

#: A node-noise callable: ``noise(shape, symmetric) -> array of that shape``.
NodeNoiseFn = Callable[[tuple, bool], np.ndarray]


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


def symmetric_gaussian(rng: RngLike, shape: tuple, sigma: float) -> np.ndarray:
    """Symmetric Gaussian matrices of ``shape = (..., n, n)`` from seeded NumPy noise (upper triangle
    i.i.d. ``N(0, σ²)``, diagonal included, mirrored; :meth:`NoiseSource.symmetric_gaussian`).
    For public Monte-Carlo constants and tests; privacy noise comes from a fit's noise source."""
    return NumpyNoise(as_generator(rng)).symmetric_gaussian(shape, sigma)


def row_scales(sigma: object, rows: int, owner: str = "NodeNoise") -> np.ndarray | float:
    """``sigma`` as a float, or as a ``(rows,)`` array of non-negative stds (one per counter of a
    stack along the first axis, e.g. one per step h)."""
    arr = np.asarray(sigma, dtype=float)
    if arr.ndim == 0:
        return check_scalar(float(arr), "sigma", owner=owner, low=0.0)
    if arr.shape != (rows,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise param_error("sigma", owner, f"a float >= 0 or {rows} finite floats >= 0 (one per counter)", sigma)
    return arr


class NodeNoise:
    """Node noise drawn from a :class:`~privrl.privacy.noise.NoiseSource`: ``N(0, σ²)`` i.i.d.
    (symmetric Gaussian for matrix streams: the upper triangle, mirrored).

    ``sigma`` is one std, or one per counter of a stack along the first axis (``(shape[0],)``):
    then the rows with ``σ_i > 0`` draw standard normals (row by row, in order) that are scaled by
    their ``σ_i``, and rows with ``σ_i = 0`` draw nothing and are zero. Either way a draw of std σ
    is ``σ · Z`` with ``Z`` the source's standard draw, so :class:`ConstantNoise` ``c`` gives
    ``c · σ`` and seeded NumPy gives exactly ``rng.normal(0, σ)``. ``calls`` counts the nodes drawn.
    """

    def __init__(self, source: NoiseSource, sigma: Any) -> None:
        if not isinstance(source, NoiseSource):
            raise param_error("source", "NodeNoise", "a privrl NoiseSource", type(source).__name__)
        self.source = source
        self.sigma = sigma if np.ndim(sigma) else check_scalar(sigma, "sigma", owner="NodeNoise", low=0.0)
        self.calls = 0

    def __call__(self, shape: tuple, symmetric: bool) -> np.ndarray:
        self.calls += 1
        if not np.ndim(self.sigma):
            draw = self.source.symmetric_gaussian if symmetric else self.source.gaussian
            return draw(shape, self.sigma)
        return scaled_noise(self.source, shape, symmetric, row_scales(self.sigma, shape[0]))


def scaled_noise(source: NoiseSource, shape: tuple, symmetric: bool, sigma: ArrayLike, axis: int = 0) -> np.ndarray:
    """Noise of ``shape`` whose std is ``sigma[i]`` along ``axis`` (symmetric matrices in the last
    two axes when ``symmetric``): the indices with ``σ_i > 0`` draw ``source``'s standard normals
    (``std = 1``; along ``axis = 0`` row by row, in order) scaled by their σ_i; the others draw
    nothing and are zero. Along ``axis = 0`` this is :class:`NodeNoise`'s draw."""
    sigma = np.asarray(sigma, dtype=float)
    out = np.zeros(shape)
    on = np.flatnonzero(sigma > 0)
    if len(on):
        sub = list(shape)
        sub[axis] = len(on)
        z = (source.symmetric_gaussian if symmetric else source.gaussian)(tuple(sub), 1.0)
        where: list[Any] = [slice(None)] * len(shape)
        where[axis] = on
        out[tuple(where)] = sigma[on].reshape([-1 if i == axis else 1 for i in range(len(shape))]) * z
    return out


class GaussianNodeNoise(NodeNoise):
    """The default node noise: seeded NumPy (``rng``; a fresh unseeded generator when None)."""

    def __init__(self, sigma: Any, rng: RngLike) -> None:
        self.rng = as_generator(rng)
        super().__init__(NumpyNoise(self.rng), sigma)


def gaussian_round_layout(parts: list[tuple[tuple, bool, object]]) -> tuple[int, np.ndarray, np.ndarray]:
    """How one round of node noise is made from standard normals (see :func:`gaussian_rounds`).

    Returns ``(m, scale, index)``: a round draws ``m`` standard normals ``z`` and its parts, each
    flattened and concatenated in order, are ``(scale · z)[index]`` — ``scale`` holds each entry's σ,
    ``index`` mirrors the upper triangle of symmetric parts. A part's σ is one float or one per row
    of its first axis (as :class:`NodeNoise`); rows (parts) with ``σ = 0`` draw nothing and are zero
    (``index`` points at an appended 0). This is the order in which :class:`NodeNoise` draws.
    """
    scales, index, m = [], [], 0
    for shape, symmetric, sigma in parts:
        size = int(np.prod(shape, dtype=np.int64))
        rows = shape[0]
        sig = np.broadcast_to(np.asarray(sigma, dtype=float), (rows,))
        per_row = size // rows
        idx = np.full((rows, per_row), -1, dtype=np.intp)
        if symmetric:
            n = shape[-1]
            lead = per_row // (n * n)
            ntri = len(triu_pairs(n)[0])
            rr, cc = np.triu_indices(n)
            pos = np.empty((n, n), dtype=np.intp)
            pos[rr, cc] = np.arange(ntri)
            pos[cc, rr] = np.arange(ntri)
            row_idx = (np.arange(lead)[:, None] * ntri + pos.ravel()[None, :]).ravel()
            count = lead * ntri
        else:
            row_idx, count = np.arange(per_row), per_row
        for i in np.flatnonzero(sig > 0):
            idx[i] = m + row_idx
            scales.append(np.full(count, sig[i]))
            m += count
        index.append(idx.ravel())
    scale = np.concatenate(scales + [np.zeros(1)])
    out = np.concatenate(index) if index else np.zeros(0, dtype=np.intp)
    out[out < 0] = m                                                    # the appended zero
    return m, scale, out


def gaussian_rounds(source: NoiseSource | RngLike, parts: list[tuple[tuple, bool, object]], n_rounds: int
                    ) -> list[np.ndarray]:
    """``n_rounds`` rounds of node noise drawn at once (a speed path for many inserts).

    Round ``i`` draws, for each part ``(shape, symmetric, sigma)`` in turn, what :class:`NodeNoise`
    ``(source, sigma)`` draws for ``(shape, symmetric)``; ``out[j][i]`` is part ``j`` of round ``i``.
    For seeded NumPy (``source`` a NumpyNoise or a generator) the result is bit-identical to the
    ``n_rounds × len(parts)`` calls made one at a time on the same stream (tested).
    """
    noise = source if isinstance(source, NoiseSource) else NumpyNoise(as_generator(source))
    m, scale, index = gaussian_round_layout(parts)
    z = np.concatenate([noise.gaussian((n_rounds, m), 1.0), np.zeros((n_rounds, 1))], axis=1)
    flat = (scale * z)[:, index]
    out, start = [], 0
    for shape, _, _ in parts:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(flat[:, start:start + size].reshape(n_rounds, *shape))
        start += size
    return out


class BinaryCounter:
    """Running sums of a stream of arrays under the binary mechanism (Chan et al. 2011).

    Parameters
    ----------
    shape : the shape of one item; a batch of independent counters may be stacked in front
        (e.g. ``(H, d, d)`` for H matrix counters, which get independent noise).
    n_items : the most items that will be inserted (``K − 1`` for a K-episode learner, §6 A9 of
        the spec); inserting more raises, since the privacy accounting assumes this bound.
    sigma : the per-entry noise standard deviation of every node: one float, or one per counter of
        a stack along the first axis (``(shape[0],)``, e.g. one per step h).
    symmetric : the last two axes are symmetric matrices (symmetric node noise).
    shift : a public constant added as ``shift · I`` to each released matrix (PSD shift,
        Zhou 2022 Sec 6.1: ``Λ = Ĝ + 2Υ I``); post-processing.
    noise : the node noise ``(shape, symmetric) -> array``, e.g. :class:`NodeNoise` over a fit's
        noise source; default :class:`GaussianNodeNoise` ``(sigma, rng)``.
    sensitivity : the ℓ2-sensitivity Δ of one item (for :meth:`event`), one float or one per
        counter of the stack (as ``sigma``); ``None`` leaves it unset.
    """

    def __init__(self, shape: tuple[int, ...], *, n_items: int, sigma: float = 0.0, symmetric: bool = False,
                 shift: float = 0.0, noise: NodeNoiseFn | None = None, rng: RngLike = None,
                 sensitivity: ArrayLike | None = None) -> None:
        owner = "BinaryCounter"
        self.shape, self.n_items, self.sigma, self.symmetric, self.shift = counter_settings(
            owner, shape, n_items, sigma, symmetric, shift)
        if sensitivity is not None:
            sens = np.asarray(sensitivity, dtype=float)
            if sens.ndim == 0:
                sensitivity = check_scalar(float(sens), "sensitivity", owner=owner, low=0.0)
            elif sens.shape != (self.shape[0],) or np.any(sens < 0) or not np.all(np.isfinite(sens)):
                raise param_error("sensitivity", owner, f"a float >= 0 or {self.shape[0]} floats >= 0", sensitivity)
            else:
                sensitivity = sens
        self.sensitivity = sensitivity
        self.noise = noise if noise is not None else GaussianNodeNoise(self.sigma, rng)
        self.t = 0
        self._exact = np.zeros(self.shape)
        self._stack: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._release: np.ndarray | None = None

    # -- stream
    def insert(self, item: ArrayLike) -> None:
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
            self._release = with_shift(self._exact + self.noise_sum(), self.shift)
        return self._release

    # -- privacy
    def noise_multiplier(self) -> float | np.ndarray:
        """σ/Δ of each node (∞ when Δ = 0, i.e. the counter touches no data); per counter of the
        stack when σ or Δ is given per counter."""
        return noise_multipliers(self.sigma, self.sensitivity, owner="BinaryCounter")

    def event(self) -> DpEvent:
        """The privacy loss of one item: ``max_membership(n_items)`` Gaussian node releases (of each
        counter of the stack when σ or Δ is given per counter: their composition)."""
        count = max(1, max_membership(self.n_items))
        nm = np.atleast_1d(self.noise_multiplier())
        parts = [events.self_composed(events.gaussian(float(x)), count) if 0 < x < math.inf
                 else events.gaussian(float(x)) for x in nm]
        return parts[0] if len(parts) == 1 else events.composed(parts)


def with_shift(out: np.ndarray, shift: float) -> np.ndarray:
    """A released (stack of) matrix statistic(s) plus ``shift · I`` (public post-processing)."""
    return out + shift * np.eye(out.shape[-1]) if shift else out


def noise_multipliers(sigma: ArrayLike, sensitivity: ArrayLike | None, *, owner: str,
                      factor: float = 1.0) -> float | np.ndarray:
    """``σ / (factor · Δ)`` per counter of a stack (∞ where Δ = 0: the counter touches no data);
    ``factor`` is how much of Δ one release carries beyond one item (1 for a tree node, ``s_n`` for
    the factorization's one release of ``A x``)."""
    if sensitivity is None:
        raise param_error("sensitivity", owner, "set to compute the privacy event", None)
    sigma, sens = np.broadcast_arrays(np.asarray(sigma, float), factor * np.asarray(sensitivity, float))
    nm = np.divide(sigma, sens, out=np.full(sigma.shape, math.inf), where=sens > 0)
    return float(nm) if nm.ndim == 0 else nm


def counter_settings(owner: str, shape: Any, n_items: Any, sigma: Any, symmetric: Any, shift: Any, *,
                     scalar_ok: bool = True) -> tuple[tuple[int, ...], int, Any, bool, float]:
    """The validated ``(shape, n_items, sigma, symmetric, shift)`` of a continual counter (the
    binary tree's or the factorization's): positive ints for the shape (``()`` only when
    ``scalar_ok``), per-counter stds along its first axis, square matrices when symmetric, and a
    shift (``shift · I``) only on symmetric streams."""
    dims = tuple(int(s) for s in shape)
    if (not dims and not scalar_ok) or any(s < 1 for s in dims):
        raise param_error("shape", owner, "a tuple of positive ints" if scalar_ok else
                          "a non-empty tuple of positive ints", shape)
    n = check_scalar(n_items, "n_items", owner=owner, kind=int, low=0)
    scales = row_scales(sigma, dims[0] if dims else 1, owner)
    sym = bool(symmetric)
    if sym and (len(dims) < 2 or dims[-1] != dims[-2]):
        raise param_error("shape", owner, "(..., n, n) when symmetric=True", shape)
    s = check_scalar(shift, "shift", owner=owner, low=0.0)
    if s and not sym:
        raise param_error("shift", owner, "0 for vector streams (the shift adds shift*I)", shift)
    return dims, n, scales, sym, s
