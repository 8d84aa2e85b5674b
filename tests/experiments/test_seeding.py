"""The seed rule (:mod:`privrl.experiments.seeding`): seeds set by the variance needed and the cost,
and the committed evidence it leaves — no claim whose deciding runs cost under the cap is undecided
for too few seeds alone."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import privrl
from privrl._validation import InvalidParameterError
from privrl.experiments.seeding import (
    CPU_CAP_SECONDS,
    Z_ONE_SIDED_5,
    Z_POWER,
    Z_TWO_SE,
    Pilot,
    SeedPlan,
    plan_seeds,
    regular_keys,
    seed_limited,
    seeds_needed,
    setting_seeds,
)
from privrl.experiments.verdicts import compare_curves

ARCHIVE = Path(privrl.__file__).resolve().parents[2] / "docs" / "results" / "metrics"


@pytest.mark.parametrize("gap, sd, z", [(1.0, 3.0, Z_TWO_SE), (0.11, 3.84, Z_TWO_SE), (3.5, 6.0, Z_ONE_SIDED_5)])
def test_needed_seeds_put_the_gap_at_z_plus_the_power_quantile_standard_errors(gap, sd, z):
    n = seeds_needed(gap, sd, z)
    assert gap >= (z + Z_POWER) * sd / math.sqrt(n) - 1e-12      # enough ...
    assert n == 2 or gap < (z + Z_POWER) * sd / math.sqrt(n - 1)  # ... and no more


def test_the_rule_runs_the_needed_seeds_under_the_cap_and_says_so_above_it():
    # gap 0.5 less one pilot SE (4/√400 = 0.2): 0.3; ((2 + 0.8416)·4/0.3)² = 1435.6 -> 1436 seeds, 28.7 CPU-s
    cheap = Pilot(gap=0.5, sd=4.0, z=Z_TWO_SE, cpu_per_seed=0.02, pilot_seeds=400)
    plan = plan_seeds(cheap, base=10)
    assert (plan.seeds, plan.needed, plan.capped) == (1436, 1436, False)
    assert plan.reason("improvement within 2 SE of 1") == ("improvement within 2 SE of 1: open at the rule's 1436 "
                                                           "seeds (80 % power on its pilot's gap)")
    assert plan.reason("improvement within 2 SE of 1", seeds=10).endswith("the rule's 1436 seeds (28.7 CPU-s) run in "
                                                                         "make reproduce-decide")
    # the same variance on runs 100 times dearer: 2872 CPU-s > 600, the claim keeps its base seeds
    dear = Pilot(gap=0.5, sd=4.0, z=Z_TWO_SE, cpu_per_seed=2.0, pilot_seeds=400)
    plan = plan_seeds(dear, base=10)
    assert (plan.seeds, plan.needed, plan.capped) == (10, 1436, True) and plan.cost_seconds > CPU_CAP_SECONDS
    assert plan.reason("improvement within 2 SE of 1") == ("improvement within 2 SE of 1; deciding it needs ≈1436 "
                                                           "seeds, 47.9 CPU-min > the 10 CPU-min cap")
    # a pilot whose gap is within one of its standard errors of the boundary cannot size the claim: capped
    unsized = plan_seeds(Pilot(gap=0.5, sd=4.0, z=Z_TWO_SE, cpu_per_seed=0.02, pilot_seeds=50), base=10)
    assert unsized.capped and not unsized.sized and unsized.seeds == 10
    assert unsized.reason("r").endswith("within one SE of the boundary: deciding it needs more than the 10 CPU-min "
                                        "cap's 30000 seeds")
    # a comparison the base seeds already resolve runs the base seeds
    assert plan_seeds(Pilot(gap=5.0, sd=1.0, z=Z_TWO_SE, cpu_per_seed=1.0, pilot_seeds=50), base=10).seeds == 10
    assert setting_seeds([plan_seeds(cheap, base=10), plan], base=10) == 1436
    with pytest.raises(InvalidParameterError, match="'gap' parameter of Pilot"):
        Pilot(gap=0.0, sd=1.0, z=2.0, cpu_per_seed=1.0, pilot_seeds=10)


def test_the_regular_run_pays_the_cheapest_claims_first_within_its_budget():
    def plan(extra_seeds, cpu):
        return SeedPlan(10 + extra_seeds, 10 + extra_seeds, (10 + extra_seeds) * cpu, False, 10, cpu)

    plans = {"free": plan(0, 5.0), "a": plan(90, 0.1), "b": plan(100, 0.15), "c": plan(10, 2.0)}
    assert [round(p.extra_seconds, 6) for p in plans.values()] == [0.0, 9.0, 15.0, 20.0]
    assert regular_keys(plans, budget=25.0) == {"free", "a", "b"}
    assert regular_keys(plans, budget=8.0) == {"free"}


def test_an_open_comparison_of_two_trivial_curves_gives_the_trivial_reason_not_the_seeds():
    """No seed count decides it: whichever side more seeds find better, the win says nothing (the
    RiverSwim JDP-against-LDP case: both at the stuck learner's regret)."""
    rng = np.random.default_rng(0)
    jdp, ldp = 66_000 + 400 * rng.standard_normal(20), 65_900 + 3_000 * rng.standard_normal(20)
    v = compare_curves(jdp, ldp, claim="less", test="welch", trivial=65_950, lower_is_better=True,
                       names=("JDP", "LDP"), baseline="the stuck learner")
    assert v.verdict == "undecided" and v.reason.startswith("JDP and LDP no better than the stuck learner")
    assert not seed_limited(v.reason)
    # one side better than trivial: more seeds can decide it (a win for that side is a result)
    v = compare_curves(jdp - 30_000, ldp - 30_000, claim="less", test="welch", trivial=65_950,
                       lower_is_better=True, names=("JDP", "LDP"))
    assert v.verdict == "undecided" and seed_limited(v.reason)


@pytest.mark.skipif(not (ARCHIVE / "manifest.json").is_file(), reason="no committed metrics archive")
def test_no_committed_claim_is_undecided_for_too_few_seeds_alone():
    """Every claim the committed metrics leave undecided for its seeds alone has had the seed rule
    applied and says what it found: its deciding runs would cost more than the 10 CPU-minute cap,
    its count runs in make reproduce-decide, or the rule's count left it open."""
    from privrl.experiments.report import evaluate

    evaluation = evaluate(ARCHIVE)
    open_ = [(exp_id, c.claim, c.reason) for exp_id, found in evaluation.claims.items() for c in (found.claims or [])
             if c.verdict == "undecided" and seed_limited(c.reason)]
    words = ("CPU-min cap", "run in make reproduce-decide", "open at the rule's", "open at the base")
    assert all(any(w in reason for w in words) for *_, reason in open_), \
        [c for c in open_ if not any(w in c[2] for w in words)]
