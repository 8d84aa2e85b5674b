"""Privacy budgets, privacy units and neighbouring relations (ARCHITECTURE.md §1.2, §3)."""

from __future__ import annotations

import enum
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

from privrl._validation import check_scalar, param_error

__all__ = ["PrivacyBudget", "PrivacyUnit", "Neighboring", "reporting_delta", "check_budget_value", "DEFAULT_DELTA",
           "PURE_DP_DELTA"]

#: δ at which ε is reported for a ρ-zCDP budget (it names no δ) or when there is no budget
DEFAULT_DELTA = 1e-5
#: δ at which ε is reported for a pure budget (δ = 0): ε at δ = 0 is the pure ε
PURE_DP_DELTA = 0.0


class PrivacyUnit(str, enum.Enum):
    """What one individual contributes, i.e. what the guarantee protects.

    * ``TRAJECTORY`` — one whole trajectory of an offline dataset (Balle et al. 2016;
      Qiao & Wang 2023).
    * ``USER_EPISODE`` — one user = one episode of an online run, under joint or local DP
      (Zhou 2022).
    * ``REWARD_FUNCTION`` — the reward function; neighbours differ by at most 1 in sup-norm
      (Wang & Hegde 2019).
    """

    TRAJECTORY = "trajectory"
    USER_EPISODE = "user_episode"
    REWARD_FUNCTION = "reward_function"


class Neighboring(str, enum.Enum):
    """The neighbouring relation on inputs.

    * ``REPLACE_ONE`` — same size, one unit replaced (bounded DP).
    * ``ADD_OR_REMOVE_ONE`` — one unit added or removed (unbounded DP).
    * ``SUP_NORM_ONE`` — reward functions r, r' with ``sup |r - r'| <= 1``.
    """

    REPLACE_ONE = "replace_one"
    ADD_OR_REMOVE_ONE = "add_or_remove_one"
    SUP_NORM_ONE = "sup_norm_one"


