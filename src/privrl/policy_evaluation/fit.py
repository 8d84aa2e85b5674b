"""``privrl fit dp-lsw | dp-lsl | lsw | lsl`` (Balle, Gomrokchi & Precup 2016): policy evaluation
on a user's dataset file.

Reads a tabular :class:`~privrl.data.TrajectoryDataset` (``--data``), fits the estimator and writes
θ̂ and V̂ = Φθ̂ (``result.npz``) and the privacy certificate.

Every declared parameter of the estimator (``DPLSW.params`` ...) is an option with its declared
default (:func:`privrl.fitters.add_estimator_options`): ``--gamma`` (required), ``--r-max``,
``--F-max``, ``--clip-returns``, ``--record-terminal``, ``--lam`` and, for the private commands,
``--calibration tight|sound|paper``, ``--smoothing main_text|appendix_a`` (the printed constants of
Lemma 1 / Lemma 14), ``--constants theory|practical`` and ``--secure``. The array parameters are
the command's own inputs: ``--features tabular|aggregate|FILE`` (with ``--n-states``,
``--group-size``, ``--max-feature-norm``) gives Φ; the weights w and relevance ρ are uniform.
``dp-lsl --lam-sqrt-coef c`` sets λ = λ_min + c√m (§6), a function of the public m only.

The certificate records every declared parameter (``params``; Φ by reference), what the defaults
resolved to (``extra``: R_max, F_max, λ) and ε at the budget's δ; never σ_X.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from privrl.data.features import feature_matrix, one_hot, state_aggregation
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.fitters import (
    MAX_TRANSITIONS,
    FitCommand,
    FitOutput,
    build_estimator,
    count_type,
    load_user_dataset,
    register_fit,
)
from privrl.policy_evaluation.estimators import DPLSL, DPLSW, LSL, LSW, sqrt_lambda_schedule

__all__: list[str] = []

#: the largest --n-states
MAX_STATES = 100_000
#: the largest feature matrix (n_states × d entries) a command builds or reads (memory)
MAX_FEATURE_ENTRIES = MAX_TRANSITIONS


def _positive_float(text: str) -> float:
    """An argparse ``type`` for a finite float > 0 (argparse prefixes the option's name)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a float in (0.0, inf). Got {text!r} instead") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a float in (0.0, inf). Got {text} instead")
    return value


_positive_float.__name__ = "float"


def _add_inputs(p: argparse.ArgumentParser, lam_schedule: bool) -> None:
    """The command's own inputs: the public feature matrix (the estimator's options are added from
    its declaration by the command line: ``FitCommand(estimator=...)``)."""
    p.add_argument("--n-states", type=count_type(1, MAX_STATES), default=None,
                   help=f"number of states (default: the dataset's declared n_states; at most {MAX_STATES})")
    p.add_argument("--features", default="tabular",
                   help="the public feature matrix Φ: 'tabular' (one-hot, default), 'aggregate' (groups of "
                        "--group-size adjacent states) or a .npy file holding Φ (n_states × d)")
    p.add_argument("--group-size", type=count_type(1, MAX_STATES), default=2,
                   help="states per group for --features aggregate (default 2)")
    p.add_argument("--max-feature-norm", type=_positive_float, default=None,
                   help="declared bound on the spectral norm ‖Φ‖₂ of a --features file (checked, never rescaled)")
    if lam_schedule:
        p.add_argument("--lam-sqrt-coef", type=_positive_float, default=None,
                       help="λ = ‖Φ‖²‖ρ‖∞ + c·√m with this c > 0 (the §6 schedule; m the number of "
                            "trajectories, public) instead of --lam")


def _features(args: argparse.Namespace, n_states: int) -> tuple[np.ndarray, str]:
    """(Φ, its name for the certificate) from ``--features``; errors name the options."""
    if args.features in ("tabular", "aggregate"):
        if args.features == "aggregate" and args.group_size > n_states:
            raise InvalidParameterError(f"The '--group-size' option must be an int in [1, {n_states}] (the number "
                                        f"of states). Got {args.group_size} instead.")
        d = n_states if args.features == "tabular" else -(-n_states // args.group_size)
        if n_states * d > MAX_FEATURE_ENTRIES:
            raise InvalidParameterError(
                f"The '--features {args.features}' matrix for {n_states} states must have at most "
                f"{MAX_FEATURE_ENTRIES} entries (n_states × d). Got {n_states * d} instead: use "
                "'--features aggregate' with a larger '--group-size', or a feature file.")
        if args.features == "tabular":
            return one_hot(n_states), "tabular"
        return state_aggregation(n_states, args.group_size), f"aggregate(group_size={args.group_size})"
    try:
        matrix = np.load(args.features, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidParameterError(
            f"The '--features' option must be 'tabular', 'aggregate' or a .npy file. Got "
            f"{args.features!r} instead ({why})."
        ) from None
    if not isinstance(matrix, np.ndarray):   # an .npz archive
        matrix.close()
        raise InvalidParameterError(f"The '--features' option must be 'tabular', 'aggregate' or a .npy file. Got "
                                    f"{args.features!r} instead (an .npz archive).")
    if matrix.size > MAX_FEATURE_ENTRIES:
        raise InvalidParameterError(f"The '--features' file {args.features!r} must hold at most "
                                    f"{MAX_FEATURE_ENTRIES} entries. Got {matrix.size} instead.")
    try:
        phi = feature_matrix(np.array(matrix), n_states=n_states, max_norm=args.max_feature_norm)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"The '--features' file {args.features!r} is not usable: {exc}") from None
    return phi, f"file:{args.features}"


def _r_max(est: Any, dataset: Any) -> float:
    """The R_max the fit used: ``--r-max``, else the dataset's declared upper reward bound (public)."""
    return float(est.r_max) if est.r_max is not None else float(dataset.reward_bounds[1])


def _bound_error(exc: InvalidDataError, est: Any, dataset: Any, source: str) -> InvalidDataError:
    """The estimator's out-of-bounds error in command-line terms: it names the public bound that
    broke and how to fix it, never the private reward or return."""
    r_max = _r_max(est, dataset)
    if "first-visit return" in str(exc):
        f_max = est.F_max if est.F_max is not None else r_max / (1.0 - est.gamma)
        how = "--F-max" if est.F_max is not None else "default R_max/(1 − γ); set it with --F-max"
        return InvalidDataError(
            f"A first-visit return of '--data' {source} exceeds the public bound F_max = {f_max:g} ({how}): "
            "declare a bound that holds for every trajectory, or give --clip-returns to clip returns into it.")
    how = "--r-max" if est.r_max is not None else "the dataset's declared upper reward bound; set it with --r-max"
    return InvalidDataError(
        f"A reward of '--data' {source} lies outside the public bounds [0, R_max = {r_max:g}] ({how}): declare "
        "bounds that hold for every reward, or give --clip-returns to clip rewards into them.")


def _run(cls: type) -> Any:
    private = cls in (DPLSW, DPLSL)

    def run(args: argparse.Namespace) -> FitOutput:
        build_estimator(args, cls)            # a bad option fails before any data are read
        coef = getattr(args, "lam_sqrt_coef", None)
        if coef is not None and args.lam is not None:
            raise InvalidParameterError("Give at most one of --lam or --lam-sqrt-coef (without either, λ "
                                        "follows the --constants preset).")
        dataset = load_user_dataset(args)
        n_states = dataset.n_states if args.n_states is None else args.n_states
        if n_states is None:  # public: never inferred from the visited states
            raise InvalidParameterError(
                f"The '--n-states' option is required: '--data' {args.data} declares no n_states (the number "
                "of states must be public, never inferred from the visited states).")
        phi, feature_name = _features(args, int(n_states))
        given: dict[str, Any] = {"features": phi}
        if coef is not None:
            given["lam"] = sqrt_lambda_schedule(dataset.n_episodes, phi, np.full(phi.shape[0], 1.0 / phi.shape[0]),
                                                coef)
        est = build_estimator(args, cls, **given)
        try:
            est.fit(dataset, rng=args.rng)
        except InvalidDataError as exc:
            if "clip_returns" not in str(exc):
                raise
            raise _bound_error(exc, est, dataset, args.data) from None
        return _output(est, dataset, feature_name, coef, private)

    return run


def _output(est: Any, dataset: Any, feature_name: str,
            coef: float | None, private: bool) -> FitOutput:
    # what the defaults resolved to (public: declared bounds, m, the λ schedule of public inputs)
    r_max = _r_max(est, dataset)
    extra: dict[str, Any] = {"features": feature_name, "n_states": int(est.values_.shape[0]),
                             "n_features": int(est.n_features_), "r_max": float(r_max),
                             "F_max": float(est.F_max_), "n_trajectories": int(est.n_trajectories_)}
    if isinstance(est, (LSL, DPLSL)):    # DP-LSL's lam_ is the λ used (the preset's when lam is None)
        extra["lam"] = float(getattr(est, "lam_", None) or est.get_params()["lam"])
        if coef is not None:
            extra["lam_sqrt_coef"] = float(coef)
    return FitOutput(est, arrays={"theta": est.theta_, "values": est.values_}, summary=extra, extra=extra,
                     note=None if private else "non-private estimator: no privacy guarantee")


for _name, _cls, _help in (
    ("dp-lsw", DPLSW, "DP-LSW (Balle et al. 2016, Algorithm 1), (ε, δ)-DP per trajectory"),
    ("dp-lsl", DPLSL, "DP-LSL (Balle et al. 2016, Algorithm 2), (ε, δ)-DP per trajectory"),
    ("lsw", LSW, "non-private LSW (Balle et al. 2016, eq. 8; no budget)"),
    ("lsl", LSL, "non-private LSL (Balle et al. 2016, eq. 11; no budget)"),
):
    register_fit(FitCommand(
        name=_name, help=_help,
        add_arguments=(lambda schedule: lambda p: _add_inputs(p, schedule))(_cls is DPLSL),
        run=_run(_cls), sources=("data",),
        budget="epsilon" if _cls in (DPLSW, DPLSL) else "none", estimator=_cls,
    ))
