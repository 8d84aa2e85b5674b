"""The leaderboard: ``leaderboard.md`` (one table per task), ``leaderboard.csv``, one
privacy–utility plot per task and ``manifest.json`` (commit, versions, cores, wall and CPU time).

Every cell shows the ε the entry's own ledger spends at the task's δ; a refused entry shows the
library's reason; an uncertified reference (a paper's baseline whose guarantee is for another unit)
shows its score, :data:`UNCERTIFIED_MARK` and why in place of an ε, is labelled so in the table and
drawn dotted in the plot; the audit column shows ε_lower (black-box or release audit) at ε = 1,
flagged ``⚠ VIOLATION`` when it exceeds the claimed ε (red in the terminal) — and then every row of the
entry on the task carries the flag (status ``violation``: the code audited is the same at every
budget). A score below the trivial answer by more than two standard errors carries
:data:`BELOW_TRIVIAL_MARK`, explained under its table.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privrl._io import atomic_write_bytes, atomic_write_text
from privrl.bench.overview import overview_lines
from privrl.bench.references import References, frozen_points
from privrl.bench.scoring import reference_points
from privrl.bench.spec import AUDIT_BUDGET, SETTING_TITLES, Task
from privrl.experiments.runner import git_commit, versions

__all__ = ["write_leaderboard", "terminal_table", "VIOLATION_MARK", "WARNED_MARK", "UNCERTIFIED_MARK",
           "BELOW_TRIVIAL_MARK", "format_value"]

VIOLATION_MARK = "⚠ VIOLATION"
#: the mark of a score cell whose fits raised a utility (or privacy-leak) warning, with the seeds that did
WARNED_MARK = "⚑"
#: the mark of a score below 0 (worse than the trivial answer) by more than two standard errors
BELOW_TRIVIAL_MARK = "▼ below trivial"
#: the ε cell (and plot label) of an uncertified reference: it runs, but claims no ε for the task's unit
UNCERTIFIED_MARK = "not DP for this unit"
_RED, _RESET = "\x1b[31m", "\x1b[0m"


def format_value(value: float, se: float = math.nan, digits: int = 3) -> str:
    """``mean ± se`` with ``digits`` significant digits (``—`` for NaN)."""
    if value is None or not math.isfinite(value):
        return "∞" if value == math.inf else "—"
    text = f"{value:.{digits}g}"
    if not math.isfinite(se):
        return text
    return f"{text} ± {0.0 if se <= 1e-9 * max(abs(value), 1e-300) else se:.2g}"


def _eps(row: Mapping[str, Any], short: bool = False) -> str:
    if row["role"] != "private":
        return "—" if row["role"] == "trivial" else "∞ (non-private)"
    if row["status"] == "refused":
        return "—"
    if row["status"] == "uncertified":
        return UNCERTIFIED_MARK if short else f"{UNCERTIFIED_MARK}: {str(row['reason']).replace('|', '/')}"
    text = format_value(row["epsilon_spent"], digits=3)
    if isinstance(row["budget"], str) and row["budget"].startswith("rho") and math.isfinite(row["rho_spent"]):
        text += f" (ρ {row['rho_spent']:.3g})"
    return text


def _flag(text: str, markdown: bool) -> str:
    return f"**{VIOLATION_MARK}** {text}" if markdown else f"{VIOLATION_MARK} {text}"


def _audit(row: Mapping[str, object], markdown: bool = True) -> str:
    lower = row["epsilon_lower"]
    if not isinstance(lower, float) or not math.isfinite(lower):
        # the entry's audit (on another row: one per task) flagged its code, which runs at every budget
        return _flag(f"(audit at {_budget_label(str(AUDIT_BUDGET))})", markdown) if row["status"] == "violation" \
            else "—"
    trials = row.get("audit_trials", math.nan)
    reach = row.get("audit_max_epsilon_lower", math.nan)
    method = str(row["audit_method"])
    if isinstance(trials, float) and math.isfinite(trials) and not method.startswith("release target"):
        method += f", {trials:.0f} fits per input"
        if isinstance(reach, float) and math.isfinite(reach):
            method += f": ε_lower ≤ {reach:.1f} at most"
    text = f"{lower:.2f} (claim {row['claimed_epsilon']:.2f}; {method})"
    return _flag(text, markdown) if row["audit_verdict"] == "VIOLATION" else text


def _budget_label(budget: str) -> str:
    if budget == "none":
        return "—"
    kind, _, value = budget.partition("=")
    return f"{'ε' if kind == 'eps' else 'ρ'} = {value}"


def _entry_label(row: Mapping[str, Any]) -> str:
    suffix = {"trivial": " (trivial)", "non-private": " (non-private)"}.get(row["role"], "")
    if row["status"] == "uncertified":
        suffix = " (uncertified reference)"
    return f"{row['label']}{suffix}"


def _score(row: Mapping[str, Any]) -> str:
    if row["status"] == "refused":
        return "refused: " + str(row["reason"]).replace("|", "/")
    text = format_value(row["score_mean"], row["score_se"], digits=3)
    warned = row.get("n_warned", 0)
    if isinstance(warned, (int, float)) and math.isfinite(warned) and warned > 0:
        text += f" {WARNED_MARK} {int(warned)}/{int(row['n_seeds'])}"
    if bool(row.get("below_trivial", False)):
        text += f" {BELOW_TRIVIAL_MARK}"
    if row["status"] == "over budget":
        text += f" (over budget: {str(row['reason']).replace('|', '/')})"
    return text


def _frozen_line(task: Task, references: References | None, profile: str) -> list[str]:
    """The task's frozen references: their version, seeds and data hashes (nothing without a reference file)."""
    if references is None:
        return []
    frozen = frozen_points(references, task, profile)
    if frozen is None:
        return ["", f"*Frozen references*: none for `{task.versioned_name}` at the {profile} profile."]
    hashes = ", ".join(f"seed {s} `{h[:12]}`" for s, h in sorted(frozen.data.items()))
    return ["", f"*Frozen references* (`{task.versioned_name}`, {profile} profile; scores are computed against "
                f"them, not against this run's trivial and reference rows): data SHA-256 {hashes}."]


