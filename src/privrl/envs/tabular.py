"""Finite MDPs with exact solvers: :class:`TabularMDP` and :func:`from_gymnasium_toy_text`.

Two forms share one class:

* **episodic** (finite horizon ``H``, non-stationary, undiscounted): ``P[h, s, a, s']`` and
  ``r[h, s, a]`` for ``h = 0..H-1``. A stationary model may be given as ``P[s, a, s']`` /
  ``r[s, a]`` together with ``horizon``; it is stored once and exposed as a read-only broadcast
  view of shape ``(H, S, A, S)`` (no copy: a 200-step Taxi model stays small).
* **discounted**: ``P[s, a, s']``, ``r[s, a]``, discount ``gamma`` in [0, 1).

In both forms ``terminal_states`` marks absorbing states (every action stays, reward 0): an
episode ends when it enters one. Because they are absorbing with zero reward, the exact values
below equal the expected return of episodes that stop at termination.

Policies are arrays (or, for :meth:`TabularMDP.sample`, a callable ``(obs, step, rng) -> action``):

* deterministic: integer ``(S,)`` (stationary) or ``(H, S)`` (non-stationary, episodic only);
* stochastic: float ``(S, A)`` or ``(H, S, A)``, rows summing to one.

A stationary policy is broadcast over the steps of an episodic model.

Exact solvers: backward induction for the episodic form (``Q_h = r_h + P_h V_{h+1}``,
``V_H = 0``); for the discounted form policy evaluation is the linear solve
``V = (I - γ P_π)^{-1} r_π`` and the optimum comes from policy iteration (finitely many steps,
each an exact linear solve), so optimal values are exact up to floating point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike
from privrl._validation import check_array, check_bounds, check_scalar, param_error
from privrl.data.trajectories import TrajectoryDataset
from privrl.envs.finite import backward_induction
from privrl.envs.sampling import resolve_max_steps as resolve_max_steps  # the sampler moved; names kept here
from privrl.envs.sampling import sample_dataset as sample_dataset
from privrl.errors import InvalidDataError, InvalidParameterError

__all__ = ["TabularMDP", "from_gymnasium_toy_text", "PROBABILITY_ATOL"]

#: Tolerance on "rows sum to one" for transition kernels, initial distributions and policies.
PROBABILITY_ATOL = 1e-6

_OWNER = "TabularMDP"


def _data_array(value: Any, name: str, owner: str = _OWNER, **kwargs: Any) -> np.ndarray:
    """``check_array`` that raises :class:`InvalidDataError` (a bad model, not a bad parameter)."""
    try:
        return check_array(value, name, owner=owner, **kwargs)
    except InvalidParameterError as exc:
        raise InvalidDataError(str(exc)) from None


def _check_distribution_rows(arr: np.ndarray, name: str, owner: str = _OWNER) -> None:
    """Entries non-negative and rows (last axis) summing to one within :data:`PROBABILITY_ATOL`."""
    if arr.size and arr.min() < 0:
        idx = np.unravel_index(int(np.argmin(arr)), arr.shape)
        raise InvalidDataError(
            f"The '{name}' field of {owner} must be non-negative. "
            f"Got {float(arr[idx])!r} at index {tuple(int(i) for i in idx)} instead."
        )
    sums = arr.sum(axis=-1)
    bad = np.abs(sums - 1.0) > PROBABILITY_ATOL
    if np.any(bad):
        row = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidDataError(
            f"The '{name}' field of {owner} must have rows summing to 1 (tolerance "
            f"{PROBABILITY_ATOL}). Got sum {float(sums[row])!r} for row {row} "
            f"({int(bad.sum())} bad rows) instead."
        )


def policy_probabilities(policy: object, n_states: int, n_actions: int, horizon: int | None,
                         owner: str = _OWNER) -> np.ndarray:
    """An array policy (module docstring) as action probabilities: ``(H, S, A)`` when ``horizon``
    is given (a stationary policy broadcast over the steps, no copy), ``(S, A)`` otherwise. Shared
    by every tabular model."""
    S, A, H = n_states, n_actions, horizon
    if callable(policy):
        raise InvalidParameterError(
            f"The 'policy' parameter of {owner}.evaluate must be an array policy (int (S,)/"
            "(H, S) or float (S, A)/(H, S, A)). Got a callable instead."
        )
    arr = np.asarray(policy)
    if arr.dtype.kind in "iu":
        allowed = f"(S,) = ({S},)" + (f" or (H, S) = ({H}, {S})" if H else "")
        if arr.shape not in ((S,), (H, S)) or (H is None and arr.ndim != 1):
            raise param_error("policy", owner, f"an int array of shape {allowed}", f"shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= A):
            bad = arr.min() if arr.min() < 0 else arr.max()
            raise param_error("policy", owner, f"actions in [0, {A - 1}]", int(bad))
        probs = np.zeros((*arr.shape, A))
        np.put_along_axis(probs, arr[..., None].astype(np.intp), 1.0, axis=-1)
    elif arr.dtype.kind == "f":
        allowed = f"(S, A) = ({S}, {A})" + (f" or (H, S, A) = ({H}, {S}, {A})" if H else "")
        if arr.shape not in ((S, A), (H, S, A)) or (H is None and arr.ndim != 2):
            raise param_error("policy", owner, f"a float array of shape {allowed}", f"shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise param_error("policy", owner, "finite probabilities", "non-finite entries")
        try:
            _check_distribution_rows(arr, "policy", owner)
        except InvalidDataError as exc:
            raise InvalidParameterError(str(exc)) from None
        probs = arr.astype(float)
    else:
        raise param_error(
            "policy", owner, "an int array (deterministic) or a float array (stochastic)",
            f"dtype {arr.dtype}",
        )
    if H is not None and probs.ndim == 2:
        probs = np.broadcast_to(probs, (H, S, A))
    return probs


class TabularMDP:
    """A finite MDP, episodic (finite horizon, non-stationary) or discounted.

    Parameters
    ----------
    P, r
        Transition kernel and mean reward: ``(H, S, A, S)``/``(H, S, A)`` (episodic),
        ``(S, A, S)``/``(S, A)`` (discounted, or a stationary episodic model with ``horizon``).
    horizon
        Episode length ``H`` (episodic form). Inferred from a 4-D ``P`` when omitted.
    gamma
        Discount in [0, 1) (discounted form). Exactly one of ``horizon``/``gamma`` applies.
    initial
        Initial-state distribution ``(S,)``; uniform over non-terminal states by default.
    terminal_states
        Optional ``(S,)`` bool mask of absorbing states (every action stays with reward 0);
        episodes end on entering one. The initial distribution must not put mass on them.
    reward_bounds
        Declared ``(low, high)`` for ``r`` (default ``(0.0, 1.0)``); ``r`` outside raises.
        Sampled datasets carry these bounds.
    name
        A label used in ``repr`` and dataset metadata.
    """

    def __init__(
        self,
        P: ArrayLike,
        r: ArrayLike,
        *,
        horizon: int | None = None,
        gamma: float | None = None,
        initial: ArrayLike | None = None,
        terminal_states: ArrayLike | None = None,
        reward_bounds: tuple[float, float] | None = None,
        name: str | None = None,
    ) -> None:
        P = _data_array(P, "P")
        r = _data_array(r, "r")
        self._gamma, self._horizon = _form(P, horizon, gamma)
        self._stationary = P.ndim == 3
        r = _reward_table(P, r, self._horizon)
        self._reward_bounds = _check_reward_range(r, reward_bounds)
        term = _terminal_mask(terminal_states, P, r)
        initial = _initial_distribution(initial, term)

        # non-optional copies for the solvers (H unused when discounted, γ unused when episodic)
        self._H: int = self._horizon if self._horizon is not None else 0
        self._g: float = self._gamma if self._gamma is not None else 1.0
        # rows passed validation within PROBABILITY_ATOL; store them exactly normalised so that
        # solvers and samplers see stochastic matrices
        self._P = _readonly(P / P.sum(axis=-1, keepdims=True))
        self._r = _readonly(r)
        self._initial = _readonly(initial / initial.sum())
        self._terminal = _readonly(term)
        self.name = name
        self._optimal: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def n_states(self) -> int:
        return int(self._P.shape[-1])

    @property
    def n_actions(self) -> int:
        return int(self._P.shape[-2])

    @property
    def horizon(self) -> int | None:
        """Episode length H (episodic form), ``None`` for a discounted model."""
        return self._horizon

    @property
    def gamma(self) -> float | None:
        """Discount γ (discounted form), ``None`` for an (undiscounted) episodic model."""
        return self._gamma

    @property
    def is_episodic(self) -> bool:
        return self._horizon is not None

    @property
    def is_stationary(self) -> bool:
        """True when P and r do not depend on the step (always so for a discounted model)."""
        return self._stationary

    @property
    def P(self) -> np.ndarray:
        """Transition kernel, ``(H, S, A, S)`` (episodic, read-only view) or ``(S, A, S)``."""
        if self.is_episodic and self._stationary:
            return np.broadcast_to(self._P, (self._H, *self._P.shape))
        return self._P

    @property
    def r(self) -> np.ndarray:
        """Mean rewards, ``(H, S, A)`` (episodic, read-only view) or ``(S, A)``."""
        if self.is_episodic and self._stationary:
            return np.broadcast_to(self._r, (self._H, *self._r.shape))
        return self._r

    @property
    def initial(self) -> np.ndarray:
        return self._initial

    @property
    def terminal_states(self) -> np.ndarray:
        """``(S,)`` bool mask of absorbing states (all False when none)."""
        return self._terminal

    @property
    def reward_bounds(self) -> tuple[float, float]:
        return self._reward_bounds

    def __repr__(self) -> str:
        form = f"horizon={self._horizon}" if self.is_episodic else f"gamma={self._gamma}"
        label = f"{self.name!r}, " if self.name else ""
        return f"TabularMDP({label}S={self.n_states}, A={self.n_actions}, {form})"

    # ------------------------------------------------------------------ policies
    def _r_at(self, h: int) -> np.ndarray:
        return self._r if self._stationary else self._r[h]

    def policy_probabilities(self, policy: object) -> np.ndarray:
        """The policy as action probabilities: ``(H, S, A)`` (episodic) or ``(S, A)``.

        Accepts every array policy described in the module docstring; a stationary policy is
        broadcast over the steps of an episodic model.
        """
        return policy_probabilities(policy, self.n_states, self.n_actions, self._horizon)

    # ------------------------------------------------------------------ exact solvers
    def evaluate_q(self, policy: object) -> np.ndarray:
        """Q^π: ``(H, S, A)`` by backward induction, or ``(S, A)`` by a linear solve."""
        probs = self.policy_probabilities(policy)
        if self.is_episodic:
            return self._episodic_evaluate(probs)[0]
        V = self._discounted_evaluate(probs)
        return self._r + self._g * (self._P @ V)

    def evaluate(self, policy: object) -> np.ndarray:
        """V^π: ``(H+1, S)`` with last row 0 (episodic) or ``(S,)`` (discounted)."""
        probs = self.policy_probabilities(policy)
        if self.is_episodic:
            return self._episodic_evaluate(probs)[1]
        return self._discounted_evaluate(probs)

    def value(self, policy: object) -> float:
        """Expected return from the initial distribution: ``initial · V^π_0``."""
        V = self.evaluate(policy)
        return float(self._initial @ (V[0] if self.is_episodic else V))

    def optimal_q(self) -> np.ndarray:
        return self._solve_optimal()[0].copy()

    def optimal_values(self) -> np.ndarray:
        return self._solve_optimal()[1].copy()

    def optimal_policy(self) -> np.ndarray:
        """A deterministic optimal policy (lowest action index among ties)."""
        return self._solve_optimal()[2].copy()

    def optimal_value(self) -> float:
        V = self._solve_optimal()[1]
        return float(self._initial @ (V[0] if self.is_episodic else V))

    def _episodic_evaluate(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return backward_induction(self.P, self.r, probs)

    def _discounted_evaluate(self, probs: np.ndarray) -> np.ndarray:
        S = self.n_states
        P_pi = np.einsum("sa,sat->st", probs, self._P)
        r_pi = np.einsum("sa,sa->s", probs, self._r)
        system = np.eye(S) - self._g * P_pi
        if S >= 200 and np.count_nonzero(P_pi) < 0.05 * S * S:
            # toy-text kernels are very sparse: a sparse LU is exact and far faster
            from scipy.sparse import csc_matrix
            from scipy.sparse.linalg import spsolve

            return np.asarray(spsolve(csc_matrix(system), r_pi), dtype=float)
        return np.linalg.solve(system, r_pi)

    def _solve_optimal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._optimal is not None:
            return self._optimal
        S, A = self.n_states, self.n_actions
        if self.is_episodic:
            Q, V = backward_induction(self.P, self.r)
            pi = Q.argmax(axis=2)
        else:
            # Policy iteration (Puterman 1994, §6.4): exact evaluation, greedy improvement that
            # only switches on a strict improvement, so it terminates and ties stay stable.
            pi = self._r.argmax(axis=1)
            rows = np.arange(S)
            scale = max(1.0, float(np.abs(self._r).max())) / (1.0 - self._g)
            for _ in range(10_000):
                probs = np.zeros((S, A))
                probs[rows, pi] = 1.0
                V = self._discounted_evaluate(probs)
                Q = self._r + self._g * (self._P @ V)
                best = Q.argmax(axis=1)
                improve = Q[rows, best] > Q[rows, pi] + 1e-12 * scale
                if not improve.any():
                    break
                pi = np.where(improve, best, pi)
            else:  # pragma: no cover - policy iteration terminates in finitely many steps
                raise RuntimeError("policy iteration did not converge")
            # report the lowest-index optimal action, as in the episodic form
            pi = (Q >= Q.max(axis=1, keepdims=True) - 1e-12 * scale).argmax(axis=1)
        self._optimal = (_readonly(Q), _readonly(V), _readonly(pi))
        return self._optimal

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        policy: object,
        n_episodes: int,
        *,
        rng: RngLike = None,
        max_steps: int | None = None,
        pad_to_horizon: int | None = None,
    ) -> TrajectoryDataset:
        """Sample ``n_episodes`` episodes under ``policy`` as a :class:`TrajectoryDataset`.

        Array policies run all episodes in lockstep (one vectorised draw per step); a callable
        ``(obs, step, rng) -> action`` is called per episode and step. Episodes end on entering a
        terminal state, at the horizon, or after ``max_steps`` steps. ``max_steps`` defaults to
        the horizon (episodic, and may not exceed it); a discounted model without terminal states
        needs it. Rewards are the mean rewards ``r``; the dataset carries ``reward_bounds``.

        ``pad_to_horizon=H`` gives fixed-horizon data (what APVI/PEVI/VAPVI need): episodes that
        entered a terminal state before ``H`` steps are padded with absorbing zero-reward steps
        (:func:`privrl.data.pad_to_horizon`). With ``max_steps`` unset it defaults to ``H``.
        """
        # cumulative kernels once (not per step); a stationary model keeps one (S, A, S) copy
        cum_P = np.cumsum(self._P, axis=-1)
        kernel = {"cum_P": cum_P[None] if self._stationary else cum_P, "reward_at": self._r_at}
        return sample_dataset(self, policy, n_episodes, kernel, rng=rng, max_steps=max_steps,
                              pad_to_horizon=pad_to_horizon, owner="TabularMDP.sample")


# ---------------------------------------------------------------------- TabularMDP's checks
def _form(P: np.ndarray, horizon: int | None, gamma: float | None) -> tuple[float | None, int | None]:
    """``(gamma, horizon)`` of the model: exactly one is set (the horizon of a 4-D ``P`` by default)."""
    if gamma is not None and horizon is not None:
        raise InvalidParameterError(
            "The 'gamma' and 'horizon' parameters of TabularMDP are exclusive: give gamma for "
            f"a discounted model or horizon for an episodic one. Got gamma={gamma!r} and "
            f"horizon={horizon!r} instead."
        )
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma", owner=_OWNER, low=0.0, high=1.0, closed="left")
        if P.ndim != 3:
            raise InvalidDataError(
                "The 'P' field of TabularMDP must have shape (S, A, S) for a discounted model. "
                f"Got shape {P.shape} instead."
            )
        return gamma, None
    if horizon is None:
        if P.ndim != 4:
            raise InvalidParameterError(
                "The 'horizon' parameter of TabularMDP must be an int >= 1 (or pass gamma "
                f"for a discounted model) when P has shape (S, A, S). Got None instead "
                f"(P has shape {P.shape})."
            )
        horizon = P.shape[0]
    horizon = check_scalar(horizon, "horizon", owner=_OWNER, kind=int, low=1)
    if P.ndim not in (3, 4):
        raise InvalidDataError(
            "The 'P' field of TabularMDP must have shape (H, S, A, S) or (S, A, S). "
            f"Got shape {P.shape} instead."
        )
    return None, horizon


def _reward_table(P: np.ndarray, r: np.ndarray, horizon: int | None) -> np.ndarray:
    """``r`` checked against the kernel ``P`` (itself checked: shape and stochastic rows); stationary
    rewards of a non-stationary kernel broadcast over the steps."""
    stationary = P.ndim == 3
    S, A = P.shape[-3], P.shape[-2]
    if P.shape[-1] != S or S < 1 or A < 1:
        raise InvalidDataError(
            "The 'P' field of TabularMDP must have matching state axes (..., S, A, S) with "
            f"S, A >= 1. Got shape {P.shape} instead."
        )
    if not stationary and P.shape[0] != horizon:
        raise InvalidDataError(
            f"The 'P' field of TabularMDP must have shape ({horizon}, {S}, {A}, {S}) "
            f"for horizon={horizon}. Got shape {P.shape} instead."
        )
    _check_distribution_rows(P, "P")
    r_shape = (S, A) if stationary else (horizon, S, A)
    if r.shape != r_shape:
        if stationary or r.shape != (S, A):
            raise InvalidDataError(
                f"The 'r' field of TabularMDP must have shape {r_shape} to match P of shape "
                f"{P.shape}. Got shape {r.shape} instead."
            )
        r = np.broadcast_to(r, (P.shape[0], S, A))  # stationary rewards, non-stationary P
    return r


def _check_reward_range(r: np.ndarray, reward_bounds: object) -> tuple[float, float]:
    """The declared ``reward_bounds`` (default ``(0, 1)``), which every entry of ``r`` must lie in."""
    if reward_bounds is None:
        reward_bounds = (0.0, 1.0)
    low, high = bounds = check_bounds(reward_bounds, "reward_bounds", _OWNER)
    if r.size and (r.min() < low or r.max() > high):
        bad = r.min() if r.min() < low else r.max()
        raise InvalidDataError(
            f"The 'r' field of TabularMDP must lie inside reward_bounds [{low!r}, {high!r}]. "
            f"Got {float(bad)!r} instead (declare wider reward_bounds if this is intended)."
        )
    return bounds


def _terminal_mask(terminal_states: object, P: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The ``(S,)`` bool mask of terminal states (none by default), each absorbing with reward 0."""
    stationary, S = P.ndim == 3, P.shape[-1]
    if terminal_states is None:
        return np.zeros(S, dtype=bool)
    term = np.asarray(terminal_states)
    if term.dtype != bool or term.shape != (S,):
        raise InvalidDataError(
            f"The 'terminal_states' field of TabularMDP must be a bool array of shape "
            f"({S},). Got dtype {term.dtype} and shape {term.shape} instead."
        )
    term = term.copy()
    if term.any():
        idx = np.flatnonzero(term)
        stay = P[..., idx, :, idx] if stationary else P[:, idx, :, idx]
        # advanced indexing moves the state axis first: stay has shape (k, [H,] A)
        r_term = r[idx] if stationary else r[:, idx]
        if not np.allclose(stay, 1.0, atol=PROBABILITY_ATOL, rtol=0) or np.any(r_term != 0):
            raise InvalidDataError(
                "The 'terminal_states' field of TabularMDP must mark absorbing states (every "
                "action stays with probability 1 and reward 0). Got a terminal state that is "
                "not absorbing instead."
            )
    return term


