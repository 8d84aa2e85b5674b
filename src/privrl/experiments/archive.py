"""The committed metrics of a sweep: every run's rows and manifest, compressed, one pair of files
per experiment.

A *metrics archive* is a directory (``docs/results/metrics`` for the committed evidence) with

* ``<experiment>.csv.gz`` — the tidy rows of every successful run of the experiment, as the runs
  wrote them (``metrics.csv``), under two leading columns ``setting`` and ``seed`` naming the run;
  ``pandas.read_csv`` reads it as it is;
* ``<experiment>.runs.json.gz`` — the run manifests (JSON list, one per run, failed runs
  included): parameters, budget, privacy unit, ε spent, calibration, versions, commit, timings;
* ``manifest.json`` — the archive's own manifest: the git commit, package versions, the machine
  (cores, platform), the sweep's wall time, and per experiment the number of runs and their
  summed wall and CPU seconds and their span (first start to last finish).

:func:`privrl.experiments.evidence.write_archive` builds one from a results directory;
:func:`read_manifests` and :func:`read_table` read it back (:func:`read_runs`: per run), so that
:func:`~privrl.experiments.results.load_results`, :func:`~privrl.experiments.report.write_report`
and the figures read an archive as they read the results directory it came from (the table is
parsed once, so a column's type is the one it has over all runs). This module imports nothing of
the experiment layer, which reads archives through it. The files are deterministic (gzip without
a time stamp): the same runs give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privrl.errors import InvalidDataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ARCHIVE_MANIFEST", "FORMAT", "KEYS", "is_archive", "archive_experiments", "read_runs", "read_manifests",
           "read_table", "run_keys", "read_manifest", "gzip_bytes", "rows_path", "runs_path"]

#: the archive's own manifest
ARCHIVE_MANIFEST = "manifest.json"
#: the ``format`` field of an archive manifest
FORMAT = "privrl.metrics"
_ROWS = ".csv.gz"
_RUNS = ".runs.json.gz"
#: the columns of the rows table that name a run
KEYS = ("setting", "seed")


def rows_path(archive: str | os.PathLike, experiment_id: str) -> Path:
    return Path(archive) / f"{experiment_id}{_ROWS}"


def runs_path(archive: str | os.PathLike, experiment_id: str) -> Path:
    return Path(archive) / f"{experiment_id}{_RUNS}"


def is_archive(path: str | os.PathLike) -> bool:
    """True when ``path`` is a metrics archive (its manifest says so)."""
    manifest = Path(path) / ARCHIVE_MANIFEST
    if not manifest.is_file():
        return False
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return False


def read_manifest(archive: str | os.PathLike) -> dict[str, Any]:
    """The archive's own manifest (:class:`InvalidDataError` when ``archive`` is not one)."""
    if not is_archive(archive):
        raise InvalidDataError(f"{archive} is not a metrics archive (no {ARCHIVE_MANIFEST} of format {FORMAT}).")
    return json.loads((Path(archive) / ARCHIVE_MANIFEST).read_text(encoding="utf-8"))


def archive_experiments(archive: str | os.PathLike) -> list[str]:
    """Ids of the experiments in an archive, sorted."""
    return sorted(p.name[: -len(_RUNS)] for p in Path(archive).glob(f"*{_RUNS}"))


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed without a time stamp: the same data give the same bytes (level 6:
    on the paper-scale archive a third of level 9's time for 4 % more bytes)."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def _read_gzip(path: Path) -> bytes:
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise InvalidDataError(f"Archive file {path} is not readable gzip: {exc}.") from None


def read_manifests(archive: str | os.PathLike, experiment_id: str) -> list[dict[str, Any]]:
    """The run manifests of ``experiment_id`` in the archive (failed runs included), in order."""
    path = runs_path(archive, experiment_id)
    if not path.is_file():
        return []
    try:
        manifests = json.loads(_read_gzip(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidDataError(f"Archive file {path} is not JSON: {exc}.") from None
    if not isinstance(manifests, list) or not all(isinstance(m, dict) for m in manifests):
        raise InvalidDataError(f"Archive file {path} is not a list of run manifests.")
    return manifests


def read_table(archive: str | os.PathLike, experiment_id: str) -> pd.DataFrame:
    """The rows table of ``experiment_id`` (``setting``, ``seed`` and the runs' columns), parsed
    once; an empty table when no run has rows."""
    import pandas as pd

    path = rows_path(archive, experiment_id)
    text = _read_gzip(path).decode("utf-8") if path.is_file() else ""
    if not text.strip():
        return pd.DataFrame(columns=list(KEYS))
    try:
        return pd.read_csv(io.StringIO(text), low_memory=False)   # one type per column, not per chunk
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InvalidDataError(f"Archive file {path} is corrupt: {exc}.") from None


def run_keys(manifest: Mapping[str, Any]) -> tuple[int, int]:
    """The (setting, seed) that names a run in the rows table."""
    return int(manifest.get("setting", -1)), int(manifest.get("seed", -1))


def read_runs(archive: str | os.PathLike, experiment_id: str, *, rows: bool = True) -> list[tuple[dict[str, Any], Any]]:
    """``[(manifest, rows)]`` of every run of ``experiment_id`` in the archive, in the order of the
    runs file; ``rows`` is the run's table (the columns the run wrote: those not empty in all its
    rows) for a successful run, else ``None`` (always ``None`` with ``rows=False``)."""
    manifests = read_manifests(archive, experiment_id)
    if not rows:
        return [(m, None) for m in manifests]
    table = read_table(archive, experiment_id)
    groups = {(int(k[0]), int(k[1])): idx for k, idx in table.groupby(list(KEYS), sort=False).indices.items()} \
        if len(table) else {}
    out = []
    for m in manifests:
        idx = groups.get(run_keys(m))
        if m.get("status") != "ok" or idx is None:
            out.append((m, None))
            continue
        part = table.iloc[idx].drop(columns=list(KEYS)).reset_index(drop=True)
        out.append((m, part.loc[:, part.notna().any()]))
    return out
