"""The estimator contract test (ARCHITECTURE.md §7.1), usable by privrl's suite and by users who
add their own algorithms.

Each algorithm describes itself with a :class:`ContractCase`; :func:`check_contract` runs every
check and raises ``AssertionError`` naming the first one that fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl.base import Estimator
from privrl.errors import InvalidParameterError
from privrl.privacy.budget import PrivacyBudget

__all__ = ["ContractCase", "check_contract", "CHECKS"]


@dataclass(frozen=True)
class ContractCase:
    """How to build, fit and read one algorithm on a small fixed input.

    * ``make(budget)`` — an unfitted estimator with that budget (``PrivacyBudget.non_private()``
      for the infinite budget);
    * ``fit(estimator, rng)`` — fits it on the case's fixed input and returns what ``fit`` returned;
    * ``output(estimator)`` — the released output as an array (θ̂, values, policy, regret...);
    * ``make_baseline()`` — the non-private counterpart (or ``None`` when the private class with an
      infinite budget *is* the baseline); ``fit`` and ``output`` must accept it too;
    * ``bad_params`` — constructor keyword overrides that must raise ``InvalidParameterError``
      (in the constructor or in ``fit``);
    * ``delta`` — δ at which ε spent is compared with the budget (for ρ-budgets, ε is compared with
      the zCDP total instead).
    """

    name: str
    make: Callable[[PrivacyBudget], Estimator]
    fit: Callable[[Estimator, np.random.Generator], Any]
    output: Callable[[Estimator], np.ndarray]
    budget: PrivacyBudget
    delta: float = 1e-5
    make_baseline: Callable[[], Estimator] | None = None
    bad_params: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    baseline_atol: float = 0.0


def _out(case: ContractCase, est: Estimator) -> np.ndarray:
    return np.asarray(case.output(est), dtype=float)


def check_params_roundtrip(case: ContractCase) -> None:
    est = case.make(case.budget)
    params = est.get_params()
    clone = type(est)(**params)
    assert clone.get_params().keys() == params.keys(), "get_params does not round-trip"
    est.set_params(**params)


def check_fit_returns_self(case: ContractCase) -> None:
    est = case.make(case.budget)
    assert case.fit(est, np.random.default_rng(0)) is est, "fit must return self"
    assert est.privacy_unit is not None and est.neighboring is not None, "privacy unit/relation unset"


def check_bad_params(case: ContractCase) -> None:
    for override in case.bad_params:
        try:
            est = case.make(case.budget).set_params(**override)
            case.fit(est, np.random.default_rng(0))
        except InvalidParameterError:
            continue
        raise AssertionError(f"{case.name}: bad parameters {dict(override)} were accepted")


def check_same_rng_same_result(case: ContractCase) -> None:
    a = case.make(case.budget)
    b = case.make(case.budget)
    case.fit(a, np.random.default_rng(7))
    case.fit(b, np.random.default_rng(7))
    np.testing.assert_array_equal(_out(case, a), _out(case, b), err_msg="same rng, different result")


def check_different_rng_different_noise(case: ContractCase) -> None:
    a = case.make(case.budget)
    b = case.make(case.budget)
    case.fit(a, np.random.default_rng(7))
    case.fit(b, np.random.default_rng(8))
    assert not np.array_equal(_out(case, a), _out(case, b)), "different rng gave identical output"


def check_infinite_budget_is_baseline(case: ContractCase) -> None:
    private = case.make(PrivacyBudget.non_private() if case.budget.rho is None
                        else PrivacyBudget(rho=math.inf))
    case.fit(private, np.random.default_rng(3))
    if case.make_baseline is None:
        return
    base = case.make_baseline()
    case.fit(base, np.random.default_rng(3))
    np.testing.assert_allclose(_out(case, private), _out(case, base), rtol=0, atol=case.baseline_atol,
                               err_msg="infinite budget differs from the non-private baseline")


def check_spent_within_budget(case: ContractCase) -> None:
    est = case.make(case.budget)
    case.fit(est, np.random.default_rng(1))
    if case.budget.rho is not None:
        rho = est.privacy_ledger_.zcdp_rho()
        assert rho <= case.budget.rho * (1 + 1e-9), f"spent rho {rho} > budget {case.budget.rho}"
        return
    eps = est.privacy_spent(case.delta)
    assert eps <= case.budget.epsilon * (1 + 1e-6), f"spent epsilon {eps} > budget {case.budget.epsilon}"


CHECKS = {
    "params_roundtrip": check_params_roundtrip,
    "fit_returns_self": check_fit_returns_self,
    "bad_params": check_bad_params,
    "same_rng_same_result": check_same_rng_same_result,
    "different_rng_different_noise": check_different_rng_different_noise,
    "infinite_budget_is_baseline": check_infinite_budget_is_baseline,
    "spent_within_budget": check_spent_within_budget,
}


def check_contract(case: ContractCase, checks: Sequence[str] | None = None) -> None:
    """Run the named checks (all by default) on ``case``."""
    for name in checks or CHECKS:
        if name not in CHECKS:
            raise InvalidParameterError(f"Unknown contract check {name!r}. Known: {sorted(CHECKS)}.")
        CHECKS[name](case)
