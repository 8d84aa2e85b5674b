"""The OU paths of many runs advanced together (``OUBatch``): the exact law, and the same values as
each run's ``OUNoise`` queried alone on the same noise streams."""

import numpy as np
import pytest

from privrl.privacy.noise import NoiseSource, NumpyNoise
from privrl.q_learning import _kernels
from privrl.q_learning.gaussian_process import OUNoise, ou_kernel
from privrl.q_learning.ou_batch import OUBatch

SIGMA = 0.8


class _Basis(NoiseSource):
    """Path ``j``'s normals are the ``j``-th unit vector of the stream: its value at a state is then
    the coefficient of the ``j``-th normal drawn, and over ``D`` paths the stored values form the
    exact coefficient matrix ``V`` of the states on the independent normals (``Cov = V V^T``)."""

    def __init__(self, j):
        self.j, self.calls = j, 0

    def _standard(self, kind, shape):
        out = np.zeros(shape)
        if self.calls == 0:
            out[self.j] = 1.0
        self.calls += 1
        return out


def _symbolic(betas, dim):
    return OUBatch(betas, [SIGMA] * len(betas), [[_Basis(j) for j in range(dim)] for _ in betas])


@pytest.mark.parametrize("dim", [30, 70])   # runs x paths below / above the sequential-scan threshold
def test_exact_joint_covariance(dim):
    """Whatever the order of point and batch queries (new states, repeats, duplicates; an empty,
    a small and a large store), every run's stored values are jointly N(0, sigma^2 K) exactly."""
    betas = [1.0, 300.0]                   # 300: a fresh path too long for the closed form
    rng = np.random.default_rng(dim)
    batch = _symbolic(betas, dim)
    batch.query(rng.random((2, 9)))
    batch.point(rng.random(2))
    states = batch.stored(0)[0]
    batch.query(np.concatenate([rng.random((2, 12)), np.tile(states[:3], (2, 1)), np.full((2, 2), 0.5)], axis=1))
    batch.point(np.array([0.5, 0.25]))
    for r, beta in enumerate(betas):
        pts, V = batch.stored(r)
        assert len(pts) == len(np.unique(pts)) and len(pts) <= dim
        np.testing.assert_allclose(V @ V.T, SIGMA**2 * ou_kernel(pts, pts, beta), atol=1e-12, rtol=0)


def test_each_run_equals_its_own_ou_noise():
    """Runs with their own (seeded) noise streams: the batch gives every run the values of an
    OUNoise on the same stream queried alone (same normals, same order), through point queries,
    batch queries with repeats, partial and full resets."""
    betas = [1.0, 30.0, 2222.0]
    alone = [OUNoise(n_paths=2, beta=b, sigma=0.4, noise=NumpyNoise(i)) for i, b in enumerate(betas)]
    batch = OUBatch.from_paths([OUNoise(n_paths=2, beta=b, sigma=0.4, noise=NumpyNoise(i))
                                for i, b in enumerate(betas)])
    rng = np.random.default_rng(0)
    pool = rng.random(300)
    for step in range(240):
        if step % 3 == 0:
            x = rng.choice(pool, 3)
            want, got = np.stack([p.point(float(v)) for p, v in zip(alone, x)]), batch.point(x)
        else:
            q = rng.choice(pool, (3, 34 + step % 7))    # several sizes: the work arrays reused and dropped
            want, got = np.stack([p(v) for p, v in zip(alone, q)]), batch.query(q)
        np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)
        assert len(batch._work) <= 4                     # a bounded reuse, whatever the sizes
        if step % 80 == 79:
            batch.reset()
            for p in alone:
                p.reset()
        elif step % 50 == 49:
            batch.reset(np.array([True, False, True]))
            alone[0].reset()
            alone[2].reset()


def test_from_paths_takes_fresh_paths_only():
    used = OUNoise(n_paths=2, beta=1.0, sigma=0.4, noise=NumpyNoise(0))
    used.point(0.3)
    with pytest.raises(ValueError, match="fresh"):
        OUBatch.from_paths([used])


@pytest.mark.parametrize("scan", [1, 2, 3])   # closed form / recursion / recursive doubling
def test_fresh_paths_follow_the_ou_recursion(scan):
    """A fresh path's values (every scan of ``ou_values``) are the one-step OU recursion
    ``z_i = rho_i z_{i-1} + sigma sqrt(1 - rho_i^2) xi_i`` over the sorted distinct states, the
    ``t``-th distinct state taking the ``t``-th unread normal; duplicates repeat their value."""
    rng = np.random.default_rng(scan)
    R, k, m = 2, 50, 2
    q = rng.random((R, k))
    q[:, 7] = q[:, 3]
    order = q.argsort(axis=1)
    qs, new, pos, counts = np.empty((R, k)), np.empty((R, k), bool), np.empty((R, k), np.intp), np.empty(R, np.intp)
    n = np.zeros(R, np.intp)
    beta, sigma = np.array([1.0, 4.0]) * (1.0 if scan == 1 else 100.0), np.array([0.4, 0.7])
    buf, read = rng.normal(size=(R, 60, m)), np.array([0, 5])
    em, up = np.empty((R, k)), np.empty((R, k))
    short, planned = _kernels.ou_plan(q, order, np.zeros((R, 0)), n, beta, read, np.array([60, 60]), qs, new, pos,
                                      counts, em, up)
    assert (counts == k - 1).all() and (short, planned) == (0, min(scan, 2))
    np.expm1(em, out=em)
    np.exp(up, out=up)
    z, out = np.empty((R, k, m)), np.empty((R, k, m))
    _kernels.ou_values(order, qs, new, pos, np.zeros((R, 1)), np.zeros((R, 1, m)), n, beta, sigma, buf, read,
                       em, up, scan, z, out)
    for r in range(R):
        u, inverse = np.unique(q[r], return_inverse=True)
        want = np.empty((len(u), m))
        prev = np.zeros(m)
        for t, d in enumerate(np.diff(u, prepend=-np.inf)):
            rho = np.exp(-beta[r] * d)
            prev = want[t] = rho * prev + sigma[r] * np.sqrt(1.0 - rho**2) * buf[r, read[r] + t]
        np.testing.assert_allclose(out[r], want[inverse], atol=1e-12, rtol=0)


def test_query_of_stored_states_returns_their_values():
    """A query of stored states only (repeats and duplicates, nothing new) returns their stored
    values exactly and draws no normal."""
    batch = OUBatch.from_paths([OUNoise(n_paths=2, beta=1.0, sigma=0.4, noise=NumpyNoise(i)) for i in range(3)])
    rng = np.random.default_rng(5)
    batch.query(rng.random((3, 20)))
    stored = [batch.stored(r) for r in range(3)]
    read = batch._pos.copy()
    idx = rng.integers(0, 20, (3, 30))
    got = batch.query(np.stack([x[i] for (x, _), i in zip(stored, idx)]))
    assert np.array_equal(got, np.stack([y[i] for (_, y), i in zip(stored, idx)]))
    assert np.array_equal(batch._pos, read)
