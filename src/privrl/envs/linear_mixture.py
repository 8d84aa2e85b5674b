"""Finite linear mixture MDPs (Zhou 2022, Assumption 1) and the evaluation environments of the regret experiment.

A :class:`LinearMixtureMDP` is episodic and time-inhomogeneous:

* ``P_h(s'|s,a) = ⟨ψ(s'|s,a), θ_{h,p}⟩`` with a known transition feature ``ψ`` (``(S, A, S, d1)``);
* ``r_h(s,a) = ⟨φ(s,a), θ_{h,r}⟩ ∈ [0,1]`` with a known reward feature ``φ`` (``(S, A, d2)``);
* observed rewards are either the mean (``reward_noise="none"``) or ``Bernoulli(r_h(s,a))``.

Environments (spec §5.2):

* **E1** :func:`hard_instance` — the lower-bound instance of Zhou, Gu & Szepesvári (2021), as
  reconstructed in the spec (see ``docs/linear_mixture.md`` for what could and could not be
  verified); gym id ``privrl/LinearMixtureHard-v0`` (:func:`make_hard_env`).
* **E2** :func:`random_mixture` — a seeded random mixture of ``d1`` known MDPs; gym id
  ``privrl/RandomLinearMixture-v0`` (:func:`make_random_env`).
* **E3** :func:`tabular_as_mixture` — any tabular MDP written as a linear mixture
  (``d1 = S²A``, ``d2 = SA``), for cross-checks on tiny MDPs.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_option, check_scalar
from privrl.envs.gym import TabularEnv
from privrl.envs.tabular import TabularMDP
from privrl.errors import InvalidDataError

__all__ = ["LinearMixtureMDP", "hard_instance", "random_mixture", "tabular_as_mixture",
           "make_hard_env", "make_random_env", "hard_instance_constants"]

_TOL = 1e-9


class LinearMixtureMDP:
    """A finite, episodic linear mixture MDP (Zhou 2022, Assumption 1).

    Parameters
    ----------
    psi
        ``(S, A, S, d1)`` transition feature ``ψ(s'|s,a)`` (indexed ``psi[s, a, s']``).
    theta_p
        ``(H, d1)`` transition parameters ``θ_{h,p}``.
    phi
        ``(S, A, d2)`` reward feature with ``‖φ(s,a)‖ ≤ 1``.
    theta_r
        ``(H, d2)`` reward parameters ``θ_{h,r}``.
    initial
        ``(S,)`` initial-state distribution (default: uniform). Zhou (2022) assumes the
        initial state is chosen obliviously; the learners sample it from this distribution.
    reward_noise
        ``"none"`` (observed reward = mean) or ``"bernoulli"``.
    check_norms
        enforce ``‖θ_{h,p}‖ ≤ √d1`` and ``‖θ_{h,r}‖ ≤ √d2`` (Assumption 1; used by the
        confidence radii, not by privacy).

    Raises
    ------
    ~privrl.errors.InvalidDataError
        unless every ``P_h(·|s,a)`` is a probability vector and every mean reward lies in
        ``[0, 1]`` (tolerance 1e-9).
    """

    def __init__(self, psi: Any, theta_p: Any, phi: Any, theta_r: Any, *, initial: Any = None,
                 reward_noise: str = "none", check_norms: bool = True, name: str | None = None) -> None:
        owner = "LinearMixtureMDP"
        self.psi = check_array(psi, "psi", owner=owner, ndim=4)
        S, A, S2, d1 = self.psi.shape
        if S2 != S:
            raise InvalidDataError(f"The 'psi' parameter of {owner} must have shape (S, A, S, d1). "
                                   f"Got shape {self.psi.shape} instead.")
        self.theta_p = check_array(theta_p, "theta_p", owner=owner, ndim=2, shape=(None, d1))
        H = self.theta_p.shape[0]
        if H < 1:
            raise InvalidDataError(f"The 'theta_p' parameter of {owner} must have at least one row. Got 0 instead.")
        self.phi = check_array(phi, "phi", owner=owner, ndim=3, shape=(S, A, None))
        d2 = self.phi.shape[2]
        self.theta_r = check_array(theta_r, "theta_r", owner=owner, shape=(H, d2))
        self.reward_noise = check_option(reward_noise, "reward_noise", ("none", "bernoulli"), owner=owner)
        self.name = name or "LinearMixtureMDP"
        if initial is None:
            initial = np.full(S, 1.0 / S)
        self.initial = check_array(initial, "initial", owner=owner, shape=(S,), low=0.0)
        if abs(self.initial.sum() - 1.0) > _TOL:
            raise InvalidDataError(f"The 'initial' parameter of {owner} must sum to 1. Got {self.initial.sum()!r} "
                                   "instead.")
        phi_norm = float(np.linalg.norm(self.phi, axis=-1).max())
        if phi_norm > 1.0 + _TOL:
            raise InvalidDataError(f"The 'phi' parameter of {owner} must satisfy ||phi(s,a)|| <= 1. "
                                   f"Got max norm {phi_norm!r} instead.")
        if check_norms:
            for label, theta, d in (("theta_p", self.theta_p, d1), ("theta_r", self.theta_r, d2)):
                norm = float(np.linalg.norm(theta, axis=1).max())
                if norm > math.sqrt(d) + _TOL:
                    raise InvalidDataError(f"The '{label}' parameter of {owner} must have row norms <= sqrt({d}) "
                                           f"(Assumption 1). Got {norm!r} instead.")
        P = np.einsum("xayd,hd->hxay", self.psi, self.theta_p)
        if P.min() < -_TOL or P.max() > 1 + _TOL or np.abs(P.sum(-1) - 1).max() > _TOL:
            raise InvalidDataError(f"{owner}: <psi(.|s,a), theta_p[h]> is not a probability vector for every "
                                   f"(h, s, a). Got entries in [{P.min()!r}, {P.max()!r}] and row sums off by "
                                   f"{np.abs(P.sum(-1) - 1).max()!r}.")
        r = np.einsum("xad,hd->hxa", self.phi, self.theta_r)
        if r.min() < -_TOL or r.max() > 1 + _TOL:
            raise InvalidDataError(f"{owner}: mean rewards <phi(s,a), theta_r[h]> must lie in [0, 1]. "
                                   f"Got [{r.min()!r}, {r.max()!r}] instead.")

    # -- sizes
    @property
    def n_states(self) -> int:
        return self.psi.shape[0]

    @property
    def n_actions(self) -> int:
        return self.psi.shape[1]

    @property
    def horizon(self) -> int:
        return self.theta_p.shape[0]

    @property
    def d1(self) -> int:
        return self.psi.shape[3]

    @property
    def d2(self) -> int:
        return self.phi.shape[2]

    # -- model
    def transitions(self) -> np.ndarray:
        """``P[h, s, a, s'] = ⟨ψ(s'|s,a), θ_{h,p}⟩`` (clipped to [0, 1] and renormalised for round-off)."""
        if not hasattr(self, "_P"):
            P = np.einsum("xayd,hd->hxay", self.psi, self.theta_p)
            P = np.clip(P, 0.0, 1.0)
            self._P = P / P.sum(-1, keepdims=True)
        return self._P

    def mean_rewards(self) -> np.ndarray:
        """``r[h, s, a] = ⟨φ(s,a), θ_{h,r}⟩``, clipped to [0, 1] for round-off."""
        return np.clip(np.einsum("xad,hd->hxa", self.phi, self.theta_r), 0.0, 1.0)

    def value_feature_bound(self) -> float:
        """``max_{s,a} max_{V ∈ [0,H]^S} ‖Σ_{s'} ψ(s'|s,a) V(s')‖`` (Assumption 1 asks for ≤ √d1·H).

        A convex function is maximised at a vertex of the box: exact by enumeration over the
        support of ``ψ(·|s,a)`` when it has ≤ 12 states or ``ψ ≥ 0`` (then ``V ≡ H``); otherwise
        the upper bound ``H Σ_{s'} ‖ψ(s'|s,a)‖``.
        """
        if getattr(self, "_value_feature_bound", None) is None:
            self._value_feature_bound = self._compute_value_feature_bound()
        return self._value_feature_bound

    def _compute_value_feature_bound(self) -> float:
        H = self.horizon
        if self.psi.min() >= 0:
            return float(H * np.linalg.norm(self.psi.sum(axis=2), axis=-1).max())
        best = 0.0
        for s in range(self.n_states):
            for a in range(self.n_actions):
                rows = self.psi[s, a]
                support = np.flatnonzero(np.abs(rows).sum(-1) > 0)
                if len(support) > 12:
                    best = max(best, H * float(np.linalg.norm(rows, axis=-1).sum()))
                    continue
                vertices = np.array(list(itertools.product((0.0, float(H)), repeat=len(support))))
                best = max(best, float(np.linalg.norm(vertices @ rows[support], axis=-1).max()))
        return best

    def to_tabular(self) -> Any:
        """The same MDP as a :class:`privrl.envs.tabular.TabularMDP` (mean rewards) for exact planning."""
        return TabularMDP(self.transitions(), self.mean_rewards(), initial=self.initial,
                          reward_bounds=(0.0, 1.0), name=self.name)

    def __repr__(self) -> str:
        return (f"LinearMixtureMDP(name={self.name!r}, S={self.n_states}, A={self.n_actions}, H={self.horizon}, "
                f"d1={self.d1}, d2={self.d2})")


# --------------------------------------------------------------------------- E1: hard instance
def hard_instance_constants(d: int, horizon: int, n_episodes: int) -> dict[str, float]:
    """δ0 = 1/H, Δ = √(δ0/K)/(4√2), α̃ = √(1/(1+Δ(d−1))), β̃ = √(Δ/(1+Δ(d−1))) (spec §5.2, E1)."""
    delta0 = 1.0 / horizon
    gap = math.sqrt(delta0 / n_episodes) / (4.0 * math.sqrt(2.0))
    alpha = math.sqrt(1.0 / (1.0 + gap * (d - 1)))
    beta = math.sqrt(gap / (1.0 + gap * (d - 1)))
    return {"delta0": delta0, "Delta": gap, "alpha": alpha, "beta": beta}


def hard_instance(d: int = 5, horizon: int = 6, n_episodes: int = 10_000, *, rng: RngLike = None,
                  mu_signs: Any = None) -> LinearMixtureMDP:
    """E1: the hard linear mixture MDP of Zhou, Gu & Szepesvári (2021), as reconstructed in spec §5.2.

    States ``x_1..x_{H+2}`` (indices ``0..H+1``), start ``x_1``; ``x_{H+1}`` and ``x_{H+2}`` absorbing;
    actions ``{−1,+1}^{d−1}`` (``2^{d−1}`` of them, in ``itertools.product`` order). From ``x_i``
    (``i ≤ H``) the next state is ``x_{H+2}`` w.p. ``δ0 + ⟨μ_h, a⟩`` and ``x_{i+1}`` otherwise;
    reward 1 in ``x_{H+2}`` (``d2 = 1``, ``φ = 1[s = x_{H+2}]``, ``θ_{h,r} = 1``). ``μ_h ∈ {±Δ}^{d−1}``
    has i.i.d. uniform signs from ``rng`` (or the given ``mu_signs``, ``(H, d−1)`` of ±1).
    Valid probabilities need ``K ≥ (d−1)² H / 32``.
    """
    owner = "hard_instance"
    d = check_scalar(d, "d", owner=owner, kind=int, low=2, high=12)
    H = check_scalar(horizon, "horizon", owner=owner, kind=int, low=2)
    K = check_scalar(n_episodes, "n_episodes", owner=owner, kind=int, low=1)
    c = hard_instance_constants(d, H, K)
    if (d - 1) * c["Delta"] > c["delta0"] + 1e-15:
        raise InvalidDataError(f"The hard instance needs n_episodes >= (d-1)^2 H / 32 = {(d - 1) ** 2 * H / 32:g} "
                               f"for valid probabilities. Got n_episodes={K} instead.")
    if mu_signs is None:
        mu_signs = as_generator(rng).choice([-1.0, 1.0], size=(H, d - 1))
    mu_signs = check_array(mu_signs, "mu_signs", owner=owner, shape=(H, d - 1))
    if not np.all(np.abs(mu_signs) == 1):
        raise InvalidDataError(f"The 'mu_signs' parameter of {owner} must contain only +1 and -1.")
    actions = np.array(list(itertools.product((-1.0, 1.0), repeat=d - 1)))
    S, A = H + 2, len(actions)
    psi = np.zeros((S, A, S, d))
    for i in range(H):
        psi[i, :, i + 1, 0] = c["alpha"] * (1 - c["delta0"])
        psi[i, :, i + 1, 1:] = -c["beta"] * actions
        psi[i, :, H + 1, 0] = c["alpha"] * c["delta0"]
        psi[i, :, H + 1, 1:] = c["beta"] * actions
    for x in (H, H + 1):
        psi[x, :, x, 0] = c["alpha"]
    theta_p = np.concatenate([np.full((H, 1), 1.0 / c["alpha"]), mu_signs * c["Delta"] / c["beta"]], axis=1)
    phi = np.zeros((S, A, 1))
    phi[H + 1] = 1.0
    initial = np.zeros(S)
    initial[0] = 1.0
    model = LinearMixtureMDP(psi, theta_p, phi, np.ones((H, 1)), initial=initial, reward_noise="none",
                             name=f"LinearMixtureHard(d={d}, H={H}, K={K})")
    model.actions = actions                  # type: ignore[attr-defined]
    model.mu = mu_signs * c["Delta"]         # type: ignore[attr-defined]
    return model


# --------------------------------------------------------------------------- E2: random mixture
def random_mixture(n_states: int = 6, n_actions: int = 4, horizon: int = 5, d1: int = 3, d2: int = 3, *,
                   rng: RngLike = None, concentration: float = 0.3) -> LinearMixtureMDP:
    """E2: a seeded random mixture of ``d1`` known MDPs (spec §5.2).

    ``P_i(·|s,a) ~ Dirichlet(concentration·1_S)``, ``ψ(s'|s,a) = (P_1(s'|s,a), …, P_{d1}(s'|s,a))``,
    ``θ_{h,p} ~ Dirichlet(1_{d1})``; ``φ(s,a) ~ Dirichlet(1_{d2})``, ``θ_{h,r} ~ U[0,1]^{d2}``;
    Bernoulli rewards; fixed start state 0.
    """
    owner = "random_mixture"
    S = check_scalar(n_states, "n_states", owner=owner, kind=int, low=1)
    A = check_scalar(n_actions, "n_actions", owner=owner, kind=int, low=1)
    H = check_scalar(horizon, "horizon", owner=owner, kind=int, low=1)
    d1 = check_scalar(d1, "d1", owner=owner, kind=int, low=1)
    d2 = check_scalar(d2, "d2", owner=owner, kind=int, low=1)
    conc = check_scalar(concentration, "concentration", owner=owner, low=0.0, closed="neither")
    g = as_generator(rng)
    base = g.dirichlet(np.full(S, conc), size=(d1, S, A))          # (d1, S, A, S)
    psi = np.moveaxis(base, 0, -1)                                  # (S, A, S, d1)
    theta_p = g.dirichlet(np.ones(d1), size=H)
    phi = g.dirichlet(np.ones(d2), size=(S, A))
    theta_r = g.uniform(0.0, 1.0, size=(H, d2))
    initial = np.zeros(S)
    initial[0] = 1.0
    return LinearMixtureMDP(psi, theta_p, phi, theta_r, initial=initial, reward_noise="bernoulli",
                            name=f"RandomLinearMixture(S={S}, A={A}, H={H}, d1={d1}, d2={d2})")


# --------------------------------------------------------------------------- E3: tabular
def tabular_as_mixture(P: Any, r: Any = None, *, initial: Any = None, reward_noise: str = "none",
                       support: str = "all") -> LinearMixtureMDP:
    """E3: an episodic tabular MDP (``P`` ``(H,S,A,S)``, ``r`` ``(H,S,A)`` in [0,1]) as a linear mixture:
    ``ψ(s'|s,a) = e_{(s,a,s')}`` (``d1 = S²A``), ``θ_{h,p} = vec P_h``, ``φ = e_{(s,a)}``
    (``d2 = SA``), ``θ_{h,r} = vec r_h`` (spec §1.2). Memory ``O(S⁴A²)``: tiny MDPs only.
    ``P`` may also be a ``TabularMDP`` (then ``r`` is ignored and may be ``None``).

    ``support="reachable"`` keeps only the triples ``(s, a, s')`` with ``P_h(s'|s,a) > 0`` at some
    step (the kernel's support, a public property of the model's structure): the same one-hot
    features on fewer coordinates (e.g. RiverSwim: d1 = 22 instead of 72), so a learner's cost,
    ``O(d1³)`` per step, drops accordingly."""
    check_option(support, "support", ("all", "reachable"), owner="tabular_as_mixture")
    if hasattr(P, "P") and hasattr(P, "r"):
        model, P, r = P, P.P, P.r
        initial = getattr(model, "initial", None) if initial is None else initial
    P = check_array(P, "P", owner="tabular_as_mixture", ndim=4)
    H, S, A, _ = P.shape
    r = check_array(r, "r", owner="tabular_as_mixture", shape=(H, S, A), low=0.0, high=1.0)
    if S * S * A > 4096:
        raise InvalidDataError(f"tabular_as_mixture builds a dense (S, A, S, S^2 A) feature; S^2 A must be <= 4096. "
                               f"Got {S * S * A} instead.")
    keep = np.ones(S * A * S, dtype=bool) if support == "all" else (P > 0).any(axis=0).ravel()
    d1, d2 = int(keep.sum()), S * A
    psi = np.eye(S * A * S)[:, keep].reshape(S, A, S, d1)
    phi = np.eye(d2).reshape(S, A, d2)
    return LinearMixtureMDP(psi, P.reshape(H, S * A * S)[:, keep], phi, r.reshape(H, d2), initial=initial,
                            reward_noise=reward_noise, name=f"TabularAsMixture(S={S}, A={A}, H={H})")


# --------------------------------------------------------------------------- gymnasium
def _as_env(model: LinearMixtureMDP) -> Any:
    env = TabularEnv(model.to_tabular())
    env.linear_mixture = model  # type: ignore[attr-defined]  # the known features, for learners that take an env
    return env


def make_hard_env(d: int = 5, horizon: int = 6, n_episodes: int = 10_000, seed: int = 0, **_: object) -> object:
    """``privrl/LinearMixtureHard-v0``: E1 as a gymnasium env (``env.unwrapped.linear_mixture``)."""
    return _as_env(hard_instance(d, horizon, n_episodes, rng=seed))


def make_random_env(n_states: int = 6, n_actions: int = 4, horizon: int = 5, d1: int = 3, d2: int = 3,
                    seed: int = 0, **_: Any) -> Any:
    """``privrl/RandomLinearMixture-v0``: E2 as a gymnasium env (``env.unwrapped.linear_mixture``)."""
    return _as_env(random_mixture(n_states, n_actions, horizon, d1, d2, rng=seed))
