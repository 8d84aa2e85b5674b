"""``privrl bench --sweep``: the data-size sweep (:mod:`privrl.bench.sweep`).

    privrl bench --sweep [--tasks T,...] [--algorithms A,...] [--budgets B,...] [--seeds N]
                 [--out DIR [--force]] [--leaderboard DIR] [--jobs N] [--backend local|ray]
    privrl bench --sweep --freeze [FILE] [--tasks T,...]

Every policy-evaluation and offline task of ``--tasks`` at each of its sizes (other settings are
skipped), through the same runner as the leaderboard: resumable (finished cells in ``--out`` are
skipped). Writes ``sweeps.md``, ``sweeps.csv``, ``sweeps-manifest.json`` and ``sweep-<task>.png`` into
``--leaderboard`` (default ``--out``). With ``--freeze``, runs only the trivial and reference cells and
freezes them per size into the sweep's reference file (default: the committed one).
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from privrl.commands import check_out_dir, die
from privrl.commands.bench import PROG, _cpu_seconds, _sweep, check_bench_out, record_own_files
from privrl.errors import InvalidParameterError

if TYPE_CHECKING:
    from privrl.bench.spec import Entry, Task

__all__ = ["run_sweep_command"]


def _refuse_options(args: argparse.Namespace) -> None:
    """Options of the leaderboard that the sweep does not take: a one-line error."""
    for option, given in (("--quick", args.quick), ("--audit", args.audit)):
        if given:
            raise InvalidParameterError(f"The '{option}' option does not apply to '--sweep' (the sweep runs each "
                                        "task's own sizes, unaudited: audit with the leaderboard). Got it "
                                        "instead.")


def run_sweep_command(args: argparse.Namespace, tasks: list[Task], entries: list[Entry]) -> int:
    """The handler of ``privrl bench --sweep`` (``--freeze``: the per-size references)."""
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

    _refuse_options(args)
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
