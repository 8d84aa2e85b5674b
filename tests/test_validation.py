"""privrl._validation: one message format naming the parameter, the allowed range and the value."""

import copy
import math
import pickle

import numpy as np
import pytest

from privrl._validation import FittedAttributes, check_array, check_group_map, check_option, check_scalar, param_error
from privrl.errors import InvalidParameterError, NotFittedError, PrivrlError


def test_message_format():
    err = param_error("epsilon", "DPLSW", "a float in (0, inf]", -1.0)
    assert isinstance(err, InvalidParameterError) and isinstance(err, ValueError) and isinstance(err, PrivrlError)
    assert str(err) == "The 'epsilon' parameter of DPLSW must be a float in (0, inf]. Got -1.0 instead."
    assert str(param_error("x", None, "positive", 0)) == "The 'x' parameter must be positive. Got 0 instead."


@pytest.mark.parametrize("kwargs,value,allowed", [
    (dict(low=0.0, closed="right", allow_inf=True), -1.0, "a float in (0.0, inf]"),
    (dict(low=0.0, high=1.0, closed="left"), 1.0, "a float in [0.0, 1.0)"),
    (dict(low=0.0, high=1.0, closed="neither"), 0.0, "a float in (0.0, 1.0)"),
    (dict(low=0.0, high=1.0), 1.5, "a float in [0.0, 1.0]"),
    (dict(high=2.0), 3.0, "a float in (-inf, 2.0]"),
    (dict(kind=int, low=1), 0, "an int in [1, inf)"),
    (dict(kind=int, low=1), 1.5, "an int in [1, inf)"),
    (dict(), math.nan, "a float in (-inf, inf)"),
    (dict(), math.inf, "a float in (-inf, inf)"),
    (dict(allow_inf=True), -math.inf, "a float in (-inf, inf]"),
    (dict(), "1.0", "a float in (-inf, inf)"),
    (dict(), True, "a float in (-inf, inf)"),
    (dict(), None, "a float in (-inf, inf)"),
    (dict(), np.array([1.0]), "a float in (-inf, inf)"),
])
def test_check_scalar_rejects(kwargs, value, allowed):
    with pytest.raises(InvalidParameterError) as info:
        check_scalar(value, "p", owner="Algo", **kwargs)
    assert str(info.value) == f"The 'p' parameter of Algo must be {allowed}. Got {value!r} instead."


def test_check_scalar_accepts_and_converts():
    assert check_scalar(1, "p") == 1.0 and isinstance(check_scalar(1, "p"), float)
    assert check_scalar(np.float32(0.5), "p", low=0.0) == 0.5
    assert check_scalar(3.0, "p", kind=int) == 3 and isinstance(check_scalar(3.0, "p", kind=int), int)
    assert check_scalar(np.int64(4), "p", kind=int, low=1) == 4
    assert check_scalar(math.inf, "p", low=0.0, closed="right", allow_inf=True) == math.inf
    assert check_scalar(math.inf, "p", low=0.0, high=1.0, allow_inf=True) == math.inf  # inf = "off"
    assert check_scalar(0.0, "p", low=0.0) == 0.0 and check_scalar(1.0, "p", high=1.0) == 1.0
    with pytest.raises(ValueError, match="closed"):
        check_scalar(1.0, "p", closed="open")


def test_check_option():
    assert check_option("pld", "accountant", ("pld", "rdp")) == "pld"
    with pytest.raises(InvalidParameterError,
                       match=r"^The 'accountant' parameter of X must be one of 'pld', 'rdp'. Got 'exact' instead.$"):
        check_option("exact", "accountant", ["pld", "rdp"], owner="X")


def test_check_array_shapes_and_values():
    arr = check_array([[1, 2], [3, 4]], "P", shape=(None, 2), low=0, high=4)
    assert arr.dtype == float and arr.shape == (2, 2)
    with pytest.raises(InvalidParameterError,
                       match=r"^The 'P' parameter of M must be a 3-dimensional array. Got shape \(2, 2\) instead.$"):
        check_array(arr, "P", owner="M", ndim=3)
    with pytest.raises(InvalidParameterError, match=r"must have shape \(any, 3\). Got shape \(2, 2\) instead."):
        check_array(arr, "P", shape=(None, 3))
    with pytest.raises(InvalidParameterError,
                       match=r"must contain only finite values. Got 1 non-finite entries instead."):
        check_array([1.0, np.nan], "r")
    assert np.isnan(check_array([1.0, np.nan], "r", finite=False)[1])
    with pytest.raises(InvalidParameterError, match=r"must have entries >= 0. Got minimum -1.0 instead."):
        check_array([-1.0, 2.0], "r", low=0)
    with pytest.raises(InvalidParameterError, match=r"must have entries <= 1. Got maximum 2.0 instead."):
        check_array([-1.0, 2.0], "r", high=1)
    assert check_array([], "r", low=0, high=1).size == 0
    with pytest.raises(InvalidParameterError, match=r"must be an array convertible to float64. Got 'list' instead."):
        check_array([1.0, "a"], "r")


def test_check_array_never_truncates_to_int():
    np.testing.assert_array_equal(check_array([0.0, 2.0], "a", dtype=int), [0, 2])
    with pytest.raises(InvalidParameterError,
                       match=r"The 'actions' parameter must be an array of integers. Got non-integer values"):
        check_array([0.0, 1.5], "actions", dtype=int)
    with pytest.raises(InvalidParameterError, match="array of integers"):
        check_array([0.0, np.inf], "actions", dtype=np.int64)
    with pytest.raises(InvalidParameterError, match="convertible to int64"):
        check_array(["0", "1"], "actions", dtype=int)
    assert check_array([1, 2], "x", dtype=None).dtype.kind == "i"  # dtype=None keeps the input dtype


def test_check_array_never_parses_strings_as_numbers():
    with pytest.raises(InvalidParameterError, match=r"'w' parameter must be an array convertible to float64. "
                                                    r"Got an array of dtype <U3 instead."):
        check_array(np.array(["0.5", "1.0"]), "w")


def test_check_group_map():
    groups = np.array([0, 2, 2])
    assert check_group_map(groups, 3, "groups", "X") is groups
    with pytest.raises(InvalidParameterError, match=r"The 'groups' parameter of X must be group ids in \[0, 3\)"
                                                    r".*Got 3 instead."):
        check_group_map(np.array([0, 3, 1]), 3, "groups", "X")
    with pytest.raises(InvalidParameterError, match=r"must be an array of shape \(3,\)"):
        check_group_map(np.array([0, 1, 1, 0]), 3, "groups", "X")


class _Fits(FittedAttributes):
    def fit(self):
        self.privacy_ledger_ = None
        self.value_ = 1.0
        return self


def test_fitted_attributes_before_fit_raise_not_fitted():
    est = _Fits()
    with pytest.raises(NotFittedError, match="This _Fits instance is not fitted yet: call 'fit' before using 'value_'"):
        _ = est.value_
    assert not hasattr(est, "value_")                      # NotFittedError is an AttributeError
    with pytest.raises(AttributeError) as private:          # private and dunder names: the plain error
        _ = est._hidden_
    assert type(private.value) is AttributeError
    assert copy.deepcopy(est) is not est and pickle.loads(pickle.dumps(est)).__class__ is _Fits
    est.fit()
    assert est.value_ == 1.0
    with pytest.raises(AttributeError) as typo:             # a fitted estimator's missing name is not "unfitted"
        _ = est.valeu_
    assert type(typo.value) is AttributeError
