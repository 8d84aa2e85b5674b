"""Figures and the Markdown report of a results directory or a metrics archive.

* :func:`make_plots` calls each experiment's ``plot(df, DIR/<id>)`` with ``df = load_results(OUT)``
  filtered to that experiment (``DIR`` is ``OUT`` unless given);
* :func:`render_report` / :func:`write_report` make ``report.md``. At the top, two verdict tables:
  **the papers' claims** (what each paper states, in its own words and where, beside privrl's
  measurement) and **privrl's claims** (tight against sound calibration, frontiers, utility,
  agreement with the authors' code), then the counts per experiment, split the same way. Then per
  experiment the figures, the two kinds of claims beside the measurement (``Experiment.claims``),
  the privacy of each curve (non-private, uncertified, refused, or the ε spent, from the
  manifests; settings that differ only in the x-axis parameter form one curve), every deviation
  at the scale that ran (``Experiment.deviations_for``) and failed runs; last, the audit table of
  ``OUT/audit/audit.json`` when present (:mod:`privrl.audit.report`).

The report is a function of the runs and today's claim code: it carries no generation time stamp
(the date it gives is the last run's finish), so the same metrics give the same bytes.
:func:`headline_tables` gives the README's two short tables (the claims marked ``headline``).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from privrl.errors import InvalidDataError
from privrl.experiments._markdown import _cell, _num, _table, _verdict_cell
from privrl.experiments.archive import archive_experiments, is_archive, read_manifest, rows_path
from privrl.experiments.curve_privacy import NOISE_KEYS, _privacy_section, curves, privacy_status
from privrl.experiments.registry import all_experiments
from privrl.experiments.results import (
    atomic_write_text,
    check_results_dir,
    label_categories,
    load_manifests,
    load_results,
)
from privrl.experiments.spec import Claim, Experiment
from privrl.experiments.verdicts import verdict_counts

__all__ = ["PlotSummary", "Evaluation", "evaluate", "experiments_in", "make_plots", "render_report", "write_report",
           "headline_tables",
           "privacy_status", "curves", "AUDIT_FILE", "NOISE_KEYS"]

AUDIT_FILE = Path("audit") / "audit.json"


@dataclass
class PlotSummary:
    figures: dict[str, list[Path]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def experiments_in(out_dir: str | os.PathLike) -> list[str]:
    """Ids of the experiments with at least one run under ``OUT`` (a results directory or a
    metrics archive), sorted."""
    out = check_results_dir(out_dir)
    if is_archive(out):
        return archive_experiments(out)
    return sorted({p.parts[-4] for p in out.glob("*/*/seed=*/manifest.json")})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def make_plots(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None, *,
               figures_dir: str | os.PathLike | None = None, pool: cf.Executor | None = None) -> PlotSummary:
    """Draw every figure of the experiments found under ``OUT`` (or only ``experiment_ids``) into
    ``figures_dir/<id>`` (default ``OUT/<id>``), here or, with ``pool``, in its worker processes
    (an experiment a worker does not know, e.g. one registered at run time, is drawn here). The
    largest experiments of an archive are handed out first, so that no long figure starts last.

    An experiment without a ``plot`` function, unknown to the registry, or without a successful
    run is listed in ``skipped``; one whose ``plot`` raises is listed in ``errors``.
    """
    out = Path(out_dir)
    target = out if figures_dir is None else Path(figures_dir)
    ids = experiments_in(out) if experiment_ids is None else list(experiment_ids)
    drawn: dict[str, tuple[str, list[Path] | str | None]] = {}
    if pool is not None and len(ids) > 1:
        order = largest_first(out, ids)
        drawn = dict(zip(order, pool.map(_plot_one, [out] * len(ids), order, [target] * len(ids))))
    summary = PlotSummary()
    for exp_id in ids:
        kind, value = drawn.get(exp_id, ("unknown", None))
        if kind == "unknown":
            kind, value = _plot_one(out, exp_id, target)
        if kind == "figures":
            summary.figures[exp_id] = list(value)  # type: ignore[arg-type]
        elif kind == "error":
            summary.errors[exp_id] = str(value)
        else:
            summary.skipped.append(exp_id)
    return summary


def spawn_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes (fresh interpreters: no forked threads or state)."""
    import multiprocessing

    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def largest_first(out: Path, ids: Sequence[str]) -> list[str]:
    """``ids`` with the experiments of an archive ordered by the size of their rows, largest first
    (the order work is handed to a pool: the longest jobs start first); a results directory's in
    the given order."""
    if not is_archive(out):
        return list(ids)
    size = {e: rows_path(out, e).stat().st_size if rows_path(out, e).is_file() else 0 for e in ids}
    return sorted(ids, key=lambda e: -size[e])


