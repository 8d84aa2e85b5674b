"""The decision rules' settings and their perturbations (robust verdicts).

Every check of :mod:`privrl.experiments.verdicts` reads the active :class:`Rules` (:func:`rules`); the
stated ones by default, a perturbed setting inside :func:`under`. :mod:`privrl.experiments.claimsets`
decides every claim again under each setting of :data:`PERTURBED` and reports a verdict that changes
as fragile. A family's rule states its own thresholds with their margin through :func:`threshold`, so
they are perturbed too.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Rules", "PERTURBED", "STATED", "rules", "under", "threshold"]


@dataclass(frozen=True)
class Rules:
    """One setting of the decision rules. ``Rules()`` are the rules as stated by each claim;
    :data:`PERTURBED` holds the variations every verdict is recomputed under.

    ``alpha``: the level of every test (``None``: each test's own; a slope interval's level becomes
    1 − 2α); ``tol_scale``: multiplies equality tolerances and rate allowances; ``trivial_scale``:
    multiplies the trivial-baseline margin ``rel_tol``; ``se_multiplier``: the k of the mean ± k SE
    intervals; ``t_as_se``: decide Welch t tests by those intervals instead; ``threshold_shift``: moves
    a rule's own thresholds by that many of their stated margins (:func:`threshold`); ``fit_window``:
    where a fitted growth rate's window starts, as a fraction of the last x (0.1: the last decade)."""

    name: str = "the stated rules"
    alpha: float | None = None
    tol_scale: float = 1.0
    trivial_scale: float = 1.0
    se_multiplier: float = 2.0
    t_as_se: bool = False
    threshold_shift: float = 0.0
    fit_window: float = 0.1


#: the rule variations a verdict must survive to be called robust
PERTURBED = (
    Rules("α = 0.01", alpha=0.01), Rules("α = 0.10", alpha=0.10),
    Rules("tolerances × 0.5", tol_scale=0.5), Rules("tolerances × 1.5", tol_scale=1.5),
    Rules("trivial margin 5 %", trivial_scale=0.5), Rules("trivial margin 20 %", trivial_scale=2.0),
    Rules("mean ± 1 SE", se_multiplier=1.0, t_as_se=True), Rules("mean ± 2 SE", t_as_se=True),
    Rules("thresholds − margin", threshold_shift=-1.0), Rules("thresholds + margin", threshold_shift=1.0),
    Rules("fit window x ≥ X/20", fit_window=0.05), Rules("fit window x ≥ X/5", fit_window=0.2),
)
STATED = Rules()
_RULES: contextvars.ContextVar[Rules | None] = contextvars.ContextVar("privrl_rules", default=None)


def rules() -> Rules:
    """The active rules (:func:`under` sets them; default the stated ones)."""
    return _RULES.get() or STATED


@contextlib.contextmanager
def under(setting: Rules) -> Iterator[None]:
    """Decide every verdict inside the block under ``setting``."""
    token = _RULES.set(setting)
    try:
        yield
    finally:
        _RULES.reset(token)


def threshold(value: float, *, margin: float) -> float:
    """A rule's own threshold ``value`` (e.g. "at ≥ 75 % of the budgets"), moved by ``margin`` in
    the perturbed rules that move thresholds: state the margin with the threshold."""
    return float(value) + rules().threshold_shift * float(margin)
