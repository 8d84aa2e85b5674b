"""Planning Private-LinOpt-VI/PO before the run (``privrl plan``; :mod:`privrl.planning`).

The planning function builds the learner with the public parameters and reads its noise from the
learner's own plan (:meth:`LinOptVI.noise_plan_for <privrl.linear_mixture.LinOptVI.noise_plan_for>`,
:func:`privrl.linear_mixture.calibration.noise_plan`, the plan a run draws with). At the end of a
run of K episodes every released statistic of step h carries the noise of ``M`` releases
(``n_noise_terms``: the tree's m nodes, the K local messages, or the factorization's s_n²): per
entry a std √M·σ, and for a Gram matrix an operator norm Υ (the bound the learner itself uses, by
its ``upsilon`` rule: Lemma B.4 or the Monte-Carlo bound).

Typical values, features spread evenly over the d directions: the Gram matrix Σ_k ϕϕᵀ of the value
features (‖ϕ_h‖ ≤ x_h, the plan's bound, reached) has eigenvalues K·x_h²/d1, the reward Gram
(‖φ‖ ≤ 1) K/d2; a vector Σ ϕ·y with y at half its range has coordinates of size K·Δ/(4√d) (Δ the
stream's replace-one sensitivity of one item, 2·x·y_max). Each row reports the worst step.
"""

from __future__ import annotations

import math

from privrl._validation import param_error
from privrl.linear_mixture import calibration as cal
from privrl.linear_mixture.estimators import LinOptPO, LinOptVI
from privrl.planning import Assessment, Planner, Public, Released, register_plan

__all__ = ["plan_linopt"]

_WHAT = {"p1": "value-feature Gram Σ ϕϕᵀ (operator norm Υ)",
         "p2": "value-feature vector Σ ϕ·V (per coordinate)",
         "r1": "reward-feature Gram Σ φφᵀ (operator norm Υ)",
         "r2": "reward-feature vector Σ φ·r (per coordinate)"}


def plan_linopt(pub: Public, estimator: type = LinOptVI) -> Assessment:
    """The released statistics of LinOpt at the end of a run of K = n episodes (module docstring)."""
    owner = f"plan {'linopt-po' if estimator is LinOptPO else 'linopt-vi'}"
    params = pub.estimator_params
    if "n_episodes" in params:
        raise param_error("n_episodes", owner, "given as n (the number of episodes)", params["n_episodes"])
    K, H, d1 = int(pub.n), int(pub.horizon), int(pub.features)  # type: ignore[arg-type]
    d2 = d1 if pub.reward_features is None else int(pub.reward_features)
    est = estimator(budget=pub.budget, n_episodes=K, **params)
    noise = est.noise_plan_for(H, d1, d2)   # privatizer 'none' needs an infinite budget: refused before
    assert noise is not None
    rule = est.knobs()["upsilon"]
    upsilon = cal.upsilon_monte_carlo if rule == "monte_carlo" else cal.upsilon_theory
    alpha = float(est.get_params()["alpha"])
    M = noise.n_noise_terms
    sens = noise.item_sensitivity
    rows = []
    for j, name in enumerate(cal.STREAMS):
        dim = d1 if name.startswith("p") else d2
        on = [h for h in range(H) if sens[j, h] > 0]
        if not on:
            continue
        scored = []
        for h in on:
            if name in ("p1", "r1"):
                norm = float(noise.x_bound[h]) if name == "p1" else 1.0
                std = float(upsilon(float(noise.std[j, h]), n_noise_terms=M, dim=dim, n_episodes=K, horizon=H,
                                    alpha=alpha))
                signal = K * norm * norm / dim
                basis = (f"K·x²/d = {signal:.3g}: K = {K} episodes, features of norm x = {norm:.3g} spread evenly "
                         f"over d = {dim} directions")
            else:
                std = math.sqrt(M) * float(noise.std[j, h])
                signal = K * float(sens[j, h]) / (4 * math.sqrt(dim))
                basis = (f"K·Δ/(4√d) = {signal:.3g}: y at half its range, features spread evenly over d = {dim} "
                         "directions")
            scored.append((std / signal, h, std, signal, basis))
        _, h, std, signal, basis = max(scored)
        rows.append(Released(name, f"{_WHAT[name]}, worst step h = {h}", std, signal, basis))
    counter = f", {noise.counter} counter" if noise.privatizer == "central" else ""
    notes = (f"{noise.privatizer} privatizer{counter} ({noise.calibration} calibration): each released entry "
             f"carries the noise of M = {M:.3g} Gaussian releases at the end of the run",)
    return Assessment(tuple(rows), notes)


def _plan_po(pub: Public) -> Assessment:
    return plan_linopt(pub, LinOptPO)


for _name, _cls, _fn, _setting in (("linopt-vi", "LinOptVI", plan_linopt, "online RL"),
                                   ("linopt-po", "LinOptPO", _plan_po, "online policy optimisation")):
    register_plan(Planner(_name, _cls, f"Private-{_cls[:-2]}-{_cls[-2:]} ({_setting}, linear mixture MDPs): the noisy "
                          "Gram matrices and vectors of the privatizer", _fn, required=("n", "horizon", "features"),
                          optional=("reward_features",), knobs=("n", "budget"), budgets=("epsilon_delta", "rho")))
