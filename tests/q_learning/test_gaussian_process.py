"""Tests of the lazy OU sampler (spec §8.1, T1–T11)."""

import math

import numpy as np
import pytest
from scipy import stats

from privrl.errors import InvalidParameterError
from privrl.q_learning.gaussian_process import (
    OUNoise,
    OUPath,
    ProductKernelField,
    bridge_coefficients,
    ou_kernel,
    paper_eq2_literal,
)

BETAS = [0.1, 1.0, 3.0, 50.0, 2222.2, 16161.6]


class _SymbolicPath(OUPath):
    """Draws unit basis vectors instead of normals: every stored value is then the exact vector of
    coefficients on the independent standard normals, and Cov = sigma-free V V^T."""

    def __init__(self, dim, **kw):
        self._dim, self._k = dim, 0
        self._tail = (dim,)
        super().__init__(**kw)

    def _draw_standard_normals(self, k):
        out = np.zeros((k, self._dim))
        idx = np.arange(self._k, self._k + k)
        ok = idx < self._dim
        out[np.flatnonzero(ok), idx[ok]] = 1.0
        self._k += k
        return out


@pytest.mark.parametrize("seed_endpoints", [False, True])
@pytest.mark.parametrize("beta", BETAS)
def test_exact_joint_covariance_any_insertion_order(beta, seed_endpoints):  # T1, T4
    rng = np.random.default_rng(int(beta * 10) + seed_endpoints)
    sigma = 0.7
    for _ in range(20):
        x = rng.random(15)
        path = _SymbolicPath(20, beta=beta, sigma=sigma, rng=0, seed_endpoints=seed_endpoints)
        for xi in rng.permutation(x):
            path(xi)
        V = np.array(path.values)
        cov = V @ V.T
        pts = path.states
        np.testing.assert_allclose(cov, sigma**2 * ou_kernel(pts, pts, beta), atol=1e-12, rtol=0)


@pytest.mark.parametrize("order", ["ascending", "descending", "mid_first"])
def test_exact_covariance_specific_orders(order):  # T4
    x = np.linspace(0.05, 0.95, 9)
    seq = {"ascending": x, "descending": x[::-1], "mid_first": x[[4, 0, 8, 2, 6, 1, 3, 5, 7]]}[order]
    path = _SymbolicPath(9, beta=3.0, sigma=1.3, rng=0)
    for xi in seq:
        path(xi)
    V = np.array(path.values)
    np.testing.assert_allclose(V @ V.T, 1.69 * ou_kernel(x, x, 3.0), atol=1e-12, rtol=0)


def test_monte_carlo_covariance_and_mean():  # T2 (N = 2e4; tolerance 5 sigma^2 sqrt(2/N))
    pts = np.array([0.9, 0.1, 0.5, 0.3, 0.95, 0.0, 0.7, 0.31, 1.0, 0.6])
    beta, sigma, N = 3.0, 0.7, 20_000
    rng = np.random.default_rng(2)
    out = np.empty((N, len(pts)))
    path = OUPath(beta=beta, sigma=sigma, rng=rng)
    for n in range(N):
        path.reset()
        order = rng.permutation(len(pts))
        for j in order:
            out[n, j] = path(pts[j])
    cov = np.cov(out.T, bias=True)
    assert np.abs(cov - sigma**2 * ou_kernel(pts, pts, beta)).max() <= 5 * sigma**2 * math.sqrt(2 / N)
    assert np.abs(out.mean(0)).max() <= 5 * sigma / math.sqrt(N)


@pytest.mark.parametrize("before", [[], [0.45, 0.55], [0.1, 0.9, 0.49999]])
def test_marginal_ks(before):  # T3
    rng = np.random.default_rng(3)
    path = OUPath(beta=2.0, sigma=0.5, rng=rng)
    vals = []
    for _ in range(10_000):
        path.reset()
        for b in before:
            path(b)
        vals.append(path(0.5) / 0.5)
    assert stats.kstest(vals, "norm").pvalue > 1e-3


def test_repeats_are_identical_and_list_sorted():  # T5
    path = OUPath(beta=1.0, sigma=1.0, rng=5)
    seq = [0.5, 0.3, 0.7, 0.4, 0.5, 0.7]
    vals = [path(x) for x in seq]
    assert vals[4] == vals[0] and vals[5] == vals[2]
    assert len(path) == 4
    np.testing.assert_array_equal(path.states, [0.3, 0.4, 0.5, 0.7])


def test_many_points_buckets_stay_sorted_and_consistent():
    rng = np.random.default_rng(6)
    path = OUPath(beta=100.0, sigma=1.0, rng=rng)
    x = rng.random(3000)
    first = np.array([path(v) for v in x])
    assert np.all(np.diff(path.states) > 0) and len(path) == 3000
    np.testing.assert_array_equal(path.query(x), first)
    np.testing.assert_array_equal(np.array([path(v) for v in x[::-1]]), first[::-1])


