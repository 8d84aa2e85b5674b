"""Regularizers / privatizers of Zhou (2022): the source of ``(Λ, u)`` for the ridge estimators (Eqs 1–2).

Interface (spec §2.1). ``start(...)`` returns the statistics for episode 1 (``Λ = Z¹``, ``u = z¹``);
``update(x_p, y_p, x_r, y_r)`` takes episode k's per-step contributions

* ``x_p[h] = ϕ_h^k(s_h^k, a_h^k)`` (computed in episode k with ``V_{h+1}^k`` and frozen, spec A1),
* ``y_p[h] = V_{h+1}^k(s_{h+1}^k) ∈ [0, H]``, ``x_r[h] = φ(s_h^k, a_h^k)``, ``y_r[h] = r_h^k ∈ [0, 1]``,

and returns the statistics for episode k+1: ``Λ_p (H,d1,d1)``, ``u_p (H,d1)``, ``Λ_r (H,d2,d2)``,
``u_r (H,d2)``. ``constants(alpha)`` gives the data-independent Assumption 2 constants.

* :class:`NonPrivate` — ``Λ = λI + G``, ``u = g`` (UCRL-VTR / OPPO).
* :class:`CentralTreePrivatizer` — JDP (Sec 6.1, Def 6.2/6.3): a *trusted* curator runs 4H binary
  counters (:class:`privrl.privacy.tree.BinaryCounter`, batched over h) and releases
  ``Λ = Ĝ + 2Υ I``, ``u = ĝ``; eigenvalues are floored at ``λ_min`` (post-processing, a no-op on
  the good event ``‖N‖ ≤ Υ``).
* :class:`LocalPrivatizer` — LDP, **derived** (spec §3.4; the paper only sketches it in Sec 1.1
  and Remark 6.9): each user adds her own Gaussian noise (σ of Thm 6.4 with ``m = 1``) to her 4H
  messages before sending; the agent sums messages and adds ``2Ῡ I`` with ``Ῡ`` using ``M = K``.

Privacy accounting (``events()``): the privacy loss of **one user**. Users' data are disjoint, so the
guarantee for every user is that of one user (parallel composition). Central: each user's item
enters at most ``m = ⌈log2 K⌉`` nodes of each of the 4H counters (Lemma 6.1(i); ``K − 1`` items are
inserted), each node a Gaussian release with multiplier ``σ_x/Δ_x``. Local: each user sends 4H
Gaussian messages once. The ledger always uses the **replacement** sensitivities (sound), also in
``calibration="paper"`` mode, where σ was computed from the printed (smaller) ones.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_option, check_scalar
from privrl.algorithms.linear_mixture import calibration as cal
from privrl.errors import InvalidDataError
from privrl.privacy.tree import (
    BinaryCounter,
    GaussianNodeNoise,
    gaussian_round_layout,
    max_membership,
    symmetric_gaussian,
    tree_depth,
)

__all__ = ["Regularizer", "NonPrivate", "CentralTreePrivatizer", "LocalPrivatizer", "make_regularizer",
           "BatchedStatistics", "check_contributions"]

Stats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class _RunningSum:
    """Exact running sum with an optional ``shift·I`` on release (the non-private "counter")."""

    def __init__(self, shape: tuple[int, ...], shift: float = 0.0) -> None:
        self.shape, self.shift, self.t = shape, shift, 0
        self._exact = np.zeros(shape)

    def insert(self, item: np.ndarray) -> None:
        self._exact = self._exact + item
        self.t += 1

    def release(self) -> np.ndarray:
        if self.shift:
            return self._exact + self.shift * np.eye(self.shape[-1])
        return self._exact


class Regularizer:
    """Base class. Subclasses set ``guarantee`` and build ``self._counters`` in :meth:`start`."""

    guarantee: str | None = None
    name = "regularizer"
    _counters: list[Any]

    def __init__(self, *, clip_inputs: bool = False, value_feature_bound: float | None = None) -> None:
        self.clip_inputs = bool(clip_inputs)
        self.value_feature_bound = value_feature_bound

    # -- life cycle
    def start(self, *, n_episodes: int, horizon: int, d1: int, d2: int, rng: RngLike = None) -> Stats:
        self.n_episodes, self.horizon, self.d1, self.d2 = n_episodes, horizon, d1, d2
        self.L_phi = math.sqrt(d1) * horizon if self.value_feature_bound is None else float(self.value_feature_bound)
        self.rng = as_generator(rng)
        self._setup()
        return self.statistics()

    def _setup(self) -> None:
        raise NotImplementedError

    def statistics(self) -> Stats:
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        floor_p, floor_r = self._floors()
        return _floor_eigenvalues(Lp, floor_p), up, _floor_eigenvalues(Lr, floor_r), ur

    def _floors(self) -> tuple[float, float]:
        return 0.0, 0.0

    def update(self, x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> Stats:
        """Insert one user's contributions (all h at once) and return the next statistics."""
        items = self._items(*self._check(x_p, y_p, x_r, y_r))
        for counter, item in zip(self._counters, self._privatize(items)):
            counter.insert(item)
        return self.statistics()

    # -- inputs
    def _check(self, x_p, y_p, x_r, y_r):
        """Enforce the bounds privacy relies on (see :func:`check_contributions`)."""
        out = check_contributions(x_p[None], y_p[None], x_r[None], y_r[None], L_phi=np.array([self.L_phi]),
                                  horizon=self.horizon, clip=np.array([self.clip_inputs]), owner=type(self).__name__)
        return tuple(x[0] for x in out)

    @staticmethod
    def _items(x_p, y_p, x_r, y_r) -> list[np.ndarray]:
        return [x_p[:, :, None] * x_p[:, None, :], x_p * y_p[:, None], x_r[:, :, None] * x_r[:, None, :],
                x_r * y_r[:, None]]

    def _privatize(self, items: list[np.ndarray]) -> list[np.ndarray]:
        return items

    # -- theory
    def constants(self, alpha: float) -> cal.RegularityConstants:
        raise NotImplementedError

    def events(self) -> list[dp_accounting.DpEvent]:
        """The privacy loss of one user (empty for non-private regularizers)."""
        return []

    def public_parameters(self) -> dict[str, Any]:
        """Data-independent parameters for certificates and manifests."""
        return {"name": self.name}


