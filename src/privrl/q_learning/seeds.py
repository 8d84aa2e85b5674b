"""The seeds of Wang & Hegde's figures at paper scale: the paper's 10, and for each close comparison the count of
the seed rule (:mod:`privrl.experiments.seeding`: the variance needed, within the 10 CPU-minute cap) on its
pilot measurement.

The pilots (:data:`FIG1_PILOTS`, :data:`FIG2_PILOTS`: gap, SD, z, CPU seconds per seed) are printed by
``benchmarks/pilot_seeds.py`` at paper scale on pilot seeds from 1000 on (50, 150 or 400 of them: each pilot
names its count), disjoint from the seeds 0 .. n − 1 that decide the claims (measured on 2 shared cores, the
runner's lockstep batches): the gap between the mean and the claim's boundary, the per-seed SD of the decided
quantity and the CPU seconds of one seed of the deciding runs. Figure 1: at sigma = 0.4 in the reference
configuration, a fresh path per update against a path never reset (the final return, Welch t: the SD is √(SD₁² +
SD₂²)), and reset every episode against the authors' code (the mean return of episodes 51–100 within 1 of
theirs, 17.85, 90 % CI: the gap is to the nearer edge of the tolerance; the pilot's mean, 16.42, was measured
against 15.27, an earlier unlogged figure of their code, and its gap restated against the logged 17.85). Figure
2: every input-perturbation and DP-SGD curve's "does not improve over training" (last 10 − first 10 episodes
against 1, ± 2 SE). Every other comparison of the figures is decided at 10 seeds or undecided for a reason seeds
do not change (a curve no better than random play).

The regular run pays the extra seeds of the claims cheapest to decide first
(:func:`~privrl.experiments.seeding.regular_keys` over every plan here: :data:`REGULAR`); ``make
reproduce-decide`` runs every plan's count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from privrl.experiments.seeding import (
    Z_ONE_SIDED_5,
    Z_TWO_SE,
    Pilot,
    SeedPlan,
    deciding,
    plan_seeds,
    regular_keys,
    setting_seeds,
)

__all__ = ["BASE_SEEDS", "SCALE_SEEDS", "FIG1_PILOTS", "FIG2_PILOTS", "PLANS", "REGULAR", "fig1_plan", "fig2_plan",
           "fig1_seeds", "fig2_seeds", "most_seeds"]

#: the paper's seeds at paper scale; fewer at the smaller scales
BASE_SEEDS = 10
SCALE_SEEDS = {"smoke": 1, "quick": 3, "paper": BASE_SEEDS}


def _pilot(gap: float, sd: float, z: float, cpu_per_seed: float, pilot_seeds: int = 50) -> Pilot:
    return Pilot(gap=gap, sd=sd, z=z, cpu_per_seed=cpu_per_seed, pilot_seeds=pilot_seeds)


#: Figure 1 (reference configuration): claim → (the settings it reads as (config, sigma, reset), its pilot)
FIG1_PILOTS: dict[str, tuple[tuple[tuple[str, float, str], ...], Pilot]] = {
    "fresh beats never": ((("reference", 0.4, "iteration"), ("reference", 0.4, "never")),
                          _pilot(4.6234, 7.9093, Z_ONE_SIDED_5, 0.7907)),
    "authors at 0.4": ((("reference", 0.4, "episode"),), _pilot(0.4277, 3.6774, Z_ONE_SIDED_5, 0.3815)),
}

#: Figure 2, "does not improve over training": (ε, config, algorithm, calibration) → its pilot
FIG2_PILOTS: dict[tuple[float, str, str, str], Pilot] = {
    (0.9, "paper", "dpsgd", "paper"): _pilot(1.0668, 3.346, Z_TWO_SE, 0.0156, 150),
    (0.9, "paper", "dpsgd", "tight"): _pilot(0.8736, 3.6118, Z_TWO_SE, 0.0187, 400),
    (0.9, "paper", "input_perturbation", "paper"): _pilot(1.0369, 3.2653, Z_TWO_SE, 0.0269, 150),
    (0.9, "paper", "input_perturbation", "tight"): _pilot(0.9937, 3.6991, Z_TWO_SE, 0.034, 400),
    (0.9, "reference", "dpsgd", "paper"): _pilot(3.9946, 3.4136, Z_TWO_SE, 0.7125),
    (0.9, "reference", "dpsgd", "tight"): _pilot(3.7433, 2.5946, Z_TWO_SE, 0.7125),
    (0.9, "reference", "input_perturbation", "paper"): _pilot(2.1662, 5.2833, Z_TWO_SE, 0.1728, 150),
    (0.9, "reference", "input_perturbation", "tight"): _pilot(1.9321, 4.8511, Z_TWO_SE, 0.1728, 150),
    (0.45, "paper", "dpsgd", "paper"): _pilot(0.8218, 4.2843, Z_TWO_SE, 0.0162, 150),
    (0.45, "paper", "dpsgd", "tight"): _pilot(0.9082, 3.4089, Z_TWO_SE, 0.0166, 400),
    (0.45, "paper", "input_perturbation", "paper"): _pilot(1.4574, 3.0862, Z_TWO_SE, 0.0245, 150),
    (0.45, "paper", "input_perturbation", "tight"): _pilot(0.8386, 2.8156, Z_TWO_SE, 0.0327, 400),
    (0.45, "reference", "dpsgd", "paper"): _pilot(3.5771, 3.2229, Z_TWO_SE, 0.7405),
    (0.45, "reference", "dpsgd", "tight"): _pilot(2.8957, 3.6085, Z_TWO_SE, 0.7405),
    (0.45, "reference", "input_perturbation", "paper"): _pilot(2.1721, 4.6674, Z_TWO_SE, 0.1682, 150),
    (0.45, "reference", "input_perturbation", "tight"): _pilot(1.4444, 5.3476, Z_TWO_SE, 0.1682, 150),
}

#: every plan of the rule, by claim (a Figure 1 claim's name, a Figure 2 curve's key)
PLANS: dict[object, SeedPlan] = {
    **{claim: plan_seeds(pilot, BASE_SEEDS) for claim, (_, pilot) in FIG1_PILOTS.items()},
    **{key: plan_seeds(pilot, BASE_SEEDS) for key, pilot in FIG2_PILOTS.items()},
}
#: the claims whose seeds the regular run (make reproduce-paper) pays
REGULAR = regular_keys(PLANS)


def _runs(key: object) -> SeedPlan | None:
    """The plan a sweep runs for claim ``key``: the rule's count in the regular run's share or under
    make reproduce-decide, else the base."""
    plan = PLANS.get(key)
    if plan is None or deciding() or key in REGULAR:
        return plan
    return None


def fig1_plan(claim: str) -> SeedPlan | None:
    """The rule's plan for a Figure 1 claim of :data:`FIG1_PILOTS` (``None`` for any other)."""
    return PLANS.get(claim)


