"""Offline RL with differential privacy (Qiao & Wang 2023): APVI/DP-APVI (tabular, Algorithm 1)
and PEVI/VAPVI/DP-VAPVI (linear MDPs, Algorithm 2), their noise plans (:mod:`privrl.offline.calibration`),
the paper's experiments (:mod:`privrl.offline.experiments`) and audit targets
(:mod:`privrl.offline.audit`). See ``docs/offline.md``."""

from privrl.family import Algorithm, Family
from privrl.offline._common import Route, Statistics, offline_statistics
from privrl.offline.estimators import APVI, DPAPVI, DPVAPVI, PEVI, VAPVI
from privrl.offline.grouping import route_statistics, stream_statistics
from privrl.offline.one_step import DPOneStep

FAMILY = Family(
    __name__,
    paper="Qiao & Wang (2023)",
    estimators=("APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI", "DPOneStep"),
    algorithms=(
        Algorithm("APVI, DP-APVI", ("APVI", "DPAPVI"), "offline tabular RL"),
        Algorithm("PEVI, VAPVI, DP-VAPVI", ("PEVI", "VAPVI", "DPVAPVI"), "offline RL in linear MDPs",
                  paper="Qiao & Wang (2023); Jin et al. (2021); Yin et al. (2022)"),
        Algorithm("DP-OneStep", ("DPOneStep",), "offline tabular RL: one private step of policy improvement",
                  paper="Brandfonbrener et al. (2021); Laroche et al. (2019)"),
    ),
    docs="docs/offline.md",
    experiments=("experiments",),
    frontiers=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
    bench=("privrl.bench.entries.offline",),
)

__all__ = ["APVI", "DPAPVI", "PEVI", "VAPVI", "DPVAPVI", "DPOneStep", "Route", "Statistics", "offline_statistics",
           "route_statistics", "stream_statistics"]
