"""Progress on long work (privrl._progress): when the bar and the compile notice are shown."""

import io
import sys

import pytest

from privrl import _jit, _progress
from privrl._progress import COMPILE_NOTICE, NOTICE_ENV, compile_notice, progress, request_compile_notice, shown


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_shown_only_on_a_terminal_and_not_quiet():
    assert shown(False, _Stream(True))
    assert not shown(True, _Stream(True))
    assert not shown(False, _Stream(False))
    assert not shown(False, None)
    closed = io.StringIO()
    closed.close()  # its isatty raises ValueError
    assert not shown(False, closed)


def test_the_bar_follows_stdout(monkeypatch):
    with progress(3, "cell", quiet=False) as bar:
        assert bar.disable  # pytest's stdout is not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with progress(3, "cell", quiet=True) as bar:
        assert bar.disable
    with progress(3, "cell", quiet=False) as bar:
        assert not bar.disable and bar.total == 3 and bar.unit == "cell"


def test_the_notice_is_requested_only_on_a_terminal_and_not_quiet(monkeypatch):
    monkeypatch.delenv(NOTICE_ENV, raising=False)
    monkeypatch.setattr(_progress, "listen_for_compiles", lambda: None)
    request_compile_notice(False)  # pytest's stderr is not a terminal
    assert NOTICE_ENV not in _progress.os.environ
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    request_compile_notice(True)
    assert NOTICE_ENV not in _progress.os.environ
    request_compile_notice(False)
    assert _progress.notice_requested()
    request_compile_notice(True)  # the last request decides
    assert not _progress.notice_requested()


def test_privrl_audit_quiet_asks_for_no_notice(monkeypatch):
    from privrl import cli

    monkeypatch.delenv(NOTICE_ENV, raising=False)
    monkeypatch.setattr(_progress, "listen_for_compiles", lambda: None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(["audit", "--list", "--quiet"]) == 0
    assert not _progress.notice_requested()
    assert cli.main(["audit", "--list"]) == 0
    assert _progress.notice_requested()


def test_kernel_modules_listen_for_compiles_when_asked(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.delenv("PRIVRL_NO_JIT", raising=False)
    calls = []
    monkeypatch.setattr(_jit, "listen_for_compiles", lambda: calls.append(1))
    monkeypatch.delenv(NOTICE_ENV, raising=False)
    _jit.compilers()
    assert calls == []
    monkeypatch.setenv(NOTICE_ENV, "1")
    _jit.compilers()
    assert calls == [1]


def _compile(module):
    """Compile (no cache) a fresh numba function that claims to live in ``module``."""
    import numba

    def kernel(x):
        return x + 1

    kernel.__module__ = module
    return numba.njit(kernel)(1)


def test_the_notice_is_one_line_before_the_first_privrl_kernel_compiles(monkeypatch, capsys):
    pytest.importorskip("numba")
    from numba.core import event

    monkeypatch.setenv(NOTICE_ENV, "1")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with event.install_listener("numba:compile", compile_notice()):
        _compile("someone_else")
        assert capsys.readouterr().err == ""  # not privrl's
        _compile("privrl.some_kernels")
        _compile("privrl.other_kernels")
    assert capsys.readouterr().err == COMPILE_NOTICE + "\n"  # once per process


def test_no_notice_when_stderr_is_not_a_terminal_or_not_asked_for(monkeypatch, capsys):
    pytest.importorskip("numba")
    from numba.core import event

    monkeypatch.setenv(NOTICE_ENV, "1")
    with event.install_listener("numba:compile", compile_notice()):
        _compile("privrl.some_kernels")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.delenv(NOTICE_ENV)  # asked for, then a later command was --quiet
    with event.install_listener("numba:compile", compile_notice()):
        _compile("privrl.some_kernels")
    assert capsys.readouterr().err == ""


def test_the_notice_is_printed_above_a_bar_not_after_it(monkeypatch, capsys):
    pytest.importorskip("numba")
    from numba.core import event

    monkeypatch.setenv(NOTICE_ENV, "1")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress(2, "cell", quiet=False), event.install_listener("numba:compile", compile_notice()):
        _compile("privrl.some_kernels")
    err = capsys.readouterr().err
    assert "0/2" in err and COMPILE_NOTICE in err
    before = err[:err.index(COMPILE_NOTICE)]
    assert before.endswith(("\r", "\n"))  # the bar's line is cleared first
