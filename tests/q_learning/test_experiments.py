"""The wang2019 experiments, their claims, and ``privrl fit dp-q-learning``."""

import json

import numpy as np
import pandas as pd
import pytest

from privrl.experiments import wang2019
from privrl.experiments.registry import get_experiment
from privrl.experiments.spec import RunContext


def _ctx(seed=0):
    return RunContext("wang2019-fig2a", 0, seed, "smoke", np.random.default_rng(seed))


def test_registered_and_settings():
    for eid in ("wang2019-fig1", "wang2019-fig2a", "wang2019-fig2b"):
        exp = get_experiment(eid)
        assert exp.plot is not None and exp.claims is not None
        for scale in ("smoke", "quick", "paper"):
            assert exp.settings_for(scale)
    paper = get_experiment("wang2019-fig1").settings_for("paper")
    assert {s["sigma"] for s in paper} == set(wang2019.SIGMAS)
    assert {s["reset"] for s in paper} == set(wang2019.RESETS)
    assert {s["config"] for s in paper} == {"paper", "reference"}
    assert get_experiment("wang2019-fig1").n_seeds("paper") == 10
    fig2 = get_experiment("wang2019-fig2b").settings_for("paper")
    assert {(s["algorithm"], s["calibration"]) for s in fig2 if s["algorithm"] != "non_private"} == {
        (a, c) for a in wang2019.ALGORITHMS for c in ("paper", "sound") if (a, c) != ("balle", "paper")}


def test_run_functional_paper_calibration_labels_and_sigma():
    res = wang2019.run({"algorithm": "functional", "config": "reference", "epsilon": 0.9, "n_samples": 150,
                        "hidden": [4], "calibration": "paper"}, _ctx())
    assert res.calibration == "paper" and res.ledger is None      # uncertified in the reference config
    assert res.rows[0]["noise_std"] == pytest.approx(0.3132, abs=1e-4)
    assert "[uncertified]" in res.rows[0]["label"]


def test_run_sound_refusal_is_recorded():
    res = wang2019.run({"algorithm": "functional", "config": "paper", "epsilon": 0.45, "n_samples": 150,
                        "hidden": [4], "calibration": "sound"}, _ctx())
    assert res.rows[0]["metric"] == "certification_refused" and "refuses" in res.extra["refused"]


def test_run_baseline_is_certified():
    res = wang2019.run({"algorithm": "input_perturbation", "config": "reference", "epsilon": 0.9,
                        "n_samples": 150, "hidden": [4], "calibration": "sound"}, _ctx())
    assert res.ledger is not None and res.ledger.epsilon(1e-4) <= 0.9 * (1 + 1e-6)


def _fake(rows):
    return pd.DataFrame(rows)


def test_claims_fig1_monotone_detection():
    rows = []
    for sigma, level in ((0.0, 20.0), (0.2, 19.5), (0.4, 15.0), (1.0, 9.0)):
        for seed in range(3):
            for step in range(1, 21):
                rows.append({"metric": "return", "reset": "iteration", "config": "reference", "sigma": sigma,
                             "seed": seed, "step": 50 * step, "value": level + 0.1 * seed})
    claims = wang2019.claims_fig1(_fake(rows))
    assert claims[0].supported is True and claims[1].supported is True
    bad = [dict(r, value=30.0) if r["sigma"] == 1.0 else r for r in rows]
    assert wang2019.claims_fig1(_fake(bad))[0].supported is False


def test_claims_fig2_compare_and_no_improvement():
    rows = []
    for algo, cal, first, last in (("functional", "paper", 12.0, 19.0), ("input_perturbation", "sound", 6.0, 6.1),
                                   ("dpsgd", "sound", 10.0, 10.2)):
        for seed in range(4):
            for step in range(1, 101):
                v = (first if step <= 10 else last) + 0.3 * seed
                rows.append({"metric": "return", "config": "reference", "algorithm": algo, "calibration": cal,
                             "seed": seed, "step": 50 * step, "value": v})
    claims = wang2019._claims_fig2(0.45)(_fake(rows))
    assert "REFUSES" in claims[0].measured and "0.6038" in claims[0].measured
    assert claims[1].supported is True and claims[2].supported is True


def test_plots_written(tmp_path):
    rows = [{"metric": "return", "config": "reference", "sigma": s, "reset": "iteration", "seed": seed,
             "step": 50 * k, "value": 10.0 + k, "calibration": "sound"}
            for s in (0.0, 0.4) for seed in (0, 1) for k in range(1, 4)]
    paths = wang2019.plot_fig1(_fake(rows), tmp_path)
    assert any(p.suffix == ".png" and p.exists() for p in paths)


def test_fit_cli_writes_release_and_certificate(tmp_path):
    from privrl.cli import main
    out = tmp_path / "fit"
    code = main(["fit", "dp-q-learning", "--env", "privrl/CenterWalk-v0", "--epsilon", "0.9", "--delta", "1e-4",
                 "--n-samples", "192", "--grid", "11", "--out", str(out), "--seed", "0"])
    assert code in (0, None)
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["privacy_unit"] == "reward_function" and cert["neighboring"] == "sup_norm_one"
    assert cert["epsilon_spent"] <= 0.9 and cert["calibration"] == "sound"
    arrays = np.load(out / "result.npz")
    assert arrays["q_released"].shape == (11, 2)
    assert main(["fit", "dp-q-learning", "--env", "privrl/CenterWalk-v0", "--epsilon", "0.45",
                 "--delta", "1e-4", "--n-samples", "5000", "--out", str(tmp_path / "x")]) != 0


def test_run_balle_baseline_labelled():
    res = wang2019.run({"algorithm": "balle", "config": "reference", "epsilon": 0.9, "n_samples": 500,
                        "hidden": [4], "calibration": "sound"}, _ctx())
    assert res.ledger is None and "not DP under the reward-function model" in res.rows[0]["label"]
    assert len(res.rows) == 10
