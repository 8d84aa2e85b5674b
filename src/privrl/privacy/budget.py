"""Privacy budgets, privacy units and neighbouring relations (ARCHITECTURE.md §1.2, §3)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from privrl._validation import check_scalar, param_error

__all__ = ["PrivacyBudget", "PrivacyUnit", "Neighboring"]


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

    #: δ at which ε is reported when the budget has none (ρ-zCDP and pure ε-DP budgets)
    DEFAULT_DELTA: ClassVar[float] = 1e-5

    def __post_init__(self) -> None:
        owner = "PrivacyBudget"
        if (self.epsilon is None) == (self.rho is None):
            raise param_error("epsilon/rho", owner, "exactly one of epsilon (with delta) or rho",
                              {"epsilon": self.epsilon, "rho": self.rho})
        if self.rho is not None:
            if self.delta is not None:
                raise param_error("delta", owner, "None when rho is given", self.delta)
            object.__setattr__(self, "rho", check_scalar(self.rho, "rho", owner=owner, low=0.0,
                                                         closed="right", allow_inf=True))
            return
        eps = check_scalar(self.epsilon, "epsilon", owner=owner, low=0.0, closed="right", allow_inf=True)
        delta = 0.0 if self.delta is None else self.delta
        delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="left")
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
        """The δ at which ε spent is reported — the one place privrl chooses it: the budget's own
        δ when positive, else :attr:`DEFAULT_DELTA` (ρ-zCDP and pure ε-DP budgets)."""
        return float(self.delta) if self.delta else self.DEFAULT_DELTA

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


def _finite_or_str(x: float | None) -> float | str | None:
    return "inf" if x is not None and math.isinf(x) else x
