"""The ``zhou2022-regret`` experiment and ``privrl fit linopt-vi|linopt-po``."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from privrl.cli import main
from privrl.experiments import get_experiment
from privrl.experiments.spec import RunContext
from privrl.linear_mixture.experiments import checkpoints, fitted_slopes


def test_settings_cover_the_issue_grid():
    exp = get_experiment("zhou2022-regret")
    paper = exp.settings_for("paper")
    assert {s["K"] for s in paper} == {10**5} and exp.n_seeds("paper") >= 10 and exp.n_seeds("quick") >= 3
    assert {s["delta"] for s in paper} == {1e-5}
    combos = {(s["privatizer"], s["epsilon"], s["calibration"]) for s in paper}
    assert combos == {("none", "inf", "none"), ("central", 1.0, "tight"), ("central", 10.0, "tight"),
                      ("local", 1.0, "tight"), ("local", 10.0, "tight"), ("central", 1.0, "paper")}
    assert {s["env"] for s in paper} == {"E1", "E2"} and {s["constants"] for s in paper} == {"theory", "practical"}
    assert {s["algorithm"] for s in paper} == {"VI", "PO"}
    json.dumps(paper)
    frontier = get_experiment("frontier-linear-mixture").settings_for("paper")
    assert {(s["calibration"], s["epsilon"]) for s in frontier} == {
        (c, e) for c in ("paper", "sound", "tight") for e in (1.0, 10.0, 100.0)} | {("none", math.inf)}
    assert {s["K"] for s in frontier} == {20_000}
    # the frontier is the defaults' (tight: the BLT factorization), the paper's figure pins the paper's tree
    assert {s["counter"] for s in frontier} == {"auto"} and all("counter" not in s for s in paper)


def test_run_records_regret_bounds_and_ledger():
    exp = get_experiment("zhou2022-regret")
    setting = next(s for s in exp.settings_for("smoke") if s["privatizer"] == "central"
                   and s["constants"] == "practical" and s["calibration"] == "tight")
    ctx = RunContext(exp.id, 0, 0, "smoke", np.random.default_rng(0))
    res = exp.run(setting, ctx)
    df = pd.DataFrame(res.rows)
    reg = df[df.metric == "cumulative_regret"].sort_values("episodes")
    assert list(reg.episodes) == checkpoints(setting["K"])
    assert np.all(np.diff(reg.value) >= -1e-12)
    assert (df[df.metric == "regret_bound"].value > 0).all()
    spent = res.ledger.epsilon(1e-5)
    assert 0.99 * setting["epsilon"] <= spent <= setting["epsilon"]          # tight: the whole budget
    assert res.privacy_unit.value == "user_episode" and res.calibration == "tight"


def _synthetic(scale, n_seeds=3, stuck=5.0):
    """Curves c·k^p·(1 + 0.01·seed) on k ∈ checkpoints(10⁴), H = 5 (trivial bound K·H = 5·10⁴), a
    bound 100·k, a stuck learner losing ``stuck`` per episode; both constant sets alike."""
    rows = []
    ks = np.array(checkpoints(10**4, n=10))
    curves = (("UCRL-VTR", "none", "inf", "none", 0.5), ("LinOpt-VI JDP ε=1", "central", 1.0, "tight", 1.0),
              ("LinOpt-VI JDP ε=10", "central", 10.0, "tight", 0.5),
              ("LinOpt-VI LDP ε=10", "local", 10.0, "tight", 0.75))
    for seed in range(n_seeds):
        for label, privatizer, eps, calibration, power in curves:
            for constants in ("theory", "practical"):
                for k in ks:
                    base = dict(env="E2", constants=constants, label=label, algorithm="VI", privatizer=privatizer,
                                epsilon=eps, seed=seed, episodes=int(k), T_per_episode=5, calibration=calibration,
                                scale=scale)
                    rows.append({**base, "metric": "cumulative_regret", "value": 3.0 * k**power * (1 + 0.01 * seed)})
                    rows.append({**base, "metric": "regret_bound", "value": 100.0 * k})
                rows.append({**base, "metric": "stuck_regret_per_episode", "value": stuck})
    return pd.DataFrame(rows)


def test_fitted_slopes_and_claims_on_synthetic_curves(tmp_path):
    """The verdicts follow from the curves' construction (derivation per claim below)."""
    df = _synthetic("paper")
    slopes = fitted_slopes(df)
    got = dict(zip(slopes[slopes.constants == "practical"].label, slopes[slopes.constants == "practical"].slope))
    assert got["UCRL-VTR"] == pytest.approx(0.5, abs=1e-9)
    assert got["LinOpt-VI LDP ε=10"] == pytest.approx(0.75, abs=1e-9)
    exp = get_experiment("zhou2022-regret")
    verdicts = [c.verdict for c in exp.claims(df)]
    # 1. UCRL-VTR's per-seed slopes are all 0.5: the interval [0.5, 0.5] contains 0.5 and excludes 0.75, and
    #    its final regret 3·10⁴^0.5 = 300 is far below the stuck learner's 5·10⁴: holds.
    # 2. JDP ε=1 has slope 1.0 > 0.5 + 1/ln(KH) (final 3·10⁴, not within 10% of the stuck 5·10⁴, so
    #    decidable): fails.
    # 3. JDP ε=10 (3k^0.5) lies below ε=1 (3k) on every seed; the paired differences vary with the
    #    seed factor, so the paired t test is significant: holds.
    # 4. LDP ε=10 (3k^0.75) lies above JDP ε=10 (3k^0.5) on every seed: holds.
    # 5. theory constants: every private curve ends far below the stuck learner's regret: not stuck, fails.
    # 6. the bound 100·K = 10⁶ ≥ K·H = 5·10⁴ for every curve: holds (vacuous).
    assert verdicts == ["holds", "fails", "holds", "holds", "fails", "holds"]
    claims = exp.claims(df)
    assert claims[0].headline and claims[0].paper_value and "0.50" in claims[0].tight_value
    # below paper scale every slope and ε claim is undecided, saying why
    quick = exp.claims(_synthetic("quick"))
    assert [c.verdict for c in quick[:2]] == ["undecided", "undecided"]
    assert all("paper scale" in c.reason for c in quick[:2] + quick[4:5])
    one = exp.claims(_synthetic("paper", n_seeds=1))
    assert all(c.verdict == "undecided" for c in one[:5]) and "one seed" in one[2].reason
    paths = exp.plot(df, tmp_path)
    assert any(p.suffix == ".png" for p in paths)
    table = (tmp_path / "zhou2022-slopes.md").read_text()
    assert "| E2 | practical | none | UCRL-VTR | 10000 | 0.500 [0.500, 0.500] |" in table
    # the one rule: a learner no better than the stuck learner decides nothing (ε=1's final 3·10⁴ = 3·K)
    stuck = exp.claims(_synthetic("paper", stuck=3.0))
    assert stuck[1].verdict == "undecided" and "no better than the stuck learner" in stuck[1].reason
    # ε = 10 beating the stuck ε = 1 is a result (the rule checks the better side): holds
    assert stuck[2].verdict == "holds" and stuck[4].verdict == "fails"


