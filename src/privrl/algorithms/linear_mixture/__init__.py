"""Re-export shim: the Zhou (2022) family lives in :mod:`privrl.linear_mixture` (kept for
``privrl.fitters.linear_mixture`` until the fit command moves into the family package)."""

from privrl.linear_mixture import LinOptPO, LinOptVI

__all__ = ["LinOptVI", "LinOptPO"]
