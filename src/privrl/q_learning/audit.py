"""Audit targets of the Q-learning family (Wang & Hegde 2019): the functional-noise release.

``gp-functional`` — the Gaussian-process mechanism itself (Hall et al. 2013; App. A): ``f + g`` at a
grid of states, ``g`` a path of ``G(0, sigma^2 K)``, ``K(x, y) = exp(-beta |x - y|)``, drawn by
:class:`~privrl.q_learning.gaussian_process.OUPath` from a noise source. By Cameron–Martin ``f + g``
against ``f' + g`` has exactly the privacy curve of the 1-D Gaussian mechanism with sensitivity
``||f - f'||_H``, so sigma is calibrated with Delta = 1 and the claim is that Gaussian event.
Neighbours: f = 0 and f' = K(., x0) (``||K(., x0)||_H = 1``); on a grid containing x0,
``h^T (sigma^2 K_grid)^{-1} h = 1/sigma^2``: the grid loses nothing, so the Fisher discriminant is
the optimal test. The grid is queried in a shuffled order, so a sampler whose law depended on the
query order would show up too.

``dp-q-learning`` — one functional-noise release of :class:`~privrl.q_learning.DPQLearning`, with
the *estimator's own* calibration and claim: a DPQLearning (Algorithm 1's loop, default "tight"
calibration) is fitted for one update (``n_samples = batch_size = 64``, alpha = 3e-4, L = 4, two
actions) at the audited budget; its ``calibration_`` gives (sigma, beta, Delta_H), and the claimed ε
is its ``privacy_spent(delta)`` — the ledger's Gaussian event sigma/Delta_H and the tail event
``ApproxDpEvent(0, delta_g)``. The samplers draw the paths training adds
(:func:`~privrl.q_learning.training.functional_noise`) from a noise source. Neighbours (reward functions
within sup-norm 1): the update of Q under r' can differ from the update under r by a function of
RKHS norm up to Delta_H; the audit takes the worst such difference, ``h = Delta_H K(., x0)`` for
action 0 (``||h||_H = Delta_H`` exactly), on a grid of states containing x0.

Not audited here: that an actual SGD step never moves Q by more than Delta_H in RKHS norm (the
sensitivity chain, spec A4–A7, with its declared Lipschitz constant).

``dp-q-learning-sound`` is the same with ``calibration="sound"``. (``calibration="paper"`` is not
audited: its printed constants give σ/Δ_H ≈ 0.009 at ε = 1 and its ledger honestly claims
ε ≈ 6·10³, far beyond what any sample can show.)

Release point: the Fisher discriminant (``"lda"``, the Gaussian likelihood ratio of the path's
values on the grid). Negative controls of both, ``noise-div-2`` (release point) and
``noise-div-10``: the same samplers on ``ScaledNoise(source, 1/2)`` / ``ScaledNoise(source, 1/10)``
(the generic broken implementation: less noise, same claim).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from privrl.audit.broken import scaled_source
from privrl.audit.core import Sampler
from privrl.audit.registry import AuditPair, AuditTarget, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10, claimed_epsilon
from privrl.privacy import NoiseSource, PrivacyBudget, calibrate_gaussian
from privrl.privacy.mechanisms import GaussianMechanism
from privrl.q_learning.estimators import DPQLearning
from privrl.q_learning.gaussian_process import OUPath
from privrl.q_learning.training import functional_noise

__all__ = ["functional_pair", "dp_q_learning_release", "BETA", "GRID", "X0", "BATCH", "N_ACTIONS"]

BETA = 5.0
GRID = np.linspace(0.0, 1.0, 11)
X0 = 0.5
BATCH = 64
N_ACTIONS = 2


class _Paths:
    """A sampler of noise values at states: ``reset()`` (fresh paths) and ``query(xs)``."""

    def __init__(self, reset: Callable[[], object], query: Callable[[np.ndarray], np.ndarray]) -> None:
        self.reset, self.query = reset, query


def functional_pair(grid: np.ndarray, h: np.ndarray, make_path: Callable[[NoiseSource], _Paths],
                    broken: str | None = None) -> tuple[Sampler, Sampler]:
    """Samplers of ``0 + g`` and ``h + g`` on ``grid``: one path object per batch on the batch's
    noise source, ``reset()`` before every trial (a fresh independent path), the grid queried in a
    random order. ``make_path(noise)`` builds a :class:`_Paths`; ``h`` is ``(len(grid),)`` or
    ``(len(grid), m)``."""
    def on(f: np.ndarray) -> Sampler:
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            path = make_path(scaled_source(rng, broken))

            def once(_rng: np.random.Generator) -> np.ndarray:
                path.reset()
                order = _rng.permutation(len(grid))
                vals = np.empty_like(f)
                vals[order] = path.query(grid[order])
                return (f + vals).ravel()
            return stack(once, n, rng)
        return sample
    return on(np.zeros_like(h)), on(h)


def _gp(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    sigma = calibrate_gaussian(epsilon, delta, sensitivity=1.0)
    claimed = claimed_epsilon(GaussianMechanism(sensitivity=1.0, noise_std=sigma).event(), delta)
    h = np.exp(-BETA * np.abs(GRID - X0))

    def make_path(noise: NoiseSource) -> _Paths:
        path = OUPath(beta=BETA, sigma=sigma, noise=noise)
        return _Paths(path.reset, path.query)

    a, b = functional_pair(GRID, h, make_path, broken)
    return AuditPair(a, b, claimed, delta)


def dp_q_learning_release(epsilon: float, delta: float, calibration: str = "tight") -> DPQLearning:
    """A :class:`~privrl.q_learning.DPQLearning` fitted for one update at (ε, δ) (module docstring):
    its ``calibration_`` and ``privacy_spent(delta)`` are what the audit uses."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the one-update run's utility is not audited
        return DPQLearning(budget=PrivacyBudget(epsilon=epsilon, delta=delta), config="paper", n_samples=BATCH,
                           batch_size=BATCH, hidden=(4,), calibration=calibration).fit(rng=0)