def _floor_eigenvalues(Lam: np.ndarray, floor: float) -> np.ndarray:
    """PD safeguard (spec §3.1): add ``(floor − λ_min)_+ I``; bit-identical when ``λ_min ≥ floor``."""
    if floor <= 0:
        return Lam
    lam_min = np.linalg.eigvalsh(Lam)[..., 0]
    if np.all(lam_min >= floor):
        return Lam
    add = np.maximum(floor - lam_min, 0.0)
    return Lam + add[:, None, None] * np.eye(Lam.shape[-1])


def _floor_if_needed(Lam: np.ndarray, noise: np.ndarray, shift: float, floor: float) -> np.ndarray:
    """The PD safeguard with a shortcut: ``Λ = G + N + γI`` with ``G ⪰ 0``, so ``‖N‖_F ≤ γ − floor``
    (checked on the noise, which is data-independent) implies ``λ_min(Λ) ≥ floor``: the floor would
    be a no-op and the eigen-decomposition is skipped."""
    if floor > 0 and np.sqrt((noise * noise).sum(axis=(-2, -1))).max() > shift - floor:
        return _floor_eigenvalues(Lam, floor)
    return Lam


def check_contributions(x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray, *, L_phi: np.ndarray,
                        horizon: float, clip: np.ndarray, owner: str | list[str]) -> tuple[np.ndarray, ...]:
    """The bounds privacy relies on, for R users at once (leading axis R; ``L_phi``, ``clip`` ``(R,)``):
    ``‖x_p‖ ≤ L_ϕ``, ``y_p ∈ [0,H]``, ``‖x_r‖ ≤ 1``, ``y_r ∈ [0,1]`` (tolerance 1e-9). A user out of
    bounds raises unless her ``clip`` is set; then her contributions are projected (spec §3.1) and
    the others are returned untouched."""
    H, tol = float(horizon), 1e-9
    np_ = np.sqrt(np.einsum("...d,...d->...", x_p, x_p))
    nr_ = np.sqrt(np.einsum("...d,...d->...", x_r, x_r))
    within = ((np_ <= (L_phi * (1 + tol))[:, None]) & (nr_ <= 1 + tol) & (y_p >= -tol) & (y_p <= H * (1 + tol))
              & (y_r >= -tol) & (y_r <= 1 + tol))
    if within.all():
        return x_p, y_p, x_r, y_r
    ok = within.all(-1)
    bad = ~ok
    if not np.all(clip[bad]):
        if not isinstance(owner, str):
            owner = owner[int(np.flatnonzero(bad & ~clip)[0])]
        raise InvalidDataError(f"{owner}: a contribution is outside the bounds the privacy guarantee relies on "
                               f"(||phi_V|| <= {float(np.min(L_phi[bad])):g}, V in [0, {H:g}], ||phi|| <= 1, "
                               "r in [0, 1]); pass clip_inputs=True to project.")
    x_p, y_p, x_r, y_r = x_p.copy(), y_p.copy(), x_r.copy(), y_r.copy()
    x_p[bad] = x_p[bad] * np.minimum(1.0, L_phi[bad, None] / np.maximum(np_[bad], 1e-300))[..., None]
    x_r[bad] = x_r[bad] * np.minimum(1.0, 1.0 / np.maximum(nr_[bad], 1e-300))[..., None]
    y_p[bad] = np.clip(y_p[bad], 0.0, H)
    y_r[bad] = np.clip(y_r[bad], 0.0, 1.0)
    return x_p, y_p, x_r, y_r


