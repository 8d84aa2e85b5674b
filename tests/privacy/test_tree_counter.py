"""The binary counting mechanism (spec §7.1, tests 1–7)."""

import math

import dp_accounting
import numpy as np
import pytest

from privrl.errors import InvalidParameterError
from privrl.privacy import ConstantNoise, Ledger
from privrl.privacy.tree import (
    BinaryCounter,
    GaussianNodeNoise,
    NodeNoise,
    cover_levels,
    max_membership,
    symmetric_gaussian,
    tree_depth,
)


def _sym_stream(rng, n, d):
    x = rng.normal(size=(n, d, d))
    return x + np.swapaxes(x, 1, 2)


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 8, 9, 16, 17, 100, 128, 1000, 1024])
def test_exact_with_zero_noise(K):
    rng = np.random.default_rng(K)
    items = _sym_stream(rng, K - 1, 3)
    mat = BinaryCounter((3, 3), n_items=K - 1, sigma=0.0, symmetric=True, rng=0)
    vec = BinaryCounter((3,), n_items=K - 1, sigma=0.0, rng=0)
    total = np.zeros((3, 3))
    for t, x in enumerate(items, start=1):
        mat.insert(x)
        vec.insert(x[0])
        total += x
        np.testing.assert_allclose(mat.release(), total, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(vec.release(), total[0], rtol=1e-9, atol=1e-9)
        assert mat.levels == cover_levels(t)


def _membership(n_items):
    """Max over items of the number of nodes (dyadic blocks closed within n_items) containing it."""
    counts = np.zeros(n_items + 1, dtype=int)
    for t in range(1, n_items + 1):
        level = (t & -t).bit_length() - 1
        counts[t - 2**level + 1:t + 1] += 1
    return counts[1:].max() if n_items else 0


@pytest.mark.parametrize("K,membership,cover", [(8, 3, 3), (16, 4, 4), (1000, 10, 9), (1024, 10, 10)])
def test_node_invariants_reference(K, membership, cover):
    n = K - 1
    assert _membership(n) == membership == max_membership(n) == tree_depth(K)
    assert max(len(cover_levels(t)) for t in range(1, n + 1)) == cover
    assert cover <= math.ceil(math.log2(K)) + 1


def test_prefix_is_exact_sum_plus_exactly_its_nodes_noise():
    """Constant injected noise: node j gets noise 10**j-ish distinct values; each prefix equals the
    exact sum plus the noise of the nodes of the set bits of t, at most ⌈log2 K⌉ + 1 of them."""
    K = 37
    values = np.arange(1, K) * 1000.0
    counter = BinaryCounter((2,), n_items=K - 1, noise=NodeNoise(ConstantNoise(values), 1.0))
    node_value = {}          # level -> noise value of the live node at that level
    rng = np.random.default_rng(0)
    total = np.zeros(2)
    for t in range(1, K):
        x = rng.normal(size=2)
        counter.insert(x)
        total += x
        level = (t & -t).bit_length() - 1
        node_value = {lv: v for lv, v in node_value.items() if lv > level}
        node_value[level] = values[t - 1]          # one fresh draw per insert
        levels = cover_levels(t)
        assert sorted(node_value) == levels
        assert len(levels) <= math.ceil(math.log2(K)) + 1
        np.testing.assert_allclose(counter.release(), total + sum(node_value.values()), rtol=0, atol=1e-9)
    assert counter.noise.calls == K - 1


def test_noise_reuse_and_symmetry():
    noise = GaussianNodeNoise(1.0, rng=3)
    c = BinaryCounter((4, 4), n_items=20, sigma=1.0, symmetric=True, noise=noise, shift=0.5)
    for _t in range(13):
        c.insert(np.eye(4))
        a, b = c.release(), c.release()
        assert np.array_equal(a, b)
        assert np.array_equal(a, a.T)
    assert noise.calls == 13


def test_overflow_and_bad_input_raise():
    c = BinaryCounter((2,), n_items=1, sigma=1.0, rng=0)
    c.insert(np.ones(2))
    with pytest.raises(InvalidParameterError, match="n_items"):
        c.insert(np.ones(2))
    with pytest.raises(InvalidParameterError, match="shape"):
        BinaryCounter((2, 3), n_items=3, symmetric=True)
    with pytest.raises(InvalidParameterError, match="sigma"):
        BinaryCounter((2,), n_items=3, sigma=-1.0)
    with pytest.raises(InvalidParameterError, match="item"):
        BinaryCounter((2,), n_items=3).insert(np.ones(3))


def test_psd_shift_is_added_to_the_release():
    c = BinaryCounter((3, 3), n_items=4, sigma=0.0, symmetric=True, shift=2.5, rng=0)
    c.insert(np.zeros((3, 3)))
    np.testing.assert_array_equal(c.release(), 2.5 * np.eye(3))


def test_noise_variance_per_prefix():
    """Zero inputs, d = 4, σ = 1, 20 000 independent counters (batched): at t = 7 each
    upper-triangle entry has variance popcount(7) = 3 (±5%), the diagonal too (not 6), mean ±0.05,
    |corr| < 0.03 between distinct entries; vectors: 3σ² per coordinate; the covariance of the
    releases at t and t+1 equals the number of shared nodes."""
    n = 20000
    c = BinaryCounter((n, 4, 4), n_items=8, sigma=1.0, symmetric=True, rng=11)
    v = BinaryCounter((n, 4), n_items=8, sigma=1.0, rng=12)
    releases = {}
    for t in range(1, 9):
        c.insert(np.zeros((n, 4, 4)))
        v.insert(np.zeros((n, 4)))
        releases[t] = (c.release().copy(), v.release().copy())
    for t in range(1, 9):      # every prefix: variance popcount(t) per coordinate
        np.testing.assert_allclose(releases[t][1].var(0), bin(t).count("1"), rtol=0.05)
    mat7, vec7 = releases[7]
    iu = np.triu_indices(4)
    upper = mat7[:, iu[0], iu[1]]
    assert np.all(np.abs(upper.mean(0)) < 0.05)
    np.testing.assert_allclose(upper.var(0), 3.0, rtol=0.05)
    np.testing.assert_allclose(vec7.var(0), 3.0, rtol=0.05)
    corr = np.corrcoef(upper.T)
    assert np.max(np.abs(corr - np.diag(np.diag(corr)))) < 0.03
    assert np.array_equal(mat7, np.swapaxes(mat7, 1, 2))
    # shared nodes: t=5 = {4, 1} and t=6 = {4, 2} share the level-2 node; t=6 and t=7 share {4, 2}
    for t1, t2, shared in [(5, 6, 1), (6, 7, 2), (7, 8, 0)]:
        a, b = releases[t1][1][:, 0], releases[t2][1][:, 0]
        assert abs(np.mean(a * b) - shared) < 0.1


def test_independent_counters_have_uncorrelated_noise():
    n = 20000
    a = BinaryCounter((n, 3, 3), n_items=4, sigma=1.0, symmetric=True, rng=np.random.default_rng(1))
    b = BinaryCounter((n, 3, 3), n_items=4, sigma=1.0, symmetric=True, rng=np.random.default_rng(2))
    for _ in range(3):
        a.insert(np.zeros((n, 3, 3)))
        b.insert(np.zeros((n, 3, 3)))
    assert abs(np.corrcoef(a.release()[:, 0, 1], b.release()[:, 0, 1])[0, 1]) < 0.03
    # the stacked batch of counters (one per h) also gets independent noise per counter
    assert abs(np.corrcoef(a.release()[:-1, 0, 1], a.release()[1:, 0, 1])[0, 1]) < 0.03


def test_data_and_noise_are_separate():
    """Changing one item changes every later release by exactly the change in the true sum."""
    rng = np.random.default_rng(5)
    items = rng.normal(size=(15, 3))
    changed = items.copy()
    changed[6] += np.array([1.0, -2.0, 0.5])
    c1 = BinaryCounter((3,), n_items=15, sigma=4.0, rng=9)
    c2 = BinaryCounter((3,), n_items=15, sigma=4.0, rng=9)
    for t in range(15):
        c1.insert(items[t])
        c2.insert(changed[t])
        diff = c2.release() - c1.release()
        expected = changed[: t + 1].sum(0) - items[: t + 1].sum(0)
        np.testing.assert_allclose(diff, expected, atol=1e-9)
        if t < 6:
            assert np.array_equal(c1.release(), c2.release())


def test_event_composes_membership_gaussians_and_matches_ledger():
    c = BinaryCounter((3,), n_items=999, sigma=2.0, sensitivity=0.5, rng=0)
    ev = c.event()
    assert ev == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(4.0), 10)
    rho = Ledger([ev]).zcdp_rho()
    assert rho == pytest.approx(10 * 0.5**2 / (2 * 2.0**2))
    assert isinstance(BinaryCounter((3,), n_items=9, sigma=0.0, sensitivity=1.0).event(),
                      dp_accounting.NonPrivateDpEvent)


