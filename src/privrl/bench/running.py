"""Running the benchmark through privrl's sweep runner (:mod:`privrl.experiments.runner`).

Every cell — (task, entry, budget, seed) scored, or (task, entry) audited — is one
:class:`~privrl.experiments.runner.RunSpec` of the unlisted experiment ``bench`` (registered
here, so pool and Ray workers find it): the runner gives the benchmark its local and Ray
backends, atomic result files with checksums, manifests (versions, commit, wall time, the
ledger's ε) and resumption — a second ``privrl bench`` into the same ``--out`` skips every
finished cell. A cell's setting index is a hash of its identity
(:func:`~privrl.bench.spec.setting_index`), so its directory and its noise stream do not depend
on what else is selected.

Data: every cell of one (task, seed) sees the same data, drawn from
:func:`~privrl.bench.tasks.data_seed`; the cells of one (task, seed) run in one batch (one build
of the data per worker). The privacy noise of a cell comes from the runner's per-cell generator.

A cell's rows (one per metric) carry ``task, entry, budget, outcome`` (``ok``, ``refused`` with the
library's reason, ``over budget``: the entry ran but its ledger spends more than the budget, or
``uncertified``: an uncertified reference, :meth:`~privrl.bench.spec.Entry.uncertified`, scored
with the reason its guarantee does not cover the task's unit and no ε), ``epsilon`` (the ledger's ε
at the task's δ; NaN for an uncertified reference), ``delta``, ``rho`` (the ledger's ρ when it has
one), ``cpu_seconds``, the notes of the fit (utility warnings) and ``data_hash``, the SHA-256 of the
seed's data (:func:`~privrl.bench.references.data_hash`), which the command checks against the task's
frozen version.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl.bench.entries import REFUSALS, all_entries
from privrl.bench.plugins import resolve_entry
from privrl.bench.references import data_hash
from privrl.bench.spec import AUDIT_BUDGET, Budget, Entry, Fitted, Instance, Task, entry_code, setting_index
from privrl.bench.tasks import data_seed, get_task
from privrl.experiments.registry import register
from privrl.experiments.runner import RunSpec
from privrl.experiments.spec import Experiment, RunContext, RunResult
from privrl.privacy.accounting import Ledger

__all__ = ["EXPERIMENT_ID", "REFUSALS", "Cell", "plan", "entries_for", "left_out", "instance", "run_cell",
           "run_batch", "certification"]

#: the id of the (unlisted) experiment whose runs are the benchmark's cells
EXPERIMENT_ID = "bench"
#: relative slack when comparing ε spent with the budget (float rounding of the accountants)
SLACK = 1e-6


@dataclass(frozen=True)
class Cell:
    """One cell of the benchmark grid (what a :class:`RunSpec`'s params hold)."""

    task: str
    entry: str
    budget: str          # "eps=1", "rho=0.1" or "none"
    mode: str            # "score" or "audit"
    profile: str
    plugin: str | None = None
    trials: int | None = None
    code: str | None = None     # the entry's code and declaration (spec.entry_code): a changed entry reruns

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"task": self.task, "entry": self.entry, "budget": self.budget, "mode": self.mode,
               "profile": self.profile}
        if self.plugin:
            out["plugin"] = self.plugin
        if self.trials is not None:
            out["trials"] = int(self.trials)
        if self.code is not None:
            out["code"] = self.code
        return out

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Cell:
        return cls(str(params["task"]), str(params["entry"]), str(params["budget"]), str(params["mode"]),
                   str(params["profile"]), params.get("plugin"),
                   None if params.get("trials") is None else int(params["trials"]), params.get("code"))


# --------------------------------------------------------------------------- planning
def entries_for(task: Task, entries: Iterable[Entry]) -> list[Entry]:
    """The entries that run on ``task`` (in order), with its trivial and reference entries first."""
    chosen = [e for e in entries if e.why_not(task) is None]
    known = all_entries()
    refs = [known[n] for n in (task.trivial, task.reference) if n in known and known[n].why_not(task) is None]
    return list({e.name: e for e in refs + chosen}.values())


