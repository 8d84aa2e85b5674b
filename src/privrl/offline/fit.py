"""``privrl fit dp-apvi | apvi | dp-vapvi | vapvi | pevi`` (Qiao & Wang 2023).

The tabular algorithms need the public reward function, the linear ones the public feature table.
Both come from ``--model ENV_ID`` (an environment with an exact model: a privrl environment, or a
Gymnasium toy-text environment — FrozenLake, Taxi, CliffWalking — whose model is built by
:func:`privrl.envs.from_gymnasium_toy_text` with horizon ``--horizon``, default its
``max_episode_steps``) or from ``--reward FILE.npy`` ``(H,S,A)``/``(S,A)`` / ``--features FILE.npy``
``(S,A,d)``; ``--reward logged`` learns the tabular reward from the data's own rewards instead
(declared ``--r-max``/``--F-max``; DP-APVI releases the reward sums privately). With ``--env ENV_ID``
instead of ``--data``, ``--episodes`` trajectories are sampled
from the environment's model with a public behaviour policy (the paper's µ for the synthetic linear
MDP, uniform otherwise) — a demo. Episodes of a toy-text model end in absorbing zero-reward terminal
states, so sampled data are already in the fixed-horizon form; ``--data`` with variable-length
episodes needs ``--pad-to-horizon H``.

Rewards outside [0, 1] (Taxi, CliffWalking) are mapped affinely onto [0, 1] from the model's public
``reward_bounds`` (model and data alike; on fixed-horizon data this keeps the ranking of policies):
the summary and certificate record the map, and values are reported in the rescaled units.

Every declared parameter of the estimator (``DPAPVI.params`` ...) is an option with its declared
default (:func:`privrl.fitters.add_estimator_options`); the certificate records them all
(``params``), the constants the ``constants`` preset resolved to (``extra.constants``) and, for
DP-APVI, the noise chosen (``mechanism``: what ``--mechanism auto`` meant for the budget).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl.base import PrivateEstimator
from privrl.data import rescale_rewards
from privrl.envs.linear import backward_induction, evaluate_policy, sample_episodes
from privrl.envs.synthetic_linear import synthetic_behaviour_policy
from privrl.envs.tabular import TabularMDP, from_gymnasium_toy_text
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.fitters import (
    MAX_EPISODES,
    FitCommand,
    FitOutput,
    build_estimator,
    check_transitions,
    count_type,
    load_user_dataset,
    make_env,
    register_fit,
)
from privrl.offline.estimators import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI
from privrl.offline.one_step import DPOneStep

__all__ = ["load_model"]


def load_model(env_id: str, *, horizon: int | None = None, option: str = "--env") -> Any:
    """The exact model behind an environment id: a LinearMDP when the environment keeps one
    (``unwrapped.linear_model``), its TabularMDP (``unwrapped.model``), or — for a Gymnasium
    toy-text environment (``unwrapped.P``) — :func:`~privrl.envs.from_gymnasium_toy_text` with
    ``horizon`` (default: the environment's ``max_episode_steps``). ``horizon`` also turns a
    stationary TabularMDP (discounted or episodic) into an episodic one of that horizon."""
    env = make_env(env_id, option)
    try:
        base = env.unwrapped
        model = getattr(base, "linear_model", None) or getattr(base, "model", None)
        if model is None and isinstance(getattr(base, "P", None), dict):
            if horizon is None and getattr(env.spec, "max_episode_steps", None) is None:
                raise InvalidParameterError(
                    f"The '--horizon' option is required for {env_id} (it has no episode limit): give "
                    "the number of steps H of the fixed-horizon task."
                )
            return from_gymnasium_toy_text(env, horizon=horizon)
        if model is None:
            raise InvalidParameterError(
                f"The '{option}' environment {env_id!r} exposes no exact model: privrl needs a "
                "TabularMDP (.model), a LinearMDP (.linear_model) or a Gymnasium toy-text environment "
                "(FrozenLake, Taxi, CliffWalking)."
            )
    finally:
        env.close()
    if horizon is not None and isinstance(model, TabularMDP) and model.horizon != horizon:
        if not model.is_stationary:
            raise InvalidParameterError(
                f"The '--horizon' option must equal the horizon {model.horizon} of {env_id}'s "
                f"non-stationary model. Got {horizon} instead."
            )
        P = model.P[0] if model.is_episodic else model.P
        r = model.r[0] if model.is_episodic else model.r
        model = TabularMDP(P, r, horizon=horizon, initial=model.initial,
                           terminal_states=model.terminal_states, reward_bounds=model.reward_bounds,
                           name=model.name)
    return model


def _arrays_of(model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """(P (H,S,A,S), r (H,S,A), features or None, initial) of a LinearMDP or an episodic TabularMDP."""
    if hasattr(model, "transitions"):
        return model.transitions, model.rewards, model.features, model.initial
    P, r, H = np.asarray(model.P), np.asarray(model.r), model.horizon
    if H is None:
        raise InvalidParameterError("The offline algorithms need an episodic (finite-horizon) model: give "
                                    "'--horizon H'.")
    if P.ndim == 3:
        P, r = np.broadcast_to(P, (H, *P.shape)), np.broadcast_to(r, (H, *r.shape))
    return P, r, None, np.asarray(model.initial)


def _reward_map(model: object) -> tuple[float, float] | None:
    """``(low, high)`` when the model's public reward bounds leave [0, 1] (then rewards are mapped
    onto [0, 1]), else None."""
    bounds = getattr(model, "reward_bounds", None)
    if bounds is None or (bounds[0] >= 0.0 and bounds[1] <= 1.0):
        return None
    low, high = float(bounds[0]), float(bounds[1])
    return (low, high) if high > low else None


def _add_inputs(p: argparse.ArgumentParser, linear: bool) -> None:
    """The public model knowledge and sampling options (the estimator's own options are added from
    its declaration by the command line: ``FitCommand(estimator=...)``)."""
    p.add_argument("--model", default=None, help="environment id whose exact model gives the public "
                   + ("features" if linear else "reward function") + " (a privrl id or a Gymnasium toy-text id)")
    if linear:
        p.add_argument("--features", default=None, help="(S, A, d) .npy feature table (public)")
    else:
        p.add_argument("--reward", default=None, help="(H, S, A) or (S, A) .npy reward function (public), or "
                       "'logged': learn it from the data's rewards (declared --r-max, --F-max; DP-APVI releases "
                       "their sums privately)")
        p.add_argument("--state-groups", default=None, nargs="+", help="(S,) .npy int array: a public map state → "
                       "group, fixed without looking at the data (learn on grouped counts; see --stationary, "
                       "--max-visits); with --route auto, one or more candidate maps to choose from")
        p.add_argument("--baseline-groups", default=None, help="(S,) .npy int array: a public map state → group, "
                       "the coarse level of the estimated logging policy (with --baseline logging)")
        p.add_argument("--behaviour-policy", default=None, help="(S, A) or (H, S, A) .npy float array: the public "
                       "logging policy (a deployed rule, a protocol; rows summing to 1), SPIBB's baseline itself "
                       "(implies --baseline logging; no estimate, no privacy cost)")
    p.add_argument("--horizon", type=count_type(1, 10**5), default=None,
                   help="horizon H of a toy-text (or stationary) model (default: its max_episode_steps)")
    p.add_argument("--episodes", type=count_type(1, MAX_EPISODES), default=None,
                   help=f"with --env: trajectories sampled (default 1000, at most {MAX_EPISODES})")


def _load_public(path: str, option: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InvalidDataError(f"The '{option}' file {path} does not exist.") from None
    except (OSError, ValueError) as exc:
        raise InvalidDataError(f"The '{option}' file {path} is not a .npy array ({type(exc).__name__}).") from None


def _source(args: argparse.Namespace, linear: bool) -> tuple[Any, Any, Any, tuple[float, float] | None]:
    """(dataset, public reward/features, model or None, reward map or None)."""
    model = None
    if args.env is not None:
        model = load_model(args.env, horizon=args.horizon, option="--env")
    elif args.model is not None:
        model = load_model(args.model, horizon=args.horizon, option="--model")
    rmap = None if model is None else _reward_map(model)
    public_file = getattr(args, "features" if linear else "reward", None)
    public: Any
    if public_file == "logged" and not linear:
        public = None                                   # the estimator learns the reward from the logs
    elif public_file is not None:
        public = _load_public(public_file, "--features" if linear else "--reward")
    elif model is not None:
        P, r, feats, _ = _arrays_of(model)
        if linear and feats is None:
            S, A = r.shape[1:]
            feats = np.eye(S * A).reshape(S, A, S * A)    # one-hot features of a tabular model
        if not linear and rmap is not None:
            r = (r - rmap[0]) / (rmap[1] - rmap[0])
        public = feats if linear else r
    else:
        what = "--features FILE.npy" if linear else "--reward FILE.npy"
        raise InvalidParameterError(f"This algorithm needs public model knowledge: give --model ENV_ID or {what}.")
    if args.env is not None:
        n_episodes = 1000 if args.episodes is None else args.episodes
        P, r, _, init = _arrays_of(model)
        if rmap is not None:
            r = (r - rmap[0]) / (rmap[1] - rmap[0])
        S, A = r.shape[1:]
        check_transitions(n_episodes, P.shape[0])
        behaviour = np.full((S, A), 1.0 / A)
        if args.env.startswith("privrl/SyntheticLinearMDP"):
            behaviour = synthetic_behaviour_policy()
        data: Any = sample_episodes(P, r, init, behaviour, n_episodes, rng=args.rng)
    else:
        if args.episodes is not None:
            raise InvalidParameterError("--episodes applies to --env only (with --data the dataset has its episodes).")
        data = load_user_dataset(args)
        if getattr(data, "horizon", 0) is None:
            raise InvalidDataError(
                f"The offline algorithms need fixed-horizon data, and the episodes of '--data' {args.data} "
                "have different lengths: give '--pad-to-horizon H' (episodes shorter than H must end in a "
                "terminal state)."
            )
        model_h = None if model is None else _arrays_of(model)[0].shape[0]
        if model_h is not None and data.horizon != model_h:
            raise InvalidParameterError(
                f"The horizon of '--data' ({data.horizon} steps) must equal the model's ({model_h}): give "
                f"'--horizon {data.horizon}' or '--pad-to-horizon {model_h}'."
            )
        if rmap is not None:
            data = rescale_rewards(data, *rmap)
    return data, public, model, rmap


def _output(est: Any, model: Any, rmap: Any, public: dict[str, Any]) -> FitOutput:
    summary: dict[str, object] = {"horizon": int(est.policy_.shape[0]), "n_states": int(est.policy_.shape[1])}
    if rmap is not None:
        summary["reward_rescaled_from"] = list(rmap)
    if model is not None:
        P, r, _, init = _arrays_of(model)
        if rmap is not None:
            r = (r - rmap[0]) / (rmap[1] - rmap[0])
        v_star = float(init @ backward_induction(P, r)[1][0])
        v_pi = float(init @ evaluate_policy(P, r, getattr(est, "policy_probs_", est.policy_))[0])
        summary.update(optimal_value=v_star, policy_value=v_pi, gap=v_star - v_pi)
    private = est.is_private
    extra = dict(public)
    # the values the 'constants' preset gave the knobs left unset (public, data-independent)
    if hasattr(est, "_constants"):
        extra["constants"] = est._constants(est._validated())
    if rmap is not None:
        extra["reward_rescaled_from"] = list(rmap)
    route = getattr(est, "route_", None)
    if route is not None:           # the route a fit resolved (route="auto"): the chosen candidate by its index
        given = est.get_params()["state_groups"]
        maps = given if isinstance(given, list) else [] if given is None else [given]
        def candidate(chosen: np.ndarray | None) -> int | None:
            return next((i for i, g in enumerate(maps) if chosen is not None and np.array_equal(chosen, g)), None)
        extra["route"] = {**{k: v for k, v in route.items() if k not in ("state_groups", "baseline_groups")},
                          "candidate": candidate(route["state_groups"])}
        if "baseline_groups" in route:
            extra["route"]["baseline_candidate"] = candidate(route["baseline_groups"])
    mechanism = est.resolved_mechanism() if private and isinstance(est, DPAPVI) else None
    arrays = {"policy": est.policy_, "values": est.values_, "q_values": est.q_values_}
    probs = getattr(est, "policy_probs_", None)
    if probs is not None:           # the policy to deploy where it is stochastic (the safe baseline's rows)
        arrays["policy_probs"] = np.asarray(probs)
    return FitOutput(est, arrays=arrays,
                     summary=summary, extra=extra, mechanism=mechanism)


def _run(estimator: type, linear: bool) -> Callable[[argparse.Namespace], FitOutput]:
    def run(args: argparse.Namespace) -> FitOutput:
        groups = getattr(args, "state_groups", None)
        maps = [] if groups is None else [_load_public(g, "--state-groups") for g in groups]
        given: dict[str, object] = {} if not maps else {"state_groups": maps[0] if len(maps) == 1 else maps}
        if getattr(args, "baseline_groups", None) is not None:
            given["baseline_groups"] = _load_public(args.baseline_groups, "--baseline-groups")
        if getattr(args, "behaviour_policy", None) is not None:
            given["behaviour_policy"] = _load_public(args.behaviour_policy, "--behaviour-policy")
        est = build_estimator(args, estimator, **given)     # a bad option fails before any data are read
        data, public, model, rmap = _source(args, linear=linear)
        if estimator is DPOneStep:
            if public is not None and args.reward is not None:
                raise InvalidParameterError("dp-one-step learns from the logged rewards: give '--reward logged' "
                                            "(or no --reward), not a reward table.")
            est.fit(data, rng=args.rng)
            public = None
        else:
            est.fit(data, public, rng=args.rng)
        if linear:
            inputs: dict[str, object] = {"features": np.asarray(public)}
        else:
            inputs = ({"reward": "logged"} if public is None else
                      {"reward": np.asarray(public)} if args.reward is not None or model is not None else {})
        return _output(est, model, rmap, inputs)
    return run


def _register(name: str, help_text: str, estimator: type, linear: bool) -> None:
    register_fit(FitCommand(name, help_text, lambda p: _add_inputs(p, linear), _run(estimator, linear),
                            budget="any" if issubclass(estimator, PrivateEstimator) else "none", estimator=estimator))


_register("dp-apvi", "DP-APVI (Qiao & Wang 2023, Alg. 1): rho-zCDP, (epsilon, delta)-DP or pure epsilon-DP "
          "tabular offline RL", DPAPVI, linear=False)
_register("apvi", "APVI (non-private tabular offline RL; no budget)", APVI, linear=False)
_register("dp-vapvi", "DP-VAPVI (Qiao & Wang 2023, Alg. 2): rho-zCDP or (epsilon, delta)-DP offline RL in "
          "linear MDPs", DPVAPVI, linear=True)
_register("dp-one-step", "DP-OneStep: one private step of policy improvement on the logging policy from "
          "first-visit value sums (tabular, logged rewards: --reward logged)", DPOneStep, linear=False)
_register("vapvi", "VAPVI (non-private, linear MDPs; no budget)", VAPVI, linear=True)
_register("pevi", "PEVI (non-private, linear MDPs; no budget)", PEVI, linear=True)