def _task_header(task: Task, summary: pd.DataFrame, profile: str, entries: Mapping[str, object],
                 left_out: Mapping[str, str], references: References | None = None) -> list[str]:
    frozen = None if references is None else frozen_points(references, task, profile)
    refs = reference_points(summary, task, frozen)
    size = task.sizes[profile]
    n = task.n_units(profile)
    seeds = int(summary[summary["task"] == task.name]["n_seeds"].max() or task.seeds(profile))
    direction = "lower is better" if task.metric.lower_is_better else "higher is better"
    triv_label = getattr(entries.get(task.trivial), "label", task.trivial)
    ref_label = getattr(entries.get(task.reference), "label", task.reference)
    lines = [f"## `{task.versioned_name}` — {task.title}", "",
             f"{SETTING_TITLES[task.setting]} · privacy unit: one {task.privacy_unit.value.replace('_', ' ')} "
             f"({task.neighboring.value.replace('_', ' ')}) · n = {n:,} {task.units} · "
             f"δ = {task.delta_for(profile):.3g}"
             f" · {seeds} seeds" + "".join(f" · {k} = {v}" for k, v in size.items() if k not in ("n", "K", "seeds")),
             "", f"*Data*: {task.source}. *Logging policy*: {task.logging_policy}.", "",
             f"*Metric*: {task.metric.label} ({direction}). *Score*: 0 = {triv_label} "
             f"({format_value(refs['trivial'])}), 100 = {ref_label} ({format_value(refs['reference'])})"]
    if task.optimum is not None:
        from privrl.bench.scoring import normalised

        opt = normalised(task.optimum, refs["trivial"], refs["reference"], lower_is_better=task.metric.lower_is_better)
        lines[-1] += f"; optimum: {task.optimum_label} ({format_value(task.optimum)}, score {format_value(opt)})"
    lines[-1] += "."
    lines += _frozen_line(task, references, profile)
    score_note = _first_note(summary[summary["task"] == task.name])
    if score_note:
        lines += ["", f"**No normalised score on this run** — {score_note}: the score column is blank and the "
                      "plot empty; compare the raw metric."]
    for note in task.notes:
        lines += ["", f"*Note*: {note}"]
    if left_out:
        lines += ["", "*Left out*: " + "; ".join(f"`{k}` ({v})" for k, v in left_out.items()) + "."]
    return lines + [""]


def _first_note(rows: pd.DataFrame) -> str:
    notes = [n for n in rows.get("score_note", []) if isinstance(n, str) and n]
    return notes[0] if notes else ""


_ORDER = {"trivial": 0, "non-private": 1, "private": 2}


