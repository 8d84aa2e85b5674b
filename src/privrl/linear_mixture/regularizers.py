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
from typing import Any

import numpy as np

from privrl._rng import RngLike
from privrl._validation import check_option, check_scalar, param_error
from privrl.errors import InvalidDataError
from privrl.linear_mixture import calibration as cal
from privrl.privacy.accounting import Ledger
from privrl.privacy.draws import ANY_SCALE, NoiseDeclaration
from privrl.privacy.factorization import BLTCounter, FactorizationCounter
from privrl.privacy.noise import NoiseSource, NumpyNoise
from privrl.privacy.release import Releaser
from privrl.privacy.tree import BinaryCounter, NodeNoise, gaussian_round_layout, scaled_noise

__all__ = ["Regularizer", "NonPrivate", "CentralTreePrivatizer", "CentralFactorizationPrivatizer", "LocalPrivatizer",
           "BatchedStatistics", "check_contributions", "UPSILON_RULES"]

Stats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: the Υ rules: Lemma B.4 ("theory") or the Monte-Carlo mean plus a concentration tail
UPSILON_RULES = ("theory", "monte_carlo")


class _RunningSum:
    """Exact running sum with an optional ``shift·I`` (per step) on release (the non-private "counter")."""

    def __init__(self, shape: tuple[int, ...], shift: Any = 0.0) -> None:
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
    def _check(self, x_p, y_p, x_r, y_r):
        """Enforce the bounds privacy relies on (see :func:`check_contributions`)."""
        xb, yb = self.bounds
        out = check_contributions(np.asarray(x_p, float)[None], np.asarray(y_p, float)[None],
                                  np.asarray(x_r, float)[None], np.asarray(y_r, float)[None], x_bound=xb[None],
                                  y_bound=yb[None], clip=np.array([self.clip_inputs]), owner=type(self).__name__)
        return tuple(x[0] for x in out)

    @staticmethod
    def items(x_p, y_p, x_r, y_r) -> list[np.ndarray]:
        """One user's 4 stream items (per step; a leading axis of users is allowed): ``x_p x_pᵀ``,
        ``x_p·y_p``, ``x_r x_rᵀ``, ``x_r·y_r``."""
        return [x_p[..., :, None] * x_p[..., None, :], x_p * y_p[..., None], x_r[..., :, None] * x_r[..., None, :],
                x_r * y_r[..., None]]

    def _privatize(self, items: list[np.ndarray]) -> list[np.ndarray]:
        return items

    # -- theory
    def constants(self, alpha: float) -> cal.RegularityConstants:
        raise NotImplementedError

    def events(self) -> list[Any]:
        """The privacy loss of one user (empty for non-private regularizers)."""
        return []

    def public_parameters(self) -> dict[str, Any]:
        """Data-independent parameters for certificates and manifests."""
        return {"name": self.name}


def _floor_eigenvalues(Lam: np.ndarray, floor: Any) -> np.ndarray:
    """PD safeguard (spec §3.1): add ``(floor_h − λ_min)_+ I`` per step; bit-identical when
    ``λ_min ≥ floor`` everywhere."""
    floor = np.asarray(floor, dtype=float)
    if not np.any(floor > 0):
        return Lam
    lam_min = np.linalg.eigvalsh(Lam)[..., 0]
    if np.all(lam_min >= floor):
        return Lam
    add = np.maximum(floor - lam_min, 0.0)
    return Lam + add[..., None, None] * np.eye(Lam.shape[-1])


