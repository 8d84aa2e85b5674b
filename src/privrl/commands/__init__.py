"""What ``privrl``'s sub-commands do; :mod:`privrl.cli` parses the arguments and dispatches here.

One module per group of commands: :mod:`~privrl.commands.sweeps` (``list``, ``run``,
``reproduce``, ``frontier``, ``plot``, ``report``), :mod:`~privrl.commands.fit` (``fit``: budget,
certificate, result files), :mod:`~privrl.commands.calibrate` and :mod:`~privrl.commands.check_env`.
Each handler takes the parsed ``argparse.Namespace`` and returns the exit code; errors are
:class:`~privrl.errors.PrivrlError`\\ s, which the command line prints as one line.

These modules are imported whenever the parser is built (``privrl --help`` too): a library module
that loads NumPy (or more) is imported inside the handler that needs it, for start-up time; the
registry, the experiment registry and the fit commands' helpers, which the parser loads anyway, are
imported at the top.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from privrl._progress import request_compile_notice
from privrl.errors import InvalidParameterError

__all__ = ["die", "dispatch", "one_line", "check_out_dir"]


def one_line(message: object) -> str:
    """``message`` as one line of plain text (terminal colour codes removed, whitespace collapsed)."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(message)).split())


def die(prog: str, message: Any, code: int = 1) -> int:
    """Print ``prog: error: message`` on one line of stderr; return ``code``."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return code


def dispatch(args: argparse.Namespace, prog: str) -> int:
    """Run the parsed command's handler and return its exit code; on a terminal and without
    ``--quiet``, privrl's kernels say so when they first compile (:mod:`privrl._progress`)."""
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        return die(prog, f"command {args.command!r} has no handler")
    request_compile_notice(bool(getattr(args, "quiet", False)))
    return int(handler(args) or 0)


def check_out_dir(out: str | os.PathLike, option: str = "--out") -> Path:
    """``out`` is a writable directory or can be created as one; else one line naming ``option``."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise InvalidParameterError(f"The '{option}' option must be a directory. Got {str(path)!r} "
                                        "instead (an existing file).")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InvalidParameterError(f"The '{option}' option must be a writable directory. Got "
                                        f"{str(path)!r} instead (permission denied).")
        return path
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InvalidParameterError(f"The '{option}' option must be a directory that can be created. Got "
                                    f"{str(path)!r} instead ({str(parent)!r} is a file).")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"The '{option}' option must be a directory that can be created. Got "
                                    f"{str(path)!r} instead (permission denied in {str(parent)!r}).")
    return path
