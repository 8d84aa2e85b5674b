"""The online loop of the tabular learners, for one run or many in lockstep (:func:`fit_many`).

Each run opens its fit's releaser (``est._privacy``: one ledger per run), records its privatizer's
event with the declaration of what it will draw (:meth:`.CountNoise.declaration`), then the episodes
go by in chunks of :func:`chunk_size` episodes: per chunk, every run draws its counter noise — one
``D``-row per insert, from its releaser's noise source, so exactly ``(K − 1)·D`` numbers over the
run — and its episode uniforms (its data stream), and one kernel call
(:func:`._kernels.run_chunk`) plays the chunk for all runs. Only the noise and the uniforms differ
between runs, so a lockstep batch is the same computation as the runs one by one (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._rng import RngLike, child_rngs
from privrl._validation import param_error
from privrl.envs.tabular import TabularMDP
from privrl.errors import InvalidDataError
from privrl.privacy.accounting import Ledger
from privrl.tabular_online import _kernels as kern
from privrl.tabular_online.calibration import CountNoise

__all__ = ["CHUNK", "CHUNK_NUMBERS", "chunk_size", "fit_many", "resolve_model", "optimal_value"]

#: episodes per kernel call at most (noise and uniforms of one chunk are drawn at once)
CHUNK = 512
#: noise numbers per chunk for all runs together at most (4 MB): a larger draw is a fresh mapping of
#: memory each chunk, whose page faults cost more than the draws (20 per-step RiverSwim runs: 138 MB)
CHUNK_NUMBERS = 2**19


def chunk_size(n_runs: int, dim: int) -> int:
    """Episodes per kernel call: :data:`CHUNK`, fewer when ``n_runs·dim`` noise numbers per episode
    would pass :data:`CHUNK_NUMBERS` (at least 16). Every stream is read in order, so the chunk size
    changes no draw: results do not depend on it (tested)."""
    return max(16, min(CHUNK, CHUNK_NUMBERS // max(1, n_runs * dim)))

_COUNTERS = {"none": kern.NONE, "tree": kern.TREE, "blt": kern.BLT, "local": kern.LOCAL}


def resolve_model(model: object, owner: str) -> TabularMDP:
    """``model`` as an episodic :class:`TabularMDP` with known deterministic rewards in [0, 1]
    (spec §1); anything else is refused."""
    if not isinstance(model, TabularMDP) or not model.is_episodic:
        raise param_error("model", f"{owner}.fit", "an episodic privrl TabularMDP (e.g. privrl.envs.river_swim())",
                          type(model).__name__)
    r = np.asarray(model.r, dtype=float)
    if np.any(r < 0) or np.any(r > 1):
        raise InvalidDataError(f"{owner}: the model's rewards must lie in [0, 1] (the values are clipped to "
                               "[0, H]); rescale them.")
    return model


def optimal_value(model: TabularMDP) -> float:
    """``V*_1`` under the model's initial distribution."""
    return float(np.asarray(model.initial, dtype=float) @ model.optimal_values()[0])


class _Run:
    """One run's state: its releaser, noise plan, counters and streams."""

    def __init__(self, est: Any, model: TabularMDP, rng: RngLike) -> None:
        est._checked()                       # parameters first: a bad one is named before the rng is read
        if hasattr(est, "_fit_rng"):
            rng = est._fit_rng(rng)
        secure = bool(est.get_params().get("secure", False))
        self.streams = child_rngs(rng, "data", "privacy")
        self.est = est
        self.settings = est._settings(model)
        plan: CountNoise = self.settings["noise"]
        self.plan = plan
        if hasattr(est, "_privacy"):
            self.rel = est._privacy(None if secure else self.streams["privacy"], n_units=plan.n_episodes)
            if plan.is_private:
                self.rel.record(plan.event(), noise=plan.declaration())
        else:
            est.privacy_ledger_ = Ledger()      # non-private: an empty ledger, no releaser
            self.rel = None
        self.D = plan.dim
        self.levels = max(1, plan.n_items.bit_length())
        self.blt = plan.blt


