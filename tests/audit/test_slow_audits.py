"""Full audits (default trial counts of every target and control): ``make test-slow``."""

import pytest

from privrl._rng import derive_seed
from privrl.audit.registry import all_targets, run_target

CASES = [(t.name, None, None) for t in all_targets()] + [
    (t.name, v.name, v.caught) for t in all_targets() for v in t.variants]


@pytest.mark.slow
@pytest.mark.parametrize("name,broken,caught", CASES, ids=[f"{n}-{b or 'real'}" for n, b, _ in CASES])
def test_full_audit(name, broken, caught):
    res = run_target(name, broken=broken, rng=derive_seed(1, name, broken))
    if broken is None or caught is False:
        assert res.verdict == "consistent", res
    else:
        assert res.verdict == "VIOLATION", f"negative control not caught: {res}"
