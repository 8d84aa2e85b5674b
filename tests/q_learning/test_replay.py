"""The replay minibatches (deep/replay.py, Floyd's algorithm in deep/_kernels.py): every
subset of the buffer equally likely, distinct indices in range, exact bounded integers (rejection),
each run on its own stream (the plain-Python fallback against the compiled kernel: test_kernels.py)."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from privrl.deep import _kernels
from privrl.deep.replay import _SPARE, Minibatches

TOP = 2**63 - 1


def _subset_counts(n: int, k: int, draws: int, seed: int) -> np.ndarray:
    index = {s: i for i, s in enumerate(itertools.combinations(range(n), k))}
    counts = np.zeros(len(index), np.int64)
    for pick in Minibatches([np.random.default_rng(seed)], k, [n] * draws):
        counts[index[tuple(sorted(pick[0].tolist()))]] += 1
    return counts


@pytest.mark.parametrize(("n", "k"), [(6, 3), (7, 2), (5, 4), (4, 1)])
def test_every_subset_is_equally_likely(n, k):
    """Chi-square over all C(n, k) subsets, 1000 expected per subset, fixed seed, rejected at
    p < 1e-3 (for n, k = 6, 3, a sampler that favours the subsets holding one index by 10 % fails
    it 19 times in 20; observed p here: 0.12 to 0.88)."""
    counts = _subset_counts(n, k, 1000 * math.comb(n, k), seed=n * 10 + k)
    assert (counts > 0).all()
    assert chisquare(counts).pvalue > 1e-3


def test_minibatches_are_distinct_indices_in_range_for_a_growing_buffer():
    rng = np.random.default_rng(0)
    sizes = np.minimum(np.arange(1, 601), 400)
    sizes = sizes[sizes >= 64]
    n = 0
    for size, pick in zip(sizes, Minibatches([rng, np.random.default_rng(1)], 64, sizes)):
        assert pick.shape == (2, 64)
        for row in pick:
            assert len(set(row.tolist())) == 64 and row.min() >= 0 and row.max() < size
        n += 1
    assert n == sizes.size
    # the last index of the buffer is as likely as any other: ~64/400 of the full-buffer batches
    full = np.concatenate([p[0] for p in Minibatches([np.random.default_rng(2)], 64, [400] * 2000)])
    share = np.bincount(full, minlength=400) / 2000
    assert abs(share[-1] - 64 / 400) < 0.03      # 3.6 standard deviations
    # the whole buffer: a permutation
    for pick in Minibatches([np.random.default_rng(3)], 5, [5] * 20):
        assert sorted(pick[0].tolist()) == list(range(5))


def test_a_runs_minibatches_do_not_depend_on_the_other_runs():
    sizes = np.arange(40, 140)
    alone = np.stack(list(Minibatches([np.random.default_rng(5)], 16, sizes)))
    batch = np.stack(list(Minibatches([np.random.default_rng(9), np.random.default_rng(5)], 16, sizes)))
    np.testing.assert_array_equal(batch[:, 1], alone[:, 0])
    assert not np.array_equal(batch[:, 0], alone[:, 0])


def test_bounded_integers_are_exact_by_rejection():
    """m = 3: 2^63 mod 3 = 2, so the words 2^63 - 1 and 2^63 - 2 (the incomplete top chunk) are
    rejected and the next word read; 2^63 - 3 is the last accepted (giving 2)."""
    out = np.empty((1, 1, 1), np.int64)
    used = np.empty(1, np.int64)
    _kernels.floyd_minibatches(np.array([[TOP, TOP - 1, 7]]), np.array([3]), out, used)
    assert out[0, 0, 0] == 1 and used[0] == 3
    _kernels.floyd_minibatches(np.array([[TOP - 2]]), np.array([3]), out, used)
    assert out[0, 0, 0] == 2 and used[0] == 1
    # a power of two divides 2^63: nothing is rejected
    _kernels.floyd_minibatches(np.array([[TOP]]), np.array([4]), out, used)
    assert out[0, 0, 0] == 3 and used[0] == 1
    # words that run out: reported, not made up
    _kernels.floyd_minibatches(np.array([[TOP, TOP - 1]]), np.array([3]), out, used)
    assert used[0] == -1


class _Words:
    """A generator stand-in whose first draw is all rejected words (m = 3) and then counts up."""

    def __init__(self) -> None:
        self.calls = 0

    def integers(self, low, high, size, dtype):
        self.calls += 1
        if self.calls == 1:
            return np.full(size, 2**64 - 1, np.uint64)          # 2^63 - 1 after the shift: rejected
        return np.arange(size, dtype=np.uint64) * np.uint64(2) + np.uint64(2 * self.calls)


def test_a_run_that_rejects_every_spare_word_draws_more_and_redoes_its_block():
    words = _Words()
    picks = list(Minibatches([words], 1, [3, 3]))
    # the first block (2 steps + _SPARE words) all rejected; the next draw of _SPARE words gives 2, 3
    assert words.calls == 2 and _SPARE >= 2
    assert [int(p[0, 0]) for p in picks] == [4 // 2 % 3, 6 // 2 % 3]

