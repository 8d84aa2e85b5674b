"""The deep offline family's planning functions: DP-BC's, DP-IQL's and DP-TD3+BC's noisy gradient steps against
the clipped sums they perturb, with the noise multiplier from the estimators' own calibration
(:func:`privrl.deep_offline.estimators.noise_multiplier`) and their stated sensitivities (DP-IQL's ``√3 C``,
DP-TD3+BC's ``√2 C`` on an actor step)."""

from __future__ import annotations

import math
from collections.abc import Callable

from privrl.deep_offline.estimators import DPBC, noise_multiplier
from privrl.deep_offline.iql import DPIQL
from privrl.deep_offline.td3bc import DPTD3BC
from privrl.planning import Assessment, Planner, Public, Released, register_plan

#: the networks of one step, ``(name, P)``, from the public inputs ``(features, actions)`` and the hidden widths
Networks = Callable[[int, int, tuple[int, ...]], tuple[tuple[str, int], ...]]


def n_parameters(in_dim: int, hidden: tuple[int, ...], out_dim: int) -> int:
    """Weights and biases of a ReLU MLP of those layer widths (the dimension P of a released step)."""
    sizes = (in_dim, *hidden, out_dim)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def _step_plan(pub: Public, cls: type[DPBC] | type[DPIQL] | type[DPTD3BC], networks: Networks, step: str,
               note: str) -> Assessment:
    """One row per network of a noisy step: its clipped sum (at most ``q n C``: an expected batch of ``q n``
    trajectories whose gradients all point one way at their bound) against the noise norm ``z f C √P`` (``f``
    the estimator's ``sensitivity_factor``, ``P`` the network's parameters)."""
    p = cls(budget=pub.budget, **pub.estimator_params)._validated()
    assert pub.n is not None and pub.features is not None and pub.actions is not None  # required inputs
    rate, steps, clip = float(p["sampling_rate"]), int(p["n_steps"]), float(p["clip_norm"])
    z = noise_multiplier(pub.budget, rate, steps)
    factor = cls.sensitivity_factor
    shown = "" if factor == 1.0 else f"sqrt({round(factor ** 2)}) "
    batch = rate * pub.n
    rows = tuple(
        Released(f"{name} gradient step".strip(), f"{step}'s noisy sum of clipped per-trajectory gradients"
                 f"{f' of {name}' if name else ''} (its l2 norm)", z * factor * clip * math.sqrt(size),
                 batch * clip,
                 f"an expected batch of q n = {batch:g} trajectories whose {name + ' ' if name else ''}gradients all "
                 f"point one way at their bound C = {clip:g}; noise norm z {shown}C sqrt(P), P = {size} parameters")
        for name, size in networks(pub.features, pub.actions, p["hidden"]))
    notes = (f"noise multiplier z = {z:.4g} for T = {steps} Poisson-subsampled steps at q = {rate:g} (PLD "
             f"accountant, add/remove one trajectory){note}",)
    return Assessment(rows, notes)


def plan_dp_bc(pub: Public) -> Assessment:
    """DP-BC's step: the policy's clipped sum against noise of std ``z C`` per coordinate."""
    return _step_plan(pub, DPBC, lambda f, a, h: (("", n_parameters(f, h, a)),), "one step", "")


def plan_dp_iql(pub: Public) -> Assessment:
    """DP-IQL's step, network by network: each network's clipped sum (at most ``q n C``) against the noise
    of std ``z √3 C`` on each of its coordinates."""
    return _step_plan(pub, DPIQL, lambda f, a, h: (("Q", n_parameters(f, h, a)), ("V", n_parameters(f, h, 1)),
                                                   ("policy", n_parameters(f, h, a))),
                      "one step", "; the step's sensitivity is sqrt(3) C (Q, V and the policy each clipped to C)")


def plan_dp_td3bc(pub: Public) -> Assessment:
    """DP-TD3+BC's steps, network by network: the critic's clipped sum (both Q-networks, at most ``q n C``)
    against noise of std ``z √2 C`` per coordinate on an actor step (``z C`` on a critic-only step), and the
    actor's against ``z √2 C`` (``--actions`` is the action dimension)."""
    delay = DPTD3BC(budget=pub.budget, **pub.estimator_params)._validated()["policy_delay"]
    return _step_plan(pub, DPTD3BC, lambda f, a, h: (("critic", 2 * n_parameters(f + a, h, 1)),
                                                     ("actor", n_parameters(f, h, a))),
                      "one actor step", f"; an actor step (one step in {delay}) has sensitivity sqrt(2) C (critic "
                      "and actor each clipped to C), a critic-only step C with noise z C")


register_plan(Planner("dp-bc", "DPBC", "DP behaviour cloning (trajectory-level DP-SGD)", plan_dp_bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-iql", "DPIQL", "DP implicit Q-learning (trajectory-level DP-SGD on Q, V and the policy)",
                      plan_dp_iql, required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-td3bc", "DPTD3BC", "DP TD3+BC, continuous actions (trajectory-level DP-SGD on the twin "
                      "critics and the actor; --actions is the action dimension)", plan_dp_td3bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
