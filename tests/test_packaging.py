"""The build and the Makefile a new user runs: an SPDX licence string (no setuptools deprecation
block on ``pip install``) and ``make demo`` honouring ``JOBS``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"        # a string, not the deprecated table
    setuptools = next(r for r in project["build-system"]["requires"] if r.startswith("setuptools"))
    low = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools)
    assert low is not None and int(low.group(1)) >= 77          # SPDX strings need setuptools 77


def test_make_demo_passes_jobs():
    from privrl import cli

    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^JOBS \?= \d+$", makefile, re.M)
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    line = next(ln for ln in recipe.splitlines() if "privrl reproduce" in ln)
    words = line.split()
    assert words[0] == "$(BIN)/privrl"
    args = cli.build_parser("reproduce").parse_args([w.replace("$(JOBS)", "3") for w in words[1:]])
    assert (args.scale, args.out, args.jobs) == ("quick", "results/", 3)
