"""Helpers shared by the deep offline family's tests."""

import warnings


def quiet_fit(est, data, rng=0):
    """``est.fit(data, rng=rng)`` with warnings silenced: the tests' datasets hold a handful of trajectories,
    so δ ≥ 1/n raises a UtilityWarning on every private fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(data, rng=rng)
