"""Logs of any size: sufficient statistics accumulated from a stream of chunks, memory set by the
statistics (the count table), not by the number of logged transitions.

A **chunk** is a mapping of equal-length flat columns, one row per transition: ``episode`` (int id),
``observation``, ``action``, ``reward``, ``next_observation`` (tabular: int states) and optionally
``step`` (the step within the episode) and ``terminal`` (bool). Rows of an episode are contiguous and
in step order; episode ids increase along the stream; **an episode may span chunks** (a reader
splits wherever its blocks end).

* Readers: :func:`dataset_chunks` (an in-memory :class:`~privrl.data.TrajectoryDataset`, split every
  ``rows`` rows), :func:`parquet_chunks` (Parquet files, read batch by batch with pyarrow; extra
  ``parquet``), :func:`minari_chunks` (a local Minari dataset, episode by episode; extra ``minari``);
  :func:`write_parquet` writes datasets (or a generator of them) with the stream's public
  declarations in the file's metadata (:func:`parquet_declarations` reads them back).
* :func:`complete_episodes` turns chunks into :class:`~privrl.data.TrajectoryDataset` batches of
  **whole** episodes: the rows of an episode that a chunk ends in are carried into the next batch,
  so everything computed per trajectory — its visit caps (DP-APVI's ``max_visits``), its return and
  first visits (Monte Carlo), the bounds privacy relies on — sees the whole trajectory, exactly as in
  memory. Each batch is built with the stream's declarations (``n_states``, ``n_actions``,
  ``horizon``, ``reward_bounds``, ``max_episode_length``), so it is validated like any dataset.
* :func:`stream_statistics` maps each batch to a statistic with the caller's function (e.g.
  ``privrl.offline.offline_statistics``) and reduces them: :class:`CountReducer` for sparse count
  statistics (``keys``/``values``/``reward_sums``, as ``privrl.offline.Statistics``), whose result
  has exactly the counts of the in-memory path, :class:`SumReducer` for dataclasses of sums (as
  ``privrl.policy_evaluation.monte_carlo.ReturnStatistics``). This module is a shared layer: it
  knows no family, so the statistic and the reducer are the caller's.
* :func:`ray_statistics`: the same map/reduce over the blocks of a Ray Data dataset read from Parquet
  (extra ``ray``): each block maps its inner whole episodes, the first and last episode of a block
  (possibly cut) are sent back as fragments, stitched by ``(episode, step)`` and mapped at the end.

Memory: one chunk, one batch and the reducer's state — ``O(nnz + H·S·A)`` for counts (``nnz`` the
visited cells; a dense table when it has at most ``dense_cells`` cells).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Generic, Protocol, TypedDict, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike

from privrl._validation import check_scalar, param_error
from privrl.data.trajectories import MAX_EPISODE_LENGTH, TrajectoryDataset
from privrl.errors import InvalidDataError

if TYPE_CHECKING:
    from minari import MinariDataset
    from typing_extensions import Unpack  # annotations only (typing.Unpack: Python 3.11)

__all__ = ["COLUMNS", "dataset_chunks", "write_parquet", "parquet_chunks", "parquet_declarations", "minari_chunks",
           "complete_episodes", "stream_statistics", "ray_statistics", "CountReducer", "SumReducer", "SAME"]

_OWNER = "stream_statistics"
#: the columns every chunk has (``step`` and ``terminal`` are optional)
COLUMNS = ("episode", "observation", "action", "reward", "next_observation")
_FIELDS = {"observation": "observations", "action": "actions", "reward": "rewards",
           "next_observation": "next_observations", "terminal": "terminals"}
#: the declarations a stream carries (keyword arguments of TrajectoryDataset, plus the length bound)
DECLARATIONS = ("n_states", "n_actions", "horizon", "reward_bounds", "max_episode_length")
_META_KEY = b"privrl"


class Declarations(TypedDict, total=False):
    """A stream's public declarations (:data:`DECLARATIONS`)."""

    n_states: int | None
    n_actions: int | None
    horizon: int | None
    reward_bounds: Sequence[float] | None
    max_episode_length: int | None


