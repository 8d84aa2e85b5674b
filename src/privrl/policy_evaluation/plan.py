"""Planning DP Monte Carlo, DP-LSW and DP-LSL before touching the data (``privrl plan``;
:mod:`privrl.planning`).

Every planning function builds the estimator with the public parameters and reads the noise from
the release step a fit builds: :meth:`MonteCarloMechanism.create
<privrl.policy_evaluation.MonteCarloMechanism.create>` and :meth:`DPLSW.release_mechanism
<privrl.policy_evaluation.DPLSW.release_mechanism>` (DP-LSL alike). Every released value is a
value or a mean of returns in [0, F_max], so its typical value is the range F_max (a noise std of
F_max/2 makes it no better than the constant F_max/2: the estimators' "noise-dominated" warning,
and a plan's hopeless threshold). F_max is the declared one, or the largest return of rewards in
[0, R_max] over episodes of at most H steps (:func:`~privrl.data.bounds.return_bound`,
the estimators' own default).

**DP Monte Carlo.** J: noise std F_max·σ_J/n (replace one: n public; add or remove one: at most
√2 times that, the delta method at J = F_max). Group values (``groups`` G): V̂_g = F_max·S̃_g/Ñ_g
has noise std F_max·σ_G·√(1 + (V_g/F_max)²)/N_g ≤ √2·F_max·σ_G/N_g; N_g, the trajectories entering
group g, is n·m/G when each trajectory enters m groups (``visits``; default 1, the least: the
average N_g is at least n/G) spread evenly over the G groups. σ_G follows from k, the public bound
on the groups a trajectory enters (:func:`~privrl.policy_evaluation.monte_carlo.groups_per_trajectory`).

**DP-LSW / DP-LSL.** σ_X = α·C·√ψ_X depends on the data through the first-visit counts |X_s|. With
``visits`` m given, the plan assumes each trajectory visits m distinct states spread evenly over
the S states (|X_s| = n·m/S) and evaluates the mechanism's own ``noise_scale`` there — the most
favourable visitation: ψ follows the least-visited states, so skewed visits raise σ_X (on the
clinic task, with the practical β, up to 13 times). With a ``visit_profile`` p (the share of
trajectories visiting each state, from a public model or simulator), at |X_s| = n·p_s. Without
either, the public worst case ``noise_bound`` (ψ at its maximum: every state unvisited), which does
not shrink with n. The noise of a state's value φ(s)ᵀθ̂ is σ_X·‖φ(s)‖ (the largest over states; 1 for
one-hot features). With ``groups`` G the features are one-hot over G public groups of equal size
(d = G). DP-LSL's ridge also shrinks the values: a second row sets c = λ/(2m) against the typical
eigenvalue e of ΦᵀΓ_XΦ (Γ_X = diag(ρ_s|X_s|/m)) at the stated counts — a direction keeps
e/(e + c) of its size (:func:`~privrl.least_squares.diagnostics.directions_kept`), so the
ratio c/e is judged like a noise-to-signal (useful: at most 9% shrinkage; hopeless: at least 33%).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privrl._validation import param_error
from privrl.data.bounds import return_bound
from privrl.least_squares.mechanism import DPLSLMechanism
from privrl.planning import Assessment, Planner, Public, Released, mean_range, register_plan
from privrl.policy_evaluation.estimators import DPLSL, DPLSW
from privrl.policy_evaluation.monte_carlo import (
    DPMonteCarlo,
    MonteCarloMechanism,
    groups_per_trajectory,
)

__all__ = ["plan_dp_monte_carlo", "plan_dp_lsw", "plan_dp_lsl"]


def _params(pub: Public, owner: str, **inputs: Any) -> dict[str, Any]:
    """The estimator's parameters: ``params`` plus the public inputs that are parameters of it
    (``F_max``, ``r_max``, ``gamma``), each given once."""
    params = pub.estimator_params
    for name, value in inputs.items():
        if value is None:
            continue
        if name in params:
            raise param_error(name, owner, "given once (as an input or in params, not both)", value)
        params[name] = value
    return params


def _f_max(est: DPMonteCarlo | DPLSW | DPLSL, pub: Public, owner: str) -> float:
    p = est.get_params()
    r_max = 1.0 if p["r_max"] is None else float(p["r_max"])
    return return_bound(r_max, float(p["gamma"]), p["F_max"], pub.horizon, owner)


def plan_dp_monte_carlo(pub: Public) -> Assessment:
    """J (and the group values) of DP Monte Carlo against F_max (module docstring)."""
    owner = "plan dp-monte-carlo"
    params = _params(pub, owner, F_max=pub.F_max, r_max=pub.r_max, gamma=pub.gamma)
    if "groups" in params:
        raise param_error("groups", owner, "the number of groups (the map itself is not needed to plan)", "an array")
    est = DPMonteCarlo(budget=pub.budget, **params)
    p = est._validated()
    f_max, n = _f_max(est, pub, owner), int(pub.n)  # type: ignore[arg-type]
    G = 0 if pub.groups is None else int(pub.groups)
    k = groups_per_trajectory(G, p["max_groups_per_trajectory"], pub.horizon, bool(p["record_terminal"])) if G else 0
    mech = MonteCarloMechanism.create(pub.budget, f_max, n_groups=G, max_groups=k, relation=p["neighboring"],
                                      mechanism=p["mechanism"], owner=type(est).__name__)
    replace = p["neighboring"] == "replace_one"
    std_j = f_max * mech.stds[0] / n * (1.0 if replace else math.sqrt(2.0))
    rows = [Released("J", "the value of the logging policy, the mean return" + ("" if replace else " (at most)"),
                     std_j, mean_range(f_max), f"the range F_max = {f_max:g} of a mean return")]
    notes = [f"{mech.kind} noise (tight calibration), sensitivity {mech.sensitivities[0]:g}·F_max for J"]
    if G:
        m = 1.0 if pub.visits is None else float(pub.visits)
        if m > k:
            raise param_error("visits", owner, f"at most k = {k} (the groups a trajectory can enter)", pub.visits)
        count = n * m / G
        rows.append(Released("V_g", "a group's value, the mean first-visit return (at most)",
                             math.sqrt(2.0) * f_max * mech.stds[1] / count, mean_range(f_max),
                             f"the range F_max = {f_max:g}; noise over N_g = n·m/G = {count:.3g} trajectories per "
                             f"group (m = {m:g} groups entered per trajectory"
                             + (", the least" if pub.visits is None else "") + f", G = {G})"))
        notes.append(f"groups: a trajectory enters at most k = {k} of the {G} groups, sensitivity "
                     f"{mech.sensitivities[1]:.3g} for the 2G group sums and counts released with J")
    return Assessment(tuple(rows), tuple(notes))


def _features(pub: Public, est: str) -> tuple[np.ndarray | None, int]:
    """(features or None for one-hot over S, S): one-hot over G equal public groups with ``groups``."""
    S = int(pub.states)  # type: ignore[arg-type]
    if pub.groups is None:
        return None, S
    G = int(pub.groups)
    if G > S:
        raise param_error("groups", f"plan {est}", f"at most the number of states ({S})", G)
    phi = np.zeros((S, G))
    phi[np.arange(S), np.arange(S) * G // S] = 1.0
    return phi, S


def _plan_smoothed(pub: Public, cls: type, name: str) -> Assessment:
    owner = f"plan {name}"
    params = _params(pub, owner, F_max=pub.F_max, r_max=pub.r_max)
    params.setdefault("gamma", 1.0 if pub.gamma is None else pub.gamma)
    if pub.gamma is not None and params["gamma"] != pub.gamma:
        raise param_error("gamma", owner, "given once (as an input or in params, not both)", pub.gamma)
    phi, S = _features(pub, name)
    if phi is not None:
        if "features" in params:
            raise param_error("groups", owner, "not given with features (groups set one-hot group features)",
                              pub.groups)
        params["features"] = phi
    est = cls(budget=pub.budget, **params)
    f_max, n = _f_max(est, pub, owner), int(pub.n)  # type: ignore[arg-type]
    mech = est.release_mechanism(n, f_max, S)
    features = mech.features
    if features.shape[0] != S:
        raise param_error("states", owner, f"the number of rows of the features ({features.shape[0]})", S)
    norm = float(np.linalg.norm(features, axis=1).max())
    if pub.visits is not None and pub.visit_profile is not None:
        raise param_error("visits", owner, "None when a visit_profile is given (one visitation assumption)",
                          pub.visits)
    profile = pub.visit_profile
    if profile is not None:
        if profile.shape != (S,):
            raise param_error("visit_profile", owner, f"an array of {S} shares (one per state)", profile.shape)
        counts = np.minimum(n, np.round(n * profile)).astype(np.int64)
        sigma = mech.noise_scale(counts, n)
        basis = (f"the range F_max = {f_max:g}; noise at |X_s| = n·p_s first visits (the stated visit profile p: "
                 f"{profile.sum():.3g} distinct states per trajectory, the rarest state visited by "
                 f"{int(counts.min())})")
    elif pub.visits is None:
        sigma = mech.noise_bound(n)
        basis = (f"the range F_max = {f_max:g}; noise at the public worst case (σ_X at ψ's maximum, every state "
                 "unvisited: it does not shrink with n; give visits or a visit profile for a typical case)")
    else:
        per_state = min(n, int(round(n * float(pub.visits) / S)))
        sigma = mech.noise_scale(np.full(S, per_state), n)
        basis = (f"the range F_max = {f_max:g}; noise at |X_s| = n·m/S = {per_state} first visits per state (m = "
                 f"{pub.visits:g} distinct states per trajectory, spread evenly over the S = {S} states)")
    d = features.shape[1]
    rows = [Released("V(s)", f"a state's value φ(s)ᵀθ̂ (d = {d} features)", sigma * norm, mean_range(f_max),
                     basis)]
    if isinstance(mech, DPLSLMechanism):
        # the ridge c = λ/(2m) against the typical eigenvalue of ΦᵀΓ_XΦ, Γ_X = diag(ρ_s|X_s|/m): a direction
        # keeps e/(e + c) of its least-squares size (diagnostics.directions_kept, here at the stated counts)
        m = float(profile.sum()) if profile is not None else (1.0 if pub.visits is None else float(pub.visits))
        share = profile if profile is not None else np.full(S, min(1.0, m / S))   # |X_s|/n as stated
        eigen = float(np.sum(mech.relevance * share * np.sum(features**2, axis=1))) / d
        ridge = mech.lam / (2.0 * n)
        rows.append(Released("ridge", "the ridge λ/(2m) against the weighted Gram's typical eigenvalue (values "
                             "shrink by r/(1 + r))", ridge, eigen,
                             f"Σ_s ρ_s·|X_s|/m·‖φ_s‖²/d = {eigen:.3g} (m = {m:.3g} "
                             "distinct states per trajectory" + (", the least" if pub.visits is None else "")
                             + f"); λ = {mech.lam:.4g}"))
    sg = mech.smoothed
    notes = (f"smoothed Gaussian ({sg.calibration} calibration): alpha = {sg.alpha:.3g}, beta = {sg.beta:.3g}; "
             "σ_X depends on the data (never released): the plan reads it at the stated counts",)
    return Assessment(tuple(rows), notes)


def plan_dp_lsw(pub: Public) -> Assessment:
    """A state's value under DP-LSW against F_max (module docstring)."""
    return _plan_smoothed(pub, DPLSW, "dp-lsw")


def plan_dp_lsl(pub: Public) -> Assessment:
    """A state's value under DP-LSL against F_max (module docstring)."""
    return _plan_smoothed(pub, DPLSL, "dp-lsl")


_BOUNDS = ("F_max", "r_max", "gamma", "horizon")
register_plan(Planner("dp-monte-carlo", "DPMonteCarlo", "DP Monte Carlo: the value J of the logging policy (and "
                      "the values of G public state groups)", plan_dp_monte_carlo, required=("n",),
                      optional=("groups", "visits", *_BOUNDS), knobs=("n", "budget")))
for _name, _cls, _fn in (("dp-lsw", "DPLSW", plan_dp_lsw), ("dp-lsl", "DPLSL", plan_dp_lsl)):
    register_plan(Planner(_name, _cls, f"{_name.upper()} (policy evaluation): a state's value, smooth-sensitivity "
                          "noise at a stated visitation or the public worst case", _fn, required=("n", "states"),
                          optional=("groups", "visits", "visit_profile", *_BOUNDS),
                          knobs=("n", "budget", "groups"),
                          budgets=("epsilon_delta",)))
