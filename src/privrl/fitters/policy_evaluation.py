"""``privrl fit dp-lsw | dp-lsl | lsw | lsl``: policy evaluation on a user's dataset file.

Reads a tabular :class:`~privrl.data.TrajectoryDataset` (``--data``), fits the estimator and writes
θ̂ and V̂ = Φθ̂ (``result.npz``) and the privacy certificate. The certificate records the public
parameters (γ, F_max, R_max, features, λ, constants) and the ledger, never σ_X.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from privrl.algorithms.policy_evaluation import DPLSL, DPLSW, LSL, LSW, sqrt_lambda_schedule
from privrl.certificate import make_certificate
from privrl.data.features import feature_matrix, one_hot, state_aggregation
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.fitters import FitCommand, FitOutput, count_type, load_user_dataset, register_fit
from privrl.privacy.smooth_sensitivity import CONSTANT_SETS

__all__: list[str] = []

#: the largest --n-states (the features are a dense n_states × d matrix)
MAX_STATES = 100_000


def _add_common(p: argparse.ArgumentParser, lsl: bool, private: bool) -> None:
    p.add_argument("--gamma", type=float, required=True, help="discount factor γ in [0, 1)")
    p.add_argument("--n-states", type=count_type(1, MAX_STATES), default=None,
                   help=f"number of states (default: the dataset's declared n_states; at most {MAX_STATES})")
    p.add_argument("--features", default="tabular",
                   help="'tabular' (one-hot), 'aggregate' (groups of --group-size adjacent states) "
                        "or a .npy file holding Φ (n_states × d)")
    p.add_argument("--group-size", type=count_type(1, MAX_STATES), default=2,
                   help="states per group for --features aggregate")
    p.add_argument("--max-feature-norm", type=float, default=None,
                   help="declared bound on ‖Φ‖₂ for a user matrix (checked)")
    p.add_argument("--r-max", type=float, default=None,
                   help="public reward bound R_max (default: the dataset's declared upper bound)")
    p.add_argument("--F-max", dest="F_max", type=float, default=None,
                   help="public bound on returns (default R_max/(1−γ))")
    p.add_argument("--clip-returns", action="store_true", help="clip rewards/returns into the bounds")
    if lsl:
        p.add_argument("--lam", type=float, default=None, help="ridge parameter λ (public)")
        p.add_argument("--lam-sqrt-coef", type=float, default=None,
                       help="use λ = ‖Φ‖²‖ρ‖∞ + c·√m with this c instead of --lam")
    if private:
        p.add_argument("--constants", choices=CONSTANT_SETS, default="main_text",
                       help="Lemma 1 (main_text, default) or Lemma 14 (appendix_a)")


def _features(args: argparse.Namespace, n_states: int) -> tuple[np.ndarray, str]:
    if args.features == "tabular":
        return one_hot(n_states), "tabular"
    if args.features == "aggregate":
        return state_aggregation(n_states, args.group_size), f"aggregate(group_size={args.group_size})"
    try:
        matrix = np.load(args.features, allow_pickle=False)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidParameterError(
            f"The '--features' option must be 'tabular', 'aggregate' or a .npy file. Got "
            f"{args.features!r} instead ({why})."
        ) from None
    try:
        phi = feature_matrix(matrix, n_states=n_states, max_norm=args.max_feature_norm)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"The '--features' file {args.features!r} is not usable: {exc}") from None
    return phi, f"file:{args.features}"


def _make_run(name: str, cls: type, lsl: bool, private: bool):
    def run(args: argparse.Namespace) -> FitOutput:
        dataset = load_user_dataset(args)
        n_states = dataset.n_states if args.n_states is None else args.n_states
        if n_states is None:  # public: never inferred from the visited states
            raise InvalidParameterError("The dataset declares no n_states: pass --n-states.")
        phi, feature_name = _features(args, n_states)
        kwargs: dict[str, Any] = {"gamma": args.gamma, "features": phi, "r_max": args.r_max,
                                  "F_max": args.F_max, "clip_returns": bool(args.clip_returns)}
        if lsl:
            if (args.lam is None) == (args.lam_sqrt_coef is None):
                raise InvalidParameterError("Give exactly one of --lam or --lam-sqrt-coef.")
            lam = args.lam
            if lam is None:
                lam = sqrt_lambda_schedule(dataset.n_episodes, phi, np.full(n_states, 1.0 / n_states),
                                           args.lam_sqrt_coef)
            kwargs["lam"] = lam
        if private:
            kwargs["budget"] = args.budget
            kwargs["constants"] = args.constants
        try:
            est = cls(**kwargs).fit(dataset, rng=args.rng)
        except InvalidDataError as exc:
            if "clip_returns" not in str(exc):
                raise
            # in CLI terms, and without the (private) values the estimator's message shows
            raise InvalidDataError(
                f"The rewards or first-visit returns of '--data' {args.data} exceed the public bounds "
                "(--r-max, --F-max): declare bounds that hold for every trajectory, or give --clip-returns."
            ) from None
        delta = None
        if private and est.is_private:
            delta = float(args.budget.delta)
        public = {"features": feature_name, "n_features": int(est.n_features_), "F_max": float(est.F_max_),
                  "n_trajectories": int(est.n_trajectories_), "gamma": float(args.gamma)}
        if lsl:
            public["lam"] = float(kwargs["lam"])
        cert = make_certificate(est, algorithm=name, delta=delta, extra=public)
        if not private:
            cert["note"] = "non-private estimator: no privacy guarantee"
        return FitOutput(certificate=cert, arrays={"theta": est.theta_, "values": est.values_},
                         summary=public)

    return run


for _name, _cls, _lsl, _private, _help in (
    ("dp-lsw", DPLSW, False, True, "DP-LSW (Balle et al. 2016, Algorithm 1), (ε, δ)-DP per trajectory"),
    ("dp-lsl", DPLSL, True, True, "DP-LSL (Balle et al. 2016, Algorithm 2), (ε, δ)-DP per trajectory"),
    ("lsw", LSW, False, False, "non-private LSW (Balle et al. 2016, eq. 8)"),
    ("lsl", LSL, True, False, "non-private LSL (Balle et al. 2016, eq. 11)"),
):
    register_fit(FitCommand(
        name=_name, help=_help,
        add_arguments=(lambda lsl, private: lambda p: _add_common(p, lsl, private))(_lsl, _private),
        run=_make_run(_name, _cls, _lsl, _private),
        sources=("data",), budget="epsilon" if _private else "none",
    ))
