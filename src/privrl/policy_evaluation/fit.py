"""``privrl fit dp-lsw | dp-lsl | lsw | lsl`` (Balle, Gomrokchi & Precup 2016) and ``privrl fit
dp-monte-carlo | monte-carlo``: policy evaluation on a user's dataset file.

Reads a :class:`~privrl.data.TrajectoryDataset` (``--data``; ``--truncate-to-horizon`` and
``--pad-to-horizon`` reshape its episodes), fits the estimator and writes the result
(``result.npz``: θ̂ and V̂ = Φθ̂, or J and the group values) and the privacy certificate.

Every declared parameter of the estimator (``DPLSW.params`` ...) is an option with its declared
default (:func:`privrl.fitters.add_estimator_options`): ``--gamma`` (required for LSW/LSL; γ = 1
allowed when a public F_max bounds the returns), ``--r-max``, ``--F-max``, ``--clip-returns``,
``--record-terminal``, ``--lam`` and, for the private commands, ``--calibration
tight|sound|paper``, ``--smoothing main_text|appendix_a`` (the printed constants of Lemma 1 /
Lemma 14), ``--constants theory|practical`` and ``--secure``; for Monte Carlo
``--neighboring``, ``--mechanism`` and ``--max-groups-per-trajectory``. The array parameters are
the command's own inputs: ``--features tabular|aggregate|FILE`` (with ``--n-states``,
``--group-size``, ``--max-feature-norm``) gives Φ; ``--weights uniform|FILE`` the public state
weights (w of LSW, ρ of LSL); ``--groups FILE`` the public state groups of Monte Carlo.
``dp-lsl --lam-sqrt-coef c`` sets λ = λ_min + c√m (§6), a function of the public m only.

The certificate records every declared parameter (``params``; arrays by reference), what the
defaults resolved to (``extra``: R_max, F_max, λ, the weights) and ε at the budget's δ; never σ_X.
The summary (``result.json``, and printed) carries the main utility diagnostic (``utility``):
computed from public quantities and the released output only.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.data.bounds import return_bound
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
from privrl.policy_evaluation.estimators import (
    DPLSL,
    DPLSW,
    LSL,
    LSW,
    sqrt_lambda_schedule,
    utility_text,
)
from privrl.policy_evaluation.monte_carlo import DPMonteCarlo, MonteCarlo
from privrl.policy_evaluation.monte_carlo import utility_text as monte_carlo_utility_text

if TYPE_CHECKING:
    from privrl.data import TrajectoryDataset

#: the estimators of this family's fit commands
_Fitted = LSW | LSL | DPLSW | DPLSL | MonteCarlo | DPMonteCarlo

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
    p.add_argument("--weights", default="uniform",
                   help="the public state weights of the fit (w of LSW, ρ in [0, 1] of LSL), chosen without "
                        "looking at the data: 'uniform' (1/n_states, default) or a .npy file of n_states "
                        "weights (e.g. 0 on states the policy rarely visits, which removes them from the "
                        "noise calibration)")
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


def _load_array(option: str, path: str) -> np.ndarray:
    """A .npy array of real numbers of ``option`` (never pickled); errors name the option."""
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InvalidParameterError(f"The '{option}' option must be a .npy file. Got {path!r} instead "
                                    f"({why}).") from None
    if not isinstance(arr, np.ndarray):   # an .npz archive
        arr.close()
        raise InvalidParameterError(f"The '{option}' option must be a .npy file. Got {path!r} instead "
                                    "(an .npz archive).")
    if arr.size > MAX_FEATURE_ENTRIES:
        raise InvalidParameterError(f"The '{option}' file {path!r} must hold at most {MAX_FEATURE_ENTRIES} entries. "
                                    f"Got {arr.size} instead.")
    if arr.dtype.kind not in "biuf":      # strings would be parsed, complex numbers cut: neither is a weight
        raise InvalidParameterError(f"The '{option}' file {path!r} must hold real numbers. Got dtype {arr.dtype} "
                                    "instead.")
    return np.array(arr)


def _weights(args: argparse.Namespace, n_states: int) -> tuple[np.ndarray | None, str]:
    """(w or ρ, its name for the certificate) from ``--weights``."""
    if args.weights == "uniform":
        return None, "uniform"
    w = _load_array("--weights", args.weights)
    if w.shape != (n_states,):
        raise InvalidParameterError(f"The '--weights' file {args.weights!r} must hold one weight per state (shape "
                                    f"({n_states},)). Got shape {w.shape} instead.")
    return w.astype(float), f"file:{args.weights}"


def _r_max(est: _Fitted, dataset: TrajectoryDataset) -> float:
    """The R_max the fit used: ``--r-max``, else the dataset's declared upper reward bound (public)."""
    if est.r_max is not None:
        return float(est.r_max)
    if dataset.reward_bounds is None:
        raise InvalidParameterError("The data declare no reward bounds: give --reward-bounds LO HI or --r-max.")
    return float(dataset.reward_bounds[1])


def _bound_error(exc: InvalidDataError, est: _Fitted, dataset: TrajectoryDataset, source: str) -> InvalidDataError:
    """The estimator's out-of-bounds error in command-line terms: it names the public bound that
    broke and how to fix it, never the private reward or return."""
    r_max = _r_max(est, dataset)
    if "return of the dataset exceeds" in str(exc):
        from privrl.data import max_episode_length

        f_max = return_bound(r_max, est.gamma, est.F_max, max_episode_length(dataset), type(est).__name__)
        how = "--F-max" if est.F_max is not None else "the default bound of R_max and γ; set it with --F-max"
        return InvalidDataError(
            f"A return of '--data' {source} exceeds the public bound F_max = {f_max:g} ({how}): "
            "declare a bound that holds for every trajectory, or give --clip-returns to clip returns into it.")
    how = "--r-max" if est.r_max is not None else "the dataset's declared upper reward bound; set it with --r-max"
    return InvalidDataError(
        f"A reward of '--data' {source} lies outside the public bounds [0, R_max = {r_max:g}] ({how}): declare "
        "bounds that hold for every reward, or give --clip-returns to clip rewards into them.")


