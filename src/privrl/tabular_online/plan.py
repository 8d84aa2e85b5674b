"""Planning the private tabular learners before the run (``privrl plan``; :mod:`privrl.planning`).

The planning function builds the learner with the public parameters and reads its noise from the
learner's own plan (:meth:`DPUCBVI.noise_for <privrl.tabular_online.DPUCBVI.noise_for>`, the plan a
run draws with). At the end of a run of K = n episodes a released count carries noise of std
:meth:`~privrl.tabular_online.calibration.CountNoise.std_per_release`, and the post-processing shifts
it by up to ``E_{ε,β}`` (the learner's own error bound). Typical value: the K·H visits of a run
spread evenly over the ``H·S·A`` step-state-action cells (``S·A`` when pooled), so
``N(s, a) ≈ K/(S·A)`` per step (``K·H/(S·A)`` pooled).
"""

from __future__ import annotations

from collections.abc import Callable

from privrl._validation import param_error
from privrl.planning import Assessment, Planner, Public, Released, register_plan
from privrl.tabular_online.estimators import DPUCBVI, PrivateUCBPO, PrivateUCBVI

__all__ = ["plan_counts"]


def plan_counts(pub: Public, estimator: type = DPUCBVI) -> Assessment:
    """The released counts of a run of K = n episodes (module docstring)."""
    owner = f"plan {estimator.__name__}"
    params = pub.estimator_params
    if "n_episodes" in params:
        raise param_error("n_episodes", owner, "given as n (the number of episodes)", params["n_episodes"])
    K, S, A, H = int(pub.n), int(pub.states), int(pub.actions), int(pub.horizon)  # type: ignore[arg-type]
    est = estimator(budget=pub.budget, n_episodes=K, **params)
    noise = est.noise_for(H, S, A)
    typical = K * (H if noise.pooled else 1) / (S * A)
    basis = (f"K{'·H' if noise.pooled else ''}/(S·A) = {typical:.3g}: the run's visits spread evenly over the "
             f"{'(s, a)' if noise.pooled else 'step-(s, a)'} cells")
    rows = (Released("n_sa", "a released count N(s, a) at the end of the run", noise.std_per_release(), typical,
                     basis),
            Released("error_bound", "E of Assumption 3.1: the post-processed counts' worst-case error",
                     noise.error_bound, typical, basis))
    notes = (f"{noise.privatizer} privatizer, {noise.kind} noise, {noise.counter} counter ({noise.calibration} "
             f"calibration), E = {noise.error_bound:.4g} at beta = {noise.beta:g}",)
    return Assessment(rows, notes)


def _planner(cls: type) -> Callable[[Public], Assessment]:
    return lambda pub: plan_counts(pub, cls)


for _name, _cls in (("dp-ucbvi", DPUCBVI), ("private-ucb-vi", PrivateUCBVI), ("private-ucb-po", PrivateUCBPO)):
    register_plan(Planner(_name, _cls.__name__, f"{_cls.__name__} (online exploration, tabular MDPs): the noisy "
                          "visit counts", _planner(_cls),
                          required=("n", "states", "actions", "horizon"), knobs=("n", "budget")))
