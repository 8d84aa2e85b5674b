"""Frozen, versioned references of the benchmark's tasks: ``references.json`` (package data).

A task is named with its version, ``chain-v1`` (:attr:`~privrl.bench.spec.Task.versioned_name`).
For each task and size profile the reference file holds, for every seed the profile runs:

* ``data`` — the SHA-256 of the data the entries see (:func:`data_hash`);
* ``trivial`` and ``reference`` — the raw metric of the task's trivial entry (0 on the normalised
  scale) and of its non-private reference (100) on that seed's data;

and, per task, the metric, the two entries' names and the optimum where known. Scores are
computed against these frozen values (:func:`frozen_points`), never against the trivial and
reference rows of the run itself, so a score means the same on every run of ``task-vN``. A run
records each cell's data hash and :func:`data_problems` compares them with the frozen ones: data
that differ are an error of the run (``privrl bench`` exits with code 1 and blanks the task's
scores), never a silent rescaling. Changing a task's data, metric or baseline therefore bumps its
``version`` and re-freezes it: ``privrl bench --freeze [--quick] [--tasks ...]`` runs the trivial
and reference cells through the ordinary runner (the same per-cell streams as any run, so an
unchanged baseline scores exactly 0 and 100) and writes the file (:func:`freeze`), refusing to
change the values of a version already frozen.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import pandas as pd

from privrl._io import atomic_write_text
from privrl.bench.spec import Instance, Task
from privrl.errors import InvalidDataError

if TYPE_CHECKING:
    from _hashlib import HASH

__all__ = ["REFERENCE_FILE", "FORMAT", "DECIMALS", "Frozen", "data_hash", "load_references", "frozen_points",
           "why_not_frozen", "data_problems", "missing_references", "freeze", "run_hashes", "scale_of", "check_run"]

#: the committed reference file (package data)
REFERENCE_FILE = Path(__file__).with_name("references.json")
#: the file's format
FORMAT = 1
#: floats are rounded to this many decimals before hashing: a last-bit difference of a platform's
#: libm or BLAS must not change the hash of the same data
DECIMALS = 9
#: how deep the hash follows the attributes of a plain object (a model, an environment)
_DEPTH = 4
_DATASET_FIELDS = ("observations", "actions", "rewards", "next_observations", "episode_starts", "terminals",
                   "n_states", "n_actions", "horizon", "reward_bounds")


# --------------------------------------------------------------------------- the data's hash
def _array(h: HASH, a: np.ndarray) -> None:
    if a.dtype.kind == "f":
        a = np.round(a.astype(np.float64), DECIMALS) + 0.0          # + 0.0: −0.0 hashes as 0.0
    elif a.dtype.kind in "iub":
        a = a.astype(np.int64)
    elif a.dtype.kind == "O":
        _feed(h, a.tolist(), _DEPTH)
        return
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    h.update(f"array{a.shape}{a.dtype.str}:".encode())
    h.update(a.tobytes())


def _feed(h: HASH, obj: object, depth: int = 0) -> None:
    """Feed ``obj``'s canonical encoding to the hash ``h``: arrays by value (floats rounded to
    :data:`DECIMALS`), mappings in key order, functions by name, plain objects by their public
    attributes (to :data:`_DEPTH` levels); generators and private attributes are left out."""
    if obj is None or isinstance(obj, (bool, int, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, float):
        h.update(f"float:{round(obj, DECIMALS) + 0.0!r};".encode())
    elif isinstance(obj, enum.Enum):
        _feed(h, obj.value, depth)
    elif isinstance(obj, np.generic):
        _feed(h, obj.item(), depth)
    elif isinstance(obj, np.ndarray):
        _array(h, obj)
    elif isinstance(obj, Mapping):
        h.update(b"{")
        for key in sorted(obj, key=str):
            _feed(h, str(key), depth)
            _feed(h, obj[key], depth)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for item in obj:
            _feed(h, item, depth)
        h.update(b"]")
    elif isinstance(obj, np.random.Generator):
        h.update(b"generator;")
    elif callable(obj) and not hasattr(obj, "__dict__") or isinstance(obj, type) or hasattr(obj, "__code__"):
        h.update(f"callable:{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__name__)};"
                 .encode())
    elif hasattr(obj, "episode_starts") and hasattr(obj, "observations"):      # a TrajectoryDataset
        _feed(h, {k: getattr(obj, k, None) for k in _DATASET_FIELDS}, depth)
    elif depth < _DEPTH:
        h.update(f"object:{type(obj).__module__}.{type(obj).__qualname__}".encode())
        _feed(h, {k: v for k, v in vars(obj).items() if not k.startswith("_")} if hasattr(obj, "__dict__") else {},
              depth + 1)
    else:
        h.update(f"object:{type(obj).__qualname__};".encode())


def data_hash(inst: Instance) -> str:
    """The SHA-256 (hex) of what the entries of one seed see: the :class:`~privrl.bench.spec.TaskInput`'s
    dataset (its arrays in a fixed order), public parameters and model, an environment built by its
    factory (control: the public attributes of ``make_env()``), and the evaluation seeds of a control
    task's truth. The exact model the score reads is left out (it is public and fixed per task; the
    frozen reference values depend on it)."""
    h = hashlib.sha256()
    inp = inst.input
    _feed(h, {"task": inp.task, "setting": inp.setting, "n_units": inp.n_units, "dataset": inp.dataset,
              "public": inp.public, "model": inp.model,
              "env": None if inp.make_env is None else inp.make_env(),
              "eval_seeds": getattr(inst.truth, "eval_seeds", None)})
    return h.hexdigest()


# --------------------------------------------------------------------------- the frozen values
class SeedPoint(TypedDict):
    """One seed's frozen values: the data's hash and the trivial and reference metrics."""

    data: str
    trivial: float
    reference: float


class ProfilePoints(TypedDict):
    """A profile's frozen seeds (keys: the seeds as strings)."""

    seeds: dict[str, SeedPoint]


