"""``privrl fit ALGORITHM``: one command per algorithm, registered by the algorithm's family package.

A :class:`FitCommand` adds its options to an argparse sub-parser and runs on the parsed
arguments, returning a :class:`FitOutput` (the fitted estimator, its arrays and summary, and the
public facts its certificate records); ``privrl fit`` then builds the certificate in one call
(:func:`privrl.certificate.make_certificate`, with the input fingerprints) and writes the result.

A command declares what it accepts, so that its help page lists exactly that and anything else
is refused with one line: ``sources`` (``--data`` and/or ``--env``), ``budget`` (``"any"``:
``--epsilon [--delta]`` or ``--rho``; ``"epsilon"``: ``--epsilon [--delta]`` only; ``"none"``: a
non-private algorithm, which takes no budget) and ``estimator`` (the class whose declared
parameters, :attr:`privrl.base.Estimator.params`, become one ``--flag`` each, minus ``exclude``).

Estimator options come from the declaration, never from a hand-written copy:
:func:`add_estimator_options` adds them (help from ``Param.help`` and ``Param.describe()``),
:func:`estimator_params` reads them back as constructor keywords, :func:`build_estimator` builds
and validates the estimator (with ``args.budget`` when it declares ``budget``), and
:func:`option_error` turns the estimator's one-line error ("The 'lam' parameter of DPVAPVI must
be ...") into one naming the option ("The '--lam' option must be ..."); ``privrl fit`` applies it
to every command. The other helpers turn user input into objects with errors that name
command-line options, never Python keywords: :func:`count_type` (bounded counts),
:func:`make_env` (Gymnasium ids) and :func:`load_user_dataset` (``--data`` with
``--reward-bounds``, ``--truncate-to-horizon`` and ``--pad-to-horizon``).
"""

from __future__ import annotations

import argparse
import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from privrl import registry as _registry
from privrl.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:
    from privrl._params import Param
    from privrl.base import Estimator
    from privrl.data import TrajectoryDataset


__all__ = ["FitCommand", "FitOutput", "register_fit", "all_fit_commands", "get_fit_command",
           "BUDGET_KINDS", "MAX_EPISODES", "MAX_TRANSITIONS", "count_type", "make_env",
           "load_user_dataset", "check_transitions", "estimator_options", "add_estimator_options",
           "estimator_params", "build_estimator", "option_error", "OPTIONS_DEST"]

#: what a command accepts as a budget
BUDGET_KINDS = ("any", "epsilon", "none")
#: the largest ``--episodes`` any command accepts
MAX_EPISODES = 10**7
#: the largest number of transitions (episodes × horizon) a command samples or reads into memory
MAX_TRANSITIONS = 10**8


@dataclass
class FitOutput:
    """What a fit command returns. ``estimator`` is the fitted estimator, whose certificate
    ``privrl fit`` makes (:func:`privrl.certificate.make_certificate`) with ``extra`` (public facts:
    what defaults resolved to), ``mechanism`` (the noise chosen, when the estimator chose it) and
    ``note``; ``arrays`` are saved to ``OUT/result.npz``, ``summary`` to ``OUT/result.json``."""

    estimator: Estimator
    arrays: dict[str, object] = field(default_factory=dict)
    summary: dict[str, object] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)
    mechanism: str | None = None
    note: str | None = None


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
    estimator: type | None = None
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.sources or set(self.sources) - {"data", "env"}:
            raise ValueError(f"FitCommand {self.name!r}: sources must be a non-empty subset of ('data', 'env')")
        if self.budget not in BUDGET_KINDS:
            raise ValueError(f"FitCommand {self.name!r}: budget must be one of {BUDGET_KINDS}")
        object.__setattr__(self, "exclude", tuple(self.exclude))
        if self.exclude and self.estimator is None:
            raise ValueError(f"FitCommand {self.name!r}: exclude needs an estimator")
        if self.estimator is not None:
            estimator_options(self.estimator, exclude=self.exclude)  # unknown names fail at registration

    @property
    def budget_options(self) -> str:
        """The budget options this command accepts, as named in messages."""
        return {"any": "--epsilon/--delta/--rho", "epsilon": "--epsilon/--delta", "none": "none"}[self.budget]


def register_fit(command: FitCommand) -> FitCommand:
    """Register ``command`` under its name (kind ``"fit"`` of :mod:`privrl.registry`; a later
    registration of the same name replaces it, so a plugin can override a command)."""
    return _registry.register("fit", command.name, command, replace=True, stacklevel=2)


def all_fit_commands() -> dict[str, FitCommand]:
    """Every registered fit command, sorted by name (the modules of
    :func:`privrl.registry.modules` are imported first; one that fails to import is an error)."""
    return dict(sorted(_registry.entries("fit").items()))


def get_fit_command(name: str) -> FitCommand:
    """The fit command ``name``; an unknown name is a one-line error listing the known ones."""
    return _registry.get("fit", name)


