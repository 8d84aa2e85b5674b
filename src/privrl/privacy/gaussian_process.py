"""Functional noise: lazily evaluated Gaussian-process sample paths (Wang & Hegde 2019, App. A).

The kernel of the paper is ``K(x, y) = exp(-beta |x - y|)`` on [0, 1] (Lemma 6), so a sample path
of ``G(0, sigma^2 K)`` is a stationary Ornstein–Uhlenbeck (OU) process. The OU process is Markov:
given the stored values at the nearest stored neighbours ``s- < s < s+``, the value at ``s`` is
independent of every other stored value (Claim 12). A new query therefore costs one two-neighbour
"bridge" draw plus a sorted insertion.

Bridge formulas (spec §2.4; the printed Eq. (2) swaps the two mean weights and flips the signs of
the exponents in the variance — :func:`paper_eq2_literal` keeps it only as a regression guard).
With ``d1 = s - s-``, ``d2 = s+ - s``, ``D = d1 + d2``::

    w-  = sinh(beta d2) / sinh(beta D) = e^{-beta d1} (1 - e^{-2 beta d2}) / (1 - e^{-2 beta D})
    w+  = sinh(beta d1) / sinh(beta D) = e^{-beta d2} (1 - e^{-2 beta d1}) / (1 - e^{-2 beta D})
    var = (1 - e^{-2 beta d1}) (1 - e^{-2 beta d2}) / (1 - e^{-2 beta D})        (unit scale)
    g(s) = w- g(s-) + w+ g(s+) + sigma sqrt(var) xi,      xi ~ N(0, 1)

written with ``expm1`` so that nothing overflows for beta up to 1e5 and more. One-sided cases
(no stored point on one side): ``rho = e^{-beta d}``, ``g(s) = rho g(nbr) + sigma sqrt(1 - rho^2) xi``;
empty path: ``g(s) = sigma xi``. An exact repeat returns the stored value. Whatever the insertion
order, the stored values are jointly ``N(0, sigma^2 [K(x_i, x_j)])`` (tested exactly).

Storage is a bucketed sorted list (buckets of at most ``2 * _LOAD`` points, located by ``bisect``
on the bucket maxima), so insertion stays O(log n + _LOAD) even for 1e5 points, without
``sortedcontainers``.

For states of dimension d > 1, :class:`ProductKernelField` samples the product kernel
``exp(-beta ||x - y||_1)`` (paper §3.3) exactly and jointly over the queried points by incremental
Cholesky conditioning (O(n^2) per query; meant for the few hundred states of one reset period).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_scalar

__all__ = [
    "bridge_coefficients",
    "one_sided_coefficients",
    "paper_eq2_literal",
    "OUPath",
    "OUNoise",
    "ProductKernelField",
    "ou_kernel",
]

_LOAD = 256
_BLOCK = 4096


def ou_kernel(x: Any, y: Any, beta: float) -> np.ndarray:
    """``exp(-beta ||x - y||_1)`` for every pair of rows (1-D inputs are single coordinates)."""
    x = np.atleast_1d(np.asarray(x, float))
    y = np.atleast_1d(np.asarray(y, float))
    if x.ndim == 1:
        x = x[:, None]
    if y.ndim == 1:
        y = y[:, None]
    return np.exp(-beta * np.abs(x[:, None, :] - y[None, :, :]).sum(-1))


def bridge_coefficients(beta: float, d1: Any, d2: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights ``(w-, w+)`` and unit-scale variance of the OU bridge (spec §2.4, stable form)."""
    d1 = np.asarray(d1, float)
    d2 = np.asarray(d2, float)
    a1 = -np.expm1(-2.0 * beta * d1)
    a2 = -np.expm1(-2.0 * beta * d2)
    den = -np.expm1(-2.0 * beta * (d1 + d2))
    w_minus = np.exp(-beta * d1) * a2 / den
    w_plus = np.exp(-beta * d2) * a1 / den
    return w_minus, w_plus, a1 * a2 / den