def _sorted(rows: pd.DataFrame) -> pd.DataFrame:
    def key(row: Any) -> tuple:
        kind, _, value = str(row["budget"]).partition("=")
        rank = 3 if row["status"] == "uncertified" else _ORDER.get(row["role"], 3)     # references last
        return (rank, row["entry"].split("[")[0], "[" in row["entry"], row["entry"],
                kind != "eps", float(value) if value else 0.0)
    order = sorted(range(len(rows)), key=lambda i: key(rows.iloc[i]))
    return rows.iloc[order]


def _task_table(rows: pd.DataFrame, task: Task) -> list[str]:
    metric = task.metric.label.split(" (")[0]
    lines = [f"| entry | budget | ε spent (at δ) | ε_lower (audit at ε = {AUDIT_BUDGET.value:g}) | {metric} | "
             "score |", "|---|---|---|---|---|---|"]
    for _, row in _sorted(rows).iterrows():
        raw = "—" if row["status"] == "refused" else format_value(row["raw_mean"], row["raw_se"])
        lines.append(f"| {_entry_label(row)} | {_budget_label(row['budget'])} | {_eps(row)} | {_audit(row)} | {raw} | "
                     f"{_score(row)} |")
    notes = {n for v in rows["notes"] for n in str(v).split("; ") if isinstance(v, str) and v and v != "nan"}
    out = lines + [""]
    if rows["below_trivial"].astype(bool).any():
        out += [f"{BELOW_TRIVIAL_MARK}: the score is below 0 by more than two standard errors over the seeds: the "
                f"entry does worse than the trivial answer ({task.trivial}).", ""]
    if notes:
        out += [f"{WARNED_MARK} k/n: the fits of k of the cell's n seeds raised a `UtilityWarning` (the library's "
                "flag for an answer that is degenerate or no better than a trivial one), listed below.", ""]
        out += ["<details><summary>warnings raised by the fits</summary>", ""]
        out += [f"- {n}" for n in sorted(notes)] + ["", "</details>", ""]
    return out


def reduced_run(manifest: Mapping[str, Any]) -> str | None:
    """What a run left out of the whole suite (tasks, entries, budgets, seeds, audit trials), as one
    sentence for the leaderboard's header; None for a whole-suite run."""
    from privrl.bench.entries import all_entries
    from privrl.bench.tasks import all_tasks

    sel = manifest.get("selection") or {}
    parts = []
    done, planned = manifest.get("cells", 0), manifest.get("planned_cells")
    if planned is not None and done < planned:
        parts.append(f"{done} of the {planned} planned cells finished (the others are blank)")
    missing = [t for t in all_tasks() if t not in sel.get("tasks", all_tasks())]
    if missing:
        parts.append("tasks not run: " + ", ".join(f"`{t}`" for t in missing))
    left = [e for e in all_entries() if e not in sel.get("entries", all_entries()) and all_entries()[e].plugin is None]
    if left:
        parts.append("entries not run: " + ", ".join(f"`{e}`" for e in left))
    if sel.get("seeds") is not None:
        n = int(sel["seeds"])
        parts.append(f"{n} seed{'s' if n != 1 else ''} per cell instead of each task's")
    if not sel.get("audit", True):
        parts.append("no audit")
    elif sel.get("audit_trials") is not None:
        parts.append(f"{sel['audit_trials']} audit trials per neighbouring input instead of each task's")
    return None if not parts else "**Reduced run** — " + "; ".join(parts) + "."


