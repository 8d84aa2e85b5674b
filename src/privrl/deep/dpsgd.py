"""Clipped, noisy gradient steps and their accounting: DP-SGD (Abadi et al. 2016) for a privacy unit of
one example or of one *unit* (a trajectory: every transition of one person).

A step takes the gradients of the examples in a batch, sums each unit's examples
(:func:`unit_sums`: a unit's total contribution to the step), clips each unit's sum to ℓ2 norm ``C``
(:func:`clip_factors`, :func:`clipped_sum`) and releases ``Σ_units clip(g_u) + N(0, σ² I)`` through the
fit's releaser (:func:`release_clipped_sum`). Sensitivity of the clipped sum: ``C`` when one unit is
added or removed, ``2C`` when one is replaced (its clipped sum moves from one point of the ``C``-ball to
another). With the batch drawn by Poisson sampling of the units at rate ``q``, each step is the
Poisson-subsampled Gaussian mechanism of noise multiplier ``z = σ / Δ``; ``T`` steps compose
(:func:`dpsgd_event`, accounted with dp-accounting's PLD accountant; :func:`calibrate_noise_multiplier`
finds the least ``z`` that meets (ε, δ)). Under replace-one neighbours the amplification statement of
dp-accounting's ``PoissonSampledDpEvent`` (add/remove) does not apply as such: a replacement is a
removal and an addition, so the multiplier is then taken on ``Δ = 2C``.

Shared by DP Q-learning's DP-SGD baseline (per-example clipping, q = 1: :mod:`privrl.q_learning`) and by
learners that train on logged trajectories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._validation import check_scalar, param_error
from privrl.privacy.draws import NoiseDeclaration

if TYPE_CHECKING:  # annotations only
    from privrl.privacy.release import Releaser

__all__ = ["clip_factors", "unit_sums", "clipped_sum", "clipped_block_sums", "release_clipped_sum",
           "clipped_sum_sensitivity", "dpsgd_event", "dpsgd_epsilon", "calibrate_noise_multiplier",
           "poisson_sample", "SubsampledGaussianSteps", "SubsampledGaussianStepKinds"]


def clip_factors(sq_norms: np.ndarray, clip: object) -> np.ndarray:
    """``min(1, C / (‖g‖ + 1e-12))`` from the squared norms ``‖g‖²`` (``clip`` a float or an array that
    broadcasts against them): the factor that brings each gradient into the ℓ2 ball of radius ``C``."""
    return np.minimum(clip / (np.sqrt(sq_norms) + 1e-12), 1.0)


def unit_sums(grads: np.ndarray, units: np.ndarray, n_units: int) -> np.ndarray:
    """``(n_units, P)``: the sum of the rows of ``grads`` ``(n, P)`` of each unit (``units`` ``(n,)`` ints
    in ``[0, n_units)``): a unit's whole contribution to a step, clipped as one."""
    grads = np.asarray(grads, dtype=float)
    units = np.asarray(units)
    if grads.ndim != 2 or units.shape != grads.shape[:1]:
        raise param_error("units", "unit_sums", f"one unit id per gradient row ({grads.shape[0]})", units.shape)
    if units.size and (units.min() < 0 or units.max() >= n_units):
        raise param_error("units", "unit_sums", f"ids in [0, {n_units})", f"ids in [{units.min()}, {units.max()}]")
    out = np.zeros((int(n_units), grads.shape[1]))
    np.add.at(out, units, grads)
    return out


def clipped_sum(grads: np.ndarray, clip: float) -> np.ndarray:
    """``Σ_i clip(g_i)``: each row of ``grads`` ``(m, P)`` scaled into the ℓ2 ball of radius ``clip``."""
    grads = np.asarray(grads, dtype=float)
    return (grads * clip_factors((grads * grads).sum(1), clip)[:, None]).sum(0)


