"""Claims as declarations (privrl.experiments.claimsets): a ClaimSpec's inputs make zero, one or
several claims, its rule decides each, its statement is filled from the case's labels, and the
spec's fields (source, quote, where, value cells) reach the Claim unless the rule's Outcome
computes them."""

from __future__ import annotations

from functools import partial

import pandas as pd
import pytest

from privrl.errors import InvalidParameterError
from privrl.experiments.claimsets import Case, ClaimSpec, Outcome, evaluate, paper_source
from privrl.experiments.verdicts import compare_curves, decide, per_seed, threshold


def _frame(a: float, b: float) -> pd.DataFrame:
    rows = [{"curve": name, "seed": s, "value": mean + 0.01 * s}
            for name, mean in (("a", a), ("b", b)) for s in range(5)]
    return pd.DataFrame(rows)


def _curves(df):
    return {"a": per_seed(df[df["curve"] == "a"]), "b": per_seed(df[df["curve"] == "b"])}


LESS = ClaimSpec("A is below B.", rule=partial(compare_curves, claim="less", test="welch"), inputs=_curves,
                 **paper_source("§1", "A is smaller"), paper_value="A < B")


def test_a_spec_is_a_verdict_function_with_its_arguments_on_what_it_reads():
    (low,) = evaluate([LESS], _frame(1.0, 2.0))
    (high,) = evaluate([LESS], _frame(2.0, 1.0))
    assert (low.verdict, high.verdict) == ("holds", "fails")
    assert low.claim == "A is below B." and low.measured.startswith("A 1.02")    # the verdict's detail
    assert (low.source, low.quote, low.where, low.paper_value, low.headline) == ("paper", "A is smaller", "§1",
                                                                                "A < B", False)


def _per_curve(df):
    return [Case({"values": per_seed(df[df["curve"] == c])}, {"curve": c}) for c in sorted(df["curve"].unique())]


def _positive(values) -> Outcome:
    mean = float(values.mean())
    return Outcome(decide(mean > 1.5, f"mean {mean:.3g}"), values={"tight_value": f"{mean:.3g}",
                                                                    "headline": mean > 1.5})


PER_CURVE = ClaimSpec("Curve {curve} is above 1.5 (over {{all seeds}}).", rule=_positive, inputs=_per_curve,
                      tight_value="not measured")


def test_one_claim_per_case_in_order_with_the_statement_filled_and_computed_cells():
    first, second = evaluate([PER_CURVE], _frame(1.0, 2.0))
    assert (first.claim, second.claim) == ("Curve a is above 1.5 (over {all seeds}).",
                                           "Curve b is above 1.5 (over {all seeds}).")
    assert (first.verdict, second.verdict) == ("fails", "holds")
    assert (first.tight_value, second.tight_value) == ("1.02", "2.02") and second.headline and not first.headline
    assert first.source == "privrl" and not first.quote


def test_no_inputs_no_claim_and_specs_evaluate_in_order():
    nothing = ClaimSpec("Never made.", rule=lambda: decide(True), inputs=lambda df: None)
    claims = evaluate([PER_CURVE, nothing, LESS], _frame(1.0, 2.0))
    assert [c.claim for c in claims] == ["Curve a is above 1.5 (over {all seeds}).",
                                         "Curve b is above 1.5 (over {all seeds}).", "A is below B."]


def test_an_outcome_sets_the_measured_text():
    spec = ClaimSpec("C.", rule=lambda: Outcome(decide(None, "detail", reason="one seed"), "what was measured"),
                     inputs=lambda df: {})
    (claim,) = evaluate([spec], None)
    assert (claim.verdict, claim.reason, claim.measured) == ("undecided", "one seed", "what was measured")


def test_mistakes_in_a_declaration_are_errors():
    with pytest.raises(KeyError):                          # a placeholder without its label
        evaluate([ClaimSpec("Curve {curve}.", rule=lambda: decide(True), inputs=lambda df: {})], None)
    with pytest.raises(InvalidParameterError, match="quote"):   # a paper's claim needs its words, when declared
        ClaimSpec("P.", rule=lambda: decide(True), inputs=lambda df: {}, source="paper", where="§2")
    with pytest.raises(InvalidParameterError, match="Verdict or an Outcome"):
        evaluate([ClaimSpec("R.", rule=lambda: True, inputs=lambda df: {})], None)
    with pytest.raises(InvalidParameterError, match="source"):
        ClaimSpec("S.", rule=lambda: decide(True), inputs=lambda df: {}, source="someone")
    with pytest.raises(InvalidParameterError, match="values"):
        Outcome(decide(True), values={"quote": "not a value cell"})


