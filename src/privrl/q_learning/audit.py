"""Audit target of DP Q-learning's noisy release (Wang & Hegde 2019, Algorithm 1; sound calibration).

A full training run costs seconds (a torch network), so 10⁴ of them are out of reach; the audit
checks the piece that carries the guarantee: one functional-noise release of an update, with the
module's own calibration (:func:`~privrl.algorithms.q_learning.calibration.calibrate_functional_noise`,
``calibration="sound"``, one update: ``n_samples = batch_size = 64``, α = 3e-4, L = 4, two actions)
and the module's own noise factory (:func:`~privrl.algorithms.q_learning.training.make_noise`, the
paths training adds). Neighbours (reward functions within sup-norm 1): the update of Q under r' can
differ from the update under r by a function of RKHS norm up to the calibration's Δ_H; the audit
takes the worst such difference, ``h = Δ_H K(·, x₀)`` for action 0 (‖h‖_H = Δ_H exactly), on a
grid of states containing x₀. The claimed ε is the ledger's: the Gaussian event σ/Δ_H plus the
tail event ``ApproxDpEvent(0, δ_g)``, at δ.

Not audited here: that an actual SGD step never moves Q by more than Δ_H in RKHS norm (the
sensitivity proof, spec A4–A7) and the paper calibration (whose claimed sensitivity C is not
the sound one).

Negative control ``noise-div-10``: σ/10, same claimed events.
"""

from __future__ import annotations

import dp_accounting
import numpy as np

from privrl.algorithms.q_learning.calibration import calibrate_functional_noise
from privrl.algorithms.q_learning.training import make_noise
from privrl.audit.registry import AuditPair, AuditTarget, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_10, claimed_epsilon
from privrl.privacy.accounting import ApproxDpEvent

BATCH = 64
N_ACTIONS = 2


def _q(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    cal = calibrate_functional_noise(epsilon, delta, n_samples=BATCH, batch_size=BATCH, learning_rate=3e-4,
                                     lipschitz=4.0, n_actions=N_ACTIONS, calibration="sound")
    events = [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(cal.sigma / cal.sensitivity),
                                                int(cal.n_releases)), ApproxDpEvent(0.0, cal.delta_g)]
    claimed = claimed_epsilon(dp_accounting.ComposedDpEvent(events), delta)
    sigma = cal.sigma / 10.0 if broken == "noise-div-10" else cal.sigma
    x0 = 0.5
    # grid: x0 and its neighbours at the kernel's length scale 1/beta, plus far points
    grid = np.unique(np.concatenate([x0 + np.arange(-3, 4) / cal.beta, np.linspace(0, 1, 5)]))
    h = np.zeros((len(grid), N_ACTIONS))
    h[:, 0] = cal.sensitivity * np.exp(-cal.beta * np.abs(grid - x0))

    def on(f: np.ndarray):
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            noise = make_noise(1, N_ACTIONS, cal.beta, sigma, rng)

            def once(_rng):
                noise.reset()
                order = _rng.permutation(len(grid))
                vals = np.empty_like(f)
                vals[order] = noise(grid[order][:, None])
                return (f + vals).ravel()
            return stack(once, n, rng)
        return sample
    note = (f"one update, sound calibration: sigma/Delta_H = {cal.sigma / cal.sensitivity:.4g}, "
            f"beta = {cal.beta:.4g}, delta_g = {cal.delta_g:.3g}")
    return AuditPair(on(np.zeros_like(h)), on(h), claimed, delta, note=note)


register_target(AuditTarget(
    name="dp-q-learning", description="DP Q-learning: one functional-noise release at the RKHS sensitivity (sound)",
    privacy_unit="reward function (sup-norm 1)", build=_q, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=3_000,
))
