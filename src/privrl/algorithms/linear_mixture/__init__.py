"""Re-export shim: the Zhou (2022) family lives in :mod:`privrl.linear_mixture`.

Kept for ``privrl.fitters.linear_mixture`` until its fit command is generated from the estimators'
declared parameters: the two constructors below accept the old command's ``sigma_rule`` keyword
(``"paper"``: Thm 6.4's σ, which the ``calibration`` switch now selects; ``"zcdp"``: a tighter
calibration to the same budget, now ``calibration="tight"``) and return the real estimators.
"""

from typing import Any

from privrl.linear_mixture import LinOptPO as _LinOptPO
from privrl.linear_mixture import LinOptVI as _LinOptVI

__all__ = ["LinOptVI", "LinOptPO"]


def _translated(kwargs: dict[str, Any]) -> dict[str, Any]:
    rule = kwargs.pop("sigma_rule", "paper")
    if rule == "zcdp":
        kwargs["calibration"] = "tight"
    return kwargs


def LinOptVI(**kwargs: Any) -> _LinOptVI:  # noqa: N802 - the class name the old fit command calls
    return _LinOptVI(**_translated(kwargs))


def LinOptPO(**kwargs: Any) -> _LinOptPO:  # noqa: N802
    return _LinOptPO(**_translated(kwargs))