# --------------------------------------------------------------------------- estimator options
#: ``args`` attribute (set by :func:`add_estimator_options`) mapping each estimator class to the
#: names of its parameters that are options of the command
OPTIONS_DEST = "estimator_options"
_NOT_OPTIONS = ("budget", "array", "object")   # the command supplies these (--epsilon..., --data, --env)


def estimator_options(estimator: type, *, exclude: Sequence[str] = ()) -> list[Param]:
    """The declared parameters (:class:`~privrl._params.Param`) of ``estimator`` that are options:
    all of ``estimator.params`` except kinds ``budget``/``array``/``object``, ``cli=False`` and the
    names in ``exclude``. An ``exclude`` name that is not declared is a ``ValueError`` (a typo
    would otherwise add the option silently)."""
    declared = tuple(getattr(estimator, "params", ()))
    if not declared:
        raise ValueError(f"{getattr(estimator, '__name__', estimator)!r} declares no parameters "
                         "(annotated fields: name: type = param(...))")
    unknown = sorted(set(exclude) - {p.name for p in declared})
    if unknown:
        raise ValueError(f"exclude names {unknown}, which {estimator.__name__} does not declare; declared: "
                         f"{[p.name for p in declared]}")
    return [p for p in declared if p.name not in set(exclude) and p.kind not in _NOT_OPTIONS
            and p.cli_option() is not None]


def _cli_describe(p: Param) -> str:
    """``Param.describe()`` without the "or None" a command line cannot express (omit the option)."""
    if p.kind == "bool":
        return "true or false"
    text = p.describe()
    return text[: -len(" or None")] if p.none_ok and text.endswith(" or None") else text


def _option_help(p: Param) -> str:
    default = "required" if p.required else f"default {p.default!r}"
    text = f"{p.help} ({_cli_describe(p)}; {default})" if p.help else f"{_cli_describe(p)}; {default}"
    return text.replace("%", "%%")  # argparse formats help with %


def _bool_type(parse: Callable[[str], bool]) -> Callable[[str], bool]:
    def parse_bool(text: str) -> bool:
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}") from None
    return parse_bool


def add_estimator_options(parser: argparse.ArgumentParser, estimator: type, *,
                          exclude: Sequence[str] = ()) -> list[Param]:
    """Add one ``--flag`` per option parameter of ``estimator`` (:func:`estimator_options`), in a
    group of their own; return those parameters.

    Each option is ``Param.cli_option()`` (the declared default, choices and number parsing) with
    help from ``Param.help`` and ``Param.describe()``; a bool is ``--flag [true|false]`` (the bare
    flag means true). Values are validated by the estimator (:func:`build_estimator`), whose
    errors :func:`option_error` words with the flag. The parameters added are recorded in
    ``args.estimator_options`` (:data:`OPTIONS_DEST`) for :func:`estimator_params`.
    """
    params = estimator_options(estimator, exclude=exclude)
    taken = [p.flag for p in params if p.flag in parser._option_string_actions]
    if taken:   # checked before anything is added: a failed call leaves the parser as it was
        raise ValueError(f"{', '.join(taken)} of {estimator.__name__} clash with options the command adds "
                         "itself: name them in exclude")
    group = parser.add_argument_group(
        f"parameters of {estimator.__name__}",
        f"declared in {estimator.__module__}.{estimator.__name__}.params; validated when the estimator is built")
    for p in params:
        kwargs = dict(p.cli_option() or {})   # never None: estimator_options keeps CLI parameters only
        kwargs["help"] = _option_help(p)
        if p.kind == "bool":
            kwargs.update(nargs="?", const=True, type=_bool_type(kwargs["type"]))
        group.add_argument(p.flag, **kwargs)
    recorded = dict(parser.get_default(OPTIONS_DEST) or {})
    recorded[estimator] = tuple(p.name for p in params)
    parser.set_defaults(**{OPTIONS_DEST: recorded})
    return params


def estimator_params(args: argparse.Namespace, estimator: type) -> dict[str, object]:
    """Constructor keywords from the parsed options of ``estimator``: every option parameter, the
    user's value or the declared default (so the estimator, and its certificate's ``params``,
    carry the effective value of each)."""
    recorded = getattr(args, OPTIONS_DEST, None) or {}
    if estimator not in recorded:
        raise ValueError(f"the options of {estimator.__name__} were not added to this command: use "
                         "FitCommand(estimator=...) or add_estimator_options")
    return {name: getattr(args, name) for name in recorded[estimator]}


def build_estimator(args: argparse.Namespace, estimator: type, **given: Any) -> Any:
    """``estimator(**estimator_params(args, estimator), **given)`` — with ``budget=args.budget``
    when it declares a budget and ``given`` has none — validated at once (``_validated()``), so a
    bad option fails before any data are read; the error names the parameter, and ``privrl fit``
    words it with the option (:func:`option_error`)."""
    kwargs = estimator_params(args, estimator)
    if "budget" in {p.name for p in getattr(estimator, "params", ())} and "budget" not in given:
        kwargs["budget"] = args.budget
    kwargs.update(given)
    est = estimator(**kwargs)
    est._validated()
    return est


