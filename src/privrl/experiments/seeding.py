"""Seeds set by cost and the variance needed: decide every claim whose deciding runs cost under
10 CPU-minutes.

A claim decided by a mean over seeds against a boundary (another curve's mean, a published number,
a threshold such as "improvement < 1") is decided at ``n`` seeds when the gap between the mean and
the boundary exceeds ``z`` standard errors, ``gap > z·sd/√n``: ``z`` is the decision's critical value
(:data:`Z_TWO_SE` for the mean ± 2 SE rules, :data:`Z_ONE_SIDED_5` for a one-sided t test at 5 %,
whose t quantile is within 4 % of it from 20 seeds on), ``sd`` the per-seed standard deviation of the
decided quantity (for two independent curves of ``n`` seeds each, ``√(sd_a² + sd_b²)``).

**The variance needed.** With ``gap`` and ``sd`` measured on ``P`` pilot seeds (:class:`Pilot`;
seeds disjoint from the ones that decide, so the count does not depend on the data that decides),
the claim needs the seeds at which it is decided with probability 80 % if the gap is ``g``, the
pilot's gap less one of its standard errors (``g = gap − sd/√P``: the pilot's own error must not
make the count optimistic; per-seed returns are heavy-tailed) — the gap is then ``z + z₀.₈``
standard errors, ``z₀.₈ = 0.8416`` (:data:`Z_POWER`):

    needed = ⌈((z + z₀.₈) · sd / g)²⌉                                     (:func:`seeds_needed`)

A pilot whose gap is within one standard error of the boundary (``g ≤ 0``) cannot say how many
seeds the claim needs: it is over the cap.

**The cost.** With ``c`` the CPU seconds of one seed of the claim's deciding runs (every setting the
claim reads), the claim is decided when ``needed · c`` is at most :data:`CPU_CAP_SECONDS`
(10 CPU-minutes): the setting runs ``max(base, needed)`` seeds. Above the cap it keeps its ``base``
seeds and the claim stays undecided, saying so (:meth:`SeedPlan.reason`: "needs ≈N seeds, X CPU-min
> the 10 CPU-min cap"). :func:`plan_seeds` is the rule; a setting read by several claims runs the
largest count any of them plans (:func:`setting_seeds`).

**The regular run and ``make reproduce-decide``.** ``make reproduce-paper`` must stay within 5
minutes on 2 cores, and today's sweep leaves little room: it pays the extra seeds (beyond the base)
of the claims cheapest to decide first, up to :data:`REGULAR_EXTRA_CPU_SECONDS` in all
(:func:`regular_keys`); ``make reproduce-decide`` (the environment variable :data:`SEEDS_ENV` set to
``"decide"``) runs every claim's count into the same results directory (the regular runs are kept)
and renders the evidence. A claim whose seeds only the second run pays says so while it is open
(:func:`within_plan`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from privrl._validation import check_scalar
from privrl.experiments.verdicts import Verdict

__all__ = ["CPU_CAP_SECONDS", "Z_POWER", "Z_TWO_SE", "Z_ONE_SIDED_5", "Pilot", "SeedPlan", "seeds_needed",
           "plan_seeds", "setting_seeds", "SEED_REASONS", "seed_limited", "within_plan", "SEEDS_ENV",
           "REGULAR_EXTRA_CPU_SECONDS", "deciding", "regular_keys"]

K = TypeVar("K", bound=Hashable)

#: the most CPU seconds the deciding runs of one claim may cost (10 CPU-minutes)
CPU_CAP_SECONDS = 600.0
#: the standard normal quantile of the rule's power (80 %): z₀.₈
Z_POWER = 0.8416
#: the critical value of a mean ± 2 SE rule
Z_TWO_SE = 2.0
#: the critical value of a one-sided test at level 5 % (normal approximation of the t quantile)
Z_ONE_SIDED_5 = 1.6449
#: the CPU seconds of extra seeds the regular run (``make reproduce-paper``) pays: what the close comparisons'
#: extra seeds cost before this rule (≈ 15 CPU-s: Wang & Hegde's hand-set counts) plus the room the sweep
#: leaves under 5 minutes on 2 cores (4 min 53 s measured: 7 s of wall time, 14 CPU-s)
REGULAR_EXTRA_CPU_SECONDS = 15.0 + 14.0
#: the environment variable that makes a paper-scale sweep run every claim's count ("decide")
SEEDS_ENV = "PRIVRL_SEEDS"
#: the reasons a verdict gives when only the number of seeds leaves it undecided
SEED_REASONS = ("not significant", "within 2 SE", "intervals overlap", "not resolved against the tolerance")


@dataclass(frozen=True)
class Pilot:
    """One claim's deciding comparison measured on ``pilot_seeds`` pilot seeds at paper scale:
    ``gap`` (> 0) between the mean and the claim's boundary, ``sd`` (≥ 0) the per-seed standard
    deviation of the decided quantity, ``z`` the decision's critical value, ``cpu_per_seed`` the CPU
    seconds of one seed of the deciding runs."""

    gap: float
    sd: float
    z: float
    cpu_per_seed: float
    pilot_seeds: int

    def __post_init__(self) -> None:
        check_scalar(self.gap, "gap", owner="Pilot", low=0.0, closed="neither")
        check_scalar(self.sd, "sd", owner="Pilot", low=0.0)
        check_scalar(self.z, "z", owner="Pilot", low=0.0, closed="neither")
        check_scalar(self.cpu_per_seed, "cpu_per_seed", owner="Pilot", low=0.0, closed="neither")
        check_scalar(self.pilot_seeds, "pilot_seeds", owner="Pilot", kind=int, low=2)


@dataclass(frozen=True)
class SeedPlan:
    """What the rule gives one claim: ``seeds`` to run, the ``needed`` count, their CPU seconds
    (``cost_seconds``) and whether that is over the cap (``capped``: the claim keeps its base seeds)."""

    seeds: int
    needed: int
    cost_seconds: float
    capped: bool
    base: int = 2
    cpu_per_seed: float = 0.0
    #: False when the pilot's gap is within one of its standard errors of the boundary (no count known)
    sized: bool = True

    @property
    def extra_seconds(self) -> float:
        """The CPU seconds of the seeds beyond the base (negative when the plan runs fewer)."""
        return (self.seeds - self.base) * self.cpu_per_seed

    def reason(self, reason: str, seeds: int | None = None) -> str:
        """An undecided verdict's ``reason`` with the rule's word on it: over the cap, why no
        more seeds ran; measured on ``seeds`` fewer than the plan's, where the rest run; else that
        the plan's seeds left it open (the rule decides with 80 % power on its pilot's gap, not
        always)."""
        if not self.capped:
            if seeds is not None and seeds < self.seeds:
                return (f"{reason}; the rule's {self.seeds} seeds ({self.seeds * self.cpu_per_seed:.3g} CPU-s) "
                        "run in make reproduce-decide")
            if self.seeds > self.base:
                return f"{reason}: open at the rule's {self.seeds} seeds (80 % power on its pilot's gap)"
            return f"{reason}: open at the base {self.base} seeds, which its pilot found enough"
        if not self.sized:
            return (f"{reason}; the pilot's gap is within one SE of the boundary: deciding it needs more than "
                    f"the {CPU_CAP_SECONDS / 60:g} CPU-min cap's {self.needed - 1} seeds")
        return (f"{reason}; deciding it needs ≈{self.needed} seeds, {self.cost_seconds / 60:.3g} CPU-min "
                f"> the {CPU_CAP_SECONDS / 60:g} CPU-min cap")


def seeds_needed(gap: float, sd: float, z: float) -> int:
    """``⌈((z + z₀.₈) · sd / gap)²⌉`` (module docstring), at least 2."""
    gap = check_scalar(gap, "gap", owner="seeds_needed", low=0.0, closed="neither")
    sd = check_scalar(sd, "sd", owner="seeds_needed", low=0.0)
    z = check_scalar(z, "z", owner="seeds_needed", low=0.0, closed="neither")
    return max(2, math.ceil(((z + Z_POWER) * sd / gap) ** 2))


def plan_seeds(pilot: Pilot, base: int, cap: float = CPU_CAP_SECONDS) -> SeedPlan:
    """The rule (module docstring): ``max(base, needed)`` seeds, ``needed`` planned on the pilot's gap
    less one standard error, when the needed seeds' deciding runs cost at most ``cap`` CPU seconds,
    else ``base`` (capped)."""
    base = check_scalar(base, "base", owner="plan_seeds", kind=int, low=2)
    cap = check_scalar(cap, "cap", owner="plan_seeds", low=0.0, closed="neither")
    planned = pilot.gap - pilot.sd / math.sqrt(pilot.pilot_seeds)
    if planned <= 0:        # the pilot cannot tell the side: no count within the cap is known to decide it
        needed = max(base, math.floor(cap / pilot.cpu_per_seed) + 1)
    else:
        needed = seeds_needed(planned, pilot.sd, pilot.z)
    cost = needed * pilot.cpu_per_seed
    capped = cost > cap
    return SeedPlan(base if capped else max(base, needed), needed, cost, capped, base, pilot.cpu_per_seed, planned > 0)


def setting_seeds(plans: Iterable[SeedPlan], base: int) -> int:
    """The seeds of a setting read by the claims of ``plans``: the largest count any plans, at
    least ``base``."""
    return max([base, *(p.seeds for p in plans)])


def seed_limited(reason: str) -> bool:
    """True when an undecided verdict's ``reason`` says only that its seeds are too few to
    resolve it (:data:`SEED_REASONS`)."""
    return any(r in reason for r in SEED_REASONS)


def within_plan(verdict: Verdict, plan: SeedPlan | None, seeds: int | None = None) -> Verdict:
    """``verdict`` (measured on ``seeds`` seeds) with its plan's word on an undecided reason that
    is only the seeds' (:meth:`SeedPlan.reason`); unchanged otherwise."""
    if plan is None or verdict.verdict != "undecided" or not seed_limited(verdict.reason):
        return verdict
    return Verdict(verdict.verdict, plan.reason(verdict.reason, seeds), verdict.detail)


def deciding() -> bool:
    """True in ``make reproduce-decide``'s sweep (:data:`SEEDS_ENV` is ``"decide"``): every claim
    runs its plan's count."""
    return os.environ.get(SEEDS_ENV, "") == "decide"


def regular_keys(plans: Mapping[K, SeedPlan], budget: float = REGULAR_EXTRA_CPU_SECONDS) -> frozenset[K]:
    """The claims (keys of ``plans``) whose seeds the regular run pays: cheapest extra first, while
    the extra seeds' CPU seconds add up to at most ``budget`` (a plan that runs no more than its
    base costs nothing; a capped plan runs its base)."""
    chosen: list[K] = []
    spent = 0.0
    for key, plan in sorted(plans.items(), key=lambda kv: kv[1].extra_seconds):
        if plan.extra_seconds <= 0 or spent + plan.extra_seconds <= budget:
            chosen.append(key)
            spent += max(plan.extra_seconds, 0.0)
    return frozenset(chosen)
