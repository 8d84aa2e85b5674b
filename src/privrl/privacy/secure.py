"""OpenDP-backed noise samplers for deployment (extra ``secure``).

The default path draws noise from a seeded NumPy generator: reproducible, but neither a CSPRNG
nor hardened against floating-point attacks (Mironov 2012). ``secure=True`` on a mechanism draws
from OpenDP's samplers instead, which use the operating system's CSPRNG and exact sampling; they
cannot be seeded, and passing a seed or a seeded generator together with ``secure=True`` is an
error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.errors import InvalidParameterError

__all__ = ["secure_gaussian", "secure_laplace", "check_secure_rng"]


def check_secure_rng(rng: Any, owner: str) -> None:
    """``secure=True`` refuses every way of seeding."""
    if rng is not None:
        raise InvalidParameterError(
            f"The 'rng' parameter of {owner} must be None when secure=True (OpenDP's samplers use "
            f"the OS CSPRNG and cannot be seeded). Got {type(rng).__name__} instead."
        )


def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise InvalidParameterError(
            "secure=True needs OpenDP: install privrl with the 'secure' extra (pip install privrl[secure])."
        ) from exc
    dp.enable_features("contrib", "floating-point")
    return dp


def _sample(kind: str, value: np.ndarray, scale: float) -> np.ndarray:
    dp = _opendp()
    flat = np.asarray(value, dtype=float).ravel()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float) if kind == "gaussian" \
        else dp.l1_distance(T=float)
    make = dp.m.make_gaussian if kind == "gaussian" else dp.m.make_laplace
    meas = make(*space, scale=float(scale))
    return np.asarray(meas(flat.tolist()), dtype=float).reshape(np.shape(value))


def secure_gaussian(value: np.ndarray, std: float) -> np.ndarray:
    """``value`` plus N(0, std²) noise per entry from OpenDP."""
    return _sample("gaussian", value, std)


def secure_laplace(value: np.ndarray, scale: float) -> np.ndarray:
    """``value`` plus Laplace(scale) noise per entry from OpenDP."""
    return _sample("laplace", value, scale)
