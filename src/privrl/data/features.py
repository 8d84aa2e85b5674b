"""Feature maps for linear value-function approximation: Φ ∈ R^{n_states × d}, row s = φ_sᵀ.

* :func:`one_hot` — tabular features, Φ = I (d = n_states).
* :func:`state_aggregation` — groups of ``group_size`` adjacent states share one feature
  (Balle et al. 2016, §6: pairs of adjacent chain states); ‖Φ‖₂ = √group_size.
* :func:`feature_matrix` — a user-supplied matrix, validated, with its spectral norm checked
  against a declared bound (privacy calibrations that use ‖Φ‖ rely on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._validation import check_array, check_scalar, param_error
from privrl.errors import InvalidParameterError

__all__ = ["one_hot", "state_aggregation", "feature_matrix", "spectral_norm"]


def spectral_norm(matrix: object) -> float:
    """The operator 2-norm ‖Φ‖ (largest singular value), not the Frobenius norm."""
    return float(np.linalg.norm(np.asarray(matrix, dtype=np.float64), 2))


def one_hot(n_states: int) -> np.ndarray:
    """Tabular features Φ = I_{n_states}."""
    n_states = check_scalar(n_states, "n_states", owner="one_hot", kind=int, low=1)
    return np.eye(n_states)


def state_aggregation(n_states: int, group_size: int) -> np.ndarray:
    """Φ(s, j) = 1[⌊s / group_size⌋ = j]: ⌈n_states / group_size⌉ features (the last group may be
    smaller when group_size does not divide n_states)."""
    owner = "state_aggregation"
    n_states = check_scalar(n_states, "n_states", owner=owner, kind=int, low=1)
    group_size = check_scalar(group_size, "group_size", owner=owner, kind=int, low=1, high=n_states)
    groups = np.arange(n_states) // group_size
    phi = np.zeros((n_states, int(groups[-1]) + 1))
    phi[np.arange(n_states), groups] = 1.0
    return phi


def feature_matrix(matrix: Any, *, n_states: int | None = None, max_norm: float | None = None) -> np.ndarray:
    """Validate a user feature matrix: 2-D, finite, ``n_states`` rows if given, and spectral norm
    at most ``max_norm`` if given (raises rather than rescaling: a bound the privacy analysis uses
    must hold, not be silently enforced)."""
    owner = "feature_matrix"
    phi = check_array(matrix, "matrix", owner=owner, ndim=2)
    if phi.shape[0] == 0 or phi.shape[1] == 0:
        raise param_error("matrix", owner, "a non-empty (n_states, d) matrix", phi.shape)
    if n_states is not None:
        n_states = check_scalar(n_states, "n_states", owner=owner, kind=int, low=1)
        if phi.shape[0] != n_states:
            raise param_error("matrix", owner, f"a matrix with n_states = {n_states} rows", phi.shape)
    if max_norm is not None:
        max_norm = check_scalar(max_norm, "max_norm", owner=owner, low=0.0, closed="neither")
        norm = spectral_norm(phi)
        if norm > max_norm * (1 + 1e-12):
            raise InvalidParameterError(
                f"The 'matrix' parameter of {owner} must have spectral norm <= max_norm = "
                f"{max_norm!r}. Got {norm!r} instead."
            )
    return phi
