"""``privrl fit dp-q-learning | q-learning``: options from the declared parameters, the budget or
--noise-std rules, the release grid between the public observation bounds."""

import json
import re

import numpy as np
import pytest

from privrl.cli import main
from privrl.q_learning import DPQLearning, QLearning

ENV = ["--env", "privrl/CenterWalk-v0"]
#: declared parameters that are not estimator options: supplied by the command (--env, --reward-bounds,
#: --obs-low/--obs-high, the budget options) or kept off the command line (hidden, cli=False)
SUPPLIED = {"budget", "env", "reward_bounds", "obs_low", "obs_high", "hidden"}


def _flags(text):
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", text))


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name,cls", [("dp-q-learning", DPQLearning), ("q-learning", QLearning)])
def test_help_lists_exactly_the_declared_options(capsys, name, cls):
    assert main(["fit", name, "--help"]) == 0
    head, _, group = capsys.readouterr().out.partition("\nparameters of ")
    assert _flags(group) == {p.flag for p in cls.params if p.name not in SUPPLIED}
    assert {"--reward-bounds", "--obs-low", "--obs-high", "--grid"} <= _flags(head)
    assert not {"--reward-low", "--reward-high", "--hidden"} & _flags(head + group)
    assert ("--constants" in _flags(group)) == (cls is QLearning)
    assert ("--noise-std" in _flags(group)) == (cls is DPQLearning)


def test_bad_values_are_one_line_errors_naming_the_option(tmp_path, capsys):
    out = ["--out", str(tmp_path / "a")]
    cases = [(["--lipschitz", "-1"], "The '--lipschitz' option must be a float in (0.0, inf). Got -1.0 instead."),
             (["--noise-std", "1", "--obs-low", "0", "0"], "The '--obs-low' option must be 1 bounds"),
             (["--noise-std", "1", "--reward-bounds", "1", "-1"],
              "The '--reward-bounds' option must be a pair (low, high)"),
             (["--epsilon", "1", "--noise-std", "1"], "not both"),
             (["--kernel-beta", "2"], "--kernel-beta needs --noise-std"),
             ([], "needs a budget (--epsilon E --delta D) or, for an uncertified run, --noise-std S")]
    for extra, fragment in cases:
        delta = ["--delta", "1e-4"] if "--epsilon" in extra else []
        assert main(["fit", "dp-q-learning", *ENV, *extra, *delta, *out]) == 1, extra
        assert fragment in _one_line(capsys), extra
    # what the analysis does not cover is refused by the estimator itself
    assert main(["fit", "dp-q-learning", *ENV, "--epsilon", "1", "--delta", "1e-4", "--config", "reference", *out]) == 1
    assert "cannot certify this run" in _one_line(capsys)
    assert not (tmp_path / "a").exists()


def test_uncertified_run_and_the_grid_between_the_observation_bounds(tmp_path, capsys):
    out = tmp_path / "u"
    assert main(["fit", "dp-q-learning", *ENV, "--noise-std", "0.3", "--obs-low", "-1", "--obs-high", "2",
                 "--n-samples", "64", "--grid", "4", "--seed", "0", "--out", str(out)]) == 0
    assert "(uncertified)" in capsys.readouterr().out
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"] == "non-private" and cert["uncertified"] is True and cert["epsilon_spent"] is None
    assert cert["extra"]["noise_std"] == 0.3 and cert["extra"]["certified"] is False
    assert cert["extra"]["obs_low"] == [-1.0] and cert["extra"]["obs_high"] == [2.0]
    with np.load(out / "result.npz") as npz:
        np.testing.assert_allclose(npz["states"], [-1.0, 0.0, 1.0, 2.0])
        assert npz["q_released"].shape == (4, 2)


def test_q_learning_takes_its_constants_preset(tmp_path):
    out = tmp_path / "q"
    assert main(["fit", "q-learning", *ENV, "--constants", "practical", "--n-samples", "64", "--grid", "3",
                 "--seed", "0", "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["params"]["constants"] == "practical" and cert["params"]["config"] == "reference"
    assert cert["guarantee"] == "non-private"
    with np.load(out / "result.npz") as npz:
        np.testing.assert_allclose(npz["states"], [0.0, 0.5, 1.0])