def _plot_one(out: Path, exp_id: str, target: Path) -> tuple[str, list[Path] | str | None]:
    """One experiment's figures: ``("figures", paths)``, ``("error", message)``, ``("skipped", None)``
    (no plot function or no successful run) or ``("unknown", None)`` (not in this process's registry)."""
    exp = all_experiments().get(exp_id)
    if exp is None:
        return "unknown", None
    if exp.plot is None:
        return "skipped", None
    df = label_categories(load_results(out, exp_id))
    if len(df) == 0:
        return "skipped", None
    try:
        return "figures", [Path(p) for p in (exp.plot(df, target / exp_id) or [])]
    except Exception as exc:  # noqa: BLE001 - one broken figure must not stop the others
        return "error", _one_line(exc)
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")


# --------------------------------------------------------------------------- claims
@dataclass
class _Claims:
    claims: list[Claim] | None = None
    error: str | None = None
    note: str | None = None

    def of(self, source: str) -> list[Claim]:
        return [c for c in (self.claims or []) if c.source == source]


@dataclass
class Evaluation:
    """The runs of ``OUT`` and the claims of their experiments, evaluated once
    (:func:`evaluate`) for :func:`render_report` and :func:`headline_tables`."""

    out: Path
    ids: list[str]
    manifests: dict[str, list[dict[str, Any]]]
    claims: dict[str, _Claims]


def evaluate(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None) -> Evaluation:
    """Read the manifests of ``OUT`` (a results directory or a metrics archive) and evaluate the
    claims of each of its experiments (or of ``experiment_ids``) on its runs."""
    out = Path(out_dir)
    ids = experiments_in(out) if experiment_ids is None else list(experiment_ids)
    registry = all_experiments()
    manifests = {exp_id: load_manifests(out, exp_id) for exp_id in ids}
    claims = {exp_id: _evaluate_claims(out, exp_id, registry.get(exp_id), manifests[exp_id]) for exp_id in ids}
    return Evaluation(out, ids, manifests, claims)


def _scale(manifests: Sequence[Mapping[str, Any]]) -> str | None:
    scales = sorted({str(m.get("scale")) for m in manifests if m.get("scale")})
    return scales[0] if len(scales) == 1 else None


def _evaluate_claims(out: Path, exp_id: str, exp: Experiment | None, manifests: Sequence[Mapping[str, Any]]) -> _Claims:
    if exp is None or exp.claims is None:
        return _Claims(note="No claims registered for this experiment.")
    if not any(m.get("status") == "ok" for m in manifests):
        return _Claims(note="No successful run to measure.")
    try:
        df = label_categories(load_results(out, exp_id))
        scale = _scale(manifests)
        if "scale" not in df.columns and scale is not None:
            df["scale"] = scale
        claims = [c if isinstance(c, Claim) else Claim(*c) for c in exp.claims(df)]
        return _Claims(claims=claims)
    except Exception as exc:  # noqa: BLE001 - the report still lists everything else
        return _Claims(error=_one_line(exc))