class CountStatistics(Protocol):
    """Sparse count statistics :class:`CountReducer` sums (as ``privrl.offline.Statistics``)."""

    @property
    def keys(self) -> np.ndarray: ...
    @property
    def values(self) -> np.ndarray: ...
    @property
    def reward_sums(self) -> np.ndarray: ...
    @property
    def shape(self) -> tuple[int, int, int]: ...
    @property
    def n_episodes(self) -> int: ...
    @property
    def max_reward(self) -> float | None: ...
    @property
    def max_return(self) -> float | None: ...


#: a statistic of a batch (what a reducer adds) and a reducer's result
S_contra = TypeVar("S_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)
C = TypeVar("C", bound=CountStatistics)
D = TypeVar("D")
S = TypeVar("S")
R = TypeVar("R")


class Reducer(Protocol[S_contra, R_co]):
    """What :func:`stream_statistics` reduces with: ``add`` each batch's statistic, then ``result()``."""

    def add(self, stats: S_contra, /) -> None: ...

    def result(self) -> R_co: ...


# ---------------------------------------------------------------------------------------- readers
def dataset_chunks(dataset: TrajectoryDataset, rows: int, *, first_episode: int = 0) -> Iterator[dict[str, np.ndarray]]:
    """The transitions of ``dataset`` as chunks of ``rows`` rows (the last may be shorter): episode
    ids ``first_episode + i``, the ``step`` column, and ``terminal`` when the dataset records it.
    Chunk boundaries fall wherever ``rows`` says, inside episodes too."""
    rows = check_scalar(rows, "rows", owner="dataset_chunks", kind=int, low=1)
    starts = np.asarray(dataset.episode_starts, dtype=np.int64)
    episode = np.repeat(np.arange(dataset.n_episodes, dtype=np.int64) + int(first_episode), np.diff(starts))
    columns = {"episode": episode, "step": np.arange(episode.size, dtype=np.int64) - np.repeat(starts[:-1],
                                                                                               np.diff(starts)),
               "observation": np.asarray(dataset.observations), "action": np.asarray(dataset.actions),
               "reward": np.asarray(dataset.rewards), "next_observation": np.asarray(dataset.next_observations)}
    if dataset.terminals is not None:
        columns["terminal"] = np.asarray(dataset.terminals)
    for lo in range(0, episode.size, rows):
        yield {k: v[lo:lo + rows] for k, v in columns.items()}


def _declarations(dataset: TrajectoryDataset) -> Declarations:
    return {"n_states": dataset.n_states, "n_actions": dataset.n_actions, "horizon": dataset.horizon,
            "reward_bounds": None if dataset.reward_bounds is None else list(dataset.reward_bounds),
            "max_episode_length": cast("int | None", (dataset.metadata or {}).get(MAX_EPISODE_LENGTH))}


def _import_pyarrow() -> tuple[ModuleType, ModuleType]:
    try:   # an optional extra, imported on use
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Parquet streams need pyarrow: pip install 'privrl[parquet]'") from exc
    return pa, pq


def write_parquet(datasets: TrajectoryDataset | Iterable[TrajectoryDataset], path: str | Path, *,
                  row_group_size: int = 1 << 20, first_episode: int = 0) -> Path:
    """Write one dataset, or the datasets of an iterable one after the other (episode ids running on:
    a log of any size written piece by piece), as one Parquet file of the chunk columns, with the
    first dataset's declarations (``n_states``, ``n_actions``, ``horizon``, ``reward_bounds``,
    ``max_episode_length``) in the file's metadata. Every dataset must declare the same ones. Episode
    ids start at ``first_episode`` (files of one stream carry increasing ids: one file's continue the
    previous file's)."""
    pa, pq = _import_pyarrow()
    path = Path(path)
    parts = [datasets] if isinstance(datasets, TrajectoryDataset) else datasets
    writer, declared, next_id = None, None, int(first_episode)
    try:
        for part in parts:
            decl = _declarations(part)
            if declared is None:
                declared = decl
            elif decl != declared:
                raise InvalidDataError(f"write_parquet: every dataset must declare the same {DECLARATIONS}; "
                                       f"got {decl} after {declared}.")
            for chunk in dataset_chunks(part, max(len(part), 1), first_episode=next_id):
                table = pa.table(chunk)
                if writer is None:
                    schema = table.schema.with_metadata({_META_KEY: json.dumps(declared).encode()})
                    writer = pq.ParquetWriter(str(path), schema)
                writer.write_table(table.cast(writer.schema), row_group_size=row_group_size)
            next_id += part.n_episodes
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise param_error("datasets", "write_parquet", "at least one TrajectoryDataset", "none")
    return path


def parquet_declarations(path: str | Path) -> Declarations:
    """The declarations :func:`write_parquet` recorded in ``path`` (empty for another writer's file)."""
    _, pq = _import_pyarrow()
    meta = pq.read_schema(str(path)).metadata or {}
    return json.loads(meta[_META_KEY]) if _META_KEY in meta else {}


def parquet_chunks(paths: str | Path | Sequence[str | Path], *, batch_rows: int = 1 << 20
                   ) -> Iterator[dict[str, np.ndarray]]:
    """Chunks of at most ``batch_rows`` rows from Parquet files (in order), read batch by batch
    (``pyarrow.parquet.ParquetFile.iter_batches``): memory of one batch, whatever the file size."""
    _, pq = _import_pyarrow()
    batch_rows = check_scalar(batch_rows, "batch_rows", owner="parquet_chunks", kind=int, low=1)
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        file = pq.ParquetFile(str(path))
        missing = [c for c in COLUMNS if c not in file.schema_arrow.names]
        if missing:
            raise InvalidDataError(f"parquet_chunks: the file {Path(path).name} lacks the columns {missing} "
                                   f"(a stream has {COLUMNS}, optionally 'step' and 'terminal').")
        for batch in file.iter_batches(batch_size=batch_rows):
            yield {name: batch.column(name).to_numpy(zero_copy_only=False) for name in batch.schema.names}


def minari_chunks(dataset: str | MinariDataset, *, episodes: int = 1000) -> Iterator[dict[str, np.ndarray]]:
    """Chunks of ``episodes`` episodes from a ``MinariDataset`` or a local Minari dataset id (read by
    :func:`~privrl.data.from_minari`, one block of episodes at a time; the declarations are those
    from_minari reads: give them to :func:`stream_statistics` as for any stream)."""
    from privrl.data.minari_io import _import_minari, from_minari  # the optional extra, on use

    minari = _import_minari()
    episodes = check_scalar(episodes, "episodes", owner="minari_chunks", kind=int, low=1)
    if isinstance(dataset, str):
        dataset = minari.load_dataset(dataset, download=False)
    indices = np.asarray(dataset.episode_indices)
    for lo in range(0, indices.size, episodes):
        # a view of the block's episodes on the same storage (nothing copied), read by from_minari
        part = from_minari(minari.MinariDataset(dataset.storage, episode_indices=indices[lo:lo + episodes]))
        yield from dataset_chunks(part, max(len(part), 1), first_episode=lo)


# ---------------------------------------------------------------------------------------- episodes
def _columns(chunk: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
    missing = [c for c in COLUMNS if c not in chunk]
    if missing:
        raise InvalidDataError(f"{_OWNER}: a chunk lacks the columns {missing} (a stream has {COLUMNS}, optionally "
                               "'step' and 'terminal').")
    out = {k: np.asarray(v) for k, v in chunk.items() if k in COLUMNS or k in ("step", "terminal")}
    n = out["episode"].shape[0]
    if any(v.shape[:1] != (n,) for v in out.values()):
        raise InvalidDataError(f"{_OWNER}: the columns of a chunk must have the same length.")
    return out


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _check_declared(declared: Mapping[str, object], owner: str) -> None:
    unknown = sorted(set(declared) - set(DECLARATIONS))
    if unknown:
        raise param_error(unknown[0], owner, f"one of the declarations {DECLARATIONS}", declared[unknown[0]])


def _check_order(ids: np.ndarray) -> None:
    if np.any(np.diff(ids) < 0):
        raise InvalidDataError(f"{_OWNER}: episode ids must increase along the stream (the rows of an episode "
                               "contiguous); some do not.")


def _batch(rows: dict[str, np.ndarray], declared: Declarations) -> TrajectoryDataset:
    """A :class:`TrajectoryDataset` of whole episodes (contiguous ids), validated with the declarations."""
    ids = rows["episode"]
    _check_order(ids)
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change, [ids.size]])
    if "step" in rows:
        expected = np.arange(ids.size) - np.repeat(starts[:-1], np.diff(starts))
        if not np.array_equal(rows["step"], expected):
            raise InvalidDataError(f"{_OWNER}: the steps of an episode must run 0, 1, 2, ... in order; some do not "
                                   "(a missing, repeated or reordered transition).")
    length = declared.get("max_episode_length")
    metadata = {} if length is None else {MAX_EPISODE_LENGTH: int(length)}
    bounds = declared.get("reward_bounds", (0.0, 1.0))
    return TrajectoryDataset(rows["observation"], rows["action"], rows["reward"], rows["next_observation"], starts,
                             terminals=rows.get("terminal"), n_states=declared.get("n_states"),
                             n_actions=declared.get("n_actions"), horizon=declared.get("horizon"),
                             reward_bounds=None if bounds is None else cast("tuple[float, float]", tuple(bounds)),
                             metadata=metadata)


