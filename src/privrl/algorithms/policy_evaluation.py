"""Old import path of the policy-evaluation family (now :mod:`privrl.policy_evaluation`).

Kept only for ``privrl.fitters.policy_evaluation`` and ``privrl.algorithms.q_learning.balle``,
which another change moves; delete it then. The fit command still passes the printed smoothing
constant set as ``constants="main_text" | "appendix_a"``: the two classes below map that old
meaning to ``smoothing=`` (``constants`` is now the utility preset "theory" | "practical").
"""

from __future__ import annotations

import inspect
from typing import Any

from privrl.policy_evaluation import *  # noqa: F403
from privrl.policy_evaluation import DPLSL as _DPLSL
from privrl.policy_evaluation import DPLSW as _DPLSW
from privrl.policy_evaluation import __all__  # noqa: F401
from privrl.policy_evaluation.smooth_sensitivity import SMOOTHINGS


def _legacy(kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("constants") in SMOOTHINGS:
        kwargs = dict(kwargs)
        kwargs["smoothing"] = kwargs.pop("constants")
    return kwargs


class DPLSW(_DPLSW):  # type: ignore[no-redef]  # noqa: F811
    __doc__ = _DPLSW.__doc__

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_legacy(kwargs))

    __init__.__signature__ = inspect.signature(_DPLSW.__init__)  # type: ignore[attr-defined]


class DPLSL(_DPLSL):  # type: ignore[no-redef]  # noqa: F811
    __doc__ = _DPLSL.__doc__

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**_legacy(kwargs))

    __init__.__signature__ = inspect.signature(_DPLSL.__init__)  # type: ignore[attr-defined]
