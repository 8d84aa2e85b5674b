"""The black-box privacy auditor: a hypothesis test between two neighbouring inputs, turned into a
Clopper–Pearson lower bound on ε (Jagielski et al. 2020; Nasr et al. 2021; Bichsel et al. 2021).

Why it is a lower bound
-----------------------
If a mechanism M is (ε, δ)-DP then for *every* rejection region S and neighbours D, D'::

    P[M(D) ∈ S] ≤ e^ε P[M(D') ∈ S] + δ .

Take S = {T(output) > t} for a scalar test statistic T: "guess D when T > t". With the false
positive rate FPR = P[M(D') ∈ S] and the false negative rate FNR = P[M(D) ∉ S] this reads
``1 − FNR ≤ e^ε FPR + δ``, so every test gives ``ε ≥ ln((1 − δ − FNR) / FPR)``. Replacing the two
rates by Clopper–Pearson *upper* confidence bounds computed from N independent runs per input
turns the bound into one that holds with the stated confidence.

Procedure (:func:`audit_samples`)
---------------------------------
1. Draw N outputs of M on each of D and D' (one vectorised call where the mechanism allows).
2. Split each sample in two halves. On the *selection* half fit each candidate statistic
   (projection on the mean difference, Fisher's linear discriminant, the Laplace likelihood ratio,
   the best single coordinate, the distance to the mean — for noise scales that depend on the
   data —, or a user-supplied one), and choose the statistic, the direction (which input is "positive")
   and the threshold that maximise the ε lower bound on that half. (``"laplace-llr"``, the Laplace
   likelihood ratio with per-coordinate scales, is not among the defaults: it is the release-point
   statistic of Laplace releases, :mod:`privrl.audit.registry`.)
3. On the *evaluation* half — independent of every choice made — count the errors of that one
   test and compute the Clopper–Pearson interval of each rate. The two rates' intervals, each at
   level 1 − α/2, hold jointly with probability ≥ 1 − α (Bonferroni); ``epsilon_lower`` and the
   interval ``ci`` are the images of these intervals.

Verdict: ``VIOLATION`` when ``epsilon_lower > claimed ε`` (then, with probability ≥ 1 − α, the code
does not keep its promise — a bug), ``consistent`` otherwise. A consistent audit is *not* a proof
of privacy: the test may be weak, and the neighbours may not be the worst ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Union

import numpy as np
from scipy import stats

from privrl._rng import RngLike, as_generator
from privrl._validation import check_option, check_scalar, param_error

__all__ = [
    "BLACK_BOX",
    "RELEASE_POINT",
    "AuditResult",
    "STATISTICS",
    "Statistic",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "epsilon_lower_bound",
]

CONSISTENT = "consistent"
VIOLATION = "VIOLATION"

#: The two kinds of audit: *black-box* — every candidate statistic, the best chosen on the selection
#: half; *release-point* — the release's optimal statistic alone (its likelihood ratio on the
#: worst-case pair), many samples (``privrl.audit.registry``: sharpness and the noise ÷ 2 controls).
BLACK_BOX = "black-box"
RELEASE_POINT = "release-point"

#: A statistic factory: ``fit(selection_a, selection_b) -> T`` with ``T(x) -> (n,)`` scores; a high
#: score means "looks like D (sample a)".
Statistic = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]
StatisticLike = Union[str, Statistic]


# --------------------------------------------------------------------------- Clopper–Pearson

def clopper_pearson(k: Any, n: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (Clopper–Pearson) interval of level ``1 − alpha`` for a binomial rate with
    ``k`` successes out of ``n``: ``(Beta(α/2; k, n−k+1), Beta(1−α/2; k+1, n−k))``, with the
    conventions lower = 0 at k = 0 and upper = 1 at k = n. Vectorised over ``k`` and ``n``.

    >>> lo, hi = clopper_pearson(0, 10, 0.05)
    >>> float(lo), round(float(hi), 4)      # (1 - (0.025)**(1/10)) = 0.3085
    (0.0, 0.3085)
    """
    alpha = check_scalar(alpha, "alpha", owner="clopper_pearson", low=0.0, high=1.0, closed="neither")
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise param_error("k/n", "clopper_pearson", "counts with 0 <= k <= n and n >= 1",
                          {"k": k.tolist(), "n": n.tolist()})
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha / 2, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return lower, upper


def epsilon_lower_bound(fpr_upper: object, fnr_upper: object, delta: float) -> np.ndarray:
    """``max(0, ln((1 − δ − FNR) / FPR))``: the ε any (ε, δ)-DP mechanism needs for a test with
    these error rates (0 when the test is no better than δ allows). Vectorised."""
    fpr = np.asarray(fpr_upper, dtype=float)
    fnr = np.asarray(fnr_upper, dtype=float)
    num = 1.0 - delta - fnr
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(np.maximum(num, 1e-300) / np.where(fpr > 0, fpr, 1.0))
        eps = np.where(num <= 0, 0.0, np.where(fpr <= 0, np.inf, ratio))
    return np.maximum(eps, 0.0)


