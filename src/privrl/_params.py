"""Estimator parameters declared once (name, kind, range, default, help).

An estimator declares each parameter as an annotated class field whose value is :func:`param`
(a PEP 681 field specifier; :class:`privrl.base.Estimator` is a ``dataclass_transform`` base)::

    class DPThing(PrivateEstimator):
        gamma: float = param("discount factor γ", low=0.0, high=1.0, closed="left")   # required
        lam: float = param("ridge λ", default=1.0, low=0.0, closed="neither")
        constants: str = CONSTANTS            # a shared declaration, reused by assignment

At class creation each field becomes a :class:`Param` named after it, collected with the inherited
ones in ``cls.params`` (base classes first, declaration order); from that single declaration
privrl derives

* the keyword-only constructor (``__init__`` stores every value verbatim; sklearn convention),
  with a real signature for ``inspect``, sklearn's ``clone`` and IDEs — and, through
  ``dataclass_transform``, the same constructor for type checkers (mypy, pyright);
* validation in ``fit`` (:meth:`Param.validate`, one message format, ARCHITECTURE.md §5);
* the ``privrl fit`` command-line options (:meth:`Param.cli_option`);
* the contract test's bad-parameter cases (:meth:`Param.bad_values`).

>>> p = Param("lam", 1.0, "ridge parameter λ", low=0.0, closed="neither")
>>> p.validate(2, "DPLSL")
2.0
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl._validation import check_option, check_scalar, param_error
from privrl.privacy.budget import PrivacyBudget

__all__ = ["Param", "param", "REQUIRED", "KINDS"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter the user must give.
REQUIRED: Any = _Required()

#: ``float``/``int`` (ranges), ``bool``, ``option`` (one of ``options``), ``budget`` (a
#: :class:`~privrl.PrivacyBudget`), ``array`` (array-like, checked by ``check``), ``object``
#: (anything ``check`` accepts, e.g. an environment or a tuple).
KINDS = ("float", "int", "bool", "option", "budget", "array", "object")


@dataclass(frozen=True)
class Param:
    """One constructor parameter of an estimator (declared with :func:`param`; ``name`` is the
    field's name, given when the estimator class is created).

    ``default`` may be :data:`REQUIRED`. Numbers: ``low``/``high``/``closed``/``allow_inf`` as in
    :func:`privrl._validation.check_scalar`; ``none_ok`` admits ``None`` (e.g. "derive it from
    the data"); ``options`` for ``kind="option"`` (a value may also be numeric when ``kind`` is
    ``"float"`` and ``options`` lists the strings it admits, e.g. ``kappa: float | "auto"``).
    ``check(value, name, owner)`` validates kinds ``array``/``object`` (and refines others); it
    returns the value to use. ``cli=False`` keeps a parameter off the command line (arrays,
    environments).
    """

    name: str
    default: Any = REQUIRED
    help: str = ""
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    allow_inf: bool = False
    none_ok: bool = False
    options: tuple[Any, ...] = ()
    check: Callable[[Any, str, str], Any] | None = None
    cli: bool = True
    bad: tuple[Any, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    # -- validation
    def validate(self, value: Any, owner: str) -> Any:
        """The validated value (converted where the kind says so) or an ``InvalidParameterError``
        naming the parameter, the allowed values and the value received."""
        if value is REQUIRED:
            raise param_error(self.name, owner, f"given ({self.help or 'required'})", None)
        if value is None and self.none_ok:
            return None
        if isinstance(value, str) and self.options and self.kind in ("float", "int"):
            return check_option(value, self.name, self.options, owner=owner)
        if self.kind in ("float", "int"):
            if value is None:
                raise param_error(self.name, owner, self.describe(), value)
            value = check_scalar(value, self.name, owner=owner, kind=float if self.kind == "float" else int,
                                 low=self.low, high=self.high, closed=self.closed, allow_inf=self.allow_inf)
        elif self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise param_error(self.name, owner, "a bool", value)
            value = bool(value)
        elif self.kind == "option":
            check_option(value, self.name, self.options, owner=owner)
        elif self.kind == "budget":
            if not isinstance(value, PrivacyBudget):
                raise param_error(self.name, owner, "a PrivacyBudget (e.g. PrivacyBudget(epsilon=1.0, "
                                  "delta=1e-5) or PrivacyBudget(rho=0.5))", value)
        if self.check is not None:
            value = self.check(value, self.name, owner)
        return value

    def describe(self) -> str:
        """The allowed values in words (for help texts and messages)."""
        if self.kind == "option":
            text = "one of " + ", ".join(repr(o) for o in self.options)
        elif self.kind in ("float", "int"):
            lo = "-inf" if self.low is None else repr(self.low)
            hi = "inf" if self.high is None else repr(self.high)
            left = "[" if self.low is not None and self.closed in ("both", "left") else "("
            right = "]" if (self.high is not None and self.closed in ("both", "right")) or (
                self.high is None and self.allow_inf) else ")"
            text = f"{'an int' if self.kind == 'int' else 'a float'} in {left}{lo}, {hi}{right}"
            if self.options:
                text += " or one of " + ", ".join(repr(o) for o in self.options)
        elif self.kind == "bool":
            text = "a bool"
        elif self.kind == "budget":
            text = "a PrivacyBudget"
        else:
            text = self.help or self.kind
        return text + (" or None" if self.none_ok else "")

    def bad_values(self) -> list[Any]:
        """Values that must be refused (for the contract test): declared ``bad`` values, then one
        value outside each finite bound, a wrong type, an unknown option."""
        out = list(self.bad)
        if self.kind in ("float", "int"):
            eps = 1 if self.kind == "int" else 1e-9
            if self.low is not None:
                out.append(self.low - (eps if self.closed in ("both", "left") else 0)
                           - (1 if self.kind == "int" else 0))
            if self.high is not None:
                out.append(self.high + (eps if self.closed in ("both", "right") else 0)
                           + (1 if self.kind == "int" else 0))
            if not self.allow_inf:
                out.append(math.nan)
            out.append("not-a-number" if not self.options else object())
        elif self.kind == "option":
            out.append("__no_such_option__")
        elif self.kind == "bool":
            out.append("yes")
        elif self.kind == "budget":
            out.append("epsilon=1")
        return out

    # -- command line
    def cli_option(self) -> dict[str, Any] | None:
        """``argparse.add_argument`` keyword arguments for ``--<name>`` (None: not on the CLI).
        The parsed value is validated by :meth:`validate` when the estimator is fitted."""
        if not self.cli or self.kind in ("budget", "array", "object"):
            return None
        default_text = "required" if self.required else f"default {self.default!r}"
        kwargs: dict[str, Any] = {"dest": self.name, "default": None if self.required else self.default,
                                  "help": f"{self.help} ({self.describe()}; {default_text})".strip()}
        if self.required:
            kwargs["required"] = True
        if self.kind == "option":
            kwargs["choices"] = list(self.options)
        elif self.kind == "bool":
            kwargs["type"] = _parse_bool
            kwargs["metavar"] = "{true,false}"
        elif self.kind in ("float", "int"):
            kwargs["type"] = _number_parser(self.kind == "int", self.options)
        return kwargs

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _number_parser(integer: bool, options: Sequence[Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if text in options:
            return text
        value = float(text)
        if integer:
            if not value.is_integer():
                raise ValueError(f"expected an integer, got {text!r}")
            return int(value)
        return value

    parse.__name__ = "int" if integer else "float"
    return parse


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Any = _Unset()


def param(help: str = _UNSET, *, default: Any = _UNSET, like: Param | None = None, kind: str = _UNSET,
          low: float | None = _UNSET, high: float | None = _UNSET, closed: str = _UNSET,
          allow_inf: bool = _UNSET, none_ok: bool = _UNSET, options: tuple[Any, ...] = _UNSET,
          check: Callable[[Any, str, str], Any] | None = _UNSET, cli: bool = _UNSET,
          bad: tuple[Any, ...] = _UNSET) -> Any:
    """Declare an estimator parameter: the value of an annotated class field (its name is the
    field's). The keywords are :class:`Param`'s.

    Without ``default=`` the parameter is required — type checkers read a field's default from the
    ``default=`` keyword only, so a required parameter never passes one (``default=REQUIRED`` is
    refused). ``like=`` starts from a shared declaration and replaces the fields given (a budget with
    its own check: ``param(like=BUDGET, check=...)``); it keeps a required declaration required, so
    it is how a shared *required* parameter is reused (``gamma: float = param(like=GAMMA)``). A
    shared declaration with a default is reused by plain assignment (``calibration: str =
    CALIBRATION``), which type checkers read as "has a default"; ``like=`` of one without
    ``default=`` is refused, as the checker would then call it required.
    """
    given = {k: v for k, v in dict(help=help, default=default, kind=kind, low=low, high=high, closed=closed,
                                    allow_inf=allow_inf, none_ok=none_ok, options=options, check=check, cli=cli,
                                    bad=bad).items() if v is not _UNSET}
    if given.get("default") is REQUIRED:
        raise TypeError("param(default=REQUIRED): omit default= for a required parameter (type checkers "
                        "read a field without default= as required)")
    if like is None:
        return Param("", **given)
    if not like.required and "default" not in given:
        raise TypeError(f"param(like=...) of a declaration with a default ({like.default!r}) needs default=; "
                        "reuse it by plain assignment instead (field: type = SHARED)")
    return dataclasses.replace(like, name="", **given)