# --------------------------------------------------------------------------- robustness
def _noisy(a_mean: float, b_mean: float, spread: float = 1.0):
    """Two curves of 6 seeds with the given means and a fixed spread (seeds' offsets −2.5 … 2.5)."""
    offsets = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]
    return {"a": pd.Series([a_mean + spread * o for o in offsets]),
            "b": pd.Series([b_mean + spread * o for o in offsets])}


def test_a_clear_verdict_is_robust():
    (claim,) = evaluate([LESS], _frame(1.0, 2.0))
    assert claim.verdict == "holds" and claim.robustness == ""


def test_a_verdict_that_a_stricter_level_changes_is_fragile_with_both_outcomes():
    # Welch t on 6 + 6 seeds: Δ = −1.8, SE ≈ 1.08, t ≈ −1.67, dof 10: p ≈ 0.063 — undecided at α = 0.05,
    # holds at α = 0.10; mean ± 1 SE intervals ([−0.78, 1.38] vs [1.02, 3.18]) still overlap
    spec = ClaimSpec("A is below B.", rule=partial(compare_curves, claim="less", test="welch"),
                     inputs=lambda d: d)
    (claim,) = evaluate([spec], _noisy(0.3, 2.1))
    assert claim.verdict == "undecided"
    assert claim.robustness.startswith("fragile: ") and "holds under α = 0.10" in claim.robustness
    assert "α = 0.01" not in claim.robustness   # a stricter level leaves it undecided: no change, not listed


def test_a_rule_threshold_moves_by_its_margin_only_in_the_perturbed_settings():
    from privrl.experiments.verdicts import Rules, threshold, under

    assert threshold(0.75, margin=0.1) == 0.75
    with under(Rules("x", threshold_shift=-1.0)):
        assert threshold(0.75, margin=0.1) == pytest.approx(0.65)
    with under(Rules("x", threshold_shift=1.0)):
        assert threshold(0.75, margin=0.1) == pytest.approx(0.85)


SHARE = ClaimSpec("Most comparisons hold.", rule=lambda frac: decide(frac >= threshold(0.75, margin=0.1)),
                  inputs=lambda d: {"frac": d})


def test_the_share_rule_of_a_fraction_is_fragile_at_its_margin():
    (at_70,) = evaluate([SHARE], 0.70)
    assert at_70.verdict == "fails" and at_70.robustness == "fragile: holds under thresholds − margin"
    (at_95,) = evaluate([SHARE], 0.95)
    assert at_95.verdict == "holds" and at_95.robustness == ""


def test_the_report_cell_shows_the_fragility():
    from privrl.experiments._markdown import _verdict_cell

    fixed = ClaimSpec("x", rule=lambda frac: decide(frac >= 0.75), inputs=lambda d: {"frac": d})
    (robust,) = evaluate([fixed], 0.7)
    assert _verdict_cell(robust) == "**fails**"
    (fragile,) = evaluate([SHARE], 0.7)
    assert _verdict_cell(fragile) == "**fails** (fragile: holds under thresholds − margin)"


def test_the_regret_slopes_follow_the_rules_fit_window():
    from privrl.experiments.verdicts import Rules, under
    from privrl.linear_mixture.claims import _slope

    # regret ∝ k up to k = 1000, then ∝ √k: the last decade (k ≥ 1000) fits 0.5, a window from k ≥ 500 more
    k = pd.Index([100, 200, 500, 1000, 2000, 5000, 10000])
    curve = pd.Series([float(x) if x <= 1000 else 1000 * (x / 1000) ** 0.5 for x in k], index=k)
    assert _slope(curve) == pytest.approx(0.5)
    with under(Rules("x", fit_window=0.05)):
        assert _slope(curve) > 0.55
