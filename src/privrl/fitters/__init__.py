"""``privrl fit ALGORITHM``: one command per algorithm, registered by the algorithm's paper module.

A :class:`FitCommand` adds its options to an argparse sub-parser and runs on the parsed
arguments, returning a :class:`FitOutput`; the command line writes the fitted result and the
privacy certificate (:func:`privrl.certificate.make_certificate`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from privrl.errors import InvalidParameterError

__all__ = ["FitCommand", "FitOutput", "register_fit", "all_fit_commands", "get_fit_command"]

_MODULES = (
    "privrl.fitters.policy_evaluation",
    "privrl.fitters.offline",
    "privrl.fitters.linear_mixture",
    "privrl.fitters.q_learning",
)


@dataclass
class FitOutput:
    """``arrays`` are saved to ``OUT/result.npz``; ``summary`` to ``OUT/result.json``;
    ``certificate`` to ``OUT/certificate.json``."""

    certificate: dict[str, Any]
    arrays: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FitCommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], FitOutput]


_REGISTRY: dict[str, FitCommand] = {}
_loaded = False


def register_fit(command: FitCommand) -> FitCommand:
    _REGISTRY[command.name] = command
    return command


def all_fit_commands() -> dict[str, FitCommand]:
    global _loaded
    if not _loaded:
        _loaded = True
        for name in _MODULES:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:
                    raise
    return dict(sorted(_REGISTRY.items()))


def get_fit_command(name: str) -> FitCommand:
    cmds = all_fit_commands()
    if name not in cmds:
        raise InvalidParameterError(f"Unknown algorithm {name!r} for 'privrl fit'. Known: {', '.join(cmds)}.")
    return cmds[name]
