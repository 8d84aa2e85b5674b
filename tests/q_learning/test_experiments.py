"""The Wang & Hegde experiments (Figures 1, 2 and the frontier), their figures and claims, and
``privrl fit dp-q-learning``."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from privrl.experiments.registry import get_experiment
from privrl.experiments.runner import plan_runs
from privrl.experiments.spec import RunContext
from privrl.q_learning import claims as wang_claims
from privrl.q_learning import experiments as wang


def _ctx(seed=0):
    return RunContext("wang2019-fig2a", 0, seed, "smoke", np.random.default_rng(seed))


def test_paper_seeds_per_setting_follow_the_seed_rule(monkeypatch):
    """The paper's 10 seeds everywhere at paper scale but the settings of the close comparisons, which
    run the seed rule's count on their pilot (privrl.q_learning.seeds: the variance needed, within
    the 10 CPU-minute cap) — in the regular run those of its share, under make reproduce-decide every
    one; every setting of a smaller scale runs the scale's count."""
    from privrl.experiments.seeding import REGULAR_EXTRA_CPU_SECONDS, SEEDS_ENV, plan_seeds
    from privrl.q_learning import seeds as rule

    monkeypatch.delenv(SEEDS_ENV, raising=False)
    regular = {k: (p.seeds if k in rule.REGULAR else 10) for k, p in rule.PLANS.items()}
    assert 0 < sum(rule.PLANS[k].extra_seconds for k in rule.REGULAR) <= REGULAR_EXTRA_CPU_SECONDS
    assert all(p.extra_seconds >= min(rule.PLANS[k].extra_seconds for k in rule.REGULAR)
               for k, p in rule.PLANS.items() if k not in rule.REGULAR)   # the cheapest first

    def counts(eid, scale="paper"):
        exp = get_experiment(eid)
        return [(s, exp.seeds_for(s, scale)) for s in exp.settings_for(scale)], exp

    fig1, exp = counts("wang2019-fig1")
    keys = {(s["config"], s["sigma"], s["reset"]) for s, _ in fig1}
    for claim, (reads, pilot) in rule.FIG1_PILOTS.items():
        assert set(reads) <= keys, claim                          # every pilot names settings that exist
        assert rule.fig1_plan(claim) == plan_seeds(pilot, 10)
    for s, n in fig1:
        key = (s["config"], s["sigma"], s["reset"])
        assert n == max([10, *(regular[c] for c, (reads, _) in rule.FIG1_PILOTS.items() if key in reads)])
    assert exp.n_seeds("paper") == max(n for _, n in fig1)
    runs = plan_runs("wang2019-fig1", "paper")
    assert len(runs) == sum(n for _, n in fig1)
    for eid, eps in (("wang2019-fig2a", 0.9), ("wang2019-fig2b", 0.45)):
        fig2, exp = counts(eid)
        found = {(eps, s["config"], s["algorithm"], s["calibration"]) for s, _ in fig2}
        assert {k for k in rule.FIG2_PILOTS if k[0] == eps} <= found
        for s, n in fig2:
            key = (eps, s["config"], s["algorithm"], s["calibration"])
            assert n == regular.get(key, 10)
            assert key in rule.PLANS or s["algorithm"] not in ("input_perturbation", "dpsgd")
            with monkeypatch.context() as m:       # make reproduce-decide: the rule's count
                m.setenv(SEEDS_ENV, "decide")
                assert rule.fig2_seeds(eps)(s, "paper") == (rule.PLANS[key].seeds if key in rule.PLANS else 10)
        assert exp.n_seeds("paper") == max(n for _, n in fig2)
    assert {n for _, n in counts("frontier-q-learning")[0]} == {10}
    for eid in ("wang2019-fig1", "wang2019-fig2a"):
        assert {n for _, n in counts(eid, "quick")[0]} == {3}


