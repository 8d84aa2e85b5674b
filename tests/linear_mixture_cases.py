"""Shared inputs of the linear-mixture privatizer tests (``tests`` is on the test path)."""

import numpy as np

from privrl import PrivacyBudget
from privrl.envs.linear_mixture import random_mixture

MODEL = random_mixture(4, 3, 3, 2, 2, rng=5)
B1 = PrivacyBudget(epsilon=1.0, delta=1e-5)


def contributions(rng, H, d1, d2, x_bound, y_bound):
    """A user's contributions inside the plan's per-step bounds."""
    x_p = rng.normal(size=(H, d1))
    x_p *= (x_bound * rng.uniform(0, 1, H) / np.maximum(np.linalg.norm(x_p, axis=1), 1e-12))[:, None]
    x_r = rng.dirichlet(np.ones(d2), H)
    return x_p, y_bound * rng.uniform(0, 1, H), x_r, rng.uniform(0, 1, H)
