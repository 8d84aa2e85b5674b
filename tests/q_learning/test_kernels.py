"""The compiled kernels of the Q-learning loop (deep/_kernels.py, q_learning/_kernels.py) against their NumPy
references, the plain-Python fallback (PRIVRL_NO_JIT=1) against the compiled code, and the input
perturbation's block-drawn reward noise against one release per reward."""

import importlib.util

import numpy as np
import pytest

from privrl.deep import _kernels
from privrl.deep.networks import NumpyLearner, StackedMLP, _init_params, _loss_grad
from privrl.privacy import Ledger, NumpyNoise, Releaser
from privrl.q_learning import _kernels as ou_kernels
from privrl.q_learning.estimators import _RewardReleases

SIZES = (1, 16, 16, 2)


def _batch(R=5, n=32, seed=0):
    rng = np.random.default_rng(seed)
    params = np.stack([_init_params(SIZES, rng) for _ in range(R)])
    s = rng.random((R, n, 1))
    a = rng.integers(0, 2, (R, n))
    g = rng.normal(0.0, 0.3, (R, n))
    y = rng.normal(0.5, 1.0, (R, n))
    return params, s, a, g, y


def _numpy_td_gradient(params, s, a, g, y, loss):
    net = StackedMLP(SIZES, params)
    q, acts = net.forward(s)
    dtd = _loss_grad(NumpyLearner._taken(q, a) + g - y, loss) * (1.0 / a.shape[1])
    return net.grads(acts, net.deltas(acts, NumpyLearner._dout(q, a, dtd)))


def _plain_kernels(monkeypatch, module=_kernels):
    monkeypatch.setenv("PRIVRL_NO_JIT", "1")
    spec = importlib.util.spec_from_file_location(f"privrl_plain_{module.__name__.replace('.', '_')}", module.__file__)
    plain = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plain)
    assert not plain.JIT and not any(hasattr(getattr(plain, f), "py_func") for f in plain.__all__ if f != "JIT")
    return plain


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_kernels_equal_the_numpy_network_up_to_rounding(loss):
    """Forward values and the TD-loss gradient of every run equal the NumPy stacked network's
    (another order of sums only: 1e-12 absolute)."""
    params, s, a, g, y = _batch()
    layout = _kernels.layout_of(SIZES)
    out = np.empty((*s.shape[:2], 2))
    _kernels.forward(params, layout, s, out)
    np.testing.assert_allclose(out, StackedMLP(SIZES, params).forward(s)[0], rtol=0, atol=1e-12)
    grad = np.empty_like(params)
    _kernels.td_gradients(params, layout, s, a, g, y, loss == "huber", grad)
    want = _numpy_td_gradient(params, s, a, g, y, loss)
    np.testing.assert_allclose(grad, want, rtol=0, atol=1e-12)
    assert np.abs(want).max() > 1e-3      # a real gradient, not zeros


def test_a_run_does_not_depend_on_its_batch():
    """Each run is computed on its own: run 2 alone gives bit-identical values and gradients."""
    params, s, a, g, y = _batch()
    layout = _kernels.layout_of(SIZES)
    grad_all, grad_one = np.empty_like(params), np.empty_like(params[2:3])
    _kernels.td_gradients(params, layout, s, a, g, y, True, grad_all)
    _kernels.td_gradients(params[2:3].copy(), layout, s[2:3].copy(), a[2:3].copy(), g[2:3].copy(), y[2:3].copy(),
                          True, grad_one)
    np.testing.assert_array_equal(grad_all[2], grad_one[0])


