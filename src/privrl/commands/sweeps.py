"""The experiment commands: ``privrl list``, ``run``, ``reproduce``, ``frontier``, ``plot`` and
``report`` — sweeps through :mod:`privrl.experiments.runner`, figures and the report through
:mod:`privrl.experiments.report`. Every experiment, override and seed is checked before anything
runs."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privrl.commands import check_out_dir, die
from privrl.errors import InvalidParameterError
from privrl.experiments import all_experiments, get_experiment

__all__ = ["list_experiments", "run", "reproduce", "frontier", "plot", "report", "wrap_listing"]

#: the width ``privrl list`` wraps to when the terminal's is unknown
DEFAULT_WIDTH = 100


def wrap_listing(rows: Sequence[tuple[str, str]], width: int | None = None) -> list[str]:
    """``(id, text)`` rows as lines of at most ``width`` characters (default: the terminal's, else
    :data:`DEFAULT_WIDTH`): the ids in a column, each text wrapped and indented under its first line."""
    width = width or shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    column = max((len(i) for i, _ in rows), default=0)
    indent = " " * (column + 2)
    return [textwrap.fill(f"{i:<{column}}  {text}", width=max(width, column + 22), subsequent_indent=indent,
                          break_on_hyphens=False)
            for i, text in rows]


def list_experiments(args: argparse.Namespace) -> int:
    """``privrl list``: the registered experiments (``--json``: with seeds and deviations)."""
    exps = all_experiments()
    if args.json:
        items = [{"id": e.id, "paper": e.paper, "figure": e.figure, "description": e.description,
                  "seeds": dict(e.seeds), "scale": args.scale, "deviations": list(e.deviations_for(args.scale))}
                 for e in exps.values()]
        print(json.dumps(items, indent=2))
        return 0
    if not exps:
        print("No experiment is registered.")
        return 0
    for line in wrap_listing([(e.id, f"{e.paper}, {e.figure}: {e.description}") for e in exps.values()]):
        print(line)
    return 0


def _sweep(args: argparse.Namespace, ids: Sequence[str], seeds: list[int] | None,
           overrides: dict[str, object] | None) -> tuple[object, object]:
    from privrl.experiments.report import make_plots
    from privrl.experiments.runner import plan_runs, run_sweep

    # every experiment, override and seed is checked before anything runs
    specs = [spec for exp_id in ids for spec in plan_runs(exp_id, args.scale, seeds, overrides)]
    check_out_dir(args.out)
    summary = run_sweep(specs, args.out, jobs=args.jobs, backend=args.backend,
                        ray_address=args.ray_address, quiet=args.quiet)
    plots = None if getattr(args, "no_plot", False) else make_plots(args.out, list(ids))
    return summary, plots


def _report_sweep(prog: str, summary: Any, plots: Any) -> int:
    status = 0
    print(f"{summary.planned} runs: {summary.ok} ran ok, {summary.skipped} already finished, "
          f"{len(summary.failed)} failed")
    if plots is not None:
        n_fig = sum(len(v) for v in plots.figures.values())
        print(f"{n_fig} figure files written")
        if plots.errors:
            status = die(prog, "plotting failed: " + "; ".join(f"{k}: {v}" for k, v in plots.errors.items()))
    if summary.failed:
        status = die(prog, f"{len(summary.failed)} of {summary.planned} runs failed: " + summary.failures_text())
    return status


def run(args: argparse.Namespace) -> int:
    """``privrl run ID ...``: one sweep over the experiments' settings and seeds, then the figures."""
    from privrl.experiments.runner import parse_seeds

    ids = list(dict.fromkeys(args.ids))
    for exp_id in ids:
        get_experiment(exp_id)  # unknown ids fail before anything runs
    seeds = parse_seeds(args.seeds)
    overrides = dict(args.set or [])
    summary, plots = _sweep(args, ids, seeds, overrides)
    status = _report_sweep("privrl run", summary, plots)
    print(f"results in {args.out}")
    return status


def reproduce(args: argparse.Namespace) -> int:
    """``privrl reproduce``: every experiment (or ``--only``), the figures and the report (not with
    ``--no-plot``)."""
    from privrl.experiments.report import write_report

    ids = list(all_experiments())
    if args.only:
        for exp_id in args.only:
            get_experiment(exp_id)  # unknown ids fail before anything runs
        ids = list(dict.fromkeys(args.only))
    if not ids:
        return die("privrl reproduce", "no experiment is registered")
    summary, plots = _sweep(args, ids, None, None)
    status = _report_sweep("privrl reproduce", summary, plots)
    if not args.no_plot:
        print(f"Report: {write_report(args.out, ids)}")
    return status


