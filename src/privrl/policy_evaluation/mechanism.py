"""The old import path of DP-LSW / DP-LSL's solvers and release steps, kept for users: the module is
:mod:`privrl.least_squares.mechanism`, a shared layer below the families (Wang & Hegde's Balle-style
baseline stands on it too). privrl's own code imports it from there."""

from privrl.least_squares.mechanism import *  # noqa: F403
from privrl.least_squares.mechanism import __all__  # noqa: F401
