"""Audit targets ``dp-bc-canary`` and ``dp-bc-canary-secure``: a black-box canary (membership) audit of
whole DP-BC training runs.

The release-point audits (``dp-bc-step``, :mod:`privrl.deep_offline.audit`) check one clipped noisy step;
this one checks what a user receives — the final policy of a complete fit, with its Poisson sampling of
trajectories, its ``T`` noisy steps and Adam — against the claim of the fit's ledger, without looking
inside (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021, the black-box adversary; Tramèr et al. 2022,
"Debugging differential privacy: a case study for privacy auditing": one canary, many trainings):

* ``D``: a small public dataset of synthetic trajectories (:func:`public_dataset`): 2-D states
  ``(x, 0)`` with ``x`` uniform in ``[-1, 1]``, action ``1[x > 0]`` of three;
* the canary ``z`` (:func:`canary_trajectory`): one trajectory that sits at the out-of-distribution
  state ``(0, 3)`` (no public state leaves the line ``y = 0``) and takes action 2, which no public
  trajectory takes;
* ``R`` fits of :class:`~privrl.deep_offline.DPBC` on ``D`` and ``R`` on ``D ∪ {z}`` (add/remove
  neighbours, DP-BC's relation), each with its own network initialisation, Poisson-sampled batches and
  privacy noise — the estimator's own ``fit``, nothing re-implemented;
* the score of a fitted model is the canary's log-likelihood ``(1/L) Σ_t log π(a_t | s_t)`` over its
  transitions (:func:`canary_score`);
* the two samples of scores become the lower bound ε_lower at confidence ``1 − α`` by
  :func:`privrl.audit.core.audit_samples`: the threshold (and the direction) chosen on one half of the
  runs, the Clopper–Pearson upper bounds of the false-positive and false-negative rates of that test on
  the other half, ``ε_lower = ln((1 − δ − FNR⁺) / FPR⁺)``.

With ``R`` runs per side the evaluation halves hold ``R/2`` runs, and a test without any error certifies
at most ``ln((1 − δ − u) / u)`` with ``u = 1 − (α/4)^(2/R)`` (:func:`largest_certifiable_epsilon`; the
two rates' intervals each at level ``1 − α/2``): 1.41 at ``R = 40`` (the fast audit), 2.39 at ``R = 100``
(the full secure audit) and 3.11 at ``R = 200`` (the full seeded audit), at 95 % confidence. The claim is
ε = 1 (the fit's ledger: 0.999), so a fit that leaks the canary can be flagged at every size. The test is
chosen on the selection halves among :func:`gap_midpoint` and the score itself (``coordinate``).

Verdict: pass when ε_lower ≤ the claimed ε (the fit's ``privacy_spent(δ)``). Negative control
``noise-off``: every step's noise multiplied by 0 (``ScaledNoise(·, 0)``: the clipped sums released
exactly, the ledger unchanged) must be flagged. A noise ÷ 10 control is not offered: the final model's
canary score does not see it at these sizes (docs/deep_offline.md, "Audit").

``dp-bc-canary`` draws its noise from seeded NumPy (reproducible with ``privrl audit --seed``);
``dp-bc-canary-secure`` fits with ``secure=True`` — OpenDP's samplers, and the initialisation and the
batches from OS entropy, as in production — so its rows are not reproducible by seed.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import log_softmax

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar
from privrl.audit.core import Sampler
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.base import use_noise
from privrl.data import TrajectoryDataset
from privrl.deep.networks import MLP
from privrl.deep_offline.estimators import DPBC
from privrl.privacy import NumpyNoise, PrivacyBudget, ScaledNoise
from privrl.privacy.noise import NoiseSource, SecureNoise

__all__ = ["CANARY_STATE", "CANARY_ACTION", "public_dataset", "canary_trajectory", "canary_datasets",
           "canary_score", "gap_midpoint", "largest_certifiable_epsilon", "audited_estimator"]

#: the canary's state: off the line y = 0 where every public state lies
CANARY_STATE = (0.0, 3.0)
#: the canary's action: one that no public trajectory takes
CANARY_ACTION = 2
N_ACTIONS = 3
N_PUBLIC = 8
LENGTH = 4
#: DP-BC's settings for every audited fit: a tiny network and few steps (≈ 70 ms of CPU per fit)
HIDDEN, N_STEPS, SAMPLING_RATE, LEARNING_RATE, CLIP = (16,), 30, 0.5, 0.05, 1.0
#: fits per dataset (R) in the full audit (seeded; secure: OpenDP's exact samplers make a fit ≈ 4× slower) and
#: in the fast one
RUNS, SECURE_RUNS, FAST_RUNS = 200, 100, 40

NOISE_OFF = BrokenVariant("noise-off", "no privacy noise (every step's noise x 0), same claim")


def _episode(states: np.ndarray, actions: np.ndarray) -> dict[str, np.ndarray]:
    return dict(observations=states, actions=actions.astype(np.int64), rewards=np.zeros(len(states)),
                next_observations=states)


def public_dataset(n: int = N_PUBLIC, length: int = LENGTH, rng: RngLike = 0) -> list[dict[str, np.ndarray]]:
    """``n`` public trajectories of ``length`` states ``(x, 0)``, ``x ~ U[-1, 1]``, action ``1[x > 0]``."""
    gen = as_generator(rng)
    episodes = []
    for _ in range(n):
        x = gen.uniform(-1.0, 1.0, length)
        episodes.append(_episode(np.column_stack([x, np.zeros(length)]), (x > 0).astype(np.int64)))
    return episodes


def canary_trajectory(length: int = LENGTH) -> dict[str, np.ndarray]:
    """The canary ``z``: ``length`` transitions at :data:`CANARY_STATE`, each taking :data:`CANARY_ACTION`."""
    return _episode(np.tile(np.asarray(CANARY_STATE, float), (length, 1)), np.full(length, CANARY_ACTION))


@functools.cache
def canary_datasets() -> tuple[TrajectoryDataset, TrajectoryDataset]:
    """``(D, D ∪ {z})``: the public trajectories, and the same with the canary appended (add/remove
    neighbours)."""
    public = public_dataset()
    return (TrajectoryDataset.from_episodes(public, n_actions=N_ACTIONS),
            TrajectoryDataset.from_episodes([*public, canary_trajectory()], n_actions=N_ACTIONS))


def canary_score(estimator: DPBC, canary: dict[str, np.ndarray] | None = None) -> float:
    """The canary's mean log-likelihood ``(1/L) Σ_t log π(a_t | s_t)`` under a fitted model (a log-softmax
    of the logits, finite however unlikely the action; the audited fits use no observation scaling)."""
    canary = canary_trajectory() if canary is None else canary
    logits = MLP(estimator.sizes_, estimator.params_)(np.asarray(canary["observations"], float))
    logp = log_softmax(logits, axis=1)
    return float(logp[np.arange(len(logp)), canary["actions"]].mean())


def gap_midpoint(sel_a: np.ndarray, sel_b: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A step test fitted on the selection halves of the scores: ``±1`` on either side of ``m``, the middle
    of the gap between the two samples when they do not overlap (else the middle of their medians), ``+1``
    on the side of ``sel_a``. The core's own statistics put the threshold at the selection half's most
    extreme score (the edge of the gap), so a single run of the evaluation half a little beyond it is an
    error; the middle of the gap is the test that the selection half supports with the most room."""
    a, b = sel_a[:, 0], sel_b[:, 0]
    sign = 1.0 if np.median(a) >= np.median(b) else -1.0
    high, low = (a, b) if sign > 0 else (b, a)
    m = (low.max() + high.min()) / 2 if low.max() < high.min() else (np.median(a) + np.median(b)) / 2
    return lambda x: np.where(x[:, 0] > m, sign, -sign)


