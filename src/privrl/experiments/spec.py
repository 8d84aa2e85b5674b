"""Experiments as data (ARCHITECTURE.md §6).

An :class:`Experiment` names a paper figure and says how to run one *setting* (a dict of
JSON-serialisable parameters) for one *seed*. The runner (:mod:`privrl.experiments.runner`) does the
rest: seeds, parallelism, atomic result files, resume, manifests.

Run functions must be module-level (picklable) and take ``(params, ctx)``:

* ``ctx.rng`` — a generator private to this run, derived from (experiment id, setting index, seed);
* ``ctx.shared_rng(name)`` — a generator derived from (experiment id, seed, name) only, identical
  across the settings of one seed: use it for the data, so every algorithm and every privacy
  level of a seed sees the same batches.

An experiment may also give ``run_batch(params_list, ctxs) -> results`` and ``batch_key(params,
seed)``: the runner then hands the runs with equal keys to ``run_batch`` together (to share work,
e.g. one vectorised computation over seeds and settings). ``run_batch`` must return, for each run,
exactly what ``run`` returns for it; the experiment's tests check this. ``compile_key(params)``
names the compiled (numba) kernels a run needs: the local pool starts the first group of runs of a
key alone and the key's others once it finished, so that each kernel compiles in one worker
(:mod:`privrl.experiments.scheduling`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the command line reads SCALES and BACKENDS without NumPy
    import numpy as np
    import pandas as pd

    from privrl.privacy.accounting import Ledger
    from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["SCALES", "BACKENDS", "VERDICTS", "SOURCES", "Claim", "Experiment", "RunContext", "RunResult"]

#: the scales of every experiment: smoke (seconds), quick (the demo), paper (the paper's full scale)
SCALES = ("smoke", "quick", "paper")
#: where a sweep runs: a local process pool or a Ray cluster (:mod:`privrl.experiments.runner`)
BACKENDS = ("local", "ray")

#: parameters that are the x-axis of a curve unless an experiment says otherwise (``curve_x``)
DEFAULT_CURVE_X = ("K", "n", "m", "batch_size", "n_episodes")


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
        import numpy as np  # start-up time: spec is read by `privrl --help`

        from privrl._rng import derive_seed

        return np.random.default_rng(derive_seed(self.experiment_id, "shared", name, self.seed))


@dataclass
class RunResult:
    """What one run returns.

    ``rows`` is tidy: one dict per (step, metric) with at least ``metric`` and ``value``; ``step``
    and label columns (``algorithm``, ``K``, ``sigma``...) as needed. ``ledger`` is ``None`` for a
    non-private run. The manifest's ``epsilon_spent`` is the ledger's ε at
    :func:`~privrl.privacy.budget.reporting_delta` of ``budget`` (the one rule).

    A run that fitted an estimator builds its result with :meth:`from_estimator` (or
    :meth:`from_estimators`), which takes the privacy unit, neighbouring relation, budget,
    calibration and ledger from the estimator rather than restating them.
    """

    rows: list[dict[str, object]]
    ledger: Ledger | None = None
    budget: PrivacyBudget | None = None
    privacy_unit: PrivacyUnit | None = None
    neighboring: Neighboring | None = None
    calibration: str = "sound"
    accountant: str = "auto"
    extra: dict[str, object] = field(default_factory=dict)

    @classmethod
    def from_estimator(cls, estimator: Any, rows: list[dict[str, Any]], *, claim: bool | None = None,
                       calibration: str | None = None, accountant: str = "auto",
                       extra: dict[str, object] | None = None) -> RunResult:
        """The result of a run that fitted ``estimator``: its privacy unit and neighbouring relation
        and, when the run claims an ε (``claim``, default ``estimator.is_private``), its ledger and
        budget. ``claim=False`` records neither (a non-private baseline, a run with given noise
        that claims no ε, a refused certification: then ``estimator`` may be the class).
        ``calibration`` defaults to the estimator's own when it claims an ε, else ``"none"``."""
        claim = bool(estimator.is_private) if claim is None else claim
        if calibration is None:
            calibration = str(getattr(estimator, "calibration", "sound")) if claim else "none"
        return cls(rows=rows, ledger=estimator.privacy_ledger_ if claim else None,
                   budget=getattr(estimator, "budget", None) if claim else None,
                   privacy_unit=estimator.privacy_unit, neighboring=estimator.neighboring,
                   calibration=calibration, accountant=accountant, extra=dict(extra or {}))

    @classmethod
    def from_estimators(cls, estimators: Sequence[Any], rows: list[dict[str, Any]], **kwargs: Any) -> RunResult:
        """The result of a run whose points are separate fits, each one release on its own batch
        (e.g. nested batches of growing size): every estimator must carry the same claim (privacy
        unit, neighbouring relation, budget, calibration and ledger), which the run reports — the ε
        of one point, not a composition over the points. A ``ValueError`` when they differ.
        ``kwargs`` as :meth:`from_estimator`."""
        if not estimators:
            raise ValueError("from_estimators needs at least one fitted estimator")
        results = [cls.from_estimator(est, rows, **kwargs) for est in estimators]
        first = results[0]
        for est, res in zip(estimators[1:], results[1:]):
            if (res.ledger, res.budget, res.privacy_unit, res.neighboring, res.calibration) != \
                    (first.ledger, first.budget, first.privacy_unit, first.neighboring, first.calibration):
                raise ValueError(f"{type(est).__name__} makes a different privacy claim from "
                                 f"{type(estimators[0]).__name__}: the points of one run must share one claim")
        return first


