"""The committed evidence is what the committed metrics and today's claim code produce: the report
``docs/results/report.md`` is rendered from ``docs/results/metrics`` byte for byte, its figures
exist, the README's summary is generated from the same metrics, and the archive's manifest
records the sweep's times. A claim code change that moves a verdict fails here until the evidence
is regenerated (``privrl report docs/results/metrics --evidence docs/results --readme README.md``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import privrl

ROOT = Path(privrl.__file__).resolve().parents[2]
EVIDENCE = ROOT / "docs" / "results"
ARCHIVE = EVIDENCE / "metrics"

pytestmark = pytest.mark.skipif(not (ARCHIVE / "manifest.json").is_file(),
                                reason="no committed metrics archive (an installed package, not a checkout)")


@pytest.fixture(scope="module")
def evaluation():
    from privrl.experiments.report import evaluate

    return evaluate(ARCHIVE)


@pytest.fixture(scope="module")
def rendered(evaluation) -> str:
    from privrl.experiments.report import render_report

    return render_report(ARCHIVE, figures_dir=EVIDENCE, evaluation=evaluation)


def test_the_committed_report_is_rendered_from_the_committed_metrics(rendered):
    committed = (EVIDENCE / "report.md").read_text(encoding="utf-8")
    if rendered != committed:
        diff = next(i for i, (a, b) in enumerate(zip(rendered.splitlines(), committed.splitlines())) if a != b) \
            if rendered.splitlines()[:1] else 0
        pytest.fail(f"docs/results/report.md differs from the report of docs/results/metrics from line {diff + 1}: "
                    "regenerate it with `privrl report docs/results/metrics --evidence docs/results "
                    "--readme README.md`")


def test_every_figure_the_report_links_is_committed(rendered):
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", rendered)
    assert links and all((EVIDENCE / link).is_file() for link in links)


def test_the_readme_summary_is_generated_from_the_committed_metrics(evaluation):
    from privrl.experiments.evidence import README_BEGIN, README_END
    from privrl.experiments.report import headline_tables

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    assert block.strip() == headline_tables(ARCHIVE, evaluation=evaluation).strip()


def test_the_archive_manifest_records_the_sweep():
    from privrl.experiments.archive import archive_experiments
    from privrl.experiments.registry import all_experiments

    manifest = json.loads((ARCHIVE / "manifest.json").read_text(encoding="utf-8"))
    ids = archive_experiments(ARCHIVE)
    assert set(ids) == set(all_experiments())          # every registered experiment is committed
    assert manifest["git_commit"] and manifest["versions"]["privrl"] and manifest["machine"]["cores"]
    for exp_id in ids:
        e = manifest["experiments"][exp_id]
        assert e["runs_ok"] == e["runs"] and e["cpu_seconds"] > 0 and e["run_seconds"] > 0
        assert e["span_seconds"] is not None and e["span_seconds"] >= 0
    # small enough to commit
    assert sum(p.stat().st_size for p in ARCHIVE.iterdir()) < 25e6


def test_the_committed_evidence_cites_no_spec_outside_the_repository():
    """The report cites the papers' sections or the repository's own derivations (docs/), never the
    implementation specs, which are not part of the repository."""
    text = (EVIDENCE / "report.md").read_text(encoding="utf-8")
    cited = re.findall(r"spec §[\d.]+|\bthe spec\b|\(A\d+\)|typo A\d+", text)
    assert not cited, f"the report cites what is not in the repository: {sorted(set(cited))}"


def _paper_number_cells(report: str) -> list[str]:
    """The "Paper's number" cell of every row of the report's table of the papers' claims."""
    section = report.split("## The papers' claims", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    column = header.index("Paper's number")
    rows = [line for line in lines[1:] if not set(line) <= set("|-: ")]
    return [line.strip().strip("|").split(" | ")[column].strip() for line in rows]


def test_at_most_a_tenth_of_the_papers_claims_lack_the_papers_number():
    """Every paper claim gives the paper's number, or "no number: <reason>" where the paper prints
    none (a plotted figure, a qualitative trend): at most 10 % of the rows are empty."""
    cells = _paper_number_cells((EVIDENCE / "report.md").read_text(encoding="utf-8"))
    empty = sum(not cell for cell in cells)
    reason_only = sum(cell.lower().startswith("no number:") for cell in cells)
    print(f"{len(cells)} paper rows: {len(cells) - empty - reason_only} with a number, "
          f"{reason_only} with a reason only, {empty} empty")
    assert len(cells) >= 40
    assert empty <= 0.1 * len(cells), f"{empty} of {len(cells)} paper rows have no paper's number nor a reason"
    assert all(cell.removeprefix("no number:").strip() for cell in cells if cell.lower().startswith("no number:"))
