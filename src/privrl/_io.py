"""Atomic file writes: a temporary file in the same directory, fsync, then ``os.replace``, so a
reader never sees a partial file and an interrupted write leaves the old file intact. Every writer
of privrl (run results, fit results, certificates, evidence) goes through :func:`atomic_write_bytes`;
:func:`atomic_write_text` and :func:`atomic_write_json` are its text and JSON forms, and
:func:`npz_bytes` makes the bytes of a ``.npz`` archive (no pickle).
Without the fsync (``durable=False``) a write is still atomic for every reader and against a killed
process; only an operating-system crash may then lose it.

The written file gets the permissions of an ordinary ``open(path, "w")``: ``0o666`` minus the
process umask (``tempfile.mkstemp`` alone would leave it ``0o600``).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from privrl._jsonable import to_jsonable
from privrl.errors import InvalidDataError

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "npz_bytes", "default_file_mode"]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, without changing it where the OS can tell (Linux ≥ 4.7)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: read it by setting it (and restore it at once)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def default_file_mode() -> int:
    """``0o666 & ~umask``: the mode a new file gets from ``open(path, "w")``."""
    return 0o666 & ~_umask()


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, make_parents: bool = True,
                       durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically: temporary file in the same directory, fsync (unless
    ``durable=False``), rename.

    The file gets :func:`default_file_mode` (umask-respecting), as a plain write would."""
    path = Path(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one
        raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), default_file_mode())
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, *, durable: bool = True) -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: str | os.PathLike, obj: object, *, durable: bool = True) -> Path:
    """``obj`` as indented JSON (:func:`privrl._jsonable.to_jsonable`; never NaN literals), atomically."""
    return atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n",
                             durable=durable)


def npz_bytes(arrays: dict[str, object]) -> bytes:
    """The bytes of a compressed ``.npz`` archive of ``arrays`` (name → array); an object array
    (which would need pickle) is an :class:`~privrl.errors.InvalidDataError` naming it."""
    clean = {}
    for name, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise InvalidDataError(f"The array {name!r} has dtype object; it cannot be saved without pickle.")
        clean[str(name)] = arr
    buf = io.BytesIO()
    np.savez_compressed(buf, **clean)  # type: ignore[arg-type]
    return buf.getvalue()
