"""The sweep runner: local process pool or Ray, atomic results, resume, failure isolation (issue #3 §2).

A sweep is a list of :class:`RunSpec` — (experiment, setting index, seed, params). Each run is
executed by :func:`execute_run` (in a worker) which returns its metrics rows and manifest; the
*driver* writes them (metrics first, then the manifest, each atomically), so a killed worker or a
killed driver never leaves a half-written run and orphaned workers never write. On the next
invocation, finished runs (manifest ``status: ok`` with metrics, same params) are skipped.

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
import functools
import importlib.metadata
import logging
import multiprocessing
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from privrl._rng import derive_seed
from privrl._validation import check_option, check_scalar, param_error
from privrl.experiments.registry import get_experiment
from privrl.experiments.results import (
    MANIFEST,
    METRICS,
    atomic_write_json,
    is_finished,
    run_dir,
    to_jsonable,
    write_metrics,
)
from privrl.experiments.spec import SCALES, RunContext, RunResult

__all__ = ["BACKENDS", "RunSpec", "RunOutcome", "SweepSummary", "plan_runs", "parse_seeds",
           "run_seed", "execute_run", "run_sweep", "versions", "git_commit", "default_jobs"]

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep."""

    experiment: str
    setting: int
    seed: int
    params: dict[str, Any]
    scale: str


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


def parse_seeds(text: str | int | None) -> list[int] | None:
    """``"N"`` → seeds 0..N-1; ``"A:B"`` → seeds A..B-1; ``None`` → the scale's default."""
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
    return list(range(lo, hi))


def plan_runs(experiment_id: str, scale: str, seeds: Sequence[int] | None = None,
              overrides: Mapping[str, Any] | None = None) -> list[RunSpec]:
    """Every (setting, seed) of an experiment at ``scale``; ``overrides`` update every setting."""
    check_option(scale, "scale", SCALES, owner="plan_runs")
    exp = get_experiment(experiment_id)
    settings = exp.settings_for(scale)
    seed_list = list(range(exp.n_seeds(scale))) if seeds is None else [int(s) for s in seeds]
    return [RunSpec(exp.id, i, s, {**params, **(overrides or {})}, scale)
            for s in seed_list for i, params in enumerate(settings)]


def run_seed(experiment_id: str, setting_index: int, seed: int) -> int:
    """The seed of ``ctx.rng`` for a run."""
    return derive_seed(experiment_id, setting_index, seed)