def complete_episodes(chunks: Iterable[Mapping[str, ArrayLike]],
                      **declared: Unpack[Declarations]) -> Iterator[TrajectoryDataset]:
    """One :class:`TrajectoryDataset` of whole episodes per chunk (module docstring): the rows of the
    episode a chunk ends in wait for the next chunk (the last one is complete at the end of the
    stream). ``declared``: the stream's public ``n_states``, ``n_actions``, ``horizon``,
    ``reward_bounds`` (default (0, 1)), ``max_episode_length``; each batch is validated with them
    (``horizon``: every episode exactly that long)."""
    _check_declared(declared, "complete_episodes")
    pending: list[dict[str, np.ndarray]] = []
    last_id: int | None = None
    for chunk in chunks:
        rows = _columns(chunk)
        ids = rows["episode"]
        if ids.size == 0:
            continue
        if last_id is not None and int(ids[0]) < last_id:
            raise InvalidDataError(f"{_OWNER}: episode ids must increase along the stream; a chunk starts "
                                   "with an earlier episode.")
        _check_order(ids)
        cut = int(np.searchsorted(ids, ids[-1], side="left"))    # the rows of the last episode wait
        if cut == 0 and last_id == int(ids[0]):                  # the waiting episode goes on
            pending.append(rows)
            continue
        last_id = int(ids[-1])
        pending.append({k: v[:cut] for k, v in rows.items()})
        whole = _concat(pending)
        pending = [{k: v[cut:] for k, v in rows.items()}]
        if whole["episode"].size:
            yield _batch(whole, declared)
    if pending and pending[0]["episode"].size:
        yield _batch(_concat(pending), declared)