class TaskReferences(TypedDict):
    """One task's entry of the reference file."""

    version: int
    metric: str
    trivial: str
    reference: str
    optimum: float | None
    profiles: dict[str, ProfilePoints]


class References(TypedDict):
    """The reference file: its format and the tasks' entries."""

    format: int
    tasks: dict[str, TaskReferences]


@dataclass(frozen=True)
class Frozen:
    """The frozen references of one task at one profile: per seed the data hash and the trivial and
    reference metrics; the task's version, metric, entries and optimum when frozen."""

    task: str
    version: int
    profile: str
    metric: str
    trivial_entry: str
    reference_entry: str
    optimum: float | None
    data: Mapping[int, str]
    trivial: Mapping[int, float]
    reference: Mapping[int, float]

    @property
    def versioned_name(self) -> str:
        return f"{self.task}-v{self.version}"


def load_references(path: str | Path | None = None) -> References:
    """The reference file (default: the committed one); an absent file holds no task."""
    path = REFERENCE_FILE if path is None else Path(path)
    if not path.is_file():
        return {"format": FORMAT, "tasks": {}}
    refs: References = json.loads(path.read_text(encoding="utf-8"))
    if refs.get("format") != FORMAT:
        raise InvalidDataError(f"The benchmark's reference file must have format {FORMAT}. Got "
                               f"{refs.get('format')!r} instead.")
    return refs


def frozen_points(refs: References, task: Task, profile: str) -> Frozen | None:
    """The frozen references of ``task`` at ``profile`` (None when the file has none for this
    version of the task, or they were frozen for another metric or other entries)."""
    entry = refs.get("tasks", {}).get(task.name)
    if entry is None or int(entry["version"]) != task.version or profile not in entry["profiles"]:
        return None
    if (entry["metric"], entry["trivial"], entry["reference"]) != (task.metric.name, task.trivial, task.reference):
        return None
    seeds = entry["profiles"][profile]["seeds"]
    return Frozen(task.name, task.version, profile, entry["metric"], entry["trivial"], entry["reference"],
                  entry.get("optimum"), {int(s): v["data"] for s, v in seeds.items()},
                  {int(s): float(v["trivial"]) for s, v in seeds.items()},
                  {int(s): float(v["reference"]) for s, v in seeds.items()})


def why_not_frozen(refs: References, task: Task, profile: str) -> str:
    """Why :func:`frozen_points` has nothing for ``task`` at ``profile`` ("" when it has)."""
    entry = refs.get("tasks", {}).get(task.name)
    fix = f"run `privrl bench --freeze{' --quick' if profile == 'quick' else ''} --tasks {task.name}`"
    if entry is None:
        return f"no frozen references for `{task.versioned_name}` ({fix})"
    if int(entry["version"]) != task.version:
        return f"the references are frozen for `{task.name}-v{entry['version']}`, not `{task.versioned_name}` ({fix})"
    if profile not in entry["profiles"]:
        return f"no frozen references for `{task.versioned_name}` at the {profile} profile ({fix})"
    if (entry["metric"], entry["trivial"], entry["reference"]) != (task.metric.name, task.trivial, task.reference):
        return (f"the references of `{task.versioned_name}` were frozen for another metric or baseline: bump the "
                f"task's version and {fix}")
    return ""


def data_problems(frozen: Frozen, hashes: Mapping[int, str | None]) -> list[str]:
    """One line per seed whose data hash differs from the frozen one (a seed not frozen, or whose
    hash the run did not record, is not checked here)."""
    return [f"the data of `{frozen.versioned_name}` ({frozen.profile} profile, seed {s}) differ from the frozen "
            f"version (hash {str(h)[:12]}… ≠ {frozen.data[s][:12]}…): bump the task's version and re-freeze"
            for s, h in sorted(hashes.items()) if h and s in frozen.data and h != frozen.data[s]]


def missing_references(tasks: Mapping[str, Task], refs: References, profiles: Sequence[str]) -> list[str]:
    """The tasks (``name-vN@profile``) without frozen references."""
    return [f"{t.versioned_name}@{p}" for t in tasks.values() for p in profiles if frozen_points(refs, t, p) is None]


