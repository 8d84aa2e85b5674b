"""``privrl fit dp-bc | bc | dp-iql | iql --data FILE``: (DP) behaviour cloning or implicit Q-learning of the
logged trajectories of a dataset file or local Minari id (vector observations, discrete actions);
``privrl fit dp-td3bc | td3bc --data ID``: (DP) TD3+BC of a local Minari dataset of continuous actions
(e.g. ``python -m privrl.deep_offline.datasets --env pendulum``; ``--max-action`` its public bound). The
estimators' options (``--clip-norm``, ``--n-steps``, ``--sampling-rate``, ``--learning-rate``,
``--n-actions``, ``--calibration``, ``--secure``; IQL's ``--gamma``, ``--expectile``, ``--temperature``,
``--polyak``) come from their declared parameters; the fitted policy's flat parameters and layer sizes are
saved (``params``, ``sizes``), and IQL's Q- and value networks (``q_params``, ``v_params``) or TD3+BC's twin
critics (``q_params``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from privrl.deep_offline.estimators import BC, DPBC
from privrl.deep_offline.iql import DPIQL, IQL
from privrl.deep_offline.td3bc import DPTD3BC, TD3BC
from privrl.errors import InvalidDataError
from privrl.fitters import FitCommand, FitOutput, build_estimator, load_user_dataset, register_fit

Fitted = BC | DPBC | IQL | DPIQL | TD3BC | DPTD3BC


def _output(est: Fitted) -> FitOutput:
    """The policy (and IQL's Q- and value networks) and, for the private fits, the public noise
    multiplier; the number of trajectories only for the non-private ones (add/remove neighbours differ in
    it)."""
    extra: dict[str, object] = {"sizes": list(est.sizes_)}
    summary: dict[str, object] = {"n_parameters": int(est.params_.size)}
    arrays: dict[str, object] = {"params": est.params_, "sizes": np.array(est.sizes_)}
    if isinstance(est, (IQL, DPIQL)):
        arrays.update(q_params=est.q_params_, q_sizes=np.array(est.q_sizes_), v_params=est.v_params_,
                      v_sizes=np.array(est.v_sizes_))
    if isinstance(est, (TD3BC, DPTD3BC)):
        arrays.update(q_params=est.q_params_, q_sizes=np.array(est.q_sizes_))
    if isinstance(est, (DPBC, DPIQL, DPTD3BC)):
        extra["noise_multiplier"] = est.noise_multiplier_
    else:
        summary["n_trajectories"] = extra["n_trajectories"] = est.n_trajectories_
    return FitOutput(est, arrays=arrays, summary=summary, extra=extra)


def _continuous_dataset(args: argparse.Namespace) -> object:
    """The local Minari dataset of continuous actions named by ``--data``."""
    from privrl.deep_offline.continuous_data import read_minari

    try:
        return read_minari(args.data)
    except ImportError:   # Minari is an extra
        raise InvalidDataError("Reading '--data' (a Minari dataset id) needs the 'minari' extra.") from None
    except (FileNotFoundError, ValueError) as err:   # Minari: no such local dataset
        raise InvalidDataError(f"The '--data' option {args.data!r} is not a local Minari dataset of continuous "
                               f"actions ({err}).") from None


def _runner(estimator: type[Fitted]) -> Callable[[argparse.Namespace], FitOutput]:
    load = _continuous_dataset if issubclass(estimator, (TD3BC, DPTD3BC)) else load_user_dataset

    def run(args: argparse.Namespace) -> FitOutput:
        est = build_estimator(args, estimator)   # a bad option fails before the data are read
        return _output(est.fit(load(args), rng=args.rng))
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
register_fit(FitCommand("dp-td3bc", "DP TD3+BC (continuous actions), (epsilon, delta)-DP per trajectory (DP-SGD on "
                        "the twin critics and the actor)", lambda parser: None, _runner(DPTD3BC), sources=("data",),
                        budget="any", estimator=DPTD3BC))
register_fit(FitCommand("td3bc", "TD3+BC, continuous actions (non-private)", lambda parser: None, _runner(TD3BC),
                        sources=("data",), budget="none", estimator=TD3BC))