# ---------------------------------------------------------------------------------------- reducers
class CountReducer(Generic[C]):
    """Sums sparse count statistics — objects with ``keys`` (sorted unique int64 cell keys),
    ``values`` (counts), ``reward_sums``, ``shape`` ``(H, S, A)``, ``n_episodes``, ``max_reward``,
    ``max_return``, built as ``type(stats)(keys, counts, reward_sums, n_states=, n_actions=,
    n_episodes=, max_reward=, max_return=)`` (``privrl.offline.Statistics``; an optional dense
    ``state_visits`` table is summed too and passed as ``state_visits=``). Counts are summed in
    a dense table when the ``H·S·A·S`` cells number at most ``dense_cells``, else sparsely (pending
    parts merged once they outgrow the running table: ``O(nnz log nnz)`` amortised)."""

    def __init__(self, dense_cells: int = 1 << 25) -> None:
        self.dense_cells = check_scalar(dense_cells, "dense_cells", owner="CountReducer", kind=int, low=0)
        self._type: Callable[..., C] | None = None
        self._dense: np.ndarray | None = None
        self._keys = np.zeros(0, dtype=np.int64)
        self._values: np.ndarray = np.zeros(0)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_size = 0

    def add(self, stats: C) -> None:
        H, S, A = stats.shape
        if self._type is None:
            self._type, self._shape = type(stats), stats.shape
            self._sums = np.zeros(stats.shape)
            self._visits: np.ndarray | None = None
            self._episodes, self._max_reward, self._max_return = 0, 0.0, 0.0
            if H * S * A * S <= self.dense_cells:
                self._dense = np.zeros(H * S * A * S)
        elif stats.shape != self._shape:
            raise InvalidDataError(f"CountReducer: statistics of shape {stats.shape} after {self._shape}.")
        self._sums += stats.reward_sums
        visits = getattr(stats, "state_visits", None)       # an optional dense side table, summed as it is
        if visits is not None:
            self._visits = visits.copy() if self._visits is None else self._visits + visits
        if stats.max_reward is None or stats.max_return is None:
            raise InvalidDataError("CountReducer: statistics without max_reward and max_return cannot be summed.")
        self._episodes += int(stats.n_episodes)
        self._max_reward = max(self._max_reward, float(stats.max_reward))
        self._max_return = max(self._max_return, float(stats.max_return))
        if self._dense is not None:
            self._dense[stats.keys] += stats.values               # keys are unique within one statistics
            return
        self._pending.append((np.asarray(stats.keys, dtype=np.int64), np.asarray(stats.values, dtype=float)))
        self._pending_size += stats.keys.size
        if self._pending_size >= max(self._keys.size, 1 << 16):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self._keys] + [k for k, _ in self._pending])
        values = np.concatenate([self._values] + [v for _, v in self._pending])
        self._keys, inverse = np.unique(keys, return_inverse=True)
        self._values = np.bincount(inverse.ravel(), weights=values, minlength=self._keys.size)
        self._pending, self._pending_size = [], 0

    def result(self) -> C:
        if self._type is None:
            raise InvalidDataError("CountReducer: the stream had no complete episode.")
        if self._dense is not None:
            keys = np.flatnonzero(self._dense)
            values = self._dense[keys]
        else:
            self._merge()
            keys, values = self._keys, self._values
        _, S, A = self._shape
        extra = {} if self._visits is None else {"state_visits": self._visits.copy()}
        return self._type(keys, values, self._sums.copy(), n_states=S, n_actions=A, n_episodes=self._episodes,
                          max_reward=self._max_reward, max_return=self._max_return, **extra)


