"""The example family's planning function: the private mean's noise std against the range of the
mean, from the estimator's own calibration (:func:`.estimators.noise_std`)."""

from privrl._validation import param_error
from privrl.planning import Assessment, Planner, Public, Released, mean_range, register_plan

from .estimators import PrivateMeanReturn, noise_std


def plan_mean(pub: Public) -> Assessment:
    if pub.n is None:   # required: the planning layer refuses a plan without it first
        raise param_error("n", "the plan of example-mean", "a positive int", None)
    est = PrivateMeanReturn(budget=pub.budget, **pub.estimator_params)
    p = est._validated()
    bound = float(p["return_bound"] if pub.F_max is None else pub.F_max)
    std = noise_std(pub.budget, bound / pub.n, p["calibration"])
    return Assessment((Released("mean", "the mean return", std, mean_range(bound),
                                f"the range of the mean, F_max = {bound:g}"),))


register_plan(Planner("example-mean", "PrivateMeanReturn", "the private mean return", plan_mean,
                      required=("n",), optional=("F_max",)))
