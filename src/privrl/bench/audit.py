"""The benchmark's privacy audit: ε_lower for every private entry on every task, next to its claim.

**Sampled audits** (every entry that can be refitted cheaply): the task declares two neighbouring
inputs of a small instance of itself (:attr:`~privrl.bench.spec.Task.audit_pair`: one trajectory
replaced through the rarest states with the largest reward the bounds allow, or the reward function
shifted by ½ in sup-norm); the entry is fitted ``trials`` times on each, each fit drawing fresh
privacy noise, and :func:`privrl.audit.audit_samples` turns the two samples of its released
numbers (:attr:`~privrl.bench.spec.Output.release`: θ̂, Q̂, the released Q-function on a grid...)
into a Clopper–Pearson lower bound ε_lower at the task's δ. The claimed ε is the entry's own
ledger's, at the task's δ. Two kinds:

* **release point** — an entry that declares its release (``Entry.takes_noise``: privrl's
  estimators, a :class:`~privrl.base.PrivateEstimator` plugin, a plain plugin whose fit takes a
  ``noise`` source, :mod:`privrl.bench.plugins`) is given its noise source: its non-private
  randomness (environment, exploration) is fixed across trials, as the analyses treat it as
  public, and the test statistic is the projection on the noise-free difference of the two
  releases (the entry fitted once on each input with its noise scaled by 0), chosen before any
  audited sample is drawn;
* **black-box** — an entry that declares nothing is refitted with a fresh ``rng`` per trial and
  the statistic is fitted on the selection half, which a release of many numbers overfits.

Either way ``trials`` fits per input bound what the audit can show: with no error at all on the
evaluation half, ε_lower is at most :func:`max_epsilon_lower` (3.1 at 200 fits per input), so an
under-noised entry is flagged only if its real ε exceeds its claim by enough to show within that
reach. Every sampled audit row states it (``epsilon_lower_max``).

**Release audits** (online learners, which cannot be refitted thousands of times): the entry's
declared target of :mod:`privrl.audit` (``linopt-central``, ``linopt-local``...) at the same
budget, in its fast mode — the privatizer's releases on worst-case neighbouring users. The target
does not depend on the task beyond δ, so one audit per (target, ε, δ), seeded from that identity,
serves every entry and task that declare it (:func:`release_audit`; the runner batches those cells
together).

Every audit is one fixed number of fits per input, decided before it runs (the task's
``audit_trials``; the Clopper–Pearson bound is not valid if the count depended on the outcome), at
the budget :data:`~privrl.bench.spec.AUDIT_BUDGET`: the mechanism's code is the same at every
budget, so one audit per (task, entry) checks it.

An uncertified reference (:meth:`~privrl.bench.spec.Entry.uncertified`) is not audited: it claims
no ε for the task's unit, so there is no claim to hold it to.

An entry whose ε_lower exceeds its claimed ε is flagged (``VIOLATION``): with probability ≥ 95 %
the code spends more than it claims. A consistent audit is not a proof of privacy.

:func:`broken` makes the negative control of any entry: the same entry drawing its noise through
:class:`~privrl.privacy.ScaledNoise` (noise ÷ 10) while its ledger claims the original noise.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from privrl._rng import derive_seed
from privrl.audit import audit_mechanism, run_target
from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.core import AuditResult, clopper_pearson, epsilon_lower_bound
from privrl.bench.plugins import resolve_entry
from privrl.bench.spec import Budget, Entry, Fitted, Output, TaskInput
from privrl.bench.tasks import get_task
from privrl.experiments.spec import RunContext, RunResult
from privrl.privacy.noise import NumpyNoise, ScaledNoise

__all__ = ["audit_cell", "audit_entry", "broken", "max_epsilon_lower", "release_audit", "release_vector",
           "RELEASE_POINT", "BLACK_BOX"]

#: the method of a sampled audit of an entry given its noise source (noise-free release point)
RELEASE_POINT = "release point"
#: the method of a sampled audit of an entry that declares nothing (fresh rng per trial)
BLACK_BOX = "black-box"


def release_vector(out: Output) -> np.ndarray:
    """The released numbers of an output, flattened (``release`` when the entry gives it)."""
    if out.release is not None:
        return np.asarray(out.release, dtype=float).ravel()
    parts = [np.asarray(x, dtype=float).ravel() for x in (out.values, out.value, out.policy, out.regret, out.policies)
             if x is not None]
    if not parts:
        raise ValueError("the entry's output has no released numbers to audit")
    return np.concatenate(parts)


def _fit(entry: Entry, task_input: TaskInput, budget: object, rng: np.random.Generator, noise: object) -> Fitted:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # small audit instances trip the utility and δ warnings
        return entry.fit(task_input, budget, rng, noise)


def max_epsilon_lower(trials: int, delta: float, confidence: float = 0.95) -> float:
    """The largest ε_lower a sampled audit of ``trials`` fits per input can report at ``delta``: the
    Clopper–Pearson bound of a test without a single error on the evaluation half (``trials − trials
    // 2`` fits per input; each rate at level ``1 − α/2``, as :func:`privrl.audit.audit_samples`)."""
    n = int(trials) - int(trials) // 2
    alpha = 1.0 - confidence
    _, upper = clopper_pearson(0, n, alpha / 2)
    return float(epsilon_lower_bound(upper, upper, delta))


def audit_entry(entry: Entry, pair: tuple[TaskInput, TaskInput], grid: Budget, *, trials: int,
                rng: np.random.Generator) -> AuditResult:
    """The sampled audit of ``entry`` on two neighbouring inputs at ``grid`` (module docstring): an
    :class:`~privrl.audit.AuditResult` whose ``note`` is its method, :data:`RELEASE_POINT` or
    :data:`BLACK_BOX`."""
    first, second = pair
    delta = first.delta
    budget = grid.privacy_budget(delta)
    fit_seed = int(rng.integers(2**63))     # the non-private randomness, the same in every trial
    claims = []
    for inp in pair:
        ledger = _fit(entry, inp, budget, np.random.default_rng(fit_seed), None).ledger
        claims.append(math.inf if ledger is None else float(ledger.epsilon(delta)))

    # the noise-free difference replaces the projection on the selection half's mean difference (the
    # same test with the exact direction): fitted on a few hundred fits of a release of thousands of
    # numbers (a count table), that projection separates the selection half perfectly, wins the choice of
    # statistic and then fails on the evaluation half
    statistics: list[Any] = ["projection", "coordinate", "norm"]
    if entry.takes_noise:
        try:
            statistics[0] = _noise_free_difference(entry, pair, budget, fit_seed)
        except Exception:  # noqa: BLE001 - an entry that cannot fit without noise keeps the other statistics
            pass

    def sampler(inp: TaskInput):
        def draw(n: int, gen: np.random.Generator) -> np.ndarray:
            out = []
            for _ in range(n):
                if entry.takes_noise:
                    fitted = _fit(entry, inp, budget, np.random.default_rng(fit_seed), NumpyNoise(gen))
                else:
                    fitted = _fit(entry, inp, budget, np.random.default_rng(gen.integers(2**63)), None)
                out.append(release_vector(fitted.output))
            return np.stack(out)
        return draw

    method = BLACK_BOX if isinstance(statistics[0], str) else RELEASE_POINT
    return audit_mechanism(sampler(first), sampler(second), epsilon=max(claims), delta=delta, trials=int(trials),
                           rng=rng, algorithm=entry.name, statistics=tuple(statistics), note=method)


def _noise_free_difference(entry: Entry, pair: tuple[TaskInput, TaskInput], budget: object, fit_seed: int) -> object:
    """The statistic ``T(x) = (x − (r + r')/2) · (r − r')`` with ``r``, ``r'`` the entry's releases on
    the two inputs fitted without privacy noise (its source scaled by 0): the likelihood-ratio test
    of a release with isotropic noise, chosen before any audited sample is drawn (so the selection
    half has only its threshold to pick). Post-processing that hides the difference (a clipped
    Q-function) leaves it no better than the other statistics."""
    quiet = [release_vector(_fit(entry, inp, budget, np.random.default_rng(fit_seed),
                                 ScaledNoise(NumpyNoise(np.random.default_rng(0)), 0.0)).output) for inp in pair]
    w, c = quiet[0] - quiet[1], (quiet[0] + quiet[1]) / 2

    def noise_free_difference(sel_a: np.ndarray, sel_b: np.ndarray):
        return lambda x: (np.asarray(x, dtype=float) - c) @ w
    return noise_free_difference


@functools.lru_cache(maxsize=32)
def release_audit(target: str, epsilon: float, delta: float) -> AuditResult:
    """The audit of the registered release ``target`` at (``epsilon``, ``delta``), fast mode, seeded
    from its identity: the same result for every entry and task that declare it (cached per process)."""
    return run_target(target, epsilon=epsilon, delta=delta, fast=True,
                      rng=derive_seed("bench", "release-target", target, repr(float(epsilon)), repr(float(delta))))


def audit_cell(cell: Any, ctx: RunContext) -> RunResult:
    """The run function of an audit cell (:mod:`privrl.bench.running`)."""
    t0 = time.process_time()
    task = get_task(cell.task)
    entry = resolve_entry(cell.entry, cell.plugin)
    grid = Budget.parse(cell.budget)
    delta = task.delta_for(cell.profile)
    base = {"task": cell.task, "entry": cell.entry, "budget": cell.budget, "mode": "audit", "role": entry.role,
            "delta": delta, "metric": "epsilon_lower"}
    why = entry.refusal(task)
    if why is not None:
        return RunResult([{**base, "value": math.nan, "outcome": "refused", "reason": why}], calibration="none")
    if entry.uncertified(task) is not None:      # it claims no ε for the task's unit: nothing to hold it to
        return RunResult([{**base, "value": math.nan, "outcome": "not audited",
                           "reason": "an uncertified reference: it claims no ε for the task's privacy unit"}],
                         calibration="none")
    if entry.audit_target is not None:
        res = release_audit(entry.audit_target, grid.value, delta)
        method, trials = f"release target {entry.audit_target}", res.trials
    elif task.audit_pair is None:
        return RunResult([{**base, "value": math.nan, "outcome": "not audited",
                           "reason": "the task declares no neighbouring inputs"}], calibration="none")
    else:
        first, second = task.audit_pair(np.random.default_rng(derive_seed("bench", task.name, "audit")))
        first.delta = second.delta = delta
        trials = int(cell.trials or task.audit_trials)
        res = audit_entry(entry, (first, second), grid, trials=trials, rng=ctx.rng)
        method = res.note
    row = {**base, "value": float(res.epsilon_lower), "claimed": float(res.claimed_epsilon),
           "verdict": res.verdict, "outcome": "ok", "method": method, "trials": int(trials),
           "statistic": res.statistic, "epsilon_upper": float(res.ci[1]), "cpu_seconds": time.process_time() - t0}
    if entry.audit_target is None:
        row["epsilon_lower_max"] = max_epsilon_lower(trials, delta)
    return RunResult([row], calibration="none", extra={"verdict": res.verdict})


def broken(entry: Entry, factor: float = 1.0 / NOISE_DIVISOR) -> Entry:
    """``entry`` with its privacy noise multiplied by ``factor`` (÷ 10 by default) and its claim
    unchanged: the negative control the audit must flag. Named ``<name>[noise÷10]``; registered in
    the process that runs it (a plugin's copy is not re-imported by pool workers: run it with
    ``--jobs 1`` or call :func:`audit_entry`)."""
    if not entry.takes_noise:
        raise ValueError(f"entry {entry.name!r} draws its own noise: it has no broken control")

    def fit(task_input: TaskInput, budget: Any, rng: np.random.Generator, noise: Any = None) -> Fitted:
        source = noise if noise is not None else NumpyNoise(np.random.default_rng(rng.integers(2**63)))
        return entry.fit(task_input, budget, rng, ScaledNoise(source, factor))

    label = f"noise÷{1 / factor:g}"
    # plugin=None: a worker resolving the plugin's spec would load the honest class again
    return replace(entry, name=f"{entry.name}[{label}]", label=f"{entry.label} [{label}, broken]", fit=fit,
                   description=f"{entry.description} — BROKEN: noise × {factor:g}, same claim", plugin=None)