def clipped_block_sums(grads: Sequence[np.ndarray], clip: float | None) -> np.ndarray:
    """The sums over units, block by block (one block per network): ``(Σ_u clip(g_u^1), Σ_u clip(g_u^2), ...)``
    with each block of each unit (a row of ``grads[b]`` ``(m, P_b)``) clipped to ℓ2 norm ``clip`` on its own
    (None: the plain sums). One unit's contribution, the concatenation of its ``B`` clipped blocks, has ℓ2
    norm at most ``√B · C``: the sensitivity of the concatenated sum under add/remove-one."""
    if clip is None:
        return np.concatenate([np.asarray(g, dtype=float).sum(0) for g in grads])
    return np.concatenate([clipped_sum(g, clip) for g in grads])


def clipped_sum_sensitivity(clip: float, neighboring: str) -> float:
    """ℓ2 sensitivity of a clipped sum: ``C`` (add or remove one unit) or ``2C`` (replace one)."""
    clip = check_scalar(clip, "clip", owner="clipped_sum_sensitivity", low=0.0, closed="neither")
    if neighboring not in ("add_or_remove_one", "replace_one"):
        raise param_error("neighboring", "clipped_sum_sensitivity", "'add_or_remove_one' or 'replace_one'",
                          neighboring)
    return clip if neighboring == "add_or_remove_one" else 2.0 * clip


def release_clipped_sum(grads: np.ndarray, clip: float, noise_multiplier: float, rel: Releaser, *,
                        neighboring: str = "add_or_remove_one") -> np.ndarray:
    """``Σ clip(g_u) + N(0, (z Δ)² I)`` through the fit's releaser ``rel`` (one Gaussian release of
    sensitivity ``Δ`` = :func:`clipped_sum_sensitivity`; its event ``GaussianDpEvent(z)``; the
    subsampling amplification is the caller's accounting, :func:`dpsgd_event`)."""
    sens = clipped_sum_sensitivity(clip, neighboring)
    return rel.gaussian(clipped_sum(grads, clip), sensitivity=sens, std=float(noise_multiplier) * sens)


def dpsgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> Any:
    """The event of ``steps`` Poisson-subsampled Gaussian steps (rate ``q``, multiplier ``z``)."""
    import dp_accounting  # lazy: `import privrl` loads no dp-accounting

    z = check_scalar(noise_multiplier, "noise_multiplier", owner="dpsgd_event", low=0.0)
    q = check_scalar(sampling_rate, "sampling_rate", owner="dpsgd_event", low=0.0, high=1.0, closed="right")
    steps = check_scalar(steps, "steps", owner="dpsgd_event", kind=int, low=1)
    step = dp_accounting.GaussianDpEvent(z)
    if q < 1.0:
        step = dp_accounting.PoissonSampledDpEvent(q, step)
    return dp_accounting.SelfComposedDpEvent(step, steps)


def dpsgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """ε at ``delta`` of :func:`dpsgd_event` (PLD accountant)."""
    import dp_accounting

    if noise_multiplier == 0:
        return math.inf
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpsgd_event(noise_multiplier, sampling_rate, steps))
    return float(acc.get_epsilon(delta))


def calibrate_noise_multiplier(epsilon: float, delta: float, sampling_rate: float, steps: int, *,
                               tol: float = 1e-3) -> float:
    """The least noise multiplier ``z`` (within relative ``tol``, rounded up) whose ``steps`` Poisson-
    subsampled Gaussian steps at rate ``q`` are (ε, δ)-DP by the PLD accountant; 0 for ε = ∞."""
    owner = "calibrate_noise_multiplier"
    if epsilon == math.inf:
        return 0.0
    epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="neither")
    delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither")
    lo, hi = 1e-2, 1.0
    while dpsgd_epsilon(hi, sampling_rate, steps, delta) > epsilon:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            raise param_error("epsilon", owner, "a budget some noise multiplier below 1e6 meets", epsilon)
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if dpsgd_epsilon(mid, sampling_rate, steps, delta) > epsilon:
            lo = mid
        else:
            hi = mid
    return hi


def poisson_sample(n_units: int, sampling_rate: float, rng: np.random.Generator) -> np.ndarray:
    """The ids (sorted) of the units of one Poisson-sampled batch: each of ``n_units`` joins independently
    with probability ``q`` (the sampling :func:`dpsgd_event` accounts for; the batch may be empty)."""
    q = check_scalar(sampling_rate, "sampling_rate", owner="poisson_sample", low=0.0, high=1.0, closed="right")
    return np.flatnonzero(rng.random(int(n_units)) < q)


