"""Result files of a sweep: layout, atomic writes and :func:`load_results`.

Layout::

    OUT/<experiment-id>/<run-key>/seed=<s>/metrics.csv     tidy: one row per step/metric/value
    OUT/<experiment-id>/<run-key>/seed=<s>/manifest.json   what ran, with what privacy, status
    OUT/<experiment-id>/*.png|*.pdf                        the figures

A run directory is named by its *content*: ``<run-key>`` = ``<scale>-<setting index>-<hash>``
(:func:`run_key`), the hash being a short SHA-256 of the canonical JSON of (experiment, scale,
setting index, params). A later sweep with other ``--set`` values or another ``--scale`` into the
same ``OUT`` therefore writes beside earlier results, never over them.

Every file is written atomically (a temporary file in the same directory, then ``os.replace``),
``metrics.csv`` before ``manifest.json``. The manifest records the number of rows and the SHA-256
of ``metrics.csv``: a run is *finished* when its manifest says ``status: ok`` and the metrics file
matches that checksum, so a sweep killed at any instant, or a metrics file truncated or edited
later, leaves the run to be recomputed, never counted as done.

:func:`load_manifests` and :func:`load_results` read a metrics archive
(:mod:`privrl.experiments.archive`, the committed form of a sweep) as they read a results
directory.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._io import atomic_write_bytes, atomic_write_json, atomic_write_text  # re-exported
from privrl._jsonable import to_jsonable  # re-exported
from privrl.errors import InvalidDataError
from privrl.experiments.archive import archive_experiments, is_archive, read_manifests, read_table, run_keys

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MANIFEST", "METRICS", "MANIFEST_KEYS", "run_key", "run_dir", "to_jsonable", "label_categories",
           "atomic_write_bytes", "atomic_write_text", "atomic_write_json", "metrics_csv",
           "write_metrics", "sha256_bytes", "read_manifest", "metrics_match", "is_finished",
           "iter_run_dirs", "check_results_dir", "load_manifests", "load_results"]

MANIFEST = "manifest.json"
METRICS = "metrics.csv"

#: keys every manifest carries
MANIFEST_KEYS = ("experiment", "setting", "seed", "params", "budget", "privacy_unit", "neighboring",
                 "epsilon_spent", "accountant", "calibration", "versions", "git_commit",
                 "wall_time_s", "status")

#: columns ``load_results`` puts first
BASE_COLUMNS = ("experiment", "setting", "seed", "status", "calibration", "epsilon_spent")


def _canonical_json(obj: object) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_key(experiment_id: str, scale: str, setting_index: int, params: Mapping[str, object]) -> str:
    """The name of a run's setting directory: ``<scale>-<index>-<hash>``, where ``hash`` is the first
    12 hex digits of the SHA-256 of the canonical JSON (sorted keys) of
    ``{experiment, scale, setting, params}``. The index is part of the identity because the run's
    seed is derived from it (:func:`privrl.experiments.runner.run_seed`)."""
    text = _canonical_json({"experiment": experiment_id, "scale": scale, "setting": int(setting_index),
                            "params": dict(params)})
    return f"{scale}-{int(setting_index)}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def run_dir(out_dir: str | os.PathLike, experiment_id: str, setting: int | str, seed: int) -> Path:
    """The directory of one run: ``OUT/<experiment-id>/<setting>/seed=<s>``.

    ``setting`` is a run key (:func:`run_key`, what the runner writes) or a setting index. An index
    finds the existing run of that index and seed; with none it gives the path
    ``OUT/<experiment-id>/<index>/seed=<s>``; when runs of several scales or ``--set`` values
    share the index it raises :class:`InvalidDataError` (pass the run key instead).
    """
    base = Path(out_dir) / experiment_id
    if isinstance(setting, str):
        return base / setting / f"seed={int(seed)}"
    index = int(setting)
    found = sorted(p.parent for p in base.glob(f"*-{index}-*/seed={int(seed)}/{MANIFEST}")
                   if p.parent.parent.name.split("-")[-2:-1] == [str(index)])
    if len(found) > 1:
        raise InvalidDataError(
            f"Several runs of setting {index}, seed {int(seed)} of {experiment_id} are under {out_dir} "
            f"({', '.join(p.parent.name for p in found)}): pass the run key instead of the index."
        )
    return found[0] if found else base / str(index) / f"seed={int(seed)}"


# --------------------------------------------------------------------------- JSON and atomic writes
def sha256_bytes(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def metrics_csv(rows: Iterable[Mapping[str, object]]) -> bytes:
    """Tidy rows (each with at least ``metric`` and ``value``) as the bytes of a CSV file."""
    import pandas as pd

    rows = list(rows)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or "metric" not in row or "value" not in row:
            raise InvalidDataError(f"Run row {i} must be a dict with at least 'metric' and 'value'. "
                                   f"Got {row!r} instead.")
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=["metric", "value"])
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def write_metrics(path: str | os.PathLike, rows: Iterable[Mapping[str, object]]) -> Path:
    """Write tidy rows (each with at least ``metric`` and ``value``) as CSV, atomically."""
    return atomic_write_bytes(path, metrics_csv(rows))


# --------------------------------------------------------------------------- reading
def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """A manifest as a dict; :class:`InvalidDataError` when missing keys or not JSON."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidDataError(f"Manifest {path} does not exist.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidDataError(f"Manifest {path} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict) or "status" not in data or "experiment" not in data:
        raise InvalidDataError(f"Manifest {path} is not a privrl run manifest.")
    return data


def metrics_match(directory: str | os.PathLike, manifest: Mapping[str, object]) -> bool:
    """True when ``directory/metrics.csv`` exists and has the SHA-256 its manifest records
    (``metrics_sha256``); False for a missing, truncated or edited file, or a manifest without
    a checksum."""
    expected = manifest.get("metrics_sha256")
    if not isinstance(expected, str):
        return False
    try:
        data = (Path(directory) / METRICS).read_bytes()
    except OSError:
        return False
    return sha256_bytes(data) == expected


def is_finished(directory: str | os.PathLike, params: Mapping[str, object] | None = None) -> bool:
    """True when the run in ``directory`` finished: manifest status ``ok`` and a metrics file
    matching the manifest's checksum (and, when ``params`` is given, the manifest's params equal
    them)."""
    directory = Path(directory)
    try:
        manifest = read_manifest(directory / MANIFEST)
    except InvalidDataError:
        return False
    if manifest.get("status") != "ok" or not metrics_match(directory, manifest):
        return False
    return params is None or manifest.get("params") == to_jsonable(dict(params))


def iter_run_dirs(out_dir: str | os.PathLike, experiment_id: str | None = None) -> list[Path]:
    """Every run directory (one holding a manifest) under ``OUT``, sorted."""
    out = Path(out_dir)
    pattern = f"{experiment_id}/*/seed=*/{MANIFEST}" if experiment_id else f"*/*/seed=*/{MANIFEST}"
    return sorted(p.parent for p in out.glob(pattern))


def check_results_dir(out_dir: str | os.PathLike) -> Path:
    """``OUT`` as a Path when it is a directory; else one line saying it does not exist or is a file."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidDataError(f"Results directory {out} is not a directory (it is a file): give the directory "
                               "'privrl run' or 'privrl reproduce' wrote (--out).")
    if not out.is_dir():
        raise InvalidDataError(f"Results directory {out} does not exist.")
    return out


def _archive_ids(out: Path, experiment_id: str | None) -> list[str]:
    return [experiment_id] if experiment_id is not None else archive_experiments(out)


def _archived_frame(out: Path, experiment_id: str, include_failed: bool) -> pd.DataFrame | None:
    """:func:`load_results` of one experiment of a metrics archive, column by column over the whole
    rows table (one parse, no per-run frames), with the rules of a results directory: the base
    columns win over row columns, a row column over a parameter of the same name (for the runs that
    wrote it), ``scale`` last; rows in run order (a failed run's NaN row, with ``include_failed``,
    after the successful runs' rows)."""
    import pandas as pd

    manifests = read_manifests(out, experiment_id)
    table = read_table(out, experiment_id)
    position = {run_keys(m): i for i, m in enumerate(manifests) if m.get("status") == "ok"}
    keys = list(zip(table["setting"].astype(int), table["seed"].astype(int))) if len(table) else []
    known = np.array([k in position for k in keys], dtype=bool)
    rows = table[known].drop(columns=["setting", "seed"]).reset_index(drop=True) if len(table) else \
        pd.DataFrame(columns=["metric", "value"])
    runs = np.array([position[k] for k, ok in zip(keys, known) if ok], dtype=int)
    written = set(runs.tolist())
    failed = [i for i, m in enumerate(manifests) if include_failed and i not in written]
    if failed:
        rows = pd.concat([rows, pd.DataFrame({"metric": [np.nan] * len(failed), "value": [np.nan] * len(failed)})],
                         ignore_index=True, sort=False)
        runs = np.concatenate([runs, np.array(failed, dtype=int)])
    if not len(rows):
        return None
    n = len(manifests)
    wrote = rows.notna().groupby(runs).any().reindex(range(n), fill_value=False)

    def spread(values: list[object]) -> pd.Series:
        return pd.Series(pd.Series(values).to_numpy()[runs], index=rows.index)

    def unwritten(key: str) -> np.ndarray:
        return ~wrote[key].to_numpy(dtype=bool)[runs] if key in wrote.columns else np.ones(len(rows), bool)

    bases = [{"experiment": m.get("experiment"), "setting": int(m.get("setting", -1)), "seed": int(m.get("seed", -1)),
              "status": m.get("status"), "calibration": m.get("calibration"),
              "epsilon_spent": _float_or_none(m.get("epsilon_spent"))} for m in manifests]
    for key in BASE_COLUMNS:
        rows[key] = spread([b[key] for b in bases])
    params = [{k: _param_cell(v) for k, v in (m.get("params") or {}).items() if k not in BASE_COLUMNS}
              for m in manifests]
    for key in dict.fromkeys(k for p in params for k in p):
        has = np.array([key in p for p in params], dtype=bool)[runs]
        values = spread([p.get(key, np.nan) for p in params])
        take = has & unwritten(key)
        rows[key] = values.where(take) if key not in rows.columns else rows[key].where(~take, values)
    take = np.array(["scale" not in p for p in params], dtype=bool)[runs] & unwritten("scale")
    if take.any():
        scales = spread([m.get("scale") for m in manifests])
        rows["scale"] = scales.where(take) if "scale" not in rows.columns else rows["scale"].where(~take, scales)
    return rows


def load_manifests(out_dir: str | os.PathLike, experiment_id: str | None = None) -> list[dict[str, object]]:
    """Every run manifest under ``OUT`` (a results directory or a metrics archive; optionally of
    one experiment), sorted by run."""
    out = check_results_dir(out_dir)
    if is_archive(out):
        return [m for e in _archive_ids(out, experiment_id) for m in read_manifests(out, e)]
    return [read_manifest(d / MANIFEST) for d in iter_run_dirs(out, experiment_id)]


def _param_cell(value: object) -> object:
    if isinstance(value, str) and value in ("inf", "-inf", "nan", "Infinity", "-Infinity", "NaN"):
        return float(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return value


def _float_or_none(value: Any) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _run_files(out: Path, experiment_id: str | None) -> Iterator[tuple[dict[str, Any], pd.DataFrame | None]]:
    """``(manifest, rows or None)`` of every run directory under ``OUT``; rows of a successful run
    whose metrics file does not match its manifest's checksum raise :class:`InvalidDataError`."""
    import pandas as pd

    for directory in iter_run_dirs(out, experiment_id):
        manifest = read_manifest(directory / MANIFEST)
        metrics_path = directory / METRICS
        if manifest.get("status") != "ok" or not metrics_path.is_file():
            yield manifest, None
            continue
        if "metrics_sha256" in manifest and not metrics_match(directory, manifest):
            raise InvalidDataError(
                f"Metrics file {metrics_path} does not match its manifest (truncated or edited): "
                "run the same 'privrl run' command again to recompute it."
            )
        try:
            rows = pd.read_csv(metrics_path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InvalidDataError(f"Metrics file {metrics_path} is corrupt: {exc}.") from None
        yield manifest, rows


def label_categories(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its text columns as pandas categories — the same values; selecting rows on a
    label (``df[df["algorithm"] == "DP-LSW"]``) then compares integer codes instead of strings,
    which the figures and claims do hundreds of times over up to ~10⁶ rows."""
    import pandas as pd

    text = [c for c in df.columns
            if pd.api.types.is_string_dtype(df[c]) and not isinstance(df[c].dtype, pd.CategoricalDtype)]
    return df.astype({c: "category" for c in text}) if text else df


def load_results(out_dir: str | os.PathLike, experiment_id: str | None = None, *,
                 include_failed: bool = False) -> pd.DataFrame:
    """One pandas table over every run under ``OUT`` (a results directory or a metrics archive;
    optionally one experiment).

    One row per metrics row, with columns ``experiment, setting, seed, status, calibration,
    epsilon_spent`` (NaN for non-private runs), every param key (lists/dicts as JSON strings) and every column of
    the run's rows (``step, metric, value`` and labels; a row column wins over a param of the same name),
    then ``scale`` (when no param or row column has that name). Runs of several scales or ``--set``
    values written into one ``OUT`` all appear (filter on ``scale`` or on the param columns).
    Failed runs have no metrics; with ``include_failed=True`` each adds one row with NaN
    ``metric``/``value``. An empty table (with the base columns) when there is no run. A metrics
    file that does not match its manifest's checksum (truncated or edited) raises
    :class:`InvalidDataError`.
    """
    import pandas as pd

    out = check_results_dir(out_dir)
    frames = []
    if is_archive(out):
        frames = [f for f in (_archived_frame(out, e, include_failed) for e in _archive_ids(out, experiment_id))
                  if f is not None]
    for manifest, rows in ([] if is_archive(out) else _run_files(out, experiment_id)):
        status = manifest.get("status")
        if rows is None:
            if not include_failed:
                continue
            rows = pd.DataFrame({"metric": [np.nan], "value": [np.nan]})
        base = {"experiment": manifest.get("experiment"), "setting": int(manifest.get("setting", -1)),
                "seed": int(manifest.get("seed", -1)), "status": status,
                "calibration": manifest.get("calibration"),
                "epsilon_spent": _float_or_none(manifest.get("epsilon_spent"))}
        params = {k: _param_cell(v) for k, v in (manifest.get("params") or {}).items()
                  if k not in rows.columns and k not in base}
        late = {} if "scale" in rows.columns or "scale" in params else {"scale": manifest.get("scale")}
        cells = {**base, **params, **late}
        for key in [k for k in cells if k in rows.columns]:                # overwritten where they stand
            rows[key] = [cells.pop(key)] * len(rows)
        extra = pd.DataFrame({key: [value] * len(rows) for key, value in cells.items()}, index=rows.index)
        frames.append(pd.concat([rows, extra], axis=1))
    if not frames:
        return pd.DataFrame(columns=list(BASE_COLUMNS) + ["metric", "value"])
    df = pd.concat(frames, ignore_index=True, sort=False)
    first = [c for c in BASE_COLUMNS if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]
