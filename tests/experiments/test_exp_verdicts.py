"""Verdict checks for the claims and the Claim fields (verdict, source)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privrl.errors import InvalidParameterError
from privrl.experiments.spec import Claim, Experiment
from privrl.experiments.verdicts import (
    REASON_PAPER_SCALE,
    Verdict,
    argmin_on_boundary,
    compare_curves,
    degenerate_curves,
    first_undecided,
    min_seeds,
    near_trivial,
    needs_paper_scale,
    per_seed,
    scale_of,
    verdict_counts,
)


# --------------------------------------------------------------------------- Claim
@pytest.mark.parametrize("supported,verdict", [(True, "holds"), (False, "fails"), (None, "undecided")])
def test_claim_supported_maps_to_verdict_and_back(supported, verdict):
    assert Claim("c", "m", supported).verdict == verdict
    assert Claim("c", "m", verdict=verdict).supported is supported


def test_claim_rejects_bad_or_contradicting_verdicts():
    with pytest.raises(InvalidParameterError, match="'verdict' parameter of Claim"):
        Claim("c", "m", verdict="maybe")
    with pytest.raises(InvalidParameterError, match="'supported' parameter of Claim"):
        Claim("c", "m", True, verdict="fails")
    c = Claim("c", "m", verdict="undecided", reason="one seed", tight_value="0.3")
    assert c.reason == "one seed" and c.has_values and not Claim("c", "m").has_values


def _experiment(**kw):
    return Experiment(id="x", paper="p", figure="f", description="d", settings=lambda s: [{}],
                      seeds={"smoke": 1, "quick": 1, "paper": 1}, run=lambda p, c: None, **kw)


def test_deviations_may_depend_on_the_scale():
    exp = _experiment(deviations=lambda scale: [f"grid to 1e{5 if scale == 'quick' else 7}"])
    assert exp.deviations == () and exp.deviations_for("quick") == ("grid to 1e5",)
    assert exp.deviations_for("paper") == ("grid to 1e7",)
    both = _experiment(deviations=("always",), scale_deviations=lambda s: [s])
    assert both.deviations_for("smoke") == ("always", "smoke") and both.deviations_for(None) == ("always",)
    assert list(_experiment(deviations=["a"]).deviations) == ["a"]


# --------------------------------------------------------------------------- guards
def test_min_seeds():
    assert min_seeds(3, 3) is None
    v = min_seeds(1, 3)
    assert v.verdict == "undecided" and v.reason == "one seed"
    df = pd.DataFrame({"seed": [0, 0, 1, 1], "value": [1, 2, 3, 4]})
    assert min_seeds(df, 3).reason == "2 seeds < 3"
    assert min_seeds(np.arange(5), 3) is None


def test_needs_paper_scale():
    assert needs_paper_scale("quick").reason == REASON_PAPER_SCALE
    assert needs_paper_scale("paper") is None and needs_paper_scale(None) is None
    assert needs_paper_scale("quick", scale_dependent=False) is None
    assert scale_of(pd.DataFrame({"scale": ["quick", "quick"]})) == "quick"
    assert scale_of(pd.DataFrame({"scale": ["quick", "paper"]})) is None
    assert scale_of(pd.DataFrame({"value": [1]})) is None


def test_first_undecided_returns_the_first_objection():
    a, b = Verdict("undecided", "one seed"), Verdict("undecided", "needs paper scale")
    assert first_undecided(None, a, b) is a and first_undecided(None, None) is None


@pytest.mark.parametrize("values,expected", [
    ([5, 3, 1], True),        # best at the largest grid point
    ([1, 3, 5], True),        # best at the smallest
    ([3, 1, 5], False),       # interior minimum
    ([np.nan, 1, 5], False),  # NaN ignored: the minimum is interior
])
def test_argmin_on_boundary(values, expected):
    assert argmin_on_boundary([0.1, 1.0, 10.0], values) is expected


def test_argmin_on_boundary_sorts_the_grid_and_checks_lengths():
    # grid given out of order: 10 is the largest point and holds the minimum
    assert argmin_on_boundary([1.0, 10.0, 0.1], [3, 1, 5]) is True
    assert argmin_on_boundary([1.0, 2.0], [2, 1]) is True  # two points: all boundary
    with pytest.raises(InvalidParameterError, match="'values' parameter of argmin_on_boundary"):
        argmin_on_boundary([1, 2, 3], [1, 2])


def test_near_trivial():
    assert near_trivial([0.95, 1.0, 1.05], 1.0, 0.1)
    assert not near_trivial([0.5, 0.6], 1.0, 0.1)
    # an error worse than the zero estimate is near-trivial when lower is better
    assert near_trivial([3.0], 1.0, 0.1, lower_is_better=True)
    assert not near_trivial([3.0], 1.0, 0.1)
    # a return below the constant policy's is near-trivial when higher is better
    assert near_trivial([5.0], 10.87, 0.1, lower_is_better=False)
    assert not near_trivial([20.0], 10.87, 0.1, lower_is_better=False)


def test_degenerate_curves():
    base = pd.DataFrame({"K": [10, 100] * 4, "seed": [0, 0, 1, 1] * 2, "rho": [1.0] * 4 + [5.0] * 4,
                         "value": [0.5, 0.2, 0.7, 0.4] * 2})
    assert degenerate_curves(base, "rho", x="K")
    moved = base.copy()
    moved.loc[moved.rho == 5.0, "value"] *= 0.5
    assert not degenerate_curves(moved, "rho", x="K")
    assert not degenerate_curves(base[base.rho == 1.0], "rho", x="K")  # one group: nothing to compare
    assert degenerate_curves(base, "rho")  # overall means


# --------------------------------------------------------------------------- compare_curves
def test_per_seed_mean_and_last():
    df = pd.DataFrame({"seed": [0, 0, 1, 1], "K": [1, 2, 1, 2], "value": [1.0, 3.0, 2.0, 6.0]})
    assert per_seed(df).to_dict() == {0: 2.0, 1: 4.0}
    assert per_seed(df, x="K", reduce="last").to_dict() == {0: 3.0, 1: 6.0}
    assert per_seed(df, x="K", at=1).to_dict() == {0: 1.0, 1: 2.0}


def test_welch_decides_a_clear_difference_both_ways():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.0, 1.0, 20), rng.normal(3.0, 1.0, 20)  # 3 sd apart: p ~ 1e-12
    assert compare_curves(a, b, claim="less").verdict == "holds"
    v = compare_curves(a, b, claim="greater")
    assert v.verdict == "fails" and "the other way" in v.detail


def test_welch_leaves_an_unresolved_difference_undecided():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.0, 1.0, 5), rng.normal(0.1, 1.0, 5)  # 0.1 sd apart with 5 seeds
    v = compare_curves(a, b, claim="less")
    assert v.verdict == "undecided" and "not significant" in v.reason


def test_welch_p_value_matches_scipy():
    from scipy import stats

    rng = np.random.default_rng(2)
    a, b = rng.normal(0.0, 1.0, 8), rng.normal(0.8, 2.0, 6)
    p = stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue
    v = compare_curves(a, b, claim="less", alpha=0.4)
    assert f"one-sided p = {p:.2g}" in v.detail


def test_paired_test_removes_the_shared_data_noise():
    rng = np.random.default_rng(3)
    seeds = np.arange(6)
    data = rng.normal(0.0, 5.0, 6)  # per-seed data noise shared by both curves
    a = pd.Series(data + 0.1 + rng.normal(0, 0.01, 6), index=seeds)
    b = pd.Series(data + rng.normal(0, 0.01, 6), index=seeds)
    assert compare_curves(a, b, claim="greater", test="welch").verdict == "undecided"
    assert compare_curves(a, b, claim="greater", test="paired").verdict == "holds"
    with pytest.raises(InvalidParameterError, match="'test' parameter of compare_curves"):
        compare_curves(a.to_numpy(), b.to_numpy(), test="paired")


def test_two_se_separation():
    a, b = np.array([1.0, 1.1, 0.9, 1.0]), np.array([2.0, 2.1, 1.9, 2.0])
    assert compare_curves(a, b, claim="less", test="2se").verdict == "holds"
    assert compare_curves(b, a, claim="less", test="2se").verdict == "fails"
    v = compare_curves(a, a + 0.01, claim="less", test="2se")
    assert v.verdict == "undecided" and v.reason == "mean ± 2 SE intervals overlap"


def test_equality_within_a_tolerance():
    rng = np.random.default_rng(4)
    a, b = rng.normal(1.0, 0.01, 10), rng.normal(1.0, 0.01, 10)
    assert compare_curves(a, b, claim="equal", tol=0.05).verdict == "holds"
    assert compare_curves(a, b + 1.0, claim="equal", tol=0.05).verdict == "fails"
    assert compare_curves(a, b, claim="equal", tol=0.05, test="2se").verdict == "holds"


def test_too_few_seeds_and_near_trivial_pairs_are_undecided():
    v = compare_curves([1.0], [2.0, 2.1], min_n=2)
    assert v.verdict == "undecided" and v.reason == "one seed"
    with pytest.raises(InvalidParameterError, match="'min_n' parameter of compare_curves"):
        compare_curves([1.0], [2.0], min_n=1)  # a t test needs two seeds a side
    # two predictors whose error is the zero estimate's error (1.0) within 10 %
    v = compare_curves([0.97, 0.98, 0.99], [1.01, 1.02, 1.03], claim="less", trivial=1.0, rel_tol=0.1,
                       lower_is_better=True, names=("A", "B"), baseline="the zero predictor")
    assert v.verdict == "undecided" and v.reason == "A no better than the zero predictor (1)"   # the winner
    # the same comparison far from trivial is decided
    assert compare_curves([0.07, 0.08, 0.09], [0.51, 0.52, 0.53], claim="less", trivial=1.0,
                          lower_is_better=True).verdict == "holds"
    with pytest.raises(InvalidParameterError, match="'lower_is_better' parameter of compare_curves"):
        compare_curves([0.07, 0.08], [0.51, 0.52], trivial=1.0)


def test_constant_curves_are_decided_exactly():
    assert compare_curves([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], claim="less").verdict == "holds"
    assert compare_curves([2.0, 2.0], [1.0, 1.0], claim="less").verdict == "fails"


def test_verdict_builds_a_claim_and_counts():
    v = Verdict("undecided", "one seed", "A 1 vs B 2")
    c = v.claim("A < B", paper_value="yes")
    assert (c.verdict, c.reason, c.measured, c.paper_value, c.supported) == ("undecided", "one seed",
                                                                             "A 1 vs B 2", "yes", None)
    claims = [c, Claim("x", "m", True), Claim("y", "m", False), Claim("z", "m", True)]
    assert verdict_counts(claims) == {"holds": 2, "fails": 1, "undecided": 1}


def _example_frame(scales: dict[float, float], seeds: int, rng_seed: int = 0) -> pd.DataFrame:
    """abs_error rows as the example experiment writes them: |N(0, (s/n)^2)| per (ε, n, seed)."""
    rng = np.random.default_rng(rng_seed)
    rows = [{"metric": "abs_error", "calibration": "sound", "epsilon": eps, "n": n, "seed": seed,
             "value": abs(rng.normal(0.0, s / n)), "epsilon_spent": eps}
            for eps, s in scales.items() for n in (100, 1000, 10_000) for seed in range(seeds)]
    return pd.DataFrame(rows)


def test_example_claims_use_the_shared_checks():
    from privrl.experiments import get_experiment

    claims = get_experiment("example-gaussian").claims
    # noise scale falling 4-fold per ε level: 5 seeds × 3 n decide it at this seed (holds at 25 of
    # data seeds 0-29, undecided at the other 5, never fails: both neighbouring pairs must be significant)
    first = claims(_example_frame({0.5: 16.0, 1.0: 4.0, 4.0: 1.0}, seeds=5))[0]
    assert first.verdict == "holds"
    # the error grows with ε (a bug): decided the other way
    assert claims(_example_frame({0.5: 1.0, 1.0: 4.0, 4.0: 16.0}, seeds=5))[0].verdict == "fails"
    # two seeds cannot decide
    two = claims(_example_frame({0.5: 8.0, 1.0: 4.0}, seeds=2))[0]
    assert (two.verdict, two.reason) == ("undecided", "2 seeds < 3")


# --------------------------------------------------------------------------- sources, the trivial rule
def test_a_paper_claim_carries_the_papers_words_and_where():
    c = Claim("A < B", "m", True, source="paper", quote="A is smaller.", where="§6")
    assert (c.source, c.quote, c.where) == ("paper", "A is smaller.", "§6")
    assert Claim("c", "m").source == "privrl"
    with pytest.raises(InvalidParameterError, match="'quote' parameter of Claim"):
        Claim("c", "m", source="paper", where="§6")
    with pytest.raises(InvalidParameterError, match="'where' parameter of Claim"):
        Claim("c", "m", source="paper", quote="q")
    with pytest.raises(InvalidParameterError, match="'source' parameter of Claim"):
        Claim("c", "m", source="mine")


def test_trivial_guard_is_undecided_when_either_side_is_no_better_than_trivial():
    from privrl.experiments.verdicts import trivial_guard

    good, useless, worse = [19.0, 20.0, 21.0], [10.5, 10.9, 11.2], [2.0, 3.0, 2.5]
    assert trivial_guard({"A": good, "B": good}, 10.86, lower_is_better=False) is None
    v = trivial_guard({"A": good, "B": worse}, 10.86, lower_is_better=False, baseline="random play")
    assert v.verdict == "undecided" and v.reason == "B no better than random play (10.86)"
    v = trivial_guard({"A": useless, "B": worse}, 10.86, lower_is_better=False, baseline="random play")
    assert v.reason == "A and B no better than random play (10.86)"
    # errors: lower is better; an error above the zero predictor's is no better than it
    assert trivial_guard({"tight": [2.1, 2.2]}, 0.7, lower_is_better=True).verdict == "undecided"
    assert trivial_guard({"tight": [0.01, 0.02]}, 0.7, lower_is_better=True) is None
    # compare_curves applies it to the side its verdict finds better: beating an answer no better than
    # random play is a result, a win by such an answer is not; guard="both" (and "equal") check both sides
    assert compare_curves(good, worse, claim="greater", trivial=10.86, lower_is_better=False).verdict == "holds"
    v = compare_curves(good, worse, claim="greater", trivial=10.86, lower_is_better=False, guard="both",
                       names=("A", "B"), baseline="random play")
    assert v.verdict == "undecided" and v.reason == "B no better than random play (10.86)"
    v = compare_curves(useless, worse, claim="greater", trivial=10.86, lower_is_better=False, names=("A", "B"),
                       baseline="random play")
    assert v.verdict == "undecided" and v.reason == "A no better than random play (10.86)"
    # the claim fails (B is better) but B is trivial: undecided; B good: fails
    v = compare_curves(worse, useless, claim="greater", trivial=10.86, lower_is_better=False, names=("A", "B"))
    assert v.verdict == "undecided" and v.reason.startswith("B no better")
    assert compare_curves(worse, good, claim="greater", trivial=10.86, lower_is_better=False).verdict == "fails"
    # lower is better (errors): A < B claimed, A the better side
    assert compare_curves([0.1, 0.11, 0.12], [0.9, 0.95, 1.0], claim="less", trivial=0.7,
                          lower_is_better=True).verdict == "holds"
    assert compare_curves(good, good, claim="equal", tol=0.5, trivial=30.0, lower_is_better=False).verdict \
        == "undecided"
    assert compare_curves(good, worse, claim="greater").verdict == "holds"


@pytest.mark.parametrize("condition,verdict", [(True, "holds"), (False, "fails"), (None, "undecided")])
def test_decide_turns_a_computed_condition_into_a_verdict(condition, verdict):
    from privrl.experiments.verdicts import decide

    v = decide(condition, "detail", reason="why")
    assert (v.verdict, v.detail) == (verdict, "detail") and (v.reason == "why") == (verdict == "undecided")


def test_all_of_and_any_of():
    from privrl.experiments.verdicts import all_of, any_of, fails, holds, undecided

    h, f, u = holds("h"), fails("f"), undecided("why", "u")
    assert [all_of(x).verdict for x in ([h, h], [h, u], [u, f], [])] == ["holds", "undecided", "fails", "undecided"]
    assert [any_of(x).verdict for x in ([f, h], [f, u], [f, f], [])] == ["holds", "undecided", "fails", "undecided"]
    assert all_of([h, u]).reason == "why" and all_of([h, f]).detail == "h; f"


def test_compare_to_value_one_sample():
    from privrl.experiments.verdicts import compare_to_value

    rng = np.random.default_rng(0)
    close = 17.0 + rng.normal(0, 0.5, 40)
    assert compare_to_value(close, 17.1, claim="equal", tol=1.0).verdict == "holds"
    assert compare_to_value(close, 15.0, claim="equal", tol=1.0).verdict == "fails"
    assert compare_to_value(close[:3], 16.2, claim="equal", tol=1.0).verdict == "undecided"
    assert compare_to_value(close, 10.86, claim="greater").verdict == "holds"
    assert compare_to_value(close, 30.0, claim="greater").verdict == "fails"
    assert compare_to_value(close[:1], 10.0, claim="greater").reason == "one seed"


def test_rate_verdict_reads_the_interval_against_the_claimed_rate():
    from privrl.experiments.verdicts import rate_verdict

    rng = np.random.default_rng(1)
    kw = {"claimed": 0.5, "rival": 0.75, "allowance": 0.08}
    assert rate_verdict(0.5 + rng.normal(0, 0.02, 10), **kw).verdict == "holds"       # √T, told from T^{3/4}
    assert rate_verdict(0.2 + rng.normal(0, 0.02, 10), **kw).verdict == "holds"       # below √T: sublinear
    assert rate_verdict(0.75 + rng.normal(0, 0.02, 10), **kw).verdict == "fails"      # T^{3/4}
    wide = rate_verdict([0.3, 0.9, 0.5], **kw)
    assert wide.verdict == "undecided" and "rival" in wide.reason                     # cannot tell √T from T^{3/4}
    near = rate_verdict(0.55 + rng.normal(0, 0.005, 10), **kw)
    assert near.verdict == "undecided" and "log-factor" in near.reason                # within one log factor
    assert rate_verdict([0.5, 0.5], **kw).reason == "2 seeds < 3"
