"""The estimator contract shared by every algorithm (ARCHITECTURE.md §3).

* keyword-only constructors that only store parameters (validated in ``fit``);
* ``fit(...) -> self``; fitted attributes end in ``_`` (``policy_``, ``values_``, ``theta_``,
  ``regret_``, ``privacy_ledger_``);
* class attributes ``privacy_unit``, ``neighboring`` and ``guarantee`` ("(epsilon, delta)-DP",
  "rho-zCDP", "JDP", "LDP"; ``None`` for non-private algorithms);
* ``privacy_spent(delta)`` reads the ledger; ``get_params()`` feeds the manifest.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, ClassVar

from privrl.errors import InvalidParameterError, NotFittedError
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyUnit

__all__ = ["Estimator", "check_is_fitted"]


class Estimator:
    """Base class: parameter introspection, fitted-state checks and privacy queries."""

    privacy_unit: ClassVar[PrivacyUnit | None] = None
    neighboring: ClassVar[Neighboring | None] = None
    guarantee: ClassVar[str | None] = None

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (sklearn convention)."""
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

    def privacy_spent(self, delta: float, accountant: str = "auto") -> float:
        """ε at ``delta`` of everything released by the last ``fit``, from ``privacy_ledger_``.

        Non-private algorithms and infinite budgets return ``math.inf``.
        """
        ledger: Ledger = check_is_fitted(self, "privacy_ledger_")
        if not self.is_private:
            return math.inf
        return ledger.epsilon(delta, accountant=accountant)


def check_is_fitted(estimator: Any, attribute: str) -> Any:
    """Return ``estimator.<attribute>`` or raise :class:`NotFittedError`."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet: call 'fit' before using "
            f"'{attribute}'."
        )
    return getattr(estimator, attribute)
