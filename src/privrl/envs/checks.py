"""privrl's checks of an environment's model (``privrl check-env``): the properties the algorithms
rely on — stochastic transitions, finite rewards inside the declared public bounds, a probability
vector of initial states — checked on the exact model behind an environment."""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.errors import InvalidDataError

__all__ = ["check_model"]


def check_model(model: Any) -> list[str]:
    """privrl's checks of an environment's model; returns the names of the checks that ran.

    A model's own ``check()``/``validate()`` runs when it has one; tabular models (``P``, ``r``)
    are checked for stochastic transitions, finite rewards inside ``reward_bounds`` and a
    probability vector ``initial``; linear models are checked through ``to_tabular()``. A failed
    check is an :class:`~privrl.errors.InvalidDataError` naming it.
    """
    ran = []
    for name in ("check", "validate"):
        method = getattr(model, name, None)
        if callable(method):
            method()
            ran.append(f"model.{name}()")
    target = model
    if not hasattr(model, "P") and callable(getattr(model, "to_tabular", None)):
        target = model.to_tabular()
        ran.append("to_tabular()")
    if hasattr(target, "P") and hasattr(target, "r"):
        P, r = np.asarray(target.P, dtype=float), np.asarray(target.r, dtype=float)
        if np.any(P < -1e-12) or not np.allclose(P.sum(axis=-1), 1.0, atol=1e-8):
            raise InvalidDataError("Model check failed: the transition kernel P is not stochastic "
                                   "(rows must be non-negative and sum to 1).")
        ran.append("P stochastic")
        if not np.all(np.isfinite(r)):
            raise InvalidDataError("Model check failed: the reward r has non-finite entries.")
        bounds = getattr(target, "reward_bounds", None)
        if bounds is not None:
            lo, hi = bounds
            if np.any(r < lo - 1e-12) or np.any(r > hi + 1e-12):
                raise InvalidDataError(f"Model check failed: rewards outside reward_bounds {tuple(bounds)} "
                                       f"(min {r.min():g}, max {r.max():g}).")
            ran.append("rewards within reward_bounds")
        initial = getattr(target, "initial", None)
        if initial is not None:
            init = np.asarray(initial, dtype=float)
            if np.any(init < -1e-12) or not np.isclose(init.sum(), 1.0, atol=1e-8):
                raise InvalidDataError("Model check failed: the initial distribution is not a probability vector.")
            ran.append("initial distribution")
    return ran
