"""The UtilityWarning of APVI / DP-APVI: is there released evidence that the policy beats the
logging policy? Computed only from what the fit released and post-processed (the released visit
counts ``{ñ_sa}^+``, the estimated logging policy :func:`~privrl.offline.baseline.logging_estimate`,
the supported pairs and the pessimistic ``Q̄``): nothing new about the data leaks.

**The statistic** (in units of value, one episode's return): a performance-difference estimate on
the released model,

    G = Σ_h Σ_s w_h(s) Δ_h(s),   w_h(s) = ñ_h(s) / Σ_s' ñ_h(s')   (released visit shares of step h)
    Δ_h(s) = Σ_a [(π − π̂_b)⁺(a) Q̄_h(s, a) − (π̂_b − π)⁺(a) U_h(s, a)],

with π the fitted policy, π̂_b the estimated logging policy, ``Q̄ = min{r + P̃V − Γ, H − h}^+`` the
fit's pessimistic Q-values and ``U`` the margin: probability the policy adds to an action is worth
its lower bound ``Q̄``, probability it takes away is worth ``Q_ref = Q̄ + MARGIN·Γ`` (at most the upper
bound ``min{r + P̃V + Γ, H − h}^+``; :data:`~privrl.offline.baseline.MARGIN`) on a supported pair
and, on an unsupported one, ``max(Q̄(a), max_{supported} Q_ref)`` (as
much as the best supported action could be worth; the vacuous ``H − h`` would flag every policy that
leaves a rarely logged action). So the estimated logging policy itself has ``G = 0``, SPIBB's moves
gain only where their lower bound beats the baseline's upper bound, the behaviour clone gains
nothing where only the clone is supported, and the tie-break action on thin counts loses.
**The fit warns when ``G <= GAIN_THRESHOLD``** (one threshold, in value units).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from privrl.errors import UtilityWarning

__all__ = ["GAIN_THRESHOLD", "Evidence", "improvement_evidence", "warn_no_improvement"]

#: the fit warns when its released evidence of gain over the logging policy is at most this (value units)
GAIN_THRESHOLD = 0.005
#: a row is "the estimated logging policy" when its total variation from it is below this
_SAME = 0.01


class Evidence(NamedTuple):
    """``gain`` G (module docstring) and what the policy does, as shares of the released visits
    (averaged over the steps): the estimated logging policy (``as_logging``), the behaviour clone
    (``as_clone``: the most released-visited action, deterministically), the tie-break action 0
    where every Q̄ ties (``tie_break``), an unsupported action it adds probability to (``unsupported``)."""

    gain: float
    as_logging: float
    as_clone: float
    tie_break: float
    unsupported: float


def improvement_evidence(probs: np.ndarray, prior: np.ndarray, supported: np.ndarray, q: np.ndarray,
                         q_ref: np.ndarray, released: np.ndarray) -> Evidence:
    """:class:`Evidence` of a fit: ``probs``, ``prior`` (π̂_b), ``supported``, ``q`` (Q̄), ``q_ref``
    (``Q̄ + MARGIN·Γ``, :func:`~privrl.offline.baseline.reference_q`) and ``released`` (``{ñ_sa}^+``),
    each ``(H, S, A)`` on the grid the fit learned on."""
    visits = released.sum(axis=-1)
    w = visits / np.where(visits.sum(axis=-1, keepdims=True) > 0, visits.sum(axis=-1, keepdims=True), 1.0)
    diff = probs - prior
    best = np.where(supported, q_ref, -np.inf).max(axis=-1, keepdims=True)
    upper = np.where(supported, q_ref, np.maximum(q, best))
    delta = (np.maximum(diff, 0.0) * q - np.maximum(-diff, 0.0) * upper).sum(axis=-1)
    A = q.shape[-1]
    clone = (released.argmax(axis=-1)[..., None] == np.arange(A)).astype(float)
    tie = (q.max(axis=-1) == q.min(axis=-1)) & (probs[..., 0] == 1.0)
    added = (~supported & (diff > 1e-12)).any(axis=-1)
    H = q.shape[0]

    def share(mask: np.ndarray) -> float:
        return float((w * mask).sum() / H)

    return Evidence(gain=float((w * delta).sum()),
                    as_logging=share(0.5 * np.abs(diff).sum(axis=-1) < _SAME),
                    as_clone=share(np.all(probs == clone, axis=-1)), tie_break=share(tie),
                    unsupported=share(added))


def warn_no_improvement(owner: str, evidence: Evidence, advice: list[str], kind: str = "weak output") -> bool:
    """UtilityWarning when ``evidence.gain <= GAIN_THRESHOLD``: says what the policy does, the gain
    against the one threshold, and ``advice`` (only what is not already applied). True when warned."""
    if evidence.gain > GAIN_THRESHOLD:
        return False
    does = [f"the estimated logging policy at {evidence.as_logging:.0%}",
            f"the behaviour clone (most logged action) at {evidence.as_clone:.0%}",
            f"the tie-break action 0 at {evidence.tie_break:.0%}",
            f"an action without released support at {evidence.unsupported:.0%}"]
    todo = f" Options not yet used: {'; '.join(advice)}." if advice else ""
    warnings.warn(f"{owner}: {kind}: no released evidence that the policy beats the logging policy (estimated "
                  f"gain {evidence.gain:.3g} <= {GAIN_THRESHOLD:g}, pessimistic, on the released model). Of the "
                  f"released visits the policy plays {', '.join(does)}.{todo}", UtilityWarning, stacklevel=4)
    return True