def left_out(task: Task, entries: Iterable[Entry]) -> dict[str, str]:
    """Entries of ``task``'s setting left out of it, with the reason."""
    return {e.name: why for e in entries if task.setting in e.settings and (why := e.why_not(task))}


def plan(tasks: Sequence[Task], entries: Sequence[Entry], budgets: Sequence[Budget], *, profile: str,
         seeds: int | None = None, audit: bool = False, audit_trials: int | None = None) -> list[RunSpec]:
    """The run specs of a benchmark: every applicable entry on every task, each private entry at
    every budget of a kind it takes, non-private and trivial entries once, ``seeds`` seeds (default:
    the task's for the profile); with ``audit``, one audit cell per private entry and task at
    :data:`~privrl.bench.spec.AUDIT_BUDGET` (none for an uncertified reference: it claims nothing
    for the task's unit). Every cell's params hold the entry's :func:`~privrl.bench.spec.entry_code`:
    a cell finished by other code (an edited plugin) is not reused. The setting index (and so the
    cell's noise stream) does not depend on it."""
    specs: list[RunSpec] = []
    codes: dict[str, str] = {}
    for task in tasks:
        n_seeds = task.seeds(profile) if seeds is None else int(seeds)
        for entry in entries_for(task, entries):
            code = codes.setdefault(entry.name, entry_code(entry))
            grid = [str(b) for b in budgets if b.kind in entry.budgets] if entry.is_private else ["none"]
            cells = [Cell(task.name, entry.name, b, "score", profile, entry.plugin, code=code) for b in grid]
            for cell in cells:
                index = setting_index(cell.task, cell.entry, cell.budget, cell.mode)
                specs.extend(RunSpec(EXPERIMENT_ID, index, s, cell.params(), profile) for s in range(n_seeds))
            if audit and entry.is_private and AUDIT_BUDGET.kind in entry.budgets and entry.uncertified(task) is None:
                cell = Cell(task.name, entry.name, str(AUDIT_BUDGET), "audit", profile, entry.plugin, audit_trials,
                            code)
                specs.append(RunSpec(EXPERIMENT_ID, setting_index(cell.task, cell.entry, cell.budget, cell.mode), 0,
                                     cell.params(), profile))
    return specs


# --------------------------------------------------------------------------- one cell
@functools.lru_cache(maxsize=4)
def instance(task_name: str, profile: str, seed: int) -> Instance:
    """The data of ``task_name`` for one seed (cached per process: every entry of the seed reads it),
    with their hash."""
    task = get_task(task_name)
    inst = task.build(task.size(profile), np.random.default_rng(data_seed(task.name, seed)))
    inst.input.delta = task.delta_for(profile)
    inst.data_hash = data_hash(inst)
    return inst


def certification(ledger: Ledger | None, budget: Budget | None, delta: float) -> dict[str, object]:
    """ε spent at the task's ``delta`` (and ρ when the ledger is zCDP), and whether they meet ``budget``."""
    if ledger is None or budget is None:
        return {"epsilon": math.inf if budget is not None else math.nan, "rho": math.nan, "certified": budget is None}
    eps = float(ledger.epsilon(delta))
    try:
        rho = float(ledger.zcdp_rho())
    except Exception:  # noqa: BLE001 - not every ledger is zCDP (Laplace, approximate-DP events)
        rho = math.nan
    if budget.kind == "eps":
        certified = eps <= budget.value * (1 + SLACK)
    else:
        certified = (rho <= budget.value * (1 + SLACK)) if math.isfinite(rho) else \
            eps <= budget.value + 2 * math.sqrt(budget.value * math.log(1 / delta)) + SLACK
    return {"epsilon": eps, "rho": rho, "certified": bool(certified)}


def _row_base(cell: Cell, entry: Entry | None, delta: float) -> dict[str, object]:
    return {"task": cell.task, "entry": cell.entry, "budget": cell.budget, "mode": cell.mode,
            "role": None if entry is None else entry.role, "delta": delta}


