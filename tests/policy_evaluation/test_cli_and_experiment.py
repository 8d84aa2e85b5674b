"""`privrl fit dp-lsw|dp-lsl|lsw|lsl` and the `balle2016-fig1` experiment at smoke scale."""

import json
import math

import numpy as np
import pytest

from privrl.cli import main
from privrl.envs.chain import sample_chain
from privrl.experiments import get_experiment
from privrl.experiments.spec import RunContext


@pytest.fixture
def chain_file(tmp_path):
    path = tmp_path / "chain.npz"
    sample_chain(500, n_states=10, rng=0).save(path)
    return path


@pytest.mark.parametrize("algo,extra", [
    ("dp-lsw", ["--features", "aggregate"]),
    ("dp-lsl", ["--lam-sqrt-coef", "1.0"]),
    ("lsl", ["--lam", "2.0"]),
])
def test_fit_commands_write_values_and_certificate(tmp_path, chain_file, algo, extra):
    out = tmp_path / "out"
    budget = ["--epsilon", "inf"] if algo == "lsl" else ["--epsilon", "0.5", "--delta", "0.1"]
    code = main(["fit", algo, "--data", str(chain_file), *budget, "--gamma", "0.99", "--F-max", "1",
                 "--seed", "0", "--out", str(out), *extra])
    assert code == 0
    cert = json.loads((out / "certificate.json").read_text())
    arrays = np.load(out / "result.npz")
    assert arrays["values"].shape == (10,)
    assert cert["extra"]["F_max"] == 1.0
    assert "sigma" not in json.dumps(cert).lower()
    if algo.startswith("dp"):
        assert cert["private"] and cert["epsilon_spent"] == pytest.approx(0.5, abs=1e-6)
        assert cert["privacy_unit"] == "trajectory" and cert["neighboring"] == "replace_one"
    else:
        assert not cert["private"]


def test_fit_command_rejects_bad_lambda(tmp_path, chain_file, capsys):
    code = main(["fit", "dp-lsl", "--data", str(chain_file), "--epsilon", "0.5", "--delta", "0.1",
                 "--gamma", "0.99", "--lam", "0.01", "--out", str(tmp_path / "o")])
    assert code != 0
    assert "lam" in capsys.readouterr().err


def _fit(tmp_path, chain_file, algo, *extra, out="out"):
    budget = [] if algo in ("lsw", "lsl") else ["--epsilon", "1", "--delta", "1e-6"]
    code = main(["fit", algo, "--data", str(chain_file), *budget, "--gamma", "0.9", "--seed", "3",
                 "--out", str(tmp_path / out), *extra])
    return code, tmp_path / out


@pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")
def test_options_reach_the_estimator_and_the_certificate_records_them(tmp_path, chain_file):
    """Every estimator option reaches DPLSW (the CLI's θ̂ is the Python API's with the same
    options and seed), and the certificate records the effective parameters, what the defaults
    resolved to and ε at the budget's reporting δ."""
    from privrl.data import TrajectoryDataset
    from privrl.policy_evaluation import DPLSW
    from privrl.privacy import PrivacyBudget

    code, out = _fit(tmp_path, chain_file, "dp-lsw", "--calibration", "sound", "--smoothing", "appendix_a",
                     "--constants", "practical", "--record-terminal", "false", "--r-max", "2")
    assert code == 0
    cert = json.loads((out / "certificate.json").read_text())
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    assert cert["params"]["calibration"] == "sound" and cert["params"]["smoothing"] == "appendix_a"
    assert cert["params"]["constants"] == "practical" and cert["params"]["record_terminal"] is False
    assert cert["params"]["secure"] is False and cert["params"]["clip_returns"] is False
    assert cert["params"]["r_max"] == 2.0 and cert["params"]["F_max"] is None and cert["params"]["gamma"] == 0.9
    assert cert["delta"] == budget.reporting_delta == 1e-6
    assert cert["extra"]["r_max"] == 2.0 and cert["extra"]["F_max"] == pytest.approx(2.0 / (1 - 0.9), rel=1e-12)
    est = DPLSW(budget=budget, gamma=0.9, calibration="sound", smoothing="appendix_a", constants="practical",
                record_terminal=False, r_max=2.0, features=np.eye(10))
    est.fit(TrajectoryDataset.load(chain_file), rng=np.random.default_rng(3))
    np.testing.assert_array_equal(np.load(out / "result.npz")["theta"], est.theta_)
    assert cert["epsilon_spent"] == pytest.approx(est.privacy_spent(), rel=1e-12)
    # the defaults are the estimator's: main_text smoothing, tight calibration, theory constants
    code, out = _fit(tmp_path, chain_file, "dp-lsw", out="default")
    cert = json.loads((out / "certificate.json").read_text())
    assert code == 0 and (cert["params"]["smoothing"], cert["params"]["calibration"],
                          cert["params"]["constants"]) == ("main_text", "tight", "theory")
    assert cert["calibration"] == "tight" and cert["epsilon_spent"] == pytest.approx(1.0, abs=1e-6)