@dataclass(frozen=True)
class PrivacyBudget:
    """A target privacy budget: exactly one of ``epsilon`` (with ``delta``) or ``rho``.

    ``epsilon=inf`` or ``rho=inf`` means *non-private*: mechanisms add no noise and the
    algorithm reduces exactly to its non-private counterpart.

    Examples
    --------
    >>> PrivacyBudget(epsilon=1.0, delta=1e-5)
    PrivacyBudget(epsilon=1.0, delta=1e-05)
    >>> PrivacyBudget(rho=0.5).is_zcdp
    True
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    #: δ at which ε is reported for a ρ-zCDP budget (see :func:`reporting_delta`)
    DEFAULT_DELTA: ClassVar[float] = DEFAULT_DELTA

    def __post_init__(self) -> None:
        owner = "PrivacyBudget"
        if (self.epsilon is None) == (self.rho is None):
            raise param_error("epsilon/rho", owner, "exactly one of epsilon (with delta) or rho",
                              {"epsilon": self.epsilon, "rho": self.rho})
        if self.rho is not None:
            if self.delta is not None:
                raise param_error("delta", owner, "None when rho is given", self.delta)
            object.__setattr__(self, "rho", check_budget_value("rho", self.rho))
            return
        eps = check_budget_value("epsilon", self.epsilon)
        delta = check_budget_value("delta", 0.0 if self.delta is None else self.delta)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)

    def __repr__(self) -> str:
        if self.rho is not None:
            return f"PrivacyBudget(rho={self.rho!r})"
        return f"PrivacyBudget(epsilon={self.epsilon!r}, delta={self.delta!r})"

    @classmethod
    def non_private(cls) -> PrivacyBudget:
        """The infinite budget (no noise)."""
        return cls(epsilon=math.inf, delta=0.0)

    @property
    def is_private(self) -> bool:
        return not math.isinf(self.rho if self.rho is not None else self.epsilon)  # type: ignore[arg-type]

    @property
    def is_zcdp(self) -> bool:
        return self.rho is not None

    @property
    def reporting_delta(self) -> float:
        """The δ at which ε spent is reported: :func:`reporting_delta` of this budget."""
        return reporting_delta(self)

    def to_dict(self) -> dict[str, Any]:
        if self.rho is not None:
            return {"rho": _finite_or_str(self.rho)}
        return {"epsilon": _finite_or_str(self.epsilon), "delta": self.delta}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyBudget:
        """Inverse of :meth:`to_dict` (``"inf"`` strings become ``math.inf``)."""
        if not isinstance(data, dict):
            raise param_error("data", "PrivacyBudget.from_dict", "a dict", data)
        unknown = set(data) - {"epsilon", "delta", "rho"}
        if unknown:
            raise param_error("data", "PrivacyBudget.from_dict",
                              "a dict with keys among 'epsilon', 'delta', 'rho'", data)

        def f(v: Any) -> Any:
            return math.inf if isinstance(v, str) and v in ("inf", "Infinity") else v
        if "rho" in data and data["rho"] is not None:
            return cls(rho=f(data["rho"]))
        return cls(epsilon=f(data.get("epsilon")), delta=data.get("delta"))

    def __str__(self) -> str:
        if not self.is_private:
            return "non-private"
        if self.rho is not None:
            return f"rho={self.rho:g}-zCDP"
        return f"(epsilon={self.epsilon:g}, delta={self.delta:g})-DP"


#: the range of each budget parameter (``check_scalar`` keywords): ε, ρ in (0, ∞], δ in [0, 1)
_RANGES: dict[str, dict[str, Any]] = {
    "epsilon": {"low": 0.0, "closed": "right", "allow_inf": True},
    "rho": {"low": 0.0, "closed": "right", "allow_inf": True},
    "delta": {"low": 0.0, "high": 1.0, "closed": "left"},
}


def check_budget_value(key: str, value: Any, *, name: str | None = None, owner: str = "PrivacyBudget") -> float:
    """``value`` checked as the budget parameter ``key`` (``"epsilon"``, ``"delta"`` or
    ``"rho"``): the one range of each, used by :class:`PrivacyBudget` and by anything that takes
    a budget parameter apart from a budget (``privrl run --set delta=...``). The error names
    ``name`` (default ``key``) of ``owner``.

    A positive ε or ρ must also have a finite reciprocal (at least the smallest normal float,
    ~2.2e-308): noise scales are Δ/ε and Δ/√(2ρ), and the accountant works with 1/σ², so a
    subnormal budget such as ρ = 1e-320 could not be calibrated or accounted."""
    number = check_scalar(value, name or key, owner=owner, **_RANGES[key])
    if key != "delta" and number < sys.float_info.min:
        raise param_error(name or key, owner, f"a float in (0.0, inf] whose reciprocal is finite (at least "
                          f"{sys.float_info.min!r})", value)
    return number


def reporting_delta(budget: PrivacyBudget | None) -> float:
    """The δ at which privrl reports ε spent — the one rule, called by the estimators'
    ``privacy_spent()``, the certificate, the experiment runner, ``privrl fit`` and ``privrl
    calibrate``:

    * an (ε, δ) budget with δ > 0: its δ (ε is reported on the terms the user asked for);
    * a pure budget (δ = 0): :data:`PURE_DP_DELTA` = 0. ε at δ = 0 is the pure ε: exact (basic
      composition) for a ledger of pure releases (Laplace, ``ApproxDpEvent(ε, 0)``), and ∞ for a
      ledger holding any release that is not pure DP (a Gaussian release satisfies no finite ε at
      δ = 0; dp-accounting's PLD accountant also answers ∞), so such a release can never be
      reported as within a pure budget;
    * a ρ-zCDP budget, or none: :data:`DEFAULT_DELTA` = 1e-5 (ρ-zCDP implies (ε, δ)-DP at every
      δ > 0 and names none; 1e-5 is the usual choice, below 1/n for the data sizes of the papers).

    Infinite (non-private) budgets follow the same rule; their ε is ∞ at any δ.

    >>> reporting_delta(PrivacyBudget(epsilon=1.0, delta=1e-6)), reporting_delta(PrivacyBudget(epsilon=1.0))
    (1e-06, 0.0)
    >>> reporting_delta(PrivacyBudget(rho=0.5)), reporting_delta(None)
    (1e-05, 1e-05)
    """
    if budget is None or budget.rho is not None:
        return DEFAULT_DELTA
    return float(budget.delta) if budget.delta else PURE_DP_DELTA


def _finite_or_str(x: float | None) -> float | str | None:
    return "inf" if x is not None and math.isinf(x) else x
