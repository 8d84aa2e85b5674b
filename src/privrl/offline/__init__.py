"""Offline RL with differential privacy (Qiao & Wang 2023): APVI/DP-APVI (tabular, Algorithm 1)
and PEVI/VAPVI/DP-VAPVI (linear MDPs, Algorithm 2), their noise plans (:mod:`privrl.offline.calibration`),
the paper's experiments (:mod:`privrl.offline.experiments`) and audit targets
(:mod:`privrl.offline.audit`). See ``docs/offline.md``."""

from privrl.offline._common import Statistics, offline_statistics
from privrl.offline.estimators import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI

__all__ = ["APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI", "Statistics", "offline_statistics"]
