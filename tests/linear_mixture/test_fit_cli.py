"""``privrl fit linopt-vi | linopt-po``: options from the declared parameters, budget rules, a
certified run with the tight calibration."""

import json
import re

import pytest

from privrl.cli import main
from privrl.linear_mixture import LinOptPO, LinOptVI

ENV = ["--env", "privrl/RandomLinearMixture-v0"]


def _group(capsys, name):
    assert main(["fit", name, "--help"]) == 0
    text = capsys.readouterr().out
    head, _, group = text.partition("\nparameters of ")
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", head)), set(re.findall(r"(?<![\w-])--[a-z][\w-]*", group))


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name,cls,own", [("linopt-vi", LinOptVI, "--tie-break"), ("linopt-po", LinOptPO, "--eta")])
def test_help_lists_exactly_the_declared_options(capsys, name, cls, own):
    head, group = _group(capsys, name)
    declared = {p.flag for p in cls.params if p.name not in ("budget", "n_episodes")}
    assert group == declared and own in group
    assert {"--calibration", "--privatizer", "--constants", "--alpha", "--secure"} <= group
    assert "--episodes" in head and "--n-episodes" not in head | group   # K is the command's --episodes
    assert "--sigma-rule" not in head | group and "--rho" not in head | group


def test_bad_declared_value_is_one_line_naming_the_option(tmp_path, capsys):
    assert main(["fit", "linopt-vi", *ENV, "--epsilon", "1", "--delta", "1e-5", "--alpha", "2",
                 "--out", str(tmp_path / "a")]) == 1
    assert _one_line(capsys) == ("privrl fit linopt-vi: error: The '--alpha' option must be a float in (0.0, 1.0]. "
                                 "Got 2.0 instead.")
    assert main(["fit", "linopt-po", *ENV, "--epsilon", "1", "--delta", "1e-5", "--shift-scale", "0.5",
                 "--out", str(tmp_path / "a")]) == 1
    assert "The '--shift-scale' option must be a float in (0.5, inf)" in _one_line(capsys)
    assert not (tmp_path / "a").exists()


@pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")
def test_budget_rules_follow_the_privatizer(tmp_path, capsys):
    assert main(["fit", "linopt-vi", *ENV, "--episodes", "5", "--out", str(tmp_path / "a")]) == 1
    assert "A budget is required for '--privatizer central'" in _one_line(capsys)
    assert main(["fit", "linopt-vi", *ENV, "--privatizer", "none", "--epsilon", "1", "--delta", "1e-5",
                 "--episodes", "5", "--out", str(tmp_path / "a")]) == 1
    assert "'--privatizer none' runs the non-private learner" in _one_line(capsys)
    assert main(["fit", "linopt-vi", *ENV, "--epsilon", "1", "--episodes", "5", "--out", str(tmp_path / "a")]) == 1
    assert "The budget (--epsilon/--delta) must be an (epsilon, delta) budget with delta > 0" in _one_line(capsys)
    assert not (tmp_path / "a").exists()
    out = tmp_path / "none"
    assert main(["fit", "linopt-vi", *ENV, "--privatizer", "none", "--episodes", "5", "--seed", "0",
                 "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"] == "non-private" and cert["epsilon_spent"] is None
    assert cert["params"]["privatizer"] == "none" and cert["params"]["n_episodes"] == 5


@pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")
def test_certified_run_spends_the_budget_with_the_tight_calibration(tmp_path):
    out = tmp_path / "fit"
    assert main(["fit", "linopt-vi", *ENV, "--epsilon", "1", "--delta", "1e-5", "--episodes", "12",
                 "--seed", "0", "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["calibration"] == "tight" and cert["guarantee"] == "JDP" and cert["delta"] == 1e-5
    assert 0.99 <= cert["epsilon_spent"] <= 1.0
    assert cert["params"]["n_episodes"] == 12 and cert["extra"]["paper_epsilon_closed_form"] > 1.0
    summary = json.loads((out / "result.json").read_text())["summary"]
    assert summary["calibration"] == "tight" and summary["epsilon_spent"] == pytest.approx(cert["epsilon_spent"])
