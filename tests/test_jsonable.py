"""One JSON rule for scalars, shared by run results and privacy certificates."""

import math

import numpy as np

from privrl._jsonable import NOT_SCALAR, json_scalar
from privrl.certificate import _public
from privrl.experiments.results import to_jsonable

SCALARS = [True, np.bool_(False), 3, np.int64(-4), 0.5, np.float32(0.25), math.inf, -np.inf, math.nan, "x", None]


def test_json_scalar_unwraps_numpy_and_writes_non_finite_floats_as_strings():
    got = [json_scalar(v) for v in SCALARS]
    assert got == [True, False, 3, -4, 0.5, 0.25, "inf", "-inf", "nan", "x", None]
    assert [type(v) for v in got[:6]] == [bool, bool, int, int, float, float]
    for value in ([1], {"a": 1}, np.zeros(2), object()):
        assert json_scalar(value) is NOT_SCALAR


def test_results_and_certificates_write_scalars_alike():
    for value in SCALARS:
        assert to_jsonable(value) == _public(value, "v", {}) == json_scalar(value)