def test_registered_and_settings():
    for eid in ("wang2019-fig1", "wang2019-fig2a", "wang2019-fig2b", "frontier-q-learning"):
        exp = get_experiment(eid)
        assert exp.plot is not None and exp.claims is not None
        for scale in ("smoke", "quick", "paper"):
            assert exp.settings_for(scale)
        assert exp.n_seeds("quick") >= 3 and exp.n_seeds("paper") >= 10
    paper = get_experiment("wang2019-fig1").settings_for("paper")
    assert {s["sigma"] for s in paper} == set(wang.SIGMAS)
    assert {s["reset"] for s in paper} == set(wang.RESETS)
    assert {s["config"] for s in paper} == {"paper", "reference"}
    assert {s["n_samples"] for s in paper} == {5000}
    fig2 = get_experiment("wang2019-fig2b").settings_for("paper")
    pairs = {(s["config"], s["algorithm"], s["calibration"]) for s in fig2 if s["algorithm"] != "non_private"}
    for config in ("paper", "reference"):   # the three baselines under paper and tight calibration
        for algo in ("input_perturbation", "dpsgd", "functional"):
            assert {(config, algo, "paper"), (config, algo, "tight")} <= pairs
        assert (config, "balle", "sound") in pairs
    assert ("paper", "functional", "sound") in pairs


def test_run_functional_reference_config_is_uncertified_with_the_calibrated_sigma():
    res = wang.run({"algorithm": "functional", "config": "reference", "epsilon": 0.9, "n_samples": 150,
                    "hidden": [4], "calibration": "paper"}, _ctx())
    cal = wang.functional_calibration(0.9, "paper", 150)
    assert res.calibration == "paper" and res.ledger is None and res.extra["certified"] is False
    assert res.rows[0]["noise_std"] == pytest.approx(cal.sigma, rel=1e-12)
    assert "[uncertified]" in res.rows[0]["label"]


def test_run_paper_config_records_the_true_spend_of_the_paper_calibration():
    res = wang.run({"algorithm": "functional", "config": "paper", "epsilon": 0.9, "n_samples": 5000,
                    "hidden": [4], "calibration": "paper"}, _ctx())
    assert res.extra["certified"] is False and "[uncertified]" in res.rows[0]["label"]
    assert res.ledger.epsilon(1e-4) > 100 * 0.9      # what sigma = 0.3132 truly spends


def test_run_refusal_is_recorded():
    res = wang.run({"algorithm": "functional", "config": "paper", "epsilon": 0.45, "n_samples": 5000,
                    "hidden": [4], "calibration": "tight"}, _ctx())
    assert res.rows[0]["metric"] == "certification_refused" and res.extra["refused"] is True
    assert "cannot certify" in res.extra["reason"]


def test_run_baseline_is_certified_at_the_budget():
    res = wang.run({"algorithm": "input_perturbation", "config": "reference", "epsilon": 0.9,
                    "n_samples": 150, "hidden": [4], "calibration": "tight"}, _ctx())
    assert 0.99 * 0.9 <= res.ledger.epsilon(1e-4) <= 0.9


def _curves(specs, seeds=4, episodes=100):
    rows = []
    for keys, first, last in specs:
        for seed in range(seeds):
            for step in range(1, episodes + 1):
                v = (first if step <= 10 else last) + 0.3 * seed
                rows.append({"metric": "return", "seed": seed, "step": 50 * step, "value": v, **keys})
    return pd.DataFrame(rows)


