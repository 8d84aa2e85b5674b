"""``privrl audit``: parser, table, report files, exit codes."""

import argparse
import json
import sys

import numpy as np
import pytest

from privrl.audit import cli, registry
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant
from privrl.audit.report import summary_markdown
from privrl.errors import InvalidParameterError
from privrl.privacy import GaussianMechanism


def _parser():
    parser = argparse.ArgumentParser(prog="privrl")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_parser(sub)
    return parser


def test_parser_options():
    args = _parser().parse_args(["audit", "gaussian", "--trials", "500", "--epsilon", "2", "--delta", "1e-6",
                                 "--broken", "noise-div-10", "--out", "x", "--seed", "3"])
    assert (args.algorithm, args.trials, args.epsilon, args.delta, args.broken, args.out, args.seed) == \
        ("gaussian", 500, 2.0, 1e-6, "noise-div-10", "x", 3)
    assert args.func is cli.run
    assert _parser().parse_args(["audit", "--all"]).all


def test_single_audit_prints_table(capsys):
    args = _parser().parse_args(["audit", "laplace", "--trials", "2000", "--broken", "noise-div-10"])
    assert args.func(args) == 0  # a caught control is success
    out = capsys.readouterr().out
    assert "laplace" in out and "VIOLATION" in out and "caught" in out and "eps_lower" in out


def test_algorithm_xor_all_and_unknown_names():
    with pytest.raises(InvalidParameterError, match="algorithm"):
        cli.run(_parser().parse_args(["audit"]))
    with pytest.raises(InvalidParameterError, match="algorithm"):
        cli.run(_parser().parse_args(["audit", "nope"]))
    with pytest.raises(InvalidParameterError, match="broken"):
        cli.run(_parser().parse_args(["audit", "gaussian", "--broken", "nope", "--trials", "100"]))
    assert cli.main(["audit", "nope"]) == 2  # PrivrlError -> one line, non-zero


def _lying_target():
    """Claims epsilon = 0.1 while its noise is calibrated for epsilon ~ 10: a real violation."""
    mech = GaussianMechanism(sensitivity=1.0, noise_std=0.5)

    def build(eps, delta, broken):
        on = lambda v: (lambda n, rng: mech.release(np.full((n, 1), v), rng=rng)[0])  # noqa: E731
        return AuditPair(on(0.0), on(1.0), 0.1, delta)
    return AuditTarget(name="lying", description="claims too little", privacy_unit="test", build=build,
                       variants=(BrokenVariant("same", "identical copy", caught=True),),
                       trials=2000, fast_trials=2000)


def test_all_writes_report_and_flags_violations(tmp_path, monkeypatch, capsys):
    keep = [registry.get_target("laplace"), _lying_target()]
    monkeypatch.setattr(cli, "all_targets", lambda: keep)
    monkeypatch.setitem(registry._REGISTRY, "lying", keep[1])
    code = cli.run(_parser().parse_args(["audit", "--all", "--fast", "--out", str(tmp_path)]))
    assert code == 1  # the lying target is a VIOLATION of a non-broken target
    rows = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert sorted((r["algorithm"], r["broken"] or "-", r["mode"]) for r in rows) == [
        ("laplace", "-", "black-box"), ("laplace", "-", "release-point"), ("laplace", "noise-div-10", "black-box"),
        ("laplace", "noise-div-2", "release-point"), ("lying", "-", "black-box"), ("lying", "same", "black-box")]
    sharp = next(r for r in rows if r["algorithm"] == "laplace" and r["broken"] is None and r["mode"] != "black-box")
    assert sharp["status"].startswith("sharp") and sharp["statistic"] == "laplace-llr"
    for r in rows:
        assert {"algorithm", "claimed_epsilon", "epsilon_lower", "ci", "trials", "verdict", "broken"} <= set(r)
    lying = next(r for r in rows if r["algorithm"] == "lying" and r["broken"] is None)
    assert lying["verdict"] == "VIOLATION" and lying["status"] == "VIOLATION (bug)"
    md = (tmp_path / "audit" / "audit.md").read_text()
    assert "| laplace |" in md and "1 violations" in md
    assert "VIOLATIONS: lying" in summary_markdown(tmp_path)
    assert "VIOLATION: lying" in capsys.readouterr().err
    assert summary_markdown(tmp_path / "missing") is None


def _overclaiming_target():
    """Claims epsilon = 5 for a release that is (1, 0)-DP: consistent, but its release-point audit
    cannot reach 0.3 x 5 = 1.5 (the audit is not sharp: a failure of the audit design)."""
    mech = GaussianMechanism(sensitivity=1.0, noise_std=4.0)

    def build(eps, delta, broken):
        on = lambda v: (lambda n, rng: mech.release(np.full((n, 1), v), rng=rng)[0])  # noqa: E731
        return AuditPair(on(0.0), on(1.0), 5.0, delta)
    return AuditTarget(name="overclaiming", description="claims too much", privacy_unit="test", build=build,
                       variants=(BrokenVariant("same", "identical copy", caught=False),), trials=2000,
                       fast_trials=2000, optimal="lda", sharp_trials=20_000, sharp_fast_trials=20_000)


def test_a_release_point_audit_that_is_not_sharp_fails(tmp_path, monkeypatch, capsys):
    keep = [_overclaiming_target()]
    monkeypatch.setattr(cli, "all_targets", lambda: keep)
    monkeypatch.setitem(registry._REGISTRY, "overclaiming", keep[0])
    assert cli.run(_parser().parse_args(["audit", "--all", "--fast", "--out", str(tmp_path)])) == 1
    rows = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert [r["status"] for r in rows if r["mode"] == "release-point"] == ["NOT SHARP (audit too weak)"]
    assert "release-point audit not sharp: overclaiming" in capsys.readouterr().err
    assert "NOT SHARP: overclaiming" in summary_markdown(tmp_path)


def test_sharp_option_and_list(capsys):
    args = _parser().parse_args(["audit", "gaussian", "--sharp", "--trials", "20000"])
    assert args.sharp and args.func(args) == 0
    assert "release-point" in capsys.readouterr().out
    cli.run(_parser().parse_args(["audit", "--list"]))
    out = capsys.readouterr().out
    assert "release point: lda" in out and "noise-div-2 (release point)" in out
    with pytest.raises(InvalidParameterError, match="sharp"):
        registry.run_target("dp-lsw-counts", sharp=True, trials=100)


def test_all_shows_a_progress_bar_on_a_terminal_unless_quiet(monkeypatch, capsys):
    keep = [_lying_target()]  # two rows: the target and its broken variant
    monkeypatch.setattr(cli, "all_targets", lambda: keep)
    monkeypatch.setitem(registry._REGISTRY, "lying", keep[0])
    argv = ["audit", "--all", "--fast"]
    cli.run(_parser().parse_args(argv))  # pytest's stdout is not a terminal
    plain = capsys.readouterr()
    assert "2/2" not in plain.err and "lying" in plain.out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    cli.run(_parser().parse_args(argv + ["--quiet"]))
    quiet = capsys.readouterr()
    assert "2/2" not in quiet.err and quiet.out == plain.out
    cli.run(_parser().parse_args(argv))
    shown = capsys.readouterr()
    assert "2/2" in shown.err and "audit/s" in shown.err  # count and rate
    assert shown.out == plain.out  # the rows are printed above the bar, as without it
