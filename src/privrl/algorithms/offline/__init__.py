"""Re-export shim: the offline family lives in :mod:`privrl.offline` (kept for ``privrl.fitters``)."""

from privrl.offline import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI

__all__ = ["APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI"]