_PARAM_MESSAGE = re.compile(r"The '(?P<name>[A-Za-z_]\w*)' parameter of (?P<owner>[A-Za-z_]\w*)(?:\.\w+)* "
                            r"(?P<rest>.*)", re.DOTALL)


def option_error(exc: InvalidParameterError, args: argparse.Namespace,
                 budget_options: str = "--epsilon/--delta/--rho") -> InvalidParameterError:
    """``exc`` worded for the command line: "The 'lam' parameter of DPVAPVI must be a float in
    (0.0, inf) or None. Got -1.0 instead." becomes "The '--lam' option must be a float in (0.0,
    inf). Got -1.0 instead." when ``--lam`` is an option of DPVAPVI in ``args``; an error about the
    ``budget`` parameter names ``budget_options``, and one about a declared parameter the command
    supplies from its own option of the same name (``args.env`` for ``env``, ``args.obs_low`` for
    ``obs_low``) names that option, as does one about a fit argument given by an option of its name
    (``--reward FILE`` for ``reward``). Other errors are returned unchanged."""
    match = _PARAM_MESSAGE.fullmatch(str(exc))
    if match is None:
        return exc
    name, owner, rest = match["name"], match["owner"], match["rest"]
    for estimator, names in (getattr(args, OPTIONS_DEST, None) or {}).items():
        if estimator.__name__ != owner:
            continue
        if name in names:
            p = estimator.param(name)
            rest = rest.replace(p.describe(), _cli_describe(p), 1)
            return InvalidParameterError(f"The '{p.flag}' option {rest}")
        if name == "budget" and any(p.name == "budget" for p in estimator.params):
            return InvalidParameterError(f"The budget ({budget_options}) {rest}")
        declared = name in {p.name for p in estimator.params}
        fit = getattr(estimator, "fit", None)
        given = getattr(args, name, None) is not None
        fit_argument = given and fit is not None and name in inspect.signature(fit).parameters
        if declared and hasattr(args, name) or fit_argument:
            # a declared parameter or a fit argument (--reward, --features FILE) the command
            # supplies from its own option of that name (--env, ...)
            return InvalidParameterError(f"The '--{name.replace('_', '-')}' option {rest}")
    return exc


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
    # here, not at the top: Gymnasium loads only for --env (privrl --help stays fast)
    from privrl.envs.registration import make_registered

    kind = "option" if option.startswith("-") else "argument"
    return make_registered(env_id, lambda why: InvalidParameterError(
        f"The '{option}' {kind} must be a registered Gymnasium environment id. Got {env_id!r} instead ({why})."),
        quiet=True)   # deprecation notices: the error says it


# --------------------------------------------------------------------------- datasets
def load_user_dataset(args: argparse.Namespace, option: str = "--data") -> TrajectoryDataset:
    """The dataset of ``--data`` (a ``.npz`` file or a local Minari id), with ``--reward-bounds LO
    HI`` declared for Minari data, with ``--truncate-to-horizon H`` episodes longer than ``H`` cut
    at ``H`` (:func:`privrl.data.truncate_to_horizon`) and then, with ``--pad-to-horizon H``,
    variable-length episodes that end in terminal states padded to ``H`` steps
    (:func:`privrl.data.pad_to_horizon`). Errors name the command-line options."""
    from pathlib import Path

    # here, not at the top: privrl.data loads only when a command reads --data (privrl --help stays fast)
    from privrl.data import TrajectoryDataset, pad_to_horizon, truncate_to_horizon

    source = getattr(args, "data", None)
    bounds = getattr(args, "reward_bounds", None)
    if source is None:
        raise InvalidParameterError(f"This command needs '{option}' (a .npz dataset file or a Minari dataset id).")
    path = Path(source)
    if path.is_dir():
        raise InvalidDataError(f"The '{option}' option {source!r} is a directory, not a dataset: give a .npz "
                               "dataset file (privrl.data format) or a local Minari dataset id.")
    if path.suffix == ".npz" or path.is_file():
        if not path.is_file():
            raise InvalidDataError(f"The '{option}' file {source} does not exist.")
        data = TrajectoryDataset.load(path)
        if bounds is not None and tuple(bounds) != data.reward_bounds:
            data = _with_bounds(data, tuple(bounds), source)
    else:
        data = _load_minari(source, bounds, option)
    cut = getattr(args, "truncate_to_horizon", None)
    if cut is not None:
        data = truncate_to_horizon(data, cut)
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


def _with_bounds(data: TrajectoryDataset, bounds: tuple[float, float], source: str) -> TrajectoryDataset:
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


def _load_minari(source: str, bounds: Sequence[float] | None, option: str) -> TrajectoryDataset:
    from privrl.data.minari_io import MinariNotFoundError, from_minari

    kwargs: dict[str, Any] = {} if bounds is None else {"reward_bounds": tuple(bounds)}
    try:
        return from_minari(source, **kwargs)
    except ImportError:  # Minari itself is imported on first use, and is an extra
        raise InvalidDataError(
            f"The '{option}' option {source!r} is not a .npz file, and reading Minari dataset ids needs "
            "the 'minari' extra (pip install 'privrl[minari]')."
        ) from None
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
