"""The benchmark's declarations: tasks, entries, budgets and what an entry returns.

A :class:`Task` is one problem: a setting (policy evaluation, offline learning, online learning,
continuous control, offline control: offline learning on continuous states evaluated online), a
privacy unit and neighbouring relation, the data sizes of each profile (``quick`` for CI, ``full``
for the leaderboard), a metric, the trivial and non-private references and a deterministic, seeded
builder that draws the data from a public simulator under a declared logging policy. The builder
returns an :class:`Instance`: the :class:`TaskInput` an entry sees
(public parameters and the data, never the true model) and the task's private ``truth`` (the
exact model) that only the task's ``score`` reads.

An :class:`Entry` is one algorithm under one configuration (``dp-apvi``, ``dp-apvi[paper]``,
``apvi``, ``logging-policy``...): ``fit(task_input, budget, rng, noise) -> Fitted`` returns its
:class:`Output` (estimated values, a policy, per-episode regret or an acting function) and,
for a private entry, its estimator or ledger. Budgets are :class:`Budget` labels
(``eps=1``, ``rho=0.1``) turned into a :class:`~privrl.privacy.PrivacyBudget` at the task's δ.

This module imports no family and no NumPy-heavy layer: the command line reads it to parse
``--budgets``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from privrl.errors import InvalidParameterError

if TYPE_CHECKING:  # annotations only
    from types import ModuleType

    import numpy as np

    from privrl.data.trajectories import TrajectoryDataset
    from privrl.deep_offline.continuous_data import ContinuousTransitions
    from privrl.privacy.accounting import Ledger
    from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["SETTINGS", "SETTING_TITLES", "PROFILES", "ROLES", "DEFAULT_BUDGETS", "AUDIT_BUDGET", "AUDIT_TRIALS",
           "PROFILE_BUDGETS", "Budget",
           "parse_budgets", "SWEEP_PREFIX", "SWEEP_SEEDS", "Sweep", "sweep_profile",
           "Metric", "TaskInput", "Instance", "Output", "Fitted", "Task", "Entry", "setting_index", "entry_code"]

#: the five settings of the benchmark (offline-control: offline learning on continuous states, returns
#: evaluated online)
SETTINGS = ("policy-evaluation", "offline-learning", "online-learning", "continuous-control", "offline-control")
#: each setting's title in the leaderboard and its summary
SETTING_TITLES = {"policy-evaluation": "Policy evaluation", "offline-learning": "Offline learning",
                  "online-learning": "Online learning", "continuous-control": "Continuous control",
                  "offline-control": "Offline control (continuous states)"}
#: data-size profiles: ``quick`` (CI, about a minute for the whole suite) and ``full`` (the leaderboard)
PROFILES = ("quick", "full")
#: what an entry is: a private algorithm, a non-private counterpart, or a trivial baseline
ROLES = ("private", "non-private", "trivial")


# --------------------------------------------------------------------------- budgets
@dataclass(frozen=True, order=True)
class Budget:
    """A budget of the grid: ``kind`` ``"eps"`` (an (ε, δ) budget at the task's δ) or ``"rho"``
    (ρ-zCDP), and its value. ``Budget.parse("eps=1")``, ``str(b) == "eps=1"``."""

    kind: str
    value: float

    def __post_init__(self) -> None:
        if self.kind not in ("eps", "rho"):
            raise InvalidParameterError(f"The kind of a benchmark budget must be 'eps' or 'rho'. Got {self.kind!r} "
                                        "instead.")
        if not (isinstance(self.value, (int, float)) and math.isfinite(self.value) and self.value > 0):
            raise InvalidParameterError(f"The value of a benchmark budget must be a finite number > 0. Got "
                                        f"{self.value!r} instead.")
        object.__setattr__(self, "value", float(self.value))

    def __str__(self) -> str:
        return f"{self.kind}={self.value:g}"

    @property
    def label(self) -> str:
        """``ε = 1`` or ``ρ = 0.1`` (for tables and plots)."""
        return f"{'ε' if self.kind == 'eps' else 'ρ'} = {self.value:g}"

    @classmethod
    def parse(cls, text: str) -> Budget:
        """``"eps=1"``, ``"rho=0.1"`` or a bare number (an ε)."""
        raw = str(text).strip().lower().replace("ε", "eps").replace("ρ", "rho")
        kind, sep, value = raw.partition("=")
        if not sep:
            kind, value = "eps", raw
        kind = {"epsilon": "eps", "e": "eps", "r": "rho"}.get(kind.strip(), kind.strip())
        try:
            number = float(value)
        except ValueError:
            raise InvalidParameterError(f"The '--budgets' option takes items such as eps=1, rho=0.1 or 10. Got "
                                        f"{text!r} instead.") from None
        return cls(kind, number)

    def privacy_budget(self, delta: float) -> PrivacyBudget:
        """The :class:`~privrl.privacy.PrivacyBudget` of this grid point at the task's ``delta``."""
        # here, not at the top: the command line's parser reads this module (start-up time)
        from privrl.privacy.budget import PrivacyBudget

        if self.kind == "rho":
            return PrivacyBudget(rho=self.value)
        return PrivacyBudget(epsilon=self.value, delta=float(delta))


def parse_budgets(text: str | Sequence[str] | None, profile: str = "full") -> list[Budget]:
    """``"eps=0.1,eps=1,rho=1"`` (or a list of items) as budgets, in order, without repeats;
    ``None``: the profile's defaults (:data:`PROFILE_BUDGETS`)."""
    if text is None:
        return list(PROFILE_BUDGETS[profile])
    items = text.split(",") if isinstance(text, str) else [t for part in text for t in str(part).split(",")]
    budgets = [Budget.parse(t) for t in items if t.strip()]
    if not budgets:
        raise InvalidParameterError(f"The '--budgets' option needs at least one budget. Got {text!r} instead.")
    return list(dict.fromkeys(budgets))


#: ε ∈ {0.1, 1, 10} (δ = 1/(10 n), the task's) for every private entry; ρ ∈ {0.1, 1} for the entries
#: whose guarantee is (also) ρ-zCDP
DEFAULT_BUDGETS = (Budget("eps", 0.1), Budget("eps", 1.0), Budget("eps", 10.0), Budget("rho", 0.1),
                   Budget("rho", 1.0))
#: the budget at which ``--audit`` audits every private entry: once per (task, entry), at ε = 1 — the
#: audit is of the mechanism's code, which is the same at every budget of the grid
AUDIT_BUDGET = Budget("eps", 1.0)
#: the black-box audit's fits per neighbouring input unless a task declares fewer (a fixed count: the
#: Clopper–Pearson bound is not valid under optional stopping). With N fits per input the evaluation
#: half holds N/2 per input, so ε_lower is at most 3.1 at N = 200 and 2.4 at N = 100 (no error at all
#: on the evaluation half): enough to flag a claim of ε = 1
AUDIT_TRIALS = 200
#: the default budgets of each profile: the quick profile (CI) runs ε = 1 and ρ = 1 only
PROFILE_BUDGETS = {"quick": (Budget("eps", 1.0), Budget("rho", 1.0)), "full": DEFAULT_BUDGETS}


# --------------------------------------------------------------------------- what entries see and return
@dataclass(frozen=True)
class Metric:
    """The task's raw metric: ``name`` (a column of the results), ``label`` (for tables) and its
    direction."""

    name: str
    label: str
    lower_is_better: bool


@dataclass
class TaskInput:
    """What an entry is given: the task's public parameters and its data — never the true model.

    * ``dataset`` — the logged trajectories (policy evaluation, offline learning, offline control), a
      :class:`~privrl.data.TrajectoryDataset` whose every episode is one privacy unit (continuous
      actions: :class:`~privrl.deep_offline.continuous_data.ContinuousTransitions`);
    * ``model`` — online learning: the linear mixture MDP the users come from, with its known
      features (the learner interacts with it episode by episode; one user per episode);
    * ``make_env`` — continuous control: a factory of the Gymnasium environment whose reward
      function is the private input;
    * ``public`` — public, data-independent parameters: ``n_states``, ``n_actions``, ``horizon``,
      ``gamma``, ``reward_bounds``, ``return_bound`` (F_max), ``reward`` (the public reward table
      ``(H, S, A)`` of offline tasks), ``features`` (``(S, A, d)``), ``groups`` (a public map of
      states to groups), ``initial`` (the start distribution), ``n_episodes`` (online K),
      ``n_samples`` (control T);
    * ``n_units`` — the number of privacy units (trajectories, users; 1 reward function) and
      ``delta`` = 1/(10 n) the task's δ.
    """

    task: str
    setting: str
    privacy_unit: PrivacyUnit
    neighboring: Neighboring
    n_units: int
    delta: float
    dataset: TrajectoryDataset | ContinuousTransitions | None = None
    model: Any = None
    make_env: Callable[[], Any] | None = None
    public: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.public[key]

    def get(self, key: str, default: object = None) -> object:
        return self.public.get(key, default)


@dataclass
class Instance:
    """One seed of a task: what entries see (``input``) and what only the score reads (``truth``)."""

    input: TaskInput
    truth: Any
    #: the SHA-256 of the data (:func:`privrl.bench.references.data_hash`), set by the runner's build
    data_hash: str | None = None


@dataclass
class Output:
    """What an entry returns (one field per setting; the audit compares ``release``).

    * policy evaluation — ``values`` (V̂ per state) and/or ``value`` (Ĵ at the start distribution);
    * offline learning — ``policy`` (``(H, S)`` actions or ``(H, S, A)`` probabilities);
    * online learning — ``regret`` (the exact per-episode pseudo-regret a privrl learner computes)
      or ``policies`` (``(K, H, S)`` actions played in each episode; the task computes the regret);
    * continuous control — ``act(observations) -> actions`` (the released greedy policy).

    ``release`` is the released numbers the black-box audit compares between neighbouring inputs
    (e.g. θ̂, Q̂); by default the fields above, flattened.
    """

    values: np.ndarray | None = None
    value: float | None = None
    policy: np.ndarray | None = None
    regret: np.ndarray | None = None
    policies: np.ndarray | None = None
    act: Callable[[np.ndarray], np.ndarray] | None = None
    release: np.ndarray | None = None


@dataclass
class Fitted:
    """An entry's fit: its :class:`Output`, the fitted estimator (or None) and its ledger.

    ``ledger`` is the estimator's ``privacy_ledger_`` (or a plugin's, or one built from its
    declared ``DpEvent``); ``None`` for a non-private or trivial entry. ``notes`` are short texts for
    the leaderboard (e.g. a utility warning the fit raised)."""

    output: Output
    estimator: object = None
    ledger: Ledger | None = None
    privacy_unit: PrivacyUnit | None = None
    neighboring: Neighboring | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- data-size sweeps
#: the profile of one point of a task's data-size sweep is this prefix and its n (``sweep-n1000``)
SWEEP_PREFIX = "sweep-n"
#: seeds per point of a sweep unless the task's :class:`Sweep` says otherwise
SWEEP_SEEDS = 3


@dataclass(frozen=True)
class Sweep:
    """A task's data-size sweep (:mod:`privrl.bench.sweep`): the numbers of privacy units ``n``
    (ascending), the ``seeds`` per size and a ``note`` saying why the sizes or seeds are what they
    are (e.g. why 10⁵ does not fit). Every other size of the task is its ``full`` profile's."""

    n: tuple[int, ...]
    seeds: int = SWEEP_SEEDS
    note: str = ""

    def __post_init__(self) -> None:
        sizes = tuple(int(v) for v in self.n)
        if not sizes or any(v < 1 for v in sizes) or list(sizes) != sorted(set(sizes)):
            raise ValueError(f"Sweep: n must be distinct positive sizes in ascending order, got {self.n!r}")
        if not (isinstance(self.seeds, int) and self.seeds >= 1):
            raise ValueError(f"Sweep: seeds must be an int >= 1, got {self.seeds!r}")
        object.__setattr__(self, "n", sizes)

    @property
    def profiles(self) -> tuple[str, ...]:
        """The profiles of the sweep's points, one per size (:func:`sweep_profile`)."""
        return tuple(sweep_profile(n) for n in self.n)


def sweep_profile(n: int) -> str:
    """The profile of the sweep's point with ``n`` privacy units: ``sweep-n1000``."""
    return f"{SWEEP_PREFIX}{int(n)}"


# --------------------------------------------------------------------------- tasks and entries
@dataclass(frozen=True)
class Task:
    """One benchmark task (module docstring).

    ``sizes[profile]`` holds the task's sizes for ``quick`` and ``full`` (at least ``seeds``; the
    builder reads the rest, e.g. ``n``, ``K``, ``horizon``); ``build(sizes, rng) -> Instance``;
    ``score(truth, output) -> {metric: value}`` (the primary ``metric.name`` and extras);
    ``audit_pair(rng) -> (D, D')`` two neighbouring :class:`TaskInput` of a small instance for the
    black-box audit (``None``: the task's entries are audited through their release targets) and
    ``audit_trials`` the fits per input of that audit (a fixed count, :data:`AUDIT_TRIALS` unless the
    task's refits are slow).
    ``trivial`` and ``reference`` name the entries whose metric is 0 and 100 on the normalised
    scale; ``optimum`` is the metric's value at the optimum when known (``optimum_label`` says
    what it is). ``delta`` overrides the rule δ = 1/(10 n). ``notes`` say where the task departs
    from the paper it comes from (sizes, reformulations). ``dims`` are its public sizes (``S``,
    ``A``, ``H``, ``d``: states, actions, horizon, feature dimension) for the entries' ``applies``.
    ``version`` is the task's version (``chain-v1``, :attr:`versioned_name`): its data and its trivial
    and reference values are frozen per version in :mod:`privrl.bench.references`; a change of the
    data, the metric or a baseline bumps it. ``sweep`` is the task's data-size :class:`Sweep`
    (policy evaluation and offline learning): its points are the profiles ``sweep-nN``
    (:meth:`size`).
    """

    name: str
    title: str
    setting: str
    source: str
    logging_policy: str
    privacy_unit: PrivacyUnit
    neighboring: Neighboring
    metric: Metric
    trivial: str
    reference: str
    sizes: Mapping[str, Mapping[str, int]]
    build: Callable[[Mapping[str, int], np.random.Generator], Instance]
    score: Callable[[Any, Output], dict[str, float]]
    units: str = "trajectories"
    dims: Mapping[str, int] = field(default_factory=dict)
    optimum: float | None = None
    optimum_label: str = ""
    delta: float | None = None
    audit_pair: Callable[[np.random.Generator], tuple[TaskInput, TaskInput]] | None = None
    audit_trials: int = AUDIT_TRIALS
    notes: tuple[str, ...] = ()
    version: int = 1
    #: the Gymnasium environment whose own transitions and rewards the data are (``{"id": ..., **kwargs}``, and
    #: ``"max_episode_steps"``: the data's episode cut where it is not the registered time limit), recorded by
    #: the Minari export (:mod:`privrl.bench.export`); ``None`` when no environment produces them
    env: Mapping[str, object] | None = None
    sweep: Sweep | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.version, int) and self.version >= 1):
            raise ValueError(f"Task {self.name!r}: version must be an int >= 1, got {self.version!r}")
        if self.setting not in SETTINGS:
            raise ValueError(f"Task {self.name!r}: setting must be one of {SETTINGS}, got {self.setting!r}")
        missing = [p for p in PROFILES if p not in self.sizes or "seeds" not in self.sizes[p]]
        if missing:
            raise ValueError(f"Task {self.name!r}: sizes must give 'seeds' for the profiles {missing}")

    @property
    def versioned_name(self) -> str:
        """``name-vN``: the task at its version (what the leaderboard prints)."""
        return f"{self.name}-v{self.version}"

    def size(self, profile: str) -> Mapping[str, int]:
        """The sizes of ``profile``: a declared profile's (``quick``, ``full``), or a point of the
        task's :class:`Sweep` (``sweep-nN``): the ``full`` sizes with ``n`` = N and the sweep's seeds."""
        if profile in self.sizes:
            return self.sizes[profile]
        points = {} if self.sweep is None else dict(zip(self.sweep.profiles, self.sweep.n))
        if profile not in points:
            known = [*self.sizes, *points]
            raise InvalidParameterError(f"The profile of task {self.name!r} must be one of {', '.join(known)}. Got "
                                        f"{profile!r} instead.")
        assert self.sweep is not None     # points is empty otherwise
        full = self.sizes["full"]
        return {**full, "n" if "n" in full else "K": points[profile], "seeds": self.sweep.seeds}

    def n_units(self, profile: str) -> int:
        """The number of privacy units of a dataset of this profile (n, K; 1 for a reward function)."""
        size = self.size(profile)
        return int(size.get("n", size.get("K", 1)))

    def delta_for(self, profile: str) -> float:
        """The task's δ: ``delta`` when declared, else 1/(10 n)."""
        return float(self.delta) if self.delta is not None else 1.0 / (10.0 * self.n_units(profile))

    def seeds(self, profile: str) -> int:
        return int(self.size(profile)["seeds"])


