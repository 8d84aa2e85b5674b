"""Full audits (default trial counts of every target and control, and every release-point audit):
``make test-slow``."""

import pytest

from privrl.audit.registry import all_targets, audit_seed, run_target

CASES = [(t.name, None, None) for t in all_targets()] + [
    (t.name, v.name, v.caught) for t in all_targets() for v in t.variants if not v.sharp]
SHARP = [t.name for t in all_targets() if t.optimal is not None]


@pytest.mark.slow
@pytest.mark.parametrize("name,broken,caught", CASES, ids=[f"{n}-{b or 'real'}" for n, b, _ in CASES])
def test_full_audit(name, broken, caught):
    res = run_target(name, broken=broken, rng=audit_seed(1, name, broken))
    if broken is None or caught is False:
        assert res.verdict == "consistent", res
    else:
        assert res.verdict == "VIOLATION", f"negative control not caught: {res}"


@pytest.mark.slow
@pytest.mark.parametrize("name", SHARP)
def test_full_release_point_audit(name, check_release_point):
    """Sharp (ε_lower ≥ 0.3 ε at the claimed noise, ε = 1) and noise ÷ 2 caught, every target."""
    check_release_point(name)
