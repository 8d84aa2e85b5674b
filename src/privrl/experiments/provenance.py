"""What a run's manifest records about the code that ran it: the versions of privrl and its main
dependencies (:func:`versions`) and the git commit of the source tree (:func:`git_commit`)."""

from __future__ import annotations

import functools
import importlib.metadata
import subprocess
import sys
from pathlib import Path

__all__ = ["versions", "git_commit"]


@functools.lru_cache(maxsize=1)
def _base_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for dist in ("privrl", "numpy", "dp-accounting", "gymnasium"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def versions() -> dict[str, str | None]:
    """Versions of privrl, Python, numpy, dp-accounting, gymnasium, and torch when imported."""
    out = dict(_base_versions())
    if "torch" in sys.modules:
        out["torch"] = getattr(sys.modules["torch"], "__version__", None)
    return out


def git_commit() -> str | None:
    """The commit of the privrl source tree, when it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = res.stdout.strip()
    return commit if res.returncode == 0 and len(commit) == 40 else None