@dataclass(frozen=True)
class Entry:
    """One algorithm of the benchmark under one configuration (module docstring).

    ``fit(task_input, budget, rng, noise) -> Fitted``: ``budget`` is a
    :class:`~privrl.privacy.PrivacyBudget` (``None`` for non-private and trivial entries),
    ``rng`` the run's generator, ``noise`` a :class:`~privrl.privacy.NoiseSource` the private
    estimator must draw from (``None``: its own; set by the audit and by the tests' broken
    entries). ``budgets`` lists the budget kinds it takes (``"eps"``, ``"rho"``); ``applies(task)``
    returns None when the entry runs on the task, else why not (e.g. a feature dimension too large
    for the time budget). ``audit_target`` names a registered release audit
    (:mod:`privrl.audit`) used instead of the black-box audit where refitting thousands of times
    is out of reach (online learners). ``plugin`` is ``"module:Class"`` for an entry loaded by
    ``--plugin`` (pool workers import it again). ``privacy_unit`` is the unit the entry's guarantee
    protects (a :class:`~privrl.privacy.PrivacyUnit`); a private entry whose unit is not the task's
    is listed as refused, unless the task's unit is one of its ``uncertified_units``: there it runs
    as an *uncertified reference* (a paper's baseline on the paper's task), scored and shown with
    ``uncertified_reason`` (why its guarantee does not cover that unit) in place of an ε, never
    certified, never counted as meeting a budget and never audited. ``takes_noise`` is False for
    an entry that cannot draw its privacy noise from a given source (a plugin with its own
    sampler): its audit gives each trial a fresh ``rng``.
    Entries with the same ``batch_group`` may be fitted together on one (task, seed):
    ``fit_batch([(entry, task_input, budget, rng), ...])`` returns a :class:`Fitted` (or the
    refusal, an exception) per call, each as ``entry.fit`` would (e.g. online learners in lockstep).
    """

    name: str
    label: str
    settings: tuple[str, ...]
    role: str
    fit: Callable[..., Fitted]
    budgets: tuple[str, ...] = ()
    calibration: str | None = None
    counterpart: str | None = None
    applies: Callable[[Task], str | None] | None = None
    audit_target: str | None = None
    description: str = ""
    plugin: str | None = None
    privacy_unit: PrivacyUnit | None = None
    takes_noise: bool = True
    batch_group: str | None = None
    fit_batch: Callable[[Sequence[tuple]], list[Fitted | BaseException]] | None = None
    uncertified_units: tuple[PrivacyUnit, ...] = ()
    uncertified_reason: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"Entry {self.name!r}: role must be one of {ROLES}, got {self.role!r}")
        bad = sorted(set(self.settings) - set(SETTINGS))
        if bad or not self.settings:
            raise ValueError(f"Entry {self.name!r}: settings must be a non-empty subset of {SETTINGS}, got "
                             f"{self.settings!r}")
        if self.role == "private" and not self.budgets:
            raise ValueError(f"Entry {self.name!r}: a private entry declares the budget kinds it takes")
        if self.uncertified_units and (self.role != "private" or not self.uncertified_reason.strip()):
            raise ValueError(f"Entry {self.name!r}: only a private entry runs as an uncertified reference, and it "
                             "says why its guarantee does not cover those units (uncertified_reason)")

    @property
    def is_private(self) -> bool:
        return self.role == "private"

    def why_not(self, task: Task) -> str | None:
        """None when the entry runs on ``task``, else the reason it does not (it is then left out)."""
        if task.setting not in self.settings:
            return f"a {task.setting} task"
        return None if self.applies is None else self.applies(task)

    def refusal(self, task: Task) -> str | None:
        """Why a private entry cannot certify anything on ``task`` before it runs (its privacy unit
        is not the task's), else None — also for an uncertified reference on ``task``
        (:meth:`uncertified`), which runs without a certificate."""
        unit = _unit_value(self.privacy_unit)
        want = _unit_value(task.privacy_unit)
        if self.is_private and unit is not None and unit != want and self.uncertified(task) is None:
            return f"its guarantee protects one {unit}; the task's privacy unit is one {want}"
        return None

    def uncertified(self, task: Task) -> str | None:
        """``uncertified_reason`` when the entry runs on ``task`` as an uncertified reference (its
        guarantee is for another unit than the task's, one of ``uncertified_units``), else None."""
        want = _unit_value(task.privacy_unit)
        if (self.is_private and want != _unit_value(self.privacy_unit)
                and want in {_unit_value(u) for u in self.uncertified_units}):
            return " ".join(self.uncertified_reason.split())
        return None