def one_sided_coefficients(beta: float, d: Any) -> tuple[np.ndarray, np.ndarray]:
    """Weight ``rho = e^{-beta d}`` on the single neighbour and variance ``1 - rho^2``."""
    d = np.asarray(d, float)
    return np.exp(-beta * d), -np.expm1(-2.0 * beta * d)


def paper_eq2_literal(beta: float, s_minus: float, s: float, s_plus: float) -> tuple[float, float, float]:
    """Eq. (2) of Wang & Hegde (2019, App. A) **exactly as printed** — wrong; never used to sample.

    Returns ``(weight on g(s-), weight on g(s+), d)``; e.g. at beta=1, (0, 0.5, 1) it gives
    d = -0.4621 (a negative "variance"), whereas the correct value is +0.4621.
    """
    def E(x: float) -> float:
        return math.exp(x) - math.exp(-x)
    den = E(beta * (s_plus - s_minus))
    w_minus = E(beta * (s - s_minus)) / den
    w_plus = E(beta * (s_plus - s)) / den
    d = 1.0 - (E(beta * (s - s_minus)) * math.exp(beta * (s - s_minus))
               + E(beta * (s_plus - s)) * math.exp(beta * (s_plus - s))) / den
    return w_minus, w_plus, d


class OUPath:
    """One lazily evaluated sample path of ``G(0, sigma^2 exp(-beta|x-y|))`` on the real line.

    ``path(x)`` returns the path's value at ``x`` (sampled and stored on first query);
    ``path.query(xs)`` does a batch: the distinct new states are sampled in increasing order, so the
    values returned do not depend on the order of ``xs``. ``reset()`` starts a fresh independent
    path. ``seed_endpoints=True`` first draws ``(g(0), g(1))`` jointly at every (re)set — the
    paper's "treat s+ = 1, s- = 0" convention made exact.
    """

    def __init__(self, *, beta: float, sigma: float, rng: RngLike = None,
                 seed_endpoints: bool = False) -> None:
        owner = "OUPath"
        self.beta = check_scalar(beta, "beta", owner=owner, low=0.0, closed="neither")
        self.sigma = check_scalar(sigma, "sigma", owner=owner, low=0.0)
        self.seed_endpoints = bool(seed_endpoints)
        self._rng = as_generator(rng)
        self._normals = np.empty(0)
        self._next = 0
        self.reset()

    # -- noise source (overridable: tests propagate basis vectors to get the exact covariance)
    def _draw_normal(self) -> Any:
        if self._next >= len(self._normals):
            self._normals = self._rng.standard_normal(_BLOCK).tolist()
            self._next = 0
        z = self._normals[self._next]
        self._next += 1
        return z

    def _take(self, k: int) -> list[Any]:
        """``k`` normals, the same ones ``k`` calls of :meth:`_draw_normal` would return."""
        if type(self)._draw_normal is not OUPath._draw_normal:  # a subclass supplies the noise
            return [self._draw_normal() for _ in range(k)]
        out: list[Any] = []
        while len(out) < k:
            if self._next >= len(self._normals):
                self._normals = self._rng.standard_normal(_BLOCK).tolist()
                self._next = 0
            take = min(k - len(out), len(self._normals) - self._next)
            out.extend(self._normals[self._next:self._next + take])
            self._next += take
        return out

    def reset(self) -> None:
        """Forget every stored value: the next queries sample a fresh, independent path."""
        self._xs: list[list[float]] = []
        self._ys: list[list[Any]] = []
        self._maxes: list[float] = []
        self._n = 0
        if self.seed_endpoints:
            g0 = self.sigma * self._draw_normal()
            rho, var = math.exp(-self.beta), -math.expm1(-2.0 * self.beta)
            g1 = rho * g0 + self.sigma * math.sqrt(var) * self._draw_normal()
            self._xs, self._ys, self._maxes, self._n = [[0.0, 1.0]], [[g0, g1]], [1.0], 2

    def __len__(self) -> int:
        return self._n

    @property
    def states(self) -> np.ndarray:
        """The stored states, increasing."""
        return np.array([x for b in self._xs for x in b], dtype=float)

    @property
    def values(self) -> list[Any]:
        """The stored values, in the order of :attr:`states`."""
        return [y for b in self._ys for y in b]

    def __call__(self, x: float) -> Any:
        x = float(x)
        if x != x or x in (math.inf, -math.inf):
            check_scalar(x, "x", owner="OUPath")
        maxes = self._maxes
        if not maxes:
            z = self.sigma * self._draw_normal()
            self._xs, self._ys, self._maxes, self._n = [[x]], [[z]], [x], 1
            return z
        beta, sigma = self.beta, self.sigma
        bi = bisect_left(maxes, x)
        if bi == len(maxes):  # beyond every stored state: one-sided from the right end
            bi -= 1
            xs, ys = self._xs[bi], self._ys[bi]
            d = x - xs[-1]
            rho = math.exp(-beta * d)
            z = rho * ys[-1] + sigma * math.sqrt(-math.expm1(-2.0 * beta * d)) * self._draw_normal()
            xs.append(x)
            ys.append(z)
            maxes[bi] = x
        else:
            xs, ys = self._xs[bi], self._ys[bi]
            i = bisect_left(xs, x)
            if xs[i] == x:  # exact repeat
                return ys[i]
            x_right, y_right = xs[i], ys[i]
            if i > 0:
                x_left, y_left = xs[i - 1], ys[i - 1]
            elif bi > 0:
                x_left, y_left = self._xs[bi - 1][-1], self._ys[bi - 1][-1]
            else:
                x_left = None
            if x_left is None:  # before every stored state: one-sided from the left end
                d = x_right - x
                rho = math.exp(-beta * d)
                z = rho * y_right + sigma * math.sqrt(-math.expm1(-2.0 * beta * d)) * self._draw_normal()
            else:
                d1, d2 = x - x_left, x_right - x
                a1 = -math.expm1(-2.0 * beta * d1)
                a2 = -math.expm1(-2.0 * beta * d2)
                den = -math.expm1(-2.0 * beta * (d1 + d2))
                mean = (math.exp(-beta * d1) * a2 * y_left + math.exp(-beta * d2) * a1 * y_right) / den
                z = mean + sigma * math.sqrt(a1 * a2 / den) * self._draw_normal()
            xs.insert(i, x)
            ys.insert(i, z)
        self._n += 1
        if len(xs) > 2 * _LOAD:  # split the bucket
            self._xs[bi:bi + 1] = [xs[:_LOAD], xs[_LOAD:]]
            self._ys[bi:bi + 1] = [ys[:_LOAD], ys[_LOAD:]]
            maxes[bi:bi + 1] = [xs[_LOAD - 1], xs[-1]]
        return z

    def query(self, xs: Any) -> np.ndarray:
        """Values at a batch of states (any shape); new states are sampled in increasing order."""
        arr = check_array(xs, "xs", owner="OUPath.query")
        uniq, inverse = np.unique(arr.ravel(), return_inverse=True)
        if self._n == 0 and len(uniq) >= 2:
            vals = self._fill_empty(uniq)
        elif len(uniq) >= 16 and 4 * len(uniq) >= self._n:
            vals = self._merge(uniq)
        else:
            vals = np.fromiter((self(x) for x in uniq.tolist()), float, len(uniq))
        return vals[inverse].reshape(arr.shape)

    def _fill_empty(self, uniq: np.ndarray) -> np.ndarray:
        """Increasing states into an empty path: each one is a one-sided extension of the previous
        one — the same draws, in the same order, as calling the path on each state in turn."""
        steps = np.diff(uniq)
        rho = np.exp(-self.beta * steps).tolist()
        sd = (self.sigma * np.sqrt(-np.expm1(-2.0 * self.beta * steps))).tolist()
        xi = self._take(len(uniq))
        z = self.sigma * xi[0]
        out = [z]
        for r, s_, x in zip(rho, sd, xi[1:]):
            z = r * z + s_ * x
            out.append(z)
        xs = uniq.tolist()
        self._xs = [xs[i:i + _LOAD] for i in range(0, len(xs), _LOAD)]
        self._ys = [out[i:i + _LOAD] for i in range(0, len(xs), _LOAD)]
        self._maxes = [b[-1] for b in self._xs]
        self._n = len(xs)
        return np.asarray(out, float)

    def _merge(self, uniq: np.ndarray) -> np.ndarray:
        """Insert increasing states in one pass, with exactly the draws (same order, same
        neighbours) that calling the path on each state in turn would make: for a new state the
        right neighbour is always a previously stored state, the left one is the nearer of the
        previous new state and the stored predecessor."""
        ex_x = self.states
        ex_y = np.asarray(self.values, float)
        n = len(ex_x)
        pos = np.searchsorted(ex_x, uniq)
        hit = (pos < n) & (ex_x[np.minimum(pos, max(n - 1, 0))] == uniq) if n else np.zeros(len(uniq), bool)
        new, pos_new = uniq[~hit], pos[~hit]
        beta, sigma = self.beta, self.sigma
        has_right = pos_new < n
        r_idx = np.minimum(pos_new, max(n - 1, 0))
        right_x = np.where(has_right, ex_x[r_idx] if n else 0.0, np.inf)
        right_y = np.where(has_right, ex_y[r_idx] if n else 0.0, 0.0)
        has_exl = pos_new > 0
        l_idx = np.maximum(pos_new - 1, 0)
        exl_x = np.where(has_exl, ex_x[l_idx] if n else 0.0, -np.inf)
        exl_y = np.where(has_exl, ex_y[l_idx] if n else 0.0, 0.0)
        prev_x = np.concatenate([[-np.inf], new[:-1]])
        from_prev = prev_x > exl_x
        left_x = np.maximum(prev_x, exl_x)
        has_left = left_x > -np.inf
        d1 = np.where(has_left, new - np.where(has_left, left_x, 0.0), 1.0)
        d2 = np.where(has_right, np.where(has_right, right_x, 0.0) - new, 1.0)
        wl, wr, var = bridge_coefficients(beta, d1, d2)
        rho_l, var_l = one_sided_coefficients(beta, d1)
        rho_r, var_r = one_sided_coefficients(beta, d2)
        only_l, only_r = has_left & ~has_right, has_right & ~has_left
        none = ~has_left & ~has_right
        wl = np.where(only_l, rho_l, np.where(only_r | none, 0.0, wl))
        wr = np.where(only_r, rho_r, np.where(only_l | none, 0.0, wr))
        var = np.where(only_l, var_l, np.where(only_r, var_r, np.where(none, 1.0, var)))
        sd = (sigma * np.sqrt(np.maximum(var, 0.0))).tolist()
        base = (wr * right_y + np.where(from_prev, 0.0, wl * exl_y)).tolist()
        w_prev = np.where(from_prev, wl, 0.0).tolist()
        z = 0.0
        out = []
        for b, w, s_, x in zip(base, w_prev, sd, self._take(len(sd))):
            z = b + w * z + s_ * x
            out.append(z)
        z_new = np.asarray(out, float)
        xs = np.insert(ex_x, pos_new, new).tolist()
        ys = np.insert(ex_y, pos_new, z_new).tolist()
        self._xs = [xs[i:i + _LOAD] for i in range(0, len(xs), _LOAD)]
        self._ys = [ys[i:i + _LOAD] for i in range(0, len(xs), _LOAD)]
        self._maxes = [b[-1] for b in self._xs]
        self._n = len(xs)
        vals = np.empty(len(uniq))
        vals[~hit] = z_new
        vals[hit] = ex_y[pos[hit]]
        return vals


