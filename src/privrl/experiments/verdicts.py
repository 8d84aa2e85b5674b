"""Verdicts for the claims: shared checks for the families' ``claims`` functions.

A claim is decided only when the measurement can decide it, and every verdict is computed: the
helpers here return a :class:`Verdict` (``holds`` / ``fails`` / ``undecided`` with a reason) or a
flag, so that every family states the same test the same way::

    v = first_undecided(min_seeds(df, 3), needs_paper_scale(scale_of(df)))
    v = v or compare_curves(per_seed(dp), per_seed(base), claim="greater", test="welch",
                            trivial=zero_rmse, lower_is_better=True, baseline="the zero predictor")
    out.append(v.claim("DP-LSW is worse than LSW for small batches.", source="paper", ...))

**One rule for trivial baselines** (:func:`trivial_guard`): a comparison won by an answer no better
than the trivial one — random play, the zero predictor, the logging or tie-break policy, a stuck
learner — is undecided, and the reason names the curve and the trivial value. "No better" means
the mean over seeds is within ``rel_tol`` (10 %) of the trivial value or on its wrong side.
:func:`compare_curves` applies it, when given ``trivial``, to the side its verdict finds better (a
win by a trivial answer says nothing; beating one is a result), to both sides of a comparison its
test leaves open (when both are no better than trivial, no seed count decides it), and to both sides
of an equality or when asked (``guard="both"``). A claim that compares several curves applies it to every curve of
each comparison it makes (a trend over noise levels or budgets is judged on the levels that are
better than trivial). A claim whose comparator *is* the trivial answer ("some budget beats random
play") is guarded by the non-private learner of the same loop: when even it is no better than the
trivial answer the loop cannot learn and the claim is undecided.

The checks:

* :func:`compare_curves` — two curves over seeds with a stated test (Welch t, paired t by seed,
  or separation of the mean ± 2 SE intervals);
* :func:`compare_to_value` — one curve against a published number (one-sample t);
* :func:`trivial_guard` — the rule above;
* :func:`rate_verdict` — a fitted log–log slope (one per seed) against a claimed rate;
* :func:`decide` — a computed condition (True / False / None) as a verdict;
* :func:`all_of` / :func:`any_of` — one verdict from several;
* :func:`min_seeds` — undecided with fewer than ``k`` seeds;
* :func:`argmin_on_boundary` — the best hyper-parameter sits on the edge of its grid;
* :func:`near_trivial` — a metric within ``rel_tol`` of the trivial predictor's;
* :func:`degenerate_curves` — every budget gives the same curve;
* :func:`needs_paper_scale` — a scale-dependent claim measured below paper scale.

**Robustness.** Every verdict is recomputed under perturbed rules (:data:`PERTURBED`: the tests'
level α = 0.01 and 0.10, tolerances and log-factor allowances × 0.5 and × 1.5, the trivial margin
5 % and 20 %, t tests replaced by mean ± 1 SE and ± 2 SE intervals, a rule's own thresholds moved by
their stated margin through :func:`threshold`, a growth rate fitted from X/20 or X/5 instead of the
last decade X/10). The checks above read the active :class:`Rules`
(:func:`rules`; :func:`under` sets them), so a family's rule built from them is perturbed with no
change of its own; :mod:`privrl.experiments.claimsets` reports a claim whose verdict changes as
fragile, with every outcome.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_option, check_scalar, param_error
from privrl.experiments.rules import PERTURBED, Rules, rules, threshold, under
from privrl.experiments.spec import VERDICTS, Claim

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Verdict", "holds", "fails", "undecided", "decide", "all_of", "any_of", "first_undecided",
           "per_seed", "scale_of", "compare_curves", "compare_to_value", "trivial_guard", "no_better_than",
           "rate_verdict", "slope_interval", "min_seeds", "argmin_on_boundary", "near_trivial",
           "degenerate_curves", "needs_paper_scale", "REASON_PAPER_SCALE", "REASON_NEAR_TRIVIAL",
           "REASON_DEGENERATE", "REASON_BOUNDARY", "verdict_counts", "Rules", "PERTURBED", "rules", "under",
           "threshold"]

REASON_PAPER_SCALE = "needs paper scale"
REASON_NEAR_TRIVIAL = "both predictors near-trivial"
REASON_DEGENERATE = "all budgets give the same curve"
REASON_BOUNDARY = "best {name} on the grid boundary"

TESTS = ("welch", "paired", "2se")
#: which sides of a comparison the trivial-baseline rule checks: the side the verdict finds better, or both
GUARDS = ("winner", "both")
CLAIMS = ("less", "greater", "equal")


@dataclass(frozen=True)
class Verdict:
    """``verdict`` in ``VERDICTS``; ``reason`` says why an undecided claim is undecided;
    ``detail`` is the measurement in words (used as the claim's "measured" text by default)."""

    verdict: str
    reason: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        check_option(self.verdict, "verdict", VERDICTS, owner="Verdict")

    def claim(self, text: str, measured: str | None = None, **fields: Any) -> Claim:
        """A :class:`~privrl.experiments.spec.Claim` with this verdict (``fields``: the headline
        values ``paper_value``, ``paper_calibration_value``, ``tight_value``, ``headline``)."""
        return Claim(text, self.detail if measured is None else measured, verdict=self.verdict,
                     reason=self.reason, **fields)


def holds(detail: str = "") -> Verdict:
    return Verdict("holds", "", detail)


def fails(detail: str = "") -> Verdict:
    return Verdict("fails", "", detail)


def undecided(reason: str, detail: str = "") -> Verdict:
    return Verdict("undecided", reason, detail)


def decide(condition: bool | None, detail: str = "", *, reason: str = "not decided") -> Verdict:
    """A computed condition as a verdict: ``True`` holds, ``False`` fails, ``None`` is undecided
    with ``reason``."""
    if condition is None:
        return undecided(reason, detail)
    return Verdict("holds" if bool(condition) else "fails", "", detail)


def all_of(verdicts: Sequence[Verdict], detail: str | None = None) -> Verdict:
    """One verdict for "every part holds": fails if one fails, else undecided (with the first
    reason) if one is, else holds; undecided "no data" when there is none. ``detail`` defaults to
    the parts' details joined."""
    text = "; ".join(v.detail for v in verdicts if v.detail) if detail is None else detail
    if not verdicts:
        return undecided("no data", text)
    failed = [v for v in verdicts if v.verdict == "fails"]
    pending = [v for v in verdicts if v.verdict == "undecided"]
    return decide(None if pending and not failed else not failed, text,
                  reason=pending[0].reason if pending else "")


def any_of(verdicts: Sequence[Verdict], detail: str | None = None) -> Verdict:
    """One verdict for "some part holds": holds if one holds, else undecided (first reason) if one
    is, else fails; undecided "no data" when there is none."""
    text = "; ".join(v.detail for v in verdicts if v.detail) if detail is None else detail
    if not verdicts:
        return undecided("no data", text)
    held = any(v.verdict == "holds" for v in verdicts)
    pending = [v for v in verdicts if v.verdict == "undecided"]
    return decide(None if pending and not held else held, text, reason=pending[0].reason if pending else "")


def first_undecided(*checks: Verdict | None) -> Verdict | None:
    """The first check that is not ``None`` (guards such as :func:`min_seeds` return ``None``
    when they do not object), else ``None``."""
    return next((c for c in checks if c is not None), None)


# --------------------------------------------------------------------------- data helpers
def per_seed(df: pd.DataFrame, y: str = "value", *, seed_col: str = "seed", x: str | None = None,
             at: object = None, reduce: str = "mean") -> pd.Series:
    """One number per seed from a curve's rows (a pandas Series indexed by seed).

    ``reduce="mean"`` averages every row of the seed (optionally only the rows with
    ``df[x] == at``); ``reduce="last"`` takes the seed's row(s) at its largest ``x``.
    """
    check_option(reduce, "reduce", ("mean", "last"), owner="per_seed")
    for col in (y, seed_col) + ((x,) if x is not None else ()):
        if col not in df.columns:
            raise param_error("df", "per_seed", f"a table with a {col!r} column", list(df.columns))
    rows = df
    if at is not None:
        if x is None:
            raise param_error("x", "per_seed", "a column name when 'at' is given", None)
        rows = rows[rows[x] == at]
    if reduce == "last":
        if x is None:
            raise param_error("x", "per_seed", "a column name when reduce='last'", None)
        last = rows.groupby(seed_col)[x].transform("max")
        rows = rows[rows[x] == last]
    return rows.groupby(seed_col)[y].mean()


def scale_of(df: pd.DataFrame | None) -> str | None:
    """The scale of the runs in ``df`` (its ``scale`` column, which the report adds), or ``None``
    when unknown or mixed."""
    if df is None or "scale" not in getattr(df, "columns", ()):
        return None
    values = {str(v) for v in df["scale"].dropna().unique()}
    return values.pop() if len(values) == 1 else None


def _values(x: object, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    arr = arr[np.isfinite(arr)]
    return arr


def _n_seeds(data: Any, seed_col: str) -> int:
    if isinstance(data, (int, np.integer)):
        return int(data)
    columns = getattr(data, "columns", None)
    if columns is not None and seed_col in columns:
        return int(data[seed_col].nunique())
    return int(np.asarray(data).size)


# --------------------------------------------------------------------------- guards
def min_seeds(data: object, k: int = 3, *, seed_col: str = "seed") -> Verdict | None:
    """``undecided`` when ``data`` (a count, a table with a seed column, or per-seed values) has
    fewer than ``k`` seeds; ``None`` otherwise."""
    k = check_scalar(k, "k", owner="min_seeds", kind=int, low=1)
    n = _n_seeds(data, seed_col)
    if n >= k:
        return None
    return undecided("one seed" if n == 1 else f"{n} seeds < {k}",
                     f"{n} seed{'s' if n != 1 else ''}; at least {k} are needed to decide")


def needs_paper_scale(scale: str | None, scale_dependent: bool = True) -> Verdict | None:
    """``undecided("needs paper scale")`` for a scale-dependent claim measured below paper scale
    (``scale`` not ``"paper"``); ``None`` when the scale is paper, unknown, or the claim does not
    depend on it."""
    if not scale_dependent or scale is None or scale == "paper":
        return None
    return undecided(REASON_PAPER_SCALE, f"measured at {scale} scale")


def argmin_on_boundary(grid: Sequence[object], values: Sequence[object]) -> bool:
    """True when the grid point with the smallest (finite) value is the smallest or largest grid
    point, so the true optimum may lie outside the grid (e.g. the best λ of Balle Fig. 1 panel 2).

    A grid of fewer than three points is all boundary (True).
    """
    g = np.asarray(grid, dtype=float).ravel()
    v = np.asarray(values, dtype=float).ravel()
    if g.size != v.size or g.size == 0:
        raise param_error("values", "argmin_on_boundary", f"{g.size} values (one per grid point)", v.size)
    if not np.isfinite(v).any():
        raise param_error("values", "argmin_on_boundary", "at least one finite value", "none")
    if g.size < 3:
        return True
    order = np.argsort(g, kind="stable")
    best = int(np.nanargmin(np.where(np.isfinite(v[order]), v[order], np.nan)))
    return best in (0, g.size - 1)


def near_trivial(metric_values: object, trivial_value: float, rel_tol: float = 0.1, *,
                 lower_is_better: bool | None = None) -> bool:
    """True when the mean of ``metric_values`` is within ``rel_tol`` (relative to
    ``|trivial_value|``; absolute when it is 0) of the trivial predictor's value (the error of the
    zero estimate, the return of a constant policy...).

    With ``lower_is_better=True`` (an error) a metric *worse* than trivial also counts as
    near-trivial; with ``False`` (a return) likewise for a metric below the trivial one.
    """
    rel_tol = check_scalar(rel_tol, "rel_tol", owner="near_trivial", low=0.0) * rules().trivial_scale
    m = _values(metric_values, "metric_values")
    if m.size == 0:
        raise param_error("metric_values", "near_trivial", "at least one finite value", "none")
    mean, t = float(m.mean()), float(trivial_value)
    tol = rel_tol * abs(t) if t != 0 else rel_tol
    if lower_is_better is True:
        return mean >= t - tol
    if lower_is_better is False:
        return mean <= t + tol
    return abs(mean - t) <= tol


def no_better_than(values: object, trivial: float, *, lower_is_better: bool, rel_tol: float = 0.1) -> bool:
    """True when the mean of ``values`` is no better than the trivial answer ``trivial``: within
    ``rel_tol`` of it (relative to ``|trivial|``) or on its wrong side (see :func:`near_trivial`)."""
    return near_trivial(values, trivial, rel_tol, lower_is_better=bool(lower_is_better))


def trivial_guard(curves: Mapping[str, object], trivial: float, *, lower_is_better: bool,
                  baseline: str = "the trivial answer", rel_tol: float = 0.1, detail: str = "") -> Verdict | None:
    """The one rule for trivial baselines (module docstring): ``undecided`` when a curve of the
    comparison (``curves``: name → per-seed values) is no better than ``trivial`` — the reason
    names every such curve, ``baseline`` and its value — else ``None``. Curves without a finite
    value are skipped."""
    stuck = [name for name, values in curves.items()
             if _values(values, name).size and no_better_than(values, trivial, lower_is_better=lower_is_better,
                                                             rel_tol=rel_tol)]
    if not stuck:
        return None
    return undecided(f"{' and '.join(stuck)} no better than {baseline} ({_fmt(float(trivial))})", detail)


def degenerate_curves(df: pd.DataFrame, by: str | Sequence[str], *, x: str | None = None, y: str = "value",
                      seed_col: str = "seed", rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    """True when every group of ``by`` (e.g. the privacy budget) gives the same curve: the mean
    over seeds of ``y`` at each ``x`` (or overall) agrees across all (≥ 2) groups within
    ``rtol``/``atol`` on their common ``x`` values. A sign that the budget does not reach the
    output (e.g. a noise term that never enters the estimate)."""
    keys = [by] if isinstance(by, str) else list(by)
    for col in keys + [y] + ([x] if x else []):
        if col not in df.columns:
            raise param_error("df", "degenerate_curves", f"a table with a {col!r} column", list(df.columns))
    curves = []
    for _, group in df.groupby(keys, dropna=False, sort=True):
        if x is None:
            curves.append({None: float(group[y].mean())})
        else:
            curves.append(group.groupby(x)[y].mean().to_dict())
    if len(curves) < 2:
        return False
    common = set(curves[0]).intersection(*curves[1:])
    if not common:
        return False
    points = sorted(common, key=lambda k: (k is None, k))
    ref = np.array([curves[0][k] for k in points])
    return all(np.allclose([c[k] for k in points], ref, rtol=rtol, atol=atol, equal_nan=True)
               for c in curves[1:])


# --------------------------------------------------------------------------- the comparison
def _stats(v: np.ndarray) -> tuple[float, float, int]:
    n = v.size
    sd = float(v.std(ddof=1)) if n > 1 else 0.0
    return float(v.mean()), sd / math.sqrt(n) if n > 0 else math.nan, n


def _aligned(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed values of ``a`` and ``b`` on their common seeds (Series indices)."""
    if not (hasattr(a, "index") and hasattr(b, "index")):
        raise param_error("test", "compare_curves", "'paired' only with per-seed Series (see per_seed)",
                          "paired")
    common = [s for s in a.index if s in set(b.index)]
    va = np.asarray(a.loc[common], dtype=float)
    vb = np.asarray(b.loc[common], dtype=float)
    keep = np.isfinite(va) & np.isfinite(vb)
    return va[keep], vb[keep]


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def compare_curves(a: object, b: object, *, claim: str = "less", test: str = "welch", alpha: float = 0.05,
                   tol: float = 0.0, min_n: int = 2, names: tuple[str, str] = ("A", "B"),
                   trivial: float | None = None, lower_is_better: bool | None = None,
                   baseline: str = "the trivial answer", rel_tol: float = 0.1, guard: str = "winner") -> Verdict:
    """Decide a claim about two curves from one number per seed each (see :func:`per_seed`).

    ``claim``: ``"less"`` (A < B), ``"greater"`` (A > B) or ``"equal"`` (|A − B| ≤ ``tol``).
    ``test``:

    * ``"welch"`` — Welch's t test (unequal variances) at level ``alpha``, one-sided in each
      direction: holds when the claimed direction is significant, fails when the opposite one is,
      else undecided. For ``"equal"``, the (1 − 2α) confidence interval of A − B (two one-sided
      tests): holds inside [−tol, tol], fails when disjoint from it, else undecided.
    * ``"paired"`` — the same on the per-seed differences (seeds present in both; the seeds
      share their data, so pairing removes the data noise).
    * ``"2se"`` — the mean ± 2 SE intervals: holds when they are separated the claimed way, fails
      when separated the other way, undecided when they overlap. For ``"equal"``: |Δ| + 2 SE(Δ) ≤ tol
      holds, |Δ| − 2 SE(Δ) > tol fails.

    Undecided as well with fewer than ``min_n`` (≥ 2) seeds on a side, and, when ``trivial`` (the
    trivial answer's value, named ``baseline``; ``lower_is_better`` says which way is good) is
    given, when the curve the verdict finds better is no better than it (:func:`trivial_guard`, the
    one rule for trivial baselines: a win by a trivial answer says nothing, while beating a trivial
    answer is a result) — and, when the test leaves the claim open, when both curves are no better
    than it (whichever more seeds find better, the win would say nothing: the reason is the trivial
    answer's, not the seeds'). ``guard="both"`` checks both sides first, for a comparison that needs both
    to be non-trivial; an ``"equal"`` claim always does. Equal constants on both sides (no noise)
    are decided exactly.
    """
    check_option(claim, "claim", CLAIMS, owner="compare_curves")
    check_option(test, "test", TESTS, owner="compare_curves")
    alpha = check_scalar(alpha, "alpha", owner="compare_curves", low=0.0, high=0.5, closed="neither")
    tol = check_scalar(tol, "tol", owner="compare_curves", low=0.0)
    min_n = check_scalar(min_n, "min_n", owner="compare_curves", kind=int, low=2)
    setting = rules()
    alpha, tol = setting.alpha or alpha, tol * setting.tol_scale
    if setting.t_as_se and test == "welch":
        test = "2se"
    if test == "paired":
        va, vb = _aligned(a, b)
    else:
        va, vb = _values(a, "a"), _values(b, "b")
    (ma, sa, na), (mb, sb, nb) = _stats(va), _stats(vb)
    label = {"welch": "Welch t", "paired": "paired t by seed", "2se": f"mean ± {setting.se_multiplier:g} SE"}[test]
    detail = (f"{names[0]} {_fmt(ma)} ± {_fmt(sa)} vs {names[1]} {_fmt(mb)} ± {_fmt(sb)} "
              f"(mean ± s.e., {na}/{nb} seeds; {label}")
    if min(na, nb) < min_n:
        few = min_seeds(min(na, nb), min_n)
        assert few is not None
        return undecided(few.reason, detail + ")")
    check_option(guard, "guard", GUARDS, owner="compare_curves")
    both = claim == "equal" or guard == "both"
    if trivial is not None:
        if lower_is_better is None:
            raise param_error("lower_is_better", "compare_curves", "True or False when 'trivial' is given", None)
        if both:
            stuck = trivial_guard({names[0]: va, names[1]: vb}, trivial, lower_is_better=lower_is_better,
                                  baseline=baseline, rel_tol=rel_tol, detail=detail + ")")
            if stuck is not None:
                return stuck
    verdict = _compared(claim, test, alpha, tol, va, vb, detail)
    if trivial is None or both:
        return verdict
    if verdict.verdict == "undecided":
        # more seeds decide it for one side or the other: when both are no better than the trivial
        # answer, either win says nothing, and no seed count decides the claim
        sides = {names[0]: va, names[1]: vb}
        if all(no_better_than(v, trivial, lower_is_better=bool(lower_is_better), rel_tol=rel_tol)
               for v in sides.values() if v.size):
            return trivial_guard(sides, trivial, lower_is_better=bool(lower_is_better), baseline=baseline,
                                 rel_tol=rel_tol, detail=verdict.detail) or verdict
        return verdict
    # the side the verdict finds better must beat the trivial answer: a win by a trivial answer says nothing
    a_claimed_better = (claim == "less") == bool(lower_is_better)
    a_wins = a_claimed_better if verdict.verdict == "holds" else not a_claimed_better
    winner = (names[0], va) if a_wins else (names[1], vb)
    stuck = trivial_guard({winner[0]: winner[1]}, trivial, lower_is_better=bool(lower_is_better), baseline=baseline,
                          rel_tol=rel_tol, detail=verdict.detail)
    return verdict if stuck is None else stuck


def _compared(claim: str, test: str, alpha: float, tol: float, va: np.ndarray, vb: np.ndarray, detail: str) -> Verdict:
    """:func:`compare_curves`' test of the per-seed values ``va`` against ``vb``."""
    (ma, sa, na), (mb, sb, nb) = _stats(va), _stats(vb)
    if test == "paired":
        d = va - vb
        diff, se, dof = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1.0
    else:
        diff, se = ma - mb, math.hypot(sa, sb)
        num = (sa**2 + sb**2) ** 2
        den = sa**4 / (na - 1) + sb**4 / (nb - 1)
        dof = num / den if den > 0 else float(na + nb - 2)

    if se == 0.0:  # no noise on either side: the difference is exact
        sign_ok = {"less": diff < 0, "greater": diff > 0, "equal": abs(diff) <= tol}[claim]
        return (holds if sign_ok else fails)(detail + "; no variation across seeds: exact)")
    if test == "2se":
        return _two_se(claim, diff, se, tol, (ma, sa), (mb, sb), detail + ")")
    return _t_test(claim, diff, se, dof, alpha, tol, (na, nb), detail)


def _two_se(claim: str, diff: float, se: float, tol: float, a: tuple[float, float], b: tuple[float, float],
            detail: str) -> Verdict:
    """:func:`compare_curves`' ``"2se"`` test: the mean ± k SE intervals of ``a`` and ``b`` (mean,
    SE) separated the claimed way, or (``"equal"``) |Δ| ± k SE(Δ) against ``tol``; k = 2 under the
    stated rules (:attr:`Rules.se_multiplier`)."""
    k = rules().se_multiplier
    if claim == "equal":
        if abs(diff) + k * se <= tol:
            return holds(detail)
        if abs(diff) - k * se > tol:
            return fails(detail)
        return undecided(f"difference within {k:g} SE of the tolerance", detail)
    (ma, sa), (mb, sb) = a, b
    lo_a, hi_a, lo_b, hi_b = ma - k * sa, ma + k * sa, mb - k * sb, mb + k * sb
    a_below, b_below = hi_a < lo_b, hi_b < lo_a
    ok, bad = (a_below, b_below) if claim == "less" else (b_below, a_below)
    if ok:
        return holds(detail)
    if bad:
        return fails(detail)
    return undecided(f"mean ± {k:g} SE intervals overlap", detail)


def _t_test(claim: str, diff: float, se: float, dof: float, alpha: float, tol: float, ns: tuple[int, int],
            detail: str) -> Verdict:
    """:func:`compare_curves`' Welch and paired t tests of the difference ``diff`` (standard error
    ``se``, ``dof`` degrees of freedom): one-sided in each direction, or (``"equal"``) the
    (1 − 2α) confidence interval against [−tol, tol]."""
    from scipy import stats

    t = diff / se
    if claim == "equal":
        q = float(stats.t.ppf(1.0 - alpha, dof))
        lo, hi = diff - q * se, diff + q * se
        text = detail + f"; {100 * (1 - 2 * alpha):g}% CI of the difference [{_fmt(lo)}, {_fmt(hi)}], tol {_fmt(tol)})"
        if -tol <= lo and hi <= tol:
            return holds(text)
        if lo > tol or hi < -tol:
            return fails(text)
        return undecided("difference not resolved against the tolerance", text)
    p_less, p_greater = float(stats.t.cdf(t, dof)), float(stats.t.sf(t, dof))
    p_claim, p_other = (p_less, p_greater) if claim == "less" else (p_greater, p_less)
    text = detail + f", one-sided p = {p_claim:.2g})"
    if p_claim < alpha:
        return holds(text)
    if p_other < alpha:
        return fails(detail + f", one-sided p = {p_other:.2g} the other way)")
    return undecided(f"difference not significant at {ns[0]}/{ns[1]} seeds", text)


def compare_to_value(values: object, value: float, *, claim: str = "equal", tol: float = 0.0, alpha: float = 0.05,
                     min_n: int = 2, names: tuple[str, str] = ("A", "the reference")) -> Verdict:
    """Decide a claim about one curve (one number per seed) against a published number ``value``
    taken as exact (a one-sample t test; the reference's own sampling error is not known).

    ``claim`` as in :func:`compare_curves`: ``"less"``/``"greater"`` (one-sided tests at level
    ``alpha``), ``"equal"`` (the (1 − 2α) confidence interval of the difference inside
    [−tol, tol] holds, disjoint from it fails, else undecided)."""
    check_option(claim, "claim", CLAIMS, owner="compare_to_value")
    tol = check_scalar(tol, "tol", owner="compare_to_value", low=0.0)
    alpha = check_scalar(alpha, "alpha", owner="compare_to_value", low=0.0, high=0.5, closed="neither")
    alpha, tol = rules().alpha or alpha, tol * rules().tol_scale
    v = _values(values, "values")
    mean, se, n = _stats(v)
    detail = (f"{names[0]} {_fmt(mean)} ± {_fmt(se)} (mean ± s.e., {n} seeds) vs {names[1]} {_fmt(float(value))}")
    guard = min_seeds(n, max(2, int(min_n)))
    if guard is not None:
        return undecided(guard.reason, detail)
    diff = mean - float(value)
    if se == 0.0:
        ok = {"less": diff < 0, "greater": diff > 0, "equal": abs(diff) <= tol}[claim]
        return decide(ok, detail + " (no variation across seeds: exact)")
    from scipy import stats

    if claim == "equal":
        q = float(stats.t.ppf(1.0 - alpha, n - 1))
        lo, hi = diff - q * se, diff + q * se
        text = detail + (f"; difference {_fmt(diff)}, {100 * (1 - 2 * alpha):g}% CI [{_fmt(lo)}, {_fmt(hi)}], "
                         f"tolerance ±{_fmt(tol)}")
        inside, outside = -tol <= lo and hi <= tol, lo > tol or hi < -tol
        return decide(None if not (inside or outside) else inside, text,
                      reason="difference not resolved against the tolerance")
    t = diff / se
    p_less, p_greater = float(stats.t.cdf(t, n - 1)), float(stats.t.sf(t, n - 1))
    p_claim, p_other = (p_less, p_greater) if claim == "less" else (p_greater, p_less)
    text = detail + f"; one-sided p = {min(p_claim, p_other):.2g}"
    decided = p_claim < alpha or p_other < alpha
    return decide(p_claim < alpha if decided else None, text, reason=f"difference not significant at {n} seeds")


def slope_interval(slopes: object, level: float = 0.95) -> tuple[float, float, float, int]:
    """``(mean, low, high, n)``: the mean of per-seed slopes and its two-sided t confidence interval
    at ``level`` (``low = high = mean`` for one seed)."""
    v = _values(slopes, "slopes")
    mean, se, n = _stats(v)
    if n < 2 or se == 0.0:
        return mean, mean, mean, n
    from scipy import stats

    q = float(stats.t.ppf(0.5 + level / 2.0, n - 1))
    return mean, mean - q * se, mean + q * se, n


def rate_verdict(slopes: object, *, claimed: float, rival: float, allowance: float = 0.0, level: float = 0.95,
                 min_n: int = 3, name: str = "slope") -> Verdict:
    """A claimed growth rate ``T^claimed`` against per-seed log–log slopes of the measurement.

    With the ``level`` confidence interval [lo, hi] of the mean slope: **holds** when ``lo <=
    claimed`` (the slope is consistent with the claimed rate or below it) and ``hi < rival`` (it is
    told apart from the rival rate, e.g. √T against T^{3/4}); **fails** when ``lo > claimed +
    allowance`` (it grows faster than claimed even allowing ``allowance`` for the logarithmic
    factors a Õ(·) hides); undecided otherwise, saying which."""
    setting = rules()
    level = 1.0 - 2.0 * setting.alpha if setting.alpha else level
    allowance *= setting.tol_scale
    mean, lo, hi, n = slope_interval(slopes, level)
    detail = f"{name} {mean:.2f} [{lo:.2f}, {hi:.2f}] ({100 * level:g}% CI over {n} seeds) against {claimed:g}"
    guard = min_seeds(n, min_n)
    if guard is not None:
        return undecided(guard.reason, detail)
    if lo > claimed + allowance:
        return decide(False, detail + (f" (+{allowance:.2f} for log factors)" if allowance else ""))
    if lo <= claimed and hi < rival:
        return decide(True, detail)
    reason = (f"the interval reaches the rival rate {rival:g}" if lo <= claimed else
              f"above {claimed:g} by less than the log-factor allowance {allowance:.2f}")
    return undecided(reason, detail)


def verdict_counts(claims: Iterable[Claim]) -> dict[str, int]:
    """``{"holds": n, "fails": n, "undecided": n}`` over ``claims``."""
    counts = dict.fromkeys(VERDICTS, 0)
    for c in claims:
        counts[c.verdict or "undecided"] += 1
    return counts
