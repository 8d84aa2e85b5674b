"""``privrl fit ALGORITHM``: one command per algorithm, registered by the algorithm's paper module.

A :class:`FitCommand` adds its options to an argparse sub-parser and runs on the parsed
arguments, returning a :class:`FitOutput`; the command line writes the fitted result and the
privacy certificate (:func:`privrl.certificate.make_certificate`).

A command declares what it accepts, so that its help page lists exactly that and anything else
is refused with one line: ``sources`` (``--data`` and/or ``--env``) and ``budget`` (``"any"``:
``--epsilon [--delta]`` or ``--rho``; ``"epsilon"``: ``--epsilon [--delta]`` only; ``"none"``: a
non-private algorithm, which takes no budget). The helpers below turn user input into objects with
errors that name command-line options, never Python keywords: :func:`count_type` (bounded counts),
:func:`make_env` (Gymnasium ids) and :func:`load_user_dataset` (``--data`` with
``--reward-bounds`` and ``--pad-to-horizon``).
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from privrl import registry as _registry
from privrl.errors import InvalidDataError, InvalidParameterError

__all__ = ["FitCommand", "FitOutput", "register_fit", "all_fit_commands", "get_fit_command",
           "BUDGET_KINDS", "MAX_EPISODES", "MAX_TRANSITIONS", "count_type", "make_env",
           "load_user_dataset", "check_transitions"]

#: what a command accepts as a budget
BUDGET_KINDS = ("any", "epsilon", "none")
#: the largest ``--episodes`` any command accepts
MAX_EPISODES = 10**7
#: the largest number of transitions (episodes × horizon) a command samples or reads into memory
MAX_TRANSITIONS = 10**8


@dataclass
class FitOutput:
    """``arrays`` are saved to ``OUT/result.npz``; ``summary`` to ``OUT/result.json``;
    ``certificate`` to ``OUT/certificate.json``."""

    certificate: dict[str, Any]
    arrays: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FitCommand:
    """One ``privrl fit`` command.

    ``sources``: the common options it reads its input from (``"data"``, ``"env"``).
    ``budget``: ``"any"`` (``--epsilon [--delta]`` or ``--rho``), ``"epsilon"`` (``--epsilon
    [--delta]``) or ``"none"`` (non-private: no budget option; ``args.budget`` is the infinite
    budget). ``budget_required=False`` lets a command run without a budget (``args.budget`` is
    then ``None``), e.g. an uncertified run with a given noise level.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], FitOutput]
    sources: tuple[str, ...] = ("data", "env")
    budget: str = "any"
    budget_required: bool = True

    def __post_init__(self) -> None:
        if not self.sources or set(self.sources) - {"data", "env"}:
            raise ValueError(f"FitCommand {self.name!r}: sources must be a non-empty subset of ('data', 'env')")
        if self.budget not in BUDGET_KINDS:
            raise ValueError(f"FitCommand {self.name!r}: budget must be one of {BUDGET_KINDS}")


def register_fit(command: FitCommand) -> FitCommand:
    """Register ``command`` under its name (kind ``"fit"`` of :mod:`privrl.registry`; a later
    registration of the same name replaces it, so a plugin can override a command)."""
    return _registry.register("fit", command.name, command, replace=True)


def all_fit_commands() -> dict[str, FitCommand]:
    """Every registered fit command, sorted by name (the modules of
    :data:`privrl.registry.MODULES` are imported first; one that fails to import is an error)."""
    return dict(sorted(_registry.entries("fit").items()))


def get_fit_command(name: str) -> FitCommand:
    """The fit command ``name``; an unknown name is a one-line error listing the known ones."""
    return _registry.get("fit", name)


# --------------------------------------------------------------------------- argument types
def count_type(low: int = 1, high: int = MAX_EPISODES) -> Callable[[str], int]:
    """An argparse ``type`` for a count in ``[low, high]``: accepts ``1000`` and ``1e3`` (an integral
    number), rejects anything else with the range (argparse prefixes the option's name)."""

    def parse(text: str) -> int:
        allowed = f"an int in [{low}, {high}]"
        try:
            value = float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}. Got {text!r} instead") from None
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise argparse.ArgumentTypeError(f"must be {allowed}. Got {text!r} instead")
            value = int(value)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {allowed}. Got {text} instead")
        return value

    parse.__name__ = "count"
    return parse


def check_transitions(n_episodes: int, horizon: int, option: str = "--episodes") -> None:
    """Refuse to sample more than :data:`MAX_TRANSITIONS` transitions (memory), naming ``option``."""
    if n_episodes * horizon > MAX_TRANSITIONS:
        raise InvalidParameterError(
            f"The '{option}' option times the horizon ({horizon}) must be at most {MAX_TRANSITIONS} "
            f"transitions, i.e. '{option}' at most {MAX_TRANSITIONS // horizon}. Got {n_episodes} instead."
        )


