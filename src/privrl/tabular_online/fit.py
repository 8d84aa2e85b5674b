"""``privrl fit ucbvi | dp-ucbvi | private-ucb-vi | private-ucb-po``: run the online learner on a
tabular environment.

``--env ENV_ID`` is a privrl environment over an episodic tabular model (``privrl/RandomTabularMDP-v0``)
or a Gymnasium toy-text environment cast as one with ``--horizon H`` (FrozenLake-v1, ...). The users
are simulated from the model, ``--episodes`` of them (the estimator's ``n_episodes``). Every other
declared parameter is an option with its declared default (``--privatizer central|local``,
``--counter``, ``--calibration``, ``--pooled``, ``--constants``, the bonus knobs). A pure
``--epsilon E`` gives the Laplace privatizers, ``--epsilon E --delta D`` or ``--rho R`` the Gaussian
ones; no budget (or ``--epsilon inf``) runs the non-private learner.

Writes the per-episode exact pseudo-regret and the cumulative regret curve and a certificate
(privacy unit: one user = one episode; ``extra`` records the privatizer's public noise plan).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from privrl.envs.tabular import TabularMDP
from privrl.errors import InvalidParameterError
from privrl.fitters import MAX_EPISODES, FitCommand, FitOutput, build_estimator, count_type, make_env, register_fit
from privrl.privacy import PrivacyBudget
from privrl.tabular_online.estimators import DPUCBVI, UCBVI, PrivateUCBPO, PrivateUCBVI

__all__: list[str] = []


def _add_inputs(p: argparse.ArgumentParser) -> None:
    default = DPUCBVI.param("n_episodes").default
    p.add_argument("--episodes", type=count_type(1, MAX_EPISODES), default=default,
                   help=f"number of episodes (users) K (default {default}, at most {MAX_EPISODES})")
    p.add_argument("--horizon", type=count_type(1, 10_000), default=None,
                   help="episode length H for a Gymnasium toy-text environment (privrl's tabular models carry theirs)")


def _model(args: argparse.Namespace) -> TabularMDP:
    env = make_env(args.env, "--env")
    try:
        model = getattr(env.unwrapped, "model", None)
        if isinstance(model, TabularMDP) and model.is_episodic:
            return model
        if args.horizon is None:
            raise InvalidParameterError(f"The '--env' environment {args.env!r} carries no episodic tabular model: "
                                        "give --horizon H to cast a toy-text environment.")
        from privrl.envs.tabular import from_gymnasium_toy_text

        return from_gymnasium_toy_text(env.unwrapped, horizon=args.horizon)
    finally:
        env.close()


def _run(estimator: type) -> Callable[[argparse.Namespace], FitOutput]:
    def run(args: argparse.Namespace) -> FitOutput:
        given: dict[str, Any] = {"n_episodes": args.episodes}
        if estimator is not UCBVI:
            given["budget"] = args.budget if args.budget is not None else PrivacyBudget.non_private()
        est = build_estimator(args, estimator, **given)
        model = _model(args)
        est.fit(model, rng=args.rng)
        private = bool(getattr(est, "is_private", False))
        summary: dict[str, Any] = {
            "episodes": est.n_episodes_, "guarantee": est.guarantee if private else None,
            "final_cumulative_regret": float(est.cumulative_regret_[-1]), "error_bound": est.error_bound_,
            "epsilon_spent": est.privacy_spent() if private else None,
        }
        return FitOutput(est, arrays={"regret": est.regret_, "cumulative_regret": est.cumulative_regret_},
                         summary=summary, extra={"env": args.env, "noise": est.noise_.public()})
    return run


for _name, _cls, _help, _budget in (
    ("ucbvi", UCBVI, "UCBVI (Azar et al. 2017): non-private optimistic exploration, tabular", "none"),
    ("dp-ucbvi", DPUCBVI, "DP-UCBVI (Qiao & Wang 2023): JDP / LDP exploration, tabular", "any"),
    ("private-ucb-vi", PrivateUCBVI, "Private-UCB-VI (after Chowdhury & Zhou 2022): JDP / LDP, tabular", "any"),
    ("private-ucb-po", PrivateUCBPO, "Private-UCB-PO (after Chowdhury & Zhou 2022): JDP / LDP, tabular", "any"),
):
    register_fit(FitCommand(name=_name, help=_help, add_arguments=_add_inputs, run=_run(_cls), sources=("env",),
                            budget=_budget, budget_required=False, estimator=_cls, exclude=("n_episodes",)))
