"""Shared inputs of the linear-mixture privatizer tests (``tests`` is on the test path)."""

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.linear_mixture import random_mixture
from privrl.privacy import ConstantNoise, Ledger, Releaser

MODEL = random_mixture(4, 3, 3, 2, 2, rng=5)
B1 = PrivacyBudget(epsilon=1.0, delta=1e-5)


def contributions(rng, H, d1, d2, x_bound, y_bound):
    """A user's contributions inside the plan's per-step bounds."""
    x_p = rng.normal(size=(H, d1))
    x_p *= (x_bound * rng.uniform(0, 1, H) / np.maximum(np.linalg.norm(x_p, axis=1), 1e-12))[:, None]
    x_r = rng.dirichlet(np.ones(d2), H)
    return x_p, y_bound * rng.uniform(0, 1, H), x_r, rng.uniform(0, 1, H)


def check_constant_noise_releases(reg, K, value, multiplier):
    """Start the central privatizer ``reg`` on ConstantNoise(value) and feed it K − 1 in-bound users:
    after t users every release must be the exact prefix sum plus ``value·multiplier(t)·σ_{x,h}`` in
    every entry (plus ``γ_h I`` on the Grams, which stay exactly symmetric). Returns ``reg``."""
    H, d1, d2 = MODEL.horizon, MODEL.d1, MODEL.d2
    reg.start(n_episodes=K, horizon=H, d1=d1, d2=d2, rel=Releaser(ConstantNoise(value), Ledger()))
    std = reg.plan.std
    rng = np.random.default_rng(0)
    exact = [np.zeros((H, d1, d1)), np.zeros((H, d1)), np.zeros((H, d2, d2)), np.zeros((H, d2))]
    for t in range(1, K):
        x_p, y_p, x_r, y_r = contributions(rng, H, d1, d2, *reg.bounds)
        for total, item in zip(exact, reg.items(x_p, y_p, x_r, y_r)):
            total += item
        got = reg.update(x_p, y_p, x_r, y_r)
        for j, (g, e) in enumerate(zip(got, exact)):
            noise = value * multiplier(t) * std[j].reshape(-1, *([1] * (e.ndim - 1)))
            shift = 0.0
            if j in (0, 2):
                shift = (reg.shift_p if j == 0 else reg.shift_r)[:, None, None] * np.eye(e.shape[-1])
                assert np.array_equal(g, np.swapaxes(g, -1, -2))
            np.testing.assert_allclose(g, e + noise + shift, rtol=1e-12, atol=1e-9)
    return reg
