"""``privrl fit dp-bc | bc | dp-iql | iql --data FILE``: (DP) behaviour cloning or implicit Q-learning of the
logged trajectories of a dataset file or local Minari id (vector observations, discrete actions). The
estimators' options (``--clip-norm``, ``--n-steps``, ``--sampling-rate``, ``--learning-rate``,
``--n-actions``, ``--calibration``, ``--secure``; IQL's ``--gamma``, ``--expectile``, ``--temperature``,
``--polyak``) come from their declared parameters; the fitted policy's flat parameters and layer sizes are
saved (``params``, ``sizes``), and IQL's Q- and value networks (``q_params``, ``v_params``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from privrl.deep_offline.estimators import BC, DPBC
from privrl.deep_offline.iql import DPIQL, IQL
from privrl.fitters import FitCommand, FitOutput, build_estimator, load_user_dataset, register_fit


def _output(est: BC | DPBC | IQL | DPIQL) -> FitOutput:
    """The policy (and IQL's Q- and value networks) and, for the private fits, the public noise
    multiplier; the number of trajectories only for the non-private ones (add/remove neighbours differ in
    it)."""
    extra: dict[str, object] = {"sizes": list(est.sizes_)}
    summary: dict[str, object] = {"n_parameters": int(est.params_.size)}
    arrays: dict[str, object] = {"params": est.params_, "sizes": np.array(est.sizes_)}
    if isinstance(est, (IQL, DPIQL)):
        arrays.update(q_params=est.q_params_, q_sizes=np.array(est.q_sizes_), v_params=est.v_params_,
                      v_sizes=np.array(est.v_sizes_))
    if isinstance(est, (DPBC, DPIQL)):
        extra["noise_multiplier"] = est.noise_multiplier_
    else:
        summary["n_trajectories"] = extra["n_trajectories"] = est.n_trajectories_
    return FitOutput(est, arrays=arrays, summary=summary, extra=extra)


def _runner(estimator: type[BC | DPBC | IQL | DPIQL]) -> Callable[[argparse.Namespace], FitOutput]:
    def run(args: argparse.Namespace) -> FitOutput:
        est = build_estimator(args, estimator)   # a bad option fails before the data are read
        return _output(est.fit(load_user_dataset(args), rng=args.rng))
    return run


register_fit(FitCommand("dp-bc", "DP behaviour cloning, (epsilon, delta)-DP per trajectory (DP-SGD)",
                        lambda parser: None, _runner(DPBC), sources=("data",), budget="any", estimator=DPBC))
register_fit(FitCommand("bc", "behaviour cloning (non-private)", lambda parser: None, _runner(BC), sources=("data",),
                        budget="none", estimator=BC))
register_fit(FitCommand("dp-iql", "DP implicit Q-learning (discrete actions), (epsilon, delta)-DP per trajectory "
                        "(DP-SGD on Q, V and the policy)", lambda parser: None, _runner(DPIQL), sources=("data",),
                        budget="any", estimator=DPIQL))
register_fit(FitCommand("iql", "implicit Q-learning, discrete actions (non-private)", lambda parser: None,
                        _runner(IQL), sources=("data",), budget="none", estimator=IQL))
