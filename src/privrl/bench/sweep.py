"""Data-size sweeps (``privrl bench --sweep``, ``make bench-sweep``): utility against ε at several n.

Private RL is about how utility grows with the data and the budget (DPBench-style sweeps). Every
task whose setting is in :data:`SWEEP_SETTINGS` (policy evaluation, offline learning) declares a
:class:`~privrl.bench.spec.Sweep`: its data sizes n (at least three). Each point of the sweep is the
profile ``sweep-nN`` of the task (:meth:`~privrl.bench.spec.Task.size`: the ``full`` sizes with n = N,
δ = 1/(10 N)), so its cells are ordinary benchmark cells (:mod:`privrl.bench.running`): the same
entries, data seeds, per-cell noise streams, runner, resumption and certification as the
leaderboard. Tasks of other settings are skipped, by setting.

The 0 / 100 references of a score depend on n (the non-private reference improves with the data),
so they are frozen per size, in their own file :data:`SWEEP_REFERENCE_FILE` (``privrl bench --sweep
--freeze``), with the data hash of every seed; the leaderboard's references
(:data:`~privrl.bench.references.REFERENCE_FILE`) are not touched.

:func:`write_sweeps` writes ``sweeps.md`` (a table per task: the score and raw metric of every entry
at every n and ε), ``sweeps.csv``, ``sweeps-manifest.json`` and one figure per task,
``sweep-<task>.png``: the raw metric against ε, one panel per private entry, a line per n, with the
non-private reference and the trivial answer at each n as horizontal lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from privrl._io import atomic_write_bytes, atomic_write_text
from privrl.bench.leaderboard import format_value
from privrl.bench.references import References, freeze, frozen_points
from privrl.bench.running import plan
from privrl.bench.scoring import summarise
from privrl.bench.spec import Budget, Entry, Task
from privrl.experiments.runner import RunSpec

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["SWEEP_SETTINGS", "SWEEP_BUDGETS", "SWEEP_REFERENCE_FILE", "MIN_SIZES", "sweep_tasks", "skipped",
           "plan_sweep", "freeze_sweep", "summarise_sweep", "write_sweeps"]

#: the settings the sweep covers: the data are a fixed set of n logged trajectories
SWEEP_SETTINGS = ("policy-evaluation", "offline-learning")
#: the sweep's default budgets: ε ∈ {0.1, 1, 10} (every entry of these settings takes an ε budget)
SWEEP_BUDGETS = (Budget("eps", 0.1), Budget("eps", 1.0), Budget("eps", 10.0))
#: the frozen per-size references of the sweep (package data)
SWEEP_REFERENCE_FILE = Path(__file__).with_name("sweep_references.json")
#: the fewest data sizes a swept task declares
MIN_SIZES = 3


# --------------------------------------------------------------------------- what runs
def sweep_tasks(tasks: Sequence[Task]) -> list[Task]:
    """The tasks of ``tasks`` the sweep covers (their setting is in :data:`SWEEP_SETTINGS`); such a
    task without a sweep of at least :data:`MIN_SIZES` sizes is an error."""
    chosen = [t for t in tasks if t.setting in SWEEP_SETTINGS]
    for task in chosen:
        if task.sweep is None or len(task.sweep.n) < MIN_SIZES:
            raise ValueError(f"Task {task.name!r} ({task.setting}) must declare a sweep of at least {MIN_SIZES} "
                             f"data sizes (Task.sweep); got {task.sweep!r}")
    return chosen


def skipped(tasks: Sequence[Task]) -> dict[str, str]:
    """The tasks of ``tasks`` the sweep leaves out, with the reason: their setting."""
    return {t.name: f"setting {t.setting}" for t in tasks if t.setting not in SWEEP_SETTINGS}


def _profiles(task: Task) -> tuple[str, ...]:
    assert task.sweep is not None     # sweep_tasks checked it
    return task.sweep.profiles


def plan_sweep(tasks: Sequence[Task], entries: Sequence[Entry], budgets: Sequence[Budget], *,
               seeds: int | None = None) -> list[RunSpec]:
    """The cells of the sweep: :func:`~privrl.bench.running.plan` of every swept task at each of its
    sizes (``seeds``: the sweep's by default). ``entries`` empty: the trivial and reference cells only
    (what :func:`freeze_sweep` needs)."""
    return [spec for task in sweep_tasks(tasks) for profile in _profiles(task)
            for spec in plan([task], entries, budgets, profile=profile, seeds=seeds)]


def _at(rows: pd.DataFrame, task: Task, profile: str) -> pd.DataFrame:
    if not len(rows):
        return rows
    return rows[(rows["task"] == task.name) & (rows["scale"] == profile)]


def freeze_sweep(rows: pd.DataFrame, tasks: Sequence[Task], *, path: str | Path | None = None) -> Path:
    """Freeze the trivial and reference values of every size of ``tasks``' sweeps from a run's rows
    into ``path`` (default :data:`SWEEP_REFERENCE_FILE`): one profile ``sweep-nN`` per size
    (:func:`~privrl.bench.references.freeze`, which refuses to change a version already frozen)."""
    target = SWEEP_REFERENCE_FILE if path is None else Path(path)
    for task in sweep_tasks(tasks):
        for profile in _profiles(task):
            freeze(_at(rows, task, profile), [task], profile, path=target)
    return target


# --------------------------------------------------------------------------- the table
def summarise_sweep(rows: pd.DataFrame, tasks: Sequence[Task], entries: Mapping[str, object], *,
                    references: References | None) -> pd.DataFrame:
    """:func:`~privrl.bench.scoring.summarise` at every size of every swept task (scores against the
    per-size frozen ``references``), with the columns ``profile`` and ``n`` first."""
    parts = []
    for task in sweep_tasks(tasks):
        for profile in _profiles(task):
            at = _at(rows, task, profile)
            if not len(at):
                continue
            table = summarise(at, {task.name: task}, entries, references=references, profile=profile)
            parts.append(table.assign(profile=profile, n=task.n_units(profile)))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[["profile", "n", *[c for c in out.columns if c not in ("profile", "n")]]]


def _n_label(n: int) -> str:
    exponent = math.log10(n)
    if n >= 1000 and exponent == int(exponent):
        return f"10{str(int(exponent)).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))}"
    return f"{n:,}"


def _cell(row: pd.Series) -> str:
    """A table cell: the score (mean ± SE) and, in brackets, the raw metric; a refusal or an
    over-budget cell says so."""
    if row["status"] == "refused":
        return "refused"
    score = format_value(row["score_mean"], row["score_se"], digits=3)
    text = f"{score} ({format_value(row['raw_mean'], digits=3)})"
    if row["status"] not in ("ok", "uncertified"):
        text += f" {row['status']}"
    return text


def _entry_rows(summary: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The table's rows (entry, label, budget): trivial and non-private entries first, then each
    private entry at its budgets in increasing order."""
    order = {"trivial": 0, "non-private": 1, "private": 2}
    keys = summary[["entry", "label", "role", "budget"]].drop_duplicates()
    def key(r: Mapping[Hashable, object]) -> tuple[int, str, str, float]:
        kind, _, value = str(r["budget"]).partition("=")
        return (order.get(str(r["role"]), 3), str(r["entry"]), kind, float(value) if value else 0.0)
    return [(str(r["entry"]), str(r["label"]), str(r["budget"])) for r in sorted(keys.to_dict("records"), key=key)]


def _budget_text(budget: str) -> str:
    return "—" if budget == "none" else str(Budget.parse(budget).label)


def _task_section(task: Task, summary: pd.DataFrame, references: References | None, figure: Path | None
                  ) -> list[str]:
    profiles = [p for p in _profiles(task) if (summary["profile"] == p).any()]
    sizes = [task.n_units(p) for p in profiles]
    assert task.sweep is not None
    direction = "lower is better" if task.metric.lower_is_better else "higher is better"
    seeds = int(summary["n_seeds"].max())
    lines = [f"## `{task.versioned_name}` — {task.title}", "",
             f"{task.setting} · n ∈ {{{', '.join(f'{n:,}' for n in sizes)}}} {task.units} · "
             f"δ = 1/(10 n) · {seeds} seed{'s' if seeds != 1 else ''} per n · metric: "
             f"{task.metric.label} ({direction}) · 0 = `{task.trivial}`, 100 = `{task.reference}` at the same n"]
    if task.sweep.note:
        lines += ["", f"*Sizes*: {task.sweep.note}"]
    refs, unfrozen = [], []
    for profile, n in zip(profiles, sizes):
        frozen = None if references is None else frozen_points(references, task, profile)
        if frozen is None:
            unfrozen.append(profile)
            refs.append(f"n = {n:,}: none (`privrl bench --sweep --freeze --tasks {task.name}`)")
        else:
            refs.append(f"n = {n:,}: {format_value(float(np.mean(list(frozen.trivial.values()))))} / "
                        f"{format_value(float(np.mean(list(frozen.reference.values()))))}")
    lines += ["", "*Frozen references* (trivial / reference raw metric, mean over seeds): " + "; ".join(refs) + "."]
    notes = summary[["profile", "score_note"]].drop_duplicates()
    for profile, note in zip(notes["profile"], notes["score_note"]):
        if isinstance(note, str) and note and profile not in unfrozen:     # unfrozen: said above
            lines += ["", f"**No normalised score at n = {task.n_units(profile):,}** — {note}."]
    lines += ["", "| entry | budget | " + " | ".join(f"n = {_n_label(n)}" for n in sizes) + " |",
              "|---|---|" + "---|" * len(sizes)]
    cells = {(r["entry"], r["budget"], r["profile"]): r for _, r in summary.iterrows()}
    for entry, label, budget in _entry_rows(summary):
        row = [_cell(cells[(entry, budget, p)]) if (entry, budget, p) in cells else "—" for p in profiles]
        lines.append(f"| {label} | {_budget_text(budget)} | " + " | ".join(row) + " |")
    lines.append("")
    if figure is not None:
        lines += [f"![{task.name}: {task.metric.name} against ε at each n]({figure.name})", ""]
    return lines


# --------------------------------------------------------------------------- the figure
def _scale_y(ax: Axes, values: np.ndarray) -> None:
    """A log axis when every value is positive, else symmetric-log from 0 (a gap of exactly 0
    happens); the limits leave room above and below every line (the reference lines included)."""
    from matplotlib.ticker import NullFormatter

    values = values[np.isfinite(values)]
    if not values.size:
        return
    low, high = float(values.min()), float(values.max())
    if low > 0:
        ax.set_yscale("log")
        ax.set_ylim(low / 2.0, high * 2.0)
    else:
        positive = np.abs(values[values != 0])
        ax.set_yscale("symlog", linthresh=float(positive.min()) if positive.size else 1e-3)
        ax.set_ylim(min(low * 2.0, 0.0), high * 2.0 if high > 0 else 1.0)
    ax.yaxis.set_minor_formatter(NullFormatter())     # decade labels only: the minor ones overlap


def _plot_task(task: Task, rows: pd.DataFrame, summary: pd.DataFrame, out_dir: Path) -> Path | None:
    """The task's figure: the raw metric against the ε budget, one panel per private entry, a line
    (mean ± 1 s.e. over seeds) per n; dashed: the non-private reference at that n; dotted: the
    trivial answer at that n."""
    # here, not at the top: matplotlib loads only when a figure is drawn
    from matplotlib import colormaps
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    from privrl.experiments.plots import mean_se_band, new_figure, save_figure

    scored = rows[(rows["mode"] == "score") & (rows["metric"] == task.metric.name)
                  & rows["outcome"].isin(["ok", "over budget", "uncertified"])]
    private = scored[scored["role"] == "private"]
    if private.empty:
        return None
    names = list(dict.fromkeys(e for e, *_ in _entry_rows(summary) if e in set(private["entry"])))
    profiles = [p for p in _profiles(task) if (scored["scale"] == p).any()]
    colors = dict(zip(profiles, colormaps["viridis"](np.linspace(0.0, 0.8, len(profiles)))))
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = new_figure(ncols, nrows, width=3.6, height=2.9, squeeze=False)
    labels = summary.drop_duplicates("entry").set_index("entry")["label"].to_dict()
    for ax, name in zip(axes.flat, names):
        drawn = []
        for profile in profiles:
            mine = private[(private["entry"] == name) & (private["scale"] == profile)]
            mine = mine[mine["budget"].str.startswith("eps")]
            if mine.empty:
                continue
            mine = mine.assign(eps=mine["budget"].str.partition("=")[2].astype(float))
            mean_se_band(ax, mine, x="eps", y="value", color=colors[profile], marker="o", markersize=3,
                         linestyle="-", band_legend=False)
            drawn.append(mine.groupby("eps")["value"].mean().to_numpy())
            for entry, style in ((task.reference, "--"), (task.trivial, ":")):
                ref = scored[(scored["entry"] == entry) & (scored["scale"] == profile)]["value"]
                if len(ref):
                    ax.axhline(float(ref.mean()), color=colors[profile], linestyle=style, linewidth=0.9)
                    drawn.append(np.asarray([ref.mean()]))
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        _scale_y(ax, np.concatenate(drawn) if drawn else np.array([]))
        ax.set_title(str(labels.get(name, name)), fontsize=9)
        ax.set_xlabel("ε (budget)", fontsize=8)
        ax.set_ylabel(task.metric.name, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[p], marker="o", label=f"n = {task.n_units(p):,}") for p in profiles]
    handles += [Line2D([], [], color="0.3", linestyle="--", label=f"non-private reference ({task.reference}) at n"),
                Line2D([], [], color="0.3", linestyle=":", label=f"trivial ({task.trivial}) at n")]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize=8,
               title="shaded: mean ± 1 s.e. over seeds", title_fontsize=8)
    direction = "lower is better" if task.metric.lower_is_better else "higher is better"
    fig.suptitle(f"{task.versioned_name}: {task.metric.label} ({direction}) against ε, a line per n", fontsize=10)
    return save_figure(fig, out_dir, f"sweep-{task.name}", formats=("png",))[0]