def _refused(cell: Cell, entry: Entry | None, task: Task, delta: float, reason: str, cpu: float) -> RunResult:
    row = {**_row_base(cell, entry, delta), "metric": task.metric.name, "value": math.nan, "outcome": "refused",
           "reason": " ".join(reason.split()), "epsilon": math.nan, "rho": math.nan, "cpu_seconds": cpu, "notes": ""}
    return RunResult([row], calibration=(entry.calibration if entry and entry.is_private else None) or "none",
                     extra={"status": "refused", "reason": row["reason"]})


@dataclass
class _Prepared:
    """A score cell ready to fit: its task, data, entry and budget (or its refusal)."""

    cell: Cell
    task: Task
    inst: Instance
    entry: Entry
    grid: Budget | None
    budget: Any
    t0: float
    refused: RunResult | None = None
    uncertified: str | None = None


def _prepare(cell: Cell, ctx: RunContext) -> _Prepared:
    t0 = time.process_time()
    task = get_task(cell.task)
    inst = instance(cell.task, cell.profile, ctx.seed)
    delta = inst.input.delta
    entry = resolve_entry(cell.entry, cell.plugin)
    grid = None if cell.budget == "none" else Budget.parse(cell.budget)
    prep = _Prepared(cell, task, inst, entry, grid, None, t0, uncertified=entry.uncertified(task))
    why = entry.refusal(task)
    try:
        prep.budget = None if grid is None else grid.privacy_budget(delta)
    except REFUSALS as exc:
        why = str(exc)
    if why is not None:
        prep.refused = _refused(cell, entry, task, delta, why, time.process_time() - t0)
    return prep


def _finish(prep: _Prepared, fitted: Fitted | BaseException, cpu: float) -> RunResult:
    """The rows of a fitted cell (or of its refusal)."""
    cell, task, entry, grid = prep.cell, prep.task, prep.entry, prep.grid
    delta = prep.inst.input.delta
    if isinstance(fitted, BaseException):
        return _refused(cell, entry, task, delta, str(fitted), cpu)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metrics = task.score(prep.inst.truth, fitted.output)
    if prep.uncertified is not None:     # a reference for another unit: scored, its ledger never read
        cert: dict[str, object] = {"epsilon": math.nan, "rho": math.nan, "certified": False}
        status, reason = "uncertified", prep.uncertified
    else:
        cert = certification(fitted.ledger if entry.is_private else None, grid, delta)
        status = "ok" if cert["certified"] else "over budget"
        reason = "" if cert["certified"] else \
            f"its ledger spends ε = {cert['epsilon']:.4g} at δ = {delta:.3g} > the budget {grid}"
    base = {**_row_base(cell, entry, delta), "outcome": status, "reason": reason,
            "epsilon": cert["epsilon"], "rho": cert["rho"], "cpu_seconds": cpu, "notes": "; ".join(fitted.notes),
            "data_hash": prep.inst.data_hash}
    rows = [{**base, "metric": k, "value": float(v)} for k, v in metrics.items()]
    private = entry.is_private and fitted.ledger is not None and prep.uncertified is None
    est = fitted.estimator
    extra: dict[str, object] = {"status": status}
    if prep.uncertified is not None:
        extra.update(certified=False, uncertified=prep.uncertified)
    return RunResult(rows, ledger=fitted.ledger if private else None,
                     budget=prep.budget if private else None,
                     privacy_unit=fitted.privacy_unit or getattr(est, "privacy_unit", None),
                     neighboring=fitted.neighboring or getattr(est, "neighboring", None),
                     calibration=(entry.calibration or "tight") if private else "none",
                     extra=extra)


def _fit_one(prep: _Prepared, ctx: RunContext) -> Fitted | BaseException:
    try:
        return prep.entry.fit(prep.inst.input, prep.budget, ctx.rng, None)
    except REFUSALS as exc:
        return exc


def _score_cell(cell: Cell, ctx: RunContext) -> RunResult:
    prep = _prepare(cell, ctx)
    if prep.refused is not None:
        return prep.refused
    fitted = _fit_one(prep, ctx)
    return _finish(prep, fitted, time.process_time() - prep.t0)