def test_claims_fig1_monotone_detection():
    specs = [({"reset": "iteration", "config": "reference", "sigma": s}, lvl, lvl)
             for s, lvl in ((0.0, 20.0), (0.2, 19.5), (0.4, 15.0), (1.0, 9.0))]
    df = _curves(specs, seeds=3, episodes=20)
    claims = wang.claims_fig1(df.assign(value=df["value"] + np.random.default_rng(0).normal(0, 0.05, len(df))))
    assert claims[0].verdict == "holds"
    bad = df.assign(value=np.where(df["sigma"] == 1.0, 30.0, df["value"]))
    assert wang.claims_fig1(bad)[0].verdict == "fails"
    # limited sub-optimality needs paper scale: undecided below it, decided at it
    quick = wang.claims_fig1(df.assign(scale="quick"))[1]
    paper = wang.claims_fig1(df.assign(scale="paper"))[1]
    assert quick.verdict == "undecided" and quick.reason == "needs paper scale"
    assert paper.verdict == "holds" and paper.headline
    # Algorithm 1's loop: the non-private learner walks into a wall; nothing about noise is decided
    wall = df.assign(value=np.where(df["sigma"] == 0.0, 1.0, df["value"]), scale="paper")
    assert all(c.verdict == "undecided" and "random play" in c.reason for c in wang.claims_fig1(wall))


def test_claims_fig2_functional_vs_baselines_and_no_improvement():
    specs = []
    for cal in ("paper", "tight"):
        specs += [({"config": "reference", "algorithm": "functional", "calibration": cal, "n_samples": 5000},
                   12.0, 19.0),
                  ({"config": "reference", "algorithm": "input_perturbation", "calibration": cal, "n_samples": 5000},
                   6.0, 6.1),
                  ({"config": "reference", "algorithm": "dpsgd", "calibration": cal, "n_samples": 5000}, 10.0, 10.2)]
    df = _curves(specs)
    df["value"] += np.random.default_rng(1).normal(0, 0.1, len(df))
    claims = wang.claims_fig2(0.45)(df)
    head = claims[0]
    assert head.verdict == "fails" and head.headline and head.paper_value == "sigma = 0.74"
    assert "0.6038" in head.paper_calibration_value and head.tight_value.startswith("refused")
    assert "T = 5000" in head.measured and "REFUSES" in head.measured
    assert head.source == "paper" and head.where == "App. E.3" and "σ=0.74" in head.quote
    outperform = [c for c in claims if "significantly outperforms" in c.claim]
    # the one rule on the winner: the baselines (6.1, 10.2) are no better than random play (10.86), the
    # functional curve is: it outperforms them
    assert [c.verdict for c in outperform] == ["holds", "holds"]
    assert outperform[0].paper_calibration_value and outperform[1].tight_value
    flat = [c for c in claims if "does not improve" in c.claim]
    assert len(flat) == 4 and all(c.verdict == "holds" and c.source == "paper" for c in flat)
    # baselines that learn: the comparison is decided
    learning = df.assign(value=np.where(df["algorithm"] == "dpsgd", df["value"] + 5.0,
                                        np.where(df["algorithm"] == "input_perturbation", df["value"] + 8.0,
                                                 df["value"])))
    outperform = [c for c in wang.claims_fig2(0.45)(learning) if "significantly outperforms" in c.claim]
    assert [c.verdict for c in outperform] == ["holds", "holds"]
    # a functional-noise curve at the level of random play, below baselines that learn: the claim fails
    # (the better side learns); below baselines that do not learn either: a win by noise decides nothing
    random_like = learning.assign(value=np.where(df["algorithm"] == "functional", 10.9, learning["value"]))
    claims = wang.claims_fig2(0.45)(random_like)
    assert all(c.verdict == "fails" for c in claims if "significantly outperforms" in c.claim)
    stuck = df.assign(value=np.where(df["algorithm"] == "functional", 10.9, df["value"]))
    claims = wang.claims_fig2(0.45)(stuck)
    assert all(c.verdict == "undecided" and "random play" in c.reason
               for c in claims if "significantly outperforms" in c.claim)
    # at ε = 0.9 the paper does not say the baselines stay flat: privrl's claim there
    assert all(c.source == "privrl" for c in wang.claims_fig2(0.9)(df) if "does not improve" in c.claim)