# --------------------------------------------------------------------------- statistics

def _projection(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Projection on the difference of the means (the likelihood ratio for isotropic noise)."""
    ma, mb = a.mean(axis=0), b.mean(axis=0)
    w, c = ma - mb, (ma + mb) / 2
    return lambda x: (x - c) @ w


def _lda(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Fisher's discriminant ``Σ⁻¹(μ_a − μ_b)`` with the pooled covariance plus a tiny ridge (the
    likelihood ratio for correlated Gaussian noise, e.g. prefix sums of a tree counter). A
    direction with (almost) no noise gets a huge weight, which is what catches noise-free
    coordinates."""
    ma, mb = a.mean(axis=0), b.mean(axis=0)
    cov = (np.cov(a, rowvar=False) + np.cov(b, rowvar=False)) / 2 if len(a) > 1 else np.eye(a.shape[1])
    cov = np.atleast_2d(cov)
    ridge = 1e-9 * max(float(np.trace(cov)) / cov.shape[0], 1e-300)
    w = np.linalg.solve(cov + ridge * np.eye(cov.shape[0]), ma - mb)
    c = (ma + mb) / 2
    return lambda x: (x - c) @ w


def _laplace(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The Laplace likelihood ratio ``Σ_i |x_i − m_b,i| − |x_i − m_a,i|`` with coordinate medians
    (optimal for i.i.d. Laplace noise of equal scale)."""
    ma, mb = np.median(a, axis=0), np.median(b, axis=0)
    return lambda x: np.abs(x - mb).sum(axis=1) - np.abs(x - ma).sum(axis=1)


def _laplace_llr(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The Laplace log-likelihood ratio ``Σ_i (|x_i − m_b,i| − |x_i − m_a,i|) / b_i`` with coordinate
    medians ``m`` and per-coordinate scales ``b_i`` (the mean absolute deviation from the median,
    pooled over both samples): optimal for independent Laplace noise of any scales — e.g. several
    Laplace releases composed with different budgets. A coordinate without noise gets a weight
    10¹² times the largest, which is what catches a noise-free coordinate that moves."""
    ma, mb = np.median(a, axis=0), np.median(b, axis=0)
    scale = (np.abs(a - ma).mean(axis=0) + np.abs(b - mb).mean(axis=0)) / 2
    w = 1.0 / np.maximum(scale, 1e-12 * max(float(scale.max()), 1e-300))
    return lambda x: (np.abs(x - mb) - np.abs(x - ma)) @ w


def _max_coordinate(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The single coordinate with the largest standardised mean difference."""
    sa, sb = a.std(axis=0), b.std(axis=0)
    scale = np.sqrt((sa**2 + sb**2) / 2) + 1e-300
    z = (a.mean(axis=0) - b.mean(axis=0)) / scale
    j = int(np.argmax(np.abs(z)))
    sign = 1.0 if z[j] >= 0 else -1.0
    return lambda x: sign * x[:, j]


def _norm(a: np.ndarray, b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Squared distance to the pooled mean: catches a noise *scale* that differs between the two
    inputs (a data-dependent σ that is not smooth, e.g. local instead of smooth sensitivity)."""
    m = (a.mean(axis=0) + b.mean(axis=0)) / 2
    return lambda x: ((x - m) ** 2).sum(axis=1)


STATISTICS: dict[str, Statistic] = {
    "norm": _norm,
    "projection": _projection,
    "lda": _lda,
    "laplace": _laplace,
    "laplace-llr": _laplace_llr,
    "coordinate": _max_coordinate,
}
DEFAULT_STATISTICS = ("projection", "lda", "laplace", "coordinate", "norm")


#: The selection half scores thresholds with Clopper–Pearson bounds at ``alpha`` times this factor:
#: a stricter level than the evaluation's penalises thresholds in the far tail whose few hits on the
#: selection half are luck (a winner's curse that otherwise fails on the evaluation half).
SELECTION_ALPHA_FACTOR = 0.01

#: Default output resolution of an audit (see ``audit_samples``): 2^-40 of the magnitude.
DEFAULT_RESOLUTION_BITS = 40


# --------------------------------------------------------------------------- result

@dataclass(frozen=True)
class AuditResult:
    """One audit. ``epsilon_lower`` holds with probability ≥ ``confidence``; ``ci`` is the
    interval ``[epsilon_lower, epsilon_upper]`` of ε for the chosen test (the upper end is what
    this test's error rates suggest at most, not a bound on the mechanism's ε)."""

    algorithm: str
    claimed_epsilon: float
    delta: float
    epsilon_lower: float
    ci: tuple[float, float]
    confidence: float
    trials: int
    statistic: str
    threshold: float
    fpr: float
    fnr: float
    verdict: str
    broken: str | None = None
    note: str = ""
    mode: str = BLACK_BOX

    @property
    def violation(self) -> bool:
        return self.verdict == VIOLATION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = [_json_float(x) for x in self.ci]
        for key in ("claimed_epsilon", "epsilon_lower", "threshold"):
            d[key] = _json_float(d[key])
        return d


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) and x > 0 else ("-inf" if math.isinf(x) else float(x))


# --------------------------------------------------------------------------- the test

def _as_matrix(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[0] < 4:
        raise param_error(name, "audit_samples", "an array of at least 4 outputs (first axis = trials)",
                          f"shape {arr.shape}")
    arr = arr.reshape(arr.shape[0], -1)
    if not np.all(np.isfinite(arr)):
        raise param_error(name, "audit_samples", "finite outputs", "outputs with non-finite entries")
    return arr


def _quantize(a: np.ndarray, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Round both samples to a per-coordinate grid ``2^(ceil(log2 max|x|) - bits)`` (max over the
    selection halves only, so the evaluation halves stay independent of every choice)."""
    top = np.maximum(np.abs(a[: len(a) // 2]).max(axis=0), np.abs(b[: len(b) // 2]).max(axis=0))
    step = np.exp2(np.ceil(np.log2(np.maximum(top, 1e-300))) - bits)
    return np.round(a / step) * step, np.round(b / step) * step


def _best_threshold(sa: np.ndarray, sb: np.ndarray, delta: float, alpha: float) -> tuple[float, float, int]:
    """Threshold and direction maximising the CP ε lower bound on one half.

    Returns ``(epsilon, threshold, sign)``; the test is "guess a when sign·T > sign·threshold"."""
    best = (-1.0, 0.0, 1)
    na, nb = len(sa), len(sb)
    pooled = np.unique(np.concatenate([sa, sb]))
    if len(pooled) > 4000:  # candidate thresholds: quantiles of the pooled scores
        pooled = np.unique(np.quantile(pooled, np.linspace(0, 1, 4000)))
    cand = np.concatenate([pooled, [pooled[0] - 1.0]])
    sa_sorted, sb_sorted = np.sort(sa), np.sort(sb)
    for sign in (1, -1):
        # "guess a" region {sign * T > sign * t}
        if sign == 1:
            hits_a = na - np.searchsorted(sa_sorted, cand, side="right")
            hits_b = nb - np.searchsorted(sb_sorted, cand, side="right")
        else:
            hits_a = np.searchsorted(sa_sorted, cand, side="left")
            hits_b = np.searchsorted(sb_sorted, cand, side="left")
        _, fpr_hi = clopper_pearson(hits_b, nb, alpha)
        _, fnr_hi = clopper_pearson(na - hits_a, na, alpha)
        eps = epsilon_lower_bound(fpr_hi, fnr_hi, delta)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(cand[i]), sign)
    return best


def audit_samples(
    samples_a: Any,
    samples_b: Any,
    *,
    epsilon: float,
    delta: float,
    confidence: float = 0.95,
    statistics: Sequence[StatisticLike] = DEFAULT_STATISTICS,
    algorithm: str = "mechanism",
    broken: str | None = None,
    note: str = "",
    resolution_bits: int | None = DEFAULT_RESOLUTION_BITS,
) -> AuditResult:
    """Audit from outputs already drawn: ``samples_a`` on D and ``samples_b`` on D' (first axis =
    independent runs; any further axes are flattened). See the module docstring for the procedure.

    ``resolution_bits``: outputs are first rounded to a power-of-two grid ``2^-bits`` times their
    magnitude (per coordinate, from the selection half). The audit then checks the *calibration* of
    the noise, not the floating-point bits of the sampler: without rounding, a statistic that is
    sensitive to the last bits finds the lattice of ``fl(value + noise)`` (Mironov 2012), which is
    real but known — see ``secure=True`` — and would drown every calibration finding. ``None``
    audits the raw floating-point outputs.
    """
    owner = "audit_samples"
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, allow_inf=True)
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="left")
    confidence = check_scalar(confidence, "confidence", owner=owner, low=0.0, high=1.0, closed="neither")
    a = _as_matrix(samples_a, "samples_a")
    b = _as_matrix(samples_b, "samples_b")
    if a.shape[1] != b.shape[1]:
        raise param_error("samples_b", owner, f"outputs of the same size as samples_a ({a.shape[1]})",
                          f"size {b.shape[1]}")
    if resolution_bits is not None:
        resolution_bits = check_scalar(resolution_bits, "resolution_bits", owner=owner, kind=int, low=1, high=52)
        a, b = _quantize(a, b, resolution_bits)
    if not statistics:
        raise param_error("statistics", owner, "a non-empty sequence of names or callables", statistics)
    alpha = 1.0 - confidence
    # Selection half / evaluation half (the runs are i.i.d., so a fixed split is a random split).
    ha, hb = len(a) // 2, len(b) // 2
    sel_a, ev_a, sel_b, ev_b = a[:ha], a[ha:], b[:hb], b[hb:]
    best: tuple[float, str, Callable[[np.ndarray], np.ndarray], float, int] | None = None
    for stat in statistics:
        if isinstance(stat, str):
            check_option(stat, "statistics", tuple(STATISTICS), owner=owner)
            name, factory = stat, STATISTICS[stat]
        elif callable(stat):
            name, factory = getattr(stat, "__name__", "custom"), stat
        else:
            raise param_error("statistics", owner, "names of STATISTICS or callables", stat)
        with np.errstate(all="ignore"):
            score = factory(sel_a, sel_b)
            sa, sb = np.asarray(score(sel_a), float), np.asarray(score(sel_b), float)
        if not (np.all(np.isfinite(sa)) and np.all(np.isfinite(sb))):
            continue
        eps, thr, sign = _best_threshold(sa, sb, delta, alpha * SELECTION_ALPHA_FACTOR)
        if best is None or eps > best[0]:
            best = (eps, name, score, thr, sign)
    if best is None:
        raise param_error("statistics", owner, "statistics giving finite scores", "none did")
    _, name, score, thr, sign = best
    with np.errstate(all="ignore"):
        ta, tb = sign * np.asarray(score(ev_a), float), sign * np.asarray(score(ev_b), float)
    t = sign * thr
    na, nb = len(ta), len(tb)
    fp, fn = int(np.sum(tb > t)), int(np.sum(~(ta > t)))
    # Each rate's two-sided interval at level 1 - alpha/2: jointly >= 1 - alpha.
    fpr_lo, fpr_hi = clopper_pearson(fp, nb, alpha / 2)
    fnr_lo, fnr_hi = clopper_pearson(fn, na, alpha / 2)
    eps_lower = float(epsilon_lower_bound(fpr_hi, fnr_hi, delta))
    eps_upper = float(epsilon_lower_bound(fpr_lo, fnr_lo, delta))
    verdict = VIOLATION if eps_lower > epsilon else CONSISTENT
    return AuditResult(
        algorithm=algorithm, claimed_epsilon=float(epsilon), delta=float(delta),
        epsilon_lower=eps_lower, ci=(eps_lower, eps_upper), confidence=confidence,
        trials=int(len(a) + len(b)) // 2, statistic=name, threshold=float(thr),
        fpr=fp / nb, fnr=fn / na, verdict=verdict, broken=broken, note=note,
    )


Sampler = Callable[[int, np.random.Generator], np.ndarray]


def audit_mechanism(
    sample_a: Sampler,
    sample_b: Sampler,
    *,
    epsilon: float,
    delta: float,
    trials: int = 10_000,
    confidence: float = 0.95,
    statistics: Sequence[StatisticLike] = DEFAULT_STATISTICS,
    rng: RngLike = None,
    algorithm: str = "mechanism",
    broken: str | None = None,
    note: str = "",
    resolution_bits: int | None = DEFAULT_RESOLUTION_BITS,
) -> AuditResult:
    """Run ``sample_a(trials, rng)`` (the mechanism on D, returning ``trials`` independent outputs
    stacked on the first axis) and ``sample_b(trials, rng)`` (on D'), and audit them with
    :func:`audit_samples` against the claimed (ε, δ).

    Example
    -------
    >>> import numpy as np
    >>> from privrl.privacy import LaplaceMechanism
    >>> mech = LaplaceMechanism(sensitivity=1.0, noise_scale=1.0)          # claims 1-DP
    >>> def on(value):
    ...     return lambda n, rng: mech.release(np.full((n, 1), value), rng=rng)[0]
    >>> res = audit_mechanism(on(0.0), on(1.0), epsilon=1.0, delta=0.0, trials=4000, rng=0)
    >>> res.verdict
    'consistent'
    """
    trials = check_scalar(trials, "trials", owner="audit_mechanism", kind=int, low=8)
    gen = as_generator(rng)
    a = np.asarray(sample_a(trials, gen), dtype=float)
    b = np.asarray(sample_b(trials, gen), dtype=float)
    for name, arr in (("sample_a", a), ("sample_b", b)):
        if arr.ndim == 0 or arr.shape[0] != trials:
            raise param_error(name, "audit_mechanism", f"a sampler returning {trials} outputs on axis 0",
                              f"shape {arr.shape}")
    return audit_samples(a, b, epsilon=epsilon, delta=delta, confidence=confidence,
                         statistics=statistics, algorithm=algorithm, broken=broken, note=note,
                         resolution_bits=resolution_bits)
