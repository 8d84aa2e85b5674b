"""Prop 10 of Wang & Hegde (2019) in the discrete setting (spec §4, T26–T28).

With J = 1 the discrete algorithm is value iteration on the noisy reward ``r + z``,
``z ~ N(0, sigma^2)`` per (state, action); pi' is greedy for ``r + z`` and is evaluated under the
true ``r``. Rigorous bound (spec §4): ``E[(1/n) ||v* - v^pi'||_1] <= sigma sqrt(2 ln(nm)) / (1-gamma)``.
The printed bound ``2 sqrt(2) sigma / (sqrt(n pi) (1 - gamma))`` (with sqrt(n)) is false (T27).
"""

import math

import numpy as np
import pytest
from scipy import stats


def _solve(P, r, gamma, iters=2000):
    if gamma == 0:
        return r.argmax(1), r.max(1)
    n, m = r.shape
    v = np.zeros(n)
    for _ in range(iters):
        q = r + gamma * np.einsum("ams,s->ma", P, v)
        v_new = q.max(1)
        if np.max(np.abs(v_new - v)) < 1e-12:
            break
        v = v_new
    return q.argmax(1), v


def _evaluate(P, r, gamma, policy):
    n = r.shape[0]
    if gamma == 0:
        return r[np.arange(n), policy]
    Ppi = P[policy, np.arange(n)]
    return np.linalg.solve(np.eye(n) - gamma * Ppi, r[np.arange(n), policy])


def _loss(P, r, gamma, sigma, rng):
    n, m = r.shape
    _, v_star = _solve(P, r, gamma)
    pi, _ = _solve(P, r + sigma * rng.standard_normal((n, m)), gamma)
    return float(np.mean(v_star - _evaluate(P, r, gamma, pi)))


@pytest.mark.parametrize("n", [50, 400])
@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9])
def test_rigorous_bound_holds(n, gamma):  # T26
    rng = np.random.default_rng(n + int(10 * gamma))
    m = 2
    P = rng.dirichlet(np.ones(n) * 0.1, size=(m, n))
    r = rng.random((n, m))
    for sigma in (0.1, 0.3, 1.0):
        losses = [_loss(P, r, gamma, sigma, rng) for _ in range(20 if n == 50 else 3)]
        assert np.mean(losses) <= sigma * math.sqrt(2 * math.log(n * m)) / (1 - gamma)
        assert np.mean(losses) <= 2 * math.sqrt(2) * sigma / (math.sqrt(math.pi) * (1 - gamma))


def test_printed_sqrt_n_bound_is_false():  # T27
    n, sigma = 1000, 1.0
    rng = np.random.default_rng(27)
    P = np.tile(np.eye(n), (2, 1, 1))
    r = np.stack([np.zeros(n), np.full(n, 1.06 * sigma)], axis=1)
    losses = [_loss(P, r, 0.0, sigma, rng) for _ in range(20)]
    assert np.mean(losses) == pytest.approx(1.06 * stats.norm.cdf(-0.75), abs=0.02)   # ~0.24
    assert np.mean(losses) > 2 * math.sqrt(2) * sigma / math.sqrt(n * math.pi)         # printed: 0.0505


def test_loss_vanishes_and_grows_with_sigma():  # T28
    rng = np.random.default_rng(28)
    n, m, gamma = 50, 2, 0.5
    P = rng.dirichlet(np.ones(n), size=(m, n))
    r = rng.random((n, m))
    sigmas = [0.0, 0.05, 0.1, 0.3, 0.6, 1.0]
    means = [np.mean([_loss(P, r, gamma, s, rng) for _ in range(20)]) for s in sigmas]
    assert means[0] == pytest.approx(0.0, abs=1e-9)
    assert stats.spearmanr(sigmas, means)[0] > 0.9
