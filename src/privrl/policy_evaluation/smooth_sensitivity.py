"""The old import path of DP-LSW / DP-LSL's smooth sensitivity bounds ψ^w, ψ^λ and the printed
constants, kept for users: the module is :mod:`privrl.least_squares.smooth_sensitivity`, a shared
layer below the families (Wang & Hegde's Balle-style baseline stands on it too). privrl's own code
imports it from there."""

from privrl.least_squares.smooth_sensitivity import *  # noqa: F403
from privrl.least_squares.smooth_sensitivity import __all__  # noqa: F401
