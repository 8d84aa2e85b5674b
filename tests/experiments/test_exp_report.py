"""Figures and report.md: the two claim tables, figures, claims beside measurements, ε per curve,
deviations, audit; the report carries no time stamp of its own making."""

import json

import pytest

from privrl.errors import InvalidDataError
from privrl.experiments import get_experiment
from privrl.experiments.report import experiments_in, make_plots, write_report
from privrl.experiments.results import atomic_write_json, load_results, run_dir
from privrl.experiments.runner import plan_runs, run_sweep

EXP = "example-gaussian"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    specs = plan_runs(EXP, "smoke")
    run_sweep(specs, out, jobs=1, quiet=True)
    return out


def test_make_plots_writes_png_and_pdf_with_paper_label(results, monkeypatch):
    summary = make_plots(results)
    assert not summary.errors and not summary.skipped
    names = sorted(p.name for p in summary.figures[EXP])
    assert names == ["example-gaussian.pdf", "example-gaussian.png"]
    assert all((results / EXP / n).stat().st_size > 1000 for n in names)
    # the paper-calibration curve is labelled in the figure (PDF text is compressed: check the legend)
    import matplotlib.pyplot as plt

    from privrl.experiments.results import load_results

    captured = []
    real_save = plt.Figure.savefig

    def spy(fig, *args, **kwargs):
        captured.extend(t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts())
        return real_save(fig, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", spy)
    get_experiment(EXP).plot(load_results(results, EXP), results / "spy")
    assert "ε = 4 (paper calibration)" in captured and "ε = 1" in captured


def test_report_sections(results):
    make_plots(results)
    path = write_report(results)
    assert path == results / "report.md"
    text = path.read_text()
    exp = get_experiment(EXP)
    assert f"## {EXP} — {exp.paper}, {exp.figure}" in text
    assert f"![example-gaussian]({EXP}/example-gaussian.png)" in text
    assert "| Claim | Measured | Verdict |" in text
    assert ("Sound calibration spends at most the target ε (PLD accountant). | max ε spent / target = 1.0000 | holds |"
            in text)
    for deviation in exp.deviations_for("smoke"):
        assert f"- {deviation}" in text
    assert "**Paper calibration**" in text
    # privacy per curve: settings that differ only in the x-axis parameter n form one curve
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "trajectory" in ln]
    curves = {(s["epsilon"], s["calibration"]) for s in exp.settings_for("smoke")}
    assert len(table) == len(curves) < len(exp.settings_for("smoke"))
    manifest = json.loads((run_dir(results, EXP, 0, 0) / "manifest.json").read_text())
    first = next(row for row in table if row.startswith(f"| epsilon={manifest['params']['epsilon']:g} |"))
    assert f"{manifest['epsilon_spent']:.4g}" in first and "δ = 1e-05" in first and "n = 100…" in first
    assert any("non-private" in row for row in table)
    assert "## Privacy audit" not in text


def test_report_top_has_the_two_claim_tables_then_the_counts(results):
    text = write_report(results).read_text()
    papers, own, counts, runs = (text.index("## The papers' claims"), text.index("## privrl's claims"),
                                 text.index("## Verdicts by experiment"), text.index("## Runs"))
    assert papers < own < counts < runs < text.index(f"## {EXP} —")
    claims = get_experiment(EXP).claims(load_results(results, EXP))
    assert claims and all(c.source == "privrl" for c in claims)   # the example states no paper's claim
    n = {v: sum(c.verdict == v for c in claims) for v in ("holds", "fails", "undecided")}
    assert f"| [{EXP}](#{EXP}) | smoke | — | {n['holds']} / {n['fails']} / {n['undecided']} |" in text
    assert "| Claim | privrl, paper calibration | privrl, tight calibration | Verdict |" in text
    assert "*No paper claim was evaluated.*" in text


def test_report_is_deterministic(results):
    first = write_report(results).read_text()
    assert write_report(results).read_text() == first
    assert "Generated" not in first and "the last finished" in first   # the date is the runs', not the report's


def test_report_lists_failed_runs(tmp_path):
    run_sweep(plan_runs(EXP, "smoke", [0, 1], {"fail_seeds": [1]})[:2], tmp_path, jobs=1, quiet=True)
    run_sweep(plan_runs(EXP, "smoke", [1], {"fail_seeds": [1]})[:1], tmp_path, jobs=1, quiet=True)
    text = write_report(tmp_path).read_text()
    assert "### Failed runs" in text
    assert "RuntimeError: example-gaussian: failing on purpose at seed 1" in text


def test_report_audit_section(results):
    audit = [{"algorithm": "DPLSW", "claimed_epsilon": 1.0, "epsilon_lower": 0.42, "ci": [0.3, 0.55],
              "delta": 1e-5, "trials": 10000, "verdict": "pass", "broken": None, "status": "pass"},
             {"algorithm": "DPLSW", "claimed_epsilon": 1.0, "epsilon_lower": "inf", "ci": [2.8, "inf"],
              "delta": 1e-5, "trials": 10000, "verdict": "VIOLATION", "broken": "no-noise", "status": "caught"}]
    atomic_write_json(results / "audit" / "audit.json", audit)
    try:
        text = write_report(results).read_text()
        assert "## Privacy audit" in text
        assert "| algorithm | broken |" in text  # the audit CLI's own table, with its broken column
        assert "| DPLSW | - | black-box | 1e-05 | 1.000 | 0.420 [0.300, 0.550] |" in text
        assert "| DPLSW | no-noise | black-box | 1e-05 | 1.000 | inf [2.800, inf] |" in text
        assert "1 releases audited" in text and "1 negative controls" in text
        (results / "audit" / "audit.json").write_text("{corrupt")
        text = write_report(results).read_text()
        assert "audit/audit.json could not be read" in text
    finally:
        (results / "audit" / "audit.json").unlink()