@pytest.mark.parametrize("algorithm,privatizer", [("linopt-vi", "central"), ("linopt-po", "local")])
def test_cli_fit_writes_curve_and_certificate(tmp_path, algorithm, privatizer):
    out = tmp_path / "fit"
    code = main(["fit", algorithm, "--env", "privrl/RandomLinearMixture-v0", "--epsilon", "1", "--delta", "1e-5",
                 "--privatizer", privatizer, "--episodes", "60", "--out", str(out), "--seed", "0"])
    assert code == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"] == ("JDP" if privatizer == "central" else "LDP")
    assert cert["privacy_unit"] == "user_episode"
    assert cert["calibration"] == "tight"   # the estimator's declared default
    assert 0 < cert["epsilon_spent"] <= 1.0
    arrays = np.load(out / "result.npz")
    assert arrays["cumulative_regret"].shape == (60,)
    summary = json.loads((out / "result.json").read_text())["summary"]
    assert summary["paper_epsilon_closed_form"] == pytest.approx(1 + 1 / (16 * 5 * math.log(20 / 1e-5)))


def test_cli_fit_rejects_data_and_rho(tmp_path, capsys):
    assert main(["fit", "linopt-vi", "--env", "privrl/RandomLinearMixture-v0", "--rho", "1", "--episodes", "5",
                 "--out", str(tmp_path / "a")]) != 0
    assert "rho" in capsys.readouterr().err