def plot(args: argparse.Namespace) -> int:
    """``privrl plot OUT``: the figures of a results directory."""
    from privrl.experiments.report import experiments_in, make_plots

    if not experiments_in(args.out):
        return die("privrl plot", f"no runs found under {args.out}")
    plots = make_plots(args.out)
    for paths in plots.figures.values():
        for path in paths:
            print(path)
    for exp_id in plots.skipped:
        print(f"skipped {exp_id} (unregistered, no plot function or no successful run)", file=sys.stderr)
    if plots.errors:
        return die("privrl plot", "; ".join(f"{k}: {v}" for k, v in plots.errors.items()))
    return 0


def report(args: argparse.Namespace) -> int:
    """``privrl report OUT [--evidence DIR [--wall-seconds S] [--readme PATH]]``: ``OUT/report.md``;
    with ``--evidence``, the evidence collection (OUT a results directory, or a metrics archive to
    regenerate from)."""
    from privrl.experiments.report import experiments_in, write_report

    if args.wall_seconds is not None and args.evidence is None:
        raise InvalidParameterError("--wall-seconds applies to --evidence only (it is recorded in the "
                                    "metrics archive's manifest).")
    if getattr(args, "readme", None) is not None and args.evidence is None:
        raise InvalidParameterError("--readme applies to --evidence only (the headline tables come from the "
                                    "committed metrics).")
    if not experiments_in(args.out):
        return die("privrl report", f"no runs found under {args.out}")
    if args.evidence is None:
        print(write_report(args.out))
        return 0
    from privrl.experiments.archive import is_archive
    from privrl.experiments.evidence import collect_evidence

    check_out_dir(args.evidence, "--evidence")
    src, dest = Path(args.out).resolve(), Path(args.evidence).resolve()
    if not is_archive(src) and (dest == src or src in dest.parents):
        raise InvalidParameterError(f"The '--evidence' directory must be outside the results directory "
                                    f"{args.out}. Got {args.evidence!r} instead.")
    print(collect_evidence(args.out, args.evidence, wall_seconds=args.wall_seconds,
                           readme=getattr(args, "readme", None)))
    if getattr(args, "readme", None) is not None:
        print(args.readme)
    return 0


def frontier(args: argparse.Namespace) -> int:
    """``privrl frontier ALGORITHM``: the frontier experiment of the algorithm re-gridded over
    ``--epsilons`` (paper / sound / tight and the non-private reference), then a CSV and a plot."""
    from privrl._io import atomic_write_bytes
    from privrl.experiments.frontier import (
        frontier_settings,
        frontier_table,
        get_frontier,
        plot_frontier,
    )
    from privrl.experiments.results import load_results
    from privrl.experiments.runner import RunSpec, check_overrides, parse_seeds, run_sweep

    spec = get_frontier(args.algorithm)
    exp = get_experiment(spec.experiment_id)
    overrides: dict[str, object] = {}
    for option, key, value in (("--env", spec.env_key, args.env), ("--data", spec.data_key, args.data)):
        if value is None:
            continue
        if key is None:
            raise InvalidParameterError(f"The '{option}' option is not available for the {args.algorithm} frontier "
                                        f"(it runs on its paper's instance).")
        overrides[key] = value
    overrides = check_overrides(exp.id, overrides)
    settings = frontier_settings(exp.settings_for(args.scale), epsilons=args.epsilons, overrides=overrides)
    seeds = parse_seeds(args.seeds)
    seed_list = list(range(exp.n_seeds(args.scale))) if seeds is None else seeds
    specs = [RunSpec(exp.id, i, s, params, args.scale) for s in seed_list for i, params in enumerate(settings)]
    out = check_out_dir(args.out)
    summary = run_sweep(specs, out, jobs=args.jobs, backend=args.backend, ray_address=args.ray_address,
                        quiet=args.quiet)
    status = _report_sweep("privrl frontier", summary, None)
    df = load_results(out, exp.id)
    keys = {json.dumps(s.params, sort_keys=True, default=str) for s in specs}
    param_cols = sorted({k for s in specs for k in s.params})
    if not df.empty:
        mine = df[param_cols].apply(lambda row: json.dumps(_row_params(row), sort_keys=True, default=str) in keys,
                                    axis=1)
        df = df[mine]
    table = frontier_table(df, spec.metric)
    csv_path = out / exp.id / "frontier.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(csv_path, table.to_csv(index=False).encode())
    figures = plot_frontier(df, out / exp.id, spec) if not table.empty else []
    print(f"frontier of {args.algorithm}: {csv_path}" + (f", {figures[0]}" if figures else ""))
    return status


def _row_params(row: Any) -> dict[str, Any]:
    """A results row's params in the JSON form of a RunSpec's params (lists/dicts are stored as JSON
    strings, infinities as floats)."""
    import numpy as np

    out = {}
    for key, value in row.items():
        if isinstance(value, str) and value[:1] in "[{":
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        if isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out