def _initial_distribution(initial: object, term: np.ndarray) -> np.ndarray:
    """The ``(S,)`` initial distribution (uniform over non-terminal states by default), with no mass
    on terminal states."""
    if initial is None:
        if term.all():
            raise InvalidDataError(
                "The 'terminal_states' field of TabularMDP must leave at least one "
                "non-terminal state. Got all states terminal instead."
            )
        initial = (~term).astype(float) / float((~term).sum())
    initial = _data_array(initial, "initial", shape=term.shape)
    _check_distribution_rows(initial, "initial")
    if np.any(initial[term] > 0):
        raise InvalidDataError(
            "The 'initial' field of TabularMDP must put zero mass on terminal states. "
            f"Got mass {float(initial[term].sum())!r} instead."
        )
    return initial


def _readonly(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, copy=True)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------- Gymnasium toy text
def from_gymnasium_toy_text(env: Any, *, gamma: float | None = None, horizon: int | None = None) -> TabularMDP:
    """The exact :class:`TabularMDP` of a Gymnasium toy-text environment, from ``env.unwrapped.P``.

    Works for FrozenLake (slippery or not), CliffWalking and Taxi (``Taxi-v4`` in gymnasium 1.4):
    any environment whose ``unwrapped.P[s][a]`` lists ``(prob, next_state, reward, done)``.

    * ``r[s, a]`` is the expected reward ``Σ prob · reward`` (exact values are unchanged).
    * Terminal transitions become absorbing: every state entered by a ``done`` transition is a
      terminal state (all actions stay, reward 0). A terminal state entered by a non-``done``
      transition from a state reachable from the start raises ("done" must be a property of the
      next state). Taxi's unreachable states (passenger already delivered) may enter terminal
      states without ``done``; their values here assume termination, which no episode can see.
    * ``initial`` is ``unwrapped.initial_state_distrib``.
    * ``reward_bounds`` span every transition reward and 0 (the absorbing reward).

    Give ``gamma`` for the discounted form or ``horizon`` for the episodic one; with neither, the
    horizon is the environment's ``max_episode_steps`` (FrozenLake 100, Taxi 200).
    """
    import gymnasium as gym

    owner = "from_gymnasium_toy_text"
    base = getattr(env, "unwrapped", env)
    table = getattr(base, "P", None)
    obs_space = getattr(base, "observation_space", None)
    act_space = getattr(base, "action_space", None)
    if not (isinstance(table, dict) and isinstance(obs_space, gym.spaces.Discrete)
            and isinstance(act_space, gym.spaces.Discrete)):
        raise param_error(
            "env", owner, "a toy-text environment with Discrete spaces and a transition table "
            "unwrapped.P", type(base).__name__,
        )
    if gamma is None and horizon is None:
        spec = getattr(env, "spec", None) or getattr(base, "spec", None)
        horizon = getattr(spec, "max_episode_steps", None)
        if horizon is None:
            raise param_error("horizon", owner, "an int >= 1 (or give gamma) for an environment without "
                              "max_episode_steps", None)
    S, A = int(obs_space.n), int(act_space.n)
    P, r, terminal, bounds = _toy_text_model(table, S, A)
    initial = getattr(base, "initial_state_distrib", None)
    if initial is None:
        raise param_error("env", owner, "an environment with unwrapped.initial_state_distrib", type(base).__name__)
    initial = np.asarray(initial, dtype=float)
    _check_done_is_next_state(table, initial, terminal, A, type(base).__name__)
    P[terminal] = 0.0
    for t in np.flatnonzero(terminal):
        P[t, :, t] = 1.0
    r[terminal] = 0.0
    P /= P.sum(axis=2, keepdims=True)  # remove float drift from sums like 3 × 1/3
    spec = getattr(env, "spec", None) or getattr(base, "spec", None)
    name = getattr(spec, "id", None) or type(base).__name__
    return TabularMDP(
        P, r, gamma=gamma, horizon=horizon, initial=initial,
        terminal_states=terminal, reward_bounds=bounds, name=name,
    )


