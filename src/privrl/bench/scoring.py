"""From the cells' rows to the leaderboard's table: raw metric and normalised score, mean ± standard
error over seeds, ε spent, status and the audit's ε_lower.

Normalised score, per task and seed: ``100 · (m − m_trivial) / (m_reference − m_trivial)``, with
``m_trivial`` the trivial entry's metric (0 on the scale) and ``m_reference`` the non-private
reference's (100) on the same seed's data; it is defined for lower- and higher-is-better metrics
alike (above 100: better than the non-private reference; below 0: worse than the trivial answer).
When the reference is no better than the trivial answer on a seed the score of that seed is
undefined (NaN). The optimum, where known, gets the score ``100 · (opt − m_trivial) /
(m_reference − m_trivial)`` (mean over seeds).

A normalised score needs a reference *clearly* better than the trivial answer
(:func:`reference_check`): over the seeds, the reference's mean improvement on the trivial answer
must exceed :data:`MIN_REFERENCE_GAIN` of the trivial answer's metric and two standard errors.
Otherwise the task's reference is *degenerate* on this run and every score of the task is left
blank (NaN, the raw metric stays), with the reason in ``score_note``: dividing by a span that is
noise would turn round-off into scores of ±10⁴.

``status`` is ``ok`` (certified at the budget), ``over budget``, ``refused``, ``uncertified`` (an
uncertified reference: scored like the others, with no ε spent and never counted as meeting the
budget; ``reason`` says why its guarantee does not cover the task's unit) or ``violation``: the
entry's audit on the task (one, at :data:`~privrl.bench.spec.AUDIT_BUDGET`) found ε_lower above its
claim, so every row of the entry on that task that ran is ``violation`` — the code audited is the
same at every budget — with the audit's numbers in ``reason``.

``audit_max_epsilon_lower`` is the largest ε_lower the entry's sampled audit could report with its
number of fits (:func:`privrl.bench.audit.max_epsilon_lower`): a claim above it cannot be flagged.

``below_trivial`` is True when the score is below 0 (worse than the trivial answer) by more than two
standard errors over the seeds (:func:`below_trivial`; never with one seed, which has no standard
error).

With ``references`` (the frozen reference file, :mod:`privrl.bench.references`) the trivial and
reference metrics of each seed are the *frozen* ones of the task's version, not the run's own rows:
a score then means the same on every run of ``task-vN``. A task with nothing frozen for its version
and profile, or whose run data differ from the frozen version (their hashes), gets no score (the
reason in ``score_note``); a seed that is not frozen is left out of the score. ``task_version`` is
``task-vN``.

``n_warned`` counts the seeds of a cell whose fit raised a :class:`~privrl.errors.UtilityWarning`
(or a privacy-leak warning): the leaderboard marks those cells.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privrl.bench.references import Frozen, References, scale_of
from privrl.bench.spec import Task

__all__ = ["COLUMNS", "MIN_REFERENCE_GAIN", "summarise", "mean_se", "normalised", "reference_check", "below_trivial"]

#: the columns of the summary (and of ``leaderboard.csv``)
COLUMNS = ("task", "task_version", "setting", "entry", "label", "role", "calibration", "budget", "status", "reason",
           "metric", "raw_mean", "raw_se", "score_mean", "score_se", "below_trivial", "n_seeds", "epsilon_spent",
           "delta", "rho_spent", "epsilon_lower", "claimed_epsilon", "audit_verdict", "audit_method", "audit_trials",
           "audit_max_epsilon_lower", "notes", "n_warned", "score_note", "cpu_seconds")
#: the smallest improvement of the reference on the trivial answer (a fraction of the trivial
#: answer's metric) for which the task's normalised score is defined
MIN_REFERENCE_GAIN = 0.05


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (NaN standard error for a single value) of the finite values."""
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else math.nan
    return float(arr.mean()), se