def _q(epsilon: float, delta: float, broken: str | None, calibration: str = "tight") -> AuditPair:
    est = dp_q_learning_release(epsilon, delta, calibration)
    cal = est.calibration_
    assert cal is not None  # a private fit calibrates its noise
    claimed = est.privacy_spent(delta)
    # grid: x0 and its neighbours at the kernel's length scale 1/beta, plus far points
    grid = np.unique(np.clip(np.concatenate([X0 + np.arange(-3, 4) / cal.beta, np.linspace(0, 1, 5)]), 0, 1))
    h = np.zeros((len(grid), N_ACTIONS))
    h[:, 0] = cal.sensitivity * np.exp(-cal.beta * np.abs(grid - X0))

    def make_path(noise: NoiseSource) -> _Paths:
        paths = functional_noise(1, N_ACTIONS, cal.beta, cal.sigma, noise)
        return _Paths(paths.reset, lambda xs: paths(xs[:, None]))

    a, b = functional_pair(grid, h, make_path, broken)
    note = (f"one update, {cal.calibration} calibration: sigma/Delta_H = {cal.sigma / cal.sensitivity:.4g}, "
            f"beta = {cal.beta:.4g}, k = {cal.kappa:.4g}, delta_g = {cal.delta_g:.3g}")
    return AuditPair(a, b, claimed, delta, note=note)


register_target(AuditTarget(
    name="gp-functional", description="Gaussian-process (OU) functional noise on an 11-point grid, RKHS sensitivity 1",
    privacy_unit="any function pair with RKHS distance 1", build=_gp, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-q-learning", description="DP Q-learning: one functional-noise release at the RKHS sensitivity "
    "(the estimator's calibration and ledger)",
    privacy_unit="reward function (sup-norm 1)", build=_q, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-q-learning-sound", description="DP Q-learning with calibration='sound': one functional-noise "
    "release at the RKHS sensitivity (the estimator's calibration and ledger)",
    privacy_unit="reward function (sup-norm 1)", build=lambda e, d, b: _q(e, d, b, "sound"), epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