def _reasons_text(claims: Sequence[Claim]) -> str:
    counts: dict[str, int] = {}
    for c in claims:
        if c.verdict == "undecided":
            reason = c.reason or "no reason given"
            counts[reason] = counts.get(reason, 0) + 1
    return "; ".join(f"{r} ×{n}" if n > 1 else r for r, n in counts.items()) or "—"


_SOURCE_NAMES = {"paper": "the papers' claims", "privrl": "privrl's claims"}


def _verdict_summary(ids: Sequence[str], evaluated: Mapping[str, _Claims],
                     scales: Mapping[str, str]) -> list[str]:
    lines = ["## Verdicts by experiment", "",
             "How many claims the measurement decides, the papers' and privrl's apart. *Undecided* "
             "claims say why (too few seeds, a best hyper-parameter on its grid boundary, a curve no "
             "better than the trivial answer, a scale-dependent claim below paper scale...). *Fragile* counts "
             "the verdicts that change under a perturbed rule (α = 0.01 or 0.10, tolerances × 0.5 or × 1.5, "
             "the trivial margin 5 % or 20 %, mean ± 1 or 2 SE in place of t tests, a rule's own threshold "
             "moved by its stated margin); each such claim's verdict cell gives every outcome.", ""]
    rows: list[tuple[object, ...]] = []
    totals = {src: dict.fromkeys(("holds", "fails", "undecided"), 0) for src in _SOURCE_NAMES}
    n_fragile = 0
    for exp_id in ids:
        ev = evaluated[exp_id]
        if ev.claims is None:
            rows.append((f"[{exp_id}](#{exp_id})", scales.get(exp_id, "?"), "—", "—", "—",
                         ev.error and f"claims could not be evaluated: {ev.error}" or ev.note or "—"))
            continue
        cells = []
        for src in _SOURCE_NAMES:
            counts = verdict_counts(ev.of(src))
            for k in counts:
                totals[src][k] += counts[k]
            cells.append(_counts_text(counts))
        fragile = sum(bool(c.robustness) for c in ev.claims)
        n_fragile += fragile
        rows.append((f"[{exp_id}](#{exp_id})", scales.get(exp_id, "?"), *cells, f"{fragile} of {len(ev.claims)}",
                     _reasons_text(ev.claims)))
    rows.append(("**total**", "", *(_counts_text(totals[src]) for src in _SOURCE_NAMES), str(n_fragile), ""))
    return lines + _table(["Experiment", "Scale", "Paper claims: holds / fails / undecided",
                           "privrl's claims: holds / fails / undecided", "Fragile", "Why undecided"], rows) + [""]


