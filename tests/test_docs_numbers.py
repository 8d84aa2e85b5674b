"""Every number quoted for a code example of the family pages (docs/*.md but docs/own_data.md, which
tests/test_docs_own_data.py runs, and docs/bench.md, the leaderboard's) is what the code gives, at
the quoted precision and the documented size:

* each ``python`` block runs (in page order, one namespace per block) and every ``print(...)`` line
  whose comment quotes numbers after its last ':' printed exactly those numbers (the
  pattern of tests/test_docs_own_data.py); blocks that are templates (``data = ...``) are skipped;
* each ``privrl plan`` command block runs, and the numbers its prose quotes are read back from the
  printed plan (:data:`PLAN_CLAIMS`).

Every block runs in a few CPU seconds (the largest: 10⁵ trajectories), so none is ``slow``.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import warnings
from pathlib import Path

import pytest

from privrl import cli
from test_docs_own_data import _check_python

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ("policy_evaluation.md", "offline.md", "linear_mixture.md", "q_learning.md", "audit.md", "privacy.md")
_TEMPLATE = re.compile(r"^\w+ = \.\.\.", re.M)


def _blocks(page: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of ``page``, in page order."""
    return re.findall(r"```(\w*)\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)


def _python_blocks() -> list[tuple[str, int, str]]:
    return [(page, i, code) for page in PAGES for i, (lang, code) in enumerate(_blocks(page))
            if lang == "python" and not _TEMPLATE.search(code)]


def test_the_pages_quote_numbers_for_their_examples():
    """The check below is not vacuous: the family pages' examples quote numbers in print lines."""
    quoted = [line for _, _, code in _python_blocks() for line in code.splitlines()
              if "print(" in line and "#" in line and re.search(r":[^:]*\d", line.split("#", 1)[1])]
    assert len(quoted) >= 12


@pytest.mark.parametrize("page,index,code", _python_blocks(), ids=[f"{p}-{i}" for p, i, _ in _python_blocks()])
def test_every_python_example_prints_what_it_quotes(page, index, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the examples' UtilityWarnings are discussed in the pages
        _check_python(code, f"{page} block {index}")


def _plan_output(page: str, command: str) -> str:
    blocks = [code for lang, code in _blocks(page) if not lang and code.lstrip().startswith(command)]
    assert len(blocks) == 1, f"{page}: no single block starting with {command!r}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(shlex.split(blocks[0].strip())[1:]) == 0
    return out.getvalue()


def _quoted(text: str) -> tuple[float, int]:
    """A number as the prose quotes it and its precision as a ``round`` argument: '31 000' ->
    (31000, 0), '0.5' -> (0.5, 1), '1.2·10³' -> (1200, -2)."""
    text = text.replace(" ", "")
    if text.endswith("·10³"):
        mantissa = text[:-len("·10³")]
        return float(mantissa) * 1e3, len(mantissa.partition(".")[2]) - 3
    return float(text), len(text.partition(".")[2])


#: (page, the command block's start, [(regex on the page's prose, regex on the printed plan)]): each
#: pair captures one number; the printed one rounded to the quoted one's precision must equal it.
PLAN_CLAIMS = [
    ("linear_mixture.md", "privrl plan linopt-vi", [
        (r"\(K = 5000, d = 2\): hopeless \(worst noise/signal ([\d.]+)",
         r"verdict: HOPELESS \(worst noise/signal ([\d.]+);"),
        (r"useful from K ≈ ([\d ]+) users", r"more data\s+n >= ([\d ]+) \("),
        (r"users or ε ≈ (\d+)\.", r"larger epsilon\s+epsilon >= (\d+) "),
    ]),
    ("q_learning.md", "privrl plan dp-q-learning", [
        (r"At App\. E\.3's numbers σ ≈ ([\d.]+·10³) against", r"Q_θ \+ g \(pointwise std of g\)\s+([\d.e+]+) "),
        (r"against a range of (\d+): hopeless", r"\)\s+[\d.e+]+\s+(\d+)\s+\d+\s+hopeless"),
        (r"hopeless, and useful only from ε ≈ (\d+)", r"epsilon >= (\d+) "),
    ]),
]


@pytest.mark.parametrize("page,command,claims", PLAN_CLAIMS, ids=[c[1] for c in PLAN_CLAIMS])
def test_every_plan_command_prints_what_its_prose_quotes(page, command, claims):
    output = _plan_output(page, command)
    prose = " ".join((DOCS / page).read_text(encoding="utf-8").split())
    for in_prose, in_output in claims:
        quoted, printed = re.search(in_prose, prose), re.search(in_output, output)
        assert quoted is not None, f"{page}: the prose no longer says {in_prose!r}"
        assert printed is not None, f"{command} no longer prints {in_output!r}:\n{output}"
        want, digits = _quoted(quoted.group(1))
        got = float(printed.group(1).replace(" ", ""))
        assert round(got, digits) == want, f"{page}: quotes {quoted.group(1)!r}, {command} prints {got}"