def _run(cls: type[LSW | LSL | DPLSW | DPLSL]) -> Callable[[argparse.Namespace], FitOutput]:
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
        weights, weight_name = _weights(args, phi.shape[0])
        given: dict[str, Any] = {"features": phi, "weights": weights}
        if coef is not None:
            rho = np.full(phi.shape[0], 1.0 / phi.shape[0]) if weights is None else weights
            given["lam"] = sqrt_lambda_schedule(dataset.n_episodes, phi, rho, coef)
        est = build_estimator(args, cls, **given)
        _fit_within_bounds(est, dataset, args)
        return _output(est, dataset, feature_name, weight_name, coef, private)

    return run


def _fit_within_bounds(est: _Fitted, dataset: TrajectoryDataset, args: argparse.Namespace) -> None:
    """``est.fit(dataset)``; an out-of-bounds error (the estimator's ``clip_returns`` hint) becomes
    the command line's :func:`_bound_error`. Shared by the LSW/LSL and the Monte Carlo commands."""
    try:
        est.fit(dataset, rng=args.rng)
    except InvalidDataError as exc:
        if "clip_returns" not in str(exc):
            raise
        raise _bound_error(exc, est, dataset, args.data) from None


def _output(est: LSW | LSL | DPLSW | DPLSL, dataset: TrajectoryDataset, feature_name: str, weight_name: str,
            coef: float | None, private: bool) -> FitOutput:
    # what the defaults resolved to (public: declared bounds, m, the λ schedule of public inputs)
    r_max = _r_max(est, dataset)
    extra: dict[str, object] = {"features": feature_name, "weights": weight_name, "n_states": int(est.values_.shape[0]),
                             "n_features": int(est.n_features_), "r_max": float(r_max),
                             "F_max": float(est.F_max_), "n_trajectories": int(est.n_trajectories_)}
    if isinstance(est, (LSL, DPLSL)):    # DP-LSL's lam_ is the λ used (the preset's when lam is None)
        extra["lam"] = float(getattr(est, "lam_", None) or est.get_params()["lam"])
        if coef is not None:
            extra["lam_sqrt_coef"] = float(coef)
    summary = {**extra, "utility": utility_text(est.utility_), "diagnostics": est.utility_}
    return FitOutput(est, arrays={"theta": est.theta_, "values": est.values_}, summary=summary, extra=extra,
                     note=None if private else "non-private estimator: no privacy guarantee")


# --------------------------------------------------------------------------- Monte Carlo
def _add_monte_carlo_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--groups", default=None,
                   help="a .npy file mapping each state to a public group (ints ≥ 0, one per state; −1 for a state in "
                        "no group, never entered, e.g. a terminal state), fixed without "
                        "looking at the data: also release each group's mean first-visit return")


def _run_monte_carlo(name: str, cls: type[MonteCarlo | DPMonteCarlo]) -> Callable[[argparse.Namespace], FitOutput]:
    def run(args: argparse.Namespace) -> FitOutput:
        build_estimator(args, cls)            # a bad option fails before any data are read
        groups = None if args.groups is None else _load_array("--groups", args.groups)
        est = build_estimator(args, cls, groups=groups)
        dataset = load_user_dataset(args)
        _fit_within_bounds(est, dataset, args)
        extra: dict[str, object] = {"r_max": _r_max(est, dataset), "F_max": float(est.F_max_),
                                 "groups": "none" if groups is None else f"file:{args.groups}"}
        if est.n_trajectories_ is not None:
            extra["n_trajectories"] = int(est.n_trajectories_)
        arrays: dict[str, object] = {"value": np.array(est.value_), "value_std": np.array(est.value_std_)}
        summary: dict[str, object] = {**extra, "value": float(est.value_), "value_std": float(est.value_std_),
                                   "utility": monte_carlo_utility_text(est.utility_), "diagnostics": est.utility_}
        if groups is not None:
            arrays.update(group_values=est.group_values_, group_counts=est.group_counts_,
                          group_std=est.group_std_, groups_entered=est.groups_entered_, values=est.values_)
        if getattr(est, "released_count_", None) is not None:
            summary["released_count"] = float(est.released_count_)
        private = est.is_private
        return FitOutput(est, arrays=arrays, summary=summary, extra=extra,
                         mechanism=est.mechanism_.kind if private else None,
                         note=None if private else "non-private estimator: no privacy guarantee")

    return run


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

for _mc_name, _mc_cls, _mc_help in (
    ("dp-monte-carlo", DPMonteCarlo, "private mean return J of the logging policy (and public state-group "
                                     "values) from on-policy logs, per trajectory"),
    ("monte-carlo", MonteCarlo, "non-private mean return J (and group values; no budget)"),
):
    register_fit(FitCommand(
        name=_mc_name, help=_mc_help, add_arguments=_add_monte_carlo_inputs, run=_run_monte_carlo(_mc_name, _mc_cls),
        sources=("data",), budget="any" if _mc_cls is DPMonteCarlo else "none", estimator=_mc_cls,
    ))
