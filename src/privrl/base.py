"""The estimator contract shared by every algorithm (ARCHITECTURE.md §3).

* keyword-only constructors that only store parameters (validated in ``fit``);
* ``fit(...) -> self``; fitted attributes end in ``_`` (``policy_``, ``values_``, ``theta_``,
  ``regret_``, ``privacy_ledger_``);
* class attributes ``privacy_unit``, ``neighboring`` and ``guarantee`` ("(epsilon, delta)-DP",
  "rho-zCDP", "JDP", "LDP"; ``None`` for non-private algorithms);
* ``privacy_spent(delta)`` reads the ledger; ``get_params()`` feeds the manifest.

Parameters are declared once, as annotated class fields whose value is
:func:`~privrl._params.param` (``lam: float = param("ridge λ", default=1.0, low=0.0)``): the
declaration gives the constructor (with a real signature, also seen by type checkers through PEP
681's ``dataclass_transform``), ``cls.params`` (the :class:`~privrl._params.Param` objects, base
classes first), validation (:meth:`Estimator._validated`), the ``privrl fit`` options and the
contract test's bad-parameter cases.

Private estimators (:class:`PrivateEstimator`) share ``budget`` (required), ``calibration``
(``"tight"`` | ``"sound"`` | ``"paper"``) and ``secure``; every ``fit`` opens one
:class:`~privrl.privacy.release.Releaser` (:meth:`PrivateEstimator._privacy`), through which all of
its privacy noise is drawn and every event recorded in ``privacy_ledger_``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import sys
import warnings
from typing import Any, ClassVar

from privrl._params import REQUIRED, Param, param
from privrl._rng import RngLike
from privrl._validation import FittedAttributes
from privrl.errors import InvalidParameterError, NotFittedError, UtilityWarning
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit, reporting_delta
from privrl.privacy.calibration import CALIBRATIONS, CONSTANT_PRESETS
from privrl.privacy.noise import NoiseSource, make_noise
from privrl.privacy.release import Releaser

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10
    from typing_extensions import dataclass_transform

__all__ = ["Estimator", "PrivateEstimator", "check_is_fitted", "param", "use_noise", "BUDGET", "CALIBRATION",
           "SECURE", "CONSTANTS"]


def _make_init(params: tuple[Param, ...]) -> Any:
    """A keyword-only ``__init__`` storing every declared parameter verbatim."""
    names = [p.name for p in params]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            first = names[0] if names else "name"
            raise InvalidParameterError(
                f"{type(self).__name__} takes keyword arguments only (parameters are keyword-only): name each "
                f"one, e.g. {type(self).__name__}({first}=...). Got {len(args)} positional argument(s) instead.")
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


def _own_declarations(cls: type) -> tuple[Param, ...]:
    """The parameters a class body declares (annotated fields valued by ``param``), named after
    their fields and removed from the class (an instance stores its values; the class keeps none,
    as before a declaration existed). Annotated non-``ClassVar`` attributes that are not parameters
    are refused: a type checker would take them for constructor arguments."""
    annotations = inspect.get_annotations(cls)
    own = []
    for name, value in list(cls.__dict__.items()):
        if not isinstance(value, Param):
            continue
        if name not in annotations:
            raise TypeError(f"{cls.__name__}.{name} = param(...) needs a type annotation ({name}: type = ...)")
        if value.name not in ("", name):
            raise TypeError(f"{cls.__name__}.{name} is declared with the name {value.name!r}")
        own.append(dataclasses.replace(value, name=name))
        delattr(cls, name)
    declared = {p.name for p in own}
    for name, annotation in annotations.items():
        if name not in declared and not _is_classvar(annotation):
            raise TypeError(f"{cls.__name__}.{name} is annotated but is not a parameter: give it a param(...) "
                            "value or annotate it ClassVar[...]")
    return tuple(own)


def _is_classvar(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.replace("typing.", "").startswith("ClassVar")
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


@dataclass_transform(kw_only_default=True, eq_default=False, field_specifiers=(param,))
class Estimator(FittedAttributes):
    """Base class: parameter introspection, fitted-state checks and privacy queries.

    A subclass declares its parameters as annotated fields (``lam: float = param(...)``, see
    :mod:`privrl._params`); ``params`` is then every declared parameter, the inherited ones first
    (a redeclared inherited parameter keeps its place and takes the new declaration), and a class
    without an ``__init__`` of its own gets the keyword-only constructor. An annotated class
    attribute that is not a parameter must be a ``ClassVar`` (type checkers would read it as one); a
    name declared twice in one class body is refused by the type checker (``make lint``).
    """

    privacy_unit: ClassVar[PrivacyUnit | None] = None
    neighboring: ClassVar[Neighboring | None] = None
    guarantee: ClassVar[str | None] = None
    #: the declared parameters, in constructor order (set for every subclass at class creation)
    params: ClassVar[tuple[Param, ...]] = ()
    _declared_params: ClassVar[tuple[Param, ...]] = ()
    #: the noise source :func:`use_noise` set for the next fits (None: the default source); an
    #: instance attribute, not a parameter (this base class's own annotations are not fields)
    _noise_override: NoiseSource | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params" in cls.__dict__:
            raise TypeError(f"{cls.__name__} sets 'params': declare each parameter as an annotated field "
                            "instead (name: type = param(...), see privrl._params)")
        cls._declared_params = _own_declarations(cls)
        merged: dict[str, Param] = {}
        for klass in reversed(cls.__mro__):
            for p in klass.__dict__.get("_declared_params", ()):
                merged[p.name] = p
        cls.params = tuple(merged.values())
        if cls.params and "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(cls.params)  # type: ignore[method-assign]

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

    def set_params(self, **params: object) -> Estimator:
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


#: The parameters every private estimator shares (one name and meaning everywhere): ``budget``,
#: ``calibration`` and ``secure`` are :class:`PrivateEstimator`'s fields; ``BUDGET`` is also the
#: starting point of a budget with a family's own check (``param(like=BUDGET, check=...)``).
BUDGET = param("the privacy budget: PrivacyBudget(epsilon=..., delta=...) or PrivacyBudget(rho=...); an "
               "infinite budget gives the non-private counterpart exactly", kind="budget", cli=False)
CALIBRATION = param("noise calibration: 'tight' (exact accountant over the algorithm's releases, least "
                    "noise), 'sound' (corrected closed forms), 'paper' (as printed; labelled)",
                    default="tight", kind="option", options=CALIBRATIONS)
SECURE = param("draw privacy noise from OpenDP's samplers (OS CSPRNG, refuses seeds)", default=False,
               kind="bool")
#: The utility preset of private and non-private estimators alike.
CONSTANTS = param("utility preset of the hyper-parameters privacy does not depend on: 'theory' (the "
                  "paper's constants) or 'practical'", default="theory", kind="option", options=CONSTANT_PRESETS)


class PrivateEstimator(Estimator):
    """Base class of private estimators: ``budget``, ``calibration``, ``secure`` and one
    :class:`~privrl.privacy.release.Releaser` per ``fit``.

    Subclasses declare their own parameters after these three (a subclass may redeclare ``budget``
    with its own check: ``budget: PrivacyBudget = param(like=BUDGET, check=...)``), call
    :meth:`_privacy` once at the start of ``fit`` and draw every privacy-noise sample through the
    returned releaser (or its ``noise`` source, for streaming privatizers, recording their events
    with ``record``).
    """

    budget: PrivacyBudget = param(like=BUDGET)
    calibration: str = CALIBRATION
    secure: bool = SECURE

    def _privacy(self, rng: RngLike, *, n_units: int | None = None) -> Releaser:
        """Open this fit's privacy record: a fresh ``privacy_ledger_`` and the releaser that draws
        from the estimator's noise source — :class:`~privrl.privacy.noise.SecureNoise` when
        ``secure=True`` (``rng`` must then be None), else seeded NumPy from ``rng`` (a child stream
        reserved for privacy noise is best). A source set by :func:`use_noise` (constant or scaled
        noise, for structure tests and audits) takes precedence.

        ``n_units`` (the number of privacy units, e.g. trajectories) enables the δ sanity check:
        a ``UtilityWarning`` when δ ≥ 1/n (a mechanism that publishes one unit's data in the clear
        with probability δ would then be allowed) or δ > 0.01.
        """
        owner = f"{type(self).__name__}.fit"
        self.privacy_ledger_ = Ledger()
        if self._noise_override is not None:
            noise = self._noise_override
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
        if getattr(self, "secure", False) and rng is not None and self._noise_override is None:
            raise InvalidParameterError(
                f"The 'rng' parameter of {type(self).__name__}.fit must be None when secure=True (OpenDP's "
                f"samplers use the OS CSPRNG and cannot be seeded). Got {type(rng).__name__} instead.")
        return rng


def use_noise(estimator: Estimator, noise: NoiseSource | None) -> Estimator:
    """Make ``estimator`` draw its privacy noise from ``noise`` (a
    :class:`~privrl.privacy.noise.NoiseSource`, e.g. ``ConstantNoise`` for structure tests or
    ``ScaledNoise`` for an audit's negative control) in its next fits (:meth:`PrivateEstimator._privacy`
    reads it); ``None`` restores the default. Not a constructor parameter: ``clone``/``get_params``
    do not carry it."""
    if noise is not None and not isinstance(noise, NoiseSource):
        raise InvalidParameterError(
            f"The 'noise' parameter of use_noise must be a NoiseSource or None. Got {type(noise).__name__} instead.")
    estimator._noise_override = noise
    return estimator


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
