"""Linear MDPs over a finite state set (Jin et al. 2020b; Qiao & Wang 2023 §2).

``P_h(s'|s,a) = ⟨φ(s,a), ν_h(s')⟩`` and ``r_h(s,a) = ⟨φ(s,a), θ_h⟩`` with a known feature table
``φ`` ``(S, A, d)``, measures ``ν`` ``(H, S, d)`` and reward vectors ``θ`` ``(H, d)``. The
constructor checks that every ``P_h(·|s,a)`` is a probability vector and every reward lies in
[0, 1] (tolerance ``atol``; rounding errors inside the tolerance are clipped).

The finite-horizon array helpers (:func:`backward_induction`, :func:`evaluate_policy`,
:func:`sample_episodes`) work on any ``P`` ``(H,S,A,S)``, ``r`` ``(H,S,A)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, as_generator
from privrl._validation import check_array, check_scalar, param_error
from privrl.data import TrajectoryDataset
from privrl.envs import finite
from privrl.envs.tabular import TabularMDP
from privrl.errors import InvalidDataError

__all__ = ["LinearMDP", "backward_induction", "evaluate_policy", "sample_episodes", "policy_probabilities"]


def policy_probabilities(policy: ArrayLike, horizon: int, n_states: int, n_actions: int) -> np.ndarray:
    """A policy as ``(H, S, A)`` probabilities: ``(S,)``/``(H,S)`` int (deterministic) or
    ``(S,A)``/``(H,S,A)`` float (stochastic); stationary policies are broadcast over steps."""
    pol = np.asarray(policy)
    H, S, A = horizon, n_states, n_actions
    if pol.dtype.kind in "iu" and pol.shape in ((S,), (H, S)):
        if pol.size and (pol.min() < 0 or pol.max() >= A):
            raise param_error("policy", None, f"actions in [0, {A})", f"values in [{pol.min()}, {pol.max()}]")
        probs = np.zeros((*pol.shape, A))
        np.put_along_axis(probs, pol[..., None], 1.0, axis=-1)
        return np.broadcast_to(probs, (H, S, A))
    if pol.dtype.kind == "f" and pol.shape in ((S, A), (H, S, A)):
        if np.any(pol < -1e-12) or not np.allclose(pol.sum(-1), 1.0, atol=1e-8):
            raise param_error("policy", None, "rows of probabilities summing to 1", "other values")
        return np.broadcast_to(pol, (H, S, A))
    raise param_error("policy", None, f"an int array of shape ({S},) or ({H}, {S}) or a float array of shape "
                      f"({S}, {A}) or ({H}, {S}, {A})", f"{pol.dtype} array of shape {pol.shape}")


def backward_induction(P: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal ``Q`` ``(H,S,A)`` and ``V`` ``(H+1,S)`` (last row 0) by exact backward induction
    (the shared kernel :func:`privrl.envs.finite.backward_induction`)."""
    return finite.backward_induction(P, r)


def evaluate_policy(P: np.ndarray, r: np.ndarray, policy: ArrayLike) -> np.ndarray:
    """``V^π`` ``(H+1, S)`` of any policy (see :func:`policy_probabilities`)."""
    H, S, A, _ = P.shape
    return finite.backward_induction(P, r, policy_probabilities(policy, H, S, A))[1]


def sample_episodes(P: np.ndarray, r: np.ndarray, initial: np.ndarray, policy: ArrayLike, n_episodes: int,
                    *, rng: RngLike) -> dict[str, np.ndarray]:
    """``n_episodes`` fixed-horizon episodes as ``(K, H)`` arrays ``observations, actions, rewards,
    next_observations`` (rewards are the expected rewards ``r_h(s, a)``), by the models' shared
    sampler (:func:`privrl.envs.finite.sample_paths`; every policy as probabilities, so each step
    draws its actions and then its next states)."""
    n_episodes = check_scalar(n_episodes, "n_episodes", kind=int, low=1)
    gen = as_generator(rng)
    H, S, A, _ = P.shape
    pi = policy_probabilities(policy, H, S, A)
    paths = finite.sample_paths(np.cumsum(P, axis=-1), lambda h: r[h], np.cumsum(np.asarray(initial, dtype=float)),
                                n_episodes, gen, cum_policy=np.cumsum(pi, axis=-1), limit=H, stop_at=H)
    return {k: paths[k] for k in ("observations", "actions", "rewards", "next_observations")}