def _intro(profile: str, manifest: Mapping[str, Any]) -> list[str]:
    reduced = reduced_run(manifest)
    return [
        "# privrl benchmark: leaderboard", "",
        "Differentially private RL algorithms on common tasks, at common budgets, each cell certified by the "
        "entry's own privacy ledger and audited empirically. Regenerate with `make bench-suite` "
        "(`privrl bench`); see [the benchmark's documentation](../bench.md) for the tasks, the scores, the audit "
        "and how to add an algorithm.", "",
        f"Profile `{profile}` · commit `{(manifest.get('commit') or 'unknown')[:12]}` · "
        f"{manifest.get('cells', 0)} cells · {manifest.get('cores')} cores · "
        f"wall {manifest.get('wall_seconds', 0):.0f} s"
        f" · CPU {manifest.get('cpu_seconds', 0):.0f} s (this invocation; the cells' own CPU time: "
        f"{manifest.get('cells_cpu_seconds', 0):.0f} s).", "",
        *([reduced, ""] if reduced else []),
        *([f"*Note*: {manifest['note']}.", ""] if manifest.get("note") else []),
        "How to read a table: **ε spent** is what the entry's ledger spends at the task's δ (δ = 1/(10 n) unless "
        "the task says otherwise; for a ρ budget, ε at that δ and ρ); an entry that cannot certify a budget is "
        "**refused** with the library's reason; an entry whose ledger spends more than the budget is marked "
        "*over budget*. An *uncertified reference* (a paper's baseline whose guarantee protects another unit than "
        f"the task's) is scored like the others, but its ε cell says **{UNCERTIFIED_MARK}** and why: it meets no "
        "budget and is not audited. **score**: 0 = the trivial answer, 100 = the non-private reference named in the "
        "task, "
        "mean ± standard error over seeds (same data for every entry of a seed). **ε_lower**: the audit's 95 % "
        f"lower bound on ε, from one audit of the entry's mechanism per task at the budget ε = "
        f"{AUDIT_BUDGET.value:g} (shown on that row only; the code is the same at every budget); above the claim it "
        f"is flagged {VIOLATION_MARK}, and so is every row of that entry on the task (status `violation`). "
        f"{WARNED_MARK} k/n after a score: the fits of k of its n seeds raised a `UtilityWarning`. "
        f"{BELOW_TRIVIAL_MARK} after a score: it is below 0 by more than two standard errors, worse than the "
        "trivial answer.", "",
    ]


