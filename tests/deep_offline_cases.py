"""Helpers shared by the deep offline family's tests."""

import warnings


def quiet_fit(est, data, rng=0):
    """``est.fit(data, rng=rng)`` with warnings silenced: the tests' datasets hold a handful of trajectories,
    so every private fit's steps are noise-dominated (a UtilityWarning: tests/deep_offline/test_utility.py
    checks it) and small budgets' δ ≥ 1/n warns too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(data, rng=rng)
