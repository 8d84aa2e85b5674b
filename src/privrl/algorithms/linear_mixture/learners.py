"""Re-export shim (see :mod:`privrl.algorithms.linear_mixture`)."""

from privrl.linear_mixture.learners import resolve_model

__all__ = ["resolve_model"]