# --------------------------------------------------------------------------- the files
def _intro(manifest: Mapping[str, object], budgets: Sequence[str], left_out: Mapping[str, str]) -> list[str]:
    lines = ["# privrl benchmark: data-size sweeps", "",
             "Every policy-evaluation and offline-learning task at several data sizes n, every entry at every "
             "budget: how utility grows with n and ε. Regenerate with `make bench-sweep` (`privrl bench --sweep`); "
             "see [the benchmark's documentation](../bench.md#sweeps).", "",
             f"Commit `{str(manifest.get('commit') or 'unknown')[:12]}` · {manifest.get('cells', 0)} cells, "
             f"{manifest.get('ran', 0)} run by this invocation and the others resumed · {manifest.get('cores')} "
             f"cores · this invocation: wall {manifest.get('wall_seconds', 0):.0f} s, CPU "
             f"{manifest.get('cpu_seconds', 0):.0f} s · the cells' own CPU time: "
             f"{manifest.get('cells_cpu_seconds', 0):.0f} s · budgets: {', '.join(_budget_text(b) for b in budgets)}.",
             "",
             "How to read a table: a column per n; a cell is the **normalised score** (mean ± standard error over "
             "seeds; 0 = the task's trivial answer, 100 = its non-private reference, both *at the same n*, frozen "
             "per size) and, in brackets, the **raw metric** (mean). δ = 1/(10 n). A score compares an entry with "
             "the non-private reference at the same n, so it is the cost of privacy at that size; the raw metric "
             "compares sizes. The figures draw the raw metric against ε, a line per n.", ""]
    if left_out:
        by_setting: dict[str, list[str]] = {}
        for name, why in left_out.items():
            by_setting.setdefault(why, []).append(f"`{name}`")
        lines += [f"*Not swept* (the sweep covers the settings {' and '.join(SWEEP_SETTINGS)}): "
                  + "; ".join(f"{', '.join(names)} ({why})" for why, names in by_setting.items()) + ".", ""]
    return lines


