"""The example family's planning function: the private mean's noise std against the range of the
mean, from the estimator's own calibration (:func:`example_family.estimators.noise_std`)."""

from example_family.estimators import PrivateMeanReturn, noise_std
from privrl.planning import Assessment, Planner, Public, Released, mean_range, register_plan


def plan_mean(pub: Public) -> Assessment:
    est = PrivateMeanReturn(budget=pub.budget, **pub.estimator_params)
    p = est._validated()
    bound = float(p["return_bound"] if pub.F_max is None else pub.F_max)
    std = noise_std(pub.budget, bound / pub.n, p["calibration"])
    return Assessment((Released("mean", "the mean return", std, mean_range(bound),
                                f"the range of the mean, F_max = {bound:g}"),))


register_plan(Planner("example-mean", "PrivateMeanReturn", "the private mean return", plan_mean,
                      required=("n",), optional=("F_max",)))
