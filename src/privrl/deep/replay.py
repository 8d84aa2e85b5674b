"""Experience-replay minibatches of many runs in lockstep (the ``update_every="step"`` loop of
:mod:`privrl.q_learning.training`: the reference configuration's batch of 128 from a replay memory).

Each minibatch of a run is a uniformly random set of ``batch_size`` distinct indices of its replay
buffer, every subset equally likely (``Generator.choice(size, batch_size, replace=False)`` in
distribution), drawn by Floyd's algorithm in a compiled kernel
(:func:`~privrl.deep._kernels.floyd_minibatches`) for a block of steps at once. A run reads
only its own replay stream: per block, words of ``[0, 2^63)`` (the top 63 bits of uniform 64-bit
integers its generator draws), turned into bounded integers exactly by rejection, so its
minibatches do not depend on the other runs of the batch. The order of the indices within a
minibatch is not uniform (the update does not depend on it but through rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Minibatches"]

#: steps whose minibatches are drawn together
_BLOCK_STEPS = 32
#: words drawn per block beyond one per index: a rejection (probability below size / 2^63 per
#: index) reads one; a run that reads them all draws more and redoes its block
_SPARE = 16


class Minibatches:
    """The minibatches of ``R`` runs for a known schedule of buffer sizes: the ``b``-th call of
    ``next()`` gives ``(R, batch_size)`` indices, row ``r`` a uniformly random ``batch_size``-subset
    of ``range(sizes[b])`` drawn from ``rngs[r]`` alone."""

    def __init__(self, rngs: Sequence[np.random.Generator], batch_size: int, sizes: Sequence[int] | np.ndarray) -> None:
        # here, not at the top: numba loads on the first fit only, never on ``import privrl``
        from privrl.deep import _kernels

        self._kernel = _kernels.floyd_minibatches
        self.rngs = list(rngs)
        self.batch_size = int(batch_size)
        self.sizes = np.asarray(sizes, np.int64)
        if self.sizes.size and (self.sizes.min() < self.batch_size or self.batch_size < 1):
            raise ValueError("Minibatches needs 1 <= batch_size <= every size")
        self._block = np.empty((len(self.rngs), 0, self.batch_size), np.int64)
        self._drawn = 0      # steps of the schedule whose minibatches are drawn
        self._next = 0       # the next step's row of _block

    def __iter__(self) -> Minibatches:
        return self

    def __next__(self) -> np.ndarray:
        if self._next == self._block.shape[1]:
            if self._drawn == self.sizes.size:
                raise StopIteration
            self._draw_block()
        self._next += 1
        return self._block[:, self._next - 1]

    def _draw_block(self) -> None:
        sizes = self.sizes[self._drawn:self._drawn + _BLOCK_STEPS]
        R, k = len(self.rngs), self.batch_size
        count = sizes.size * k + _SPARE
        bits = np.stack([_words(rng, count) for rng in self.rngs])
        out = np.empty((R, sizes.size, k), np.int64)
        used = np.empty(R, np.int64)
        self._kernel(bits, sizes, out, used)
        for r in np.flatnonzero(used < 0).tolist():      # run r rejected more than _SPARE words
            row = bits[r]
            while used[r] < 0:
                row = np.concatenate([row, _words(self.rngs[r], _SPARE)])
                self._kernel(row[None], sizes, out[r:r + 1], used[r:r + 1])
        self._block, self._next = out, 0
        self._drawn += sizes.size


def _words(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` words uniform on ``[0, 2^63)``: the top 63 bits of uniform 64-bit integers."""
    return (rng.integers(0, 2**64, size=count, dtype=np.uint64) >> np.uint64(1)).view(np.int64)
