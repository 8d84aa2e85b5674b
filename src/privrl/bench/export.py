"""``privrl bench --export-minari DIR``: the datasets of the benchmark's tasks as Minari datasets.

Every task that has a dataset (policy evaluation and offline learning) writes the data of its seed
0 at the chosen profile — exactly the data every entry of that seed sees — as the local Minari
dataset ``privrl-bench/<task>/<profile>-v0`` under ``DIR`` (Minari's ``MINARI_DATASETS_PATH``), with
the task's source, logging policy, privacy unit and reward bounds in its metadata. Other libraries
then train on the same data (``minari.load_dataset``, or :func:`privrl.data.from_minari`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from privrl.bench.running import instance
from privrl.bench.spec import Task
from privrl.data.minari_io import to_minari

__all__ = ["export_minari", "dataset_id"]


def dataset_id(task: Task, profile: str) -> str:
    """The Minari id of ``task``'s seed-0 dataset at ``profile``."""
    return f"privrl-bench/{task.name}/{profile}-v0"


@contextlib.contextmanager
def _datasets_path(path: Path) -> Iterator[None]:
    old = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old


def export_minari(tasks: Sequence[Task], out_dir: str | os.PathLike, *, profile: str) -> list[str]:
    """Write the seed-0 dataset of every task of ``tasks`` that has one under ``out_dir``; returns
    the Minari ids written (an earlier export of the same id is replaced)."""
    root = Path(out_dir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    written = []
    with _datasets_path(root):
        for task in tasks:
            data = instance(task.name, profile, 0).input.dataset
            if data is None:
                continue
            ds_id = dataset_id(task, profile)
            shutil.rmtree(root / ds_id, ignore_errors=True)
            to_minari(data, ds_id, algorithm_name=f"logging policy: {task.logging_policy}",
                      description=f"privrl benchmark task '{task.name}' ({task.title}), seed 0, profile {profile}: "
                                  f"{task.source}. Privacy unit: one {task.privacy_unit.value}. Logging policy: "
                                  f"{task.logging_policy}.")
            written.append(ds_id)
    return written
