"""The registry of paper experiments: thin calls into :mod:`privrl.registry` (kind ``"experiment"``).

Each paper module calls :func:`register` at import; the modules are named by the families' records
(:func:`privrl.registry.modules`) and imported on first use (a module that fails to import is an
error naming it).
"""

from __future__ import annotations

from privrl import registry as _registry
from privrl.experiments.spec import Experiment

__all__ = ["register", "get_experiment", "all_experiments"]


def register(experiment: Experiment) -> Experiment:
    """Register ``experiment`` under its id (a different experiment under a taken id is an error)."""
    return _registry.register("experiment", experiment.id, experiment, stacklevel=2)


def all_experiments() -> dict[str, Experiment]:
    """Every registered paper experiment, sorted by id (not the unlisted ones: the benchmark's)."""
    return dict(sorted((k, e) for k, e in _registry.entries("experiment").items()
                       if getattr(e, "listed", True)))


def get_experiment(experiment_id: str) -> Experiment:
    """The experiment ``experiment_id``; an unknown id is a one-line error listing the known ones."""
    return _registry.get("experiment", experiment_id)
