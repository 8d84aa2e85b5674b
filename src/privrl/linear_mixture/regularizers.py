"""Regularizers / privatizers of Zhou (2022): the source of ``(Λ, u)`` for the ridge estimators (Eqs 1–2).

Interface (spec §2.1). ``start(...)`` returns the statistics for episode 1 (``Λ = Z¹``, ``u = z¹``);
``update(x_p, y_p, x_r, y_r)`` takes episode k's per-step contributions

* ``x_p[h] = ϕ_h^k(s_h^k, a_h^k)`` (computed in episode k with ``V_{h+1}^k`` and frozen, spec A1),
* ``y_p[h] = V_{h+1}^k(s_{h+1}^k)``, ``x_r[h] = φ(s_h^k, a_h^k)``, ``y_r[h] = r_h^k ∈ [0, 1]``,

and returns the statistics for episode k+1: ``Λ_p (H,d1,d1)``, ``u_p (H,d1)``, ``Λ_r (H,d2,d2)``,
``u_r (H,d2)``. ``constants(alpha)`` gives the data-independent Assumption 2 constants (per step).

* :class:`NonPrivate` — ``Λ = λI + G``, ``u = g`` (UCRL-VTR / OPPO).
* :class:`CentralTreePrivatizer` — JDP (Sec 6.1, Def 6.2/6.3): a *trusted* curator runs 4H binary
  counters (:class:`privrl.privacy.tree.BinaryCounter`, one per stream batched over h) and releases
  ``Λ = Ĝ + γ I``, ``u = ĝ``; eigenvalues are floored at ``λ_min`` (post-processing, a no-op on the
  good event ``‖N‖ ≤ Υ``).
* :class:`LocalPrivatizer` — LDP, **derived** (spec §3.4; the paper only sketches it in Sec 1.1 and
  Remark 6.9): each user adds her own Gaussian noise to her 4H messages before sending; the agent
  sums messages and adds ``γ I`` with ``Υ`` of ``M = K`` noise terms.

Noise. A privatizer takes a :class:`~privrl.linear_mixture.calibration.NoisePlan` (std and
sensitivity per stream and step) and draws every noise sample from its fit's
:class:`~privrl.privacy.release.Releaser` noise source (the tree's node noise through
:class:`~privrl.privacy.tree.NodeNoise`, the local messages likewise), recording the privacy loss
of one user in the fit's ledger at ``start``: users' data are disjoint, so that is the guarantee for
every user (parallel composition). Central: one user's item enters ``count = ⌈log2 K⌉`` nodes of
each counter (Lemma 6.1(i); ``K − 1`` items are inserted); local: one Gaussian message per stream
and step. The bounds the plan's sensitivities rely on are enforced on every contribution.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike
from privrl._validation import check_option, check_scalar, param_error
from privrl.linear_mixture import calibration as cal
from privrl.linear_mixture.batched_statistics import BatchedStatistics as BatchedStatistics
from privrl.linear_mixture.statistics import Stats as Stats
from privrl.linear_mixture.statistics import _floor_eigenvalues as _floor_eigenvalues
from privrl.linear_mixture.statistics import check_contributions as check_contributions
from privrl.linear_mixture.statistics import empty_counters as empty_counters
from privrl.linear_mixture.statistics import kernels as kernels
from privrl.privacy.accounting import Ledger
from privrl.privacy.draws import ANY_SCALE, NoiseDeclaration
from privrl.privacy.factorization import BLTCounter, FactorizationCounter
from privrl.privacy.noise import NoiseSource, NumpyNoise
from privrl.privacy.release import Releaser
from privrl.privacy.tree import BinaryCounter, NodeNoise, scaled_noise

if TYPE_CHECKING:
    from dp_accounting import DpEvent

__all__ = ["Regularizer", "NonPrivate", "CentralTreePrivatizer", "CentralFactorizationPrivatizer", "LocalPrivatizer",
           "BatchedStatistics", "check_contributions", "UPSILON_RULES"]

#: the Υ rules: Lemma B.4 ("theory") or the Monte-Carlo mean plus a concentration tail
UPSILON_RULES = ("theory", "monte_carlo")


class _RunningSum:
    """Exact running sum with an optional ``shift·I`` (per step) on release (the non-private "counter")."""

    def __init__(self, shape: tuple[int, ...], shift: ArrayLike = 0.0) -> None:
        self.shape, self.t = shape, 0
        self.shift = np.broadcast_to(np.asarray(shift, dtype=float), shape[:1]) if np.any(shift) else None
        self._exact = np.zeros(shape)

    def insert(self, item: np.ndarray) -> None:
        self._exact = self._exact + item
        self.t += 1

    def release(self) -> np.ndarray:
        return self._exact if self.shift is None else _shifted(self._exact, self.shift)


def _shifted(Lam: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``Λ + shift_h I`` for a ``(H, d, d)`` stack (a copy)."""
    d = Lam.shape[-1]
    out = Lam.reshape(*Lam.shape[:-2], d * d).copy()
    out[..., ::d + 1] += shift[..., None]
    return out.reshape(Lam.shape)