def largest_certifiable_epsilon(runs: int, delta: float, confidence: float = 0.95) -> float:
    """The largest ε_lower :func:`~privrl.audit.core.audit_samples` can certify from ``runs`` fits per
    dataset: a test without error on the evaluation halves (``runs // 2`` fits each), whose rates' two-sided
    Clopper–Pearson intervals at level ``1 − α/2`` end at ``u = 1 − (α/4)^(1/(runs // 2))``:
    ``ln((1 − δ − u) / u)``."""
    owner = "largest_certifiable_epsilon"
    runs = check_scalar(runs, "runs", owner=owner, kind=int, low=4)
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="left")
    confidence = check_scalar(confidence, "confidence", owner=owner, low=0.0, high=1.0, closed="neither")
    u = 1.0 - ((1.0 - confidence) / 4.0) ** (1.0 / (runs // 2))
    return math.log((1.0 - delta - u) / u)


def audited_estimator(epsilon: float, delta: float, *, secure: bool = False) -> DPBC:
    """The (unfitted) DP-BC every audited fit uses: the budget, ``secure`` and the settings above."""
    return DPBC(budget=PrivacyBudget(epsilon=epsilon, delta=delta), secure=secure, hidden=HIDDEN, n_steps=N_STEPS,
                sampling_rate=SAMPLING_RATE, learning_rate=LEARNING_RATE, clip_norm=CLIP, n_actions=N_ACTIONS)


def _fits(dataset: TrajectoryDataset, epsilon: float, delta: float, broken: str | None, secure: bool) -> Sampler:
    """The sampler of ``n`` scores ``(n, 1)``: each a complete fit on ``dataset`` (its own streams: children
    of the audit's ``rng``, or OS entropy and OpenDP in secure mode), scored on the canary."""
    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        scores = np.empty((n, 1))
        for i, seed in enumerate(rng.spawn(n)):
            est = audited_estimator(epsilon, delta, secure=secure)
            if broken is not None:     # NOISE_OFF: the fit's own noise source, times 0
                base: NoiseSource = SecureNoise() if secure else NumpyNoise(seed)
                use_noise(est, ScaledNoise(base, 0.0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # δ ≥ 1/n on the tiny data: the audit checks the training
                est.fit(dataset, rng=None if secure else seed)
            scores[i, 0] = canary_score(est)
        return scores
    return sample


def _pair(epsilon: float, delta: float, broken: str | None, secure: bool) -> AuditPair:
    d, d_canary = canary_datasets()
    note = "secure=True: OpenDP noise, init and batches from OS entropy (not reproducible by seed)" if secure else ""
    return AuditPair(_fits(d, epsilon, delta, broken, secure), _fits(d_canary, epsilon, delta, broken, secure),
                     _claim(epsilon, delta, secure), delta, note)


def _build(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(epsilon, delta, broken, secure=False)


def _build_secure(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(epsilon, delta, broken, secure=True)


def _claim(epsilon: float, delta: float, secure: bool) -> float:
    """The claim: the audited estimator's ``privacy_spent(δ)`` after a fit (its ledger's PLD ε of the ``T``
    subsampled steps)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = audited_estimator(epsilon, delta, secure=secure).fit(canary_datasets()[0], rng=None if secure else 0)
    return est.privacy_spent(delta)


def _target(name: str, secure: bool, runs: int) -> AuditTarget:
    mode = "secure=True (OpenDP noise)" if secure else "seeded noise"
    return AuditTarget(
        name=name, description=f"whole DP-BC training runs, canary log-likelihood (black-box membership), {mode}",
        privacy_unit="one trajectory (add/remove)", build=_build_secure if secure else _build,
        epsilon=1.0, delta=1e-5, variants=(NOISE_OFF,), statistics=(gap_midpoint, "coordinate"),
        trials=runs, fast_trials=FAST_RUNS)


register_target(_target("dp-bc-canary", secure=False, runs=RUNS))
register_target(_target("dp-bc-canary-secure", secure=True, runs=SECURE_RUNS))
