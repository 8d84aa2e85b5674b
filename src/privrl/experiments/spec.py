"""Experiments as data (issue #3 §1, ARCHITECTURE.md §6).

An :class:`Experiment` names a paper figure and says how to run one *setting* (a dict of
JSON-serialisable parameters) for one *seed*. The runner (:mod:`privrl.experiments.runner`) does the
rest: seeds, parallelism, atomic result files, resume, manifests.

Run functions must be module-level (picklable) and take ``(params, ctx)``:

* ``ctx.rng`` — a generator private to this run, derived from (experiment id, setting index, seed);
* ``ctx.shared_rng(name)`` — a generator derived from (experiment id, seed, name) only, identical
  across the settings of one seed: use it for the data, so every algorithm and every privacy
  level of a seed sees the same batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privrl._rng import derive_seed
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["SCALES", "Claim", "Experiment", "RunContext", "RunResult"]

SCALES = ("smoke", "quick", "paper")


@dataclass
class RunContext:
    """What a run function may use besides its parameters."""

    experiment_id: str
    setting_index: int
    seed: int
    scale: str
    rng: np.random.Generator

    def shared_rng(self, name: str) -> np.random.Generator:
        """A generator shared by every setting of this seed (e.g. ``"data"``)."""
        return np.random.default_rng(derive_seed(self.experiment_id, "shared", name, self.seed))


@dataclass
class RunResult:
    """What one run returns.

    ``rows`` is tidy: one dict per (step, metric) with at least ``metric`` and ``value``; ``step``
    and label columns (``algorithm``, ``K``, ``sigma``...) as needed. ``ledger`` is ``None`` for a
    non-private run; ``delta`` is the δ at which the manifest's ``epsilon_spent`` is computed
    (defaults to the budget's δ, or 1e-5 for zCDP budgets).
    """

    rows: list[dict[str, Any]]
    ledger: Ledger | None = None
    budget: PrivacyBudget | None = None
    privacy_unit: PrivacyUnit | None = None
    neighboring: Neighboring | None = None
    calibration: str = "sound"
    accountant: str = "auto"
    delta: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, what was measured, and whether the measurement supports it."""

    claim: str
    measured: str
    supported: bool | None = None


@dataclass(frozen=True)
class Experiment:
    """One paper figure (or table) as data."""

    id: str
    paper: str
    figure: str
    description: str
    settings: Callable[[str], Sequence[Mapping[str, Any]]]
    seeds: Mapping[str, int]
    run: Callable[[Mapping[str, Any], RunContext], RunResult]
    plot: Callable[[Any, Path], list[Path]] | None = None
    claims: Callable[[Any], list[Claim]] | None = None
    deviations: tuple[str, ...] = ()
    #: parameters a setting may take besides the keys of its grid (test or tuning knobs), each with
    #: an example value of its type: ``privrl run --set KEY=JSON`` accepts the grid's keys and these
    extra_params: Mapping[str, Any] = field(default_factory=dict)

    def settings_for(self, scale: str) -> list[dict[str, Any]]:
        if scale not in SCALES:
            from privrl._validation import check_option
            check_option(scale, "scale", SCALES, owner=f"experiment {self.id}")
        return [dict(s) for s in self.settings(scale)]

    def n_seeds(self, scale: str) -> int:
        return int(self.seeds[scale])
