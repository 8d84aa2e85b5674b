import math

from privrl._search import bisect_boundary


def test_returns_the_feasible_end_from_either_side():
    root = math.sqrt(2.0)
    up = bisect_boundary(lambda x: x * x >= 2.0, 4.0, 0.0, rel_tol=1e-12)      # feasible above the root
    down = bisect_boundary(lambda x: x * x <= 2.0, 0.0, 4.0, rel_tol=1e-12)    # feasible below it
    assert up >= root and up * up >= 2.0 and up - root <= 1e-11
    assert down <= root and down * down <= 2.0 and root - down <= 1e-11


def test_absolute_tolerance_stops_near_zero():
    calls = []

    def ok(x):
        calls.append(x)
        return x >= 0.0

    assert bisect_boundary(ok, 1.0, -1.0, rel_tol=1e-9, abs_tol=1e-3) >= 0.0
    assert len(calls) <= 11          # a width of 2 halves to ≤ 1e-3 in 11 steps