# --------------------------------------------------------------------------- freezing
def _seed_values(rows: pd.DataFrame, task: Task) -> dict[int, SeedPoint]:
    """Per seed: the data hash and the trivial and reference metrics of a run's rows."""
    scored = rows[(rows["task"] == task.name) & (rows["mode"] == "score") & (rows["metric"] == task.metric.name)
                  & (rows["outcome"] == "ok")]
    out: dict[int, SeedPoint] = {}
    for seed, cells in scored.groupby(scored["seed"].astype(int)):
        value = {e: cells.loc[cells["entry"] == e, "value"].astype(float) for e in (task.trivial, task.reference)}
        hashes = set(cells["data_hash"].dropna()) if "data_hash" in cells else set()
        if any(len(v) != 1 or not math.isfinite(v.iloc[0]) for v in value.values()) or len(hashes) != 1:
            raise InvalidDataError(f"Freezing `{task.versioned_name}`: seed {seed} needs one finished cell of "
                                   f"'{task.trivial}' and of '{task.reference}' with its data hash. Got "
                                   f"{ {e: v.tolist() for e, v in value.items()} } and hashes {sorted(hashes)} "
                                   "instead.")
        out[int(seed)] = {"data": hashes.pop(), "trivial": float(value[task.trivial].iloc[0]),
                          "reference": float(value[task.reference].iloc[0])}
    return out


def _entry(task: Task) -> TaskReferences:
    return {"version": task.version, "metric": task.metric.name, "trivial": task.trivial,
            "reference": task.reference, "optimum": task.optimum, "profiles": {}}


def freeze(rows: pd.DataFrame, tasks: Sequence[Task], profile: str, *, path: str | Path | None = None) -> Path:
    """Write the frozen references of ``tasks`` at ``profile`` from a run's rows (the trivial and
    reference cells of every seed) into the reference file ``path`` (default: the committed one),
    keeping its other tasks and profiles. Refused when it would change what a version already frozen
    holds (data, values, metric, baselines or optimum): bump the task's version."""
    path = REFERENCE_FILE if path is None else Path(path)
    refs = load_references(path)
    for task in tasks:
        seeds = _seed_values(rows, task)
        if not seeds:
            raise InvalidDataError(f"Freezing `{task.versioned_name}`: the run has no finished trivial and reference "
                                   "cells for it.")
        old = refs["tasks"].get(task.name)
        entry = _entry(task)
        if old is not None and int(old["version"]) == task.version:
            changed = {k for k in ("metric", "trivial", "reference", "optimum") if old.get(k) != entry[k]}
            frozen_profile = old["profiles"].get(profile)
            before = {} if frozen_profile is None else frozen_profile["seeds"]
            changed |= {f"seed {s}" for s, v in seeds.items() if str(s) in before and before[str(s)] != v}
            if changed:
                raise InvalidDataError(f"Freezing `{task.versioned_name}` would change what that version holds "
                                       f"({', '.join(sorted(changed))}): bump the task's version (Task.version) and "
                                       "freeze again.")
            entry["profiles"] = {p: v for p, v in old["profiles"].items() if p != profile}
        entry["profiles"][profile] = {"seeds": {str(s): seeds[s] for s in sorted(seeds)}}
        entry["profiles"] = dict(sorted(entry["profiles"].items()))
        refs["tasks"][task.name] = entry
    refs["tasks"] = dict(sorted(refs["tasks"].items()))
    atomic_write_text(path, json.dumps(refs, indent=1) + "\n")
    return path


# --------------------------------------------------------------------------- a run against its references
def run_hashes(rows: pd.DataFrame, task: str) -> dict[int, str | None]:
    """The data hash a run's score rows of ``task`` recorded per seed (None: not recorded, e.g. a
    cell finished before hashes were recorded)."""
    if "data_hash" not in rows or not len(rows):
        return {}
    mine = rows[(rows["task"] == task) & rows["data_hash"].notna()]
    return {int(s): str(h) for s, h in zip(mine["seed"], mine["data_hash"])}


def scale_of(rows: pd.DataFrame, task: Task, refs: References, profile: str
             ) -> tuple[dict[int, float], dict[int, float], str]:
    """The frozen trivial and reference metrics per seed of ``task`` and, when they cannot be used,
    why ("" when they can): nothing frozen for this version and profile, or the run's data differ
    from the frozen version."""
    frozen = frozen_points(refs, task, profile)
    if frozen is None:
        return {}, {}, why_not_frozen(refs, task, profile)
    problems = data_problems(frozen, run_hashes(rows, task.name))
    if problems:
        more = f" (and {len(problems) - 1} more seeds)" if len(problems) > 1 else ""
        return {}, {}, problems[0] + more
    return dict(frozen.trivial), dict(frozen.reference), ""


def check_run(rows: pd.DataFrame, tasks: Sequence[Task], refs: References, profile: str) -> list[str]:
    """Every seed of a run whose data differ from its task's frozen version (one line each)."""
    out: list[str] = []
    for task in tasks:
        frozen = frozen_points(refs, task, profile)
        if frozen is not None:
            out += data_problems(frozen, run_hashes(rows, task.name))
    return out
