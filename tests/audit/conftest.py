"""Shared checks of the audit tests."""

import pytest

from privrl.audit.registry import SHARPNESS, audit_seed, run_target


def _check_release_point(name: str, *, fast: bool = False) -> None:
    """The release-point audit of ``name`` is sharp at the claimed noise and catches noise ÷ 2."""
    res = run_target(name, sharp=True, fast=fast, rng=audit_seed(0, name, None, True))
    assert res.verdict == "consistent", res
    assert res.epsilon_lower >= SHARPNESS * res.claimed_epsilon, f"not sharp: {res}"
    ctrl = run_target(name, broken="noise-div-2", fast=fast, rng=audit_seed(0, name, "noise-div-2", True))
    assert ctrl.mode == "release-point" and ctrl.trials == res.trials
    assert ctrl.epsilon_lower > ctrl.claimed_epsilon, f"noise / 2 not caught: {ctrl}"


@pytest.fixture
def check_release_point():
    """:func:`_check_release_point`: the release-point audit is sharp and catches noise ÷ 2."""
    return _check_release_point
