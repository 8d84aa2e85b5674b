"""``privrl fit linopt-vi | linopt-po`` (Zhou 2022): run the online learner on a linear mixture env.

``--env ENV_ID`` must be a privrl environment that carries its known features
(``privrl/RandomLinearMixture-v0``, ``privrl/LinearMixtureHard-v0``). The users are simulated from
the environment's model (E2: Bernoulli rewards), ``--episodes`` of them. Writes the per-episode
exact pseudo-regret and the cumulative regret curve, the final estimates and a certificate
(guarantee JDP for ``--privatizer central``, LDP for ``local``; privacy unit: one user = one episode).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from privrl.certificate import make_certificate
from privrl.errors import InvalidParameterError
from privrl.fitters import MAX_EPISODES, FitCommand, FitOutput, count_type, make_env, register_fit

__all__: list[str] = []


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--privatizer", choices=("central", "local", "none"), default="central",
                   help="central: JDP binary-tree privatizer (trusted agent); local: LDP (derived); none: UCRL-VTR/OPPO")
    p.add_argument("--episodes", type=count_type(1, MAX_EPISODES), default=1000,
                   help=f"number of episodes (users) K (default 1000, at most {MAX_EPISODES})")
    p.add_argument("--calibration", choices=("sound", "paper"), default="sound",
                   help="sound: replace-one sensitivities (default); paper: the printed add/remove ones (labelled)")
    p.add_argument("--alpha", type=float, default=0.05, help="confidence level α of Lemma 3.1")
    p.add_argument("--beta-scale", type=float, default=1.0, help="data-independent multiplier of β (knob)")
    p.add_argument("--upsilon", choices=("theory", "monte_carlo"), default="theory",
                   help="operator-norm bound Υ: the paper's (theory) or a tighter public Monte-Carlo one")
    p.add_argument("--sigma-rule", choices=("paper", "zcdp"), default="paper",
                   help="noise calibration: Thm 6.4's formula or the zCDP calibration to the same (ε, δ)")


def _run(algorithm: str):
    def run(args: argparse.Namespace) -> FitOutput:
        from privrl.algorithms.linear_mixture import LinOptPO, LinOptVI
        from privrl.algorithms.linear_mixture.learners import resolve_model
        from privrl.privacy import PrivacyBudget

        budget = args.budget
        if budget is None:
            if args.privatizer != "none":
                raise InvalidParameterError(f"A budget is required for '--privatizer {args.privatizer}': "
                                            "--epsilon E --delta D (or --privatizer none, non-private).")
            budget = PrivacyBudget.non_private()
        if args.privatizer != "none" and budget.is_private and not budget.delta:
            raise InvalidParameterError("The Gaussian privatizers need --delta in (0, 1).")
        if args.privatizer == "none" and budget.is_private:
            raise InvalidParameterError("'--privatizer none' runs the non-private learner: drop the budget "
                                        "(or give --epsilon inf).")
        env = make_env(args.env, "--env")
        try:
            model, _ = resolve_model(env)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"The '--env' environment {args.env!r} is not a linear mixture MDP with "
                                        f"known features: {exc}") from None
        finally:
            env.close()
        cls = LinOptVI if algorithm == "linopt-vi" else LinOptPO
        est = cls(n_episodes=args.episodes, privatizer=args.privatizer,
                  budget=budget if args.privatizer != "none" else PrivacyBudget.non_private(),
                  calibration=args.calibration, alpha=args.alpha, beta_scale=args.beta_scale,
                  upsilon=args.upsilon, sigma_rule=args.sigma_rule)
        est.fit(model, rng=args.rng)
        delta = budget.delta if est.is_private else None
        cert = make_certificate(est, algorithm=algorithm, delta=delta,
                                extra={"env": args.env, "privatizer": est.privatizer_parameters_,
                                       "paper_epsilon_closed_form": est.paper_epsilon_})
        summary: dict[str, Any] = {
            "episodes": args.episodes, "privatizer": args.privatizer, "guarantee": est.guarantee,
            "calibration": args.calibration, "final_cumulative_regret": float(est.cumulative_regret_[-1]),
            "regret_bound": est.regret_bound_, "beta_p": est.beta_p_, "beta_r": est.beta_r_,
            "epsilon_spent": None if not est.is_private else est.privacy_spent(budget.delta),
            "paper_epsilon_closed_form": None if math.isinf(est.paper_epsilon_) else est.paper_epsilon_,
        }
        arrays = {"regret": est.regret_, "cumulative_regret": est.cumulative_regret_,
                  "theta_p": est.theta_p_, "theta_r": est.theta_r_}
        return FitOutput(certificate=cert, arrays=arrays, summary=summary)
    return run


for _name, _help in (("linopt-vi", "Private-LinOpt-VI (Zhou 2022, Alg. 1): private UCRL-VTR, online"),
                     ("linopt-po", "Private-LinOpt-PO (Zhou 2022, Alg. 2): private OPPO, online")):
    register_fit(FitCommand(name=_name, help=_help, add_arguments=_add_arguments, run=_run(_name),
                            sources=("env",), budget="epsilon", budget_required=False))
