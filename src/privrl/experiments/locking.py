"""One sweep at a time writes into a results directory: :func:`sweep_lock` holds
``OUT/.privrl-run.lock`` (an OS file lock, released when the process ends however it ends; the
file names the holder's pid, host and start time for the message of :class:`RunLockedError`)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path

from privrl.errors import PrivrlError

__all__ = ["LOCK_FILE", "RunLockedError", "sweep_lock"]

#: the lock file of a results directory (hidden)
LOCK_FILE = ".privrl-run.lock"


class RunLockedError(PrivrlError):
    """Another sweep is writing into the same results directory."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover
        return False
    return True


def _holder_text(info: Mapping[str, object] | None) -> str:
    if not info:
        return "another privrl run"
    return (f"privrl run pid {info.get('pid', '?')} on host {info.get('host', '?')}, started "
            f"{info.get('started_at', '?')}")


def _read_lock(path: Path) -> dict[str, object] | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) else None


@contextlib.contextmanager
def sweep_lock(out_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``OUT/.privrl-run.lock`` for the duration of a sweep; :class:`RunLockedError` (naming
    the holder's pid, host and start time) when another live process holds it.

    POSIX: an ``fcntl.flock`` on the file — the OS drops it when the holder exits, however it exits,
    so the lock of a killed run is taken over at once. Elsewhere: the file is created exclusively and
    a lock whose holder (same host) is no longer running is taken over."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    info = {"pid": os.getpid(), "host": socket.gethostname(),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    message = ("{holder} is writing into {out}: wait for it to finish, or give another --out "
               "(the lock {lock} is released when that process ends).")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None  # type: ignore[assignment]
    if fcntl is None:  # pragma: no cover - not POSIX
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
            except FileExistsError:
                held = _read_lock(path)
                if held and (held.get("host") != info["host"] or _pid_alive(int(held.get("pid", -1)))):
                    raise RunLockedError(message.format(holder=_holder_text(held), out=out, lock=LOCK_FILE)) from None
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()  # a stale lock of a dead process
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(info, fh)
            try:
                yield path
            finally:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            return
        raise RunLockedError(message.format(holder="another privrl run", out=out, lock=LOCK_FILE))
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            held = _read_lock(path)
            raise RunLockedError(message.format(holder=_holder_text(held), out=out, lock=LOCK_FILE)) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file between our open and flock: retry
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode("utf-8"))
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)