def normalised(value: float, trivial: float, reference: float, *, lower_is_better: bool | None = None) -> float:
    """``100 · (value − trivial) / (reference − trivial)``; NaN when the reference does not differ
    from the trivial answer, or (given the metric's direction) is no better than it: the scale
    would then be inverted."""
    span = reference - trivial
    if not (math.isfinite(span) and abs(span) > 1e-12 * max(1.0, abs(trivial))):
        return math.nan
    if lower_is_better is not None and (span > 0) == lower_is_better:
        return math.nan
    return 100.0 * (value - trivial) / span


def reference_check(trivial: Mapping[int, float], reference: Mapping[int, float], *, lower_is_better: bool,
                    min_gain: float = MIN_REFERENCE_GAIN) -> str:
    """``""`` when the reference is clearly better than the trivial answer over the common seeds
    (mean gain above ``min_gain`` · |trivial| and above two standard errors), else why not."""
    seeds = sorted(set(trivial) & set(reference))
    gains = [(trivial[s] - reference[s]) * (1.0 if lower_is_better else -1.0) for s in seeds]
    gains = [g for g in gains if math.isfinite(g)]
    if not gains:
        return "undecided reference: no seed with both the trivial and the reference entry"
    gain, se = mean_se(gains)
    scale = abs(float(np.mean([trivial[s] for s in seeds])))
    if gain > min_gain * scale and not (math.isfinite(se) and gain <= 2.0 * se):
        return ""
    spread = f" ± {se:.2g}" if math.isfinite(se) else ""
    return (f"degenerate reference: the reference improves on the trivial answer by {gain:.3g}{spread} over "
            f"{len(gains)} seed{'s' if len(gains) != 1 else ''}, less than {100 * min_gain:g} % of the trivial "
            "answer's metric or than two standard errors")


def below_trivial(score_mean: float, score_se: float) -> bool:
    """True when a normalised score is below 0 (the trivial answer) by more than two standard errors."""
    return bool(math.isfinite(score_mean) and math.isfinite(score_se) and score_mean + 2.0 * score_se < 0.0)


def _violation(audit: Any) -> str:
    """The reason of a ``violation`` row: the audit's numbers (``audit`` is the entry's audit row)."""
    return (f"the audit at {audit['budget']} finds ε_lower = {float(audit['value']):.3g} above the claimed "
            f"ε = {float(audit.get('claimed', math.nan)):.3g}")


def _per_seed(scores: pd.DataFrame, entry: str) -> dict[int, float]:
    rows = scores[(scores["entry"] == entry) & (scores["outcome"] == "ok")]
    return dict(zip(rows["seed"].astype(int), rows["value"].astype(float)))


def _first(values: Any) -> str:
    vals = [str(v) for v in values if isinstance(v, str) and v and v != "nan"]
    return vals[0] if vals else ""


def _notes(values: Any) -> str:
    seen: list[str] = []
    for v in values:
        for note in str(v).split("; ") if isinstance(v, str) and v else ():
            if note not in seen:
                seen.append(note)
    return "; ".join(seen)


def _scale(rows: pd.DataFrame, scores: pd.DataFrame, task: Task, references: References | None,
           profile: str) -> tuple[dict[int, float], dict[int, float], str]:
    """Per seed the metrics at 0 and 100 (frozen with ``references``, else the run's own trivial and
    reference rows) and the score note ("" when the scale is usable)."""
    if references is None:
        trivial, reference = _per_seed(scores, task.trivial), _per_seed(scores, task.reference)
        note = ""
    else:
        trivial, reference, note = scale_of(rows, task, references, profile)
    if not note:
        note = reference_check(trivial, reference, lower_is_better=task.metric.lower_is_better)
    return trivial, reference, note


