"""The evidence step of ``make reproduce-paper``: report, PNGs only, manifest (issue #12 §3)."""

import json

import pytest

from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.experiments import get_experiment
from privrl.experiments.evidence import collect_evidence, main
from privrl.experiments.report import make_plots
from privrl.experiments.runner import plan_runs, run_sweep

EXP = "example-gaussian"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    run_sweep(plan_runs(EXP, "smoke"), out, jobs=1, quiet=True)
    make_plots(out)  # PNG and PDF
    return out


def test_collect_copies_report_pngs_and_writes_the_manifest(results, tmp_path):
    dest = tmp_path / "docs" / "results"
    (dest / "old-exp").mkdir(parents=True)
    (dest / "old-exp" / "stale.png").write_bytes(b"x")  # from an earlier collection
    path = collect_evidence(results, dest, wall_seconds=12.5)
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == [f"{EXP}/{EXP}.png", "manifest.json", "report.md"]
    report = (dest / "report.md").read_text()
    assert f"![{EXP}]({EXP}/{EXP}.png)" in report and "[PDF]" not in report
    assert str(results) not in report  # no absolute path of the machine
    m = json.loads(path.read_text())
    n_runs = len(get_experiment(EXP).settings_for("smoke")) * get_experiment(EXP).n_seeds("smoke")
    assert m["wall_seconds"] == 12.5 and m["machine"]["cores"] >= 1 and m["machine"]["platform"]
    assert m["versions"]["privrl"] and m["versions"]["dp-accounting"]
    e = m["experiments"][EXP]
    assert (e["runs"], e["runs_ok"], e["runs_failed"], e["scale"]) == (n_runs, n_runs, 0, ["smoke"])
    assert e["figures"] == [f"{EXP}/{EXP}.png"]
    assert m["run_seconds"] == pytest.approx(e["run_seconds"]) and e["run_seconds"] > 0


def test_collect_refuses_a_destination_inside_the_results(results, tmp_path):
    with pytest.raises(InvalidParameterError, match="'dest' parameter"):
        collect_evidence(results, results / "docs")
    with pytest.raises(InvalidDataError, match="No runs found"):
        collect_evidence(tmp_path, tmp_path.parent / "elsewhere")


def test_main_is_a_one_line_error(results, tmp_path, capsys):
    assert main([str(results), str(results / "inside")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("privrl-evidence: error: The 'dest' parameter") and err.count("\n") == 1
    assert main([str(results), str(tmp_path / "ok"), "--wall-seconds", "3"]) == 0