#: the field metadata of a dataclass field that :class:`SumReducer` keeps instead of summing (the
#: public choices the sums were built with: equal in every part, or an error)
SAME = {"reduce": "same"}


class SumReducer(Generic[D]):
    """Sums dataclasses of sums field by field (ints, floats and arrays; a None field stays None), as
    ``privrl.policy_evaluation.monte_carlo.ReturnStatistics``; a field whose metadata is
    :data:`SAME` (e.g. the public choices the sums were built with) is kept, and must be equal in
    every part."""

    def __init__(self) -> None:
        self._total: D | None = None

    def add(self, stats: D) -> None:
        if not dataclasses.is_dataclass(stats) or isinstance(stats, type):
            raise param_error("stats", "SumReducer.add", "a dataclass instance of sums", type(stats).__name__)
        if self._total is None:
            self._total = stats
            return
        changes = {}
        for f in dataclasses.fields(stats):
            a, b = getattr(self._total, f.name), getattr(stats, f.name)
            if f.metadata.get("reduce") == SAME["reduce"]:
                if a != b:
                    raise InvalidDataError(f"SumReducer: the field {f.name!r} differs between parts of the stream "
                                           "(they were built with different public choices).")
                continue
            if (a is None) != (b is None):
                raise InvalidDataError(f"SumReducer: the field {f.name!r} is None in some statistics only.")
            changes[f.name] = None if a is None else a + b
        self._total = dataclasses.replace(self._total, **changes)  # type: ignore[type-var]  # a dataclass: checked

    def result(self) -> D:
        if self._total is None:
            raise InvalidDataError("SumReducer: the stream had no complete episode.")
        return self._total


def _reducer(reducer: Reducer[S, R] | None) -> Reducer[S, R]:
    return CountReducer() if reducer is None else reducer  # type: ignore[return-value]  # S: count statistics


