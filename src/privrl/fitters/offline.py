"""``privrl fit dp-apvi | apvi | dp-vapvi | vapvi | pevi`` (Qiao & Wang 2023).

The tabular algorithms need the public reward function, the linear ones the public feature table.
Both come from ``--model ENV_ID`` (a registered privrl environment: its exact model) or from
``--reward FILE.npy`` ``(H,S,A)``/``(S,A)`` / ``--features FILE.npy`` ``(S,A,d)``. With ``--env ENV_ID``
instead of ``--data``, ``--episodes`` trajectories are sampled from the environment's model with a
public behaviour policy (the paper's µ for the synthetic linear MDP, uniform otherwise) — a demo.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from privrl.algorithms.offline import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI
from privrl.certificate import make_certificate
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.fitters import FitCommand, FitOutput, register_fit

__all__ = ["load_model"]


def load_model(env_id: str) -> Any:
    """The exact model behind a privrl environment id: a LinearMDP when the environment keeps one
    (``unwrapped.linear_model``), else its TabularMDP."""
    import gymnasium as gym

    import privrl.envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id)
    base = env.unwrapped
    model = getattr(base, "linear_model", None) or getattr(base, "model", None)
    if model is None:
        raise InvalidParameterError(f"The environment {env_id!r} exposes no model (.model / .linear_model).")
    return model


def _arrays_of(model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """(P (H,S,A,S), r (H,S,A), features or None, initial) of a LinearMDP or an episodic TabularMDP."""
    if hasattr(model, "transitions"):
        return model.transitions, model.rewards, model.features, model.initial
    P, r, H = np.asarray(model.P), np.asarray(model.r), model.horizon
    if H is None:
        raise InvalidDataError("The offline algorithms need an episodic (finite-horizon) model.")
    if P.ndim == 3:
        P, r = np.broadcast_to(P, (H, *P.shape)), np.broadcast_to(r, (H, *r.shape))
    return P, r, None, np.asarray(model.initial)


def _add_common(p: argparse.ArgumentParser, linear: bool) -> None:
    p.add_argument("--model", default=None, help="privrl environment id whose exact model gives the public "
                   + ("features" if linear else "reward function"))
    if linear:
        p.add_argument("--features", default=None, help="(S, A, d) .npy feature table (public)")
        p.add_argument("--lam", type=float, default=1.0, help="ridge parameter λ (default 1)")
        p.add_argument("--feature-norm-bound", type=float, default=1.0, help="declared max ||φ||₂ (default 1)")
    else:
        p.add_argument("--reward", default=None, help="(H, S, A) or (S, A) .npy reward function (public)")
    p.add_argument("--delta-fail", type=float, default=0.05, help="failure probability δ (default 0.05)")
    p.add_argument("--episodes", type=int, default=1000, help="trajectories sampled with --env (default 1000)")


def _source(args: argparse.Namespace, linear: bool) -> tuple[Any, Any, Any]:
    """(dataset, public reward/features, model or None)."""
    model = None
    if args.env is not None:
        model = load_model(args.env)
    elif args.model is not None:
        model = load_model(args.model)
    public_file = getattr(args, "features" if linear else "reward", None)
    if public_file is not None:
        public = np.load(public_file, allow_pickle=False)
    elif model is not None:
        P, r, feats, _ = _arrays_of(model)
        if linear and feats is None:
            S, A = r.shape[1:]
            feats = np.eye(S * A).reshape(S, A, S * A)    # one-hot features of a tabular model
        public = feats if linear else r
    else:
        what = "--features FILE.npy" if linear else "--reward FILE.npy"
        raise InvalidParameterError(f"This algorithm needs public model knowledge: give --model ENV_ID or {what}.")
    if args.env is not None:
        P, r, _, init = _arrays_of(model)
        S, A = r.shape[1:]
        behaviour = np.full((S, A), 1.0 / A)
        if args.env.startswith("privrl/SyntheticLinearMDP"):
            from privrl.envs.synthetic_linear import synthetic_behaviour_policy
            behaviour = synthetic_behaviour_policy()
        from privrl.envs.linear import sample_episodes
        data: Any = sample_episodes(P, r, init, behaviour, args.episodes, rng=args.rng)
    else:
        from privrl.data import load_dataset
        data = load_dataset(args.data)
    return data, public, model


def _output(est: Any, name: str, args: argparse.Namespace, model: Any) -> FitOutput:
    summary: dict[str, Any] = {"horizon": int(est.policy_.shape[0]), "n_states": int(est.policy_.shape[1])}
    if model is not None:
        P, r, _, init = _arrays_of(model)
        from privrl.envs.linear import backward_induction, evaluate_policy
        v_star = float(init @ backward_induction(P, r)[1][0])
        v_pi = float(init @ evaluate_policy(P, r, est.policy_)[0])
        summary.update(optimal_value=v_star, policy_value=v_pi, gap=v_star - v_pi)
    delta = args.budget.delta if (args.budget.epsilon is not None and args.budget.delta) else (
        1e-5 if est.is_private and est.guarantee == "rho-zCDP" else None)
    cert = make_certificate(est, algorithm=name, delta=delta)
    return FitOutput(certificate=cert, arrays={"policy": est.policy_, "values": est.values_,
                                               "q_values": est.q_values_}, summary=summary)


def _run_tabular(private: bool):
    def run(args: argparse.Namespace) -> FitOutput:
        data, reward, model = _source(args, linear=False)
        est: Any
        if private:
            est = DPAPVI(budget=args.budget, delta_fail=args.delta_fail, c2=args.c2, mechanism=args.mechanism)
        else:
            _require_non_private(args)
            est = APVI(delta_fail=args.delta_fail)
        est.fit(data, reward, rng=args.rng)
        return _output(est, "dp-apvi" if private else "apvi", args, model)
    return run


def _run_linear(kind: str):
    def run(args: argparse.Namespace) -> FitOutput:
        data, feats, model = _source(args, linear=True)
        common = {"lam": args.lam, "feature_norm_bound": args.feature_norm_bound}
        if kind == "pevi":
            _require_non_private(args)
            est: Any = PEVI(beta=args.beta, **common)
        elif kind == "vapvi":
            _require_non_private(args)
            est = VAPVI(C=args.C, D=args.D, split=not args.no_split, **common)
        else:
            est = DPVAPVI(budget=args.budget, calibration=args.calibration, C=args.C, D=args.D, delta_fail=args.delta_fail,
                          split=not args.no_split, **common)
        est.fit(data, feats, rng=args.rng)
        return _output(est, kind, args, model)
    return run


def _require_non_private(args: argparse.Namespace) -> None:
    if args.budget.is_private:
        raise InvalidParameterError("This algorithm is not private: pass --epsilon inf (or use its dp- variant).")


def _args_dp_apvi(p: argparse.ArgumentParser) -> None:
    _add_common(p, linear=False)
    p.add_argument("--c2", type=float, default=16.0, help="C2 of the DP penalty term (default 16)")
    p.add_argument("--mechanism", choices=("auto", "gaussian", "laplace"), default="auto")


def _args_apvi(p: argparse.ArgumentParser) -> None:
    _add_common(p, linear=False)


def _args_vapvi(p: argparse.ArgumentParser, private: bool = False) -> None:
    _add_common(p, linear=True)
    p.add_argument("--C", type=float, default=0.1, help="penalty constant C (default 0.1)")
    p.add_argument("--D", type=float, default=0.0, help="additive penalty D (term D/K; default 0)")
    p.add_argument("--no-split", action="store_true", help="use all data in both stages (paper's experiments)")
    if private:
        p.add_argument("--calibration", choices=("sound", "paper"), default="sound")


def _args_pevi(p: argparse.ArgumentParser) -> None:
    _add_common(p, linear=True)
    p.add_argument("--beta", type=float, default=0.1, help="PEVI penalty β (default 0.1)")


register_fit(FitCommand("dp-apvi", "DP-APVI (Qiao & Wang 2023, Alg. 1): rho-zCDP or pure-DP tabular offline RL",
                        _args_dp_apvi, _run_tabular(True)))
register_fit(FitCommand("apvi", "APVI (non-private tabular offline RL; --epsilon inf)", _args_apvi,
                        _run_tabular(False)))
register_fit(FitCommand("dp-vapvi", "DP-VAPVI (Qiao & Wang 2023, Alg. 2): rho-zCDP offline RL in linear MDPs",
                        lambda p: _args_vapvi(p, private=True), _run_linear("dp-vapvi")))
register_fit(FitCommand("vapvi", "VAPVI (non-private, linear MDPs; --epsilon inf)", _args_vapvi,
                        _run_linear("vapvi")))
register_fit(FitCommand("pevi", "PEVI (non-private, linear MDPs; --epsilon inf)", _args_pevi, _run_linear("pevi")))