#: the verdicts a claim can get
VERDICTS = ("holds", "fails", "undecided")
#: whose claim it is: what a paper states, or what privrl states about its own design
SOURCES = ("paper", "privrl")

_FROM_SUPPORTED = {True: "holds", False: "fails", None: "undecided"}
_TO_SUPPORTED = {"holds": True, "fails": False, "undecided": None}


@dataclass(frozen=True)
class Claim:
    """A claim, what was measured, and the verdict of the measurement.

    ``source`` says whose claim it is: ``"paper"`` — what a paper states, with the paper's own
    words (``quote``) and where it says them (``where``: section, figure, theorem), both required;
    or ``"privrl"`` (the default) — what privrl states about its own design (tight against sound
    calibration, frontiers, utility of its defaults, agreement with the authors' code). The report
    lists the two in separate tables.

    ``verdict`` is ``"holds"``, ``"fails"`` or ``"undecided"``; ``reason`` says why an undecided
    claim cannot be decided ("one seed", "best λ on the grid boundary", "input perturbation no
    better than random play (10.86)", "needs paper scale"...). The older
    ``supported=True/False/None`` still works and maps to holds/fails/undecided; the two always
    agree after construction.

    The report's tables read ``paper_value`` (what the paper reports), ``paper_calibration_value``
    and ``tight_value`` (what privrl measures under the paper's and under the tight calibration);
    empty strings are blank cells. ``headline=True`` puts a claim in the README's short tables.
    ``robustness`` is empty when the verdict survives every perturbed rule setting, else says which
    settings change it to what ("fragile: …", :mod:`privrl.experiments.claimsets`).
    """

    claim: str
    measured: str
    supported: bool | None = None
    verdict: str | None = None
    reason: str = ""
    paper_value: str = ""
    paper_calibration_value: str = ""
    tight_value: str = ""
    headline: bool = False
    source: str = "privrl"
    quote: str = ""
    where: str = ""
    robustness: str = ""

    def __post_init__(self) -> None:
        # start-up time: _validation loads NumPy (privrl --help reads this module)
        from privrl._validation import check_option, param_error

        if self.verdict is None:
            if self.supported not in _FROM_SUPPORTED:
                check_option(self.supported, "supported", (True, False, None), owner="Claim")
            object.__setattr__(self, "verdict", _FROM_SUPPORTED[self.supported])
        else:
            check_option(self.verdict, "verdict", VERDICTS, owner="Claim")
            implied = _TO_SUPPORTED[self.verdict]
            if self.supported is not None and self.supported is not implied:
                raise param_error("supported", "Claim", f"{implied!r} (or None) for verdict "
                                  f"{self.verdict!r}", self.supported)
            object.__setattr__(self, "supported", implied)
        check_option(self.source, "source", SOURCES, owner="Claim")
        if self.source == "paper":
            for name in ("quote", "where"):
                if not str(getattr(self, name)).strip():
                    raise param_error(name, "Claim", "the paper's words and their location for a paper "
                                      "claim (source='paper')", getattr(self, name))

    @property
    def has_values(self) -> bool:
        """True when the claim carries a value for the report's value columns."""
        return bool(self.paper_value or self.paper_calibration_value or self.tight_value)