def test_run_batch_and_the_runner_groups_give_each_run_exactly_its_own_result(tmp_path):
    """Work shared across the seeds and settings of the sweep (one lockstep batch) changes no result:
    ``run_batch`` over every smoke setting × 2 seeds equals ``run`` one at a time, row for row and
    ledger for ledger, and the runner's grouped execution writes the same rows as ``execute_run``."""
    from privrl.experiments.runner import execute_run, execute_runs, group_runs, plan_runs, run_seed

    exp = get_experiment("zhou2022-regret")
    specs = plan_runs(exp.id, "smoke", [0, 1])
    groups = group_runs(specs)
    assert sorted(len(g) for g in groups) == [len(specs) // 2] * 2     # one task per algorithm
    assert all(len({s.params["algorithm"] for s in g}) == 1 for g in groups)
    ctxs = [RunContext(exp.id, s.setting, s.seed, "smoke", np.random.default_rng(run_seed(exp.id, s.setting, s.seed)))
            for s in specs]
    batched = exp.run_batch([s.params for s in specs], ctxs)
    for spec, res in zip(specs, batched):
        ctx = RunContext(exp.id, spec.setting, spec.seed, "smoke",
                         np.random.default_rng(run_seed(exp.id, spec.setting, spec.seed)))
        alone = exp.run(spec.params, ctx)
        assert res.rows == alone.rows
        assert (res.ledger is None) == (alone.ledger is None)
        if res.ledger is not None:
            assert res.ledger.events == alone.ledger.events
    outcomes = execute_runs(specs[:5])
    for out in outcomes:
        single = execute_run(out.spec)
        assert out.status == single.status == "ok" and out.rows == single.rows
        assert out.manifest["batch_size"] == 5 and out.manifest["epsilon_spent"] == single.manifest["epsilon_spent"]


def test_a_failing_batch_is_retried_run_by_run():
    from privrl.experiments.registry import register
    from privrl.experiments.runner import RunSpec, execute_runs
    from privrl.experiments.spec import Experiment, RunResult

    def run(params, ctx):
        if params["bad"]:
            raise RuntimeError("this run fails")
        return RunResult(rows=[{"metric": "x", "value": float(ctx.seed)}])

    def run_batch(params_list, ctxs):
        raise RuntimeError("the batch fails")

    register(Experiment(id="test-batch-fallback", paper="-", figure="-", description="-",
                        settings=lambda scale: [{"bad": False}, {"bad": True}],
                        seeds={"smoke": 2, "quick": 2, "paper": 2},
                        run=run, run_batch=run_batch, batch_key=lambda params, seed: 0))
    specs = [RunSpec("test-batch-fallback", i, s, {"bad": bool(i)}, "smoke") for s in (0, 1) for i in (0, 1)]
    try:
        outs = execute_runs(specs)
    finally:
        from privrl import registry as _registry

        _registry.storage("experiment").pop("test-batch-fallback", None)
    assert [o.status for o in outs] == ["ok", "failed", "ok", "failed"]
    assert [o.rows[0]["value"] for o in outs if o.status == "ok"] == [0.0, 1.0]
    assert "this run fails" in outs[1].manifest["error"]
