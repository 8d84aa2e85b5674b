"""The deep offline family's planning functions: DP-BC's, DP-IQL's and DP-TD3+BC's noisy gradient steps against
the clipped sums they perturb, with the noise multiplier from the estimators' own calibration
(:func:`privrl.deep_offline.estimators.noise_multiplier`) and their stated sensitivities (DP-IQL's ``√3 C``,
DP-TD3+BC's ``√2 C`` on an actor step)."""

from __future__ import annotations

import math

from privrl.deep_offline.estimators import DPBC, noise_multiplier
from privrl.deep_offline.iql import DPIQL
from privrl.deep_offline.td3bc import DPTD3BC
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


def plan_dp_iql(pub: Public) -> Assessment:
    """DP-IQL's step, network by network: each network's clipped sum (at most ``q n C``) against the noise
    of std ``z √3 C`` on each of its coordinates."""
    est = DPIQL(budget=pub.budget, **pub.estimator_params)
    p = est._validated()
    assert pub.n is not None and pub.features is not None and pub.actions is not None  # required inputs
    z = noise_multiplier(pub.budget, p["sampling_rate"], p["n_steps"])
    clip, std = p["clip_norm"], z * DPIQL.sensitivity_factor * p["clip_norm"]
    batch = p["sampling_rate"] * pub.n
    rows = tuple(
        Released(f"{name} gradient step", f"one step's noisy sum of clipped per-trajectory gradients of {name} "
                 "(its l2 norm)", std * math.sqrt(size), batch * clip,
                 f"an expected batch of q n = {batch:g} trajectories whose {name} gradients all point one way at "
                 f"their bound C = {clip:g}; noise norm z sqrt(3) C sqrt(P), P = {size} parameters")
        for name, size in (("Q", n_parameters(pub.features, p["hidden"], pub.actions)),
                           ("V", n_parameters(pub.features, p["hidden"], 1)),
                           ("policy", n_parameters(pub.features, p["hidden"], pub.actions))))
    notes = (f"noise multiplier z = {z:.4g} for T = {p['n_steps']} Poisson-subsampled steps at q = "
             f"{p['sampling_rate']:g} (PLD accountant, add/remove one trajectory); the step's sensitivity is "
             "sqrt(3) C (Q, V and the policy each clipped to C)",)
    return Assessment(rows, notes)


def plan_dp_td3bc(pub: Public) -> Assessment:
    """DP-TD3+BC's steps, network by network: the critic's clipped sum (both Q-networks, at most ``q n C``)
    against noise of std ``z √2 C`` per coordinate on an actor step (``z C`` on a critic-only step), and the
    actor's against ``z √2 C`` (``--actions`` is the action dimension)."""
    est = DPTD3BC(budget=pub.budget, **pub.estimator_params)
    p = est._validated()
    assert pub.n is not None and pub.features is not None and pub.actions is not None  # required inputs
    z = noise_multiplier(pub.budget, p["sampling_rate"], p["n_steps"])
    clip, std = p["clip_norm"], z * DPTD3BC.sensitivity_factor * p["clip_norm"]
    batch = p["sampling_rate"] * pub.n
    rows = tuple(
        Released(f"{name} gradient step", f"one actor step's noisy sum of clipped per-trajectory gradients of the "
                 f"{name} (its l2 norm)", std * math.sqrt(size), batch * clip,
                 f"an expected batch of q n = {batch:g} trajectories whose {name} gradients all point one way at "
                 f"their bound C = {clip:g}; noise norm z sqrt(2) C sqrt(P), P = {size} parameters")
        for name, size in (("critic", 2 * n_parameters(pub.features + pub.actions, p["hidden"], 1)),
                           ("actor", n_parameters(pub.features, p["hidden"], pub.actions))))
    notes = (f"noise multiplier z = {z:.4g} for T = {p['n_steps']} Poisson-subsampled steps at q = "
             f"{p['sampling_rate']:g} (PLD accountant, add/remove one trajectory); an actor step (one step in "
             f"{p['policy_delay']}) has sensitivity sqrt(2) C (critic and actor each clipped to C), a critic-only "
             "step C with noise z C",)
    return Assessment(rows, notes)


register_plan(Planner("dp-bc", "DPBC", "DP behaviour cloning (trajectory-level DP-SGD)", plan_dp_bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-iql", "DPIQL", "DP implicit Q-learning (trajectory-level DP-SGD on Q, V and the policy)",
                      plan_dp_iql, required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-td3bc", "DPTD3BC", "DP TD3+BC, continuous actions (trajectory-level DP-SGD on the twin "
                      "critics and the actor; --actions is the action dimension)", plan_dp_td3bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
