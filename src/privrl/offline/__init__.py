"""Offline RL with differential privacy (Qiao & Wang 2023): APVI/DP-APVI (tabular, Algorithm 1)
and PEVI/VAPVI/DP-VAPVI (linear MDPs, Algorithm 2). See ``docs/offline.md``."""

from privrl.offline.linear import DPVAPVI, PEVI, VAPVI
from privrl.offline.tabular import APVI, DPAPVI

__all__ = ["APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI"]
