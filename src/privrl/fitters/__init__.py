"""``privrl fit ALGORITHM``: one command per algorithm, registered by the algorithm's paper module.

A :class:`FitCommand` adds its options to an argparse sub-parser and runs on the parsed
arguments, returning a :class:`FitOutput`; the command line writes the fitted result and the
privacy certificate (:func:`privrl.certificate.make_certificate`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from privrl import registry as _registry

__all__ = ["FitCommand", "FitOutput", "register_fit", "all_fit_commands", "get_fit_command"]


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