def write_sweeps(summary: pd.DataFrame, rows: pd.DataFrame, tasks: Sequence[Task], out_dir: str | Path, *,
                 manifest: Mapping[str, object], references: References | None) -> list[Path]:
    """Write ``sweeps.md``, ``sweeps.csv``, ``sweeps-manifest.json`` and ``sweep-<task>.png`` into
    ``out_dir`` from the :func:`summarise_sweep` table and the cells' ``rows``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    selection = manifest.get("selection")
    budgets = selection.get("budgets") if isinstance(selection, Mapping) else None
    lines = _intro(manifest, budgets or [str(b) for b in SWEEP_BUDGETS], skipped(tasks))
    written: list[Path] = []
    for task in sweep_tasks(tasks):
        mine = summary[summary["task"] == task.name] if len(summary) else summary
        if not len(mine):
            continue
        figure = _plot_task(task, rows[rows["task"] == task.name], mine, out)
        if figure is not None:
            written.append(figure)
        lines += _task_section(task, mine, references, figure)
    written.append(atomic_write_text(out / "sweeps.md", "\n".join(lines)))
    written.append(atomic_write_bytes(out / "sweeps.csv", summary.to_csv(index=False).encode("utf-8")))
    written.append(atomic_write_text(out / "sweeps-manifest.json",
                                     json.dumps(manifest, indent=2, default=str) + "\n"))
    return written