def _verbs(counts: Mapping[str, int]) -> str:
    """``"14 hold, 1 fails and 3 cannot be decided"``: the counts with their verbs in agreement."""
    def verb(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    return (f"{verb(counts['holds'], 'holds', 'hold')}, {verb(counts['fails'], 'fails', 'fail')} and "
            f"{verb(counts['undecided'], 'cannot be decided', 'cannot be decided')}")


def _counts_text(counts: Mapping[str, int]) -> str:
    return f"{counts['holds']} / {counts['fails']} / {counts['undecided']}" if sum(counts.values()) else "—"


def _paper_rows(pairs: Sequence[tuple[str, Claim]], papers: Mapping[str, str], *, link: bool = True) -> list[tuple]:
    return [(papers.get(e, "?"), c.where, f"“{c.quote}”", c.claim + (f" ([{e}](#{e}))" if link else ""),
             c.paper_value, c.paper_calibration_value, c.tight_value, _verdict_cell(c)) for e, c in pairs]


def _privrl_rows(pairs: Sequence[tuple[str, Claim]], *, link: bool = True) -> list[tuple]:
    return [(c.claim + (f" ([{e}](#{e}))" if link else ""), c.paper_calibration_value, c.tight_value,
             _verdict_cell(c)) for e, c in pairs]


_PAPER_HEADER = ["Paper", "Where", "The paper says", "What privrl tests", "Paper's number",
                 "privrl, paper calibration", "privrl, tight calibration", "Verdict"]
_PRIVRL_HEADER = ["Claim", "privrl, paper calibration", "privrl, tight calibration", "Verdict"]


def _claim_tables(ids: Sequence[str], evaluated: Mapping[str, _Claims], papers: Mapping[str, str]) -> list[str]:
    pairs = {src: [(e, c) for e in ids for c in evaluated[e].of(src)] for src in _SOURCE_NAMES}
    lines = ["## The papers' claims", "",
             "Every claim a paper makes that an experiment here can test: the paper's words and where "
             "it says them, what privrl measures to test it (with the paper's number and privrl's, in "
             "the paper's and in the tight calibration, where the claim has numbers) and the verdict. "
             "The measurement behind each verdict is in the experiment's section.", ""]
    lines += (_table(_PAPER_HEADER, _paper_rows(pairs["paper"], papers)) if pairs["paper"]
              else ["*No paper claim was evaluated.*"]) + [""]
    lines += ["## privrl's claims", "",
              "What privrl claims about its own design and defaults — tight against sound calibration, "
              "the privacy–utility frontiers, utility beside the trivial answer, agreement with the "
              "authors' released code — decided the same way.", ""]
    lines += (_table(_PRIVRL_HEADER, _privrl_rows(pairs["privrl"])) if pairs["privrl"]
              else ["*No privrl claim was evaluated.*"]) + [""]
    return lines


def headline_tables(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None, *,
                    evaluation: Evaluation | None = None) -> str:
    """The README's summary of ``OUT`` (a metrics archive): how many claims hold, fail or are
    undecided, the papers' and privrl's apart, and two short tables of the claims marked
    ``headline``, with links into ``docs/results/report.md``. ``evaluation``: the claims already
    evaluated (:func:`evaluate`)."""
    ev = evaluation or evaluate(out_dir, experiment_ids)
    out, ids, manifests, evaluated = ev.out, ev.ids, ev.manifests, ev.claims
    registry = all_experiments()
    papers = {e: _short_paper(registry.get(e)) for e in ids}
    every = [m for ms in manifests.values() for m in ms]
    scales = sorted({str(m.get("scale")) for m in every if m.get("scale")})
    counts = {src: verdict_counts([c for e in ids for c in evaluated[e].of(src)]) for src in _SOURCE_NAMES}
    sweep = ""
    if is_archive(out):
        info = read_manifest(out)
        cores = (info.get("machine") or {}).get("cores")
        if info.get("wall_seconds") is not None:
            sweep = (f", in {float(info['wall_seconds']) / 60:.0f} minutes of wall time"
                     + (f" on {cores} cores" if cores else ""))
    paper, own = counts["paper"], counts["privrl"]
    fragile = sum(bool(c.robustness) for e in ids for c in evaluated[e].claims or ())
    lines = [f"The committed evidence: {len(every)} runs of {len(ids)} experiments at {', '.join(scales) or '?'} "
             f"scale{sweep}. Regenerating it reruns every experiment; whether each paper's claim holds is a "
             f"computed verdict, not a given. Of the {sum(paper.values())} claims of the papers, {_verbs(paper)}; of "
             f"the {sum(own.values())} claims privrl makes about its own design, {_verbs(own)}. Every undecided claim "
             f"says why; {fragile} verdicts change under a perturbed rule and say so; the full tables open the "
             "report.", ""]
    for src, title, header in (
            ("paper", "**The papers' claims** (a few; the papers' words are in the report):",
             ["paper (where)", "privrl tests", "paper's number", "privrl, paper calibration",
              "privrl, tight calibration", "verdict"]),
            ("privrl", "**privrl's claims** (a few):", ["privrl claims", "privrl, paper calibration",
                                                         "privrl, tight calibration", "verdict"])):
        chosen = [(e, c) for e in ids for c in evaluated[e].of(src) if c.headline]
        rows: list[tuple[str, ...]]
        if src == "paper":
            rows = [(f"{papers[e]}, {c.where}", f"{c.claim} ([{e}](docs/results/report.md#{e}))",
                     c.paper_value, c.paper_calibration_value, c.tight_value, _verdict_cell(c)) for e, c in chosen]
        else:
            rows = [(f"{c.claim} ([{e}](docs/results/report.md#{e}))", c.paper_calibration_value, c.tight_value,
                     _verdict_cell(c)) for e, c in chosen]
        lines += [title, ""] + _table(header, rows) + [""]
    return "\n".join(lines).rstrip() + "\n"


def _short_paper(exp: Experiment | None) -> str:
    """"Balle, Gomrokchi & Precup (2016)" of "Balle, Gomrokchi & Precup (2016), Differentially..."."""
    if exp is None:
        return "?"
    text = str(exp.paper)
    return text.split("), ", 1)[0] + ")" if "), " in text else text


# --------------------------------------------------------------------------- sections
def _paper_calibration_note(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """The banner of an experiment with paper-calibration curves, decided from their ledgers:
    sound (every run spends at most its target; ε = 0 explained) or not (some run spends more,
    or claims no ε)."""
    paper = [m for m in manifests if m.get("calibration") == "paper" and m.get("status") == "ok"]
    if not paper:
        return []
    over, zero, deltas = [], [], set()
    for m in paper:
        status = privacy_status(m)
        budget = m.get("budget") or {}
        if status != "epsilon":
            if status != "non-private":
                over.append(m)
            continue
        spent, target = _float(m.get("epsilon_spent")), _float(budget.get("epsilon"))
        rho_spent, rho = _float(m.get("rho_spent")), _float(budget.get("rho"))
        over_eps = math.isfinite(target) and spent > target * (1 + 1e-6)
        if over_eps or (math.isfinite(rho) and rho_spent > rho * (1 + 1e-6)):
            over.append(m)
        if spent == 0.0:
            zero.append(m)
            deltas.add(_num(m.get("delta")))
    text = ("> **Paper calibration**: some curves use the paper's noise calibration as printed; they are "
            "labelled \"(paper calibration)\" in the figures and \"paper\" below. ")
    if over:
        text += ("Here it is **not sound**: the ledgers record what those runs truly spend, above the target, "
                 "or the runs claim no ε (uncertified).")
    else:
        text += ("Here it is sound but looser than needed: every such run spends at most its target, so the "
                 "printed noise is larger than the tight calibration's at the same budget.")
        if zero:
            at = next(iter(deltas)) if len(deltas) == 1 else "the stated δ"
            text += (f" Its privacy reads ε = 0 at δ = {at}: the printed noise is so large that the outputs on "
                     f"two neighbouring datasets are within total variation {at} of each other, so the release "
                     f"is (0, {at})-DP — far more private than the target ε, at a cost in accuracy.")
    return [text, ""]


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _experiment_section(exp_id: str, exp: Any, manifests: list[dict[str, Any]], evaluated: _Claims,
                        figures: Sequence[Path]) -> list[str]:
    ok = [m for m in manifests if m.get("status") == "ok"]
    failed = [m for m in manifests if m.get("status") != "ok"]
    title = f"## {exp_id}" + (f" — {exp.paper}, {exp.figure}" if exp is not None else "")
    lines = [f'<a id="{exp_id}"></a>', "", title, ""]
    if exp is None:
        lines += ["*This experiment is not registered in this version of privrl; its runs are "
                  "listed but no figure or claim can be evaluated.*", ""]
    else:
        lines += [exp.description, ""]
    scales = sorted({str(m.get("scale")) for m in manifests if m.get("scale")})
    seeds = sorted({int(m.get("seed", -1)) for m in ok})
    lines += [f"Runs: {len(ok)} ok, {len(failed)} failed; scale: {', '.join(scales) or 'unknown'}; "
              f"seeds: {len(seeds)}.", ""]
    lines += _paper_calibration_note(manifests)

    lines += ["### Figures", ""]
    if figures:
        for fig in figures:
            pdf = f" ([PDF]({exp_id}/{fig.stem}.pdf))" if fig.with_suffix(".pdf").exists() else ""
            lines += [f"![{fig.stem}]({exp_id}/{fig.name}){pdf}", ""]
    else:
        lines.append("*No figure (run `privrl plot OUT`).*")
    lines.append("")

    if evaluated.error is not None:
        lines += ["### Claims beside the measurement", "",
                  f"*The claims could not be evaluated: {_cell(evaluated.error)}*", ""]
    elif evaluated.claims is None:
        lines += ["### Claims beside the measurement", "", f"*{evaluated.note}*", ""]
    else:
        paper, own = evaluated.of("paper"), evaluated.of("privrl")
        if paper:
            lines += ["### The paper's claims beside the measurement", ""]
            lines += _table(["Where", "The paper says", "What privrl tests", "Measured", "Verdict"],
                            [(c.where, f"“{c.quote}”", c.claim, c.measured, _verdict_cell(c)) for c in paper])
            lines.append("")
        if own:
            lines += ["### privrl's claims beside the measurement", ""]
            lines += _table(["Claim", "Measured", "Verdict"], [(c.claim, c.measured, _verdict_cell(c)) for c in own])
            lines.append("")

    curve_x = exp.curve_params() if exp is not None else ()
    lines += _privacy_section(ok, curve_x)

    lines += ["### Deviations from the paper", ""]
    deviations = list(exp.deviations_for(_scale(manifests))) if exp is not None else []
    lines += [f"- {d}" for d in deviations] if deviations else ["- None recorded."]
    lines.append("")

    if failed:
        lines += ["### Failed runs", ""]
        lines += _table(["Setting", "Seed", "Error"],
                        [(m.get("setting"), m.get("seed"), _last_line(m.get("error"))) for m in failed])
        lines.append("")
    return lines


def _last_line(text: object) -> str:
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown error"


def _audit_rows(data: Any) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        for key in ("rows", "results", "audits"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise InvalidDataError("audit.json is not a list of audit rows")
    return data


def _audit_section(out: Path) -> list[str]:
    # here, not at the top: the audit report loads SciPy, needed only when the results hold audits
    from privrl.audit.report import rows_table, summary_markdown

    path = out / AUDIT_FILE
    if not path.is_file():
        return []
    lines = ["## Privacy audit", "", f"From `{AUDIT_FILE.as_posix()}`: empirical lower bounds on ε "
             "from distinguishing attacks beside the claimed ε. Rows with a `broken` variant are "
             "negative controls, broken on purpose: their VIOLATION is expected (status `caught`); "
             "a VIOLATION of a row without one is a bug.", ""]
    try:
        rows = _audit_rows(json.loads(path.read_text(encoding="utf-8")))
        summary = summary_markdown(out)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, InvalidDataError, KeyError, TypeError) as exc:
        return lines + [f"*{AUDIT_FILE.as_posix()} could not be read: {_cell(_one_line(exc))}*", ""]
    if summary:
        lines += [summary, ""]
    return lines + [rows_table(rows, markdown=True), ""]


def _provenance(out: Path, manifests: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on where the numbers come from: runs, scales, versions, commit and the last
    run's finish (from the manifests: no time stamp of the report's own making)."""
    commits = sorted({str(m["git_commit"]) for m in manifests if m.get("git_commit")})
    versions: dict[str, object] = next((m["versions"] for m in manifests if isinstance(m.get("versions"), dict)), {})
    stamps = [str(m.get("finished_at") or m.get("started_at")) for m in manifests
              if m.get("finished_at") or m.get("started_at")]
    finished = max(stamps, key=_stamp_key) if stamps else None
    scales = sorted({str(m.get("scale")) for m in manifests if m.get("scale")})
    text = (f"From {len(manifests)} runs" + (f" at {', '.join(scales)} scale" if scales else "")
            + (f", the last finished {_date(finished)}" if finished else "")
            + f"; privrl {versions.get('privrl', '?')}, dp-accounting {versions.get('dp-accounting', '?')}"
            + (f", git commit {', '.join(c[:12] for c in commits)}" if commits else "") + ".")
    if is_archive(out):
        info = read_manifest(out)
        machine = info.get("machine") or {}
        parts = []
        if info.get("wall_seconds") is not None:
            parts.append(f"{_num(info['wall_seconds'])} s of wall time")
        if info.get("cpu_seconds") is not None:
            parts.append(f"{_num(info['cpu_seconds'])} CPU seconds")
        if machine.get("cores"):
            parts.append(f"on {machine['cores']} cores")
        if parts:
            text += " The sweep took " + ", ".join(parts) + " (per experiment: `metrics/manifest.json`)."
    return text


def _stamp_key(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)


def _date(text: str | None) -> str:
    try:
        return datetime.fromisoformat(str(text)).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return str(text)


def render_report(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None, *,
                  figures_dir: str | os.PathLike | None = None, evaluation: Evaluation | None = None) -> str:
    """The Markdown report of ``OUT`` (a results directory or a metrics archive): a function of the
    runs, today's claim code and the PNG/PDF figures found under ``figures_dir/<id>`` (default
    ``OUT``), which the report links relative to ``figures_dir``. ``evaluation``: the claims
    already evaluated (:func:`evaluate`)."""
    ev = evaluation or evaluate(out_dir, experiment_ids)
    out, ids, manifests_by_id = ev.out, ev.ids, ev.manifests
    figs = out if figures_dir is None else Path(figures_dir)
    registry = all_experiments()
    every = [m for ms in manifests_by_id.values() for m in ms]
    lines = ["# privrl reproduction report", "", _provenance(out, every), "",
             "ε spent is computed from each run's privacy ledger (PLD or RDP accountant) at the "
             "stated δ; \"paper\" calibration marks curves that use a paper's formula where it "
             "differs from the sound one.", ""]
    summary_rows = []
    for exp_id in ids:
        exp = registry.get(exp_id)
        ms = manifests_by_id[exp_id]
        n_ok = sum(m.get("status") == "ok" for m in ms)
        calib = sorted({str(m.get("calibration")) for m in ms})
        summary_rows.append((f"[{exp_id}](#{exp_id})", exp.paper if exp else "?",
                             exp.figure if exp else "?", n_ok, len(ms) - n_ok, ", ".join(calib)))
    evaluated = ev.claims
    runs_table = _table(["Experiment", "Paper", "Figure", "Runs ok", "Failed", "Calibration"], summary_rows)
    if ids:
        scales = {exp_id: ", ".join(sorted({str(m.get("scale")) for m in manifests_by_id[exp_id]
                                            if m.get("scale")})) or "?" for exp_id in ids}
        papers = {exp_id: _short_paper(registry.get(exp_id)) for exp_id in ids}
        lines += _claim_tables(ids, evaluated, papers) + _verdict_summary(ids, evaluated, scales)
    lines += ["## Runs", ""] + runs_table + [""]
    if not ids:
        lines += ["*No runs found.*", ""]
    for exp_id in ids:
        figures = sorted((figs / exp_id).glob("*.png"))
        lines += _experiment_section(exp_id, registry.get(exp_id), manifests_by_id[exp_id],
                                     evaluated[exp_id], figures)
    lines += _audit_section(out)
    return "\n".join(lines).rstrip() + "\n"


def write_report(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None, *,
                 figures_dir: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> Path:
    """Write :func:`render_report` (atomically) to ``path`` (default ``OUT/report.md``) and return
    the path."""
    target = Path(out_dir) / "report.md" if path is None else Path(path)
    atomic_write_text(target, render_report(out_dir, experiment_ids, figures_dir=figures_dir))
    return target
