"""PrivacyBudget, PrivacyUnit, Neighboring: validation and round trips."""

import json
import math

import pytest

from privrl.errors import InvalidParameterError
from privrl.privacy import Neighboring, PrivacyBudget, PrivacyUnit


def test_epsilon_delta_budget():
    b = PrivacyBudget(epsilon=1.0, delta=1e-5)
    assert (b.epsilon, b.delta, b.rho) == (1.0, 1e-5, None)
    assert b.is_private and not b.is_zcdp
    assert repr(b) == "PrivacyBudget(epsilon=1.0, delta=1e-05)"
    assert str(b) == "(epsilon=1, delta=1e-05)-DP"
    assert PrivacyBudget(epsilon=2).delta == 0.0  # pure DP
    assert isinstance(PrivacyBudget(epsilon=2).epsilon, float)


def test_rho_budget():
    b = PrivacyBudget(rho=0.5)
    assert b.is_zcdp and b.is_private and b.delta is None and b.epsilon is None
    assert repr(b) == "PrivacyBudget(rho=0.5)" and str(b) == "rho=0.5-zCDP"


@pytest.mark.parametrize("b", [PrivacyBudget.non_private(), PrivacyBudget(epsilon=math.inf),
                               PrivacyBudget(rho=math.inf)])
def test_infinite_budget_is_non_private(b):
    assert not b.is_private
    assert str(b) == "non-private"


def test_budget_is_frozen_and_hashable():
    b = PrivacyBudget(epsilon=1.0, delta=1e-5)
    with pytest.raises(AttributeError):
        b.epsilon = 2.0
    assert b == PrivacyBudget(epsilon=1.0, delta=1e-5) and hash(b) == hash(PrivacyBudget(epsilon=1.0, delta=1e-5))


@pytest.mark.parametrize("kwargs,match", [
    (dict(), r"The 'epsilon/rho' parameter of PrivacyBudget must be exactly one of epsilon \(with delta\) or rho"),
    (dict(epsilon=1.0, rho=1.0), r"exactly one of epsilon"),
    (dict(delta=1e-5), r"exactly one of epsilon"),
    (dict(rho=1.0, delta=1e-5), r"The 'delta' parameter of PrivacyBudget must be None when rho is given. Got 1e-05"),
    (dict(epsilon=0.0), r"The 'epsilon' parameter of PrivacyBudget must be a float in \(0.0, inf\]. Got 0.0 instead."),
    (dict(epsilon=-1.0), r"'epsilon' .* Got -1.0"),
    (dict(epsilon=math.nan), r"'epsilon' .* Got nan"),
    (dict(epsilon=-math.inf), r"'epsilon' .* Got -inf"),
    (dict(epsilon="1"), r"'epsilon' .* Got '1'"),
    (dict(epsilon=True), r"'epsilon' .* Got True"),
    (dict(epsilon=1.0, delta=1.0), r"The 'delta' parameter of PrivacyBudget must be a float in \[0.0, 1.0\). Got 1.0"),
    (dict(epsilon=1.0, delta=-0.1), r"'delta' .* Got -0.1"),
    (dict(epsilon=1.0, delta=math.nan), r"'delta' .* Got nan"),
    (dict(rho=0.0), r"The 'rho' parameter of PrivacyBudget must be a float in \(0.0, inf\]. Got 0.0"),
    (dict(rho=-2.0), r"'rho' .* Got -2.0"),
])
def test_budget_validation(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        PrivacyBudget(**kwargs)


@pytest.mark.parametrize("b", [PrivacyBudget(epsilon=1.0, delta=1e-5), PrivacyBudget(epsilon=3.0),
                               PrivacyBudget(rho=0.25), PrivacyBudget.non_private(), PrivacyBudget(rho=math.inf)])
def test_budget_dict_round_trip_through_json(b):
    d = b.to_dict()
    text = json.dumps(d, allow_nan=False)  # strict JSON: infinity is written as "inf"
    assert PrivacyBudget.from_dict(json.loads(text)) == b


def test_from_dict_accepts_infinity_spellings_and_rejects_garbage():
    assert PrivacyBudget.from_dict({"epsilon": "Infinity", "delta": 0.0}) == PrivacyBudget.non_private()
    assert PrivacyBudget.from_dict({"rho": "inf"}) == PrivacyBudget(rho=math.inf)
    with pytest.raises(InvalidParameterError, match=r"'data' parameter of PrivacyBudget.from_dict must be a dict"):
        PrivacyBudget.from_dict([1.0, 1e-5])
    with pytest.raises(InvalidParameterError, match=r"keys among 'epsilon', 'delta', 'rho'"):
        PrivacyBudget.from_dict({"eps": 1.0})
    with pytest.raises(InvalidParameterError, match=r"'epsilon' parameter of PrivacyBudget .* Got 'infinite'"):
        PrivacyBudget.from_dict({"epsilon": "infinite"})


def test_privacy_unit_and_neighboring_enums():
    assert {u.value for u in PrivacyUnit} == {"trajectory", "user_episode", "reward_function"}
    assert {n.value for n in Neighboring} == {"replace_one", "add_or_remove_one", "sup_norm_one"}
    for enum_cls in (PrivacyUnit, Neighboring):
        for member in enum_cls:
            assert enum_cls(member.value) is member
            assert json.loads(json.dumps(member)) == member.value  # str enum: JSON-serialisable
    with pytest.raises(ValueError):
        PrivacyUnit("user")