def run_cell(params: Mapping[str, object], ctx: RunContext) -> RunResult:
    """The run function of the ``bench`` experiment: score one cell or audit one entry."""
    cell = Cell.of(params)
    if cell.mode == "audit":
        from privrl.bench.audit import audit_cell  # the audit imports SciPy: only for audit cells

        return audit_cell(cell, ctx)
    return _score_cell(cell, ctx)


def run_batch(params_list: Sequence[Mapping[str, object]], ctxs: Sequence[RunContext]) -> list[RunResult]:
    """The cells of one (task, seed), in order: the data are built once (:func:`instance`), and the
    cells of entries that share a ``batch_group`` are fitted together by their ``fit_batch`` (e.g.
    the online learners, advanced in lockstep); each result is :func:`run_cell`'s for its cell up to
    round-off."""
    results: list[RunResult | None] = [None] * len(params_list)
    groups: dict[str, list[tuple[int, _Prepared]]] = {}
    for i, (params, ctx) in enumerate(zip(params_list, ctxs)):
        cell = Cell.of(params)
        if cell.mode != "score":
            results[i] = run_cell(params, ctx)
            continue
        prep = _prepare(cell, ctx)
        if prep.refused is not None:
            results[i] = prep.refused
        elif prep.entry.batch_group is None or prep.entry.fit_batch is None:
            results[i] = _finish(prep, _fit_one(prep, ctx), time.process_time() - prep.t0)
        else:
            groups.setdefault(prep.entry.batch_group, []).append((i, prep))
    for members in groups.values():
        t0 = time.process_time()
        fit_batch = members[0][1].entry.fit_batch
        assert fit_batch is not None     # grouped above only when set
        fitted = fit_batch([(p.entry, p.inst.input, p.budget, ctxs[i].rng) for i, p in members])
        cpu = (time.process_time() - t0) / len(members)
        for (i, prep), out in zip(members, fitted):
            results[i] = _finish(prep, out, cpu)
    return [r for r in results if r is not None]


def batch_key(params: Mapping[str, Any], seed: int) -> tuple:
    """Cells of one task and seed share a batch (and so a worker and one build of the data);
    black-box audit cells run alone (they are long); the audit cells of one release target at one δ
    share a batch, so that its one audit (:func:`~privrl.bench.audit.release_audit`) runs once."""
    if params.get("mode") == "audit":
        target = resolve_entry(str(params["entry"]), params.get("plugin")).audit_target
        if target is not None:
            delta = get_task(str(params["task"])).delta_for(str(params["profile"]))
            return ("audit-target", target, params["budget"], repr(delta))
        return ("audit", params["task"], params["entry"])
    return (params["task"], params["profile"], int(seed))


def compile_key(params: Mapping[str, object]) -> str:
    """The kernels a cell needs: its task's setting (the tasks of a setting run the same entries, so
    the same compiled kernels: online learning LinOpt's engine and the tabular online learners',
    offline learning DP-APVI's release, continuous control DP Q-learning's networks and paths)."""
    return get_task(str(params["task"])).setting



def warm_ups(key: Hashable) -> tuple[Callable[[], object], ...]:
    """The warm-ups of a compile key: online learning's LinOpt engine is the longest compile (about
    85 CPU-s in one piece); its planning and its statistics compile first, each in a worker of its
    own, and the engine around them after (about 20 CPU-s)."""
    if key != "online-learning":
        return ()
    # here: the driver loads the linear-mixture family only for a sweep that has online-learning cells
    from privrl.linear_mixture.engine import compile_planning
    from privrl.linear_mixture.statistics import compile_statistics

    return compile_planning, compile_statistics


register(Experiment(
    id=EXPERIMENT_ID, paper="privrl benchmark", figure="leaderboard",
    description="the cells of 'privrl bench' (tasks × budgets × algorithms); not a paper figure",
    settings=lambda scale: [], seeds={"smoke": 1, "quick": 2, "paper": 5}, run=run_cell,
    run_batch=run_batch, batch_key=batch_key, compile_key=compile_key, warm_ups=warm_ups,
    listed=False,
))