def _toy_text_model(table: dict, S: int, A: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]]:
    """``(P, r, terminal, (r_min, r_max))`` of a toy-text table ``P[s][a] = [(prob, next, reward,
    done), ...]``: expected rewards, the states entered by a ``done`` transition, and the range of
    the transition rewards and 0."""
    P = np.zeros((S, A, S))
    r = np.zeros((S, A))
    done_into = np.zeros(S, dtype=bool)
    r_min, r_max = 0.0, 0.0
    for s in range(S):
        for a in range(A):
            for prob, nxt, reward, done in table[s][a]:
                P[s, a, int(nxt)] += prob
                r[s, a] += prob * reward
                if prob > 0:
                    r_min, r_max = min(r_min, float(reward)), max(r_max, float(reward))
                    if done:
                        done_into[int(nxt)] = True
    return P, r, done_into, (r_min, r_max)


def _check_done_is_next_state(table: dict, initial: np.ndarray, terminal: np.ndarray, A: int, env_name: str) -> None:
    """Check that "done" is a property of the next state on the part of the table that matters: the
    states reachable from the initial distribution without terminating (Taxi lists unreachable
    states, e.g. passenger already at the destination, that enter terminal states silently)."""
    reachable = (initial > 0) & ~terminal
    frontier = [int(i) for i in np.flatnonzero(reachable)]
    while frontier:
        src = frontier.pop()
        for a in range(A):
            for prob, nxt, _, done in table[src][a]:
                dst = int(nxt)
                if prob <= 0 or done:
                    continue
                if terminal[dst]:
                    raise InvalidDataError(
                        f"The 'P' table of {env_name} must flag 'done' as a property of "
                        f"the next state. Got state {dst} entered both by terminal and "
                        f"non-terminal transitions (from reachable state {src}) instead."
                    )
                if not reachable[dst]:
                    reachable[dst] = True
                    frontier.append(dst)
