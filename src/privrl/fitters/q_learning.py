"""``privrl fit dp-q-learning | q-learning --env ENV_ID``: Algorithm 1 of Wang & Hegde (2019).

Trains :class:`~privrl.algorithms.q_learning.DPQLearning` (or the non-private
:class:`~privrl.algorithms.q_learning.QLearning`) on a Gymnasium environment with a Box observation
(rescaled to [0, 1]) and discrete actions, and writes the released Q-function — Q_theta plus a fresh
noise path, evaluated on a grid of ``--grid`` states for 1-D observations — and the certificate.

* ``--epsilon E --delta D``: a certified run (only in the ``paper`` configuration, Algorithm 1's
  own SGD loop, and for 1-D observations);
* ``--noise-std S [--kernel-beta B]`` without a budget: an *uncertified* run with that functional
  noise (any configuration, any dimension): the certificate claims no privacy;
* ``q-learning``: the non-private counterpart (no budget).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import numpy as np

from privrl.certificate import make_certificate
from privrl.errors import CertificationError, InvalidParameterError
from privrl.fitters import FitCommand, FitOutput, count_type, make_env, register_fit

__all__: list[str] = []

#: the largest --n-samples (one SGD step each)
MAX_SAMPLES = 10**8
#: the largest --grid
MAX_GRID = 10**6


def _add_common(p: argparse.ArgumentParser, default_config: str) -> None:
    p.add_argument("--config", choices=("paper", "reference"), default=default_config,
                   help=f"training loop: Algorithm 1's plain SGD (paper) or the reference DQN-style one "
                        f"(default {default_config})")
    p.add_argument("--n-samples", type=count_type(1, MAX_SAMPLES), default=None,
                   help="environment samples T (default 5000)")
    p.add_argument("--reward-low", type=float, default=-1.0, help="declared lower reward bound (checked)")
    p.add_argument("--reward-high", type=float, default=1.0, help="declared upper reward bound (checked)")
    p.add_argument("--grid", type=count_type(2, MAX_GRID), default=101,
                   help="number of states in [0, 1] at which Q is released (1-D observations)")


def _add_private(p: argparse.ArgumentParser) -> None:
    _add_common(p, "paper")
    p.add_argument("--calibration", choices=("sound", "paper"), default="sound",
                   help="sound (default) or the paper's printed Theorem 5 (labelled)")
    p.add_argument("--lipschitz", type=float, default=4.0, help="declared Lipschitz constant L (L^2 = 16 in E.3)")
    p.add_argument("--noise-std", type=float, default=None,
                   help="instead of a budget: the functional noise σ of an uncertified run (no privacy claimed)")
    p.add_argument("--kernel-beta", type=float, default=None,
                   help="with --noise-std: the kernel parameter β of the noise (default 1)")


def _obs_dim(env_id: str) -> int:
    env = make_env(env_id, "--env")
    try:
        shape = getattr(env.observation_space, "shape", None)
        return int(np.prod(shape)) if shape else 1
    finally:
        env.close()


_KEYWORDS = ((re.compile(r"use budget=None with noise_std"), "give --noise-std S without a budget"),
             (re.compile(r"config='paper'"), "--config paper"), (re.compile(r"config=('\w+')"), r"--config \1"),
             (re.compile(r"reset=('\w+')"), r"noise reset \1"))


def _cli_text(message: str) -> str:
    for pattern, repl in _KEYWORDS:
        message = pattern.sub(repl, message)
    return message


def _release(est: Any, args: argparse.Namespace) -> dict[str, Any]:
    arrays: dict[str, Any] = {"returns": est.returns_}
    if est.obs_dim_ == 1:
        grid = np.linspace(0.0, 1.0, args.grid)
        arrays.update(states=grid, q_released=est.release_q(grid))
    return arrays


def _run_private(args: argparse.Namespace) -> FitOutput:
    import torch

    from privrl.algorithms.q_learning import DPQLearning

    torch.set_num_threads(1)
    budget = args.budget
    if budget is None and args.noise_std is None:
        raise InvalidParameterError("'privrl fit dp-q-learning' needs a budget (--epsilon E --delta D) or, "
                                    "for an uncertified run, --noise-std S.")
    if budget is not None and (args.noise_std is not None or args.kernel_beta is not None):
        raise InvalidParameterError("Give either a budget (--epsilon, --delta: the noise is calibrated) or "
                                    "--noise-std/--kernel-beta (an uncertified run), not both.")
    if args.kernel_beta is not None and args.noise_std is None:
        raise InvalidParameterError("--kernel-beta needs --noise-std.")
    dim = _obs_dim(args.env)
    if budget is not None and budget.is_private:
        if args.config != "paper":
            raise InvalidParameterError(
                f"A certified run needs '--config paper' (the analysis covers Algorithm 1's loop only). Got "
                f"--config {args.config} instead; give --noise-std S without a budget for an uncertified run."
            )
        if dim != 1:
            raise InvalidParameterError(
                f"A certified run needs 1-D observations (the sensitivity is derived for them); {args.env} has "
                f"{dim}. Give --noise-std S without a budget for an uncertified run."
            )
    est = DPQLearning(budget=budget, noise_std=0.0 if args.noise_std is None else args.noise_std,
                      kernel_beta=args.kernel_beta, calibration=args.calibration, config=args.config,
                      env=args.env, n_samples=args.n_samples, lipschitz=args.lipschitz,
                      reward_bounds=(args.reward_low, args.reward_high))
    try:
        est.fit(rng=args.rng)
    except CertificationError as exc:
        raise CertificationError(_cli_text(str(exc))) from None
    except InvalidParameterError as exc:
        raise InvalidParameterError(_cli_text(str(exc))) from None
    public: dict[str, Any] = {"env": args.env, "n_updates": int(est.n_updates_), "config": args.config,
                              "certified": bool(est.certified_),
                              # public: given (--noise-std) or calibrated from the budget, never from data
                              "noise_std": float(est.noise_std_), "kernel_beta": float(est.kernel_beta_)}
    if est.calibration_ is not None:
        public["calibration"] = est.calibration_.to_dict()
    delta = float(budget.delta) if est.is_private else None
    cert = make_certificate(est, algorithm="dp-q-learning", delta=delta, extra=public,
                            mechanism="gaussian-process" if est.noise_std_ > 0 else None)
    if args.calibration == "paper" and est.is_private:
        cert["note"] = ("paper calibration: Theorem 5 as printed (C outside the square root); its side "
                        "condition fails, so the privacy is only as claimed in the paper")
    arrays = _release(est, args)
    return FitOutput(certificate=cert, arrays=arrays,
                     summary={**public, "final_return": float(np.mean(est.returns_[-10:]))
                              if len(est.returns_) else None})


def _run_non_private(args: argparse.Namespace) -> FitOutput:
    import torch

    from privrl.algorithms.q_learning import QLearning

    torch.set_num_threads(1)
    _obs_dim(args.env)  # an unknown id fails here, naming --env
    est = QLearning(env=args.env, config=args.config, n_samples=args.n_samples,
                    reward_bounds=(args.reward_low, args.reward_high))
    try:
        est.fit(rng=args.rng)
    except InvalidParameterError as exc:
        raise InvalidParameterError(_cli_text(str(exc))) from None
    public = {"env": args.env, "n_updates": int(est.n_updates_), "config": args.config}
    cert = make_certificate(est, algorithm="q-learning", delta=None, extra=public)
    return FitOutput(certificate=cert, arrays=_release(est, args),
                     summary={**public, "final_return": float(np.mean(est.returns_[-10:]))
                              if len(est.returns_) else None})


register_fit(FitCommand(name="dp-q-learning",
                        help="DP Q-learning with functional noise (Wang & Hegde 2019, Algorithm 1)",
                        add_arguments=_add_private, run=_run_private, sources=("env",), budget="epsilon",
                        budget_required=False))
register_fit(FitCommand(name="q-learning", help="non-private deep Q-learning (the σ = 0 counterpart; no budget)",
                        add_arguments=lambda p: _add_common(p, "reference"), run=_run_non_private,
                        sources=("env",), budget="none"))
