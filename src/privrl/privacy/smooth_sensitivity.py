"""Old import path (now :mod:`privrl.policy_evaluation.smooth_sensitivity`), kept for
``privrl.fitters.policy_evaluation`` until it moves; ``CONSTANT_SETS`` is the old name of
``SMOOTHINGS``."""

from privrl.policy_evaluation.smooth_sensitivity import *  # noqa: F403
from privrl.policy_evaluation.smooth_sensitivity import SMOOTHINGS
from privrl.policy_evaluation.smooth_sensitivity import __all__ as _ALL

CONSTANT_SETS = SMOOTHINGS
__all__ = [*_ALL, "CONSTANT_SETS"]