def _floor_if_needed(Lam: np.ndarray, noise: np.ndarray, shift: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """The PD safeguard with a shortcut: ``Λ = G + N + γI`` with ``G ⪰ 0``, so ``‖N‖_F ≤ γ − floor``
    (checked per step on the noise, which is data-independent) implies ``λ_min(Λ) ≥ floor``: the
    floor would be a no-op and the eigen-decomposition is skipped."""
    big = np.sqrt((noise * noise).sum(axis=(-2, -1))) > shift - floor
    if np.any(big & (floor > 0)):
        return _floor_eigenvalues(Lam, floor)
    return Lam


def check_contributions(x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray, *, x_bound: np.ndarray,
                        y_bound: np.ndarray, clip: np.ndarray, owner: str | list[str]) -> tuple[np.ndarray, ...]:
    """The bounds privacy relies on, for R users at once (leading axis R; ``x_bound``, ``y_bound``
    ``(R, H)``, ``clip`` ``(R,)``): ``‖x_p[h]‖ ≤ x_bound[h]``, ``y_p[h] ∈ [0, y_bound[h]]``,
    ``‖x_r‖ ≤ 1``, ``y_r ∈ [0, 1]`` (relative tolerance 1e-9; a zero bound needs an exact zero).
    A user out of bounds raises unless her ``clip`` is set; then her contributions are projected
    (spec §3.1) and the others are returned untouched. The message names the bounds, never the
    values."""
    tol = 1e-9
    n_p = np.sqrt((x_p * x_p).sum(axis=-1))
    n_r = np.sqrt((x_r * x_r).sum(axis=-1))
    if ((n_p <= x_bound * (1 + tol)).all() and n_r.max() <= 1 + tol and y_p.min() >= -tol
            and (y_p <= y_bound * (1 + tol)).all() and y_r.min() >= -tol and y_r.max() <= 1 + tol):
        return x_p, y_p, x_r, y_r                                        # (the usual case, in few operations)
    within = ((n_p <= x_bound * (1 + tol)) & (n_r <= 1 + tol) & (y_p >= -tol) & (y_p <= y_bound * (1 + tol))
              & (y_r >= -tol) & (y_r <= 1 + tol))
    bad = ~within.all(-1)
    if not np.all(clip[bad]):
        if not isinstance(owner, str):
            owner = owner[int(np.flatnonzero(bad & ~clip)[0])]
        raise InvalidDataError(f"{owner}: a contribution is outside the bounds the privacy guarantee relies on "
                               "(at step h: ||phi_V|| <= L_phi * (H - h - 1) / H and V in [0, H - h - 1] under "
                               "tight calibration, ||phi_V|| <= L_phi and V in [0, H] otherwise; ||phi|| <= 1, "
                               "r in [0, 1]); pass clip_inputs=True to project.")
    x_p, y_p, x_r, y_r = x_p.copy(), y_p.copy(), x_r.copy(), y_r.copy()
    xb = np.broadcast_to(x_bound, n_p.shape)[bad]
    x_p[bad] = x_p[bad] * np.minimum(1.0, xb / np.maximum(n_p[bad], 1e-300))[..., None]
    x_r[bad] = x_r[bad] * np.minimum(1.0, 1.0 / np.maximum(n_r[bad], 1e-300))[..., None]
    y_p[bad] = np.clip(y_p[bad], 0.0, np.broadcast_to(y_bound, y_p.shape)[bad])
    y_r[bad] = np.clip(y_r[bad], 0.0, 1.0)
    return x_p, y_p, x_r, y_r


class NonPrivate(Regularizer):
    """``Z = λI``, ``z = 0``: UCRL-VTR / OPPO. Constants ``λ_max = λ_min = λ``, ``ν = 0``."""

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

    def public_parameters(self) -> dict[str, Any]:
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

    def events(self) -> list[Any]:
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

    def public_parameters(self) -> dict[str, Any]:
        return {"name": self.name, **self.plan.public(), "upsilon_rule": self.upsilon,
                "shift_scale": self.shift_scale, "constants": self._constants.as_dict()}


class CentralTreePrivatizer(_NoisyPrivatizer):
    """JDP privatizer of Zhou (2022, Sec 6.1): 4H binary counters with the plan's node noise, shift
    ``2cΥ I`` per step. A plan without noise (infinite budget) gives exactly :class:`NonPrivate`
    ``(lam)`` (no noise, shift ``lam``)."""

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

    def events(self) -> list[Any]:
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


def _batched_privatizer(reg: Regularizer) -> CentralTreePrivatizer | LocalPrivatizer | None:
    """``reg`` when it is exactly a :class:`CentralTreePrivatizer`, :class:`LocalPrivatizer` or
    :class:`CentralFactorizationPrivatizer` (the privatizers whose noise :class:`BatchedStatistics`
    draws itself; not their subclasses), else None."""
    if type(reg) in (CentralTreePrivatizer, LocalPrivatizer, CentralFactorizationPrivatizer):
        return reg  # type: ignore[return-value]
    return None


class BatchedStatistics:
    """R started built-in regularizers advanced together: the speed path of the lockstep learners.

    ``update`` takes the R users' contributions (leading run axis) and returns the R runs' next
    statistics — exactly (bit for bit, tested) what each regularizer's own ``update`` would return.
    A run's four streams are packed along the last axis; one :class:`BinaryCounter` over
    ``(R, H, P)`` keeps the exact sums and the tree nodes (the same prefix and node arithmetic as
    the runs' own counters), and its node-noise callable hands out each tree run's node noise.
    That noise is drawn from the run's own noise source in blocks of rounds
    (:func:`~privrl.privacy.tree.gaussian_round_layout`: the same standard normals, in the same
    order, as the run's four counters drawing node by node through
    :class:`~privrl.privacy.tree.NodeNoise`). A BLT run (:class:`CentralFactorizationPrivatizer` with
    ``counter="blt"``) draws its ``z_t`` the same way and advances its noise recurrence
    (:func:`~privrl.privacy.factorization.blt_advance`) stacked with the other BLT runs; a local
    run's message noise is drawn the same way and added to its items; a non-private run gets none.
    The privacy semantics are unchanged: every draw is made once, as the run's own counters make it.
    Only seeded NumPy sources (:class:`~privrl.privacy.noise.NumpyNoise`) are batched; any other
    source (constant, scaled, secure) and the square-root counter take each regularizer's own ``update``.
    """

    #: rounds of standard normals pre-drawn per run and block
    block_rounds = 256
    #: the noisy runs' kinds (index into the kind array)
    _TREE, _BLT, _LOCAL = 0, 1, 2

    @staticmethod
    def supports(reg: Regularizer) -> bool:
        """True for a freshly started ``NonPrivate`` / ``LocalPrivatizer`` / ``CentralTreePrivatizer`` /
        BLT ``CentralFactorizationPrivatizer`` (exact types) whose noise comes from seeded NumPy through
        the plan's own draws."""
        counters = getattr(reg, "_counters", None)
        if counters is None or any(c.t for c in counters):
            return False
        if type(reg) is NonPrivate:
            return True
        noisy = _batched_privatizer(reg)
        if noisy is None:
            return False
        if not noisy.plan.is_private:
            return True
        source = noisy.releaser.noise
        if type(source) is not NumpyNoise:
            return False
        std = noisy.plan.std
        if type(reg) is CentralTreePrivatizer:
            return all(type(c.noise) is NodeNoise and c.noise.source is source
                       and np.array_equal(np.asarray(c.noise.sigma), std[j]) for j, c in enumerate(counters))
        if type(reg) is CentralFactorizationPrivatizer:
            return all(type(c) is BLTCounter and c.source is source and np.array_equal(np.asarray(c.sigma), std[j])
                       for j, c in enumerate(counters))
        return True

    @classmethod
    def _kind(cls, reg: Regularizer) -> int | None:
        """The noisy kind of a run (None: no noise)."""
        noisy = _batched_privatizer(reg)
        if noisy is None or not noisy.plan.is_private:
            return None
        if type(reg) is CentralTreePrivatizer:
            return cls._TREE
        return cls._BLT if type(reg) is CentralFactorizationPrivatizer else cls._LOCAL

    def __init__(self, regs: list[Regularizer]) -> None:
        r0 = regs[0]
        self.R, self.H, self.d1, self.d2 = len(regs), r0.horizon, r0.d1, r0.d2
        if any((g.horizon, g.d1, g.d2, g.n_episodes) != (self.H, self.d1, self.d2, r0.n_episodes) for g in regs):
            raise ValueError("BatchedStatistics needs regularizers started with the same sizes")
        d1, d2, H = self.d1, self.d2, self.H
        edges = np.cumsum([0, d1 * d1, d1, d2 * d2, d2])
        self._slices = [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
        self.P = int(edges[-1])
        self.regs = regs
        zero = np.zeros(H)
        self.shift_p = np.stack([getattr(g, "shift_p", np.full(H, getattr(g, "lam", 0.0))) for g in regs])
        self.shift_r = np.stack([getattr(g, "shift_r", np.full(H, getattr(g, "lam", 0.0))) for g in regs])
        self.floor_p = np.stack([getattr(g, "floor_p", zero) for g in regs])       # (R, H)
        self.floor_r = np.stack([getattr(g, "floor_r", zero) for g in regs])
        bounds = [g.bounds for g in regs]
        self.x_bound = np.stack([b[0] for b in bounds])
        self.y_bound = np.stack([b[1] for b in bounds])
        self.clip = np.array([g.clip_inputs for g in regs])
        self.owners = [type(g).__name__ for g in regs]
        shapes = [(H, d1, d1), (H, d1), (H, d2, d2), (H, d2)]
        # runs that draw noise: their round layout (standard normals -> the 4 streams' noise)
        noisy, kinds, scales, layouts = [], [], [], []
        self._sources: list[NoiseSource] = []   # the noisy runs' own noise sources
        for r, reg in enumerate(regs):
            kind, g = self._kind(reg), _batched_privatizer(reg)
            if kind is None or g is None:
                continue
            self._sources.append(g.releaser.noise)
            parts = [(sh, sym, g.plan.std[j]) for j, (sh, sym) in enumerate(zip(shapes, (True, False, True, False)))]
            m, scale, idx = gaussian_round_layout(parts)
            noisy.append(r)
            kinds.append(kind)
            scales.append((m, scale))
            layouts.append(idx)
        self._noisy = np.array(noisy, dtype=np.intp)
        self._kinds = np.array(kinds, dtype=np.intp)
        # rows (among all runs) and positions (among the noisy runs) of each kind
        self._at = [np.flatnonzero(self._kinds == k) for k in (self._TREE, self._BLT, self._LOCAL)]
        self._rows = [self._noisy[at] for at in self._at]
        if len(noisy):
            # runs with the same layout (which steps and streams draw) share one gather; every run
            # draws its own m standard normals per round
            self._m = np.array([m for m, _ in scales])
            width = int(self._m.max())
            self._scale = np.zeros((len(noisy), width + 1))
            self._index = np.empty((len(noisy), H * self.P), dtype=np.intp)
            starts = np.cumsum([0] + [int(np.prod(sh)) for sh in shapes])
            for i, ((m, scale), idx) in enumerate(zip(scales, layouts)):
                self._scale[i, :m] = scale[:m]
                idx = np.where(idx == m, width, idx)                    # the appended zero
                per = [idx[starts[j]:starts[j + 1]].reshape(H, -1) for j in range(4)]
                self._index[i] = np.concatenate(per, axis=1).ravel()    # the packed (H, P) layout
            self._same_layout = bool(np.all(self._index == self._index[0]))
        self.n_items = max(r0.n_episodes - 1, 0)
        tree_rows, blt_rows, local_rows = self._rows
        kind_of = np.full(self.R, -1, dtype=np.int64)
        kind_of[self._noisy] = self._kinds
        # the kernels' order: the runs grouped by kind (tree, BLT, local: the noisy runs), then the others
        self._order = np.concatenate([tree_rows, blt_rows, local_rows, np.flatnonzero(kind_of < 0)]).astype(np.int64)
        n_noisy = len(noisy)
        self._slot_at = np.searchsorted(self._noisy, self._order[:n_noisy])  # grouped position -> noisy index
        self._position = np.argsort(self._slot_at)                               # noisy index -> grouped position
        # BLT runs: their factorization per buffer (d, R_blt)
        if len(blt_rows):
            blts = [regs[r]._counters[0].blt for r in blt_rows]
            theta, omega = np.array([b.theta for b in blts]).T, np.array([b.omega for b in blts]).T
        else:
            theta = omega = np.zeros((0, 0))
        # the floor's shortcut threshold γ − floor of the noisy runs (floor 0, or no noise: never floored)
        # and a screen on the squared norms that never misses the exact test ‖N‖_F > γ − floor
        screens = []
        for shift, floor in ((self.shift_p, self.floor_p), (self.shift_r, self.floor_r)):
            threshold = np.where(floor > 0, shift - floor, np.inf)
            threshold[kind_of < 0] = np.inf
            screens.append(threshold * threshold * (1 - 1e-9))
        self._threshold_p, self._threshold_r = (
            [np.where(floor > 0, shift - floor, np.inf)[rows] for rows in self._rows]
            for shift, floor in ((self.shift_p, self.floor_p), (self.shift_r, self.floor_r)))
        self._screen_p, self._screen_r = ([x * x * (1 - 1e-9) for x in t]
                                          for t in (self._threshold_p, self._threshold_r))
        shift_p = np.zeros((self.R, H, d1 * d1))                          # shift_h·I, packed (zero off the diagonal)
        shift_p[..., ::d1 + 1] = self.shift_p[:, :, None]
        shift_r = np.zeros((self.R, H, d2 * d2))
        shift_r[..., ::d2 + 1] = self.shift_r[:, :, None]
        depth = self.n_items.bit_length() + 1
        order, slot_at = self._order, self._slot_at

        def run_last(x: np.ndarray) -> np.ndarray:
            """``x`` (runs first, in run order) with its run axis last, in the grouped order."""
            return np.ascontiguousarray(np.moveaxis(x[order], 0, -1))

        self.counters = kernels().Counters(
            ints=np.array([0, self.n_items, 0, 0, 0], dtype=np.int64),
            sizes=np.array([d1, d2, self.P, len(tree_rows), len(blt_rows), n_noisy], dtype=np.int64),
            order=order, exact=np.zeros((H, self.P, self.R)),
            z=np.zeros((n_noisy, 0, self._scale.shape[1] if n_noisy else 1)),
            scale=np.ascontiguousarray(self._scale[slot_at].T) if n_noisy else np.zeros((1, 0)),
            draw_at=(np.ascontiguousarray(self._index[slot_at].T) if n_noisy
                     else np.zeros((H * self.P, 0), dtype=np.int64)),
            levels=np.zeros(depth, dtype=np.int64), stack=np.zeros((depth, H, self.P, len(tree_rows))),
            theta=np.ascontiguousarray(theta), omega=np.ascontiguousarray(omega),
            blt_state=np.zeros((theta.shape[0], H, self.P, len(blt_rows))),
            blt_total=np.zeros((H, self.P, len(blt_rows))),
            local_total=np.zeros((H, self.P, len(local_rows))), shift_p=run_last(shift_p), shift_r=run_last(shift_r),
            screen_p=run_last(screens[0]), screen_r=run_last(screens[1]),
            x_bound=np.ascontiguousarray(self.x_bound, dtype=float),
            y_bound=np.ascontiguousarray(self.y_bound, dtype=float), runs=np.zeros((H, d1 + d2 + 2, self.R)),
            per_run=np.zeros((6, self.R)), pairs=_item_pairs(d1, d2))
        self.stats: Stats = (np.zeros((self.R, H, d1, d1)), np.zeros((self.R, H, d1)), np.zeros((self.R, H, d2, d2)),
                             np.zeros((self.R, H, d2)))
        kernels().release(self.counters, *self.stats)
        self.floor()

    # -- noise, drawn in blocks from each run's own source
    def refill(self) -> Any:
        """The next block of rounds of standard normals of every noisy run (its own source, in the
        order of its own counters' draws); returns the counters' new state."""
        c = self.counters
        n = max(1, min(self.n_items - int(c.ints[0]), self.block_rounds))
        # one contiguous block per run (the kernels' grouped order), reused once read; a run's
        # columns beyond its own draws are never read and stay zero
        z = c.z if c.z.shape[1] == n else np.zeros((len(self._noisy), n, self._scale.shape[1]))
        for j, source in enumerate(self._sources):
            z[self._position[j], :, :self._m[j]] = source.gaussian((n, int(self._m[j])), 1.0)
        c.ints[3], c.ints[4] = 0, n
        self.counters = c._replace(z=z)
        return self.counters

    # -- stream
    def update(self, x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> Stats:
        """Insert the R users' contributions (``(R, H, ·)``) and return the R runs' next statistics
        (arrays reused by the next update)."""
        x_p, y_p, x_r, y_r = check_contributions(x_p, y_p, x_r, y_r, x_bound=self.x_bound, y_bound=self.y_bound,
                                                 clip=self.clip, owner=self.owners)
        c = self.counters
        if len(self._noisy) and c.ints[0] < self.n_items and c.ints[3] == c.ints[4]:
            c = self.refill()
        kernels().insert(c, *(np.ascontiguousarray(x, dtype=float) for x in (x_p, y_p, x_r, y_r)), *self.stats)
        self.floor()
        return self.stats

    def statistics(self) -> Stats:
        """The R runs' current ``(Λ_p, u_p, Λ_r, u_r)``, PD floor included (as each run's own)."""
        return self.stats

    def floor(self) -> None:
        """The PD floor where it applies, decided as each run's own statistics decide it: the
        shortcut on the run's own noise total (tree nodes, BLT or local messages), else the
        eigenvalues (:func:`_floor_eigenvalues`)."""
        c = self.counters
        Lp, _, Lr, _ = self.stats
        tree_rows, blt_rows, local_rows = self._rows
        sp, sr = self._slices[0], self._slices[2]
        totals = []
        if len(tree_rows):
            depth = int(c.ints[2])
            totals.append((self._TREE, tree_rows, c.stack[depth - 1] if depth else np.zeros_like(c.stack[0])))
        if len(blt_rows):
            totals.append((self._BLT, blt_rows, c.blt_total))
        if len(local_rows):
            totals.append((self._LOCAL, local_rows, c.local_total))
        for kind, rows, total in totals:
            noise = np.ascontiguousarray(np.moveaxis(total, -1, 0))         # (R_kind, H, P), as the runs' own
            sq = noise * noise
            for Lam, sl, floor, threshold, screen in ((Lp, sp, self.floor_p, self._threshold_p, self._screen_p),
                                                      (Lr, sr, self.floor_r, self._threshold_r, self._screen_r)):
                norm2 = sq[..., sl].sum(-1)
                if not (norm2 > screen[kind]).any():                     # below every γ − floor: no floor
                    continue
                big = (np.sqrt(norm2) > threshold[kind]).any(-1)
                for r in rows[big]:
                    Lam[r] = _floor_eigenvalues(Lam[r], floor[r])


def kernels() -> Any:
    """The compiled kernels (:mod:`privrl.linear_mixture._kernels`), imported on first use: numba
    loads when a linear-mixture fit runs, never at ``import privrl``."""
    from privrl.linear_mixture import _kernels

    return _kernels


def empty_counters(horizon: int) -> Any:
    """Counters of no run (the kernels' argument when the statistics are the regularizers' own)."""
    z, i = np.zeros, np.int64
    return kernels().Counters(
        ints=np.zeros(5, dtype=i), sizes=np.zeros(6, dtype=i), order=z(0, dtype=i), exact=z((horizon, 0, 0)),
        z=z((0, 0, 1)), scale=z((1, 0)), draw_at=z((0, 0), dtype=i), levels=z(1, dtype=i),
        stack=z((1, horizon, 0, 0)), theta=z((0, 0)), omega=z((0, 0)), blt_state=z((0, horizon, 0, 0)),
        blt_total=z((horizon, 0, 0)), local_total=z((horizon, 0, 0)), shift_p=z((horizon, 0, 0)),
        shift_r=z((horizon, 0, 0)), screen_p=z((horizon, 0)), screen_r=z((horizon, 0)), x_bound=z((0, horizon)),
        y_bound=z((0, horizon)), runs=z((horizon, 0, 0)), per_run=z((6, 0)), pairs=z((2, 0), dtype=i))


def _item_pairs(d1: int, d2: int) -> np.ndarray:
    """The packed items' factors among a step's contributions ``(x_p, y_p, x_r, y_r)`` (as one row
    of ``d1 + d2 + 2``): ``x_p x_pᵀ`` (row-major), ``x_p y_p``, ``x_r x_rᵀ``, ``x_r y_r``."""
    xp, yp, xr, yr = np.arange(d1), d1, d1 + 1 + np.arange(d2), d1 + d2 + 1
    first = [np.repeat(xp, d1), xp, np.repeat(xr, d2), xr]
    second = [np.tile(xp, d1), np.full(d1, yp), np.tile(xr, d2), np.full(d2, yr)]
    return np.array([np.concatenate(first), np.concatenate(second)], dtype=np.int64)