class NonPrivate(Regularizer):
    """``Z = λI``, ``z = 0``: UCRL-VTR / OPPO. Constants ``λ_max = λ_min = λ``, ``ν = 0``."""

    name = "none"

    def __init__(self, lam: float = 1.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.lam = check_scalar(lam, "lam", owner="NonPrivate", low=0.0, closed="neither")

    def _setup(self) -> None:
        H, d1, d2 = self.horizon, self.d1, self.d2
        self._counters = [_RunningSum((H, d1, d1), self.lam), _RunningSum((H, d1)),
                          _RunningSum((H, d2, d2), self.lam), _RunningSum((H, d2))]

    def constants(self, alpha: float) -> cal.RegularityConstants:
        lam = self.lam
        return cal.RegularityConstants(lam, lam, 0.0, lam, lam, 0.0, lam, lam)

    def public_parameters(self) -> dict[str, Any]:
        return {"name": self.name, "lam": self.lam}


class _NoisyPrivatizer(Regularizer):
    """Shared calibration of the central and local privatizers."""

    depth_is_tree = True

    def __init__(self, *, epsilon: float, delta: float, calibration: str = "sound", sigma_rule: str = "paper",
                 upsilon: str = "theory", shift_scale: float = 1.0, alpha: float = 0.05, lam: float = 1.0,
                 **kw: Any) -> None:
        super().__init__(**kw)
        owner = type(self).__name__
        self.epsilon = check_scalar(epsilon, "epsilon", owner=owner, low=0.0, closed="right", allow_inf=True)
        self.delta = check_scalar(delta, "delta", owner=owner, low=0.0, high=1.0, closed="neither") \
            if not math.isinf(self.epsilon) else delta
        self.calibration = check_option(calibration, "calibration", ("sound", "paper"), owner=owner)
        self.sigma_rule = check_option(sigma_rule, "sigma_rule", ("paper", "zcdp"), owner=owner)
        self.upsilon = check_option(upsilon, "upsilon", ("theory", "monte_carlo"), owner=owner)
        self.shift_scale = check_scalar(shift_scale, "shift_scale", owner=owner, low=0.5, closed="neither")
        self.alpha = check_scalar(alpha, "alpha", owner=owner, low=0.0, high=1.0, closed="right")
        self.lam = check_scalar(lam, "lam", owner=owner, low=0.0, closed="neither")

    @property
    def is_private(self) -> bool:
        return not math.isinf(self.epsilon)

    def _calibrate(self) -> None:
        H, K = self.horizon, self.n_episodes
        self.depth = tree_depth(K) if self.depth_is_tree else 1
        self.n_noise_terms = tree_depth(K) if self.depth_is_tree else K
        self.sensitivity = cal.sensitivities(self.d1, H, value_feature_bound=self.L_phi, calibration=self.calibration)
        self.sound_sensitivity = cal.sensitivities(self.d1, H, value_feature_bound=self.L_phi, calibration="sound")
        self.sigma = cal.noise_stds(self.sensitivity, horizon=H, epsilon=self.epsilon,
                                    delta=self.delta if self.is_private else 1.0, depth=self.depth,
                                    sigma_rule=self.sigma_rule)
        self._constants = cal.regularity_constants(
            self.sigma, d1=self.d1, d2=self.d2, n_episodes=K, horizon=H, alpha=self.alpha,
            n_noise_terms=self.n_noise_terms, upsilon=self.upsilon, shift_scale=self.shift_scale, lam=self.lam)

    def _floors(self) -> tuple[float, float]:
        if not self.is_private:
            return 0.0, 0.0
        return self._constants.lambda_min_p, self._constants.lambda_min_r

    def constants(self, alpha: float) -> cal.RegularityConstants:
        """Assumption 2 constants. ``alpha`` must equal the one used for the shift (the shift depends on it)."""
        if not math.isclose(alpha, self.alpha):
            c = cal.regularity_constants(self.sigma, d1=self.d1, d2=self.d2, n_episodes=self.n_episodes,
                                         horizon=self.horizon, alpha=alpha, n_noise_terms=self.n_noise_terms,
                                         upsilon=self.upsilon, shift_scale=self.shift_scale, lam=self.lam)
            return c
        return self._constants

    def _node_count(self) -> int:
        return 1

    def events(self) -> list[dp_accounting.DpEvent]:
        if not self.is_private:
            return [dp_accounting.NonPrivateDpEvent()]
        count = self.horizon * self._node_count()
        out = []
        for stream in cal.STREAMS:
            nm = getattr(self.sigma, stream) / getattr(self.sound_sensitivity, stream)
            base = dp_accounting.GaussianDpEvent(nm)
            out.append(base if count == 1 else dp_accounting.SelfComposedDpEvent(base, count))
        return out

    def public_parameters(self) -> dict[str, Any]:
        return {"name": self.name, "epsilon": self.epsilon, "delta": self.delta, "calibration": self.calibration,
                "sigma_rule": self.sigma_rule, "upsilon_rule": self.upsilon, "shift_scale": self.shift_scale,
                "depth_m": self.depth, "sigma": self.sigma.as_dict(), "sensitivity": self.sensitivity.as_dict(),
                "constants": self._constants.as_dict()}


class CentralTreePrivatizer(_NoisyPrivatizer):
    """JDP privatizer of Zhou (2022, Sec 6.1): 4H binary counters, ``σ_x`` of Thm 6.4, shift ``2Υ I``.

    ``epsilon = inf`` gives exactly :class:`NonPrivate` ``(lam)`` (no noise, shift ``lam``).
    """

    guarantee = "JDP"
    name = "central"

    def _setup(self) -> None:
        self._calibrate()
        H, d1, d2, K = self.horizon, self.d1, self.d2, self.n_episodes
        c = self._constants
        n_items = max(K - 1, 0)                         # episode K's data is never used (spec A9)
        spec = [((H, d1, d1), self.sigma.p1, True, c.shift_p, self.sensitivity.p1),
                ((H, d1), self.sigma.p2, False, 0.0, self.sensitivity.p2),
                ((H, d2, d2), self.sigma.r1, True, c.shift_r, self.sensitivity.r1),
                ((H, d2), self.sigma.r2, False, 0.0, self.sensitivity.r2)]
        self._counters = [BinaryCounter(shape, n_items=n_items, sigma=sigma, symmetric=sym, shift=shift,
                                        rng=self.rng, sensitivity=sens)
                          for shape, sigma, sym, shift, sens in spec]

    def _node_count(self) -> int:
        return max(1, max_membership(max(self.n_episodes - 1, 0)))

    def statistics(self) -> Stats:
        """As the base class, with a shortcut for the PD safeguard (:func:`_floor_if_needed`): the
        curator knows the noise ``N`` (data-independent)."""
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        fp, fr = self._floors()
        return (_floor_if_needed(Lp, self._counters[0].noise_sum(), self._counters[0].shift, fp), up,
                _floor_if_needed(Lr, self._counters[2].noise_sum(), self._counters[2].shift, fr), ur)


class LocalPrivatizer(_NoisyPrivatizer):
    """LDP privatizer, **derived** (spec §3.4; not specified in the paper).

    The user-side randomiser :meth:`local_randomizer` adds ``SymGauss(σ̃_1)`` to her Gram items and
    ``N(0, σ̃_2² I)`` to her moment items, ``σ̃_x = (HΔ_x/ε)√(32 ln(4H/δ))`` (Thm 6.4's σ with
    ``m = 1``); the agent only sums messages: ``Λ = Σ_j W_j + 2Ῡ I`` with ``Ῡ`` of ``M = K`` noise terms.
    """

    guarantee = "LDP"
    name = "local"
    depth_is_tree = False

    def _setup(self) -> None:
        self._calibrate()
        H, d1, d2 = self.horizon, self.d1, self.d2
        c = self._constants
        self._counters = [_RunningSum((H, d1, d1), c.shift_p), _RunningSum((H, d1)),
                          _RunningSum((H, d2, d2), c.shift_r), _RunningSum((H, d2))]
        # the agent never sees these sums; they only decide whether the PD floor can be skipped
        self._noise_p, self._noise_r = np.zeros((H, d1, d1)), np.zeros((H, d2, d2))

    def message_noise(self, shapes: list[tuple], rng: np.random.Generator) -> list[np.ndarray]:
        """The noise one user adds to her 4 items (in this order): ``SymGauss(σ̃_p1)``, ``N(0, σ̃_p2²)``,
        ``SymGauss(σ̃_r1)``, ``N(0, σ̃_r2²)``."""
        sig = self.sigma
        return [symmetric_gaussian(rng, shapes[0], sig.p1), rng.normal(0.0, sig.p2, size=shapes[1]),
                symmetric_gaussian(rng, shapes[2], sig.r1), rng.normal(0.0, sig.r2, size=shapes[3])]

    def local_randomizer(self, items: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
        """What one user sends: her 4 (batched over h) items plus fresh Gaussian noise."""
        if not self.is_private:
            return [np.asarray(x, dtype=float) + 0.0 for x in items]
        noise = self.message_noise([np.shape(x) for x in items], rng)
        return [x + n for x, n in zip(items, noise)]

    def _privatize(self, items: list[np.ndarray]) -> list[np.ndarray]:
        if not self.is_private:
            return self.local_randomizer(items, self.rng)
        noise = self.message_noise([x.shape for x in items], self.rng)
        self._noise_p = self._noise_p + noise[0]
        self._noise_r = self._noise_r + noise[2]
        return [x + n for x, n in zip(items, noise)]

    def statistics(self) -> Stats:
        """``Λ = Σ_j W_j + 2Ῡ I`` with the PD floor skipped when the summed noise is small
        (:func:`_floor_if_needed`)."""
        Lp, up, Lr, ur = (c.release() for c in self._counters)
        fp, fr = self._floors()
        return (_floor_if_needed(Lp, self._noise_p, self._counters[0].shift, fp), up,
                _floor_if_needed(Lr, self._noise_r, self._counters[2].shift, fr), ur)


class BatchedStatistics:
    """R started built-in regularizers advanced together: the speed path of the lockstep learners.

    ``update`` takes the R users' contributions (leading run axis) and returns the R runs' next
    statistics — exactly (bit for bit, tested) what each regularizer's own ``update`` would return.
    A run's four streams are packed along the last axis; one :class:`BinaryCounter` over
    ``(R, H, P)`` keeps the exact sums and the tree nodes (the same prefix and node arithmetic as
    the runs' own counters), and its node-noise source hands out each central run's node noise.
    That noise is drawn from the run's own privacy generator in blocks of rounds
    (:func:`~privrl.privacy.tree.gaussian_round_layout`: the same draws, in the same order, as the
    run's four counters drawing node by node). A local run's message noise is drawn the same way
    and added to its items; a non-private run gets none. The privacy semantics are unchanged: every
    node's noise is drawn once and reused by every later release.
    """

    #: rounds of standard normals pre-drawn per run and block
    block_rounds = 256

    @staticmethod
    def supports(reg: Regularizer) -> bool:
        """True for a freshly started ``NonPrivate`` / ``LocalPrivatizer`` / ``CentralTreePrivatizer``
        (exact types) whose counters draw the default Gaussian node noise from its own generator."""
        counters = getattr(reg, "_counters", None)
        if counters is None or any(c.t for c in counters):
            return False
        if type(reg) is NonPrivate:
            return True
        if type(reg) is LocalPrivatizer:
            return not reg.is_private or min(reg.sigma.as_dict().values()) > 0
        if type(reg) is CentralTreePrivatizer:
            return all(type(c.noise) is GaussianNodeNoise and c.noise.rng is reg.rng and c.noise.sigma == c.sigma
                       for c in counters)
        return False

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
        self.shift_p = np.array([g._counters[0].shift for g in regs])
        self.shift_r = np.array([g._counters[2].shift for g in regs])
        floors = np.array([g._floors() for g in regs], dtype=float).reshape(self.R, 2)
        self.floor_p, self.floor_r = floors[:, 0], floors[:, 1]
        self.L_phi = np.array([g.L_phi for g in regs])
        self.clip = np.array([g.clip_inputs for g in regs])
        self.owners = [type(g).__name__ for g in regs]
        shapes = [(H, d1, d1), (H, d1), (H, d2, d2), (H, d2)]
        # runs that draw noise: their round layout (standard normals -> the 4 streams' noise)
        noisy, central, scales = [], [], []
        index = None
        for r, g in enumerate(regs):
            if type(g) is CentralTreePrivatizer and any(c.noise.sigma > 0 for c in g._counters):
                parts = [(sh, c.symmetric, c.noise.sigma) for sh, c in zip(shapes, g._counters)]
            elif type(g) is LocalPrivatizer and g.is_private:
                sig = g.sigma
                parts = [(shapes[0], True, sig.p1), (shapes[1], False, sig.p2), (shapes[2], True, sig.r1),
                         (shapes[3], False, sig.r2)]
            else:
                continue
            m, scale, idx = gaussian_round_layout(parts)
            index = idx
            noisy.append(r)
            central.append(type(g) is CentralTreePrivatizer)
            scales.append(scale)
        self._noisy = np.array(noisy, dtype=np.intp)
        self._central = np.array(central, dtype=bool)
        self._c_rows, self._l_rows = self._noisy[self._central], self._noisy[~self._central]
        if len(noisy):
            # the packed (H, P) layout of one round, as positions in the round's (H, ·) stream parts
            self._m = len(scales[0]) - 1
            self._scale = np.stack(scales)                               # (R_noisy, m + 1)
            starts = np.cumsum([0] + [int(np.prod(sh)) for sh in shapes])
            per = [index[starts[j]:starts[j + 1]].reshape(H, -1) for j in range(4)]
            self._index = np.concatenate(per, axis=1).ravel()            # (H·P,)
        self.n_items = max(r0.n_episodes - 1, 0)
        self.counter = BinaryCounter((self.R, H, self.P), n_items=self.n_items, noise=self._node_noise)
        self._local_total = np.zeros((len(self._l_rows), H, self.P))     # local runs' summed messages
        # the floor's shortcut threshold γ − floor of the central / local runs (floor 0: never floored)
        self._threshold_p, self._threshold_r = (
            [np.where(floor > 0, shift - floor, np.inf)[rows] for rows in (self._c_rows, self._l_rows)]
            for shift, floor in ((self.shift_p, self.floor_p), (self.shift_r, self.floor_r)))
        self._z: np.ndarray | None = None
        self._pos = self._filled = 0
        self._round_noise: np.ndarray | None = None

    # -- noise, drawn in blocks from each run's own generator
    def _next_round(self) -> np.ndarray:
        """This insert's noise of every noisy run, ``(R_noisy, H, P)``."""
        if self._pos == self._filled:
            n = max(1, min(self.n_items - self.counter.t, self.block_rounds))
            z = np.zeros((n, len(self._noisy), self._m + 1))
            for j, r in enumerate(self._noisy):
                z[:, j, :self._m] = self.regs[r].rng.standard_normal((n, self._m))
            self._z, self._pos, self._filled = z, 0, n
        vals = (self._scale * self._z[self._pos])[:, self._index]
        self._pos += 1
        return vals.reshape(len(self._noisy), self.H, self.P)

    def _node_noise(self, shape: tuple, symmetric: bool) -> np.ndarray:
        out = np.zeros(shape)
        if self._round_noise is not None and len(self._c_rows):
            out[self._c_rows] = self._round_noise[self._central]
        return out

    # -- stream
    def update(self, x_p: np.ndarray, y_p: np.ndarray, x_r: np.ndarray, y_r: np.ndarray) -> Stats:
        """Insert the R users' contributions (``(R, H, ·)``) and return the R runs' next statistics."""
        x_p, y_p, x_r, y_r = check_contributions(x_p, y_p, x_r, y_r, L_phi=self.L_phi, horizon=self.H,
                                                 clip=self.clip, owner=self.owners)
        R, H = self.R, self.H
        items = np.concatenate([(x_p[..., :, None] * x_p[..., None, :]).reshape(R, H, -1), x_p * y_p[..., None],
                                (x_r[..., :, None] * x_r[..., None, :]).reshape(R, H, -1), x_r * y_r[..., None]],
                               axis=-1)
        self._round_noise = self._next_round() if len(self._noisy) and self.counter.t < self.n_items else None
        if len(self._l_rows) and self._round_noise is not None:
            noise = self._round_noise[~self._central]
            items[self._l_rows] = items[self._l_rows] + noise             # the local users' messages
            self._local_total = self._local_total + noise
        self.counter.insert(items)
        return self.statistics()

    def statistics(self) -> Stats:
        """The R runs' current ``(Λ_p, u_p, Λ_r, u_r)``, PD floor included (as each run's own)."""
        rel = self.counter.release()
        R, H, (d1, d2) = self.R, self.H, (self.d1, self.d2)
        sp, sgp, sr, sgr = self._slices
        Lp, Lr = rel[..., sp].copy(), rel[..., sr].copy()                # (the release itself stays as is)
        Lp[..., ::d1 + 1] += self.shift_p[:, None, None]                 # + shift·I
        Lr[..., ::d2 + 1] += self.shift_r[:, None, None]
        Lp, Lr = Lp.reshape(R, H, d1, d1), Lr.reshape(R, H, d2, d2)
        # the PD floor's shortcut on each noisy run's own noise total (tree nodes or local messages)
        totals = []
        if len(self._c_rows):
            totals.append((0, self._c_rows, self.counter.noise_sum()[self._c_rows]))
        if len(self._l_rows):
            totals.append((1, self._l_rows, self._local_total))
        for kind, rows, noise in totals:
            for Lam, sl, floor, threshold in ((Lp, sp, self.floor_p, self._threshold_p),
                                              (Lr, sr, self.floor_r, self._threshold_r)):
                N = noise[..., sl]
                big = np.sqrt((N * N).sum(-1)).max(-1) > threshold[kind]
                for r in rows[big]:
                    Lam[r] = _floor_eigenvalues(Lam[r], float(floor[r]))
        return Lp, rel[..., sgp], Lr, rel[..., sgr]


def make_regularizer(kind: str, *, budget: Any, lam: float, **kw: Any) -> Regularizer:
    """``"none"`` | ``"central"`` | ``"local"`` from a :class:`~privrl.PrivacyBudget` (ε, δ)."""
    if kind == "none":
        return NonPrivate(lam, clip_inputs=kw.get("clip_inputs", False),
                          value_feature_bound=kw.get("value_feature_bound"))
    cls = CentralTreePrivatizer if kind == "central" else LocalPrivatizer
    return cls(epsilon=budget.epsilon, delta=budget.delta, lam=lam, **kw)