def test_symmetric_gaussian_diagonal_variance():
    x = symmetric_gaussian(np.random.default_rng(0), (40000, 3, 3), 2.0)
    np.testing.assert_allclose(x[:, 1, 1].var(), 4.0, rtol=0.05)
    np.testing.assert_allclose(x[:, 0, 2].var(), 4.0, rtol=0.05)
    assert np.array_equal(x, np.swapaxes(x, 1, 2))


def test_per_counter_sigma_structure_with_constant_noise():
    """A stack of counters with one σ per counter (σ_h, e.g. one per step h): with constant noise c
    every live node of counter h holds c·σ_h (0 where σ_h = 0, which draws nothing), so the release
    after t inserts is the exact prefix sum plus popcount(t)·c·σ_h, mirrored for matrices; the event
    composes each counter's membership Gaussians (σ_h/Δ_h) and a counter with Δ_h = 0 is a no-op."""
    sigma, sens = np.array([2.0, 0.0, 0.5]), np.array([1.0, 0.0, 0.25])
    source = ConstantNoise(3.0)
    c = BinaryCounter((3, 2, 2), n_items=6, sigma=sigma, symmetric=True, noise=NodeNoise(source, sigma),
                      sensitivity=sens)
    rng = np.random.default_rng(0)
    total = np.zeros((3, 2, 2))
    for t in range(1, 7):
        x = rng.normal(size=(3, 2, 2))
        x = x + np.swapaxes(x, 1, 2)
        c.insert(x)
        total += x
        expected = total + bin(t).count("1") * 3.0 * sigma[:, None, None] * np.ones((3, 2, 2))
        np.testing.assert_allclose(c.release(), expected, rtol=0, atol=1e-12)
    assert source.calls == 6                                           # one draw per node (rows with σ > 0)
    ev = c.event()
    count = max_membership(6)
    assert ev == dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), count),
        dp_accounting.NoOpDpEvent(),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), count)])


def test_node_noise_per_row_is_the_block_layout():
    """NodeNoise with per-row σ draws the standard normals of the rows with σ > 0 in row-major order:
    exactly gaussian_rounds' layout (the batched engine's), and seeded NumPy σ·Z equals
    rng.normal(0, σ)."""
    from privrl.privacy import NumpyNoise
    from privrl.privacy.tree import gaussian_rounds

    parts = [((3, 2, 2), True, np.array([1.5, 0.0, 0.7])), ((3, 2), False, np.array([0.0, 2.0, 1.0])),
             ((3, 1, 1), True, 0.3)]
    a, b = NumpyNoise(np.random.default_rng(4)), np.random.default_rng(4)
    nodes = [NodeNoise(a, sigma) for _, _, sigma in parts]
    one_by_one = [[node(shape, sym) for node, (shape, sym, _) in zip(nodes, parts)] for _ in range(5)]
    block = gaussian_rounds(b, parts, 5)
    for i in range(5):
        for j in range(len(parts)):
            np.testing.assert_array_equal(block[j][i], one_by_one[i][j])
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_array_equal(NumpyNoise(g1).gaussian((50,), 0.37), g2.normal(0.0, 0.37, size=50))