def test_batch_query_values_do_not_depend_on_order():
    x = np.random.default_rng(7).random(50)
    for pre in ([], [0.2, 0.8]):
        a, b = OUPath(beta=4.0, sigma=1.0, rng=1), OUPath(beta=4.0, sigma=1.0, rng=1)
        for p in pre:
            a(p), b(p)
        perm = np.random.default_rng(8).permutation(50)
        np.testing.assert_array_equal(a.query(x)[perm], b.query(x[perm]))


def test_batch_query_makes_the_same_draws_as_scalar_queries():
    for trial in range(30):
        r = np.random.default_rng(trial)
        pre = r.random(int(r.integers(0, 8)))
        batch = np.concatenate([r.random(20), pre[:2]])
        beta = [0.5, 3.0, 1e4][trial % 3]
        a, b = OUPath(beta=beta, sigma=0.7, rng=trial), OUPath(beta=beta, sigma=0.7, rng=trial)
        for x in pre:
            a(x), b(x)
        got = a.query(batch)
        want = {x: b(x) for x in np.unique(batch)}
        np.testing.assert_allclose(got, [want[x] for x in batch], atol=1e-12, rtol=0)
        np.testing.assert_array_equal(a.states, b.states)


def test_reset_gives_independent_path():  # T6
    path = OUPath(beta=1.0, sigma=1.0, rng=9)
    pairs = []
    for _ in range(10_000):
        path.reset()
        a = path(0.5)
        path.reset()
        pairs.append((a, path(0.5)))
    assert abs(np.corrcoef(np.array(pairs).T)[0, 1]) < 0.05


def test_bridge_limits_and_midpoint():  # T7
    beta = 3.0
    wm, wp, d = bridge_coefficients(beta, 1e-12, 0.4)
    assert wm == pytest.approx(1.0, abs=1e-9) and wp == pytest.approx(0.0, abs=1e-9) and d < 1e-9
    h = 0.2
    wm, wp, d = bridge_coefficients(beta, h, h)
    e = math.exp(-beta * h)
    assert wm == pytest.approx(e / (1 + e * e)) and wp == pytest.approx(e / (1 + e * e))
    assert d == pytest.approx((1 - e * e) / (1 + e * e))
    d1, d2 = np.random.default_rng(1).random((2, 1000))
    for b in BETAS:
        wm, wp, d = bridge_coefficients(b, d1, d2)
        assert np.all((d >= 0) & (d <= 1) & (wm >= 0) & (wp >= 0))


def test_numerical_stability_large_beta():  # T8
    beta = 16161.6
    wm, wp, d = bridge_coefficients(beta, np.array([1.0, 1e-9]), np.array([1e-9, 1.0]))
    assert np.all(np.isfinite([wm, wp, d]))
    # agrees with the sinh form where that is finite
    for b in (0.1, 1.0, 50.0):
        d1, d2 = 0.3, 0.45
        wm, wp, d = bridge_coefficients(b, d1, d2)
        D = d1 + d2
        assert wm == pytest.approx(math.sinh(b * d2) / math.sinh(b * D), rel=1e-12)
        assert wp == pytest.approx(math.sinh(b * d1) / math.sinh(b * D), rel=1e-12)
        assert d == pytest.approx(1 - wm * math.exp(-b * d1) - wp * math.exp(-b * d2), rel=1e-9)
    path = OUPath(beta=1e5, sigma=1.0, rng=0)
    vals = path.query(np.random.default_rng(0).random(2000))
    assert np.all(np.isfinite(vals))


def test_printed_eq2_is_wrong_and_kept_only_as_guard():  # T9
    wm, wp, d = bridge_coefficients(1.0, 0.5, 0.5)
    assert float(d) == pytest.approx(0.46212, abs=1e-5)
    assert float(wm) == pytest.approx(0.44341, abs=1e-5) and float(wp) == pytest.approx(0.44341, abs=1e-5)
    assert paper_eq2_literal(1.0, 0.0, 0.5, 1.0)[2] == pytest.approx(-0.46212, abs=1e-5)
    # swapped weights: near s- the printed weight on g(s-) tends to 0 instead of 1
    assert paper_eq2_literal(1.0, 0.0, 1e-6, 1.0)[0] < 1e-5
    import inspect

    import privrl.q_learning.gaussian_process as gp
    src = inspect.getsource(gp.OUPath) + inspect.getsource(gp.OUNoise)
    assert "paper_eq2_literal" not in src


