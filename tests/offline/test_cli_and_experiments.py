"""`privrl fit` for the offline algorithms and the qiao2023 experiments at smoke scale."""

import json
import math

import numpy as np
import pytest

from privrl.cli import main
from privrl.envs.linear import to_dataset
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp
from privrl.experiments.registry import get_experiment
from privrl.experiments.spec import RunContext


def test_fit_dp_vapvi_from_file(tmp_path):
    mdp = synthetic_linear_mdp(horizon=20, seed=0)
    data = to_dataset(mdp.sample(synthetic_behaviour_policy(), 300, rng=0), n_states=2, n_actions=100)
    path = tmp_path / "data.npz"
    data.save(path)
    out = tmp_path / "fit"
    assert main(["fit", "dp-vapvi", "--data", str(path), "--model", "privrl/SyntheticLinearMDP-v0", "--rho", "2",
                 "--seed", "1", "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["private"] and cert["guarantee"] == "rho-zCDP" and cert["calibration"] == "sound"
    assert len(cert["ledger"]["events"]) == 5 * 20
    result = json.loads((out / "result.json").read_text())
    assert 0 <= result["summary"]["gap"] <= result["summary"]["optimal_value"]
    assert np.load(out / "result.npz")["policy"].shape == (20, 2)


def test_fit_tabular_commands(tmp_path):
    out = tmp_path / "b"
    assert main(["fit", "dp-apvi", "--env", "privrl/RandomTabularMDP-v0", "--epsilon", "3", "--episodes", "200",
                 "--seed", "0", "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["epsilon_spent"] == pytest.approx(3.0, rel=1e-3)
    assert main(["fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--epsilon", "inf", "--seed", "0",
                 "--out", str(tmp_path / "c")]) == 0
    assert main(["fit", "pevi", "--env", "privrl/SyntheticLinearMDP-v0", "--epsilon", "inf", "--seed", "0",
                 "--out", str(tmp_path / "d")]) == 0
    assert main(["fit", "apvi", "--env", "privrl/RandomTabularMDP-v0", "--rho", "1", "--seed", "0",
                 "--out", str(tmp_path / "e")]) != 0                      # non-private with a finite budget
    assert main(["fit", "dp-apvi", "--data", str(tmp_path / "missing.npz"), "--rho", "1"]) != 0


@pytest.mark.parametrize("exp_id", ["qiao2023-fig1a", "qiao2023-fig1b", "qiao2023-tabular"])
def test_experiment_smoke_runs_and_claims(exp_id):
    import pandas as pd

    exp = get_experiment(exp_id)
    rows = []
    for i, params in enumerate(exp.settings_for("smoke")):
        for seed in range(exp.n_seeds("smoke")):
            ctx = RunContext(exp_id, i, seed, "smoke", np.random.default_rng([i, seed]))
            res = exp.run(params, ctx)
            if res.ledger is not None and res.budget.rho is not None:
                spent = res.ledger.zcdp_rho()
                factor = 1.4 if res.calibration == "paper" else 1.0
                assert spent == pytest.approx(factor * res.budget.rho, rel=1e-9)
            for row in res.rows:
                rows.append({**params, **row, "seed": seed, "calibration": res.calibration,
                             "epsilon_spent": None})
    df = pd.DataFrame(rows)
    assert (df["value"] >= -1e-9).all()
    claims = exp.claims(df)
    assert claims and all(c.measured for c in claims)


def test_shared_data_across_algorithms():
    """Every algorithm and budget of a seed sees the same dataset (ctx.shared_rng)."""
    from privrl.offline.experiments import linear_gap

    exp = get_experiment("qiao2023-fig1a")
    a = RunContext(exp.id, 0, 3, "smoke", np.random.default_rng(0)).shared_rng("data-K10")
    b = RunContext(exp.id, 5, 3, "smoke", np.random.default_rng(1)).shared_rng("data-K10")
    g1, e1 = linear_gap("vapvi", 10, None, "sound", instance_seed=0, data_rng=a, noise_rng=np.random.default_rng(0))
    g2, e2 = linear_gap("dp-vapvi", 10, math.inf, "sound", instance_seed=0, data_rng=b,
                        noise_rng=np.random.default_rng(9))
    assert g1 == g2
    np.testing.assert_array_equal(e1.weights_, e2.weights_)
