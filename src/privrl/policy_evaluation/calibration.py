"""The old import path of DP-LSW / DP-LSL's certified (α, β) calibrations, kept for users: the module is
:mod:`privrl.least_squares.calibration`, a shared layer below the families (Wang & Hegde's Balle-style
baseline stands on it too). privrl's own code imports it from there."""

from privrl.least_squares.calibration import *  # noqa: F403
from privrl.least_squares.calibration import __all__  # noqa: F401
