"""``privrl bench --export-minari DIR``: the datasets of the benchmark's tasks as Minari datasets.

Every task that has a dataset (policy evaluation, offline learning and offline control) writes the data of each seed
of the chosen profile — exactly the data every entry of that seed sees — as the local Minari dataset
``privrl-bench/<task>/<profile>-seed<s>-v<version>`` under ``DIR`` (Minari's ``MINARI_DATASETS_PATH``;
the version is the task's, :attr:`~privrl.bench.spec.Task.version`), with the task's source, logging
policy, privacy unit, reward bounds and data hash in its metadata. Other libraries then train on the
same data (``minari.load_dataset``, or :func:`privrl.data.from_minari`).

* **Environment spec.** Where the data are a Gymnasium environment's own transitions and rewards
  (``Task.env``; episodes that end early are padded to the horizon with absorbing zero-reward steps),
  the dataset records its spec — with the episode cut the data were generated with as its time limit
  (``max_episode_steps`` in ``Task.env``) — so ``minari.load_dataset(id).recover_environment()`` gives
  the environment the returns are on. Tasks on privrl's own models, or with rescaled rewards, record
  none (their description says so): no registered environment produces those data.
* **Reference scores.** For offline-learning tasks the dataset carries ``ref_min_score`` and
  ``ref_max_score`` for ``minari.get_normalized_score``: the expected return over the task's horizon of
  the trivial entry's and of the non-private reference's policy on that seed's data, read off the
  frozen references (:mod:`privrl.bench.references`; return = V* − gap), so Minari's normalised score
  0 / 1 is the benchmark's 0 / 100. Offline-control tasks carry the frozen returns themselves (the
  behaviour policy's and the non-private learner's, over the task's evaluation episodes).
  Policy-evaluation tasks score an estimate, not a return: none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from privrl.bench.references import data_hash, load_references
from privrl.bench.running import instance
from privrl.bench.spec import Instance, Task
from privrl.data.minari_io import env_spec, to_minari
from privrl.deep_offline.continuous_data import ContinuousTransitions
from privrl.deep_offline.continuous_data import write_minari as write_continuous

if TYPE_CHECKING:
    from gymnasium.envs.registration import EnvSpec

__all__ = ["export_minari", "dataset_id", "reference_scores"]


def dataset_id(task: Task, profile: str, seed: int = 0) -> str:
    """The Minari id of ``task``'s dataset of ``seed`` at ``profile`` (versioned with the task)."""
    return f"privrl-bench/{task.name}/{profile}-seed{seed}-v{task.version}"


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


def reference_scores(task: Task, profile: str, seed: int, inst: Instance) -> tuple[float, float] | None:
    """``(ref_min_score, ref_max_score)`` of an offline-learning task's seed: the frozen trivial and
    reference gaps turned into expected returns (V* − gap); ``None`` for other tasks or without
    frozen references."""
    if (task.setting, task.metric.name) not in (("offline-learning", "gap"), ("offline-control", "return")):
        return None
    frozen = load_references()["tasks"].get(task.name)
    points = None if frozen is None or frozen["version"] != task.version else frozen["profiles"].get(profile)
    point = None if points is None else points["seeds"].get(str(seed))
    if point is None:
        return None
    if task.metric.name == "return":        # offline control: the frozen values are returns already
        return float(point["trivial"]), float(point["reference"])
    v_star = float(inst.truth.model.optimal_value())
    return v_star - float(point["trivial"]), v_star - float(point["reference"])


def _env_spec(task: Task) -> EnvSpec | None:
    """The Gymnasium ``EnvSpec`` of ``task.env`` (with its keyword arguments and its episode cut
    ``max_episode_steps`` where it declares one), or ``None``."""
    if task.env is None:
        return None
    steps = task.env.get("max_episode_steps")
    assert steps is None or isinstance(steps, int)
    return env_spec(str(task.env["id"]), max_episode_steps=steps,
                    kwargs={k: v for k, v in task.env.items() if k not in ("id", "max_episode_steps")})


def _seeds(task: Task, profile: str, seeds: Sequence[int] | None) -> list[int]:
    return list(seeds) if seeds is not None else list(range(int(task.sizes[profile].get("seeds", 1))))


def export_minari(tasks: Sequence[Task], out_dir: str | os.PathLike[str], *, profile: str,
                  seeds: Sequence[int] | None = None) -> list[str]:
    """Write the dataset of every seed (``seeds``; default every seed the profile runs) of every task
    of ``tasks`` that has one under ``out_dir``; returns the Minari ids written (an earlier export of
    the same id is replaced)."""
    root = Path(out_dir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    written = []
    with _datasets_path(root):
        for task in tasks:
            for seed in _seeds(task, profile, seeds):
                inst = instance(task.name, profile, seed)
                if inst.input.dataset is None:
                    break
                written.append(_write(task, profile, seed, inst, root))
    return written


def _write(task: Task, profile: str, seed: int, inst: Instance, root: Path) -> str:
    ds_id = dataset_id(task, profile, seed)
    shutil.rmtree(root / ds_id, ignore_errors=True)
    spec = _env_spec(task)
    env_note = (f" Environment: {spec.id} {dict(spec.kwargs)}, time limit {spec.max_episode_steps} steps "
                "(recover_environment); episodes ending early are padded to the horizon with absorbing zero-reward "
                "steps." if spec is not None else
                " No registered environment produces these data (privrl's own model or rescaled rewards).")
    data = inst.input.dataset
    assert data is not None
    description = (f"privrl benchmark task '{task.versioned_name}' ({task.title}), seed {seed}, profile {profile}: "
                   f"{task.source}. Privacy unit: one {task.privacy_unit.value}. Logging policy: "
                   f"{task.logging_policy}.{env_note}")
    if isinstance(data, ContinuousTransitions):     # continuous actions: a Box action space
        ds = write_continuous(data, ds_id, env=spec, description=description)
    else:
        ds = to_minari(data, ds_id, env=spec, algorithm_name=f"logging policy: {task.logging_policy}",
                       description=description)
    extra: dict[str, object] = {"privrl_task": task.versioned_name, "privrl_profile": profile, "privrl_seed": seed,
                                "privrl_data_sha256": data_hash(inst)}
    refs = reference_scores(task, profile, seed, inst)
    if refs is not None:
        extra["ref_min_score"], extra["ref_max_score"] = refs
    ds.storage.update_metadata(extra)
    return ds_id