# --------------------------------------------------------------------------- provenance
@functools.lru_cache(maxsize=1)
def _base_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for dist in ("privrl", "numpy", "dp-accounting", "gymnasium"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def versions() -> dict[str, str | None]:
    """Versions of privrl, Python, numpy, dp-accounting, gymnasium, and torch when imported."""
    out = dict(_base_versions())
    if "torch" in sys.modules:
        out["torch"] = getattr(sys.modules["torch"], "__version__", None)
    return out


def git_commit() -> str | None:
    """The commit of the privrl source tree, when it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = res.stdout.strip()
    return commit if res.returncode == 0 and len(commit) == 40 else None


def _epsilon_spent(result: RunResult) -> tuple[float | None, float | None]:
    """(ε spent, δ used) from the run's ledger; ``(None, None)`` for non-private runs."""
    ledger, budget = result.ledger, result.budget
    if ledger is None or (budget is not None and not budget.is_private) or ledger.is_non_private:
        return None, None
    delta = result.delta
    if delta is None and budget is not None and not budget.is_zcdp:
        delta = budget.delta
    if delta is None:
        delta = 1e-5
    eps = ledger.epsilon(delta if delta > 0 else 1e-300, accountant=result.accountant)
    return float(eps), float(delta)


# --------------------------------------------------------------------------- one run
def execute_run(spec: RunSpec, commit: str | None = None) -> RunOutcome:
    """Run one (setting, seed) and build its manifest; never raises for a failing run function."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    manifest: dict[str, Any] = {
        "experiment": spec.experiment, "setting": spec.setting, "seed": spec.seed,
        "scale": spec.scale, "params": to_jsonable(spec.params),
        "run_seed": run_seed(spec.experiment, spec.setting, spec.seed),
        "budget": None, "privacy_unit": None, "neighboring": None, "epsilon_spent": None,
        "delta": None, "accountant": None, "calibration": str(spec.params.get("calibration", "sound")),
        "started_at": started,
    }
    try:
        exp = get_experiment(spec.experiment)
        ctx = RunContext(experiment_id=spec.experiment, setting_index=spec.setting, seed=spec.seed,
                         scale=spec.scale, rng=np.random.default_rng(manifest["run_seed"]))
        result = exp.run(dict(spec.params), ctx)
        if not isinstance(result, RunResult):
            raise TypeError(f"{spec.experiment}.run returned {type(result).__name__}, not RunResult")
        rows = [dict(r) for r in result.rows]
        for i, row in enumerate(rows):
            if "metric" not in row or "value" not in row:
                raise ValueError(f"row {i} of {spec.experiment} lacks 'metric'/'value': {row!r}")
        eps, delta = _epsilon_spent(result)
        check_option(result.calibration, "calibration", ("tight", "sound", "paper"), owner=spec.experiment)
        manifest.update({
            "budget": to_jsonable(result.budget), "privacy_unit": to_jsonable(result.privacy_unit),
            "neighboring": to_jsonable(result.neighboring), "epsilon_spent": eps, "delta": delta,
            "accountant": result.accountant, "calibration": result.calibration,
            "rho_spent": _rho_spent(result),
            "n_events": None if result.ledger is None else len(result.ledger),
            "extra": to_jsonable(result.extra),
        })
        status, error = "ok", None
    except Exception:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        rows, status, error = None, "failed", traceback.format_exc()
    manifest.update({"versions": versions(), "git_commit": commit,
                     "wall_time_s": round(time.perf_counter() - t0, 6), "status": status})
    if error is not None:
        manifest["error"] = error
    return RunOutcome(spec, status, rows, manifest)


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
    """Write a run's files atomically: metrics first, then the manifest (the commit point)."""
    spec = outcome.spec
    directory = run_dir(out_dir, spec.experiment, spec.setting, spec.seed)
    directory.mkdir(parents=True, exist_ok=True)
    if outcome.status == "ok":
        write_metrics(directory / METRICS, outcome.rows or [])
    else:
        try:
            (directory / METRICS).unlink()  # a stale metrics file of an earlier run
        except FileNotFoundError:
            pass
    atomic_write_json(directory / MANIFEST, outcome.manifest)
    return directory


# --------------------------------------------------------------------------- backends
def _iter_local(specs: Sequence[RunSpec], jobs: int, commit: str | None):
    if jobs == 1:
        for spec in specs:
            yield execute_run(spec, commit)
        return
    ctx = multiprocessing.get_context("spawn")  # fork is unsafe with torch/Ray threads
    pool = cf.ProcessPoolExecutor(max_workers=min(jobs, len(specs)), mp_context=ctx)
    try:
        futures = {pool.submit(execute_run, spec, commit): spec for spec in specs}
        for future in cf.as_completed(futures):
            spec = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker died (e.g. out of memory)
                outcome = _crashed(spec, commit, exc)
            yield outcome
    finally:
        # on Ctrl-C (or any early exit) drop the queued runs instead of waiting for them
        pool.shutdown(wait=True, cancel_futures=True)


def _crashed(spec: RunSpec, commit: str | None, exc: BaseException) -> RunOutcome:
    manifest = {"experiment": spec.experiment, "setting": spec.setting, "seed": spec.seed,
                "scale": spec.scale, "params": to_jsonable(spec.params), "budget": None,
                "privacy_unit": None, "neighboring": None, "epsilon_spent": None, "accountant": None,
                "calibration": str(spec.params.get("calibration", "sound")), "versions": versions(),
                "git_commit": commit, "wall_time_s": None, "status": "failed",
                "error": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}
    return RunOutcome(spec, "failed", None, manifest)


def _iter_ray(specs: Sequence[RunSpec], jobs: int, commit: str | None, address: str | None):
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is an extra
        from privrl.errors import InvalidParameterError
        raise InvalidParameterError("The ray backend needs the 'ray' extra: pip install 'privrl[ray]'.") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(execute_run)
        pending = {remote.remote(spec, commit): spec for spec in specs}  # type: ignore[call-arg]
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                spec = pending.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker died
                    yield _crashed(spec, commit, exc)
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
    from tqdm import tqdm

    check_option(backend, "backend", BACKENDS, owner="run_sweep")
    jobs = default_jobs() if jobs is None else check_scalar(jobs, "jobs", owner="run_sweep", kind=int, low=1)
    specs = list(specs)
    summary = SweepSummary(planned=len(specs))
    todo = [s for s in specs
            if not is_finished(run_dir(out_dir, s.experiment, s.setting, s.seed), to_jsonable(s.params))]
    summary.skipped = len(specs) - len(todo)
    if not todo:
        return summary
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    commit = git_commit()
    outcomes = (_iter_ray(todo, jobs, commit, ray_address) if backend == "ray"
                else _iter_local(todo, jobs, commit))
    disable = quiet or not sys.stdout.isatty()
    with tqdm(total=len(todo), unit="run", disable=disable, dynamic_ncols=True) as bar:
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
