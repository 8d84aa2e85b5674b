"""OpenDP-backed noise samplers for deployment (extra ``secure``).

The default path draws noise from a seeded NumPy generator: reproducible, but neither a CSPRNG
nor hardened against floating-point attacks (Mironov 2012). ``secure=True`` on a mechanism draws
from OpenDP's samplers instead, which use the operating system's CSPRNG and exact sampling; they
cannot be seeded, and passing a seed or a seeded generator together with ``secure=True`` is an
error.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from privrl.errors import InvalidParameterError

__all__ = ["secure_gaussian", "secure_laplace", "check_secure_rng"]


def check_secure_rng(rng: object, owner: str) -> None:
    """``secure=True`` refuses every way of seeding."""
    if rng is not None:
        raise InvalidParameterError(
            f"The 'rng' parameter of {owner} must be None when secure=True (OpenDP's samplers use "
            f"the OS CSPRNG and cannot be seeded). Got {type(rng).__name__} instead."
        )


def _opendp() -> ModuleType:
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise InvalidParameterError(
            "secure=True needs OpenDP: install privrl with the 'secure' extra (pip install privrl[secure])."
        ) from exc
    # Only "contrib" is needed for the float vector Gaussian/Laplace samplers; we deliberately do
    # not enable "floating-point"/"idealized-numerics", which would admit non-hardened constructors.
    dp.enable_features("contrib")
    return dp


def _sample(kind: str, value: np.ndarray, scale: float) -> np.ndarray:
    """``value`` plus i.i.d. noise of the given scale (Gaussian std σ, or Laplace b) per entry,
    from OpenDP's ``make_gaussian`` / ``make_laplace`` on a float vector domain."""
    dp = _opendp()
    flat = np.asarray(value, dtype=float).ravel()
    if flat.size == 0:
        return np.asarray(value, dtype=float).copy()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    if kind == "gaussian":
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=float(scale))
    else:
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=float(scale))
    return np.asarray(meas(flat.tolist()), dtype=float).reshape(np.shape(value))


def secure_gaussian(value: np.ndarray, std: float) -> np.ndarray:
    """``value`` plus N(0, std²) noise per entry from OpenDP."""
    return _sample("gaussian", value, std)


def secure_laplace(value: np.ndarray, scale: float) -> np.ndarray:
    """``value`` plus Laplace(scale) noise per entry from OpenDP."""
    return _sample("laplace", value, scale)
