"""The noise-to-signal of one DP-SGD step from public quantities: the one model that the planners
(:mod:`privrl.deep_offline.plan`, ``privrl plan dp-bc | dp-iql | dp-td3bc``) print and that the private fits'
:class:`~privrl.errors.UtilityWarning` reads, so that the plan and the fit agree.

A step releases, for each network of ``P`` parameters, the sum of the sampled trajectories' clipped
gradients plus Gaussian noise of std ``z f C`` per coordinate (``z`` the noise multiplier, ``f`` the
estimator's ``sensitivity_factor``, ``C`` the clip norm). **Signal**: at most ``q n C``, an expected
batch of ``q n`` trajectories whose gradients all point one way at their bound. **Noise**: its ℓ2 norm,
``z f C √P``. The ratio ``r = z f √P / (q n)`` reads public numbers only: ``n`` (the count the δ ≥ 1/n
check reads too; the warning goes to whoever runs the fit and is not released), ``q``, ``T`` (through
``z``), ``C``, ``(ε, δ)`` and the network sizes.

**Verdict.** ``hopeless`` when ``r ≥`` :data:`HOPELESS_STEP` = 1 (the noise of every step outweighs the
largest clipped sum its batch can hold), ``useful`` at ``r ≤`` :data:`privrl.planning.USEFUL`, ``marginal``
between. The house threshold :data:`privrl.planning.HOPELESS` (0.5, for one released statistic) is not used:
a DP-SGD step is one of ``T`` and the released policy is their last iterate, and at 10⁴ trajectories
DP-TD3+BC on Pendulum at ε = 3 (r = 0.53) returns TD3+BC's return. Calibrated on the measured returns of
``docs/deep_offline.md`` ("When the fit warns"): every measured fit far below the behaviour policy has
r ≥ 2.8, every fit at 10⁴ trajectories r ≤ 0.81.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from privrl.errors import UtilityWarning
from privrl.planning import USEFUL, Released

__all__ = ["HOPELESS_STEP", "STEP_REASON", "n_parameters", "step_rows", "step_verdict", "warn_if_hopeless"]

#: noise norm / largest clipped sum of one step at or above which a DP-SGD fit is hopeless (module docstring)
HOPELESS_STEP = 1.0
#: why the family decides its plans' verdict (printed by ``privrl plan``)
STEP_REASON = (f"one DP-SGD step of T: hopeless when its noise norm is at least {HOPELESS_STEP:g}x the largest "
               f"clipped sum (not the house's 0.5), useful at most {USEFUL:g}x; calibrated on measured returns "
               "(docs/deep_offline.md, 'When the fit warns')")


def n_parameters(in_dim: int, hidden: Sequence[int], out_dim: int) -> int:
    """Weights and biases of a ReLU MLP of those layer widths (the dimension P of a released step)."""
    sizes = (in_dim, *hidden, out_dim)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def step_rows(z: float, factor: float, clip: float, rate: float, n: int,
              networks: Sequence[tuple[str, int]], step: str) -> tuple[Released, ...]:
    """One row per network ``(name, P)`` of a noisy ``step``: its clipped sum (at most ``q n C``) against the
    noise norm ``z f C √P``."""
    shown = "" if factor == 1.0 else f"sqrt({round(factor ** 2)}) "
    batch = rate * n
    return tuple(
        Released(f"{name} gradient step".strip(), f"{step}'s noisy sum of clipped per-trajectory gradients"
                 f"{f' of {name}' if name else ''} (its l2 norm)", z * factor * clip * math.sqrt(size),
                 batch * clip,
                 f"an expected batch of q n = {batch:g} trajectories whose {name + ' ' if name else ''}gradients all "
                 f"point one way at their bound C = {clip:g}; noise norm z {shown}C sqrt(P), P = {size} parameters")
        for name, size in networks)


def step_verdict(ratio: float) -> str:
    """``"useful"`` (r ≤ USEFUL), ``"hopeless"`` (r ≥ :data:`HOPELESS_STEP`, or NaN) or ``"marginal"``."""
    if not ratio < HOPELESS_STEP:
        return "hopeless"
    return "useful" if ratio <= USEFUL else "marginal"


def warn_if_hopeless(owner: str, planner: str, rows: Sequence[Released], n: int, rate: float, *,
                     stacklevel: int) -> None:
    """A :class:`UtilityWarning` when the worst row's verdict is hopeless: what the policy will likely be, and
    the number of trajectories that would bring the noise below the clipped sum (the ratio is ``∝ 1/n`` at a
    fixed ``q``, ``T`` and budget)."""
    worst = max(rows, key=lambda r: r.ratio)
    if step_verdict(worst.ratio) != "hopeless":
        return
    need = math.floor(n * worst.ratio / HOPELESS_STEP) + 1
    what = worst.name.removesuffix("gradient step").strip()     # the network ("" for DP-BC's one network)
    warnings.warn(
        f"{owner}: noise-dominated DP-SGD steps: the noise norm of one step{f' on the {what}' if what else ''} "
        f"({worst.noise_std:.3g}) is {worst.ratio:.3g}x the summed clipped signal of an expected batch of "
        f"q n = {rate * n:g} trajectories (at most {worst.signal:.3g}), so the policy is "
        f"unlikely to beat the behaviour policy. At the same sampling rate, steps and budget, n >= {need} "
        f"trajectories ({need / n:.3g}x the data) bring the noise below the clipped sum (privrl plan {planner} "
        "lists the other knobs).",
        UtilityWarning, stacklevel=stacklevel + 1)

