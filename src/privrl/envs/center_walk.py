"""The [0, 1] "stay in the centre" task of Wang & Hegde (2019, App. E.1) and observation rescaling.

``CenterWalkEnv`` (id ``privrl/CenterWalk-v0``): state ``s`` in [0, 1], ``s_0 ~ U[0, 1]``; action 1
moves right by ``U[0, 0.25]``, action 0 moves left by ``U[0, 0.25]`` (clipped to [0, 1]); reward
``0.5 - |s - 0.5|`` at every step, evaluated at the post-move state (the authors' code; spec A19 —
``reward_after_move=False`` evaluates it before the move); episodes end after 50 steps
(``terminated=True``: the horizon is part of the task, as in the authors' code where the value of
the last state is 0).

Reference undiscounted returns (spec §5.1; checked in ``tests/envs/test_center_walk.py``): threshold
policy (right iff s < 0.5) 20.71, uniform random 10.86, always one direction 0.92 (post-move
rewards); 20.54 / 10.90 / 1.17 with pre-move rewards. Maximum possible 25.

:class:`UnitBoxObservation` rescales any Box observation to [0, 1]^d, ``(obs - low) / (high - low)``,
from public bounds (the paper's "any bounded interval is rescaled", §2.1): the space's declared
bounds by default, the user's for unbounded coordinates (CartPole's velocities). The estimators of
:mod:`privrl.q_learning` apply the same map themselves (their ``obs_low``/``obs_high``); the wrapper
is for users who feed their own observations. An observation outside the bounds is an error (the
functional-noise analysis is on [0, 1]) unless ``clip=True`` asks for clipping.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike

from privrl._validation import check_scalar, param_error
from privrl.envs.registration import make_registered
from privrl.errors import InvalidDataError

__all__ = ["CenterWalkEnv", "CenterWalkBatch", "UnitBoxObservation", "threshold_policy", "make_env",
           "make_unit_env", "REFERENCE_RETURNS"]

#: spec §5.1 (2e5 simulated episodes): (post-move rewards, pre-move rewards)
REFERENCE_RETURNS = {"threshold": (20.71, 20.54), "uniform": (10.86, 10.90), "one_direction": (0.92, 1.17)}


class CenterWalkEnv(gym.Env[np.ndarray, int | np.int64]):
    """Wang & Hegde (2019), App. E.1."""

    metadata = {"render_modes": []}

    def __init__(self, *, horizon: int = 50, max_move: float = 0.25, reward_after_move: bool = True) -> None:
        self.horizon = check_scalar(horizon, "horizon", owner="CenterWalkEnv", kind=int, low=1)
        self.max_move = check_scalar(max_move, "max_move", owner="CenterWalkEnv", low=0.0, closed="neither")
        self.reward_after_move = bool(reward_after_move)
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float64)
        self.action_space = gym.spaces.Discrete(2)
        self.reward_range = (0.0, 0.5)
        self._s = 0.0
        self._t = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, object] | None = None) -> tuple[np.ndarray, dict[str, object]]:
        super().reset(seed=seed)
        self._s = float(self.np_random.uniform(0.0, 1.0))
        self._t = 0
        return np.array([self._s]), {}

    def step(self, action: int | np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, object]]:
        if action not in (0, 1):
            raise param_error("action", "CenterWalkEnv.step", "0 or 1", action)
        before = self._s
        move = float(self.np_random.uniform(0.0, self.max_move))
        self._s = min(1.0, before + move) if int(action) == 1 else max(0.0, before - move)
        where = self._s if self.reward_after_move else before
        reward = 0.5 - abs(where - 0.5)
        self._t += 1
        return np.array([self._s]), reward, self._t >= self.horizon, False, {}


class CenterWalkBatch:
    """``R`` :class:`CenterWalkEnv` instances stepped together, for ``n_steps`` steps (training runs
    advanced in lockstep): the same states, rewards and episode ends as stepping each one alone.

    Every draw of an environment comes from its own ``np_random`` and is a uniform double: the
    start state ``uniform(0, 1)`` at each reset and the move ``uniform(0, max_move)`` at each step,
    i.e. ``low + (high - low) u`` with ``u = np_random.random()``. Episodes last exactly
    ``horizon`` steps, so ``n_steps`` steps (each episode end followed by a reset) take
    ``n_steps + n_steps // horizon`` doubles after the first, seeded reset: they are drawn at once,
    and each environment's generator ends where stepping one by one leaves it (its state too).
    :meth:`of` builds the batch only for plain CenterWalk environments (no wrapper but Gymnasium's
    passive checks), else returns None.
    """

    def __init__(self, envs: list[CenterWalkEnv], n_steps: int, wrapped: list[gym.Env] | None = None) -> None:
        self._envs = list(envs)
        self._wrapped = list(wrapped or envs)
        self.n_steps = int(n_steps)
        self._horizon = np.array([e.horizon for e in self._envs])
        self._max_move = np.array([e.max_move for e in self._envs])
        self._after = np.array([e.reward_after_move for e in self._envs])
        self._rows = np.arange(len(self._envs))

    @classmethod
    def of(cls, envs: list[gym.Env], n_steps: int) -> CenterWalkBatch | None:
        inner = []
        for env in envs:
            e: Any = env
            while type(e) in (gym.wrappers.OrderEnforcing, gym.wrappers.PassiveEnvChecker):  # gym.make's own
                e = e.env
            if type(e) is not CenterWalkEnv:
                return None
            inner.append(e)
        return cls(inner, n_steps, list(envs))

    def reset(self, seeds: list[int]) -> np.ndarray:
        """Seeded first resets (through each environment's own ``reset``); the states ``(R, 1)``."""
        for env, seed in zip(self._wrapped, seeds):
            env.reset(seed=int(seed))
        draws = [e.np_random.random(self.n_steps + self.n_steps // e.horizon) for e in self._envs]
        self._u = np.zeros((len(draws), max(len(u) for u in draws)))
        for row, u in zip(self._u, draws):
            row[:len(u)] = u
        self._used = np.zeros(len(self._envs), np.intp)
        self._s = np.array([e._s for e in self._envs])
        self._t = np.zeros(len(self._envs), np.intp)
        return self._s[:, None].copy()

    def _draw(self, rows: np.ndarray) -> np.ndarray:
        u = self._u[rows, self._used[rows]]
        self._used[rows] += 1
        return u

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of every environment: states ``(R, 1)``, rewards, terminated, truncated."""
        before = self._s
        move = 0.0 + (self._max_move - 0.0) * self._draw(self._rows)
        s = np.where(actions == 1, np.minimum(1.0, before + move), np.maximum(0.0, before - move))
        where = np.where(self._after, s, before)
        reward = 0.5 - np.abs(where - 0.5)
        self._s = s
        self._t = self._t + 1
        return s[:, None].copy(), reward, self._t >= self._horizon, np.zeros(len(s), bool)

    def reset_rows(self, rows: np.ndarray) -> np.ndarray:
        """New episodes for the environments ``rows`` (indices); their start states ``(len(rows), 1)``."""
        s0 = 0.0 + (1.0 - 0.0) * self._draw(rows)
        self._s = self._s.copy()
        self._s[rows] = s0
        self._t[rows] = 0
        return s0[:, None]

    def close(self) -> None:
        """Write every environment's state back (as if it had been stepped itself)."""
        for e, s, t in zip(self._envs, self._s.tolist(), self._t.tolist()):
            e._s, e._t = float(s), int(t)


def threshold_policy(obs: object) -> int:
    """Move right iff s < 0.5 (the optimum used for the reference return)."""
    return int(float(np.asarray(obs).ravel()[0]) < 0.5)


class UnitBoxObservation(gym.ObservationWrapper):
    """Affine map of a Box observation to [0, 1]^d: ``(obs - low) / (high - low)``.

    ``low``/``high`` (public bounds, one per coordinate) default to the space's declared bounds and
    must be finite: for an unbounded space (CartPole) give them. An observation outside them raises
    :class:`~privrl.errors.InvalidDataError` unless ``clip=True``.
    """

    def __init__(self, env: gym.Env, *, low: ArrayLike | None = None, high: ArrayLike | None = None,
                 clip: bool = False) -> None:
        super().__init__(env)
        owner = "UnitBoxObservation"
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise param_error("env", owner, "an environment with a Box observation space", type(space).__name__)
        d = int(np.prod(space.shape))
        bounds = []
        for name, given, declared in (("low", low, space.low), ("high", high, space.high)):
            arr = np.asarray(declared if given is None else given, float).ravel()
            if arr.shape != (d,):
                raise param_error(name, owner, f"{d} bounds (one per observation coordinate)", f"{arr.size} values")
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                raise param_error(name, owner, "finite in every coordinate: the observation space is unbounded in "
                                  f"coordinates {bad.tolist()}, so give public finite bounds",
                                  "the space's own bounds" if given is None else arr.tolist())
            bounds.append(arr)
        lo, hi = bounds
        if np.any(hi <= lo):
            raise param_error("high", owner, "greater than 'low' in every coordinate", hi.tolist())
        self._low, self._span, self._clip = lo, hi - lo, bool(clip)
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=lo.shape, dtype=np.float64)

    def observation(self, observation: object) -> np.ndarray:
        unit = (np.asarray(observation, float).ravel() - self._low) / self._span
        if self._clip:
            return np.clip(unit, 0.0, 1.0)
        if not (np.all(unit >= 0.0) and np.all(unit <= 1.0)):
            raise InvalidDataError("UnitBoxObservation: an observation lies outside the declared bounds; give "
                                   "wider public bounds ('low' and 'high') or clip=True.")
        return unit


def make_env(env_id: str, *, owner: str = "make_env", **kwargs: Any) -> gym.Env:
    """``gymnasium.make(env_id)`` (privrl's ids registered first); an unknown id or one without a
    Discrete action space is a one-line error naming ``env``."""
    env = make_registered(env_id, lambda why: param_error("env", owner, f"a registered Gymnasium id ({why})", env_id),
                          **kwargs)
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise param_error("env", owner, "an environment with a Discrete action space", type(env.action_space).__name__)
    return env


def make_unit_env(env_id: str, *, low: ArrayLike | None = None, high: ArrayLike | None = None,
                  **kwargs: object) -> gym.Env:
    """:func:`make_env` with observations rescaled to [0, 1]^d (:class:`UnitBoxObservation`)."""
    env = make_env(env_id, owner="make_unit_env", **kwargs)
    if env_id == "privrl/CenterWalk-v0":
        return env
    return UnitBoxObservation(env, low=low, high=high)
