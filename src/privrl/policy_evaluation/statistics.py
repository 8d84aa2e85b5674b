"""The old import path of DP-LSW / DP-LSL's first-visit statistics of a batch (eq. 4), kept for users: the module is
:mod:`privrl.least_squares.statistics`, a shared layer below the families (Wang & Hegde's Balle-style
baseline stands on it too). privrl's own code imports it from there."""

from privrl.least_squares.statistics import *  # noqa: F403
from privrl.least_squares.statistics import __all__  # noqa: F401
