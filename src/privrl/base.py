"""The estimator contract shared by every algorithm (ARCHITECTURE.md §3).

* keyword-only constructors that only store parameters (validated in ``fit``);
* ``fit(...) -> self``; fitted attributes end in ``_`` (``policy_``, ``values_``, ``theta_``,
  ``regret_``, ``privacy_ledger_``);
* class attributes ``privacy_unit``, ``neighboring`` and ``guarantee`` ("(epsilon, delta)-DP",
  "rho-zCDP", "JDP", "LDP"; ``None`` for non-private algorithms);
* ``privacy_spent(delta)`` reads the ledger; ``get_params()`` feeds the manifest.

Parameters are declared once, as :class:`~privrl._params.Param` objects in ``params``: the
declaration gives the constructor (with a real signature), validation (:meth:`Estimator._validated`),
the ``privrl fit`` options and the contract test's bad-parameter cases.

Private estimators (:class:`PrivateEstimator`) share ``budget`` (required), ``calibration``
(``"tight"`` | ``"sound"`` | ``"paper"``) and ``secure``; every ``fit`` opens one
:class:`~privrl.privacy.release.Releaser` (:meth:`PrivateEstimator._privacy`), through which all of
its privacy noise is drawn and every event recorded in ``privacy_ledger_``.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any, ClassVar

from privrl._params import REQUIRED, Param
from privrl._rng import RngLike
from privrl.errors import InvalidParameterError, NotFittedError, UtilityWarning
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit, reporting_delta
from privrl.privacy.calibration import CALIBRATIONS, CONSTANT_PRESETS
from privrl.privacy.noise import NoiseSource, make_noise
from privrl.privacy.release import Releaser

__all__ = ["Estimator", "PrivateEstimator", "check_is_fitted", "BUDGET", "CALIBRATION", "SECURE",
           "CONSTANTS", "PRIVATE_PARAMS"]


def _make_init(params: tuple[Param, ...]) -> Any:
    """A keyword-only ``__init__`` storing every declared parameter verbatim."""
    names = [p.name for p in params]

    def __init__(self: Any, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected keyword argument(s) "
                            f"{unknown}; parameters are {names}")
        missing = [p.name for p in params if p.required and p.name not in kwargs]
        if missing:
            raise TypeError(f"{type(self).__name__}.__init__() missing required keyword argument(s) {missing}")
        for p in params:
            setattr(self, p.name, kwargs.get(p.name, p.default))

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                             default=inspect.Parameter.empty if p.required else p.default) for p in params])
    return __init__


class Estimator:
    """Base class: parameter introspection, fitted-state checks and privacy queries."""

    privacy_unit: ClassVar[PrivacyUnit | None] = None
    neighboring: ClassVar[Neighboring | None] = None
    guarantee: ClassVar[str | None] = None
    #: the declared parameters (see :mod:`privrl._params`); a class that declares them and no
    #: ``__init__`` of its own gets a keyword-only constructor from the declaration
    params: ClassVar[tuple[Param, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params" in cls.__dict__ and "__init__" not in cls.__dict__:
            names = [p.name for p in cls.params]
            if len(set(names)) != len(names):
                raise TypeError(f"{cls.__name__}.params declares a parameter twice: {names}")
            cls.__init__ = _make_init(tuple(cls.params))  # type: ignore[method-assign]

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @classmethod
    def param(cls, name: str) -> Param:
        """The declaration of parameter ``name``."""
        for p in cls.params:
            if p.name == name:
                return p
        raise InvalidParameterError(f"{cls.__name__} declares no parameter {name!r}; declared: "
                                    f"{[p.name for p in cls.params]}.")

    def _validated(self) -> dict[str, Any]:
        """Every declared parameter validated (the first invalid one raises, naming itself)."""
        owner = type(self).__name__
        return {p.name: p.validate(getattr(self, p.name, REQUIRED), owner) for p in self.params}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (sklearn convention; ``deep`` is accepted for sklearn's
        ``clone`` — privrl estimators hold no nested estimators)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Estimator:
        valid = set(self._param_names())
        for key, value in params.items():
            if key not in valid:
                raise InvalidParameterError(
                    f"The '{key}' parameter of {type(self).__name__} does not exist: parameter names must be "
                    f"one of {sorted(valid)}. Got {key}={value!r} instead."
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- privacy
    @property
    def is_private(self) -> bool:
        """False for non-private algorithms and for an infinite budget."""
        budget = getattr(self, "budget", None)
        return self.guarantee is not None and (budget is None or budget.is_private)

    def privacy_spent(self, delta: float | None = None, accountant: str = "auto") -> float:
        """ε at ``delta`` of everything released by the last ``fit``, from ``privacy_ledger_``;
        ``delta=None`` reports at :func:`~privrl.privacy.budget.reporting_delta` of the budget (its
        δ; 0 for a pure budget; 1e-5 for a ρ budget or none).

        Non-private algorithms and infinite budgets return ``math.inf``.
        """
        ledger: Ledger = check_is_fitted(self, "privacy_ledger_")
        if not self.is_private:
            return math.inf
        if delta is None:
            budget = getattr(self, "budget", None)
            delta = reporting_delta(budget if isinstance(budget, PrivacyBudget) else None)
        return ledger.epsilon(delta, accountant=accountant)


#: The parameters every private estimator shares (one name and meaning everywhere).
BUDGET = Param("budget", REQUIRED, "the privacy budget: PrivacyBudget(epsilon=..., delta=...) or "
               "PrivacyBudget(rho=...); an infinite budget gives the non-private counterpart exactly",
               kind="budget", cli=False)
CALIBRATION = Param("calibration", "tight", "noise calibration: 'tight' (exact accountant over the "
                    "algorithm's releases, least noise), 'sound' (corrected closed forms), 'paper' "
                    "(as printed; labelled)", kind="option", options=CALIBRATIONS)
SECURE = Param("secure", False, "draw privacy noise from OpenDP's samplers (OS CSPRNG, refuses seeds)",
               kind="bool")
CONSTANTS = Param("constants", "theory", "utility preset of the hyper-parameters privacy does not "
                  "depend on: 'theory' (the paper's constants) or 'practical'", kind="option",
                  options=CONSTANT_PRESETS)
PRIVATE_PARAMS = (BUDGET, CALIBRATION, SECURE)


class PrivateEstimator(Estimator):
    """Base class of private estimators: ``budget``, ``calibration``, ``secure`` and one
    :class:`~privrl.privacy.release.Releaser` per ``fit``.

    Subclasses declare ``params = PRIVATE_PARAMS + (...)``, call :meth:`_privacy` once at the start
    of ``fit`` and draw every privacy-noise sample through the returned releaser (or its
    ``noise`` source, for streaming privatizers, recording their events with ``record``).
    """

    params: ClassVar[tuple[Param, ...]] = PRIVATE_PARAMS

    def _privacy(self, rng: RngLike, *, n_units: int | None = None) -> Releaser:
        """Open this fit's privacy record: a fresh ``privacy_ledger_`` and the releaser that draws
        from the estimator's noise source — :class:`~privrl.privacy.noise.SecureNoise` when
        ``secure=True`` (``rng`` must then be None), else seeded NumPy from ``rng`` (a child stream
        reserved for privacy noise is best). A source set by :func:`privrl.testing.use_noise`
        (constant or scaled noise, for structure tests and audits) takes precedence.

        ``n_units`` (the number of privacy units, e.g. trajectories) enables the δ sanity check:
        a ``UtilityWarning`` when δ ≥ 1/n (a mechanism that publishes one unit's data in the clear
        with probability δ would then be allowed) or δ > 0.01.
        """
        owner = f"{type(self).__name__}.fit"
        self.privacy_ledger_ = Ledger()
        override: NoiseSource | None = getattr(self, "_noise_override", None)
        if override is not None:
            noise = override
        else:
            noise = make_noise(rng, secure=bool(getattr(self, "secure", False)), owner=owner)
        budget = getattr(self, "budget", None)
        if isinstance(budget, PrivacyBudget) and budget.is_private and budget.delta:
            _warn_large_delta(budget.delta, n_units, type(self).__name__)
        return Releaser(noise, self.privacy_ledger_)

    def _fit_rng(self, rng: RngLike) -> RngLike:
        """The ``rng`` of a fit, checked against ``secure``: with ``secure=True`` a seed is refused
        (an attacker who knows it knows the noise); the non-privacy randomness then comes from OS
        entropy."""
        if getattr(self, "secure", False) and rng is not None and getattr(self, "_noise_override", None) is None:
            raise InvalidParameterError(
                f"The 'rng' parameter of {type(self).__name__}.fit must be None when secure=True (OpenDP's "
                f"samplers use the OS CSPRNG and cannot be seeded). Got {type(rng).__name__} instead.")
        return rng


def _warn_large_delta(delta: float, n_units: int | None, owner: str) -> None:
    if delta > 0.01:
        warnings.warn(f"{owner}: delta = {delta:g} > 0.01 allows a mechanism that publishes an individual's "
                      "data outright with probability delta; choose delta well below 1/n (e.g. 1e-5 or 1/n²).",
                      UtilityWarning, stacklevel=4)
    elif n_units and delta >= 1.0 / n_units:
        warnings.warn(f"{owner}: delta = {delta:g} >= 1/n = 1/{n_units}: a mechanism that publishes one of "
                      f"the {n_units} units in the clear would meet this guarantee; choose delta < 1/n "
                      "(e.g. 1/n²).", UtilityWarning, stacklevel=4)


def check_is_fitted(estimator: Any, attribute: str) -> Any:
    """Return ``estimator.<attribute>`` or raise :class:`NotFittedError`."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet: call 'fit' before using "
            f"'{attribute}'."
        )
    return getattr(estimator, attribute)
