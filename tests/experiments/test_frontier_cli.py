"""``privrl frontier``: a registered frontier experiment re-gridded over --epsilons, run, tabulated
and plotted (here a toy Laplace-mean frontier registered by the test)."""

import math

import numpy as np
import pandas as pd
import pytest

from privrl import cli
from privrl.errors import InvalidParameterError
from privrl.experiments.frontier import Frontier, register_frontier
from privrl.experiments.registry import register
from privrl.experiments.spec import Experiment, RunResult

_EXP = "frontier-test-mean"


def _settings(scale):
    base = [{"calibration": c, "epsilon": 1.0, "n": 100, "env": "toy"} for c in ("paper", "sound", "tight")]
    return base + [{"calibration": "none", "epsilon": math.inf, "n": 100, "env": "toy"}]


def _run(params, ctx):
    """Private mean of n values in [0, 1] with the Laplace mechanism (sensitivity 1/n); the 'paper'
    calibration uses twice the noise, 'sound' 1.5×, 'tight' 1×: error shrinks with ε."""
    factor = {"paper": 2.0, "sound": 1.5, "tight": 1.0, "none": 0.0}[params["calibration"]]
    scale = 0.0 if params["calibration"] == "none" else factor / (params["n"] * params["epsilon"])
    errors = np.abs(ctx.rng.laplace(0.0, 1.0, size=200) * scale) if scale else np.zeros(200)
    return RunResult(rows=[{"metric": "abs_error", "value": float(errors.mean())}],
                     calibration=params["calibration"])


@pytest.fixture(scope="module", autouse=True)
def _registered():
    from privrl import registry

    register(Experiment(id=_EXP, paper="test", figure="frontier", description="toy frontier", settings=_settings,
                        seeds={"smoke": 2, "quick": 2, "paper": 2}, run=_run))
    register_frontier(Frontier("toy-mean", _EXP, "abs_error", env_key="env"))
    yield
    registry.storage("experiment").pop(_EXP, None)  # other tests iterate over the registered experiments
    registry.storage("frontier").pop("toy-mean", None)


def test_frontier_command_writes_table_and_plot(tmp_path, capsys):
    code = cli.main(["frontier", "toy-mean", "--epsilons", "0.5,2", "--env", "toy", "--scale", "smoke",
                     "--jobs", "1", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 0, out.err
    table = pd.read_csv(tmp_path / _EXP / "frontier.csv")
    private = table[table.calibration != "none"]
    assert sorted(set(private.epsilon)) == [0.5, 2.0] and len(private) == 6
    assert set(private.n_seeds) == {2}
    # the tight curve is below the paper curve at every epsilon, and error falls with epsilon
    for eps in (0.5, 2.0):
        rows = private[private.epsilon == eps].set_index("calibration")["mean"]
        assert rows["tight"] < rows["sound"] < rows["paper"]
    tight = private[private.calibration == "tight"].sort_values("epsilon")["mean"].to_numpy()
    assert tight[1] < tight[0]
    assert (tmp_path / _EXP / f"{_EXP}.png").is_file()


def test_frontier_refuses_unknown_algorithms_and_options(tmp_path, capsys):
    assert cli.main(["frontier", "nope", "--out", str(tmp_path)]) != 0
    assert "'algorithm' parameter of privrl frontier must be one of" in capsys.readouterr().err
    assert cli.main(["frontier", "toy-mean", "--data", "x.npz", "--out", str(tmp_path)]) != 0
    assert "'--data' option is not available" in capsys.readouterr().err
    assert cli.main(["frontier", "toy-mean", "--epsilons", "0,1", "--out", str(tmp_path)]) != 0
    assert "expected finite epsilons > 0" in capsys.readouterr().err


def test_algorithm_names_are_matched_case_insensitively(tmp_path, capsys):
    """``privrl frontier dp-lsw`` finds the frontier registered as DP-LSW; the registered display
    name is kept; two names differing only in case are not guessed between."""
    from privrl import registry
    from privrl.experiments.frontier import get_frontier

    assert get_frontier("dp-lsw").algorithm == "DP-LSW" and get_frontier("DP-LSW") is get_frontier("dp-lsw")
    assert get_frontier("dp-apvi").algorithm == "DP-APVI"
    assert get_frontier("TOY-Mean") is get_frontier("toy-mean")
    code = cli.main(["frontier", "Toy-Mean", "--epsilons", "1", "--env", "toy", "--scale", "smoke", "--seeds", "1",
                     "--jobs", "1", "--quiet", "--out", str(tmp_path)])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / _EXP / "frontier.csv").is_file()
    a, b = Frontier("case-x", _EXP, "abs_error"), Frontier("CASE-X", _EXP, "abs_error")
    try:
        register_frontier(a)
        register_frontier(b)
        assert get_frontier("case-x") is a and get_frontier("CASE-X") is b
        with pytest.raises(InvalidParameterError, match="'algorithm' parameter of privrl frontier must be one of"):
            get_frontier("Case-X")
    finally:
        registry.storage("frontier").pop("case-x", None)
        registry.storage("frontier").pop("CASE-X", None)
