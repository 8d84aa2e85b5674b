"""Figures and the Markdown report of a results directory (issue #3 §4).

* :func:`make_plots` calls each experiment's ``plot(df, OUT/<id>)`` with ``df = load_results(OUT)``
  filtered to that experiment;
* :func:`write_report` writes ``OUT/report.md``: per experiment the figures, the paper's claims
  beside the measurement (``Experiment.claims``), the privacy spent per curve (ε per setting from
  the manifests), every deviation (``Experiment.deviations``), failed runs; and a summary of
  ``OUT/audit/audit.json`` when present.
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
from privrl.experiments.results import atomic_write_text, load_manifests, load_results

__all__ = ["PlotSummary", "experiments_in", "make_plots", "write_report", "AUDIT_FILE"]

AUDIT_FILE = Path("audit") / "audit.json"


@dataclass
class PlotSummary:
    figures: dict[str, list[Path]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def experiments_in(out_dir: str | os.PathLike) -> list[str]:
    """Ids of the experiments with at least one run manifest under ``OUT``, sorted."""
    out = Path(out_dir)
    if not out.is_dir():
        raise InvalidDataError(f"Results directory {out} does not exist.")
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


def _supported(value: Any) -> str:
    return {True: "yes", False: "**no**"}.get(value, "n/a")


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


# --------------------------------------------------------------------------- sections
def _experiment_section(out: Path, exp_id: str, exp: Any, manifests: list[dict[str, Any]]) -> list[str]:
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
    if exp is None or exp.claims is None:
        lines.append("*No claims registered for this experiment.*")
    elif not ok:
        lines.append("*No successful run to measure.*")
    else:
        try:
            claims = exp.claims(load_results(out, exp_id))
            lines += _table(["Claim", "Measured", "Supported"],
                            [(c.claim, c.measured, _supported(c.supported)) for c in claims])
        except Exception as exc:  # noqa: BLE001 - the report still lists everything else
            lines.append(f"*The claims could not be evaluated: {_cell(_one_line(exc))}*")
    lines.append("")

    lines += ["### Privacy spent per curve", ""]
    by_setting: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for m in ok:
        by_setting[int(m.get("setting", -1))].append(m)
    if by_setting:
        rows = []
        for idx in sorted(by_setting):
            ms = by_setting[idx]
            first = ms[0]
            rows.append((idx, _params_text(first.get("params") or {}), first.get("calibration"),
                         _budget_text(first.get("budget")), _spent_text(ms),
                         first.get("accountant") or "—", first.get("privacy_unit") or "—",
                         first.get("neighboring") or "—", len(ms)))
        lines += _table(["Setting", "Parameters", "Calibration", "Budget", "ε spent", "Accountant",
                         "Privacy unit", "Neighbours", "Seeds"], rows)
    else:
        lines.append("*No successful run.*")
    lines.append("")

    lines += ["### Deviations from the paper", ""]
    deviations = list(exp.deviations) if exp is not None else []
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


def _ci_text(ci: Any) -> str:
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        return f"[{_num(ci[0])}, {_num(ci[1])}]"
    return _num(ci) if ci is not None else "—"


def _audit_section(out: Path) -> list[str]:
    path = out / AUDIT_FILE
    if not path.is_file():
        return []
    lines = ["## Privacy audit", "", f"From `{AUDIT_FILE.as_posix()}`: empirical lower bounds on ε "
             "from distinguishing attacks beside the claimed ε.", ""]
    try:
        rows = _audit_rows(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, InvalidDataError) as exc:
        return lines + [f"*{AUDIT_FILE.as_posix()} could not be read: {_cell(_one_line(exc))}*", ""]
    lines += _table(["Algorithm", "Broken variant", "Claimed ε", "ε lower bound", "CI", "Trials", "Verdict"],
                    [(r.get("algorithm"), r.get("broken") or "—", _num(r.get("claimed_epsilon")),
                      _num(r.get("epsilon_lower")), _ci_text(r.get("ci")), r.get("trials", "—"),
                      r.get("verdict", "—")) for r in rows])
    return lines + [""]


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
             "differs from the sound one.", "", "## Summary", ""]
    summary_rows = []
    for exp_id in ids:
        exp = registry.get(exp_id)
        ms = manifests_by_id[exp_id]
        n_ok = sum(m.get("status") == "ok" for m in ms)
        calib = sorted({str(m.get("calibration")) for m in ms})
        summary_rows.append((f"[{exp_id}](#{exp_id})", exp.paper if exp else "?",
                             exp.figure if exp else "?", n_ok, len(ms) - n_ok, ", ".join(calib)))
    lines += _table(["Experiment", "Paper", "Figure", "Runs ok", "Failed", "Calibration"], summary_rows)
    lines.append("")
    if not ids:
        lines += ["*No runs found.*", ""]
    for exp_id in ids:
        lines += _experiment_section(out, exp_id, registry.get(exp_id), manifests_by_id[exp_id])
    lines += _audit_section(out)
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines).rstrip() + "\n")
    return path
