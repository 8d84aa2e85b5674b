"""The authors' released code for Wang & Hegde (2019), run as they publish it, with a log.

privrl compares its reference configuration of DP Q-learning with functional noise with the authors' own code
(``wangbx66/differentially-private-q-learning`` on GitHub, ``dpql.py``: a 16-16 ReLU network, RMSprop, replay
of 10 000, batch 128, γ = 0.999, ε-greedy from 0.9 to 0.05, the target network copied every 10 episodes, the
Gaussian-process noise buffer reset after every episode, 100 episodes of 50 steps on their continuous
"hit or stand" task — the CenterWalk of the paper). ``privrl.q_learning.claims.AUTHORS_CODE`` holds the mean
return over episodes 51–100 by sigma; this script is how those numbers are produced.

Nothing of their code is part of privrl. Point ``--repo`` at a checkout of their repository (the log records its
commit when it is a git checkout, else the ``--commit`` you state, and the SHA-256 of the ``dpql.py`` that ran).
Their script imports ``gym`` only for ``gym.spaces.Box`` / ``Discrete``; the script supplies a two-line stand-in
that maps them to Gymnasium's, so no old ``gym`` has to be installed. Each (sigma, seed) runs as they document
it, ``python dpql.py SEED SIGMA``, in a scratch copy of the checkout (their script appends its per-episode
returns to ``dpql.txt`` in the working directory), with ``MPLBACKEND=Agg``. Their code needs NumPy < 2 (it calls
``float`` on a one-element array, an error since NumPy 2) and PyTorch, Matplotlib, Pillow and Gymnasium:
``--python`` names an interpreter of an environment that has them (e.g. ``pip install "numpy<2" torch
matplotlib pillow gymnasium`` in a fresh virtual environment)::

    python benchmarks/authors_code.py --repo PATH --python ENV/bin/python --sigmas 0,0.2,0.4,1 --seeds 5 \
        > benchmarks/results/authors_code.jsonl

One JSON line per run (``name = "authors-code-run"``: sigma, seed, the 100 returns, their mean over episodes
51–100, CPU seconds), then one per sigma (``"authors-code"``: the mean over seeds of that figure, its
standard deviation and standard error, the seeds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: the episodes whose mean return is compared (1-based, inclusive): the second half of training
WINDOW = (51, 100)

_GYM_SHIM = {
    "gym/__init__.py": "from gymnasium import spaces  # noqa: F401\n",
    "gym/spaces/__init__.py": "",
    "gym/spaces/box.py": "from gymnasium.spaces import Box  # noqa: F401\n",
    "gym/spaces/discrete.py": "from gymnasium.spaces import Discrete  # noqa: F401\n",
}


def _commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def _versions(python: str) -> str:
    """The versions of the interpreter and the libraries that run their code."""
    code = "import sys, numpy, torch; print(sys.version.split()[0], numpy.__version__, torch.__version__)"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return "python {} numpy {} torch {}".format(*out.stdout.split())


def _write_shim(root: Path) -> None:
    for rel, text in _GYM_SHIM.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(repo: Path, sigma: float, seed: int, shim: Path, python: str) -> dict[str, object]:
    """One ``python dpql.py SEED SIGMA`` in a scratch copy of ``repo``: its 100 episode returns."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / "repo"
        shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".git", "dpql.txt"))
        env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(shim), "OMP_NUM_THREADS": "1"}
        cpu = _children_cpu()
        subprocess.run([python, "dpql.py", str(seed), repr(sigma)], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu = _children_cpu() - cpu
        returns = [float(x) for x in (work / "dpql.txt").read_text(encoding="utf-8").split()]
    lo, hi = WINDOW
    return {"name": "authors-code-run", "sigma": sigma, "seed": seed, "returns": returns,
            "mean_return_51_100": statistics.fmean(returns[lo - 1:hi]), "cpu_seconds": round(cpu, 2)}


def summary(runs: list[dict[str, object]], sigma: float) -> dict[str, object]:
    """The mean over seeds of the episodes-51–100 return at ``sigma``, with its SD and standard error."""
    values = [float(r["mean_return_51_100"]) for r in runs if r["sigma"] == sigma]  # type: ignore[arg-type]
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return {"name": "authors-code", "sigma": sigma, "seeds": len(values), "mean_return_51_100":
            round(statistics.fmean(values), 4), "sd": round(sd, 4), "se": round(sd / len(values) ** 0.5, 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True, help="a checkout of the authors' repository")
    ap.add_argument("--sigmas", default="0,0.2,0.4,1", help="comma-separated noise levels (default %(default)s)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per sigma (default %(default)s)")
    ap.add_argument("--commit", help="the checkout's commit, recorded when --repo is not a git checkout")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs their code (NumPy < 2)")
    args = ap.parse_args(argv)
    script = args.repo / "dpql.py"
    if not script.is_file():
        ap.error(f"--repo must hold the authors' dpql.py; {script} does not exist")
    commit = _commit(args.repo)
    header = {"name": "authors-code-source", "commit": commit or args.commit,
              "commit_from": "git" if commit else ("stated" if args.commit else None),
              "dpql_sha256": hashlib.sha256(script.read_bytes()).hexdigest(),
              "command": "python dpql.py SEED SIGMA", "python": _versions(args.python), "window": list(WINDOW)}
    print(json.dumps(header), flush=True)
    sigmas = [float(s) for s in args.sigmas.split(",")]
    runs = []
    with tempfile.TemporaryDirectory() as shim:
        _write_shim(Path(shim))
        for sigma in sigmas:
            for seed in range(args.seeds):
                runs.append(run_once(args.repo, sigma, seed, Path(shim), args.python))
                print(json.dumps(runs[-1]), flush=True)
    for sigma in sigmas:
        print(json.dumps(summary(runs, sigma)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