def test_theorem5_is_computed_from_its_side_condition():
    readings = wang_claims._theorem5_readings(0.9, 5000)
    at23 = next(r for r in readings if r["k"] == 23.0 and r["source"] == "printed")
    assert at23["lhs"] == 46.0 and at23["rhs"] == pytest.approx(130.9, abs=0.1)     # App. E.3's σ = 0.32
    assert wang_claims.theorem5_verdict(readings).verdict == "fails"                 # violated under every reading
    # a σ small enough for k = 23 but not for k = 2.3 (the paper does not say which): undecided
    mixed = wang_claims._theorem5_readings(0.9, 150)
    assert {r["holds"] for r in mixed} == {True, False}
    assert wang_claims.theorem5_verdict([r for r in mixed if r["source"] != "printed"]).verdict == "undecided"
    # at a budget the paper prints no σ for, with a tiny printed-formula σ: holds under every reading
    assert wang_claims.theorem5_verdict(wang_claims._theorem5_readings(1e4, 150)).verdict == "holds"


def test_claims_fig2_quote_the_calibration_of_the_run_size():
    df = _curves([({"config": "reference", "algorithm": "functional", "calibration": "paper", "n_samples": 1000},
                   5.0, 5.0)], seeds=1, episodes=20)
    head = wang.claims_fig2(0.9)(df)[0]
    assert "T = 1000" in head.measured
    assert f"{wang.functional_calibration(0.9, 'paper', 1000).sigma:.4f}" in head.paper_calibration_value


def _fig1_frame():
    rows = [{"metric": "return", "config": "reference", "sigma": s, "reset": r, "seed": seed, "step": 50 * k,
             "value": 10.0 + k + s, "calibration": "none"}
            for s, r in ((0.0, "iteration"), (0.4, "iteration"), (0.4, "never")) for seed in (0, 1)
            for k in range(1, 4)]
    return pd.DataFrame(rows)


def test_figure_fig1_draws_each_curve_with_its_epsilons():
    fig = wang.figure_fig1(_fig1_frame())
    ax, finals = fig.axes[0], fig.axes[1]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    paper_eps, tight_eps = wang.sigma_epsilons(0.4)
    assert f"sigma = 0.4 (ε paper {paper_eps:.2g}, tight {tight_eps:.2g})" in labels
    assert "sigma = 0 (non-private)" in labels and "shaded: mean ± 1 std over 2 seeds" in labels
    assert wang.RANDOM_LABEL in labels     # the reference the verdicts use is drawn
    means = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    np.testing.assert_allclose(means["sigma = 0 (non-private)"], [11.0, 12.0, 13.0])
    # the second panel: the second half's return per sigma, one line per reset schedule, and the authors' code
    final_labels = [t.get_text() for t in finals.get_legend().get_texts()]
    assert any(t.startswith("fresh path per update") for t in final_labels)
    assert any(t.startswith("never reset") for t in final_labels)
    assert any(t.startswith("authors' released code") for t in final_labels)
    # the legend sits outside the data
    assert ax.get_legend().get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_claims_fig1_compare_with_the_authors_code():
    """privrl's claim on the authors' released code: decided at σ where both learn, undecided where
    either plays like random (σ = 1: the authors' 11.25), against the logged seeds of their code (Welch t)."""
    rng = np.random.default_rng(3)
    rows = []
    for sigma, level in ((0.0, 20.3), (0.2, 19.5), (0.4, 14.0), (1.0, 9.0)):
        for seed in range(40):
            value = level + rng.normal(0, 0.8)
            rows += [{"metric": "return", "config": "reference", "sigma": sigma, "seed": seed, "step": 50 * k,
                      "reset": "iteration" if sigma == 0 else "episode", "value": value, "scale": "paper"}
                     for k in range(1, 101)]
    claims = {c.claim.split("sigma = ")[1].split(":")[0]: c for c in wang.claims_fig1(pd.DataFrame(rows))
              if "authors' released code" in c.claim}
    assert claims["0"].verdict == "holds" and claims["0.4"].verdict == "fails"
    assert claims["1"].verdict == "undecided" and "random play" in claims["1"].reason
    assert all(c.source == "privrl" for c in claims.values()) and claims["0.4"].headline
    assert "authors' code 17.85 ± 0.48 (5 seeds)" in claims["0.4"].paper_calibration_value
    quick = [c for c in wang.claims_fig1(pd.DataFrame(rows).assign(scale="quick")) if "authors'" in c.claim]
    assert all(c.verdict == "undecided" and c.reason == "needs paper scale" for c in quick)


