"""The sweep runner: local process pool or Ray, atomic results, resume, failure isolation.

A sweep is a list of :class:`RunSpec` — (experiment, setting index, seed, params, scale). Each run
is executed by :func:`execute_run` (in a worker) which returns its metrics rows and manifest; the
*driver* writes them (metrics first, then the manifest, each atomically), so a killed worker or a
killed driver never leaves a half-written run and orphaned workers never write. A run's directory
is named by its content (:func:`privrl.experiments.results.run_key`), so sweeps with other
``--set`` values or another scale never overwrite each other. On the next invocation, finished runs
(manifest ``status: ok`` and a ``metrics.csv`` matching the checksum the manifest records) are
skipped.

One sweep at a time writes into an ``OUT``: :func:`run_sweep` holds ``OUT/.privrl-run.lock``
(an OS file lock, released when the process ends however it ends; the file names the holder's
pid, host and start time for the message). Overrides (``privrl run --set``) are checked against
the experiment's settings before anything runs (:func:`check_overrides`). Pool workers exit when
the driver dies (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread everywhere).

Seeds: run ``(experiment, i, s)`` gets ``np.random.default_rng(derive_seed(experiment, i, s))``
as ``ctx.rng`` — the same on every backend, in every worker, in any order.

Workers (``--jobs`` > 1: a 'spawn' process pool; Ray) find experiments through the registry, so an
experiment must be registered by a module listed in :mod:`privrl.experiments.registry`; with
``jobs=1`` runs execute in the calling process (no start-up cost), which also serves experiments
registered at run time (tests). With Ray on a remote cluster, results travel back to the driver,
which writes them: ``OUT`` need only exist on the driver's machine.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import logging
import math
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._io import atomic_write_bytes
from privrl._progress import progress
from privrl._rng import derive_seed
from privrl._threads import one_blas_thread_in_workers
from privrl._validation import check_option, check_scalar, param_error
from privrl.errors import InvalidParameterError
from privrl.experiments.locking import LOCK_FILE, RunLockedError, sweep_lock
from privrl.experiments.overrides import BUDGET_KEYS, check_overrides, known_params
from privrl.experiments.provenance import git_commit, versions
from privrl.experiments.registry import get_experiment
from privrl.experiments.results import (
    MANIFEST,
    METRICS,
    atomic_write_json,
    is_finished,
    metrics_csv,
    run_dir,
    run_key,
    sha256_bytes,
    to_jsonable,
)
from privrl.experiments.scheduling import WarmUp, compile_key, largest_first, schedule, warm_up, warm_ups
from privrl.experiments.spec import BACKENDS, SCALES, RunContext, RunResult
from privrl.privacy.budget import reporting_delta
from privrl.privacy.calibration import CALIBRATIONS

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["BACKENDS", "BUDGET_KEYS", "LOCK_FILE", "RAY_CONNECT_TIMEOUT", "RunSpec", "RunOutcome", "SweepSummary",
           "RunLockedError", "check_overrides", "known_params", "plan_runs", "parse_seeds", "run_seed",
           "execute_run", "execute_runs", "group_runs", "run_sweep", "sweep_lock", "versions", "git_commit",
           "default_jobs"]

#: seconds allowed for connecting to a Ray cluster (``--ray-address``)
RAY_CONNECT_TIMEOUT = 30.0


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep."""

    experiment: str
    setting: int
    seed: int
    params: dict[str, Any]
    scale: str

    @property
    def key(self) -> str:
        """The run's setting directory name (:func:`~privrl.experiments.results.run_key`)."""
        return run_key(self.experiment, self.scale, self.setting, self.params)


@dataclass
class RunOutcome:
    """What :func:`execute_run` returns to the driver (picklable)."""

    spec: RunSpec
    status: str
    rows: list[dict[str, Any]] | None
    manifest: dict[str, Any]