#: what a LinOpt privatizer's events declare (:mod:`privrl.privacy.draws`)
_PRIVATIZER_NOISE = NoiseDeclaration("gaussian", ANY_SCALE, None,
                                     note="counter node noise or local messages, drawn as the rounds need")


def _releaser(rel: Releaser | None, rng: RngLike, owner: str) -> Releaser:
    """The fit's releaser, or one over seeded NumPy noise from ``rng`` (for direct use and tests)."""
    if rel is not None:
        if not isinstance(rel, Releaser):
            raise param_error("rel", owner, "a privrl Releaser", type(rel).__name__)
        return rel
    if rng is None:
        raise param_error("rel", f"{owner}.start", "the fit's Releaser (or an rng for seeded NumPy noise)", None)
    return Releaser(rng if isinstance(rng, NoiseSource) else NumpyNoise(rng), Ledger())


class Regularizer:
    """Base class. Subclasses set ``guarantee`` and build ``self._counters`` in :meth:`_setup`."""

    guarantee: str | None = None
    name = "regularizer"
    _counters: list[Any]

    def __init__(self, *, clip_inputs: bool = False, value_feature_bound: float | None = None) -> None:
        self.clip_inputs = bool(clip_inputs)
        self.value_feature_bound = value_feature_bound

    # -- life cycle
    def start(self, *, n_episodes: int, horizon: int, d1: int, d2: int, rel: Releaser | None = None,
              rng: RngLike = None) -> Stats:
        """Start a run of ``n_episodes`` users; noisy privatizers draw from ``rel`` (the fit's
        releaser, whose ledger receives the privacy loss of one user) or, for direct use, from
        seeded NumPy noise of ``rng`` (then ``self.rel.ledger`` holds the loss)."""
        self.n_episodes, self.horizon, self.d1, self.d2 = int(n_episodes), int(horizon), int(d1), int(d2)
        self.L_phi = math.sqrt(d1) * horizon if self.value_feature_bound is None else float(self.value_feature_bound)
        self.rel = rel
        self._setup(rng)
        return self.statistics()

    def _setup(self, rng: RngLike) -> None:
        raise NotImplementedError

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x_bound, y_bound)`` per step: ``‖x_p[h]‖ ≤ x_bound[h]``, ``y_p[h] ∈ [0, y_bound[h]]``."""
        H = self.horizon
        return np.full(H, self.L_phi), np.full(H, float(H))

    def statistics(self) -> Stats:
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        return Lp, up, Lr, ur

    def update(self, x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> Stats:
        """Insert one user's contributions (all h at once) and return the next statistics."""
        items = self.items(*self._check(x_p, y_p, x_r, y_r))
        for counter, item in zip(self._counters, self._privatize(items)):
            counter.insert(item)
        return self.statistics()

    # -- inputs
    def _check(self, x_p: ArrayLike, y_p: ArrayLike, x_r: ArrayLike, y_r: ArrayLike) -> tuple[np.ndarray, ...]:
        """Enforce the bounds privacy relies on (see :func:`check_contributions`)."""
        xb, yb = self.bounds
        out = check_contributions(np.asarray(x_p, float)[None], np.asarray(y_p, float)[None],
                                  np.asarray(x_r, float)[None], np.asarray(y_r, float)[None], x_bound=xb[None],
                                  y_bound=yb[None], clip=np.array([self.clip_inputs]), owner=type(self).__name__)
        return tuple(x[0] for x in out)

    @staticmethod
    def items(x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> list[np.ndarray]:
        """One user's 4 stream items (per step; a leading axis of users is allowed): ``x_p x_pᵀ``,
        ``x_p·y_p``, ``x_r x_rᵀ``, ``x_r·y_r``."""
        return [x_p[..., :, None] * x_p[..., None, :], x_p * y_p[..., None], x_r[..., :, None] * x_r[..., None, :],
                x_r * y_r[..., None]]

    def _privatize(self, items: list[np.ndarray]) -> list[np.ndarray]:
        return items

    # -- theory
    def constants(self, alpha: float) -> cal.RegularityConstants:
        raise NotImplementedError

    def events(self) -> list[DpEvent]:
        """The privacy loss of one user (empty for non-private regularizers)."""
        return []

    def public_parameters(self) -> dict[str, object]:
        """Data-independent parameters for certificates and manifests."""
        return {"name": self.name}


def _floor_if_needed(Lam: np.ndarray, noise: np.ndarray, shift: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """The PD safeguard with a shortcut: ``Λ = G + N + γI`` with ``G ⪰ 0``, so ``‖N‖_F ≤ γ − floor``
    (checked per step on the noise, which is data-independent) implies ``λ_min(Λ) ≥ floor``: the
    floor would be a no-op and the eigen-decomposition is skipped."""
    big = np.sqrt((noise * noise).sum(axis=(-2, -1))) > shift - floor
    if np.any(big & (floor > 0)):
        return _floor_eigenvalues(Lam, floor)
    return Lam


class NonPrivate(Regularizer):
    """``Z = λI``, ``z = 0``: UCRL-VTR / OPPO. Constants ``λ_max = λ_min = λ``, ``ν = 0``."""

    #: the kind :class:`~privrl.linear_mixture.batched_statistics.BatchedStatistics` batches (this exact class)
    _batch_kind = "plain"

    name = "none"

    def __init__(self, lam: float = 1.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.lam = check_scalar(lam, "lam", owner="NonPrivate", low=0.0, closed="neither")

    def _setup(self, rng: RngLike) -> None:
        H, d1, d2 = self.horizon, self.d1, self.d2
        self._counters = [_RunningSum((H, d1, d1), self.lam), _RunningSum((H, d1)),
                          _RunningSum((H, d2, d2), self.lam), _RunningSum((H, d2))]

    def constants(self, alpha: float) -> cal.RegularityConstants:
        lam = self.lam
        return cal.RegularityConstants(lam, lam, 0.0, lam, lam, 0.0, lam, lam)

    def public_parameters(self) -> dict[str, object]:
        return {"name": self.name, "lam": self.lam}


class _NoisyPrivatizer(Regularizer):
    """Shared set-up of the central and local privatizers: the plan's noise, the Υ/shift rule."""

    kind = "central"

    def __init__(self, plan: cal.NoisePlan, *, upsilon: str = "theory", shift_scale: float = 1.0,
                 alpha: float = 0.05, lam: float = 1.0, **kw: Any) -> None:
        super().__init__(**kw)
        owner = type(self).__name__
        if not isinstance(plan, cal.NoisePlan) or plan.privatizer != self.kind:
            raise param_error("plan", owner, f"a {self.kind} NoisePlan (privrl.linear_mixture.calibration.noise_plan)",
                              type(plan).__name__)
        self.plan = plan
        self.upsilon = check_option(upsilon, "upsilon", UPSILON_RULES, owner=owner)
        self.shift_scale = check_scalar(shift_scale, "shift_scale", owner=owner, low=0.5, closed="neither")
        self.alpha = check_scalar(alpha, "alpha", owner=owner, low=0.0, high=1.0, closed="right")
        self.lam = check_scalar(lam, "lam", owner=owner, low=0.0, closed="neither")

    @property
    def is_private(self) -> bool:
        return self.plan.is_private

    @property
    def releaser(self) -> Releaser:
        """The run's releaser (set by :meth:`start` whenever the plan is private)."""
        if self.rel is None:
            raise RuntimeError(f"{type(self).__name__} draws noise only after start()")
        return self.rel

    @property
    def sigma(self) -> cal.StreamScales:
        return self.plan.sigma

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.plan.x_bound, dtype=float), np.asarray(self.plan.y_bound, dtype=float)

    def _setup(self, rng: RngLike) -> None:
        owner = type(self).__name__
        plan = self.plan
        if plan.horizon != self.horizon:
            raise param_error("horizon", f"{owner}.start", f"the plan's horizon {plan.horizon}", self.horizon)
        self.rel = _releaser(self.rel, rng, owner) if plan.is_private else self.rel
        self._constants = self.constants(self.alpha)
        c = self._constants
        H = self.horizon
        self.shift_p = np.broadcast_to(np.asarray(c.shift_p, dtype=float), (H,))
        self.shift_r = np.broadcast_to(np.asarray(c.shift_r, dtype=float), (H,))
        self.floor_p = np.broadcast_to(np.asarray(c.lambda_min_p if plan.is_private else 0.0, dtype=float), (H,))
        self.floor_r = np.broadcast_to(np.asarray(c.lambda_min_r if plan.is_private else 0.0, dtype=float), (H,))
        # a step without noise (no data there) needs no floor
        self.floor_p = np.where(plan.std[0] > 0, self.floor_p, 0.0)
        self.floor_r = np.where(plan.std[2] > 0, self.floor_r, 0.0)

    def constants(self, alpha: float) -> cal.RegularityConstants:
        """Assumption 2 constants per step (``alpha`` sets the shift's failure probability: the
        privatizer uses its own ``alpha``)."""
        plan = self.plan
        return cal.regularity_constants(plan.sigma, d1=self.d1, d2=self.d2, n_episodes=self.n_episodes,
                                        horizon=self.horizon, alpha=alpha, n_noise_terms=plan.n_noise_terms,
                                        upsilon=self.upsilon, shift_scale=self.shift_scale, lam=self.lam)

    def events(self) -> list[DpEvent]:
        return self.plan.events()

    def _record(self) -> None:
        """The plan's events, each declared as Gaussian noise drawn by the privatizer: node noise of
        the tree / BLT counters or the local messages, standard normals scaled by the plan's σ (or
        drawn at σ), as many as the run's rounds need (release invariant: no size or scale check here;
        the counters' release-point audits check them)."""
        if self.plan.is_private:
            for event in self.events():
                self.releaser.record(event, noise=_PRIVATIZER_NOISE)

    def _shapes(self) -> list[tuple[int, ...]]:
        H, d1, d2 = self.horizon, self.d1, self.d2
        return [(H, d1, d1), (H, d1), (H, d2, d2), (H, d2)]

    def public_parameters(self) -> dict[str, object]:
        return {"name": self.name, **self.plan.public(), "upsilon_rule": self.upsilon,
                "shift_scale": self.shift_scale, "constants": self._constants.as_dict()}


class CentralTreePrivatizer(_NoisyPrivatizer):
    """JDP privatizer of Zhou (2022, Sec 6.1): 4H binary counters with the plan's node noise, shift
    ``2cΥ I`` per step. A plan without noise (infinite budget) gives exactly :class:`NonPrivate`
    ``(lam)`` (no noise, shift ``lam``)."""

    #: the kind :class:`~privrl.linear_mixture.batched_statistics.BatchedStatistics` batches (this exact class)
    _batch_kind = "tree"

    guarantee = "JDP"
    name = "central"
    kind = "central"

    def _setup(self, rng: RngLike) -> None:
        super()._setup(rng)
        plan = self.plan
        n_items = max(self.n_episodes - 1, 0)                # episode K's data is never used (spec A9)
        self._counters = []
        for j, (shape, sym) in enumerate(zip(self._shapes(), (True, False, True, False))):
            noise = NodeNoise(self.releaser.noise, plan.std[j]) if plan.is_private else None
            self._counters.append(BinaryCounter(shape, n_items=n_items, sigma=plan.std[j], symmetric=sym,
                                                noise=noise, sensitivity=plan.sensitivity[j]))
        self._record()

    def events(self) -> list[DpEvent]:
        """One user's item in ``count`` nodes of every counter: the counters' own events."""
        if not self.plan.is_private:
            return []
        if getattr(self, "_counters", None):
            return [c.event() for c in self._counters]
        return self.plan.events()

    def statistics(self) -> Stats:
        """``Λ = Ĝ + γ_h I`` with the PD floor (skipped when the curator's noise total shows it is a
        no-op, :func:`_floor_if_needed`)."""
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        Lp, Lr = _shifted(Lp, self.shift_p), _shifted(Lr, self.shift_r)
        return (_floor_if_needed(Lp, self._counters[0].noise_sum(), self.shift_p, self.floor_p), up,
                _floor_if_needed(Lr, self._counters[2].noise_sum(), self.shift_r, self.floor_r), ur)


class CentralFactorizationPrivatizer(CentralTreePrivatizer):
    """JDP privatizer with a factorization counter instead of the binary tree (a plan with
    ``counter="blt"`` — :class:`~privrl.privacy.factorization.BLTCounter`, memory independent of K,
    the default under tight calibration — or ``counter="factorization"`` —
    :class:`~privrl.privacy.factorization.FactorizationCounter`, the square root). Per stream and
    step, one user's item enters one Gaussian release of ``C x`` with sensitivity ``s_C Δ``
    (``n = K − 1``; ``s_n Δ`` for the square root); the prefix noise is a symmetric Gaussian of entry
    variance at most ``M σ²`` (``M = s_B²``, resp. ``s_n²``: the plan's ``n_noise_terms``), so Υ, the
    shift and ν are Lemma B.4/B.5's with that ``M``. Everything else (shift, PD floor, bounds) is
    :class:`CentralTreePrivatizer`'s."""

    #: the kind :class:`~privrl.linear_mixture.batched_statistics.BatchedStatistics` batches (this exact class)
    _batch_kind = "blt"

    def _setup(self, rng: RngLike) -> None:
        _NoisyPrivatizer._setup(self, rng)
        plan = self.plan
        if plan.counter not in cal.FACTORIZATIONS:
            raise param_error("plan", type(self).__name__, "a central NoisePlan with counter='blt' or 'factorization'",
                              plan.counter)
        n_items = max(self.n_episodes - 1, 0)                # episode K's data is never used (spec A9)
        item = plan.item_sensitivity
        counter = BLTCounter if plan.counter == "blt" else FactorizationCounter
        self._counters = [counter(shape, n_items=n_items, sigma=plan.std[j], symmetric=sym,
                                  source=self.releaser.noise if plan.is_private else None, sensitivity=item[j])
                          for j, (shape, sym) in enumerate(zip(self._shapes(), (True, False, True, False)))]
        self._record()


class LocalPrivatizer(_NoisyPrivatizer):
    """LDP privatizer, **derived** (spec §3.4; not specified in the paper).

    The user-side randomiser :meth:`local_randomizer` adds ``SymGauss(σ̃_1)`` to her Gram items and
    ``N(0, σ̃_2² I)`` to her moment items (the plan's stds, per stream and step); the agent only sums
    messages: ``Λ = Σ_j W_j + γ I`` with ``Υ`` of ``M = K`` noise terms.
    """

    #: the kind :class:`~privrl.linear_mixture.batched_statistics.BatchedStatistics` batches (this exact class)
    _batch_kind = "local"

    guarantee = "LDP"
    name = "local"
    kind = "local"

    def _setup(self, rng: RngLike) -> None:
        super()._setup(rng)
        H, d1, d2 = self.horizon, self.d1, self.d2
        self._counters = [_RunningSum((H, d1, d1), self.shift_p), _RunningSum((H, d1)),
                          _RunningSum((H, d2, d2), self.shift_r), _RunningSum((H, d2))]
        # the agent never sees these sums; they only decide whether the PD floor can be skipped
        self._noise_p, self._noise_r = np.zeros((H, d1, d1)), np.zeros((H, d2, d2))
        self._record()

    def message_noise(self, shapes: list[tuple], noise: NoiseSource, axis: int = 0) -> list[np.ndarray]:
        """The noise one user adds to her 4 items (in this order, each std per step along ``axis``):
        ``SymGauss(σ̃_p1)``, ``N(0, σ̃_p2²)``, ``SymGauss(σ̃_r1)``, ``N(0, σ̃_r2²)``, drawn from ``noise``."""
        std = self.plan.std
        return [scaled_noise(noise, shape, sym, std[j], axis=axis)
                for j, (shape, sym) in enumerate(zip(shapes, (True, False, True, False)))]

    def local_randomizer(self, items: list[np.ndarray], noise: NoiseSource) -> list[np.ndarray]:
        """What a user sends: her 4 (batched over h) items plus fresh Gaussian noise from ``noise``
        (a leading axis of several users is allowed: ``(n, H, ...)``)."""
        items = [np.asarray(x, dtype=float) for x in items]
        if not self.plan.is_private:
            return [x + 0.0 for x in items]
        axis = items[1].ndim - 2                                         # the step axis of (…, H, d1)
        return [x + n for x, n in zip(items, self.message_noise([x.shape for x in items], noise, axis=axis))]

    def _privatize(self, items: list[np.ndarray]) -> list[np.ndarray]:
        if not self.plan.is_private:
            return items
        noise = self.message_noise([x.shape for x in items], self.releaser.noise)
        self._noise_p = self._noise_p + noise[0]
        self._noise_r = self._noise_r + noise[2]
        return [x + n for x, n in zip(items, noise)]

    def statistics(self) -> Stats:
        """``Λ = Σ_j W_j + γ I`` with the PD floor skipped when the summed noise is small
        (:func:`_floor_if_needed`)."""
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        return (_floor_if_needed(Lp, self._noise_p, self.shift_p, self.floor_p), up,
                _floor_if_needed(Lr, self._noise_r, self.shift_r, self.floor_r), ur)


