"""``privrl fit dp-q-learning --env ENV_ID --epsilon E --delta D``: Algorithm 1 of Wang & Hegde (2019).

Trains :class:`~privrl.algorithms.q_learning.DPQLearning` on a Gymnasium environment with a 1-D Box
observation (rescaled to [0, 1]) and discrete actions, and writes the released Q-function — Q_theta
plus a fresh noise path, evaluated on a grid of ``--grid`` states — and the certificate. A finite
budget is certified only in the ``paper`` configuration (Algorithm 1's own SGD loop).
"""

from __future__ import annotations

import argparse

import numpy as np

from privrl.certificate import make_certificate
from privrl.errors import InvalidParameterError
from privrl.fitters import FitCommand, FitOutput, register_fit

__all__: list[str] = []


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", choices=("sound", "paper"), default="sound",
                   help="sound (default) or the paper's printed Theorem 5 (labelled)")
    p.add_argument("--n-samples", type=int, default=None, help="environment samples T (default 5000)")
    p.add_argument("--lipschitz", type=float, default=4.0, help="declared Lipschitz constant L (L^2 = 16 in E.3)")
    p.add_argument("--reward-low", type=float, default=-1.0, help="declared lower reward bound (checked)")
    p.add_argument("--reward-high", type=float, default=1.0, help="declared upper reward bound (checked)")
    p.add_argument("--grid", type=int, default=101, help="number of states in [0, 1] at which Q is released")


def _run(args: argparse.Namespace) -> FitOutput:
    import torch

    from privrl.algorithms.q_learning import DPQLearning

    torch.set_num_threads(1)
    if args.env is None:
        raise InvalidParameterError("'privrl fit dp-q-learning' needs --env (a Gymnasium id).")
    if args.budget.is_zcdp:
        raise InvalidParameterError("'privrl fit dp-q-learning' needs an (epsilon, delta) budget.")
    if args.grid < 2:
        raise InvalidParameterError(f"The '--grid' option must be an int >= 2. Got {args.grid!r} instead.")
    est = DPQLearning(budget=args.budget, calibration=args.calibration, config="paper", env=args.env,
                      n_samples=args.n_samples, lipschitz=args.lipschitz,
                      reward_bounds=(args.reward_low, args.reward_high))
    est.fit(rng=args.rng)
    grid = np.linspace(0.0, 1.0, args.grid)
    if est.obs_dim_ != 1:  # pragma: no cover - certification refuses d > 1 before this
        raise InvalidParameterError("dp-q-learning releases Q on a 1-D grid; the environment is not 1-D.")
    q = est.release_q(grid)
    public = {"env": args.env, "n_updates": int(est.n_updates_), "noise_std": float(est.noise_std_),
              "kernel_beta": float(est.kernel_beta_), "config": "paper"}
    if est.calibration_ is not None:
        public["calibration"] = est.calibration_.to_dict()
    delta = float(args.budget.delta) if est.is_private else None
    cert = make_certificate(est, algorithm="dp-q-learning", delta=delta, extra=public)
    if args.calibration == "paper" and est.is_private:
        cert["note"] = ("paper calibration: Theorem 5 as printed (C outside the square root); its side "
                        "condition fails, so the privacy is only as claimed in the paper")
    return FitOutput(certificate=cert, arrays={"states": grid, "q_released": q, "returns": est.returns_},
                     summary={**public, "final_return": float(np.mean(est.returns_[-10:]))
                              if len(est.returns_) else None})


register_fit(FitCommand(name="dp-q-learning",
                        help="DP Q-learning with functional noise (Wang & Hegde 2019, Algorithm 1)",
                        add_arguments=_add, run=_run))