def test_unknown_experiment_dir_is_reported_not_plotted(results, tmp_path):
    atomic_write_json(run_dir(tmp_path, "gone-exp", 0, 0) / "manifest.json",
                      {"experiment": "gone-exp", "setting": 0, "seed": 0, "status": "ok", "params": {}})
    assert experiments_in(tmp_path) == ["gone-exp"]
    assert make_plots(tmp_path).skipped == ["gone-exp"]
    assert "not registered" in write_report(tmp_path).read_text()
    with pytest.raises(InvalidDataError, match="does not exist"):
        experiments_in(tmp_path / "nothing")


@pytest.mark.parametrize("manifest,status", [
    ({"epsilon_spent": 0.5}, "epsilon"),
    ({"epsilon_spent": None, "params": {"sigma": 0.4}}, "uncertified"),
    ({"epsilon_spent": None, "params": {"sigma": 0.0}}, "non-private"),
    ({"epsilon_spent": None, "extra": {"sigma": 1.2}}, "uncertified"),
    ({"epsilon_spent": None, "extra": {"certified": False}}, "uncertified"),
    ({"epsilon_spent": None, "extra": {"refused": "the proof's condition fails"}}, "refused"),
    ({"epsilon_spent": 1.0, "status": "refused"}, "refused"),
    ({}, "non-private"),
])
def test_privacy_status(manifest, status):
    from privrl.experiments.report import privacy_status

    assert privacy_status(manifest) == status


def test_curves_group_settings_that_differ_only_in_the_x_axis():
    from privrl.experiments.report import curves

    ms = [{"setting": i, "seed": s, "params": {"algorithm": alg, "K": K}}
          for i, (alg, K) in enumerate([("a", 10), ("a", 100), ("b", 10), ("b", 100), ("b", 1000)])
          for s in (0, 1)]
    found = curves(ms, ("K",))
    assert [(c["params"], c["x"], c["settings"]) for c in found] == [
        ({"algorithm": "a"}, {"K": [10, 100]}, [0, 1]),
        ({"algorithm": "b"}, {"K": [10, 100, 1000]}, [2, 3, 4])]
    assert all(len(c["manifests"]) == 2 * len(c["settings"]) for c in found)
    assert len(curves(ms, ())) == 5  # no x-axis: one curve per setting


def test_report_shows_refused_and_uncertified_curves_and_scale_deviations(tmp_path, monkeypatch):
    from privrl.experiments import registry
    from privrl.experiments.spec import Claim, Experiment

    def claims(df):
        assert set(df["scale"]) == {"quick"}  # the report tells claims the scale
        return [Claim("A beats B", "A 1 vs B 2", verdict="undecided", reason="needs paper scale",
                      paper_value="A < B", tight_value="1 vs 2", source="paper", where="§9", quote="A beats B."),
                Claim("B is slow", "yes", False)]

    exp = Experiment(id="fake-exp", paper="Fake 2020", figure="Fig. 9", description="d",
                     settings=lambda s: [], seeds={"smoke": 1, "quick": 1, "paper": 1},
                     run=lambda p, c: None, claims=claims,
                     deviations=lambda scale: [f"grid stops at 1e5 at {scale} scale"])
    monkeypatch.setitem(registry._registry.storage("experiment"), "fake-exp", exp)
    base = {"experiment": "fake-exp", "status": "ok", "scale": "quick", "calibration": "sound"}
    runs = [(0, {"algorithm": "refused-one", "K": 1}, {"extra": {"refused": "no"}}),
            (1, {"algorithm": "noisy", "K": 1, "sigma": 0.3}, {}),
            (2, {"algorithm": "noisy", "K": 2, "sigma": 0.3}, {}),
            (3, {"algorithm": "dp", "K": 1}, {"epsilon_spent": 0.9, "delta": 1e-5})]
    for setting, params, extra in runs:
        d = run_dir(tmp_path, "fake-exp", setting, 0)
        atomic_write_json(d / "manifest.json", {**base, "setting": setting, "seed": 0, "params": params, **extra})
        (d / "metrics.csv").write_text("metric,value\nx,1.0\n")
    text = write_report(tmp_path).read_text()
    assert "| [fake-exp](#fake-exp) | quick | 0 / 0 / 1 | 0 / 1 / 0 | 0 of 2 | needs paper scale |" in text
    assert ("| Fake 2020 | §9 | “A beats B.” | A beats B ([fake-exp](#fake-exp)) | A < B |  | 1 vs 2 | undecided: "
            "needs paper scale |") in text
    assert "| B is slow ([fake-exp](#fake-exp)) |  |  | **fails** |" in text
    assert "### The paper's claims beside the measurement" in text and "### privrl's claims beside" in text
    assert "- grid stops at 1e5 at quick scale" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| algorithm=")]
    assert len(rows) == 3  # noisy K=1 and K=2 are one curve
    assert any("refused-one" in r and "**refused**" in r for r in rows)
    assert any("noisy" in r and "uncertified" in r and "K = 1…2 (2 points)" in r for r in rows)
    assert any("algorithm=dp" in r and "ε = 0.9 at δ = 1e-05" in r for r in rows)
