"""Figures and the Markdown report of a results directory (issue #3 §4).

* :func:`make_plots` calls each experiment's ``plot(df, OUT/<id>)`` with ``df = load_results(OUT)``
  filtered to that experiment;
* :func:`write_report` writes ``OUT/report.md``. At the top, the verdicts: per experiment how many
  claims hold, fail or are undecided (with the reason of each undecided one), and the headline
  table ``claim | paper | privrl (paper calibration) | privrl (tight calibration) | holds?``. Then
  per experiment the figures, the paper's claims beside the measurement (``Experiment.claims``),
  the privacy of each curve (non-private, uncertified, refused, or the ε spent, from the
  manifests; settings that differ only in the x-axis parameter form one curve), every deviation
  at the scale that ran (``Experiment.deviations_for``) and failed runs; last, the audit table of
  ``OUT/audit/audit.json`` when present (:mod:`privrl.audit.report`).
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from privrl.errors import InvalidDataError
from privrl.experiments.registry import all_experiments
from privrl.experiments.results import (
    atomic_write_text,
    check_results_dir,
    load_manifests,
    load_results,
)
from privrl.experiments.spec import Claim
from privrl.experiments.verdicts import verdict_counts

__all__ = ["PlotSummary", "experiments_in", "make_plots", "write_report", "privacy_status",
           "curves", "AUDIT_FILE", "NOISE_KEYS"]

AUDIT_FILE = Path("audit") / "audit.json"


@dataclass
class PlotSummary:
    figures: dict[str, list[Path]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def experiments_in(out_dir: str | os.PathLike) -> list[str]:
    """Ids of the experiments with at least one run manifest under ``OUT``, sorted."""
    out = check_results_dir(out_dir)
    return sorted({p.parts[-4] for p in out.glob("*/*/seed=*/manifest.json")})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def make_plots(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None) -> PlotSummary:
    """Draw every figure of the experiments found under ``OUT`` (or only ``experiment_ids``).

    An experiment without a ``plot`` function, unknown to the registry, or without a successful
    run is listed in ``skipped``; one whose ``plot`` raises is listed in ``errors``.
    """
    out = Path(out_dir)
    ids = experiments_in(out) if experiment_ids is None else list(experiment_ids)
    registry = all_experiments()
    summary = PlotSummary()
    for exp_id in ids:
        exp = registry.get(exp_id)
        if exp is None or exp.plot is None:
            summary.skipped.append(exp_id)
            continue
        df = load_results(out, exp_id)
        if len(df) == 0:
            summary.skipped.append(exp_id)
            continue
        try:
            paths = exp.plot(df, out / exp_id)
            summary.figures[exp_id] = [Path(p) for p in (paths or [])]
        except Exception as exc:  # noqa: BLE001 - one broken figure must not stop the others
            summary.errors[exp_id] = _one_line(exc)
        finally:
            import matplotlib.pyplot as plt

            plt.close("all")
    return summary


# --------------------------------------------------------------------------- formatting
def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.replace("|", "\\|").split())


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _num(value: Any, digits: int = 4) -> str:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "—" if value is None else str(value)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.{digits}g}"


def _budget_text(budget: Mapping[str, Any] | None) -> str:
    if not budget:
        return "—"
    if "rho" in budget:
        return f"ρ = {_num(budget['rho'])} (zCDP)"
    eps = budget.get("epsilon")
    if str(eps) in ("inf", "Infinity"):
        return "non-private (ε = ∞)"
    return f"ε = {_num(eps)}, δ = {_num(budget.get('delta'))}"


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_num(v) if isinstance(v, float) or str(v) in ('inf', 'nan') else v}"
                     for k, v in params.items() if k != "calibration")


def _verdict_cell(claim: Claim) -> str:
    if claim.verdict == "holds":
        return "holds"
    if claim.verdict == "fails":
        return "**fails**"
    return "undecided" + (f": {claim.reason}" if claim.reason else "")


def _spent_text(manifests: Sequence[Mapping[str, Any]]) -> str:
    values = [m.get("epsilon_spent") for m in manifests]
    numbers = sorted({float(v) for v in values if v is not None and _is_float(v)})
    if not numbers:
        return "— (non-private)"
    deltas = {m.get("delta") for m in manifests if m.get("delta") is not None}
    at = f" at δ = {_num(next(iter(deltas)))}" if len(deltas) == 1 else ""
    if numbers[0] == numbers[-1]:
        return f"{_num(numbers[0])}{at}"
    return f"{_num(numbers[0])}–{_num(numbers[-1])}{at}"


def _is_float(value: Any) -> bool:
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- privacy per curve
#: keys of a run's params or manifest ``extra`` that carry a noise scale (a run with noise and no ε
#: spent is "uncertified")
NOISE_KEYS = ("sigma", "noise_std", "noise_multiplier", "noise_scale")


def _positive(value: Any) -> bool:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    return x > 0 and not math.isnan(x)


def privacy_status(manifest: Mapping[str, Any]) -> str:
    """What a run's privacy is: ``"refused"`` (the calibration could not certify: status
    ``refused`` or ``extra.refused`` recorded), ``"epsilon"`` (an ε spent from its ledger),
    ``"uncertified"`` (noise without a claimed ε: ``extra.certified`` false, or a positive noise
    scale in its params/extra, :data:`NOISE_KEYS`) or ``"non-private"``."""
    extra = manifest.get("extra") or {}
    if not isinstance(extra, Mapping):
        extra = {}
    if manifest.get("status") == "refused" or manifest.get("refused") or extra.get("refused"):
        return "refused"
    eps = manifest.get("epsilon_spent")
    if eps is not None and _is_float(eps) and not math.isnan(float(eps)):
        return "epsilon"
    params = manifest.get("params") or {}
    if extra.get("certified") is False or extra.get("uncertified"):
        return "uncertified"
    if any(_positive(src.get(k)) for src in (params, extra) for k in NOISE_KEYS):
        return "uncertified"
    return "non-private"


def curves(manifests: Sequence[Mapping[str, Any]], curve_x: Sequence[str]) -> list[dict[str, Any]]:
    """Group the runs into curves: settings whose params are equal once the x-axis parameters
    ``curve_x`` (K, batch size...) are removed. Each curve: ``params`` (without the x-axis ones),
    ``x`` (x-axis name -> sorted values), ``settings`` and ``manifests``; in setting order."""
    groups: dict[str, dict[str, Any]] = {}
    for m in sorted(manifests, key=lambda m: (int(m.get("setting", -1)), int(m.get("seed", -1)))):
        params = dict(m.get("params") or {})
        key_params = {k: v for k, v in params.items() if k not in curve_x}
        key = json.dumps(key_params, sort_keys=True, default=str)
        group = groups.setdefault(key, {"params": key_params, "x": defaultdict(set), "settings": [],
                                        "manifests": []})
        for k in curve_x:
            if k in params:
                group["x"][k].add(json.dumps(params[k], default=str))
        setting = int(m.get("setting", -1))
        if setting not in group["settings"]:
            group["settings"].append(setting)
        group["manifests"].append(m)
    out = []
    for g in groups.values():
        xs = {}
        for k, values in g["x"].items():
            decoded = [json.loads(v) for v in values]
            try:
                xs[k] = sorted(decoded)
            except TypeError:
                xs[k] = sorted(decoded, key=str)
        out.append({**g, "x": xs})
    return out


def _x_text(xs: Mapping[str, Sequence[Any]]) -> str:
    parts = []
    for k, values in xs.items():
        if len(values) == 1:
            parts.append(f"{k} = {_num(values[0])}")
        else:
            parts.append(f"{k} = {_num(values[0])}…{_num(values[-1])} ({len(values)} points)")
    return "; ".join(parts) or "—"


def _privacy_text(manifests: Sequence[Mapping[str, Any]]) -> str:
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for m in manifests:
        by_kind[privacy_status(m)].append(m)
    texts = {"non-private": "non-private",
             "uncertified": "uncertified (noise, no ε claimed)",
             "refused": "**refused** (calibration could not certify)"}
    parts = []
    for kind in ("epsilon", "uncertified", "refused", "non-private"):
        ms = by_kind.get(kind)
        if not ms:
            continue
        text = f"ε = {_spent_text(ms)}" if kind == "epsilon" else texts[kind]
        if len(by_kind) > 1:
            n = len({int(m.get('setting', -1)) for m in ms})
            text += f" ({n} setting{'s' if n != 1 else ''})"
        parts.append(text)
    return "; ".join(parts) or "—"


def _joined(values: Iterable[Any]) -> str:
    seen = [str(v) for v in dict.fromkeys(values) if v not in (None, "")]
    return ", ".join(seen) or "—"


def _privacy_section(manifests: Sequence[Mapping[str, Any]], curve_x: Sequence[str]) -> list[str]:
    lines = ["### Privacy per curve", "",
             "One row per curve (settings that differ only in "
             + (", ".join(f"`{k}`" for k in curve_x) or "nothing") + "). *Uncertified*: noise "
             "without a claimed ε; *refused*: the calibration could not certify the budget, so the "
             "curve is absent from the figure.", ""]
    found = curves(manifests, curve_x)
    common: dict[str, Any] = {}
    if len(found) > 1:  # parameters equal on every curve are stated once, above the table
        first = found[0]["params"]
        common = {k: v for k, v in first.items() if k != "calibration"
                  and all(k in c["params"] and c["params"][k] == v for c in found[1:])}
    if common:
        lines += [f"Common to every curve: {_params_text(common)}.", ""]
    rows = []
    for c in found:
        ms = c["manifests"]
        seeds_per_setting = [len({int(m.get("seed", -1)) for m in ms if int(m.get("setting", -1)) == s})
                             for s in c["settings"]]
        lo, hi = min(seeds_per_setting), max(seeds_per_setting)
        own = {k: v for k, v in c["params"].items() if k not in common}
        rows.append((_params_text(own) or "—", _x_text(c["x"]), _joined(m.get("calibration") for m in ms),
                     _privacy_text(ms), _joined(_budget_text(m.get("budget")) for m in ms),
                     _joined(m.get("accountant") for m in ms), _joined(m.get("privacy_unit") for m in ms),
                     _joined(m.get("neighboring") for m in ms), str(lo) if lo == hi else f"{lo}–{hi}"))
    if not rows:
        return lines + ["*No successful run.*", ""]
    return lines + _table(["Curve", "x", "Calibration", "Privacy", "Budget", "Accountant",
                           "Privacy unit", "Neighbours", "Seeds"], rows) + [""]


# --------------------------------------------------------------------------- claims
@dataclass
class _Claims:
    claims: list[Claim] | None = None
    error: str | None = None
    note: str | None = None


def _scale(manifests: Sequence[Mapping[str, Any]]) -> str | None:
    scales = sorted({str(m.get("scale")) for m in manifests if m.get("scale")})
    return scales[0] if len(scales) == 1 else None


def _evaluate_claims(out: Path, exp_id: str, exp: Any, manifests: Sequence[Mapping[str, Any]]) -> _Claims:
    if exp is None or exp.claims is None:
        return _Claims(note="No claims registered for this experiment.")
    if not any(m.get("status") == "ok" for m in manifests):
        return _Claims(note="No successful run to measure.")
    try:
        df = load_results(out, exp_id)
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


def _verdict_summary(ids: Sequence[str], evaluated: Mapping[str, _Claims],
                     scales: Mapping[str, str]) -> list[str]:
    lines = ["## Verdicts", "",
             "How many of each paper's claims the measurement decides. *Undecided* claims say why "
             "(too few seeds, a best hyper-parameter on its grid boundary, predictors no better than "
             "the trivial one, a scale-dependent claim below paper scale...).", ""]
    rows: list[tuple[Any, ...]] = []
    totals = dict.fromkeys(("holds", "fails", "undecided"), 0)
    for exp_id in ids:
        ev = evaluated[exp_id]
        if ev.claims is None:
            rows.append((f"[{exp_id}](#{exp_id})", scales.get(exp_id, "?"), "—", "—", "—",
                         ev.error and f"claims could not be "
                         f"evaluated: {ev.error}" or ev.note or "—"))
            continue
        counts = verdict_counts(ev.claims)
        for k in totals:
            totals[k] += counts[k]
        rows.append((f"[{exp_id}](#{exp_id})", scales.get(exp_id, "?"), counts["holds"], counts["fails"],
                     counts["undecided"], _reasons_text(ev.claims)))
    rows.append(("**total**", "", totals["holds"], totals["fails"], totals["undecided"], ""))
    return lines + _table(["Experiment", "Scale", "Holds", "Fails", "Undecided", "Why undecided"], rows) + [""]


def _headline(ids: Sequence[str], evaluated: Mapping[str, _Claims]) -> list[str]:
    pairs = [(exp_id, c) for exp_id in ids for c in (evaluated[exp_id].claims or [])]
    chosen = [(e, c) for e, c in pairs if c.headline or c.has_values]
    lines = ["## Headline", ""]
    if not pairs:
        return lines + ["*No claim was evaluated.*", ""]
    if not chosen:
        chosen = pairs
        lines += ["*No claim carries headline values yet (`paper_value`, `paper_calibration_value`, "
                  "`tight_value`): every claim is listed with blank value cells.*", ""]
    rows = [(f"{c.claim} ([{e}](#{e}))", c.paper_value, c.paper_calibration_value, c.tight_value,
             _verdict_cell(c)) for e, c in chosen]
    return lines + _table(["Claim", "Paper", "privrl (paper calibration)", "privrl (tight calibration)",
                           "Holds?"], rows) + [""]


# --------------------------------------------------------------------------- sections
def _experiment_section(out: Path, exp_id: str, exp: Any, manifests: list[dict[str, Any]],
                        evaluated: _Claims) -> list[str]:
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
    if any(m.get("calibration") == "paper" for m in manifests):
        lines += ["> **Paper calibration**: some curves use the paper's noise calibration, which is "
                  "not sound; they are labelled \"(paper calibration)\" in the figures and "
                  "\"paper\" below.", ""]

    figures = sorted((out / exp_id).glob("*.png"))
    lines += ["### Figures", ""]
    if figures:
        for fig in figures:
            pdf = f" ([PDF]({exp_id}/{fig.stem}.pdf))" if fig.with_suffix(".pdf").exists() else ""
            lines += [f"![{fig.stem}]({exp_id}/{fig.name}){pdf}", ""]
    else:
        lines.append("*No figure (run `privrl plot OUT`).*")
    lines.append("")

    lines += ["### Claims of the paper beside the measurement", ""]
    if evaluated.error is not None:
        lines.append(f"*The claims could not be evaluated: {_cell(evaluated.error)}*")
    elif evaluated.claims is None:
        lines.append(f"*{evaluated.note}*")
    else:
        lines += _table(["Claim", "Measured", "Verdict"],
                        [(c.claim, c.measured, _verdict_cell(c)) for c in evaluated.claims])
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


def _last_line(text: Any) -> str:
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


def write_report(out_dir: str | os.PathLike, experiment_ids: Sequence[str] | None = None) -> Path:
    """Write ``OUT/report.md`` (atomically) and return its path."""
    out = Path(out_dir)
    ids = experiments_in(out) if experiment_ids is None else list(experiment_ids)
    registry = all_experiments()
    manifests_by_id = {exp_id: load_manifests(out, exp_id) for exp_id in ids}
    commits = sorted({str(m["git_commit"]) for ms in manifests_by_id.values() for m in ms
                      if m.get("git_commit")})
    versions: dict[str, Any] = next((m["versions"] for ms in manifests_by_id.values() for m in ms
                                     if isinstance(m.get("versions"), dict)), {})
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# privrl reproduction report", "",
             f"Generated {now} from `{out}`. privrl {versions.get('privrl', '?')}, "
             f"dp-accounting {versions.get('dp-accounting', '?')}"
             + (f", git commit {', '.join(c[:12] for c in commits)}" if commits else "") + ".", "",
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
    evaluated = {exp_id: _evaluate_claims(out, exp_id, registry.get(exp_id), manifests_by_id[exp_id])
                 for exp_id in ids}
    runs_table = _table(["Experiment", "Paper", "Figure", "Runs ok", "Failed", "Calibration"], summary_rows)
    if ids:
        scales = {exp_id: ", ".join(sorted({str(m.get("scale")) for m in manifests_by_id[exp_id]
                                            if m.get("scale")})) or "?" for exp_id in ids}
        lines += _verdict_summary(ids, evaluated, scales) + _headline(ids, evaluated)
    lines += ["## Runs", ""] + runs_table + [""]
    if not ids:
        lines += ["*No runs found.*", ""]
    for exp_id in ids:
        lines += _experiment_section(out, exp_id, registry.get(exp_id), manifests_by_id[exp_id],
                                     evaluated[exp_id])
    lines += _audit_section(out)
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines).rstrip() + "\n")
    return path
