"""A sweep killed part-way (SIGKILL) resumes without losing or duplicating runs."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privrl.experiments import get_experiment
from privrl.experiments.results import load_manifests, load_results

EXP = "example-gaussian"


def _privrl(*args):
    return [sys.executable, "-m", "privrl", *args]


def _finished(out):
    done = {}
    for path in out.glob(f"{EXP}/*/seed=*/manifest.json"):
        try:
            manifest = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):  # pragma: no cover - never partial: atomic writes
            pytest.fail(f"partially written manifest {path}")
        if manifest["status"] == "ok":
            done[path] = path.read_bytes()
    return done


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")
def test_resume_after_sigkill(tmp_path):
    out = tmp_path / "out"
    args = _privrl("run", EXP, "--scale", "smoke", "--out", str(out), "--jobs", "1", "--quiet",
                   "--no-plot", "--set", "sleep=0.3")
    exp = get_experiment(EXP)
    total = len(exp.settings_for("smoke")) * exp.n_seeds("smoke")
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while len(_finished(out)) < 3:
            assert proc.poll() is None, f"the sweep ended before it could be killed: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, like a machine crash
        proc.wait()
        proc.stderr.close()
    before = _finished(out)
    assert 3 <= len(before) < total, "the kill must land part-way"

    res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{total} runs: {total - len(before)} ran ok, {len(before)} already finished" in res.stdout

    after = _finished(out)
    assert len(after) == total  # nothing lost
    assert {p: after[p] for p in before} == before  # finished runs were not re-run
    manifests = load_manifests(out, EXP)
    keys = [(m["setting"], m["seed"]) for m in manifests]
    assert len(keys) == len(set(keys)) == total  # nothing duplicated
    df = load_results(out, EXP)
    assert len(df) == total and not df.duplicated(["setting", "seed"]).any()
    # leftovers of the kill are only hidden temporary files, never a visible partial result
    visible = {p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}
    assert visible == {"metrics.csv", "manifest.json"}


def _proc_children(pid):
    """{child pid: cmdline} of the live (non-zombie) children of ``pid`` (Linux /proc)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        state, ppid = text.rpartition(")")[2].split()[:2]
        if int(ppid) == pid and state != "Z":
            out[int(stat.parent.name)] = cmd
    return out


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_exit_when_the_driver_is_killed(tmp_path):
    # every run sleeps 60 s: a worker that outlived its driver would still be there long after
    args = _privrl("run", EXP, "--scale", "smoke", "--out", str(tmp_path / "out"), "--jobs", "2", "--quiet",
                   "--no-plot", "--set", "sleep=60")
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = {}
    try:
        deadline = time.monotonic() + 90
        while len(workers) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "no pool workers started"
            workers = {p: c for p, c in _proc_children(proc.pid).items()
                       if "spawn_main" in c and "resource_tracker" not in c}
            time.sleep(0.1)
        time.sleep(1.0)  # let the workers pick up their runs
        os.kill(proc.pid, signal.SIGKILL)  # the driver only, not its process group
        proc.wait()
        deadline = time.monotonic() + 30  # far below the 60 s a run would keep a survivor alive
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in workers if _alive(p)], "pool workers survived their driver"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