def summarise(df: pd.DataFrame, tasks: Mapping[str, Task], entries: Mapping[str, object], *,
              references: References | None = None, profile: str = "full") -> pd.DataFrame:
    """One row per (task, entry, budget) of the cells' rows ``df`` (:func:`privrl.experiments.results.load_results`
    of the ``bench`` experiment, ``profile``), scored against the frozen ``references`` when given: see
    the module docstring."""
    out = []
    for task_name, task in tasks.items():
        rows = df[df["task"] == task_name] if len(df) else df
        if rows.empty:
            continue
        metric = task.metric.name
        scores = rows[(rows["mode"] == "score") & (rows["metric"] == metric)]
        audits = rows[rows["mode"] == "audit"]
        trivial, reference, score_note = _scale(rows, scores, task, references, profile)
        flagged = {r["entry"]: r for _, r in audits.iterrows() if r.get("verdict") == "VIOLATION"}
        for (entry_name, budget), cell in scores.groupby(["entry", "budget"], sort=False):
            entry = entries.get(entry_name)
            ok = cell[cell["outcome"].isin(["ok", "over budget", "uncertified"])]     # scored
            raw = ok["value"].astype(float).tolist()
            lower = task.metric.lower_is_better
            norm = [normalised(v, trivial[s], reference[s], lower_is_better=lower)
                    for s, v in zip(ok["seed"].astype(int), raw) if s in trivial and s in reference
                    and not score_note]
            warned = int(sum(isinstance(n, str) and n not in ("", "nan") for n in ok["notes"]))
            audit = audits[(audits["entry"] == entry_name) & (audits["budget"] == budget)]
            a = audit.iloc[0] if len(audit) else None
            status = "refused" if (cell["outcome"] == "refused").all() else next(
                (s for s in ("uncertified", "over budget") if (ok["outcome"] == s).any()), "ok")
            reason = _first(cell["reason"]) if status != "ok" else ""
            if entry_name in flagged and status in ("ok", "over budget"):
                reason = "; ".join(r for r in (_violation(flagged[entry_name]), reason) if r)
                status = "violation"
            score = mean_se(norm)
            out.append({
                "task": task_name, "task_version": task.versioned_name, "setting": task.setting, "entry": entry_name,
                "label": getattr(entry, "label", entry_name),
                "role": _first(cell["role"]) or getattr(entry, "role", ""),
                "calibration": getattr(entry, "calibration", None) or "", "budget": budget, "status": status,
                "reason": reason, "metric": metric,
                **dict(zip(("raw_mean", "raw_se"), mean_se(raw))),
                "score_mean": score[0], "score_se": score[1], "below_trivial": below_trivial(*score),
                "n_seeds": len(raw), "epsilon_spent": float(ok["epsilon"].astype(float).max()) if len(ok) else math.nan,
                "delta": float(cell["delta"].astype(float).iloc[0]),
                "rho_spent": float(ok["rho"].astype(float).max()) if len(ok) else math.nan,
                "epsilon_lower": math.nan if a is None else float(a["value"]),
                "claimed_epsilon": math.nan if a is None else float(a.get("claimed", math.nan)),
                "audit_verdict": "" if a is None else str(a.get("verdict", a.get("outcome", ""))),
                "audit_method": "" if a is None else str(a.get("method", a.get("reason", ""))),
                "audit_trials": math.nan if a is None else float(a.get("trials", math.nan)),
                "audit_max_epsilon_lower": math.nan if a is None else float(a.get("epsilon_lower_max", math.nan)),
                "notes": _notes(cell["notes"]), "n_warned": warned, "score_note": score_note,
                "cpu_seconds": float(cell["cpu_seconds"].astype(float).sum()),
            })
    return pd.DataFrame(out, columns=list(COLUMNS))


def reference_points(summary: pd.DataFrame, task: Task, frozen: Frozen | None = None) -> dict[str, float]:
    """The trivial and reference raw metrics of ``task``: the ``frozen`` ones (means over their
    seeds) when given, else those of ``summary`` (means over seeds)."""
    if frozen is not None:
        return {"trivial": float(np.mean(list(frozen.trivial.values()))),
                "reference": float(np.mean(list(frozen.reference.values())))}
    rows = summary[summary["task"] == task.name]
    get = {r["entry"]: r["raw_mean"] for _, r in rows.iterrows()}
    return {"trivial": get.get(task.trivial, math.nan), "reference": get.get(task.reference, math.nan)}
