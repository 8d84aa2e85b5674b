"""``privrl fit dp-q-learning | q-learning --env ENV_ID``: Algorithm 1 of Wang & Hegde (2019).

Trains :class:`~privrl.q_learning.DPQLearning` (or the non-private :class:`~privrl.q_learning.QLearning`)
on a Gymnasium environment with a Box observation and discrete actions, and writes the released
Q-function — Q_theta plus a fresh noise path — on ``--grid`` raw observations evenly spaced between
the public observation bounds (1-D observations), and the certificate.

Every declared parameter of the estimator is an option with its declared default
(:func:`privrl.fitters.add_estimator_options`): ``--config``, ``--n-samples``, ``--learning-rate``,
``--batch-size``; for ``dp-q-learning`` also ``--calibration`` (default tight), ``--noise-std``,
``--kernel-beta``, ``--kappa``, ``--lipschitz``, ``--reset``, ``--secure``; for ``q-learning``
``--constants``. The command's own options give the public declarations the estimator takes as
tuples or arrays: ``--reward-bounds LO HI`` and ``--obs-low``/``--obs-high`` (one float per
observation coordinate; default the Box space's own bounds).

* ``--epsilon E --delta D``: a certified run (the estimator refuses what its analysis does not
  cover: another ``--config``, another ``--reset``, observations of dimension > 1);
* ``--noise-std S [--kernel-beta B]`` without a budget: an *uncertified* run with that functional
  noise (any configuration, any dimension): the certificate claims no privacy;
* ``q-learning``: the non-private counterpart (no budget).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from privrl.errors import InvalidParameterError
from privrl.fitters import FitCommand, FitOutput, build_estimator, count_type, register_fit
from privrl.q_learning.estimators import DPQLearning, QLearning

__all__: list[str] = []

#: the largest --grid
MAX_GRID = 10**6
#: declared parameters the command supplies from its own options (or, for env, from --env)
EXCLUDE = ("env", "reward_bounds", "obs_low", "obs_high")


def _float(text: str) -> float:
    """An argparse ``type`` for a float (argparse prefixes the option's name)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a float. Got {text!r} instead") from None


_float.__name__ = "float"


def _add_inputs(p: argparse.ArgumentParser) -> None:
    """The public declarations passed as tuples/arrays, and the release grid (the estimator's own
    options come from its declaration)."""
    low, high = DPQLearning.param("reward_bounds").default
    p.add_argument("--reward-bounds", nargs=2, type=_float, metavar=("LO", "HI"), default=(low, high),
                   help=f"declared bounds of every reward of --env (checked, never clipped; default {low:g} {high:g})")
    for side, where in (("low", "0"), ("high", "1")):
        p.add_argument(f"--obs-{side}", nargs="+", type=_float, metavar="X", default=None,
                       help=f"public {side} bounds of the observations, one per coordinate, mapped to {where} "
                            "(default: the Box space's own; needed where it is unbounded)")
    p.add_argument("--grid", type=count_type(2, MAX_GRID), default=101,
                   help="number of observations, evenly spaced between the observation bounds, at which Q is "
                        "released (1-D observations; default 101)")


def _given(args: argparse.Namespace) -> dict[str, Any]:
    return {"env": args.env, "reward_bounds": tuple(args.reward_bounds),
            "obs_low": None if args.obs_low is None else np.asarray(args.obs_low, float),
            "obs_high": None if args.obs_high is None else np.asarray(args.obs_high, float)}


def _check_noise_options(args: argparse.Namespace) -> None:
    """A budget (calibrated noise) or ``--noise-std`` (an uncertified run), never both."""
    uncertified = args.noise_std != DPQLearning.param("noise_std").default or args.kernel_beta is not None
    if args.budget is None:
        if args.kernel_beta is not None and args.noise_std == 0.0:
            raise InvalidParameterError("--kernel-beta needs --noise-std.")
        if not uncertified:
            raise InvalidParameterError("'privrl fit dp-q-learning' needs a budget (--epsilon E --delta D) or, "
                                        "for an uncertified run, --noise-std S.")
    elif uncertified:
        raise InvalidParameterError("Give either a budget (--epsilon, --delta: the noise is calibrated) or "
                                    "--noise-std/--kernel-beta (an uncertified run), not both.")


def _output(est: Any, args: argparse.Namespace, public: dict[str, Any], **cert_kw: Any) -> FitOutput:
    arrays: dict[str, Any] = {"returns": est.returns_}
    if est.obs_dim_ == 1:       # on the raw observation scale, between the public bounds
        grid = np.linspace(est.obs_low_[0], est.obs_high_[0], args.grid)
        arrays.update(states=grid, q_released=est.release_q(grid))
    public = {"env": args.env, "n_updates": int(est.n_updates_), "config": est.config,
              "obs_low": est.obs_low_.tolist(), "obs_high": est.obs_high_.tolist(), **public}
    final = float(np.mean(est.returns_[-10:])) if len(est.returns_) else None
    return FitOutput(est, arrays=arrays, summary={**public, "final_return": final}, extra=public, **cert_kw)


def _run_private(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, DPQLearning, **_given(args))
    _check_noise_options(args)
    est.fit(rng=args.rng)
    # public: given (--noise-std) or calibrated from the budget, never from the data
    public: dict[str, Any] = {"certified": bool(est.certified_), "noise_std": float(est.noise_std_),
                              "kernel_beta": float(est.kernel_beta_)}
    if est.calibration_ is not None:
        public["calibration"] = est.calibration_.to_dict()
    note = None
    if est.calibration == "paper" and est.is_private:
        note = ("paper calibration: Theorem 5 as printed (C outside the square root); its side condition fails, "
                "so the privacy is only as claimed in the paper")
    return _output(est, args, public, mechanism="gaussian-process" if est.noise_std_ > 0 else None, note=note)


def _run_non_private(args: argparse.Namespace) -> FitOutput:
    est = build_estimator(args, QLearning, **_given(args))
    est.fit(rng=args.rng)
    return _output(est, args, {})


register_fit(FitCommand(name="dp-q-learning",
                        help="DP Q-learning with functional noise (Wang & Hegde 2019, Algorithm 1)",
                        add_arguments=_add_inputs, run=_run_private, sources=("env",), budget="epsilon",
                        budget_required=False, estimator=DPQLearning, exclude=EXCLUDE))
register_fit(FitCommand(name="q-learning", help="non-private deep Q-learning (the σ = 0 counterpart; no budget)",
                        add_arguments=_add_inputs, run=_run_non_private, sources=("env",), budget="none",
                        estimator=QLearning, exclude=EXCLUDE))
