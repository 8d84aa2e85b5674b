"""Internal issue numbers never reach a user: not in the package (docstrings, messages, figure
titles), its command-line output, the docs, the README nor the committed report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import privrl

ROOT = Path(privrl.__file__).resolve().parents[2]
PATTERN = re.compile(r"\bissues?\s*#\s*\d", re.IGNORECASE)


def _files() -> list[Path]:
    package = sorted(Path(privrl.__file__).parent.rglob("*.py"))
    docs = sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").is_dir() else []
    readme = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    return package + docs + readme


def test_no_issue_number_in_the_package_and_docs():
    hits = [f"{path.relative_to(ROOT)}:{n}" for path in _files()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if PATTERN.search(line)]
    assert not hits, f"internal issue numbers: {hits}"


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["report", "--help"], ["audit", "--help"]])
def test_no_issue_number_in_the_cli_output(argv, capsys):
    from privrl.cli import main

    try:
        main(argv)
    except SystemExit:
        pass
    out = capsys.readouterr()
    assert not PATTERN.search(out.out + out.err)


def test_the_pattern_finds_one():
    assert PATTERN.search("Privacy–utility frontier (issue #11 §3)") and PATTERN.search("(Issues #9, #12)")
    assert not PATTERN.search("dp-accounting's GitHub issue 378")