def _plot_task(task: Task, rows: pd.DataFrame, out_dir: Path) -> Path | None:
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import curve_colors, new_figure, save_figure

    private = rows[(rows["role"] == "private") & (rows["status"] != "refused")]
    if private.empty:
        return None
    fig, ax = new_figure(width=7.5, height=4.5)
    names = list(dict.fromkeys(private["entry"]))
    colors = curve_colors([n.split("[")[0] for n in names])
    low, high = -100.0, 160.0
    for name in names:
        color = colors[name.split("[")[0]]
        sub = private[private["entry"] == name]
        eps_rows = sub[sub["budget"].str.startswith("eps")]
        budget_eps = eps_rows["budget"].str.partition("=")[2].astype(float).to_numpy()
        spent = eps_rows["epsilon_spent"].astype(float).to_numpy()
        xs = np.where(np.isfinite(spent), spent, budget_eps)        # the ε the ledger spends
        order = np.argsort(xs)
        means = eps_rows["score_mean"].to_numpy(dtype=float)[order]
        inside = (means >= low) & (means <= high)
        errors = np.where(inside, eps_rows["score_se"].fillna(0).to_numpy(dtype=float)[order], 0.0)
        uncertified = (sub["status"] == "uncertified").any()
        style = ":" if uncertified else "--" if "[paper]" in name else "-"
        label = sub["label"].iloc[0]
        if uncertified:       # drawn at its budget for its own unit, which is not the task's
            label += f" — {UNCERTIFIED_MARK} (x: its ε for its own unit)"
        shown = means.clip(low, high)
        ax.errorbar(xs[order], shown, yerr=errors, marker=None, linestyle=style, color=color, label=label,
                    capsize=2)
        ax.scatter(xs[order][inside], shown[inside], marker="D" if uncertified else "o", zorder=3,
                   **({"facecolors": "none", "edgecolors": color} if uncertified else {"color": color}))
        ax.scatter(xs[order][~inside], shown[~inside], marker="x", color=color, zorder=3)
        rho = sub[sub["budget"].str.startswith("rho")]
        if len(rho):
            ax.scatter(rho["epsilon_spent"], rho["score_mean"].clip(low, high), marker="s", facecolors="none",
                       edgecolors=color)
    ax.axhline(0.0, color="grey", linewidth=1, label=f"trivial ({task.trivial})")
    ax.axhline(100.0, color="black", linewidth=1, label=f"non-private ({task.reference})")
    scored = np.isfinite(private["score_mean"].astype(float)) & (private["epsilon_spent"].astype(float) > 0)
    if not scored.any():      # e.g. the reference no better than the trivial answer: no normalised scale
        ax.text(0.5, 0.5, "no normalised score: the reference is not clearly better than the trivial answer",
                transform=ax.transAxes, ha="center", va="center", fontsize=9)
    else:
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())     # decade labels only: the minor ones overlap
    ax.set_ylim(low - 5, high + 5)
    ax.set(xlabel="ε spent at the task's δ (circles: ε budgets; squares: ρ budgets)", ylabel="normalised score",
           title=f"{task.versioned_name}: {task.metric.label}"
                 f"\n(scores outside [{low:g}, {high:g}] drawn at the edge as ×)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return save_figure(fig, out_dir, task.name, formats=("png",))[0]


def write_leaderboard(summary: pd.DataFrame, tasks: Sequence[Task], out_dir: str | os.PathLike, *, profile: str,
                      manifest: Mapping[str, object], entries: Mapping[str, object],
                      left_out: Mapping[str, Mapping[str, str]],
                      references: References | None = None) -> list[Path]:
    """Write ``leaderboard.md``, ``leaderboard.csv``, ``<task>.png`` and ``manifest.json`` into
    ``out_dir``; returns the paths written. ``references``: the frozen reference file the scores
    were computed against (each task's header then names its frozen version and data hashes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    lines = _intro(profile, manifest) + overview_lines(summary, tasks)
    lines += ["## Tasks", "", "| task | setting | privacy unit | n | metric | 0 = | 100 = |",
              "|---|---|---|---|---|---|---|"]
    for task in tasks:
        lines.append(f"| [`{task.versioned_name}`](#{task.name}) | {task.setting} | {task.privacy_unit.value} | "
                     f"{task.n_units(profile):,} {task.units} | {task.metric.name} | {task.trivial} | "
                     f"{task.reference} |")
    lines.append("")
    for task in tasks:
        rows = summary[summary["task"] == task.name]
        if rows.empty:
            continue
        lines += _task_header(task, summary, profile, entries, left_out.get(task.name, {}), references)
        lines += _task_table(rows, task)
        figure = _plot_task(task, rows, out)
        if figure is not None:
            written.append(figure)
            lines += [f"![{task.name}: normalised score against ε]({figure.name})", ""]
    written.append(atomic_write_text(out / "leaderboard.md", "\n".join(lines)))
    written.append(atomic_write_bytes(out / "leaderboard.csv", summary.to_csv(index=False).encode("utf-8")))
    written.append(atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2, default=str) + "\n"))
    return written


def terminal_table(summary: pd.DataFrame, tasks: Sequence[Task], *, color: bool | None = None) -> str:
    """A compact text table of the summary for the terminal (violations in red when ``color``)."""
    color = sys.stdout.isatty() if color is None else color
    lines = []
    for task in tasks:
        rows = summary[summary["task"] == task.name]
        if rows.empty:
            continue
        lines.append(f"{task.versioned_name}  ({task.metric.name}; 0 = {task.trivial}, 100 = {task.reference})")
        for _, row in _sorted(rows).iterrows():
            audit = _audit(row, markdown=False)
            if color and row["status"] == "violation":
                audit = f"{_RED}{audit}{_RESET}"
            score = _score(row)
            raw = "—" if row["status"] == "refused" else format_value(row["raw_mean"], row["raw_se"])
            lines.append(f"  {row['entry']:<28} {_budget_label(row['budget']):<10} eps {_eps(row, short=True):<20} "
                         f"{raw:<20} score {score[:70]:<24} audit {audit}")
    return "\n".join(lines)


#: what identifies a cell among a run's rows (``scale``: the profile, several in a data-size sweep)
_CELL_KEYS = ("task", "entry", "budget", "mode", "seed", "scale")


def _n_cells(cells: pd.DataFrame) -> int:
    keys = [c for c in _CELL_KEYS if c in cells]
    return int(len(cells[keys].drop_duplicates())) if keys and len(cells) else 0


def manifest_of(*, profile: str, selection: Mapping[str, object], wall_seconds: float, cpu_seconds: float,
                cells: pd.DataFrame, planned: int | None = None) -> dict[str, object]:
    """The manifest: commit, versions, cores, the selection, the cells finished (of ``planned``), wall
    and CPU time."""
    keys = [c for c in _CELL_KEYS if c in cells]
    once = cells.drop_duplicates(keys) if keys and len(cells) else cells     # one row per cell
    cpu_cells = float(once["cpu_seconds"].astype(float).sum()) if "cpu_seconds" in once else math.nan
    return {"commit": git_commit(), "versions": versions(), "cores": os.cpu_count(), "profile": profile,
            "selection": dict(selection), "cells": _n_cells(cells),
            "planned_cells": _n_cells(cells) if planned is None else int(planned),
            "wall_seconds": round(wall_seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
            "cells_cpu_seconds": round(cpu_cells, 1)}