@dataclass
class SweepSummary:
    """The result of :func:`run_sweep`."""

    planned: int = 0
    skipped: int = 0
    ok: int = 0
    failed: list[tuple[RunSpec, str]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return not self.failed

    def line(self) -> str:
        """A one-line summary (names what failed)."""
        text = (f"{self.planned} runs: {self.ok} ran ok, {self.skipped} already finished, "
                f"{len(self.failed)} failed")
        if self.failed:
            text += f" ({self.failures_text()})"
        return text

    def failures_text(self, limit: int = 3) -> str:
        """The first ``limit`` failed runs with the last line of their traceback."""
        shown = "; ".join(f"{s.experiment}/{s.setting}/seed={s.seed}: {err}" for s, err in self.failed[:limit])
        more = f"; and {len(self.failed) - limit} more" if len(self.failed) > limit else ""
        return shown + more


# --------------------------------------------------------------------------- planning
def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


#: the most seeds one sweep may plan
MAX_SEEDS = 100_000


def parse_seeds(text: str | int | None) -> list[int] | None:
    """``"N"`` → seeds 0..N-1; ``"A:B"`` → seeds A..B-1 (at most :data:`MAX_SEEDS` seeds);
    ``None`` → the scale's default."""
    if text is None:
        return None
    raw = str(text).strip()
    try:
        if ":" in raw:
            a, b = raw.split(":", 1)
            lo, hi = int(a), int(b)
        else:
            lo, hi = 0, int(raw)
    except ValueError:
        raise param_error("seeds", "privrl run", "N or A:B with integers", text) from None
    if lo < 0 or hi <= lo:
        raise param_error("seeds", "privrl run", "N >= 1 or A:B with 0 <= A < B", text)
    if hi - lo > MAX_SEEDS:
        raise param_error("seeds", "privrl run", f"N or A:B giving at most {MAX_SEEDS} seeds", text)
    return list(range(lo, hi))


def plan_runs(experiment_id: str, scale: str, seeds: Sequence[int] | None = None,
              overrides: Mapping[str, Any] | None = None) -> list[RunSpec]:
    """Every (setting, seed) of an experiment at ``scale``; ``overrides`` (checked by
    :func:`check_overrides`) update every setting. ``seeds`` (default: 0 .. ``n_seeds(scale)`` - 1)
    are run by every setting but one declared with fewer seeds (:meth:`Experiment.seeds_for`),
    which runs those below its count."""
    check_option(scale, "scale", SCALES, owner="plan_runs")
    exp = get_experiment(experiment_id)
    overrides = check_overrides(exp.id, overrides)
    settings = exp.settings_for(scale)
    full = exp.n_seeds(scale)
    caps = [n if n < full else math.inf for n in (exp.seeds_for(p, scale) for p in settings)]
    seed_list = list(range(full)) if seeds is None else [int(s) for s in seeds]
    return [RunSpec(exp.id, i, s, {**params, **overrides}, scale)
            for s in seed_list for i, params in enumerate(settings) if s < caps[i]]


def run_seed(experiment_id: str, setting_index: int, seed: int) -> int:
    """The seed of ``ctx.rng`` for a run."""
    return derive_seed(experiment_id, setting_index, seed)


def _epsilon_spent(result: RunResult) -> tuple[float | None, float | None]:
    """(ε spent, δ used) from the run's ledger, at :func:`~privrl.privacy.budget.reporting_delta`
    of its budget; ``(None, None)`` for non-private runs."""
    ledger, budget = result.ledger, result.budget
    if ledger is None or (budget is not None and not budget.is_private) or ledger.is_non_private:
        return None, None
    delta = reporting_delta(budget)
    return float(ledger.epsilon(delta, accountant=result.accountant)), delta


# --------------------------------------------------------------------------- one run
def _context(spec: RunSpec, manifest: Mapping[str, Any]) -> RunContext:
    return RunContext(experiment_id=spec.experiment, setting_index=spec.setting, seed=spec.seed,
                      scale=spec.scale, rng=np.random.default_rng(manifest["run_seed"]))


def _start_manifest(spec: RunSpec) -> dict[str, Any]:
    return {
        "experiment": spec.experiment, "setting": spec.setting, "seed": spec.seed,
        "scale": spec.scale, "run_key": spec.key, "params": to_jsonable(spec.params),
        "run_seed": run_seed(spec.experiment, spec.setting, spec.seed),
        "budget": None, "privacy_unit": None, "neighboring": None, "epsilon_spent": None,
        "delta": None, "accountant": None, "calibration": str(spec.params.get("calibration", "sound")),
        "started_at": _now(),
    }


def _now() -> str:
    """The current UTC time, ISO 8601 to the millisecond (run start and finish stamps)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _record(spec: RunSpec, manifest: dict[str, Any], result: object) -> list[dict[str, Any]]:
    """Check one run's result and fill its manifest; returns its rows (raises on a bad result)."""
    if not isinstance(result, RunResult):
        raise TypeError(f"{spec.experiment}.run returned {type(result).__name__}, not RunResult")
    rows = [dict(r) for r in result.rows]
    for i, row in enumerate(rows):
        if "metric" not in row or "value" not in row:
            raise ValueError(f"row {i} of {spec.experiment} lacks 'metric'/'value': {row!r}")
    eps, delta = _epsilon_spent(result)
    check_option(result.calibration, "calibration", (*CALIBRATIONS, "none"), owner=spec.experiment)
    manifest.update({
        "budget": to_jsonable(result.budget), "privacy_unit": to_jsonable(result.privacy_unit),
        "neighboring": to_jsonable(result.neighboring), "epsilon_spent": eps, "delta": delta,
        "accountant": result.accountant, "calibration": result.calibration,
        "rho_spent": _rho_spent(result),
        "n_events": None if result.ledger is None else len(result.ledger),
        "extra": to_jsonable(result.extra),
    })
    return rows


def execute_run(spec: RunSpec, commit: str | None = None) -> RunOutcome:
    """Run one (setting, seed) and build its manifest; never raises for a failing run function.

    The manifest records the run's wall time, its CPU time (``cpu_time_s``: this process's CPU
    seconds over the run, all threads) and when it started and finished (``started_at``,
    ``finished_at``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    manifest = _start_manifest(spec)
    try:
        exp = get_experiment(spec.experiment)
        rows = _record(spec, manifest, exp.run(dict(spec.params), _context(spec, manifest)))
        status, error = "ok", None
    except Exception:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        rows, status, error = None, "failed", traceback.format_exc()
    manifest.update({"versions": versions(), "git_commit": commit,
                     "wall_time_s": round(time.perf_counter() - t0, 6),
                     "cpu_time_s": round(time.process_time() - c0, 6), "finished_at": _now(), "status": status})
    if error is not None:
        manifest["error"] = error
    return RunOutcome(spec, status, rows, manifest)


def execute_runs(specs: Sequence[RunSpec], commit: str | None = None) -> list[RunOutcome]:
    """Run a group of runs of one experiment: through its ``run_batch`` when it has one (each
    manifest's ``wall_time_s`` and ``cpu_time_s`` are then the batch's divided by its runs,
    ``batch_size`` says how many shared it, ``batch_wall_time_s`` is the batch's whole wall time and
    ``started_at``/``finished_at`` are the batch's), else one by one. If the batch fails, its runs are
    retried one by one, so every failure is recorded against its own run."""
    specs = list(specs)
    exp = get_experiment(specs[0].experiment) if specs else None
    if len(specs) < 2 or exp is None or exp.run_batch is None:
        return [execute_run(spec, commit) for spec in specs]
    t0, c0 = time.perf_counter(), time.process_time()
    manifests = [_start_manifest(spec) for spec in specs]
    try:
        results = list(exp.run_batch([dict(s.params) for s in specs],
                                     [_context(s, m) for s, m in zip(specs, manifests)]))
        if len(results) != len(specs):
            raise ValueError(f"{exp.id}.run_batch returned {len(results)} results for {len(specs)} runs")
        rows = [_record(s, m, r) for s, m, r in zip(specs, manifests, results)]
    except Exception:  # noqa: BLE001 - isolate the failure: run them one at a time
        return [execute_run(spec, commit) for spec in specs]
    batch_wall, batch_cpu = time.perf_counter() - t0, time.process_time() - c0
    finished = _now()
    out = []
    for spec, manifest, r in zip(specs, manifests, rows):
        manifest.update({"versions": versions(), "git_commit": commit,
                         "wall_time_s": round(batch_wall / len(specs), 6),
                         "cpu_time_s": round(batch_cpu / len(specs), 6), "finished_at": finished,
                         "batch_size": len(specs), "batch_wall_time_s": round(batch_wall, 6), "status": "ok"})
        out.append(RunOutcome(spec, "ok", r, manifest))
    return out


def group_runs(specs: Sequence[RunSpec]) -> list[list[RunSpec]]:
    """Runs grouped for :func:`execute_runs`: runs of an experiment with a ``run_batch`` whose
    ``batch_key`` agree (and of the same scale) form one group, in order of first appearance;
    every other run is a group of its own."""
    groups: dict[tuple[object, ...], list[RunSpec]] = {}
    for i, spec in enumerate(specs):
        exp = get_experiment(spec.experiment)
        if exp.run_batch is not None and exp.batch_key is not None:
            key: tuple[object, ...] = ("batch", spec.experiment, spec.scale, exp.batch_key(spec.params, spec.seed))
        else:
            key = ("single", i)
        groups.setdefault(key, []).append(spec)
    return list(groups.values())


def _rho_spent(result: RunResult) -> float | None:
    if result.ledger is None or result.budget is None or not result.budget.is_zcdp:
        return None
    try:
        return float(result.ledger.zcdp_rho())
    except Exception:  # noqa: BLE001 - not every ledger is zCDP
        return None


def _error_line(manifest: Mapping[str, Any]) -> str:
    lines = [ln for ln in str(manifest.get("error", "")).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "unknown error"


def write_outcome(out_dir: str | os.PathLike, outcome: RunOutcome) -> Path:
    """Write a run's files atomically: metrics first, then the manifest (the commit point), which
    records the row count and SHA-256 of ``metrics.csv``.

    The files are not fsynced (two fsyncs per run cost tens of milliseconds of the driver's time on
    a busy disk, for sweeps of thousands of small runs): a run lost or torn by an operating-system
    crash fails :func:`~privrl.experiments.results.is_finished` (no valid manifest, or metrics
    that do not match its checksum) and is recomputed by the next sweep, like a killed one."""
    spec = outcome.spec
    directory = run_dir(out_dir, spec.experiment, spec.key, spec.seed)
    directory.mkdir(parents=True, exist_ok=True)
    manifest = dict(outcome.manifest)
    if outcome.status == "ok":
        data = metrics_csv(outcome.rows or [])
        atomic_write_bytes(directory / METRICS, data, durable=False)
        manifest.update(n_rows=len(outcome.rows or []), metrics_sha256=sha256_bytes(data))
    else:
        try:
            (directory / METRICS).unlink()  # a stale metrics file of an earlier run
        except FileNotFoundError:
            pass
    atomic_write_json(directory / MANIFEST, manifest, durable=False)
    return directory


# --------------------------------------------------------------------------- backends
def _run_unit(unit: WarmUp | list[RunSpec], commit: str | None) -> list[RunOutcome]:
    """A unit of work of the local pool: a compile warm-up (no outcome) or a group of runs."""
    if isinstance(unit, WarmUp):
        warm_up(unit)
        return []
    return execute_runs(unit, commit)


def _iter_local(specs: Sequence[RunSpec], jobs: int, commit: str | None) -> Iterator[RunOutcome]:
    groups = group_runs(specs)
    if jobs == 1:
        for group in groups:
            yield from execute_runs(group, commit)
        return
    units, queue = schedule(groups, compile_key, warm_ups)
    ctx = multiprocessing.get_context("spawn")  # fork is unsafe with torch/Ray threads
    workers = min(jobs, len(units))
    # one unit of work per core: the workers (spawned as the pool needs them) load a one-thread BLAS
    with one_blas_thread_in_workers():
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                      initializer=_worker_init, initargs=(os.getpid(),))
        try:
            running: dict[cf.Future[list[RunOutcome]], int] = {}
            while len(queue) or running:
                # a group starts when the queue lets it (scheduling: one compile per kernel); one waits
                # beyond the busy workers, so that a worker finishing finds its next group at once
                while len(running) <= workers and (i := queue.take()) is not None:
                    running[pool.submit(_run_unit, units[i], commit)] = i
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    queue.finished(i)
                    try:
                        outcomes = future.result()
                    except Exception as exc:  # noqa: BLE001 - a worker died (e.g. out of memory)
                        unit = units[i]
                        outcomes = [] if isinstance(unit, WarmUp) else [_crashed(s, commit, exc) for s in unit]
                    yield from outcomes
        finally:
            # on Ctrl-C (or any early exit) drop the queued runs instead of waiting for them
            pool.shutdown(wait=True, cancel_futures=True)


#: seconds between two checks of the watchdog thread of a pool worker
_WATCHDOG_PERIOD = 0.5


def _worker_init(parent_pid: int) -> None:
    """Pool worker initializer: exit when the driver ``parent_pid`` dies (even by SIGKILL).

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` — the kernel kills the worker with its parent.
    Everywhere: a daemon thread polls ``os.getppid()`` and exits when the worker was re-parented.
    An orphaned worker never writes (the driver writes every result), so nothing is lost."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="privrl-parent-watchdog",
                     daemon=True).start()


def _watch_parent(parent_pid: int) -> None:  # pragma: no cover - runs in pool workers
    while True:
        time.sleep(_WATCHDOG_PERIOD)
        if os.getppid() != parent_pid:
            os._exit(1)


def _crashed(spec: RunSpec, commit: str | None, exc: BaseException) -> RunOutcome:
    manifest = {"experiment": spec.experiment, "setting": spec.setting, "seed": spec.seed,
                "scale": spec.scale, "run_key": spec.key, "params": to_jsonable(spec.params), "budget": None,
                "privacy_unit": None, "neighboring": None, "epsilon_spent": None, "accountant": None,
                "calibration": str(spec.params.get("calibration", "sound")), "versions": versions(),
                "git_commit": commit, "wall_time_s": None, "status": "failed",
                "error": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}
    return RunOutcome(spec, "failed", None, manifest)


def _ray_address_error(address: str, why: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"The '--ray-address' option must name a reachable Ray cluster (host:port, ray://host:port "
        f"or auto). Got {address!r} instead ({why})."
    )


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``; None for other forms (``auto``)."""
    text = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 sent to the null device (C++ logging bypasses ``sys.stderr``)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _check_ray_address(address: str, timeout: float = 5.0) -> None:
    """Fail at once when ``host:port`` refuses TCP connections (before Ray retries for minutes)."""
    target = _host_port(address)
    if target is not None:
        try:
            with socket.create_connection(target, timeout=timeout):
                pass
        except OSError as exc:
            raise _ray_address_error(address, f"cannot connect: {exc.strerror or exc}") from None


def _connect_ray(ray: ModuleType, address: str, timeout: float) -> None:
    """``ray.init(address=...)`` that fails within ``timeout`` seconds with a one-line error naming
    ``--ray-address`` (Ray itself retries an unreachable cluster for minutes)."""
    _check_ray_address(address, min(5.0, timeout))
    outcome: dict[str, BaseException | None] = {}

    def connect() -> None:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="privrl-ray-connect", daemon=True)
    with _quiet_stderr():  # Ray's core logs a line to fd 2 for every failed attempt
        thread.start()
        thread.join(timeout)
    if thread.is_alive():
        raise _ray_address_error(address, f"no answer within {timeout:g} s")
    error = outcome.get("error")
    if error is not None:
        raise _ray_address_error(address, " ".join(str(error).split())[:200] or type(error).__name__)


def _iter_ray(specs: Sequence[RunSpec], jobs: int, commit: str | None, address: str | None) -> Iterator[RunOutcome]:
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is an extra
        raise InvalidParameterError("The ray backend needs the 'ray' extra: pip install 'privrl[ray]'.") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            _connect_ray(ray, address, RAY_CONNECT_TIMEOUT)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(execute_runs)
        pending = {remote.remote(group, commit): group  # type: ignore[call-arg]
                   for group in largest_first(group_runs(specs))}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                group = pending.pop(ref)
                try:
                    yield from ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker died
                    yield from (_crashed(spec, commit, exc) for spec in group)
    finally:
        if started_here:
            ray.shutdown()


# --------------------------------------------------------------------------- sweep
def run_sweep(specs: Iterable[RunSpec], out_dir: str | os.PathLike, *, jobs: int | None = None,
              backend: str = "local", ray_address: str | None = None, quiet: bool = False,
              on_outcome: Callable[[RunOutcome], None] | None = None) -> SweepSummary:
    """Run every unfinished spec, writing results under ``out_dir``; returns a summary.

    Finished runs (manifest ok, metrics present, same params) are skipped; failed runs are
    recorded and re-run next time. The progress bar (tqdm, with ETA) is shown unless ``quiet``
    or stdout is not a terminal.
    """
    check_option(backend, "backend", BACKENDS, owner="run_sweep")
    jobs = default_jobs() if jobs is None else check_scalar(jobs, "jobs", owner="run_sweep", kind=int, low=1)
    specs = list(specs)
    summary = SweepSummary(planned=len(specs))
    if not specs:
        return summary
    if backend == "ray" and ray_address:
        _check_ray_address(ray_address)  # before anything is created
    with sweep_lock(out_dir):
        for spec in specs:
            _adopt_legacy(out_dir, spec)
        todo = [s for s in specs
                if not is_finished(run_dir(out_dir, s.experiment, s.key, s.seed), to_jsonable(s.params))]
        summary.skipped = len(specs) - len(todo)
        if not todo:
            return summary
        commit = git_commit()
        outcomes = (_iter_ray(todo, jobs, commit, ray_address) if backend == "ray"
                    else _iter_local(todo, jobs, commit))
        with progress(len(todo), "run", quiet) as bar:
            for outcome in outcomes:
                write_outcome(out_dir, outcome)
                if outcome.status == "ok":
                    summary.ok += 1
                else:
                    summary.failed.append((outcome.spec, _error_line(outcome.manifest)))
                if on_outcome is not None:
                    on_outcome(outcome)
                bar.set_postfix(failed=len(summary.failed), refresh=False)
                bar.update(1)
    return summary


def _adopt_legacy(out_dir: str | os.PathLike, spec: RunSpec) -> None:
    """Move a run of the former layout (``OUT/<id>/<index>/seed=<s>``, before run keys) with this
    spec's scale and params to its run-key directory, so that it is not listed twice; its manifest
    has no checksum, so the run is recomputed there."""
    legacy = Path(out_dir) / spec.experiment / str(spec.setting) / f"seed={spec.seed}"
    target = run_dir(out_dir, spec.experiment, spec.key, spec.seed)
    if not (legacy / MANIFEST).is_file() or target.exists():
        return
    try:
        manifest = json.loads((legacy / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    if (isinstance(manifest, dict) and manifest.get("scale") == spec.scale
            and manifest.get("params") == to_jsonable(spec.params)):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(legacy, target)
        with contextlib.suppress(OSError):
            legacy.parent.rmdir()  # only when empty
