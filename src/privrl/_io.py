"""Atomic file writes: a temporary file in the same directory, fsync, then ``os.replace``, so a
reader never sees a partial file and an interrupted write leaves the old file intact."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, make_parents: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically: temporary file in the same directory, fsync, rename."""
    path = Path(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
