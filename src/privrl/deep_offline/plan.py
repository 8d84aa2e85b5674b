"""The deep offline family's planning function: DP-BC's noisy gradient step against the clipped sum it
perturbs, with the noise multiplier from the estimator's own calibration
(:func:`privrl.deep_offline.estimators.noise_multiplier`)."""

from __future__ import annotations

import math

from privrl.deep_offline.estimators import DPBC, noise_multiplier
from privrl.planning import Assessment, Planner, Public, Released, register_plan


def n_parameters(in_dim: int, hidden: tuple[int, ...], out_dim: int) -> int:
    """Weights and biases of a ReLU MLP of those layer widths (the dimension P of a released step)."""
    sizes = (in_dim, *hidden, out_dim)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def plan_dp_bc(pub: Public) -> Assessment:
    est = DPBC(budget=pub.budget, **pub.estimator_params)
    p = est._validated()
    assert pub.n is not None and pub.features is not None and pub.actions is not None  # required inputs
    z = noise_multiplier(pub.budget, p["sampling_rate"], p["n_steps"])
    clip = p["clip_norm"]
    size = n_parameters(pub.features, p["hidden"], pub.actions)
    batch = p["sampling_rate"] * pub.n
    row = Released("gradient step", "one step's noisy sum of clipped per-trajectory gradients (its l2 norm)",
                   z * clip * math.sqrt(size), batch * clip,
                   f"an expected batch of q n = {batch:g} trajectories whose gradients all point one way at "
                   f"their bound C = {clip:g}; noise norm z C sqrt(P), P = {size} parameters")
    notes = (f"noise multiplier z = {z:.4g} for T = {p['n_steps']} Poisson-subsampled steps at q = "
             f"{p['sampling_rate']:g} (PLD accountant, add/remove one trajectory)",)
    return Assessment((row,), notes)


register_plan(Planner("dp-bc", "DPBC", "DP behaviour cloning (trajectory-level DP-SGD)", plan_dp_bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
