"""Audit target of the functional-noise path (:mod:`privrl.privacy.gaussian_process`; Hall et al.
2013, Wang & Hegde 2019 App. A).

``gp-functional``: the release ``f + g`` evaluated at a grid of states, with ``g`` a sample path of
``G(0, σ² K)``, ``K(x, y) = exp(−β|x − y|)``, drawn by :class:`~privrl.privacy.gaussian_process.OUPath`.
By Cameron–Martin, ``f + g`` against ``f' + g`` has exactly the privacy curve of a 1-D Gaussian
mechanism with sensitivity ``‖f − f'‖_H`` (RKHS norm), so σ is calibrated by
:func:`calibrate_gaussian` with Δ = ‖f − f'‖_H = 1. Neighbours: f = 0 and
f' = K(·, x₀) (‖K(·, x₀)‖_H² = K(x₀, x₀) = 1: RKHS norm exactly Δ). On any grid containing x₀,
``h_gridᵀ (σ² K_grid)⁻¹ h_grid = 1/σ²``: the grid loses nothing, so the Fisher discriminant
("lda") is the optimal test. The grid is queried in a shuffled order, so a sampler whose law
depended on the query order would show up too.

Negative control ``noise-div-10``: σ/10 with the same claimed event.
"""

from __future__ import annotations

import numpy as np

from privrl.audit.registry import AuditPair, AuditTarget, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_10, claimed_epsilon
from privrl.privacy import calibrate_gaussian
from privrl.privacy.gaussian_process import OUPath
from privrl.privacy.mechanisms import GaussianMechanism

BETA = 5.0
GRID = np.linspace(0.0, 1.0, 11)
X0 = 0.5


def functional_pair(grid: np.ndarray, h: np.ndarray, make_path) -> tuple:
    """Samplers of ``0 + g`` and ``h + g`` on ``grid``: one path object per batch, ``reset()``
    before every trial (a fresh independent path), the grid queried in a random order."""
    def on(f: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            path = make_path(rng)

            def once(_rng: np.random.Generator) -> np.ndarray:
                path.reset()
                order = _rng.permutation(len(grid))
                vals = np.empty(len(grid))
                vals[order] = path.query(grid[order])
                return f + vals
            return stack(once, n, rng)
        return sample
    return on(np.zeros_like(h)), on(h)


def _gp(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    sigma = calibrate_gaussian(epsilon, delta, sensitivity=1.0)
    claimed = claimed_epsilon(GaussianMechanism(sensitivity=1.0, noise_std=sigma).event(), delta)
    used = sigma / 10.0 if broken == "noise-div-10" else sigma
    h = np.exp(-BETA * np.abs(GRID - X0))

    a, b = functional_pair(GRID, h, lambda rng: OUPath(beta=BETA, sigma=used, rng=rng))
    return AuditPair(a, b, claimed, delta)


register_target(AuditTarget(
    name="gp-functional", description="Gaussian-process (OU) functional noise on an 11-point grid, RKHS sensitivity 1",
    privacy_unit="any function pair with RKHS distance 1", build=_gp, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=3_000,
))
