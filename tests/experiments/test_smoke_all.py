"""Every registered experiment runs at ``smoke`` scale through the command line and produces its
metrics, manifests and figures (issue #3, "Done when"). Picks up the paper experiments as they land."""

import json
import subprocess
import sys

import pytest

from privrl.cli import main
from privrl.experiments import all_experiments

EXPERIMENTS = sorted(all_experiments())


def _check_outputs(out, exp_id):
    exp = all_experiments()[exp_id]
    n_runs = len(exp.settings_for("smoke")) * exp.n_seeds("smoke")
    manifests = sorted(out.glob(f"{exp_id}/*/seed=*/manifest.json"))
    assert len(manifests) == n_runs
    for path in manifests:
        manifest = json.loads(path.read_text())
        assert manifest["status"] == "ok", manifest.get("error")
        assert (path.parent / "metrics.csv").stat().st_size > 0
    if exp.plot is not None:
        figures = {p.suffix for p in (out / exp_id).iterdir() if p.is_file()}
        assert {".png", ".pdf"} <= figures


@pytest.mark.parametrize("exp_id", EXPERIMENTS)
def test_smoke_through_the_command_line(exp_id, tmp_path, capsys):
    code = main(["run", exp_id, "--scale", "smoke", "--out", str(tmp_path), "--jobs", "1", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    _check_outputs(tmp_path, exp_id)


def test_smoke_as_a_real_subprocess(tmp_path):
    res = subprocess.run([sys.executable, "-m", "privrl", "run", "example-gaussian", "--scale", "smoke",
                          "--out", str(tmp_path), "--jobs", "1", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    _check_outputs(tmp_path, "example-gaussian")
