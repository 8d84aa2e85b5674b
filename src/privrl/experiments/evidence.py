"""Collect the evidence of a reproduction into a directory meant to be committed (issue #12 §3).

``make reproduce-paper`` runs ``privrl reproduce --scale paper --out results/paper`` and then::

    privrl report results/paper --evidence docs/results --wall-seconds N

(``python -m privrl.experiments.evidence results/paper docs/results --wall-seconds N`` does the same)

which writes into ``docs/results/``:

* ``report.md`` — the report of the results directory (rewritten first, so it is current), with
  links to PDFs removed (only PNGs are collected);
* ``<experiment>/<figure>.png`` — every figure as PNG (small: :data:`privrl.experiments.plots.DPI`);
* ``manifest.json`` — the git commit, package versions, the machine (cores, platform), per
  experiment the number of runs and their summed and spanned wall time, and the sweep's total
  wall time (``--wall-seconds``, measured by the caller around ``privrl reproduce``).

Files of an earlier collection that the new one does not produce are removed, so the directory
always matches one reproduction.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from privrl._io import atomic_write_bytes
from privrl._validation import check_scalar
from privrl.errors import InvalidDataError, InvalidParameterError, PrivrlError
from privrl.experiments.report import experiments_in, write_report
from privrl.experiments.results import load_manifests
from privrl.experiments.runner import git_commit, versions

__all__ = ["collect_evidence", "main", "MANIFEST_NAME"]

MANIFEST_NAME = "manifest.json"
_PDF_LINK = re.compile(r" \(\[PDF\]\([^)]*\)\)")


def _span_seconds(manifests: Sequence[dict[str, Any]]) -> float | None:
    """Seconds from the first run's start to the last run's end (start + wall time)."""
    spans = []
    for m in manifests:
        try:
            start = datetime.fromisoformat(str(m["started_at"]))
            spans.append((start, start + timedelta(seconds=float(m.get("wall_time_s") or 0.0))))
        except (KeyError, TypeError, ValueError):
            continue
    if not spans:
        return None
    return round((max(e for _, e in spans) - min(s for s, _ in spans)).total_seconds(), 1)


def _machine() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "platform": platform.platform(), "machine": platform.machine(),
            "python": platform.python_version()}


def collect_evidence(results_dir: str | os.PathLike, dest: str | os.PathLike, *,
                     wall_seconds: float | None = None, experiment_ids: Sequence[str] | None = None) -> Path:
    """Copy the report and PNG figures of ``results_dir`` into ``dest`` and write its manifest;
    return the manifest's path. ``dest`` must not be ``results_dir`` nor inside it."""
    src, out = Path(results_dir), Path(dest)
    if wall_seconds is not None:
        wall_seconds = check_scalar(wall_seconds, "wall_seconds", owner="collect_evidence", low=0.0)
    ids = experiments_in(src) if experiment_ids is None else list(experiment_ids)
    if not ids:
        raise InvalidDataError(f"No runs found under {src}: nothing to collect.")
    if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
        raise InvalidParameterError(f"The 'dest' parameter of collect_evidence must be outside the results "
                                    f"directory. Got {out} instead.")
    report = write_report(src, ids)
    text = _PDF_LINK.sub("", report.read_text(encoding="utf-8"))
    text = text.replace(str(src.resolve()), src.name)  # no absolute path of this machine

    written: set[Path] = set()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / "report.md", text.encode("utf-8"))
    written.add(out / "report.md")
    per_experiment: dict[str, Any] = {}
    all_manifests = []
    for exp_id in ids:
        figures = sorted((src / exp_id).glob("*.png"))
        for fig in figures:
            target = out / exp_id / fig.name
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, fig.read_bytes())
            written.add(target)
        manifests = load_manifests(src, exp_id)
        all_manifests += manifests
        ok = [m for m in manifests if m.get("status") == "ok"]
        per_experiment[exp_id] = {
            "runs": len(manifests), "runs_ok": len(ok), "runs_failed": len(manifests) - len(ok),
            "scale": sorted({str(m.get("scale")) for m in manifests if m.get("scale")}),
            "seeds": len({m.get("seed") for m in ok}),
            "run_seconds": round(sum(float(m.get("wall_time_s") or 0.0) for m in manifests), 3),
            "span_seconds": _span_seconds(manifests),
            "figures": [f"{exp_id}/{f.name}" for f in figures],
        }
    commits = sorted({str(m["git_commit"]) for m in all_manifests if m.get("git_commit")})
    run_versions = next((m["versions"] for m in all_manifests if isinstance(m.get("versions"), dict)), None)
    manifest = {
        "format": "privrl.evidence", "version": 1,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commits[0] if len(commits) == 1 else (commits or git_commit()),
        "versions": run_versions or versions(),
        "machine": _machine(),
        "wall_seconds": wall_seconds,
        "run_seconds": round(sum(e["run_seconds"] for e in per_experiment.values()), 3),
        "span_seconds": _span_seconds(all_manifests),
        "experiments": per_experiment,
    }
    manifest_path = out / MANIFEST_NAME
    atomic_write_bytes(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    written.add(manifest_path)
    for stale in [p for p in out.rglob("*") if p.is_file() and p not in written]:
        if stale.suffix in (".png", ".md", ".json", ".pdf"):
            stale.unlink()
    for d in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    return manifest_path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m privrl.experiments.evidence RESULTS DEST [--wall-seconds S]``."""
    ap = argparse.ArgumentParser(prog="privrl-evidence", description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a results directory (privrl reproduce --out)")
    ap.add_argument("dest", help="where the evidence goes (e.g. docs/results)")
    ap.add_argument("--wall-seconds", type=float, default=None,
                    help="wall time of the sweep, measured around privrl reproduce")
    args = ap.parse_args(argv)
    try:
        path = collect_evidence(args.results, args.dest, wall_seconds=args.wall_seconds)
    except PrivrlError as exc:
        print(f"privrl-evidence: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
