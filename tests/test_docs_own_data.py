"""docs/own_data.md is run and checked, in page order in one directory: every Python block executes
and every ``print(...)`` line whose comment quotes numbers printed exactly those numbers; every
``privrl ...`` command block exits 0 on the files the Python blocks wrote."""

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "own_data.md"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _blocks():
    """(language, code) of every fenced block, in page order."""
    return re.findall(r"```(\w*)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _expected(line):
    """The numbers quoted after the last ':' of a print line's comment (None when it quotes none)."""
    if "print(" not in line or "#" not in line:
        return None
    quoted = line.split("#", 1)[1].rsplit(":", 1)[-1]
    return [float(n) for n in _NUMBER.findall(quoted)] or None


def _check_python(code, name):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    printed = [[float(n) for n in _NUMBER.findall(line)] for line in out.getvalue().splitlines()]
    prints = [line for line in code.splitlines() if "print(" in line]
    assert len(printed) == len(prints), f"{name} printed {out.getvalue()!r}"
    for got, line in zip(printed, prints):
        want = _expected(line)
        if want is not None:
            assert got == want, f"{name}: {line.strip()!r} printed {got}"


def test_every_block_of_the_page_runs_and_prints_what_it_quotes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert sum(lang == "python" for lang, _ in blocks) >= 2
    for i, (lang, code) in enumerate(blocks):
        if lang == "python":
            _check_python(code, f"own_data block {i}")
        elif code.lstrip().startswith("privrl "):
            argv = shlex.split(code.replace("\\\n", " "))[1:]
            res = subprocess.run([sys.executable, "-m", "privrl", *argv], capture_output=True, text=True,
                                 timeout=600)
            assert res.returncode == 0, f"block {i} ({' '.join(argv[:2])}): {res.stderr}"