def test_figure_fig2_names_refused_curves_and_keeps_colours():
    base = {"config": "paper", "n_samples": 5000, "metric": "return"}
    rows = [{**base, "algorithm": a, "calibration": c, "label": f"{a}-{c}", "seed": s, "step": 50 * k, "value": 1.0}
            for a, c in (("functional", "tight"), ("input_perturbation", "paper")) for s in (0, 1) for k in (1, 2)]
    rows.append({**base, "metric": "certification_refused", "algorithm": "functional", "calibration": "sound",
                 "label": "functional noise (Alg. 1) [sound, refused]", "value": 1.0, "seed": 0})
    import matplotlib.pyplot as plt

    from privrl.experiments.plots import curve_colors

    fig = wang.figure_fig2(pd.DataFrame(rows), 0.45, "b")
    ax = fig.axes[0]
    assert "ε = 0.45, δ = 1e-4" in ax.get_title() and "T = 5000" in ax.get_title()
    notes = [t.get_text() for t in ax.texts]
    assert any("refuses" in t and "functional noise (Alg. 1) [sound]" in t for t in notes)
    colors = curve_colors([wang.LABELS[a] for a in ("non_private", *wang.ALGORITHMS)])
    line = next(line for line in ax.get_lines() if line.get_label() == "functional-tight")
    assert line.get_color() == colors[wang.LABELS["functional"]] and line.get_linestyle() == "-"
    plt.close(fig)


def test_frontier_settings_run_and_registration():
    from privrl.experiments.frontier import get_frontier

    fr = get_frontier("dp-q-learning")
    assert fr.experiment_id == "frontier-q-learning" and fr.metric == "return" and not fr.lower_is_better
    assert fr.env_key == "env"
    settings = wang.frontier_settings("paper")
    assert {s["calibration"] for s in settings} == {"paper", "sound", "tight", "none"}
    assert {s["n_samples"] for s in settings} == {5000}
    assert {s["epsilon"] for s in settings if s["calibration"] == "tight"} == set(wang.FRONTIER_EPSILONS)
    ok = wang.run_frontier({"algorithm": "dp-q-learning", "calibration": "tight", "epsilon": 20.0, "n_samples": 640,
                            "hidden": [4], "env": "privrl/CenterWalk-v0"}, _ctx())
    assert ok.calibration == "tight" and ok.rows[0]["metric"] == "return" and ok.extra["certified"] is True
    assert 0.99 * 20 <= ok.ledger.epsilon(1e-4) <= 20
    refused = wang.run_frontier({"algorithm": "dp-q-learning", "calibration": "sound", "epsilon": 0.45,
                                 "n_samples": 5000, "hidden": [4], "env": "privrl/CenterWalk-v0"}, _ctx())
    assert refused.extra["refused"] is True and refused.rows[0]["epsilon"] == 0.45
    ref = wang.run_frontier({"algorithm": "q-learning", "calibration": "none", "epsilon": math.inf, "n_samples": 150,
                             "hidden": [4], "env": "privrl/CenterWalk-v0"}, _ctx())
    assert ref.calibration == "none" and ref.ledger is None


