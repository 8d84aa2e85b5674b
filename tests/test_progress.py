"""Progress on long work (privrl._progress): when the bar and the compile notice are shown."""

import dataclasses
import io
import sys

import pytest

from privrl import _jit, _progress, cli
from privrl._progress import (
    COMPILE_NOTICE,
    LOOP_DELAY,
    NOTICE_ENV,
    compile_notice,
    loop_bars,
    loop_progress,
    progress,
    request_compile_notice,
    shown,
)
from privrl.errors import InvalidParameterError


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


def test_a_fit_loop_draws_its_bar_only_inside_loop_bars_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Stream(True))
    with loop_progress(5, "step") as bar:
        assert bar.disable   # Python code, a sweep's worker: no bar
    with loop_bars(quiet=False), loop_progress(5, "step") as bar:
        assert not bar.disable and bar.total == 5 and bar.unit == "step" and bar.delay == LOOP_DELAY
    with loop_bars(quiet=True), loop_progress(5, "step") as bar:
        assert bar.disable
    with loop_progress(5, "step") as bar:
        assert bar.disable   # the block's end restores the flag
    monkeypatch.setattr(sys, "stderr", _Stream(False))
    with loop_bars(quiet=False), loop_progress(5, "step") as bar:
        assert bar.disable


def test_privrl_fit_runs_the_fit_inside_loop_bars_unless_quiet(monkeypatch):
    from privrl.commands import fit

    seen = []

    def fake_run(args):
        seen.append(_progress._LOOP_BARS.get())
        raise InvalidParameterError("stop here")

    command = dataclasses.replace(fit.get_fit_command("ucbvi"), run=fake_run)
    monkeypatch.setattr(fit, "get_fit_command", lambda name: command)
    for extra in ([], ["--quiet"]):
        assert cli.main(["fit", "ucbvi", "--env", "privrl/RiverSwim-v0", *extra]) != 0
    assert seen == [True, False]


class _Counted:
    """A stand-in bar that counts what a loop reports."""

    made: list["_Counted"] = []

    def __init__(self, total, unit, desc=None):
        self.total, self.unit, self.n = total, unit, 0
        _Counted.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.n += n


@pytest.mark.parametrize("case", ["linopt", "dp-bc", "dp-iql", "dp-td3bc", "dp-q-learning"])
def test_long_fit_loops_report_every_item(case, monkeypatch, tmp_path):
    import warnings

    from privrl import PrivacyBudget

    _Counted.made = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # tiny fits: utility warnings
        if case == "linopt":
            from privrl.envs.linear_mixture import random_mixture
            from privrl.linear_mixture import LinOptVI, engine

            monkeypatch.setattr(engine, "loop_progress", _Counted)
            LinOptVI(n_episodes=40, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), beta_scale=0.05).fit(
                random_mixture(4, 3, 3, 2, 2, rng=11), rng=0)
            expected = (40, "episode")
        elif case == "dp-td3bc":
            from privrl.deep_offline import DPTD3BC, _td3bc_learner
            from privrl.deep_offline.continuous_data import pendulum_dataset

            monkeypatch.setattr(_td3bc_learner, "loop_progress", _Counted)
            DPTD3BC(budget=PrivacyBudget(epsilon=2.0, delta=1e-5), hidden=(4,), n_steps=3, sampling_rate=0.5,
                    max_action=2.0).fit(
                pendulum_dataset(6, max_steps=10, rng=0), rng=0)
            expected = (3, "step")
        elif case in ("dp-bc", "dp-iql"):
            from privrl.deep_offline import DPBC, DPIQL, _iql_learner, _learner
            from privrl.deep_offline.datasets import cartpole_dataset

            monkeypatch.setattr(_learner, "loop_progress", _Counted)
            monkeypatch.setattr(_iql_learner, "loop_progress", _Counted)
            cls = DPBC if case == "dp-bc" else DPIQL
            cls(budget=PrivacyBudget(epsilon=2.0, delta=1e-5), hidden=(4,), n_steps=3, sampling_rate=0.5).fit(
                cartpole_dataset(12, max_steps=15, rng=0), rng=0)
            expected = (3, "step")
        else:
            from privrl.q_learning import DPQLearning, training

            monkeypatch.setattr(training, "loop_progress", _Counted)
            DPQLearning(budget=PrivacyBudget(epsilon=0.9, delta=1e-4), config="paper", n_samples=256,
                        hidden=(8,)).fit(rng=0)
            expected = (256, "sample")
    assert [(b.total, b.unit) for b in _Counted.made] == [expected]
    assert _Counted.made[0].n == expected[0]
