"""``privrl bench``: tasks × budgets × algorithms, certified and audited (:mod:`privrl.bench`).

    privrl bench [--tasks T,...] [--algorithms A,...] [--budgets B,...] [--seeds N] [--quick]
                 [--audit [--audit-trials N]] [--plugin module:Class ...] [--out DIR [--force]]
                 [--leaderboard DIR] [--backend local|ray] [--jobs N] [--ray-address ADDR] [--quiet]
    privrl bench --list
    privrl bench --freeze [FILE] [--tasks T,...] [--quick] [--seeds N] [--out DIR]
    privrl bench --export-minari DIR [--tasks ...] [--quick]
    privrl bench --sweep [--tasks T,...] [--algorithms A,...] [--budgets B,...] [--seeds N] [--out DIR]
                 [--leaderboard DIR] [--jobs N] [--freeze [FILE]]

The cells run through the sweep runner (resumable: finished cells in ``--out`` are skipped); the
leaderboard (``leaderboard.md``, ``leaderboard.csv``, one plot per task, ``manifest.json``) is
written into ``--leaderboard`` (default: ``--out``). An audit that finds ε_lower above an entry's
claim is a one-line error (exit code 1) after the leaderboard is written.

``--out`` must be new, empty, or hold only what a benchmark wrote there: its cells (the runner's
``bench/`` directory and lock) and the leaderboard files it wrote itself, recorded with their
checksums in :data:`OWN_FILES` (an edited one is no longer the benchmark's). Anything else — the
user's own ``leaderboard.md`` or ``manifest.json``, another experiment's runs — is refused unless
``--force`` (as ``privrl fit --out``).

Scores are computed against each task's frozen references (:mod:`privrl.bench.references`); a run
whose data differ from a task's frozen version is an error (exit code 1, after the leaderboard, whose
scores of that task are blank). ``--freeze`` runs only the tasks' trivial and reference cells and
writes their values and data hashes into the reference file (default: the committed one).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privrl.commands import check_out_dir, die
from privrl.commands.sweeps import wrap_listing
from privrl.errors import InvalidParameterError

if TYPE_CHECKING:
    from privrl.bench.spec import Budget, Entry, Task

__all__ = ["add_options", "run", "select_entries", "select_tasks"]

PROG = "privrl bench"
#: the record, in ``--out``, of the leaderboard files the benchmark wrote there (name -> SHA-256)
OWN_FILES = ".privrl-bench-files.json"


def add_options(p: argparse.ArgumentParser, *, count: Callable[[int, int], Callable[[str], int]]) -> None:
    """The options of ``privrl bench`` (the runner's options are added by the shell)."""
    p.add_argument("--list", action="store_true", help="list the tasks and entries (with --plugin: the plugins' too)")
    p.add_argument("--tasks", default=None, metavar="T,...", help="comma-separated task names (default: all)")
    p.add_argument("--algorithms", default=None, metavar="A,...",
                   help="comma-separated entry names; a name also selects its bracketed variants (dp-apvi: "
                        "dp-apvi and dp-apvi[paper]); the tasks' trivial and reference entries always run")
    p.add_argument("--budgets", default=None, metavar="B,...",
                   help="comma-separated budgets such as eps=0.1,eps=1,rho=1 (default: eps=0.1,1,10 and rho=0.1,1; "
                        "with --quick: eps=1 and rho=1)")
    p.add_argument("--seeds", type=count(1, 1000), default=None, metavar="N",
                   help="seeds per cell (default: each task's for the profile)")
    p.add_argument("--quick", action="store_true", help="the quick profile: small data, 2 seeds, two budgets (about "
                   "a minute on 2 cores)")
    p.add_argument("--audit", action="store_true", help="audit every private entry on every task (ε_lower at ε = 1)")
    p.add_argument("--audit-trials", type=count(8, 10**6), default=None, metavar="N",
                   help="fits per neighbouring input in the black-box audit (default: the task's)")
    p.add_argument("--plugin", action="append", default=None, metavar="module:Class",
                   help="add an outside algorithm (the protocol of docs/bench.md); repeatable")
    p.add_argument("--export-minari", default=None, metavar="DIR",
                   help="write each task's seed-0 dataset as a Minari dataset under DIR, then exit")
    p.add_argument("--leaderboard", default=None, metavar="DIR",
                   help="where to write the leaderboard (default: --out)")
    p.add_argument("--freeze", nargs="?", const="", default=None, metavar="FILE",
                   help="run the tasks' trivial and reference entries and freeze their values and data hashes into "
                        "the reference file FILE (default: the committed privrl/bench/references.json); refused "
                        "when it would change a version already frozen (bump Task.version)")
    p.add_argument("--sweep", action="store_true",
                   help="the data-size sweep (docs/bench.md, Sweeps): every policy-evaluation and offline task at "
                        "each of its sizes n, every entry at eps=0.1,1,10 (or --budgets); writes sweeps.md, one "
                        "figure per task and sweeps.csv into --leaderboard; with --freeze, freezes the per-size "
                        "references")
    p.add_argument("--force", action="store_true",
                   help="write into an --out that holds files the benchmark did not write (they may be replaced)")


def _items(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise InvalidParameterError(f"Expected a comma-separated list of names. Got {text!r} instead.")
    return items


def select_tasks(text: str | None) -> list[Task]:
    """The tasks named in ``--tasks`` (all by default); an unknown name lists the known ones."""
    from privrl.bench.tasks import all_tasks, get_task

    names = _items(text)
    return list(all_tasks().values()) if names is None else [get_task(n) for n in dict.fromkeys(names)]


def select_entries(text: str | None) -> list[Entry]:
    """The entries named in ``--algorithms`` (all by default): a name selects the entry of that
    name and its bracketed variants (``dp-apvi`` selects ``dp-apvi`` and ``dp-apvi[paper]``)."""
    from privrl.bench.entries import all_entries, get_entry

    known = all_entries()
    names = _items(text)
    if names is None:
        return list(known.values())
    chosen: dict[str, Entry] = {}
    for name in names:
        found = [e for n, e in known.items() if n == name or n.startswith(name + "[")]
        if not found:
            get_entry(name)  # the one-line error listing the known names
        chosen.update((e.name, e) for e in found)
    return list(chosen.values())


def _listing(tasks: list[Task], entries: list[Entry]) -> int:
    from privrl.bench.running import left_out

    print("Tasks:")
    for line in wrap_listing([(t.name, f"[{t.setting}] {t.title}; unit: {t.privacy_unit.value}; n = "
                               f"{t.n_units('full'):,} {t.units}; metric: {t.metric.name}; 0 = {t.trivial}, "
                               f"100 = {t.reference}") for t in tasks]):
        print("  " + line)
    print("Entries:")
    rows = []
    for e in entries:
        budgets = ", ".join(e.budgets) if e.budgets else "—"
        on = [t.name for t in tasks if e.why_not(t) is None]
        rows.append((e.name, f"[{e.role}; budgets: {budgets}] {e.description or e.label}; tasks: "
                             f"{', '.join(on) or 'none'}" + (f"; plugin {e.plugin}" if e.plugin else "")))
    for line in wrap_listing(rows):
        print("  " + line)
    skipped = {t.name: left_out(t, entries) for t in tasks}
    for task, why in skipped.items():
        for name, reason in why.items():
            print(f"  ({name} is left out of {task}: {reason})")
    return 0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _own_files(out: Path) -> dict[str, str]:
    """The leaderboard files a benchmark recorded writing into ``out`` (name -> SHA-256)."""
    try:
        record = json.loads((out / OWN_FILES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in record.items()} if isinstance(record, dict) else {}


def foreign_files(out: Path) -> list[str]:
    """What ``out`` holds besides the benchmark's own: its cells (the runner's ``bench/`` directory
    and lock), :data:`OWN_FILES` and the files it records with an unchanged checksum."""
    from privrl.bench.running import EXPERIMENT_ID
    from privrl.experiments.runner import LOCK_FILE

    if not out.is_dir():
        return []
    own = _own_files(out)
    foreign = []
    for path in sorted(out.iterdir()):
        if path.name == EXPERIMENT_ID and path.is_dir() or path.name in (LOCK_FILE, OWN_FILES):
            continue
        if not (path.is_file() and own.get(path.name) == _sha256(path)):
            foreign.append(path.name)
    return foreign


def check_bench_out(out: Path, force: bool) -> None:
    """Refuse an ``--out`` holding anything but the benchmark's own files (:func:`foreign_files`)
    unless ``force``: the leaderboard would silently replace the user's files."""
    foreign = foreign_files(out)
    if foreign and not force:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InvalidParameterError(f"The '--out' option must be a new or empty directory, or one holding only "
                                    f"the benchmark's own cells. Got {str(out)!r} instead (it holds {shown}): give "
                                    "another --out, or --force to write there (files of the same names are "
                                    "replaced).")


def record_own_files(out: Path, paths: Iterable[Path]) -> None:
    """Add the files in ``paths`` that lie directly in ``out`` to its :data:`OWN_FILES`."""
    from privrl._io import atomic_write_text

    own = _own_files(out)
    for path in paths:
        if path.parent.resolve() == out.resolve() and path.is_file():
            own[path.name] = _sha256(path)
    atomic_write_text(out / OWN_FILES, json.dumps(own, indent=1, sort_keys=True) + "\n")


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(args: argparse.Namespace) -> int:
    """The handler of ``privrl bench``."""
    from privrl.bench.plugins import load_plugin
    from privrl.bench.spec import parse_budgets

    for spec in args.plugin or ():
        load_plugin(spec)
    tasks = select_tasks(args.tasks)
    entries = select_entries(args.algorithms)
    profile = "quick" if args.quick else "full"
    if args.list:
        return _listing(tasks, entries)
    if args.export_minari is not None:
        from privrl.bench.export import export_minari

        out = check_out_dir(args.export_minari, "--export-minari")
        seeds = None if args.seeds is None else range(args.seeds)
        for ds_id in export_minari(tasks, out, profile=profile, seeds=seeds):
            print(f"{out}/{ds_id}")
        return 0
    if args.sweep:
        return _run_sweep(args, tasks, entries)
    budgets = parse_budgets(args.budgets, profile)
    if args.freeze is not None:
        return _freeze(args, tasks, budgets, profile)
    return _run(args, tasks, entries, budgets, profile)


def _sweep(args: argparse.Namespace, specs: list[Any], out: Path, profile: str) -> tuple[Any, Any]:
    """Run ``specs`` into ``out``; the sweep's summary and the rows of exactly those cells (at their
    profiles: ``profile``, or each spec's own for a data-size sweep)."""
    import numpy as np

    from privrl.bench.running import EXPERIMENT_ID
    from privrl.experiments.results import load_results
    from privrl.experiments.runner import run_sweep

    summary = run_sweep(specs, out, jobs=args.jobs, backend=args.backend, ray_address=args.ray_address,
                        quiet=args.quiet)
    print(summary.line())
    # the planned cells only: not those of other selections, nor those an entry's former code finished
    wanted = {(s.params["task"], s.params["entry"], s.params["budget"], s.params["mode"], s.seed,
               s.params.get("code"), s.scale) for s in specs}
    df = load_results(out, EXPERIMENT_ID)
    if len(df):
        codes = df["code"].where(df["code"].notna(), None) if "code" in df else [None] * len(df)
        keys = list(zip(df["task"], df["entry"], df["budget"], df["mode"], df["seed"].astype(int), codes,
                        df["scale"]))
        df = df[np.array([k in wanted for k in keys])]
    return summary, df


def _freeze(args: argparse.Namespace, tasks: list[Task], budgets: list[Budget], profile: str) -> int:
    """``--freeze``: the trivial and reference cells of ``tasks``, frozen into the reference file."""
    from privrl.bench.references import freeze
    from privrl.bench.running import plan

    specs = plan(tasks, [], budgets, profile=profile, seeds=args.seeds)
    out = check_out_dir(args.out)
    check_bench_out(out, args.force)
    summary, df = _sweep(args, specs, out, profile)
    if summary.failed:
        return die(PROG, f"{len(summary.failed)} of {summary.planned} cells failed, nothing frozen: "
                         + summary.failures_text())
    path = freeze(df, tasks, profile, path=args.freeze or None)
    print(f"froze {', '.join(t.versioned_name for t in tasks)} ({profile} profile) into {path}")
    return 0


def _run(args: argparse.Namespace, tasks: list[Task], entries: list[Entry], budgets: list[Budget], profile: str) -> int:
    from privrl.bench.entries import all_entries
    from privrl.bench.leaderboard import manifest_of, terminal_table, write_leaderboard
    from privrl.bench.references import check_run, load_references
    from privrl.bench.running import left_out, plan
    from privrl.bench.scoring import summarise
    from privrl.bench.spec import AUDIT_BUDGET

    specs = plan(tasks, entries, budgets, profile=profile, seeds=args.seeds, audit=args.audit,
                 audit_trials=args.audit_trials)
    out = check_out_dir(args.out)
    check_bench_out(out, args.force)
    board = check_out_dir(args.leaderboard or args.out, "--leaderboard")
    wall0, cpu0 = time.perf_counter(), _cpu_seconds()
    summary, df = _sweep(args, specs, out, profile)
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    known = all_entries()
    references = load_references()
    table = summarise(df, {t.name: t for t in tasks}, known, references=references, profile=profile)
    selection = {"tasks": [t.name for t in tasks], "entries": [e.name for e in entries],
                 "budgets": [str(b) for b in budgets], "seeds": args.seeds, "audit": bool(args.audit),
                 "audit_trials": args.audit_trials,
                 "backend": args.backend, "jobs": args.jobs}
    manifest = manifest_of(profile=profile, selection=selection, wall_seconds=wall, cpu_seconds=cpu, cells=df,
                           planned=len(specs))
    manifest["task_versions"] = {t.name: t.versioned_name for t in tasks}
    manifest["seeds_per_task"] = {t.name: t.seeds(profile) if args.seeds is None else args.seeds for t in tasks}
    if args.audit:
        manifest["audit"] = {"budget": str(AUDIT_BUDGET), "per": "task and private entry (once, at this budget)",
                             "fits_per_input": {t.name: args.audit_trials or t.audit_trials for t in tasks
                                                if t.audit_pair is not None},
                             "release_targets": "fast mode of each registered target, one audit per (target, ε, δ)"}
    paths = write_leaderboard(table, tasks, board, profile=profile, manifest=manifest, entries=known,
                              left_out={t.name: left_out(t, entries) for t in tasks}, references=references)
    record_own_files(out, paths)
    if not args.quiet:
        print(terminal_table(table, tasks))
    print(f"leaderboard: {board / 'leaderboard.md'} ({len(paths)} files)")
    status = 0
    if summary.failed:
        status = die(PROG, f"{len(summary.failed)} of {summary.planned} cells failed: " + summary.failures_text())
    stale = check_run(df, tasks, references, profile)
    if stale:
        status = die(PROG, f"the data of {len(stale)} seeds differ from their task's frozen version; first: {stale[0]}")
    violations = table[table["audit_verdict"] == "VIOLATION"]
    if len(violations):
        names = ", ".join(f"{r.entry} on {r.task}" for r in violations.itertuples())
        status = die(PROG, f"privacy audit VIOLATION (ε_lower above the claimed ε): {names}")
    return status


def _refuse_for_sweep(args: argparse.Namespace) -> None:
    """The leaderboard's options that ``--sweep`` does not take: a one-line error."""
    for option, given in (("--quick", args.quick), ("--audit", args.audit)):
        if given:
            raise InvalidParameterError(f"The '--sweep' option must come without '{option}' (the sweep runs each "
                                        f"task's own sizes, unaudited: audit with the leaderboard). Got '{option}' "
                                        "instead.")


def _run_sweep(args: argparse.Namespace, tasks: list[Task], entries: list[Entry]) -> int:
    """``--sweep``: the data-size sweep (:mod:`privrl.bench.sweep`) of the policy-evaluation and offline
    tasks of ``--tasks`` at each of their sizes (other settings skipped), resumable like the
    leaderboard; ``sweeps.md``, ``sweeps.csv``, ``sweeps-manifest.json`` and ``sweep-<task>.png`` in
    ``--leaderboard``. With ``--freeze``: only the trivial and reference cells, frozen per size into
    the sweep's reference file (default: the committed one)."""
    from privrl.bench.entries import all_entries
    from privrl.bench.leaderboard import manifest_of
    from privrl.bench.references import check_run, load_references
    from privrl.bench.spec import parse_budgets
    from privrl.bench.sweep import (
        SWEEP_BUDGETS,
        SWEEP_REFERENCE_FILE,
        freeze_sweep,
        plan_sweep,
        summarise_sweep,
        sweep_tasks,
        write_sweeps,
    )

    _refuse_for_sweep(args)
    budgets = list(SWEEP_BUDGETS) if args.budgets is None else parse_budgets(args.budgets)
    swept = sweep_tasks(tasks)
    if not swept:
        raise InvalidParameterError("The '--tasks' option of '--sweep' must name a policy-evaluation or offline "
                                    f"task. Got {', '.join(t.name for t in tasks)} instead.")
    freezing = args.freeze is not None
    specs = plan_sweep(swept, [] if freezing else entries, budgets, seeds=args.seeds)
    out = check_out_dir(args.out)
    check_bench_out(out, args.force)
    board = check_out_dir(args.leaderboard or args.out, "--leaderboard")
    wall0, cpu0 = time.perf_counter(), _cpu_seconds()
    summary, df = _sweep(args, specs, out, "sweep")
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    if freezing:
        if summary.failed:
            return die(PROG, f"{len(summary.failed)} of {summary.planned} cells failed, nothing frozen: "
                             + summary.failures_text())
        path = freeze_sweep(df, swept, path=args.freeze or None)
        print(f"froze the sweeps of {', '.join(t.versioned_name for t in swept)} into {path}")
        return 0
    references = load_references(SWEEP_REFERENCE_FILE)
    table = summarise_sweep(df, swept, all_entries(), references=references)
    selection = {"tasks": [t.name for t in swept], "entries": [e.name for e in entries],
                 "budgets": [str(b) for b in budgets], "seeds": args.seeds, "backend": args.backend,
                 "jobs": args.jobs,
                 "sizes": {t.name: list(t.sweep.n) for t in swept if t.sweep is not None}}
    manifest = manifest_of(profile="sweep", selection=selection, wall_seconds=wall, cpu_seconds=cpu, cells=df,
                           planned=len(specs))
    manifest["task_versions"] = {t.name: t.versioned_name for t in swept}
    manifest["ran"] = summary.ok
    paths = write_sweeps(table, df, tasks, board, manifest=manifest, references=references)
    record_own_files(out, paths)
    print(f"sweeps: {board / 'sweeps.md'} ({len(paths)} files)")
    status = 0
    if summary.failed:
        status = die(PROG, f"{len(summary.failed)} of {summary.planned} cells failed: " + summary.failures_text())
    stale = [line for t in swept for p in (t.sweep.profiles if t.sweep is not None else ())
             for line in check_run(df[df["scale"] == p] if len(df) else df, [t], references, p)]
    if stale:
        status = die(PROG, f"the data of {len(stale)} seeds differ from their task's frozen version; first: {stale[0]}")
    return status