def _unit_value(unit: object) -> object:
    """A :class:`~privrl.privacy.PrivacyUnit`'s value (a unit may be given as its value)."""
    return getattr(unit, "value", unit)


def setting_index(*parts: object) -> int:
    """A stable run index for the runner (a 24-bit hash of the cell's identity), so that a cell
    keeps its directory and its noise stream whatever else is selected."""
    text = "|".join(str(p) for p in parts)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:6], 16)


def entry_code(entry: Entry) -> str:
    """A fingerprint of what ``entry`` runs (16 hex digits of a SHA-256): the source of the modules
    of its functions (``fit``, ``fit_batch``, ``applies``) and of the functions, classes and entries
    their closures hold (a plugin's class, the estimator class an entry builds, the entry a broken
    copy wraps), read with :mod:`inspect`, and its declaration (every field that is not a
    function). It is part of a cell's key, so a resumed run reuses a finished cell only when the
    entry's code and parameters are unchanged."""
    parts: list[str] = []
    _code_parts(entry, parts, set())
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


def _module_source(module: ModuleType) -> str:
    """The text of ``module``'s source file, read now (not through :mod:`linecache`, which may hold
    an older version of an edited plugin file); its name when it has none (a built-in)."""
    try:
        path = inspect.getsourcefile(module)
        if path is not None:
            with open(path, encoding="utf-8") as f:
                return f.read()
    except (OSError, TypeError, UnicodeDecodeError):
        pass
    return str(module.__name__)


def _code_parts(obj: object, parts: list[str], seen: set[int]) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Entry):
        parts.append(repr([(f.name, getattr(obj, f.name)) for f in fields(obj)
                           if not callable(getattr(obj, f.name))]))
        for fn in (obj.fit, obj.fit_batch, obj.applies):
            if fn is not None:
                _code_parts(fn, parts, seen)
        return
    while isinstance(obj, functools.partial):
        obj = obj.func
    module = inspect.getmodule(obj)
    if module is not None and id(module) not in seen:
        seen.add(id(module))
        parts.append(_module_source(module))
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:                  # an empty cell
            continue
        if isinstance(value, Entry) or inspect.isfunction(value) or inspect.isclass(value):
            _code_parts(value, parts, seen)