class OUNoise:
    """``n_paths`` independent OU paths (one per action, Alg. 1 lines 14–18) with a common reset.

    ``noise(states)`` returns an array of shape ``states.shape + (n_paths,)``.
    """

    def __init__(self, *, n_paths: int, beta: float, sigma: float, rng: RngLike = None,
                 seed_endpoints: bool = False) -> None:
        n_paths = check_scalar(n_paths, "n_paths", owner="OUNoise", kind=int, low=1)
        rng = as_generator(rng)
        self.paths = [OUPath(beta=beta, sigma=sigma, rng=child, seed_endpoints=seed_endpoints)
                      for child in rng.spawn(n_paths)]
        self.n_paths = n_paths

    def reset(self) -> None:
        for p in self.paths:
            p.reset()

    def __call__(self, states: Any) -> np.ndarray:
        return np.stack([p.query(states) for p in self.paths], axis=-1)


class ProductKernelField:
    """Exact joint samples of ``G(0, sigma^2 exp(-beta ||x - y||_1))`` on R^d at queried points.

    Keeps the Cholesky factor ``L`` of the kernel matrix of the stored points and the whitened
    draws ``xi`` (values ``= sigma L xi``); a new point ``x`` with kernel column ``k`` gets
    ``w = L^{-1} k``, mean ``sigma w.xi`` and variance ``sigma^2 (1 - w.w)`` — the exact Gaussian
    conditional. O(n^2) per new point: use it within one reset period. ``n_paths`` independent
    outputs share the geometry (one per action).
    """

    def __init__(self, *, dim: int, beta: float, sigma: float, n_paths: int = 1,
                 rng: RngLike = None) -> None:
        owner = "ProductKernelField"
        self.dim = check_scalar(dim, "dim", owner=owner, kind=int, low=1)
        self.beta = check_scalar(beta, "beta", owner=owner, low=0.0, closed="neither")
        self.sigma = check_scalar(sigma, "sigma", owner=owner, low=0.0)
        self.n_paths = check_scalar(n_paths, "n_paths", owner=owner, kind=int, low=1)
        self._rng = as_generator(rng)
        self.reset()

    def reset(self) -> None:
        self._X = np.empty((0, self.dim))
        self._L = np.empty((0, 0))
        self._xi = np.empty((0, self.n_paths))
        self._index: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._X)

    def _add(self, x: np.ndarray) -> int:
        n = len(self._X)
        if n:
            k = np.exp(-self.beta * np.abs(self._X - x).sum(1))
            w = solve_triangular(self._L, k, lower=True, check_finite=False)
            var = max(1.0 - float(w @ w), 0.0)
        else:
            w, var = np.empty(0), 1.0
        if var <= 1e-12:  # numerically a repeat: reuse the conditional mean (variance ~ 0)
            var = 1e-12
        L = np.zeros((n + 1, n + 1))
        L[:n, :n] = self._L
        L[n, :n] = w
        L[n, n] = math.sqrt(var)
        self._L = L
        self._xi = np.vstack([self._xi, self._rng.standard_normal((1, self.n_paths))])
        self._X = np.vstack([self._X, x[None, :]])
        return n

    def __call__(self, states: Any) -> np.ndarray:
        """Values at ``states`` of shape ``(n, dim)`` (or ``(dim,)``); returns ``(n, n_paths)``."""
        arr = check_array(states, "states", owner="ProductKernelField")
        single = arr.ndim == 1
        arr = np.atleast_2d(arr)
        if arr.shape[1] != self.dim:
            check_array(arr, "states", owner="ProductKernelField", shape=(None, self.dim))
        rows = []
        for x in arr:
            key = x.tobytes()
            if key not in self._index:
                self._index[key] = self._add(x.copy())
            rows.append(self._index[key])
        idx = np.asarray(rows)
        out = self.sigma * (self._L[idx] @ self._xi)
        return out[0] if single else out
