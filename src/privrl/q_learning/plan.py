"""Planning DP Q-learning before the run (``privrl plan``; :mod:`privrl.planning`).

The planning function builds :class:`~privrl.q_learning.DPQLearning` with the public parameters
and reads σ from its own calibration (:meth:`DPQLearning.functional_calibration
<privrl.q_learning.DPQLearning.functional_calibration>`, which ``fit`` calls): the released
Q-function is Q_θ + g with g a Gaussian process of pointwise std σ. Its typical value is set by
the declared reward range (``reward_bounds``, public): the greedy policy must resolve differences
of the order of one reward, and a noise std of half that range already drives it (the
estimator's own "degenerate output" warning; with rewards in [0, 0.5], σ ≥ 0.8 gives the return
of random play, Figure 1). More samples mean more noisy updates, so the only knob searched is
the budget (a smaller learning rate or Lipschitz bound also lowers σ: ``--param``). A run no noise
can certify (the calibration's own error) is planned as infinite noise, with the reason.
"""

from __future__ import annotations

import math

from privrl._validation import param_error
from privrl.errors import CertificationError
from privrl.planning import Assessment, Planner, Public, Released, register_plan
from privrl.q_learning.estimators import DPQLearning

__all__ = ["plan_dp_q_learning"]


def plan_dp_q_learning(pub: Public) -> Assessment:
    """The released Q-function's functional noise against the declared reward range (module docstring)."""
    params = pub.estimator_params
    if pub.n is not None:
        if "n_samples" in params:
            raise param_error("n", "plan dp-q-learning", "given once (not also as the n_samples parameter)", pub.n)
        params["n_samples"] = pub.n
    est = DPQLearning(budget=pub.budget, **params)
    low, high = est.get_params()["reward_bounds"]
    cfg = est._training_config(est._validated())
    try:
        cal = est.functional_calibration(int(pub.actions))  # type: ignore[arg-type]
    except CertificationError as exc:   # no noise level certifies this run: say so, as a plan
        sigma, notes = math.inf, (f"no noise certifies this run: {exc}",)
    else:
        sigma = float(cal.sigma)
        notes = (f"{cal.calibration} calibration: {cal.n_releases:g} noisy updates (T = {cfg.n_samples} samples, "
                 f"batches of {cfg.batch_size}), kernel width beta = {cal.beta:.3g}, noise bound k = {cal.kappa:.3g}",)
    row = Released("Q(s, a)", "the released Q-function Q_θ + g (pointwise std of g)", sigma, float(high - low),
                   f"the declared reward range {high - low:g} (rewards in [{low:g}, {high:g}])")
    return Assessment((row,), notes)


register_plan(Planner("dp-q-learning", "DPQLearning", "DP Q-learning (functional noise, 1-D states): the noisy "
                      "Q-function", plan_dp_q_learning, required=("actions",), optional=("n",),
                      knobs=("budget",), budgets=("epsilon_delta",)))
