"""The registry of paper experiments. Each paper module calls :func:`register` at import."""

from __future__ import annotations

import importlib

from privrl.errors import InvalidParameterError
from privrl.experiments.spec import Experiment

__all__ = ["register", "get_experiment", "all_experiments", "EXPECTED_IDS"]

#: modules that register experiments (imported on first use; a missing module is skipped)
_MODULES = (
    "privrl.experiments.example",
    "privrl.policy_evaluation.experiments",
    "privrl.offline.experiments",
    "privrl.experiments.zhou2022",
    "privrl.experiments.wang2019",
)

#: the ids the algorithm issues register (issue #3 §1)
EXPECTED_IDS = ("balle2016-fig1", "qiao2023-fig1a", "qiao2023-fig1b", "qiao2023-tabular",
                "zhou2022-regret", "wang2019-fig1", "wang2019-fig2a", "wang2019-fig2b")

_REGISTRY: dict[str, Experiment] = {}
_loaded = False


def register(experiment: Experiment) -> Experiment:
    if experiment.id in _REGISTRY and _REGISTRY[experiment.id] is not experiment:
        raise InvalidParameterError(f"Experiment id {experiment.id!r} is registered twice.")
    _REGISTRY[experiment.id] = experiment
    return experiment


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in _MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def all_experiments() -> dict[str, Experiment]:
    _load()
    return dict(sorted(_REGISTRY.items()))


def get_experiment(experiment_id: str) -> Experiment:
    exps = all_experiments()
    if experiment_id not in exps:
        raise InvalidParameterError(
            f"Unknown experiment id {experiment_id!r}. Known ids: {', '.join(exps) or '(none)'}."
        )
    return exps[experiment_id]