def stream_statistics(chunks: Iterable[Mapping[str, ArrayLike]], statistic: Callable[[TrajectoryDataset], S], *,
                      reducer: Reducer[S, R] | None = None, **declared: Unpack[Declarations]) -> R:
    """``reducer.add(statistic(batch))`` for every batch of whole episodes of the stream
    (:func:`complete_episodes` with the declarations), then ``reducer.result()``. ``reducer``
    default: a :class:`CountReducer` (counts equal to the in-memory path's)."""
    red = _reducer(reducer)
    for batch in complete_episodes(chunks, **declared):
        red.add(statistic(batch))
    return red.result()


# ---------------------------------------------------------------------------------------- Ray Data
def _map_block(rows: dict[str, np.ndarray], statistic: Callable[[TrajectoryDataset], S],
               declared: Declarations) -> tuple[S | None, dict[str, np.ndarray]]:
    """A block's statistic of its inner whole episodes (None if it has none) and, as fragments, the
    rows of its first and last episodes (possibly cut by the block's ends)."""
    rows = _columns(rows)
    ids = rows["episode"]
    _check_order(ids)
    if ids.size == 0:
        return None, rows
    lo = int(np.searchsorted(ids, ids[0], side="right"))
    hi = int(np.searchsorted(ids, ids[-1], side="left"))
    stats = statistic(_batch({k: v[lo:hi] for k, v in rows.items()}, declared)) if hi > lo else None
    edge = np.r_[np.arange(0, min(lo, ids.size)), np.arange(max(hi, lo), ids.size)]
    return stats, {k: v[edge] for k, v in rows.items()}


def _map_row_groups(items: dict[str, np.ndarray], statistic: Callable[[TrajectoryDataset], object],
                    declared: Declarations) -> dict[str, np.ndarray]:
    """Ray Data map step: each item names one Parquet row group (a block of the log), read here, in
    the worker; its :func:`_map_block` result is pickled into one output row."""
    _, pq = _import_pyarrow()
    out = []
    for path, group in zip(items["path"], items["row_group"]):
        table = pq.ParquetFile(str(path)).read_row_group(int(group))
        rows = {name: table.column(name).to_numpy() for name in table.column_names}
        out.append(pickle.dumps(_map_block(rows, statistic, declared)))
    return {"payload": np.array(out, dtype=object)}


def ray_statistics(paths: str | Path | Sequence[str | Path], statistic: Callable[[TrajectoryDataset], S], *,
                   reducer: Reducer[S, R] | None = None, **declared: Unpack[Declarations]) -> R:
    """:func:`stream_statistics` of Parquet files as a Ray Data map/reduce: the map runs on the
    row groups (one block each, in parallel on the workers: the statistic of each block's inner whole
    episodes, plus its first and last episodes as fragments); the reduce adds the statistics, stitches
    the fragments by ``(episode, step)`` (files of one stream carry increasing episode ids; the ``step``
    column is needed) and adds theirs. Ray must be initialised by the caller (``ray.init(num_cpus=...)``)
    or is started locally by Ray Data on first use. The row groups are read with pyarrow in the
    workers (not ``ray.data.read_parquet``, whose path resolution needs fsspec's HTTP support)."""
    try:   # an optional extra, imported on use
        import ray.data
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ray_statistics needs Ray: pip install 'privrl[ray]'") from exc
    _, pq = _import_pyarrow()
    _check_declared(declared, "ray_statistics")
    files = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    items = [{"path": f, "row_group": g} for f in files for g in range(pq.ParquetFile(f).num_row_groups)]
    mapped = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        _map_row_groups,  # type: ignore[arg-type]  # Ray's stubs do not see the arguments passed by fn_kwargs
        batch_size=1, batch_format="numpy", fn_kwargs={"statistic": statistic, "declared": declared})
    red = _reducer(reducer)
    fragments = []
    for row in mapped.iter_rows():
        stats, frag = pickle.loads(row["payload"])
        if stats is not None:
            red.add(stats)
        if frag["episode"].size:
            fragments.append(frag)
    if fragments:
        rows = _concat(fragments)
        if "step" not in rows:
            raise InvalidDataError("ray_statistics: the stream needs the 'step' column to stitch episodes cut by "
                                   "block ends (write_parquet writes it).")
        order = np.lexsort((rows["step"], rows["episode"]))
        red.add(statistic(_batch({k: v[order] for k, v in rows.items()}, declared)))
    return red.result()
