"""The UtilityWarning of APVI / DP-APVI: is there released evidence that the policy beats the
logging policy? Computed only from what the fit released and post-processed (the released visit
counts ``{ñ_sa}^+``, the estimated logging policy :func:`~privrl.offline.baseline.logging_estimate`,
the supported pairs, the pessimistic ``Q̄``, the penalty ``Γ`` and the public noise std σ of the
transition counts): nothing new about the data leaks, the ledger is unchanged.

**The estimate** (in units of value, one episode's return): a performance-difference estimate on
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

**The bound the fit warns on.** ``G`` is the gain *the released model* shows, and that model errs in
two ways the penalty ``Γ`` of ``constants="practical"`` does not cover. The privacy noise of the
transition counts: the policy moves to the best-looking of many noisy backups (a winner's curse), so
every unit of probability it moves, on either side, is charged ``NOISE_SIGMAS`` noise stds of its
backup,

    L = G − NOISE_SIGMAS · Σ_h Σ_s w_h(s) Σ_a |π − π̂_b|(a) ν_h(s, a),
    ν_h(s, a) = min(σ ‖V_{h+1} − mean V_{h+1}‖₂ / max(ñ_h(s, a), σ), H − h),

``ν`` the noise std of the backup ``P̃V`` when every next-state cell of the row carries the transition
counts' noise (std σ, public; 0 without noise: then ``L = G``), ``V_{h+1} = Σ_a π Q̄`` the fit's own
values. And, with ``state_groups``, a grouped process that is not Markov: a group's action looks
better on the states that logged it than it is on the group, a bias no released grouped count can
show (the per-state counts that could are not released); the threshold — a gain of less than
``GAIN_THRESHOLD`` is not trusted — is what catches it on the real-shaped grid.
**The fit warns when ``L <= GAIN_THRESHOLD``** (one threshold, in value units). ``NOISE_SIGMAS`` and
``GAIN_THRESHOLD`` were chosen on the real-shaped grid (``benchmarks/bench_real_shaped.py``, seeds 0–4)
and the rates are reported on seeds 5–9 (docs/offline.md).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from privrl.errors import UtilityWarning

__all__ = ["GAIN_THRESHOLD", "NOISE_SIGMAS", "Evidence", "improvement_evidence", "warn_no_improvement"]

#: the fit warns when the lower bound of its released evidence of gain is at most this (value units)
GAIN_THRESHOLD = 0.02
#: the bound charges each moved unit of probability this many noise stds ν of its backup (from the
#: released transition counts' public σ)
NOISE_SIGMAS = 0.5
#: a row is "the estimated logging policy" when its total variation from it is below this
_SAME = 0.01


class Evidence(NamedTuple):
    """``gain`` G and its lower bound ``bound`` L (module docstring) and what the policy does, as
    shares of the released visits (averaged over the steps): the estimated logging policy
    (``as_logging``), the behaviour clone (``as_clone``: the most released-visited action,
    deterministically), the tie-break action 0 where every Q̄ ties (``tie_break``), an unsupported
    action it adds probability to (``unsupported``)."""

    gain: float
    as_logging: float
    as_clone: float
    tie_break: float
    unsupported: float
    bound: float = 0.0


def _backup_noise(probs: np.ndarray, q: np.ndarray, released: np.ndarray, sigma: float) -> np.ndarray:
    """``ν (H, S, A)``: the noise std of each backup ``P̃V_{h+1}`` when each of the row's next-state
    cells carries noise of std ``sigma`` — ``σ‖V_{h+1} − mean‖₂ / max(ñ, σ)`` — capped at ``H − h``."""
    H = q.shape[0]
    if sigma <= 0.0:
        return np.zeros_like(q)
    values = np.zeros((H + 1, q.shape[1]))
    values[:H] = (probs * q).sum(axis=-1)
    spread = np.sqrt(((values[1:] - values[1:].mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1))
    nu = sigma * spread[:, None, None] / np.maximum(released, sigma)
    return np.minimum(nu, np.arange(H, 0, -1, dtype=float)[:, None, None])


def improvement_evidence(probs: np.ndarray, prior: np.ndarray, supported: np.ndarray, q: np.ndarray,
                         q_ref: np.ndarray, released: np.ndarray, sigma: float = 0.0) -> Evidence:
    """:class:`Evidence` of a fit: ``probs``, ``prior`` (π̂_b), ``supported``, ``q`` (Q̄), ``q_ref``
    (``Q̄ + MARGIN·Γ``, :func:`~privrl.offline.baseline.reference_q`) and ``released`` (``{ñ_sa}^+``),
    each ``(H, S, A)`` on the grid the fit learned on; ``sigma`` the transition counts' noise std."""
    visits = released.sum(axis=-1)
    w = visits / np.where(visits.sum(axis=-1, keepdims=True) > 0, visits.sum(axis=-1, keepdims=True), 1.0)
    diff = probs - prior
    best = np.where(supported, q_ref, -np.inf).max(axis=-1, keepdims=True)
    upper = np.where(supported, q_ref, np.maximum(q, best))
    delta = (np.maximum(diff, 0.0) * q - np.maximum(-diff, 0.0) * upper).sum(axis=-1)
    charge = NOISE_SIGMAS * (np.abs(diff) * _backup_noise(probs, q, released, sigma)).sum(axis=-1)
    A = q.shape[-1]
    clone = (released.argmax(axis=-1)[..., None] == np.arange(A)).astype(float)
    tie = (q.max(axis=-1) == q.min(axis=-1)) & (probs[..., 0] == 1.0)
    adds_unsupported = (~supported & (diff > 1e-12)).any(axis=-1)
    H = q.shape[0]

    def share(mask: np.ndarray) -> float:
        return float((w * mask).sum() / H)

    return Evidence(gain=float((w * delta).sum()),
                    as_logging=share(0.5 * np.abs(diff).sum(axis=-1) < _SAME),
                    as_clone=share(np.all(probs == clone, axis=-1)), tie_break=share(tie),
                    unsupported=share(adds_unsupported),
                    bound=float((w * (delta - charge)).sum()))


def warn_no_improvement(owner: str, evidence: Evidence, advice: list[str], kind: str = "weak output") -> bool:
    """UtilityWarning when ``evidence.bound <= GAIN_THRESHOLD``: says what the policy does, the bound
    against the one threshold, and ``advice`` (only what is not already applied). True when warned."""
    if evidence.bound > GAIN_THRESHOLD:
        return False
    does = [f"the estimated logging policy at {evidence.as_logging:.0%}",
            f"the behaviour clone (most logged action) at {evidence.as_clone:.0%}",
            f"the tie-break action 0 at {evidence.tie_break:.0%}",
            f"an action without released support at {evidence.unsupported:.0%}"]
    todo = f" Options not yet used: {'; '.join(advice)}." if advice else ""
    warnings.warn(f"{owner}: {kind}: no released evidence that the policy beats the logging policy (lower bound "
                  f"of the gain {evidence.bound:.3g} <= {GAIN_THRESHOLD:g}; the released model's estimate "
                  f"{evidence.gain:.3g} less the count noise of every move). Of the released "
                  f"visits the policy plays {', '.join(does)}.{todo}", UtilityWarning, stacklevel=4)
    return True
