"""Helpers shared by the tabular and linear offline algorithms (Qiao & Wang 2023).

* :func:`padded_episodes` reads fixed-horizon data (a :class:`privrl.data.TrajectoryDataset`
  through ``as_padded()``, or a mapping of ``(K, H)`` arrays) and validates it;
* :func:`budget_to_rho` turns a :class:`~privrl.privacy.PrivacyBudget` into a zCDP ρ;
* :func:`greedy` is line 8 of Algorithm 1 / line 14 of Algorithm 2 (lowest-index tie-break).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl._validation import param_error
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.privacy.budget import PrivacyBudget
from privrl.privacy.calibration import approx_dp_to_zcdp

__all__ = ["padded_episodes", "budget_to_rho", "check_budget", "greedy"]

_KEYS = ("observations", "actions", "rewards", "next_observations")


def padded_episodes(data: Any, owner: str, *, n_states: int, n_actions: int,
                    horizon: int | None = None, reward_bounds: tuple[float, float] = (0.0, 1.0)
                    ) -> dict[str, np.ndarray]:
    """``(K, H)`` arrays ``observations, actions, rewards, next_observations`` of fixed-horizon data.

    Raises :class:`InvalidDataError` for an empty dataset, a horizon mismatch, states/actions
    outside ``[0, n_states) x [0, n_actions)`` or rewards outside ``reward_bounds`` (privacy of the
    linear algorithms relies on ``0 <= r <= 1``; rewards are never clipped silently).
    """
    if hasattr(data, "as_padded"):
        try:
            arrays = data.as_padded()
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            raise InvalidDataError(f"{owner} needs fixed-horizon data (as_padded() failed: {exc})") from None
    elif isinstance(data, Mapping):
        arrays = data
    else:
        raise param_error("dataset", owner, "a TrajectoryDataset or a mapping of (K, H) arrays",
                          type(data).__name__)
    missing = [k for k in _KEYS if k not in arrays]
    if missing:
        raise InvalidDataError(f"{owner}: the dataset lacks the arrays {missing}.")
    out: dict[str, np.ndarray] = {}
    for key in _KEYS:
        arr = np.asarray(arrays[key])
        if arr.ndim != 2:
            raise InvalidDataError(f"{owner}: '{key}' must be a (K, H) array of tabular indices/rewards. "
                                   f"Got shape {arr.shape} instead.")
        out[key] = arr
    K, H = out["actions"].shape
    if K == 0 or H == 0:
        raise InvalidDataError(f"{owner}: the dataset is empty (shape {(K, H)}).")
    for key in _KEYS:
        if out[key].shape != (K, H):
            raise InvalidDataError(f"{owner}: '{key}' has shape {out[key].shape}, expected {(K, H)}.")
    if horizon is not None and H != horizon:
        raise InvalidDataError(f"{owner}: the dataset has horizon {H} but the model has horizon {horizon}.")
    for key, n in (("observations", n_states), ("next_observations", n_states), ("actions", n_actions)):
        arr = out[key]
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                raise InvalidDataError(f"{owner}: '{key}' must hold integer indices.")
        elif arr.dtype.kind not in "iu":
            raise InvalidDataError(f"{owner}: '{key}' must hold integer indices. Got dtype {arr.dtype}.")
        arr = arr.astype(np.int64)
        if arr.min() < 0 or arr.max() >= n:
            raise InvalidDataError(f"{owner}: '{key}' must lie in [0, {n}). "
                                   f"Got values in [{arr.min()}, {arr.max()}] instead.")
        out[key] = arr
    rewards = out["rewards"].astype(float)
    lo, hi = reward_bounds
    if not np.all(np.isfinite(rewards)) or rewards.min() < lo or rewards.max() > hi:
        raise InvalidDataError(f"{owner}: rewards must lie in [{lo}, {hi}]. "
                               f"Got values in [{np.nanmin(rewards)}, {np.nanmax(rewards)}] instead.")
    out["rewards"] = rewards
    return out


def check_budget(budget: Any, owner: str) -> PrivacyBudget:
    if not isinstance(budget, PrivacyBudget):
        raise param_error("budget", owner, "a PrivacyBudget", budget)
    return budget


def budget_to_rho(budget: PrivacyBudget, owner: str) -> float:
    """ρ of a budget: ρ itself, or the largest ρ whose zCDP→DP conversion meets (ε, δ>0).

    A pure ε budget (δ = 0) cannot be met by Gaussian noise and is rejected.
    """
    if budget.rho is not None:
        return float(budget.rho)
    if math.isinf(budget.epsilon):  # type: ignore[arg-type]
        return math.inf
    if not budget.delta:
        raise InvalidParameterError(
            f"The 'budget' parameter of {owner} must be a rho budget or an (epsilon, delta) budget with "
            f"delta > 0 (Gaussian noise cannot give pure DP). Got {budget!r} instead.")
    return approx_dp_to_zcdp(budget.epsilon, budget.delta)  # type: ignore[arg-type]


def greedy(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy deterministic policy over the last axis (lowest index wins ties) and its value."""
    policy = np.argmax(q, axis=-1)
    return policy, np.take_along_axis(q, policy[..., None], axis=-1)[..., 0]
