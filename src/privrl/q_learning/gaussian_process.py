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

Storage is a pair of sorted arrays plus a short sorted list of the latest scalar queries, so a
scalar query costs O(log n) amortised and a batch query is a handful of vector operations: the
recursion over the new states of a batch (each new state's left neighbour may be the previous new
state) is solved by recursive doubling (:func:`_affine_scan`), with the same normals in the same
order as one-at-a-time queries. :class:`OUNoise` holds the paths of all actions in one store (they
are always queried at the same states), and every privacy-noise normal comes from one method,
``_draw_standard_normals``, which draws from a :class:`~privrl.privacy.noise.NoiseSource` (the
fit's releaser: seeded NumPy, OpenDP, constant or scaled noise — the release seam);
:func:`spawn_sources` gives each path its own independent source.

For states of dimension d > 1, :class:`ProductKernelField` samples the product kernel
``exp(-beta ||x - y||_1)`` (paper §3.3) exactly and jointly over the queried points by incremental
Cholesky conditioning (O(n^2) per query; meant for the few hundred states of one reset period).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import solve_triangular

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_scalar, param_error
from privrl.privacy.noise import NoiseSource, NumpyNoise, ScaledNoise

__all__ = [
    "spawn_sources",
    "bridge_coefficients",
    "one_sided_coefficients",
    "paper_eq2_literal",
    "OUPath",
    "OUNoise",
    "ProductKernelField",
    "ou_kernel",
]

_BLOCK = 4096   # normals drawn per refill of a path's buffer
_PENDING = 256  # scalar-query values kept in a sorted list before merging into the arrays


def _source(rng: RngLike, noise: NoiseSource | None, owner: str) -> NoiseSource:
    """The noise source of a sampler: ``noise`` when given, else seeded NumPy from ``rng``."""
    if noise is None:
        return NumpyNoise(as_generator(rng))
    if not isinstance(noise, NoiseSource):
        raise param_error("noise", owner, "a privrl NoiseSource (see privrl.privacy.make_noise)", type(noise).__name__)
    return noise


def spawn_sources(noise: NoiseSource, n: int) -> list[NoiseSource]:
    """``n`` independent noise sources derived from ``noise`` (one per OU path): NumPy noise spawns
    child generators (``Generator.spawn``: each path's draws are those of its own child, whatever the
    order of the queries), scaled noise scales each spawned child; other sources (OpenDP's, which
    are independent draw by draw, and constant test noise) are shared."""
    if isinstance(noise, NumpyNoise):
        children: list[NoiseSource] = [NumpyNoise(g) for g in noise.rng.spawn(n)]
    elif isinstance(noise, ScaledNoise):
        children = [ScaledNoise(base, noise.factor) for base in spawn_sources(noise.base, n)]
    else:
        return [noise] * n
    for child in children:   # the children's draws are the fit's: counted in its draw log
        child.log = noise.log
    return children


def ou_kernel(x: ArrayLike, y: ArrayLike, beta: float) -> np.ndarray:
    """``exp(-beta ||x - y||_1)`` for every pair of rows (1-D inputs are single coordinates)."""
    x = np.atleast_1d(np.asarray(x, float))
    y = np.atleast_1d(np.asarray(y, float))
    if x.ndim == 1:
        x = x[:, None]
    if y.ndim == 1:
        y = y[:, None]
    return np.exp(-beta * np.abs(x[:, None, :] - y[None, :, :]).sum(-1))


def bridge_coefficients(beta: float, d1: ArrayLike, d2: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights ``(w-, w+)`` and unit-scale variance of the OU bridge (spec §2.4, stable form)."""
    d1 = np.asarray(d1, float)
    d2 = np.asarray(d2, float)
    a1 = -np.expm1(-2.0 * beta * d1)
    a2 = -np.expm1(-2.0 * beta * d2)
    den = -np.expm1(-2.0 * beta * (d1 + d2))
    w_minus = np.exp(-beta * d1) * a2 / den
    w_plus = np.exp(-beta * d2) * a1 / den
    return w_minus, w_plus, a1 * a2 / den


def one_sided_coefficients(beta: float, d: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
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


def _unique_inverse(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)`` for a 1-D float array, with less overhead."""
    order = np.argsort(flat, kind="stable")
    srt = flat[order]
    keep = np.empty(len(srt), bool)
    keep[:1] = True
    np.not_equal(srt[1:], srt[:-1], out=keep[1:])
    inverse = np.empty(len(srt), np.intp)
    inverse[order] = np.cumsum(keep) - 1
    return srt[keep], inverse


def _merge_sorted(x: np.ndarray, y: np.ndarray, pos: np.ndarray, new_x: np.ndarray,
                  new_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Insert sorted ``new_x`` (values ``new_y``) before the indices ``pos`` of sorted ``x``."""
    if not len(x):
        return new_x, new_y
    at = pos + np.arange(len(new_x))
    old = np.ones(len(x) + len(new_x), bool)
    old[at] = False
    out_x = np.empty(len(old))
    out_y = np.empty((len(old), *y.shape[1:]))
    out_x[at], out_x[old] = new_x, x
    out_y[at], out_y[old] = new_y, y
    return out_x, out_y


def _doubling_scan(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """:func:`_affine_scan` by recursive doubling: ``ceil(log2 k)`` vector rounds (fewer when the
    chains are short), re-associating sums of the same terms."""
    ones = (1,) * (c.ndim - 1)
    w = w.copy()
    z = c.copy()
    d = 1
    while d < len(w) and w[d:].any():
        z[d:] += w[d:].reshape(-1, *ones) * z[:-d]
        w[d:] *= w[:-d]
        d *= 2
    return z


def _affine_scan(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """All ``z[k] = w[k] z[k-1] + c[k]`` (``z[-1] = 0``; ``0 <= w <= 1`` of shape ``(k,)``, ``c`` of
    shape ``(k, ...)``) with vector operations, equal to the sequential recursion up to rounding.

    A zero weight starts a new chain. With few chains (a fresh path, or few stored states: the
    training loop's case), each chain is solved in closed form, ``z_t = P_t sum_{j<=t} c_j / P_j``
    with ``P`` the running product of its weights: every term is ``c_j`` times a product of
    weights <= 1, so the rounding error stays at ``eps sum |c_j|``. With many chains, or where the
    products underflow (long chains at large beta), :func:`_doubling_scan` is used."""
    k = len(w)
    start = w == 0.0
    start[0] = True
    first = np.flatnonzero(start)
    if len(first) > 8:
        return _doubling_scan(w, c)
    ones = (1,) * (c.ndim - 1)
    z = np.empty_like(c)
    bounds = np.append(first, k).tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b - a == 1:
            z[a] = c[a]
            continue
        prod = np.ones(b - a)
        np.cumprod(w[a + 1:b], out=prod[1:])
        if prod[-1] > 1e-200:
            prod = prod.reshape(-1, *ones)
            z[a:b] = np.cumsum(c[a:b] / prod, axis=0) * prod
        else:
            z[a:b] = _doubling_scan(np.concatenate([[0.0], w[a + 1:b]]), c[a:b])
    return z


class _OUField:
    """Shared kernel of :class:`OUPath` and :class:`OUNoise`: OU sample paths on the real line that
    are queried at the same states, so they share their geometry (stored states, neighbours and
    bridge weights) and differ only in their standard normals.

    Stored values have shape ``(n, *tail)`` (``tail = ()`` for one path, ``(m,)`` for m paths).
    Storage: the sorted arrays ``_x``, ``_y`` plus a short sorted "pending" list of the values
    sampled by scalar queries since the last batch (merged into the arrays when it reaches
    ``_PENDING`` entries or at the next batch query), so a scalar query costs O(log n) and a batch
    one O(n + k log k) with vector operations only.

    Privacy noise is drawn in one place, :meth:`_draw_standard_normals`, in blocks of ``_BLOCK``
    consumed in order: any sequence of queries uses the same normals, in the same order, as the
    one-state-at-a-time recursion.
    """

    _tail: tuple[int, ...] = ()
    _noise: NoiseSource  # one path's source (OUPath); OUNoise overrides _draw_standard_normals

    def _init_field(self, owner: str, beta: float, sigma: float, seed_endpoints: bool) -> None:
        self.beta = check_scalar(beta, "beta", owner=owner, low=0.0, closed="neither")
        self.sigma = check_scalar(sigma, "sigma", owner=owner, low=0.0)
        self.seed_endpoints = bool(seed_endpoints)
        self._owner = owner
        self._buf = np.empty((0, *self._tail))
        self._pos = 0
        self.reset()

    # -- the noise source: the only place where privacy noise is drawn
    def _draw_standard_normals(self, k: int) -> np.ndarray:
        """``k`` fresh standard normals of shape ``(k, *tail)`` from the noise source (overridden
        by :class:`OUNoise`; tests substitute basis vectors to read off exact covariances)."""
        return self._noise.gaussian((k, *self._tail), 1.0)

    def _normals(self, k: int) -> np.ndarray:
        """The next ``k`` normals of the stream, ``(k, *tail)``."""
        parts = []
        while k > 0:
            if self._pos >= len(self._buf):
                self._buf = self._draw_standard_normals(_BLOCK)
                self._pos = 0
            take = min(k, len(self._buf) - self._pos)
            parts.append(self._buf[self._pos:self._pos + take])
            self._pos += take
            k -= take
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

    def _normal(self) -> Any:
        """The next normal of the stream: a float (one path) or a ``tail`` row."""
        if self._pos >= len(self._buf):
            self._buf = self._draw_standard_normals(_BLOCK)
            self._pos = 0
        z = self._buf[self._pos]
        self._pos += 1
        return float(z) if not self._tail else z.copy()

    # -- storage
    def reset(self) -> None:
        """Forget every stored value: the next queries sample a fresh, independent path."""
        self._x = np.empty(0)
        self._y = np.empty((0, *self._tail))
        self._px: list[float] = []
        self._py: list[Any] = []
        if self.seed_endpoints:
            g0 = self.sigma * self._normal()
            rho, var = math.exp(-self.beta), -math.expm1(-2.0 * self.beta)
            g1 = rho * g0 + self.sigma * math.sqrt(var) * self._normal()
            self._x = np.array([0.0, 1.0])
            self._y = np.array([g0, g1], dtype=float).reshape(2, *self._tail)

    def __len__(self) -> int:
        return len(self._x) + len(self._px)

    def _flush(self) -> None:
        if self._px:
            xs = np.array(self._px)
            ys = np.array(self._py, dtype=float).reshape(len(xs), *self._tail)
            self._x, self._y = _merge_sorted(self._x, self._y, self._x.searchsorted(xs), xs, ys)
            self._px, self._py = [], []

    @property
    def states(self) -> np.ndarray:
        """The stored states, increasing."""
        self._flush()
        return self._x.copy()

    @property
    def values(self) -> np.ndarray:
        """The stored values, in the order of :attr:`states` (shape ``(n, *tail)``)."""
        self._flush()
        return self._y.copy()

    # -- sampling
    def _point(self, x: float) -> Any:
        """The value at one state (sampled and stored on first query)."""
        if x != x or x in (math.inf, -math.inf):
            check_scalar(x, "x", owner=self._owner)
        px, py, xs, ys = self._px, self._py, self._x, self._y
        row = bool(self._tail)
        i = bisect_left(px, x)
        n_p, n = len(px), len(xs)
        if i < n_p and px[i] == x:  # exact repeat
            return py[i].copy() if row else py[i]
        j = int(xs.searchsorted(x)) if n else 0
        x_left = x_right = None
        if j < n:
            x_right = xs.item(j)
            if x_right == x:  # exact repeat
                return ys[j].copy() if row else ys.item(j)
            y_right = ys[j] if row else ys.item(j)
        if i < n_p and (x_right is None or px[i] < x_right):
            x_right, y_right = px[i], py[i]
        if j > 0:
            x_left = xs.item(j - 1)
            y_left = ys[j - 1] if row else ys.item(j - 1)
        if i > 0 and (x_left is None or px[i - 1] > x_left):
            x_left, y_left = px[i - 1], py[i - 1]
        beta, sigma = self.beta, self.sigma
        if x_left is None and x_right is None:  # empty path
            z = sigma * self._normal()
        elif x_left is None or x_right is None:  # one-sided: beyond the stored states
            if x_left is None:
                assert x_right is not None  # both None is the empty path above
                d, y_nbr = x_right - x, y_right
            else:
                d, y_nbr = x - x_left, y_left
            rho = math.exp(-beta * d)
            z = rho * y_nbr + sigma * math.sqrt(-math.expm1(-2.0 * beta * d)) * self._normal()
        else:
            d1, d2 = x - x_left, x_right - x
            a1 = -math.expm1(-2.0 * beta * d1)
            a2 = -math.expm1(-2.0 * beta * d2)
            den = -math.expm1(-2.0 * beta * (d1 + d2))
            mean = (math.exp(-beta * d1) * a2 * y_left + math.exp(-beta * d2) * a1 * y_right) / den
            z = mean + sigma * math.sqrt(a1 * a2 / den) * self._normal()
        px.insert(i, x)
        py.insert(i, z)
        if n_p >= _PENDING and n_p * n_p >= 4 * n:  # merge: amortised O(sqrt(n)) per query
            self._flush()
        return z.copy() if row else z

    def _batch(self, xs: ArrayLike) -> np.ndarray:
        """Values at a batch of states (any shape): ``xs.shape + tail``. The distinct new states
        are sampled in increasing order, so the values do not depend on the order of ``xs``."""
        arr = np.asarray(xs, dtype=float)
        if not np.isfinite(arr).all():
            check_array(xs, "xs", owner=self._owner)
        if arr.size == 0:
            return np.empty(arr.shape + self._tail)
        uniq, inverse = _unique_inverse(arr.ravel())
        self._flush()
        x, y = self._x, self._y
        n = len(x)
        pos = x.searchsorted(uniq)
        hit = pos < n
        if n:
            hit[hit] = x[pos[hit]] == uniq[hit]
        if hit.all():
            vals = y[pos]
        else:
            miss = ~hit
            vals = np.empty((len(uniq), *self._tail))
            vals[hit] = y[pos[hit]]
            vals[miss] = self._insert_new(uniq[miss], pos[miss])
        return vals[inverse].reshape(arr.shape + self._tail)

    def _insert_new(self, new: np.ndarray, pos_new: np.ndarray) -> np.ndarray:
        """Sample and store increasing new states ``new`` (insertion positions ``pos_new`` among
        the stored ones) with exactly the draws (same order, same neighbours) that querying them
        one at a time in increasing order makes. In the merged order, a new state's left neighbour
        is the element before it (stored, or the previous new state) and its right neighbour the
        next *stored* state, so with stored values as constants the merged values obey the linear
        recursion ``z_t = w_t z_{t-1} + c_t``, solved by :func:`_affine_scan`."""
        beta, sigma = self.beta, self.sigma
        x, y = self._x, self._y
        n, k = len(x), len(new)
        ones = (1,) * len(self._tail)
        xi = self._normals(k)
        if n == 0:  # a chain of one-sided steps from the previous new state (spec §2.4)
            steps = np.diff(new)
            sd = np.empty(k)
            sd[0] = sigma
            sd[1:] = sigma * np.sqrt(-np.expm1(-2.0 * beta * steps))
            c = sd.reshape(-1, *ones) * xi
            if beta * (new[-1] - new[0]) <= 200.0:  # closed form: z_k = sum_j e^{-beta (x_k - x_j)} c_j
                up = np.exp(beta * (new - new[0])).reshape(-1, *ones)
                z = np.cumsum(up * c, axis=0) / up
            else:
                w = np.empty(k)
                w[0] = 0.0
                w[1:] = np.exp(-beta * steps)
                z = _affine_scan(w, c)
            self._x, self._y = new, z
            return z
        at = pos_new + np.arange(k)  # positions of the new states in the merged order
        is_new = np.zeros(n + k, bool)
        is_new[at] = True
        x_all = np.empty(n + k)
        x_all[at] = new
        x_all[~is_new] = x
        # distances to the left neighbour (the previous element) and to the right stored neighbour;
        # +inf where there is none, which turns the bridge formulas into the one-sided ones
        # (e = 0, a = 1, den = 1: w- = rho_l, var = 1 - rho_l^2, or w+ = rho_r, ...) and into the
        # empty-path draw (var = 1) exactly, without branches
        d1 = np.where(at > 0, new - x_all[at - 1], np.inf)
        r_idx = np.minimum(pos_new, n - 1)
        d2 = np.where(pos_new < n, x[r_idx] - new, np.inf)
        e1, a1 = np.exp(-beta * d1), -np.expm1(-2.0 * beta * d1)   # bridge_coefficients, with the
        e2, a2 = np.exp(-beta * d2), -np.expm1(-2.0 * beta * d2)   # exponentials shared
        den = -np.expm1(-2.0 * beta * (d1 + d2))
        sd = sigma * np.sqrt(np.maximum(a1 * a2 / den, 0.0))
        w = np.zeros(n + k)
        w[at] = e1 * a2 / den
        c = np.empty((n + k, *self._tail))
        c[~is_new] = y
        c[at] = (e2 * a1 / den).reshape(-1, *ones) * y[r_idx] + sd.reshape(-1, *ones) * xi
        z = _affine_scan(w, c)
        self._x, self._y = x_all, z
        return z[at]


class OUPath(_OUField):
    """One lazily evaluated sample path of ``G(0, sigma^2 exp(-beta|x-y|))`` on the real line.

    ``path(x)`` returns the path's value at ``x`` (sampled and stored on first query);
    ``path.query(xs)`` does a batch: the distinct new states are sampled in increasing order, so the
    values returned do not depend on the order of ``xs``. ``reset()`` starts a fresh independent
    path. ``seed_endpoints=True`` first draws ``(g(0), g(1))`` jointly at every (re)set — the
    paper's "treat s+ = 1, s- = 0" convention made exact. The standard normals come from ``noise``
    (a :class:`~privrl.privacy.noise.NoiseSource`) or, without one, from seeded NumPy on ``rng``.
    """

    def __init__(self, *, beta: float, sigma: float, rng: RngLike = None,
                 seed_endpoints: bool = False, noise: NoiseSource | None = None) -> None:
        self._noise = _source(rng, noise, "OUPath")
        self._init_field("OUPath", beta, sigma, seed_endpoints)

    def __call__(self, x: float) -> float:
        return self._point(float(x))

    def query(self, xs: ArrayLike) -> np.ndarray:
        """Values at a batch of states (any shape); new states are sampled in increasing order."""
        return self._batch(xs)


class OUNoise(_OUField):
    """``n_paths`` independent OU paths (one per action, Alg. 1 lines 14–18) with a common reset.

    ``noise(states)`` returns an array of shape ``states.shape + (n_paths,)``; ``noise.point(x)`` the
    ``(n_paths,)`` values at one state. Path ``i`` draws its normals from the ``i``-th source of
    :func:`spawn_sources` of ``noise`` (default: seeded NumPy on ``rng``, whose ``i``-th child
    generator ``rng.spawn(n_paths)[i]`` it then uses), so its values are those of
    ``OUPath(noise=source_i)`` queried at the same states; the paths share their geometry, so a
    query costs about one path's work.
    """

    def __init__(self, *, n_paths: int, beta: float, sigma: float, rng: RngLike = None,
                 seed_endpoints: bool = False, noise: NoiseSource | None = None) -> None:
        n_paths = check_scalar(n_paths, "n_paths", owner="OUNoise", kind=int, low=1)
        self._sources = spawn_sources(_source(rng, noise, "OUNoise"), n_paths)
        self.n_paths = n_paths
        self._tail = (n_paths,)
        self._init_field("OUNoise", beta, sigma, seed_endpoints)

    def _draw_standard_normals(self, k: int) -> np.ndarray:
        return np.stack([src.gaussian(k, 1.0) for src in self._sources], axis=-1)

    def point(self, x: float) -> np.ndarray:
        """The ``(n_paths,)`` values at one state."""
        return self._point(float(x))

    def __call__(self, states: ArrayLike) -> np.ndarray:
        return self._batch(states)


class ProductKernelField:
    """Exact joint samples of ``G(0, sigma^2 exp(-beta ||x - y||_1))`` on R^d at queried points.

    Keeps the Cholesky factor ``L`` of the kernel matrix of the stored points and the whitened
    draws ``xi`` (values ``= sigma L xi``); a new point ``x`` with kernel column ``k`` gets
    ``w = L^{-1} k``, mean ``sigma w.xi`` and variance ``sigma^2 (1 - w.w)`` — the exact Gaussian
    conditional. O(n^2) per new point: use it within one reset period. ``n_paths`` independent
    outputs share the geometry (one per action). Normals come from ``noise`` (a
    :class:`~privrl.privacy.noise.NoiseSource`) or seeded NumPy on ``rng``.
    """

    def __init__(self, *, dim: int, beta: float, sigma: float, n_paths: int = 1,
                 rng: RngLike = None, noise: NoiseSource | None = None) -> None:
        owner = "ProductKernelField"
        self.dim = check_scalar(dim, "dim", owner=owner, kind=int, low=1)
        self.beta = check_scalar(beta, "beta", owner=owner, low=0.0, closed="neither")
        self.sigma = check_scalar(sigma, "sigma", owner=owner, low=0.0)
        self.n_paths = check_scalar(n_paths, "n_paths", owner=owner, kind=int, low=1)
        self._noise = _source(rng, noise, owner)
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
        self._xi = np.vstack([self._xi, self._noise.gaussian((1, self.n_paths), 1.0)])
        self._X = np.vstack([self._X, x[None, :]])
        return n

    def __call__(self, states: ArrayLike) -> np.ndarray:
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
