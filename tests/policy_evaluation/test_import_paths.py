"""The policy-evaluation family's core moved to the shared layer ``privrl.least_squares``; the
paths users import it by keep working and give the very same objects."""

import importlib

import pytest

MOVED = ("statistics", "smooth_sensitivity", "calibration", "mechanism", "diagnostics")


@pytest.mark.parametrize("name", MOVED)
def test_the_old_module_path_gives_the_shared_layers_objects(name):
    old = importlib.import_module(f"privrl.policy_evaluation.{name}")
    new = importlib.import_module(f"privrl.least_squares.{name}")
    assert new.__all__ and old.__all__ == new.__all__
    assert all(getattr(old, attr) is getattr(new, attr) for attr in new.__all__)


def test_the_family_exports_are_the_shared_layers():
    import privrl.least_squares.mechanism as mechanism
    import privrl.policy_evaluation as pe
    from privrl import DPLSW

    assert pe.DPLSWMechanism is mechanism.DPLSWMechanism and pe.DPLSW is DPLSW