# --------------------------------------------------------------------------- environments
def make_env(env_id: str, option: str = "--env") -> Any:
    """``gymnasium.make(env_id)`` (with the ``privrl/...`` ids registered); an unknown, deprecated
    or uninstallable id raises one :class:`InvalidParameterError` naming ``option``."""
    import gymnasium as gym

    import privrl.envs  # noqa: F401  (registers the privrl/... ids)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notices: the error below says it
        try:
            return gym.make(env_id)
        except gym.error.Error as exc:
            why = " ".join(str(exc).split()).replace("`", "'")
            kind = "option" if option.startswith("-") else "argument"
            raise InvalidParameterError(
                f"The '{option}' {kind} must be a registered Gymnasium environment id. Got "
                f"{env_id!r} instead ({why})."
            ) from None


# --------------------------------------------------------------------------- datasets
def load_user_dataset(args: argparse.Namespace, option: str = "--data") -> Any:
    """The dataset of ``--data`` (a ``.npz`` file or a local Minari id), with ``--reward-bounds LO
    HI`` declared for Minari data and, with ``--pad-to-horizon H``, variable-length episodes that
    end in terminal states padded to ``H`` steps (:func:`privrl.data.pad_to_horizon`). Errors name
    the command-line options."""
    from pathlib import Path

    from privrl.data import pad_to_horizon
    from privrl.data.trajectories import TrajectoryDataset

    source = getattr(args, "data", None)
    bounds = getattr(args, "reward_bounds", None)
    if source is None:
        raise InvalidParameterError(f"This command needs '{option}' (a .npz dataset file or a Minari dataset id).")
    path = Path(source)
    if path.suffix == ".npz" or path.is_file():
        if not path.is_file():
            raise InvalidDataError(f"The '{option}' file {source} does not exist.")
        data = TrajectoryDataset.load(path)
        if bounds is not None and tuple(bounds) != data.reward_bounds:
            data = _with_bounds(data, tuple(bounds), source)
    else:
        data = _load_minari(source, bounds, option)
    horizon = getattr(args, "pad_to_horizon", None)
    if horizon is not None:
        longest = int(data.episode_lengths.max())
        if longest > horizon:
            raise InvalidParameterError(
                f"The '--pad-to-horizon' option must be at least the length of the longest episode "
                f"of '{option}' {source}. Got {horizon} instead."
            )
        try:
            data = pad_to_horizon(data, horizon)
        except InvalidDataError as exc:
            raise InvalidDataError(f"'--pad-to-horizon {horizon}' cannot pad {source}: {exc}") from None
    return data


def _with_bounds(data: Any, bounds: tuple[float, float], source: str) -> Any:
    try:
        return data.with_reward_bounds(bounds)
    except InvalidDataError:
        raise InvalidDataError(
            f"The rewards of {source} do not all lie inside '--reward-bounds {bounds[0]:g} {bounds[1]:g}': "
            "declare public bounds that hold for every possible reward (never bounds read off the data)."
        ) from None
    except InvalidParameterError:
        raise InvalidParameterError(
            f"The '--reward-bounds' option must be two finite numbers LO <= HI. Got {bounds} instead."
        ) from None


def _load_minari(source: str, bounds: Any, option: str) -> Any:
    try:
        from privrl.data.minari_io import MinariNotFoundError, from_minari
    except ImportError:  # pragma: no cover - minari is an extra
        raise InvalidDataError(
            f"The '{option}' option {source!r} is not a .npz file, and reading Minari dataset ids needs "
            "the 'minari' extra (pip install 'privrl[minari]')."
        ) from None
    kwargs = {} if bounds is None else {"reward_bounds": tuple(bounds)}
    try:
        return from_minari(source, **kwargs)
    except MinariNotFoundError:
        raise InvalidDataError(
            f"The '{option}' option {source!r} is neither a .npz file nor a local Minari dataset: "
            f"download it with the Minari command line ('minari download {source}') or give a .npz file."
        ) from None
    except InvalidParameterError as exc:
        if "reward_bounds" not in str(exc):
            raise
        if bounds is not None:
            raise InvalidParameterError(
                f"The '--reward-bounds' option must be two finite numbers LO <= HI. Got {list(bounds)} instead."
            ) from None
        raise InvalidParameterError(
            f"The Minari dataset {source!r} was not written by privrl and declares no reward bounds: "
            "give '--reward-bounds LO HI', public bounds that hold for every reward of the task."
        ) from None
    except InvalidDataError as exc:
        if "reward_bounds" in str(exc) and bounds is not None:
            raise InvalidDataError(
                f"The rewards of Minari dataset {source!r} do not all lie inside '--reward-bounds "
                f"{bounds[0]:g} {bounds[1]:g}': declare public bounds that hold for every possible "
                "reward (never bounds read off the data)."
            ) from None
        raise