def fig2_plan(epsilon: float, config: str, algorithm: str, calibration: str) -> SeedPlan | None:
    """The rule's plan for one Figure 2 curve's "does not improve" claim (``None``: no pilot)."""
    return PLANS.get((float(epsilon), config, algorithm, calibration))


def fig1_seeds(params: Mapping[str, object], scale: str) -> int:
    """The seeds of one Figure 1 setting at ``scale``: at paper scale the largest count the sweep
    runs for the claims that read it."""
    if scale != "paper":
        return SCALE_SEEDS[scale]
    key = (str(params["config"]), float(params["sigma"]), str(params["reset"]))  # type: ignore[arg-type]
    return setting_seeds([p for claim, (keys, _) in FIG1_PILOTS.items() if key in keys
                          for p in [_runs(claim)] if p is not None], BASE_SEEDS)


def fig2_seeds(epsilon: float) -> Callable[[Mapping[str, object], str], int]:
    def seeds(params: Mapping[str, object], scale: str) -> int:
        """The seeds of one Figure 2 setting at ``scale`` (the count its plan runs at paper scale)."""
        if scale != "paper":
            return SCALE_SEEDS[scale]
        plan = _runs((float(epsilon), str(params["config"]), str(params["algorithm"]), str(params.get("calibration"))))
        return setting_seeds([] if plan is None else [plan], BASE_SEEDS)
    return seeds


def most_seeds(counts: Callable[[Mapping[str, object], str], int],
               settings: Callable[[str], Iterable[Mapping[str, object]]]) -> dict[str, int]:
    """The ``seeds`` mapping of an experiment: per scale, the most seeds any of its settings runs
    (under make reproduce-decide's counts, so that the regular run's declared seeds cover both)."""
    return {scale: max([n, *(counts(p, scale) for p in settings(scale))]) for scale, n in SCALE_SEEDS.items()}