class SubsampledGaussianSteps:
    """The noisy sums of ``steps`` Poisson-subsampled DP-SGD steps of ``size`` coordinates, released as
    *one* ledger event: the composition :func:`dpsgd_event` (``z``, ``q``, ``steps``), recorded when the
    release is opened with the declaration of everything it will draw (``steps · size`` Gaussian numbers of
    std ``z Δ``) — so the ledger's ε is the subsampled one and the release invariant
    (:func:`privrl.privacy.draws.release_problems`) counts every draw. Each :meth:`release` adds
    ``N(0, (z Δ)² I)`` drawn from the fit's noise source (``rel.noise``: OpenDP's samplers when
    ``secure=True``) to one clipped sum; a release past the declared ``steps`` is refused.

    ``z = 0`` (an infinite budget) records nothing and adds no noise: the non-private counterpart.
    """

    def __init__(self, rel: Releaser, *, clip: float, noise_multiplier: float, sampling_rate: float, steps: int,
                 size: int, neighboring: str = "add_or_remove_one") -> None:
        self.sensitivity = clipped_sum_sensitivity(clip, neighboring)
        self.std = float(noise_multiplier) * self.sensitivity
        self.steps = check_scalar(steps, "steps", owner="SubsampledGaussianSteps", kind=int, low=1)
        self.size = check_scalar(size, "size", owner="SubsampledGaussianSteps", kind=int, low=1)
        self._noise = rel.noise
        self.released = 0
        if self.std > 0:
            rel.record(dpsgd_event(noise_multiplier, sampling_rate, self.steps),
                       noise=NoiseDeclaration("gaussian", self.std, self.steps * self.size,
                                              note="Poisson-subsampled DP-SGD steps"))

    def release(self, clipped: np.ndarray) -> np.ndarray:
        """``clipped + N(0, (z Δ)² I)`` (a new array): the noisy sum of the next step."""
        clipped = np.asarray(clipped, dtype=float)
        if clipped.size != self.size:
            raise param_error("clipped", "SubsampledGaussianSteps.release", f"{self.size} coordinates",
                              clipped.size)
        if self.released >= self.steps:
            raise param_error("steps", "SubsampledGaussianSteps.release",
                              f"at most the {self.steps} steps the ledger records", self.released + 1)
        self.released += 1
        return clipped + self._noise.gaussian(clipped.shape, self.std)


class SubsampledGaussianStepKinds:
    """Poisson-subsampled DP-SGD steps of several *kinds* at one noise multiplier ``z``: a kind releases its
    own blocks (e.g. TD3's critic-only steps and its critic-and-actor steps) with its own sensitivity
    ``Δ_k`` (``kinds``: name -> (steps, coordinates, Δ_k)), and a step of kind ``k`` adds noise of std
    ``z Δ_k``. Every step is then the same mechanism — the Poisson-subsampled Gaussian of multiplier ``z``
    — whatever its kind, so ``T = Σ_k steps_k`` steps compose exactly as :func:`dpsgd_event` ``(z, q, T)``:
    the ledger holds one :class:`SubsampledGaussianSteps` event per kind (its steps' composition, with the
    declaration of its draws), and their composition is the ``T``-fold one. A kind of no steps records
    nothing."""

    def __init__(self, rel: Releaser, *, noise_multiplier: float, sampling_rate: float,
                 kinds: Mapping[str, tuple[int, int, float]]) -> None:
        self.kinds = {name: SubsampledGaussianSteps(rel, clip=sens, noise_multiplier=noise_multiplier,
                                                    sampling_rate=sampling_rate, steps=steps, size=size)
                      for name, (steps, size, sens) in kinds.items() if steps > 0}

    def release(self, clipped: np.ndarray, kind: str) -> np.ndarray:
        """``clipped + N(0, (z Δ_kind)² I)``: the noisy sum of the next step of ``kind``."""
        if kind not in self.kinds:
            raise param_error("kind", "SubsampledGaussianStepKinds.release", f"one of {sorted(self.kinds)}", kind)
        return self.kinds[kind].release(clipped)