def _params(runs: list[_Run], key: str) -> np.ndarray:
    return np.array([float(run.settings[key]) for run in runs])


def fit_many(estimators: list[Any], model: Any, rngs: list[RngLike]) -> list[Any]:
    """Fit every estimator (one class, one ``n_episodes``, one privatizer kind) on ``model``, in
    lockstep; returns them fitted (module doc)."""
    if not estimators:
        return []
    owner = type(estimators[0]).__name__
    if len(rngs) != len(estimators):
        raise param_error("rngs", "fit_many", f"one rng per estimator ({len(estimators)})", len(rngs))
    model = resolve_model(model, owner)
    runs = [_Run(est, model, rng) for est, rng in zip(estimators, rngs)]
    first = runs[0]
    for run in runs[1:]:
        same = (type(run.est) is type(first.est) and run.plan.n_episodes == first.plan.n_episodes
                and run.plan.counter == first.plan.counter and run.plan.dim == first.plan.dim)
        if not same:
            raise param_error("estimators", "fit_many", "one class, n_episodes, counter and count pooling for "
                              "every run",
                              [type(r.est).__name__ for r in runs])
    K, H = first.plan.n_episodes, model.horizon
    S, A = model.n_states, model.n_actions
    R, D = len(runs), first.D
    P = np.ascontiguousarray(model.P, dtype=float)
    r = np.ascontiguousarray(model.r, dtype=float)
    init = np.ascontiguousarray(model.initial, dtype=float)
    v_star = optimal_value(model)
    counter = _COUNTERS[first.plan.counter]
    algo = first.est._algo
    blt = first.blt
    theta = np.array(blt.theta if blt is not None else [0.0])
    omega = np.array(blt.omega if blt is not None else [0.0])
    exact = np.zeros((R, D))
    total = np.zeros((R, D))
    nodes = np.zeros((R, first.levels if counter == kern.TREE else 1, D if counter == kern.TREE else 1))
    state = np.zeros((R, len(theta), D) if counter == kern.BLT else (R, 1, 1))
    logits = np.zeros((R, H, S, A))
    regret = np.zeros((R, K))
    gap = np.zeros((R, K))
    pac_gap = np.full(R, float(H))                  # Δ = H (Algorithm 1)
    pac_pi = np.full((R, H, S, A), 1.0 / A)
    E, c_sqrt, c_lin, c_gap, eta = (_params(runs, k) for k in ("error_bound", "c_sqrt", "c_lin", "c_gap", "eta"))
    step = chunk_size(R, D)
    for k0 in range(0, K, step):
        C = min(step, K - k0)
        n_ins = max(0, min(k0 + C, K - 1) - k0)
        U = np.stack([run.streams["data"].random((C, 2 * H + 1)) for run in runs])
        if counter != kern.NONE and n_ins:
            Z = np.stack([_draw(run, (n_ins, D)) for run in runs])
        else:
            Z = np.zeros((R, 1, 1))
        kern.run_chunk(algo, counter, P, r, init, v_star, k0, K, E, c_sqrt, c_lin, c_gap, eta, exact, total,
                       nodes, state, theta, omega, Z, U, logits, regret[:, k0:k0 + C], gap[:, k0:k0 + C],
                       pac_gap, pac_pi)
    for i, run in enumerate(runs):
        run.est._finish(regret[i], gap[i], pac_pi[i], model, run.plan, run.settings)
    return estimators


def _draw(run: _Run, shape: tuple[int, int]) -> np.ndarray:
    """One chunk of the run's counter noise, from its releaser's source (the declared kind and scale)."""
    assert run.rel is not None
    noise = run.rel.noise
    draw = noise.laplace if run.plan.kind == "laplace" else noise.gaussian
    return np.ascontiguousarray(draw(shape, run.plan.scale))
