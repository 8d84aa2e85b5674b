"""The deep offline family's planning functions: DP-BC's, DP-IQL's and DP-TD3+BC's noisy gradient steps against
the clipped sums they perturb, with the noise multiplier from the estimators' own calibration
(:func:`privrl.deep_offline.estimators.noise_multiplier`), their stated sensitivities (DP-IQL's ``√3 C``,
DP-TD3+BC's ``√2 C`` on an actor step) and networks (``step_networks``). The rows and the verdict are those of
:mod:`privrl.deep_offline._utility`, which the private fits' UtilityWarning reads too: the family decides the
verdict (hopeless at a noise norm of at least the largest clipped sum, calibrated on measured returns)."""

from __future__ import annotations

from privrl.deep_offline._utility import STEP_REASON, n_parameters, step_rows, step_verdict
from privrl.deep_offline.estimators import DPBC, noise_multiplier
from privrl.deep_offline.iql import DPIQL
from privrl.deep_offline.td3bc import DPTD3BC
from privrl.planning import Assessment, Planner, Public, register_plan

__all__ = ["n_parameters", "plan_dp_bc", "plan_dp_iql", "plan_dp_td3bc"]


def _step_plan(pub: Public, cls: type[DPBC] | type[DPIQL] | type[DPTD3BC], note: str) -> Assessment:
    """One row per network of a noisy step (:func:`~privrl.deep_offline._utility.step_rows`): its clipped sum
    (at most ``q n C``) against the noise norm ``z f C √P``; the verdict of
    :func:`~privrl.deep_offline._utility.step_verdict`."""
    p = cls(budget=pub.budget, **pub.estimator_params)._validated()
    assert pub.n is not None and pub.features is not None and pub.actions is not None  # required inputs
    rate, steps, clip = float(p["sampling_rate"]), int(p["n_steps"]), float(p["clip_norm"])
    z = noise_multiplier(pub.budget, rate, steps)
    rows = step_rows(z, cls.sensitivity_factor, clip, rate, pub.n,
                     cls.step_networks(pub.features, pub.actions, p["hidden"]), cls.step_name)
    notes = (f"noise multiplier z = {z:.4g} for T = {steps} Poisson-subsampled steps at q = {rate:g} (PLD "
             f"accountant, add/remove one trajectory){note}",)
    return Assessment(rows, notes, verdict=step_verdict(max(r.ratio for r in rows)), reason=STEP_REASON)


def plan_dp_bc(pub: Public) -> Assessment:
    """DP-BC's step: the policy's clipped sum against noise of std ``z C`` per coordinate."""
    return _step_plan(pub, DPBC, "")


def plan_dp_iql(pub: Public) -> Assessment:
    """DP-IQL's step, network by network: each network's clipped sum (at most ``q n C``) against the noise
    of std ``z √3 C`` on each of its coordinates."""
    return _step_plan(pub, DPIQL, "; the step's sensitivity is sqrt(3) C (Q, V and the policy each clipped to C)")


def plan_dp_td3bc(pub: Public) -> Assessment:
    """DP-TD3+BC's steps, network by network: the critic's clipped sum (both Q-networks, at most ``q n C``)
    against noise of std ``z √2 C`` per coordinate on an actor step (``z C`` on a critic-only step), and the
    actor's against ``z √2 C`` (``--actions`` is the action dimension)."""
    delay = DPTD3BC(budget=pub.budget, **pub.estimator_params)._validated()["policy_delay"]
    return _step_plan(pub, DPTD3BC, f"; an actor step (one step in {delay}) has sensitivity sqrt(2) C (critic "
                      "and actor each clipped to C), a critic-only step C with noise z C")


register_plan(Planner("dp-bc", "DPBC", "DP behaviour cloning (trajectory-level DP-SGD)", plan_dp_bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-iql", "DPIQL", "DP implicit Q-learning (trajectory-level DP-SGD on Q, V and the policy)",
                      plan_dp_iql, required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
register_plan(Planner("dp-td3bc", "DPTD3BC", "DP TD3+BC, continuous actions (trajectory-level DP-SGD on the twin "
                      "critics and the actor; --actions is the action dimension)", plan_dp_td3bc,
                      required=("n", "features", "actions"), knobs=("n",), budgets=("epsilon_delta",)))