@dataclass(frozen=True)
class Experiment:
    """One paper figure (or table) as data.

    ``deviations`` are the deviations from the paper at every scale; ``scale_deviations(scale)``
    adds the text that depends on the scale (e.g. "the batch grid stops at 10⁵ at quick scale").
    A callable given as ``deviations`` is taken as ``scale_deviations`` (backward compatible).
    ``curve_x`` names the parameters that are the x-axis of a curve: settings that differ only in
    them form one curve in the report's privacy table (``None``: :data:`DEFAULT_CURVE_X`).
    ``seeds[scale]`` is the most seeds any setting runs; ``setting_seeds(params, scale)``, when
    given, is one setting's count (at most that): a setting behind a close comparison can run more
    seeds than the others (:meth:`seeds_for`).
    """

    id: str
    paper: str
    figure: str
    description: str
    settings: Callable[[str], Sequence[Mapping[str, Any]]]
    seeds: Mapping[str, int]
    run: Callable[[Mapping[str, Any], RunContext], RunResult]
    plot: Callable[[pd.DataFrame, Path], list[Path]] | None = None
    claims: Callable[[pd.DataFrame], list[Claim]] | None = None
    deviations: tuple[str, ...] | Callable[[str], Sequence[str]] = ()
    scale_deviations: Callable[[str], Sequence[str]] | None = None
    curve_x: tuple[str, ...] | None = None
    #: parameters a setting may take besides the keys of its grid (test or tuning knobs), each with
    #: an example value of its type: ``privrl run --set KEY=JSON`` accepts the grid's keys and these
    extra_params: Mapping[str, object] = field(default_factory=dict)
    run_batch: Callable[[Sequence[Mapping[str, object]], Sequence[RunContext]], Sequence[RunResult]] | None = None
    batch_key: Callable[[Mapping[str, Any], int], object] | None = None
    #: the compiled kernels a run needs (runs with equal keys use the same ones; None: none): the
    #: local pool compiles each key in one worker first (:mod:`privrl.experiments.scheduling`)
    compile_key: Callable[[Mapping[str, object]], Hashable | None] | None = None
    #: a compile key's warm-ups (module-level functions each compiling part of its kernels), run first
    warm_ups: Callable[[Hashable], Sequence[Callable[[], object]]] | None = None
    setting_seeds: Callable[[Mapping[str, object], str], int] | None = None
    #: False for an experiment that is not a paper figure (the benchmark's runs): the runner finds
    #: it, ``privrl list``, ``reproduce`` and the report do not
    listed: bool = True

    def __post_init__(self) -> None:
        if callable(self.deviations):
            if self.scale_deviations is not None:
                # start-up time: _validation loads NumPy (privrl --help reads this module)
                from privrl._validation import param_error

                raise param_error("deviations", f"experiment {self.id}",
                                  "a tuple of strings when scale_deviations is given", "a callable")
            object.__setattr__(self, "scale_deviations", self.deviations)
            object.__setattr__(self, "deviations", ())
        else:
            object.__setattr__(self, "deviations", tuple(self.deviations))

    def deviations_for(self, scale: str | None) -> tuple[str, ...]:
        """Every deviation from the paper at ``scale`` (``None``: the scale-independent ones)."""
        extra: Sequence[str] = ()
        if self.scale_deviations is not None and scale is not None:
            extra = self.scale_deviations(scale)
        static = self.deviations if isinstance(self.deviations, tuple) else ()  # a tuple after __post_init__
        return static + tuple(str(d) for d in extra)

    def curve_params(self) -> tuple[str, ...]:
        """The x-axis parameters of this experiment's curves (see ``curve_x``)."""
        return DEFAULT_CURVE_X if self.curve_x is None else tuple(self.curve_x)

    def settings_for(self, scale: str) -> list[dict[str, object]]:
        if scale not in SCALES:
            # start-up time: _validation loads NumPy (privrl --help reads this module)
            from privrl._validation import check_option
            check_option(scale, "scale", SCALES, owner=f"experiment {self.id}")
        return [dict(s) for s in self.settings(scale)]

    def n_seeds(self, scale: str) -> int:
        """The most seeds a setting runs at ``scale`` (seeds 0 .. n - 1)."""
        return int(self.seeds[scale])

    def seeds_for(self, params: Mapping[str, object], scale: str) -> int:
        """The seeds one setting runs at ``scale`` (seeds 0 .. n - 1): ``setting_seeds`` when
        given, never more than :meth:`n_seeds`."""
        full = self.n_seeds(scale)
        if self.setting_seeds is None:
            return full
        return min(full, int(self.setting_seeds(params, scale)))