def test_the_old_constants_spelling_is_refused_and_smoothing_replaces_it(tmp_path, chain_file, capsys):
    code, _ = _fit(tmp_path, chain_file, "dp-lsw", "--constants", "main_text")
    err = capsys.readouterr().err
    assert code == 2 and "--constants" in err and "'theory', 'practical'" in err
    assert not (tmp_path / "out").exists()
    assert main(["fit", "dp-lsw", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--smoothing {main_text,appendix_a}" in text and "--constants {theory,practical}" in text


@pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")
def test_lambda_options_of_dp_lsl_and_lsl(tmp_path, chain_file, capsys):
    from privrl.data import TrajectoryDataset
    from privrl.policy_evaluation import DPLSL, sqrt_lambda_schedule
    from privrl.privacy import PrivacyBudget

    data = TrajectoryDataset.load(chain_file)
    code, out = _fit(tmp_path, chain_file, "dp-lsl", "--lam-sqrt-coef", "2", out="coef")
    cert = json.loads((out / "certificate.json").read_text())
    lam = sqrt_lambda_schedule(data.n_episodes, np.eye(10), np.full(10, 0.1), 2.0)
    assert code == 0 and cert["params"]["lam"] == pytest.approx(lam, rel=1e-12)
    assert cert["extra"]["lam"] == pytest.approx(lam, rel=1e-12) and cert["extra"]["lam_sqrt_coef"] == 2.0
    # no λ given: the 'constants' preset resolves it; the certificate records lam=None and the λ used
    code, out = _fit(tmp_path, chain_file, "dp-lsl", "--constants", "practical", out="preset")
    cert = json.loads((out / "certificate.json").read_text())
    est = DPLSL(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), gamma=0.9, constants="practical",
                features=np.eye(10)).fit(data, rng=np.random.default_rng(3))
    assert code == 0 and cert["params"]["lam"] is None
    assert cert["extra"]["lam"] == pytest.approx(est.lam_, rel=1e-12) and est.lam_ != pytest.approx(lam)
    capsys.readouterr()
    code, _ = _fit(tmp_path, chain_file, "dp-lsl", "--lam", "50", "--lam-sqrt-coef", "2", out="both")
    assert code == 1 and "at most one of --lam or --lam-sqrt-coef" in capsys.readouterr().err
    code, _ = _fit(tmp_path, chain_file, "dp-lsl", "--lam-sqrt-coef", "0", out="zero")
    assert code == 2 and "--lam-sqrt-coef" in capsys.readouterr().err
    code, _ = _fit(tmp_path, chain_file, "lsl", out="nolam")        # LSL declares lam required
    assert code == 2 and "--lam" in capsys.readouterr().err
    code, out = _fit(tmp_path, chain_file, "lsl", "--lam", "3", out="lsl")
    assert code == 0 and json.loads((out / "certificate.json").read_text())["extra"]["lam"] == 3.0
    assert not any((tmp_path / o).exists() for o in ("both", "zero", "nolam"))


@pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")
def test_data_outside_the_public_bounds_is_an_error_without_private_values(tmp_path, capsys):
    """The error names the bound that broke and how to fix it; the rewards and returns (private)
    are not in it."""
    from privrl.data import TrajectoryDataset

    path = tmp_path / "d.npz"
    TrajectoryDataset(np.array([0, 1]), np.array([0, 0]), np.array([0.37, 0.41]), np.array([1, 2]),
                      np.array([0, 2]), n_states=3, n_actions=1).save(path)
    private = ("0.37", "0.41", "0.575", "0.205")      # rewards; returns with γ = 0.5
    for flags, expected in ((["--r-max", "0.4"], "R_max = 0.4] (--r-max)"),
                            (["--F-max", "0.5"], "F_max = 0.5 (--F-max)")):
        code = main(["fit", "dp-lsw", "--data", str(path), "--epsilon", "1", "--delta", "1e-6", "--gamma", "0.5",
                     *flags, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert code == 1 and len(err.splitlines()) == 1 and expected in err and "--clip-returns" in err, err
        assert not any(v in err for v in private), err
    assert not (tmp_path / "o").exists()
    assert main(["fit", "dp-lsw", "--data", str(path), "--epsilon", "1", "--delta", "1e-6", "--gamma", "0.5",
                 "--F-max", "0.5", "--clip-returns", "--out", str(tmp_path / "o")]) == 0


def _ctx(scale="smoke", seed=0, index=0):
    return RunContext(experiment_id="balle2016-fig1", setting_index=index, seed=seed, scale=scale,
                      rng=np.random.default_rng(seed + 100 * index))


def test_experiment_smoke_run_shares_batches_and_is_reproducible():
    """T24: the same seed gives identical rows; every setting of a seed sees the same batches
    (identical non-private LSW results across F_max and calibrations); the ledger holds the event
    the mechanism's releases returned (paper: the certified ε, far below the budget; tight: the budget)."""
    exp = get_experiment("balle2016-fig1")
    settings = exp.settings_for("smoke")
    assert {(s["features"], s["F_max"], s["calibration"]) for s in settings} == {
        (f, fm, c) for f in ("tabular", "pairs") for fm in (1.0, 100.0) for c in ("paper", "tight")} | {
        ("pairs_unit", 1.0, c) for c in ("paper", "tight")}
    tab = {(s["F_max"], s["calibration"]): i for i, s in enumerate(settings) if s["features"] == "tabular"}
    runs = {key: exp.run(settings[i], _ctx(index=i)) for key, i in tab.items()}
    again = exp.run(settings[tab[(1.0, "paper")]], _ctx(index=tab[(1.0, "paper")]))
    assert again.rows == runs[(1.0, "paper")].rows

    def values(rows, algorithm, metric="rmse"):
        return [r["value"] for r in rows if r["algorithm"] == algorithm and r["metric"] == metric]

    lsw = values(runs[(1.0, "paper")].rows, "LSW")
    assert all(values(r.rows, "LSW") == lsw for r in runs.values())
    for cal in ("paper", "tight"):
        small = values(runs[(1.0, cal)].rows, "DP-LSW", "sigma_diagnostic")
        big = values(runs[(100.0, cal)].rows, "DP-LSW", "sigma_diagnostic")
        np.testing.assert_allclose(big, 100 * np.array(small), rtol=1e-12)  # σ linear in F_max
    # tight noise is a fixed fraction (α ratio, up to ψ's rounding) of the printed one at ε = δ = 0.1
    ratio = np.array(values(runs[(1.0, "tight")].rows, "DP-LSW", "sigma_diagnostic")) / np.array(
        values(runs[(1.0, "paper")].rows, "DP-LSW", "sigma_diagnostic"))
    assert np.all((ratio > 0.02) & (ratio < 0.05))
    assert runs[(1.0, "paper")].ledger.epsilon(0.1) <= 0.1 * 1e-3      # certified: (≈0, 0.1)-DP
    assert 0.099 <= runs[(1.0, "tight")].ledger.epsilon(0.1) <= 0.1
    assert runs[(1.0, "tight")].calibration == "tight" and runs[(1.0, "paper")].calibration == "paper"


def test_experiment_cli_smoke_plot_and_claims(tmp_path):
    out = tmp_path / "res"
    assert main(["run", "balle2016-fig1", "--scale", "smoke", "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert (out / "balle2016-fig1" / "balle2016-fig1.png").exists()
    from privrl.experiments.results import load_results

    df = load_results(out)
    df = df[df["experiment"] == "balle2016-fig1"]
    claims = get_experiment("balle2016-fig1").claims(df)
    assert len(claims) == 6
    assert all(c.measured and c.measured != "no data" for c in claims)
    # smoke scale: two seeds and a two-point λ grid (its best c is always on the boundary): undecided,
    # with the reasons stated
    lam_claim = next(c for c in claims if "λ ∝ √m" in c.claim)
    assert lam_claim.verdict == "undecided"
    assert "2 seeds < 3" in lam_claim.reason and "grid boundary" in lam_claim.reason
    assert all(c.verdict == "undecided" for c in claims)


def _frontier_df(tight, sound, seeds):
    """RMSE rows (and noise multipliers proportional to them) as the frontier writes them."""
    import pandas as pd

    rows = [{"seed": s, "metric": metric, "calibration": cal, "epsilon": eps,
             "value": value * (1 + 0.01 * s) * (100 if metric == "noise_multiplier" else 1)}
            for s in range(seeds) for eps in (0.1, 1.0, 10.0) for metric in ("rmse", "noise_multiplier")
            for cal, value in (("paper", sound), ("sound", sound), ("tight", tight))]
    rows += [{"seed": s, "metric": "rmse", "calibration": "none", "epsilon": math.inf, "value": 1e-4}
             for s in range(seeds)]
    return pd.DataFrame(rows)


def test_frontier_claims_decide_the_issue_target():
    claims = get_experiment("frontier-policy-evaluation").claims
    target, order = claims(_frontier_df(0.01, 0.06, 3))
    assert target.verdict == "holds" and order.verdict == "holds" and target.headline
    target, order = claims(_frontier_df(0.04, 0.06, 3))
    assert target.verdict == "fails" and order.verdict == "holds"
    assert claims(_frontier_df(0.08, 0.06, 3))[1].verdict == "fails"
    target, _ = claims(_frontier_df(0.01, 0.06, 1))
    assert target.verdict == "undecided" and target.reason == "one seed"
    # the one rule: two predictors worse than V̂ ≡ 0 (RMSE 0.70 on the chain) decide nothing
    target, _ = claims(_frontier_df(2.16, 12.1, 3))
    assert target.verdict == "undecided"
    assert target.reason == "tight and sound no better than the zero predictor (0.7026)"


def test_dp_monte_carlo_command_matches_the_python_api_and_prints_the_diagnostic(tmp_path, chain_file, capsys):
    from privrl.data import TrajectoryDataset
    from privrl.policy_evaluation import DPMonteCarlo
    from privrl.privacy import PrivacyBudget

    groups = np.arange(10) // 2
    np.save(tmp_path / "groups.npy", groups)
    out = tmp_path / "mc"
    code = main(["fit", "dp-monte-carlo", "--data", str(chain_file), "--epsilon", "1", "--delta", "1e-6",
                 "--F-max", "1", "--groups", str(tmp_path / "groups.npy"), "--seed", "3", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "dp-monte-carlo: utility: noise std of J = " in printed and "group values noise-dominated" in printed
    est = DPMonteCarlo(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), F_max=1.0, groups=groups)
    est.fit(TrajectoryDataset.load(chain_file), rng=np.random.default_rng(3))
    arrays = np.load(out / "result.npz")
    assert float(arrays["value"]) == est.value_
    np.testing.assert_array_equal(arrays["group_values"], est.group_values_)
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["epsilon_spent"] <= 1.0 and cert["mechanism"] == "gaussian"
    summary = json.loads((out / "result.json").read_text())["summary"]
    assert summary["value_std"] == pytest.approx(est.value_std_) and summary["n_trajectories"] == 500
    assert main(["fit", "monte-carlo", "--data", str(chain_file), "--F-max", "1", "--out", str(tmp_path / "np")]) == 0


def test_weights_option_reaches_lsw_and_lsl(tmp_path, chain_file, capsys):
    from privrl.data import TrajectoryDataset
    from privrl.data.features import state_aggregation
    from privrl.policy_evaluation import LSL, LSW

    w = np.r_[np.full(5, 0.05), np.full(5, 0.15)]
    np.save(tmp_path / "w.npy", w)
    data = TrajectoryDataset.load(chain_file)
    for algo, cls, extra in (("lsw", LSW, []), ("lsl", LSL, ["--lam", "2"])):
        code, out = _fit(tmp_path, chain_file, algo, "--weights", str(tmp_path / "w.npy"), "--features", "aggregate",
                         *extra, out=algo)
        assert code == 0
        kwargs = {"lam": 2.0} if cls is LSL else {}
        expected = cls(gamma=0.9, weights=w, features=state_aggregation(10, 2), **kwargs).fit(data).values_
        np.testing.assert_allclose(np.load(out / "result.npz")["values"], expected)
        assert json.loads((out / "certificate.json").read_text())["extra"]["weights"] == f"file:{tmp_path / 'w.npy'}"
    np.save(tmp_path / "short.npy", np.ones(3))
    code, _ = _fit(tmp_path, chain_file, "lsw", "--weights", str(tmp_path / "short.npy"), out="bad")
    assert code != 0 and "'--weights'" in capsys.readouterr().err


def test_truncate_to_horizon_option_and_gamma_one(tmp_path, chain_file, capsys):
    code = main(["fit", "dp-lsw", "--data", str(chain_file), "--epsilon", "1", "--delta", "1e-6", "--gamma", "1",
                 "--seed", "0", "--out", str(tmp_path / "nobound")])
    assert code != 0 and "'--F-max'" in capsys.readouterr().err           # γ = 1 needs a return bound
    code = main(["fit", "lsw", "--data", str(chain_file), "--gamma", "1", "--truncate-to-horizon", "4",
                 "--out", str(tmp_path / "cut")])
    assert code == 0
    assert json.loads((tmp_path / "cut" / "certificate.json").read_text())["extra"]["F_max"] == 4.0


def test_the_settings_of_a_seed_run_as_one_batch_with_each_runs_own_result():
    """``run_batch`` draws a seed's batches once and shares the non-private fits between the paper
    and tight curves; every run's rows and ledger are still exactly those of ``run`` alone."""
    from batch_cases import check_batches_equal_single_runs

    check_batches_equal_single_runs("balle2016-fig1")


@pytest.mark.parametrize("bad", [np.array(["a"] * 10), np.array(["0.1"] * 10), np.ones(10) + 1j])
def test_weights_and_groups_files_must_hold_real_numbers(tmp_path, chain_file, capsys, bad):
    """Strings were parsed (or failed as an internal ValueError) and complex weights cut silently."""
    np.save(tmp_path / "w.npy", bad)
    code, _ = _fit(tmp_path, chain_file, "lsw", "--weights", str(tmp_path / "w.npy"), out="w")
    err = capsys.readouterr().err
    assert code != 0 and "The '--weights' file" in err and "must hold real numbers" in err and err.count("\n") == 1
    code = main(["fit", "monte-carlo", "--data", str(chain_file), "--F-max", "1", "--groups", str(tmp_path / "w.npy"),
                 "--out", str(tmp_path / "g")])
    assert code != 0 and "The '--groups' file" in capsys.readouterr().err
