"""Privacy certificates: what a fitted algorithm promises, as JSON.

A certificate never contains data-dependent noise scales (e.g. DP-LSW's σ_X): only public
parameters, the ledger of released events and the ε spent at the stated δ.
"""

from __future__ import annotations

import json
import math
from typing import Any

import privrl
from privrl.base import Estimator, check_is_fitted
from privrl.privacy.budget import PrivacyBudget

__all__ = ["make_certificate"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "name"):  # enums
        return value.value
    if isinstance(value, PrivacyBudget):
        return value.to_dict()
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def make_certificate(estimator: Estimator, *, algorithm: str, delta: float | None,
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The certificate of a fitted estimator.

    ``delta`` is the δ at which ε is reported (``None`` for pure-DP or non-private fits: ε is then
    computed at δ = 0 where possible). ``extra`` holds further *public* facts (e.g. the F_max used).
    """
    ledger = check_is_fitted(estimator, "privacy_ledger_")
    private = estimator.is_private
    eps: float | None
    if not private:
        eps = None
    else:
        eps = estimator.privacy_spent(delta if delta else 1e-300)
    params = {k: v for k, v in estimator.get_params().items() if k not in ("rng",)}
    cert = {
        "format": "privrl.certificate",
        "version": 1,
        "privrl_version": privrl.__version__,
        "algorithm": algorithm,
        "private": private,
        "privacy_unit": _jsonable(estimator.privacy_unit),
        "neighboring": _jsonable(estimator.neighboring),
        "guarantee": estimator.guarantee,
        "calibration": getattr(estimator, "calibration", "sound"),
        "budget": _jsonable(getattr(estimator, "budget", None)),
        "delta": delta,
        "epsilon_spent": eps,
        "ledger": json.loads(ledger.to_json()),
        "params": _jsonable(params),
    }
    if extra:
        cert["extra"] = _jsonable(extra)
    return cert
