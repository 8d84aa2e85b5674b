"""``privrl fit linopt-vi | linopt-po`` (Zhou 2022): run the online learner on a linear mixture env.

``--env ENV_ID`` must be a privrl environment that carries its known features
(``privrl/RandomLinearMixture-v0``, ``privrl/LinearMixtureHard-v0``). The users are simulated from
the environment's model (E2: Bernoulli rewards), ``--episodes`` of them (the estimator's
``n_episodes``). Every other declared parameter of the estimator (``LinOptVI.params``,
``LinOptPO.params``) is an option with its declared default (:func:`privrl.fitters.add_estimator_options`):
``--privatizer central|local|none``, ``--calibration tight|sound|paper`` (default tight), ``--constants``,
``--alpha`` and the utility knobs. ``--privatizer none`` is the non-private learner (UCRL-VTR / OPPO)
and takes no budget; ``central`` (JDP) and ``local`` (LDP) need ``--epsilon E --delta D``.

Writes the per-episode exact pseudo-regret and the cumulative regret curve, the final estimates and
a certificate (privacy unit: one user = one episode; ``extra`` records the privatizer's public
parameters and Thm 6.4's closed-form ε).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from privrl.errors import InvalidParameterError
from privrl.fitters import (
    MAX_EPISODES,
    FitCommand,
    FitOutput,
    build_estimator,
    count_type,
    make_env,
    register_fit,
)
from privrl.linear_mixture.estimators import LinOptPO, LinOptVI, resolve_model
from privrl.privacy import PrivacyBudget

__all__: list[str] = []


def _add_inputs(p: argparse.ArgumentParser) -> None:
    """The number of simulated users (the estimator's other options come from its declaration)."""
    default = LinOptVI.param("n_episodes").default
    p.add_argument("--episodes", type=count_type(1, MAX_EPISODES), default=default,
                   help=f"number of episodes (users) K (default {default}, at most {MAX_EPISODES})")


def _budget(args: argparse.Namespace) -> PrivacyBudget:
    """The budget for ``--privatizer``: none for the non-private learner, required otherwise."""
    if args.privatizer == "none":
        if args.budget is not None and args.budget.is_private:
            raise InvalidParameterError("'--privatizer none' runs the non-private learner: drop the budget "
                                        "(or give --epsilon inf).")
        return PrivacyBudget.non_private()
    if args.budget is None:
        raise InvalidParameterError(f"A budget is required for '--privatizer {args.privatizer}': "
                                    "--epsilon E --delta D (or --privatizer none, non-private).")
    return args.budget


def _run(estimator: type) -> Callable[[argparse.Namespace], FitOutput]:
    def run(args: argparse.Namespace) -> FitOutput:
        budget = _budget(args)
        est = build_estimator(args, estimator, budget=budget, n_episodes=args.episodes)
        est.knobs()              # the budget's checks for this privatizer, before the env is made
        env = make_env(args.env, "--env")
        try:
            model, _ = resolve_model(env)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"The '--env' environment {args.env!r} is not a linear mixture MDP with "
                                        f"known features: {exc}") from None
        finally:
            env.close()
        est.fit(model, rng=args.rng)
        private = est.is_private
        paper_eps = None if math.isinf(est.paper_epsilon_) else float(est.paper_epsilon_)
        extra = {"env": args.env, "privatizer": est.privatizer_parameters_, "paper_epsilon_closed_form": paper_eps}
        summary: dict[str, object] = {
            "episodes": est.n_episodes, "privatizer": est.privatizer, "guarantee": est.guarantee,
            "calibration": est.calibration, "final_cumulative_regret": float(est.cumulative_regret_[-1]),
            "regret_bound": est.regret_bound_, "beta_p": est.beta_p_, "beta_r": est.beta_r_,
            "epsilon_spent": est.privacy_spent() if private else None,
            "paper_epsilon_closed_form": paper_eps,
        }
        arrays = {"regret": est.regret_, "cumulative_regret": est.cumulative_regret_,
                  "theta_p": est.theta_p_, "theta_r": est.theta_r_}
        return FitOutput(est, arrays=arrays, summary=summary, extra=extra)
    return run


for _name, _cls, _help in (
    ("linopt-vi", LinOptVI, "Private-LinOpt-VI (Zhou 2022, Alg. 1): private UCRL-VTR, online"),
    ("linopt-po", LinOptPO, "Private-LinOpt-PO (Zhou 2022, Alg. 2): private OPPO, online"),
):
    register_fit(FitCommand(name=_name, help=_help, add_arguments=_add_inputs, run=_run(_cls),
                            sources=("env",), budget="epsilon", budget_required=False, estimator=_cls,
                            exclude=("n_episodes",)))