def test_frontier_claims():
    rows = [{"metric": "return", "calibration": cal, "epsilon": e, "seed": s, "value": v + 0.1 * s, "n_samples": 5000}
            for cal, e, v in (("tight", 0.9, 10.0), ("tight", 20.0, 10.5), ("none", math.inf, 1.0)) for s in range(3)]
    claims = wang.frontier_claims(pd.DataFrame(rows))
    assert claims[0].verdict == "holds" and claims[0].headline   # tight certifies more, with less noise
    assert "0.9" in claims[0].tight_value and "0.45" not in claims[0].tight_value
    # the non-private learner of the same loop (1.0) plays worse than at random: nothing to expect
    assert claims[1].verdict == "undecided" and "the non-private learner of the same loop" in claims[1].reason
    learner = pd.DataFrame([dict(r, value=18.0 + 0.1 * r["seed"]) if r["calibration"] == "none" else r for r in rows])
    assert wang.frontier_claims(learner)[1].verdict == "fails"     # it learns; no budget beats random play
    better = pd.DataFrame([dict(r, value=15.0 + 0.1 * r["seed"]) if r["epsilon"] == 20.0 else r
                           for r in learner.to_dict("records")])
    assert wang.frontier_claims(better)[1].verdict == "holds"


def test_fit_cli_writes_release_and_certificate(tmp_path):
    from privrl.cli import main
    out = tmp_path / "fit"
    code = main(["fit", "dp-q-learning", "--env", "privrl/CenterWalk-v0", "--epsilon", "0.9", "--delta", "1e-4",
                 "--n-samples", "192", "--grid", "11", "--out", str(out), "--seed", "0"])
    assert code in (0, None)
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["privacy_unit"] == "reward_function" and cert["neighboring"] == "sup_norm_one"
    assert cert["epsilon_spent"] <= 0.9 and cert["calibration"] == "tight"   # the estimator's declared default
    arrays = np.load(out / "result.npz")
    assert arrays["q_released"].shape == (11, 2)
    assert main(["fit", "dp-q-learning", "--env", "privrl/CenterWalk-v0", "--epsilon", "0.45",
                 "--delta", "1e-4", "--n-samples", "5000", "--calibration", "sound", "--out", str(tmp_path / "x")]) != 0


def test_run_balle_baseline_labelled():
    res = wang.run({"algorithm": "balle", "config": "reference", "epsilon": 0.9, "n_samples": 500,
                    "hidden": [4], "calibration": "sound"}, _ctx())
    assert res.ledger is None and "not DP under the reward-function model" in res.rows[0]["label"]
    assert len(res.rows) == 10


@pytest.mark.parametrize("eid", ["wang2019-fig1", "wang2019-fig2b", "frontier-q-learning"])
def test_run_batch_gives_each_run_what_run_gives(eid):
    """The runner's lockstep groups (all seeds of a loop: ``batch_key``) give every run the rows,
    ledger ε and extras of the run executed alone (refusals included)."""
    from privrl.experiments.runner import execute_run, execute_runs, group_runs, plan_runs

    specs = plan_runs(eid, "smoke", seeds=[0, 1])
    groups = group_runs(specs)
    assert len(groups) < len(specs)
    for group in groups:
        for together in execute_runs(group):
            alone = execute_run(together.spec)
            assert together.status == alone.status == "ok"
            assert together.manifest.get("batch_size", 1) == len(group)
            assert together.rows == alone.rows
            for key in ("epsilon_spent", "extra", "calibration", "n_events"):
                assert together.manifest[key] == alone.manifest[key], key


def test_the_authors_numbers_are_those_of_the_committed_log():
    """AUTHORS_RUNS is what benchmarks/authors_code.py logged for the authors' released code (no
    unlogged number): every (sigma, seed) of the log, to the 4 decimals kept."""
    import json
    from pathlib import Path

    from privrl.q_learning.claims import AUTHORS_RUNS, AUTHORS_SEEDS

    log = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "authors_code.jsonl"
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    runs = {}
    for r in rows:
        if r["name"] == "authors-code-run":
            runs.setdefault(r["sigma"], {})[r["seed"]] = round(r["mean_return_51_100"], 4)
    assert {s: tuple(v[k] for k in sorted(v)) for s, v in runs.items()} == AUTHORS_RUNS
    assert all(len(v) == AUTHORS_SEEDS for v in AUTHORS_RUNS.values())
    assert rows[0]["name"] == "authors-code-source" and rows[0]["commit"].startswith("db658cc")
