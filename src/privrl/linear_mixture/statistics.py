"""The pieces the regularizers (:mod:`privrl.linear_mixture.regularizers`) and their batched
path (:mod:`privrl.linear_mixture.batched_statistics`) share: the statistics' type, the bounds
check on the users' contributions, the PD floor and the compiled kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.errors import InvalidDataError

__all__ = ["Stats", "check_contributions", "compile_statistics", "kernels", "empty_counters"]

Stats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _floor_eigenvalues(Lam: np.ndarray, floor: object) -> np.ndarray:
    """PD safeguard (spec §3.1): add ``(floor_h − λ_min)_+ I`` per step; bit-identical when
    ``λ_min ≥ floor`` everywhere."""
    floor = np.asarray(floor, dtype=float)
    if not np.any(floor > 0):
        return Lam
    lam_min = np.linalg.eigvalsh(Lam)[..., 0]
    if np.all(lam_min >= floor):
        return Lam
    add = np.maximum(floor - lam_min, 0.0)
    return Lam + add[..., None, None] * np.eye(Lam.shape[-1])


def check_contributions(x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray, *, x_bound: np.ndarray,
                        y_bound: np.ndarray, clip: np.ndarray, owner: str | list[str]) -> tuple[np.ndarray, ...]:
    """The bounds privacy relies on, for R users at once (leading axis R; ``x_bound``, ``y_bound``
    ``(R, H)``, ``clip`` ``(R,)``): ``‖x_p[h]‖ ≤ x_bound[h]``, ``y_p[h] ∈ [0, y_bound[h]]``,
    ``‖x_r‖ ≤ 1``, ``y_r ∈ [0, 1]`` (relative tolerance 1e-9; a zero bound needs an exact zero).
    A user out of bounds raises unless her ``clip`` is set; then her contributions are projected
    (spec §3.1) and the others are returned untouched. The message names the bounds, never the
    values."""
    tol = 1e-9
    n_p = np.sqrt((x_p * x_p).sum(axis=-1))
    n_r = np.sqrt((x_r * x_r).sum(axis=-1))
    if ((n_p <= x_bound * (1 + tol)).all() and n_r.max() <= 1 + tol and y_p.min() >= -tol
            and (y_p <= y_bound * (1 + tol)).all() and y_r.min() >= -tol and y_r.max() <= 1 + tol):
        return x_p, y_p, x_r, y_r                                        # (the usual case, in few operations)
    within = ((n_p <= x_bound * (1 + tol)) & (n_r <= 1 + tol) & (y_p >= -tol) & (y_p <= y_bound * (1 + tol))
              & (y_r >= -tol) & (y_r <= 1 + tol))
    bad = ~within.all(-1)
    if not np.all(clip[bad]):
        if not isinstance(owner, str):
            owner = owner[int(np.flatnonzero(bad & ~clip)[0])]
        raise InvalidDataError(f"{owner}: a contribution is outside the bounds the privacy guarantee relies on "
                               "(at step h: ||phi_V|| <= L_phi * (H - h - 1) / H and V in [0, H - h - 1] under "
                               "tight calibration, ||phi_V|| <= L_phi and V in [0, H] otherwise; ||phi|| <= 1, "
                               "r in [0, 1]); pass clip_inputs=True to project.")
    x_p, y_p, x_r, y_r = x_p.copy(), y_p.copy(), x_r.copy(), y_r.copy()
    xb = np.broadcast_to(x_bound, n_p.shape)[bad]
    x_p[bad] = x_p[bad] * np.minimum(1.0, xb / np.maximum(n_p[bad], 1e-300))[..., None]
    x_r[bad] = x_r[bad] * np.minimum(1.0, 1.0 / np.maximum(n_r[bad], 1e-300))[..., None]
    y_p[bad] = np.clip(y_p[bad], 0.0, np.broadcast_to(y_bound, y_p.shape)[bad])
    y_r[bad] = np.clip(y_r[bad], 0.0, 1.0)
    return x_p, y_p, x_r, y_r


def kernels() -> Any:
    """The compiled kernels (:mod:`privrl.linear_mixture._kernels`), imported on first use: numba
    loads when a linear-mixture fit runs, never at ``import privrl``."""
    from privrl.linear_mixture import _kernels

    return _kernels


def empty_counters(horizon: int) -> Any:
    """Counters of no run (the kernels' argument when the statistics are the regularizers' own)."""
    z, i = np.zeros, np.int64
    return kernels().Counters(
        ints=np.zeros(5, dtype=i), sizes=np.zeros(6, dtype=i), order=z(0, dtype=i), exact=z((horizon, 0, 0)),
        z=z((0, 0, 1)), scale=z((1, 0)), draw_at=z((0, 0), dtype=i), levels=z(1, dtype=i),
        stack=z((1, horizon, 0, 0)), theta=z((0, 0)), omega=z((0, 0)), blt_state=z((0, horizon, 0, 0)),
        blt_total=z((horizon, 0, 0)), local_total=z((horizon, 0, 0)), shift_p=z((horizon, 0, 0)),
        shift_r=z((horizon, 0, 0)), screen_p=z((horizon, 0)), screen_r=z((horizon, 0)), x_bound=z((0, horizon)),
        y_bound=z((0, horizon)), runs=z((horizon, 0, 0)), per_run=z((6, 0)), pairs=z((2, 0), dtype=i))


def compile_statistics() -> None:
    """Compile the batched statistics' kernels (``insert``, ``release``) for the argument types the
    engine gives them (float64 C arrays, :class:`Counters`), without running them: numba caches
    them, and the engine's ``advance``, which calls them, loads them instead of compiling them (a
    warm-up of ``privrl bench``'s pool: :mod:`privrl.experiments.scheduling`)."""
    k = kernels()
    if not k.JIT:
        return
    from numba import typeof  # here: numba loads with the kernels, never at `import privrl`

    z = np.zeros
    stats = (z((0, 1, 1, 1)), z((0, 1, 1)), z((0, 1, 1, 1)), z((0, 1, 1)))
    counters = empty_counters(1)
    k.insert.compile(tuple(map(typeof, (counters, z((0, 1, 1)), z((0, 1)), z((0, 1, 1)), z((0, 1)), *stats))))
    k.release.compile(tuple(map(typeof, (counters, *stats))))


def _item_pairs(d1: int, d2: int) -> np.ndarray:
    """The packed items' factors among a step's contributions ``(x_p, y_p, x_r, y_r)`` (as one row
    of ``d1 + d2 + 2``): ``x_p x_pᵀ`` (row-major), ``x_p y_p``, ``x_r x_rᵀ``, ``x_r y_r``."""
    xp, yp, xr, yr = np.arange(d1), d1, d1 + 1 + np.arange(d2), d1 + d2 + 1
    first = [np.repeat(xp, d1), xp, np.repeat(xr, d2), xr]
    second = [np.tile(xp, d1), np.full(d1, yp), np.tile(xr, d2), np.full(d2, yr)]
    return np.array([np.concatenate(first), np.concatenate(second)], dtype=np.int64)