def test_plain_python_kernels_agree_with_the_compiled_ones(monkeypatch):
    pytest.importorskip("numba")
    assert _kernels.JIT
    plain = _plain_kernels(monkeypatch)
    params, s, a, g, y = _batch(R=2, n=8)
    layout = _kernels.layout_of(SIZES)
    ga, gb = np.empty_like(params), np.empty_like(params)
    _kernels.td_gradients(params, layout, s, a, g, y, True, ga)
    plain.td_gradients(params, layout, s, a, g, y, True, gb)
    np.testing.assert_allclose(gb, ga, rtol=1e-13, atol=1e-15)
    oa, ob = np.empty((2, 8, 2)), np.empty((2, 8, 2))
    _kernels.forward(params, layout, s, oa)
    plain.forward(params, layout, s, ob)
    np.testing.assert_allclose(ob, oa, rtol=1e-13, atol=1e-15)
    # the OU stores: the same plan, the same values (the same operations), the same merged stores
    rng = np.random.default_rng(3)
    n = np.array([0, 3, 5])
    x = np.full((3, 12), np.inf)
    y_store = np.zeros((3, 12, 2))
    for r, k in enumerate(n):
        x[r, :k] = np.sort(rng.random(k))
        y_store[r, :k] = rng.normal(size=(k, 2))
    q = rng.random((3, 6))
    q[:, 4] = q[:, 1]                                   # a duplicate
    q[1, 5], q[2, 0] = x[1, 1], x[2, 3]                 # stored states
    order = q.argsort(axis=1)
    buf, read = rng.normal(size=(3, 10, 2)), np.array([0, 2, 4])
    results = []
    for mod in (ou_kernels, _plain_kernels(monkeypatch, ou_kernels)):
        qs, new, pos, counts = np.empty((3, 6)), np.empty((3, 6), bool), np.empty((3, 6), np.intp), np.empty(3, np.intp)
        em, up = np.empty((3, 6)), np.empty((3, 6))
        beta = np.array([1.0, 3.0, 9.0])
        assert mod.ou_plan(q, order, x, n, beta, read, np.array([10, 10, 7]), qs, new, pos, counts, em, up) == (1, 0)
        np.testing.assert_array_equal(qs, np.sort(q, axis=1))
        np.testing.assert_array_equal(pos, [x[r, :n[r]].searchsorted(qs[r]) for r in range(3)])
        np.testing.assert_array_equal(counts, [5, 4, 4])
        z, out = np.empty((3, 6, 2)), np.empty((3, 6, 2))
        mod.ou_values(order, qs, new, pos, x, y_store, n, beta, np.full(3, 0.4), buf, read, em, up, 0, z, out)
        np.testing.assert_array_equal(out[:, 4], out[:, 1])
        np.testing.assert_array_equal(out[1, 5], y_store[1, 1])
        np.testing.assert_array_equal(out[2, 0], y_store[2, 3])
        xs, ys = x.copy(), y_store.copy()
        mod.insert_stores(xs, ys, n, qs, z, new, pos)
        results.append((xs, ys, out))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)
    for r in range(3):
        want_x = np.unique(np.concatenate([x[r, :n[r]], q[r]]))
        np.testing.assert_array_equal(results[0][0][r, :len(want_x)], want_x)
        assert np.isinf(results[0][0][r, len(want_x):]).all()


def test_plain_python_replay_minibatches_agree_with_the_compiled_ones(monkeypatch):
    plain = _plain_kernels(monkeypatch)
    rng = np.random.default_rng(4)
    bits = (rng.integers(0, 2**64, size=(3, 5 * 8 + 4), dtype=np.uint64) >> np.uint64(1)).view(np.int64)
    bits[1, 9] = 2**63 - 1                      # rejected: the second index of size 9 is below 3
    sizes = np.array([8, 9, 20, 20, 13])
    results = []
    for mod in (_kernels, plain):
        out, used = np.empty((3, 5, 8), np.int64), np.empty(3, np.int64)
        mod.floyd_minibatches(bits, sizes, out, used)
        results.append((out, used))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], [40, 41, 40])
    np.testing.assert_array_equal(results[1][1], [40, 41, 40])

def test_block_drawn_reward_noise_is_one_release_per_reward():
    """The reward releases draw the same normals, in the same order, as ``rel.gaussian`` per reward,
    and record one Gaussian event (sigma / 1) per release."""
    rewards = np.random.default_rng(1).uniform(0.0, 0.5, 40)
    one = Releaser(NumpyNoise(7), Ledger())
    want = [float(one.gaussian(r, sensitivity=1.0, std=2.5)) for r in rewards]
    rel = Releaser(NumpyNoise(7), Ledger())
    release = _RewardReleases(rel, 2.5, 40)
    got = [release(float(r)) for r in rewards]
    assert got == want
    assert rel.ledger == one.ledger and len(rel.ledger) == 40
    assert rel.ledger.epsilon(1e-4) == one.ledger.epsilon(1e-4)
