"""Progress on long work: the tqdm bar of ``privrl reproduce``, ``privrl bench`` and ``privrl audit
--all``, the bar of a single long fit's loop (``privrl fit``), and the one-line notice that privrl's
numba kernels are compiling.

One rule decides both: shown unless ``--quiet`` and only on a terminal (:func:`shown`), so that a
log, a pipe or a test's captured output holds no bar. The bar is drawn on stderr (tqdm's default)
and shown when stdout is a terminal (the output the user watches), as the sweep runner always did;
the compile notice is a line on stderr, shown when stderr is a terminal.

A fit's loop (episodes, training steps, samples) draws its bar through :func:`loop_progress`, which
is disabled unless the loop runs inside :func:`loop_bars` (``privrl fit`` without ``--quiet``) and
stderr is a terminal; the bar then appears only after :data:`LOOP_DELAY` seconds, so that short fits
print nothing. The flag is a context variable: a sweep's workers, and Python code, see no bar.

The notice is asked for by the command line (:func:`request_compile_notice`) through the
environment, so that the runner's spawned workers, which compile the kernels there, inherit it;
:func:`privrl._jit.compilers` then listens to numba's ``numba:compile`` event, which numba fires only
when a function is about to be compiled because its on-disk cache had nothing for it (a cache hit
loads without the event). The notice is printed once per process, for privrl's own kernels only.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["COMPILE_NOTICE", "LOOP_DELAY", "NOTICE_ENV", "compile_notice", "listen_for_compiles", "loop_bars",
           "loop_progress", "notice_requested", "progress", "request_compile_notice", "shown"]

#: the line printed to stderr before privrl's kernels first compile in a process
COMPILE_NOTICE = "compiling privrl's kernels once (cached for later runs)…"
#: the environment variable through which the command line asks for the notice (inherited by workers)
NOTICE_ENV = "PRIVRL_COMPILE_NOTICE"
#: seconds a fit's loop runs before its bar appears (tqdm's ``delay``): fits shorter than this print nothing
LOOP_DELAY = 10.0
_LOOP_BARS: contextvars.ContextVar[bool] = contextvars.ContextVar("privrl_loop_bars", default=False)


def shown(quiet: bool, stream: object) -> bool:
    """Whether progress is shown on ``stream``: not ``quiet`` and ``stream`` is a terminal."""
    if quiet or stream is None:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


def progress(total: int, unit: str, quiet: bool) -> tqdm[object]:
    """A tqdm bar over ``total`` items of ``unit`` (with rate and ETA), disabled unless
    :func:`shown` for stdout; use it as a context manager and call ``update(1)`` per item."""
    from tqdm import tqdm  # here: `import privrl` loads no tqdm

    return tqdm(total=total, unit=unit, disable=not shown(quiet, sys.stdout), dynamic_ncols=True)


@contextlib.contextmanager
def loop_bars(quiet: bool) -> Iterator[None]:
    """Within this block (``privrl fit``'s run of the fit), fit loops draw their bar (:func:`loop_progress`)
    unless ``quiet``."""
    token = _LOOP_BARS.set(not quiet)
    try:
        yield
    finally:
        _LOOP_BARS.reset(token)


def loop_progress(total: int, unit: str, desc: str | None = None) -> tqdm[object]:
    """The bar of a fit's loop over ``total`` ``unit``s, on stderr: disabled outside :func:`loop_bars`
    or when stderr is not a terminal, and drawn only once the loop has run :data:`LOOP_DELAY` seconds.
    Use it as a context manager; ``update(n)`` per ``n`` items done."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, delay=LOOP_DELAY, leave=False, dynamic_ncols=True,
                disable=not (_LOOP_BARS.get() and shown(False, sys.stderr)))


def request_compile_notice(quiet: bool) -> None:
    """Ask for the compile notice in this process and the workers it starts, when :func:`shown`
    for stderr (the command line calls it once, before any kernel module is imported)."""
    if not shown(quiet, sys.stderr):
        os.environ.pop(NOTICE_ENV, None)  # the last request decides (`privrl audit` may be parsed twice)
        return
    os.environ[NOTICE_ENV] = "1"
    if "numba" in sys.modules:  # a kernel module imported already: listen from now on
        listen_for_compiles()


def notice_requested() -> bool:
    """Whether the command line asked for the compile notice (in this process or its parent)."""
    return os.environ.get(NOTICE_ENV, "") not in ("", "0")


@functools.cache
def listen_for_compiles() -> None:
    """Install (once per process) the listener that prints :data:`COMPILE_NOTICE` before the first
    of privrl's kernels compiles; called by :func:`privrl._jit.compilers` when numba is in use."""
    from numba.core import event

    event.register("numba:compile", compile_notice())


def compile_notice() -> object:
    """A new numba event listener printing :data:`COMPILE_NOTICE` to stderr (when :func:`shown`
    there) at the start of the first ``numba:compile`` event of a privrl kernel, once."""
    from numba.core import event

    class _Notice(event.Listener):
        printed = False

        def on_start(self, ev: event.Event) -> None:
            if self.printed or not notice_requested() or not _is_privrl(ev.data):
                return
            self.printed = True
            if shown(False, sys.stderr):
                from tqdm import tqdm

                tqdm.write(COMPILE_NOTICE, file=sys.stderr)  # above this process's bar, if one is drawn
                sys.stderr.flush()

        def on_end(self, ev: event.Event) -> None:
            pass

    return _Notice()


def _is_privrl(data: object) -> bool:
    """Whether a ``numba:compile`` event is for one of privrl's kernels."""
    func = getattr(data.get("dispatcher") if isinstance(data, dict) else None, "py_func", None)
    module = getattr(func, "__module__", "") or ""
    return module == "privrl" or module.startswith("privrl.")