def test_per_action_paths_independent():  # T11
    noise = OUNoise(n_paths=2, beta=1.0, sigma=1.0, rng=11)
    vals = []
    for _ in range(10_000):
        noise.reset()
        vals.append(noise(np.array([0.5]))[0])
    assert abs(np.corrcoef(np.array(vals).T)[0, 1]) < 0.05


def test_bad_parameters_rejected():
    with pytest.raises(InvalidParameterError, match="'beta'"):
        OUPath(beta=0.0, sigma=1.0)
    with pytest.raises(InvalidParameterError, match="'sigma'"):
        OUPath(beta=1.0, sigma=-1.0)
    with pytest.raises(InvalidParameterError):
        OUPath(beta=1.0, sigma=1.0)(float("nan"))


def test_product_kernel_field_exact_and_consistent():
    rng = np.random.default_rng(12)
    field = ProductKernelField(dim=3, beta=2.0, sigma=0.8, n_paths=2, rng=rng)
    X = rng.random((40, 3))
    v1 = field(X)
    np.testing.assert_array_equal(field(X[::-1]), v1[::-1])          # repeats identical
    L = field._L
    np.testing.assert_allclose(L @ L.T, ou_kernel(X, X, 2.0), atol=1e-10)  # exact joint law
    # Monte Carlo: covariance between two points and across the two paths
    a, b = np.array([0.1, 0.2, 0.3]), np.array([0.15, 0.3, 0.2])
    out = []
    f = ProductKernelField(dim=3, beta=2.0, sigma=0.8, n_paths=2, rng=np.random.default_rng(13))
    for _ in range(4000):
        f.reset()
        out.append(f(np.stack([a, b])).ravel())
    out = np.array(out)
    k = math.exp(-2.0 * np.abs(a - b).sum())
    assert np.cov(out[:, 0], out[:, 2])[0, 1] == pytest.approx(0.64 * k, abs=0.05)
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < 0.06


@pytest.mark.parametrize("beta", [1.0, 300.0, 16161.6])
@pytest.mark.parametrize("pre", [0, 1, 6])
def test_exact_joint_covariance_batch_queries(beta, pre):
    """Batch queries (closed-form chain into an empty path, recursive doubling otherwise) keep the
    exact joint law, with scalar queries before and between batches (T1 for the batch path)."""
    rng = np.random.default_rng(int(beta) + pre)
    for _ in range(5):
        path = _SymbolicPath(60, beta=beta, sigma=0.9, rng=0)
        for x in rng.random(pre):
            path(x)
        path.query(rng.random(25))
        path(float(rng.random()))
        path.query(np.concatenate([rng.random(20), path.states[:3]]))   # new states and repeats
        V = np.asarray(path.values)
        pts = path.states
        np.testing.assert_allclose(V @ V.T, 0.81 * ou_kernel(pts, pts, beta), atol=1e-12, rtol=0)


def test_noise_paths_equal_independent_paths_on_child_streams():
    """OUNoise (one store for all actions) gives path i exactly the values of an OUPath drawing from
    the i-th spawned child stream, queried at the same states, across resets."""
    xs = np.random.default_rng(9).random(300)
    noise = OUNoise(n_paths=3, beta=2.0, sigma=0.5, rng=np.random.default_rng(3))
    paths = [OUPath(beta=2.0, sigma=0.5, rng=child) for child in np.random.default_rng(3).spawn(3)]
    for rep in range(5):
        got = np.concatenate([noise(xs[:60 + 40 * rep]), noise.point(0.123 + 0.1 * rep)[None]])
        want = np.stack([np.append(p.query(xs[:60 + 40 * rep]), p(0.123 + 0.1 * rep)) for p in paths], -1)
        np.testing.assert_allclose(got, want, atol=1e-13, rtol=0)
        if rep == 2:
            noise.reset()
            for p in paths:
                p.reset()


def test_affine_scan_equals_sequential_recursion():
    """Both solvers of the recursion (closed form per chain; recursive doubling for many chains or
    when weight products underflow) equal the sequential loop."""
    from privrl.q_learning.gaussian_process import _affine_scan
    rng = np.random.default_rng(4)
    cases = [rng.random(k) * (rng.random(k) > 0.1) for k in (1, 2, 7, 64, 1000)]   # random chain breaks
    cases += [np.full(1000, 0.999), np.full(1000, 0.3), np.r_[0.0, np.full(299, 0.99), 0.0, np.full(99, 0.5)]]
    for w in cases:
        c = rng.normal(size=(len(w), 2))
        z, want = np.zeros(2), []
        for wk, ck in zip(w, c):
            z = wk * z + ck
            want.append(z)
        np.testing.assert_allclose(_affine_scan(w, c), np.array(want), atol=1e-12, rtol=0)
