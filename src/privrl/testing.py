"""The estimator contract test (ARCHITECTURE.md §7.1), usable by privrl's suite and by users who
add their own algorithms.

Each algorithm describes itself with a :class:`ContractCase`; :func:`check_contract` runs every
check and raises ``AssertionError`` naming the first one that fails.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl.base import Estimator, check_is_fitted, use_noise
from privrl.errors import InvalidParameterError, UtilityWarning
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import PrivacyBudget
from privrl.privacy.draws import release_problems, verify_releases

__all__ = ["ContractCase", "check_contract", "CHECKS", "use_noise"]


@dataclass(frozen=True)
class ContractCase:
    """How to build, fit and read one algorithm on a small fixed input.

    * ``make(budget)`` — an unfitted estimator with that budget (``PrivacyBudget.non_private()``
      for the infinite budget);
    * ``fit(estimator, rng)`` — fits it on the case's fixed input and returns what ``fit`` returned
      (``rng`` None with ``secure=True``);
    * ``output(estimator)`` — the released output as an array (θ̂, values, policy, regret...);
    * ``make_baseline()`` — the non-private counterpart (or ``None`` when the private class with an
      infinite budget *is* the baseline); ``fit`` and ``output`` must accept it too;
    * ``bad_params`` — constructor keyword overrides that must raise ``InvalidParameterError``
      (in the constructor or in ``fit``);
    * ``delta`` — δ at which ε spent is compared with the budget (for ρ-budgets, ε is compared with
      the zCDP total instead);
    * ``variants`` — constructor overrides that change *what is released* (pooling, groups, counters,
      local/central, calibrations...): the release invariant is checked on each of them, in seeded
      and in secure mode (:func:`check_release_invariant`). Declaring a new option here is all it
      takes to cover it.
    """

    name: str
    make: Callable[[PrivacyBudget], Estimator]
    fit: Callable[[Estimator, np.random.Generator | None], Any]
    output: Callable[[Estimator], np.ndarray]
    budget: PrivacyBudget
    delta: float = 1e-5
    make_baseline: Callable[[], Estimator] | None = None
    bad_params: Sequence[Mapping[str, object]] = field(default_factory=tuple)
    baseline_atol: float = 0.0
    variants: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def _out(case: ContractCase, est: Estimator) -> np.ndarray:
    return np.asarray(case.output(est), dtype=float)


_GUARANTEES = ("(epsilon, delta)-DP", "rho-zCDP", "JDP", "LDP", None)


def _same_param(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        return bool(np.all(a == b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable objects are simply not equal
        return False


def check_params_roundtrip(case: ContractCase) -> None:
    est = case.make(case.budget)
    params = est.get_params()
    clone = type(est)(**params)
    cloned = clone.get_params()
    assert cloned.keys() == params.keys(), "get_params does not round-trip"
    changed = [k for k in params if not _same_param(params[k], cloned[k])]
    assert not changed, f"constructor does not store parameters verbatim: {changed}"
    assert est.set_params(**params) is est, "set_params must return self"


def check_fit_returns_self(case: ContractCase) -> None:
    est = case.make(case.budget)
    assert case.fit(est, np.random.default_rng(0)) is est, "fit must return self"
    assert est.privacy_unit is not None and est.neighboring is not None, "privacy unit/relation unset"
    assert est.guarantee in _GUARANTEES, f"unknown guarantee {est.guarantee!r}; expected one of {_GUARANTEES}"
    assert isinstance(getattr(est, "privacy_ledger_", None), Ledger), "fit must set privacy_ledger_ (a Ledger)"


def check_bad_params(case: ContractCase) -> None:
    for override in case.bad_params:
        valid = set(case.make(case.budget).get_params())
        unknown = set(override) - valid
        assert not unknown, f"{case.name}: bad_params names unknown parameters {sorted(unknown)}"
        _check_refused(case, override, f"bad parameters {dict(override)}", "were accepted")


def _check_refused(case: ContractCase, params: Mapping[str, object], what: str, accepted: str) -> None:
    """Fitting ``case`` with ``params`` set raises an ``InvalidParameterError`` naming one of them
    (``what`` names the parameters in the failure messages, ``accepted`` ends the one for no error)."""
    try:
        est = case.make(case.budget).set_params(**params)
        case.fit(est, np.random.default_rng(0))
    except InvalidParameterError as exc:
        named = any(f"'{key}'" in str(exc) for key in params)
        assert named, f"{case.name}: the error for {what} does not name the parameter: {exc}"
        return
    except Exception as exc:  # noqa: BLE001 - any other exception is a contract failure
        raise AssertionError(f"{case.name}: {what} raised {type(exc).__name__} instead of InvalidParameterError: "
                             f"{exc}") from exc
    raise AssertionError(f"{case.name}: {what} {accepted}")


def check_declared_params(case: ContractCase) -> None:
    """The declaration (``params``) is the constructor, and every value it calls bad is refused
    with an ``InvalidParameterError`` naming the parameter."""
    est = case.make(case.budget)
    declared = [p.name for p in type(est).params]
    if not declared:
        return
    assert declared == type(est)._param_names(), (
        f"{case.name}: declared params {declared} differ from the constructor {type(est)._param_names()}")
    for p in type(est).params:
        for bad in p.bad_values():
            _check_refused(case, {p.name: bad}, f"{p.name}={bad!r}", "was accepted")


def check_secure(case: ContractCase) -> None:
    """``secure=True``: a seed is refused (naming 'rng'); without a seed the fit runs on OpenDP noise."""
    est = case.make(case.budget)
    if "secure" not in est.get_params() or not est.is_private:
        return
    est.set_params(secure=True)
    try:
        case.fit(est, np.random.default_rng(0))
    except InvalidParameterError as exc:
        assert "'rng'" in str(exc), f"{case.name}: secure=True with a seed raised without naming 'rng': {exc}"
    else:
        raise AssertionError(f"{case.name}: secure=True accepted a seeded rng")
    try:
        import opendp  # noqa: F401
    except ImportError:  # pragma: no cover - the 'secure' extra is part of the test install
        return
    assert case.fit(case.make(case.budget).set_params(secure=True), None) is not None


def check_same_rng_same_result(case: ContractCase) -> None:
    a = case.make(case.budget)
    b = case.make(case.budget)
    case.fit(a, np.random.default_rng(7))
    case.fit(b, np.random.default_rng(7))
    np.testing.assert_array_equal(_out(case, a), _out(case, b), err_msg="same rng, different result")


def check_different_rng_different_noise(case: ContractCase) -> None:
    a = case.make(case.budget)
    if not a.is_private:  # deterministic non-private algorithms may legitimately ignore rng
        return
    b = case.make(case.budget)
    case.fit(a, np.random.default_rng(7))
    case.fit(b, np.random.default_rng(8))
    assert not np.array_equal(_out(case, a), _out(case, b)), "different rng gave identical output"


def check_infinite_budget_is_baseline(case: ContractCase) -> None:
    private = case.make(PrivacyBudget.non_private() if case.budget.rho is None
                        else PrivacyBudget(rho=math.inf))
    case.fit(private, np.random.default_rng(3))
    assert not private.is_private, "an infinite budget must make the estimator non-private"
    assert private.privacy_spent(case.delta) == math.inf, "an infinite budget must report epsilon = inf"
    if case.make_baseline is None:
        return
    base = case.make_baseline()
    case.fit(base, np.random.default_rng(3))
    np.testing.assert_allclose(_out(case, private), _out(case, base), rtol=0, atol=case.baseline_atol,
                               err_msg="infinite budget differs from the non-private baseline")


def check_spent_within_budget(case: ContractCase) -> None:
    """A private fit records its releases in ``privacy_ledger_`` and spends at most the budget; a fit
    that records none must declare itself non-private (``guarantee = None`` or an infinite budget)."""
    est = case.make(case.budget)
    case.fit(est, np.random.default_rng(1))
    ledger = getattr(est, "privacy_ledger_", None)
    assert isinstance(ledger, Ledger), "fit must set privacy_ledger_ (a Ledger)"
    if not est.is_private:
        assert ledger.is_empty, "a non-private fit must leave privacy_ledger_ empty"
        return
    assert not ledger.is_empty, ("a private fit recorded no release in privacy_ledger_: record every release "
                                 "(through the fit's Releaser) or declare the estimator non-private (guarantee = None)")
    if case.budget.rho is not None:
        rho = ledger.zcdp_rho()
        assert rho <= case.budget.rho * (1 + 1e-9), f"spent rho {rho} > budget {case.budget.rho}"
        return
    eps = est.privacy_spent(case.delta)
    target = float(case.budget.epsilon)  # type: ignore[arg-type]  # not a rho budget here
    assert eps <= target * (1 + 1e-6), f"spent epsilon {eps} > budget {target}"


def _release_fit(case: ContractCase, overrides: Mapping[str, Any], secure: bool) -> Estimator:
    est = case.make(case.budget).set_params(**overrides)
    if secure:
        est.set_params(secure=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        with verify_releases():
            case.fit(est, None if secure else np.random.default_rng(11))
    return est


def check_release_invariant(case: ContractCase) -> None:
    """Every number the fit's noise source drew belongs to a ledger event, each event's declared
    noise is what was drawn, and no keyed block was read with two values
    (:func:`privrl.privacy.draws.release_problems`) — for the case and each of its ``variants``, with
    seeded noise and with ``secure=True`` (OpenDP's samplers: the production mode)."""
    base = case.make(case.budget)
    if not base.is_private:
        return
    modes = [False]
    if "secure" in base.get_params():
        try:
            import opendp  # noqa: F401
            modes.append(True)
        except ImportError:  # pragma: no cover - the 'secure' extra is part of the test install
            pass
    for overrides in [{}, *case.variants]:
        for secure in modes:
            est = _release_fit(case, overrides, secure)
            ledger: Ledger = check_is_fitted(est, "privacy_ledger_")
            problems = release_problems(ledger)
            where = f"{dict(overrides)} {'secure' if secure else 'seeded'}"
            assert not problems, f"release invariant broken ({where}): " + "; ".join(problems)
            external = all(d is not None and d.external for d in ledger.declarations)
            assert external or ledger.draws.total() > 0, f"a private fit drew no noise ({where})"


CHECKS = {
    "params_roundtrip": check_params_roundtrip,
    "fit_returns_self": check_fit_returns_self,
    "bad_params": check_bad_params,
    "declared_params": check_declared_params,
    "secure": check_secure,
    "same_rng_same_result": check_same_rng_same_result,
    "different_rng_different_noise": check_different_rng_different_noise,
    "infinite_budget_is_baseline": check_infinite_budget_is_baseline,
    "spent_within_budget": check_spent_within_budget,
    "release_invariant": check_release_invariant,
}


def check_contract(case: ContractCase, checks: Sequence[str] | None = None) -> None:
    """Run the named checks (all by default) on ``case``; the ``AssertionError`` of a failing
    check names the case and the check."""
    names = list(CHECKS) if checks is None else list(checks)
    for name in names:
        if name not in CHECKS:
            raise InvalidParameterError(
                f"The 'checks' parameter of check_contract must contain only {sorted(CHECKS)}. "
                f"Got {name!r} instead.")
    for name in names:
        try:
            CHECKS[name](case)
        except AssertionError as exc:
            raise AssertionError(f"[{case.name}] contract check '{name}' failed: {exc}") from exc