class LinearMDP:
    """A finite-horizon linear MDP over ``S`` states (exact solvers, sampling, ``to_tabular()``).

    Parameters: ``features`` ``(S, A, d)``, ``nu`` ``(H, S, d)`` (``ν_h(s')``), ``theta`` ``(H, d)``,
    ``initial`` ``(S,)`` (default uniform), ``feature_norm_bound`` (``max ||φ||_2`` is checked
    against it when given), ``atol`` for the probability/reward checks.
    """

    def __init__(self, features: ArrayLike, nu: ArrayLike, theta: ArrayLike, *, initial: ArrayLike | None = None,
                 feature_norm_bound: float | None = None, name: str | None = None, atol: float = 1e-9) -> None:
        owner = "LinearMDP"
        phi = check_array(features, "features", owner=owner, ndim=3)
        S, A, d = phi.shape
        nu = check_array(nu, "nu", owner=owner, ndim=3)
        if nu.shape[1:] != (S, d):
            raise param_error("nu", owner, f"an array of shape (H, {S}, {d})", f"shape {nu.shape}")
        H = nu.shape[0]
        theta = check_array(theta, "theta", owner=owner, shape=(H, d))
        if initial is None:
            initial = np.full(S, 1.0 / S)
        init = check_array(initial, "initial", owner=owner, shape=(S,), low=0.0)
        if abs(init.sum() - 1.0) > 1e-8:
            raise param_error("initial", owner, "a probability vector", f"sum {init.sum()!r}")
        atol = check_scalar(atol, "atol", owner=owner, low=0.0)
        norm = float(np.sqrt((phi**2).sum(-1)).max())
        if feature_norm_bound is not None and norm > feature_norm_bound * (1 + 1e-12):
            raise InvalidDataError(f"LinearMDP: max ||phi(s,a)||_2 = {norm!r} exceeds feature_norm_bound="
                                   f"{feature_norm_bound!r}.")
        P = np.einsum("sad,htd->hsat", phi, nu)
        r = np.einsum("sad,hd->hsa", phi, theta)
        if P.min() < -atol or P.max() > 1 + atol or np.abs(P.sum(-1) - 1.0).max() > atol:
            raise InvalidDataError("LinearMDP: <phi(s,a), nu_h(.)> is not a probability vector for every "
                                   f"(h, s, a) (min {P.min()!r}, max {P.max()!r}, worst row-sum error "
                                   f"{np.abs(P.sum(-1) - 1).max()!r}; atol={atol!r}).")
        if r.min() < -atol or r.max() > 1 + atol:
            raise InvalidDataError(f"LinearMDP: rewards must lie in [0, 1]. Got [{r.min()!r}, {r.max()!r}].")
        self.features, self.nu, self.theta, self.initial = phi, nu, theta, init
        self.transitions = np.clip(P, 0.0, 1.0)
        self.rewards = np.clip(r, 0.0, 1.0)
        self.feature_norm = norm
        self.name = name or "LinearMDP"

    @classmethod
    def from_tabular(cls, P: ArrayLike, r: ArrayLike, *, initial: ArrayLike | None = None,
                     name: str | None = None) -> LinearMDP:
        """A tabular MDP as a linear MDP with one-hot features (d = S·A, ||φ|| = 1)."""
        P = check_array(P, "P", owner="LinearMDP.from_tabular", ndim=4)
        H, S, A, _ = P.shape
        r = check_array(r, "r", owner="LinearMDP.from_tabular", shape=(H, S, A))
        features = np.eye(S * A).reshape(S, A, S * A)
        nu = P.reshape(H, S * A, S).transpose(0, 2, 1)
        return cls(features, nu, r.reshape(H, S * A), initial=initial, name=name)

    # -- sizes
    @property
    def horizon(self) -> int:
        return self.nu.shape[0]

    @property
    def n_states(self) -> int:
        return self.features.shape[0]

    @property
    def n_actions(self) -> int:
        return self.features.shape[1]

    @property
    def dim(self) -> int:
        return self.features.shape[2]

    # -- exact solvers
    def optimal_q(self) -> np.ndarray:
        return backward_induction(self.transitions, self.rewards)[0]

    def optimal_values(self) -> np.ndarray:
        return backward_induction(self.transitions, self.rewards)[1]

    def optimal_policy(self) -> np.ndarray:
        return np.argmax(self.optimal_q(), axis=-1)

    def optimal_value(self) -> float:
        return float(self.initial @ self.optimal_values()[0])

    def evaluate(self, policy: ArrayLike) -> np.ndarray:
        return evaluate_policy(self.transitions, self.rewards, policy)

    def value(self, policy: ArrayLike) -> float:
        return float(self.initial @ self.evaluate(policy)[0])

    def sample(self, policy: ArrayLike, n_episodes: int, *, rng: RngLike) -> dict[str, np.ndarray]:
        """Episodes as a dict of ``(K, H)`` arrays (accepted by every offline algorithm; wrap with
        :func:`to_dataset` for a :class:`privrl.data.TrajectoryDataset`)."""
        return sample_episodes(self.transitions, self.rewards, self.initial, policy, n_episodes, rng=rng)

    def to_tabular(self) -> TabularMDP:
        """The same MDP as a :class:`privrl.envs.tabular.TabularMDP` (episodic)."""
        return TabularMDP(self.transitions, self.rewards, horizon=self.horizon, initial=self.initial,
                          name=self.name)

    def __repr__(self) -> str:
        return f"LinearMDP(S={self.n_states}, A={self.n_actions}, d={self.dim}, H={self.horizon}, name={self.name!r})"


def to_dataset(padded: dict[str, np.ndarray], *, n_states: int | None = None,
               n_actions: int | None = None) -> TrajectoryDataset:
    """``(K, H)`` arrays as a fixed-horizon :class:`privrl.data.TrajectoryDataset`."""
    K, H = padded["actions"].shape
    return TrajectoryDataset(padded["observations"].ravel(), padded["actions"].ravel(), padded["rewards"].ravel(),
                             padded["next_observations"].ravel(), np.arange(0, K * H + 1, H),
                             n_states=n_states, n_actions=n_actions, horizon=H)
