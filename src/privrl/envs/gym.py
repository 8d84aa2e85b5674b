"""A Gymnasium adapter for any :class:`~privrl.envs.tabular.TabularMDP`.

:class:`TabularEnv` has ``Discrete(S)`` observations and ``Discrete(A)`` actions.

* ``reset(seed=s)`` reseeds ``self.np_random`` (Gymnasium semantics): the same seed followed by
  the same actions gives the same trajectory; ``reset()`` without a seed continues the stream.
* Episodic models: step ``h`` selects ``P[h]``/``r[h]``; after ``H`` steps the episode is
  *truncated* (``truncated=True``), unless it terminated on that step.
* Entering a terminal state (``model.terminal_states``) sets ``terminated=True``.
* A discounted model without terminal states never ends by itself; wrap it in
  ``gymnasium.wrappers.TimeLimit`` (or register it with ``max_episode_steps``).
* ``info`` holds ``"step"``, the number of steps taken in the episode.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from privrl._validation import param_error
from privrl.envs.tabular import TabularMDP

__all__ = ["TabularEnv"]


class TabularEnv(gym.Env[int | np.int64, int | np.int64]):
    """A ``gymnasium.Env`` over ``model`` (exposed as ``.model``)."""

    metadata = {"render_modes": []}

    def __init__(self, model: TabularMDP) -> None:
        if not isinstance(model, TabularMDP):
            raise param_error("model", "TabularEnv", "a TabularMDP", type(model).__name__)
        self.model = model
        self.observation_space = gym.spaces.Discrete(model.n_states)
        self.action_space = gym.spaces.Discrete(model.n_actions)
        self.reward_bounds = model.reward_bounds
        self._state: int | None = None
        self._step = 0
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict[str, object] | None = None) -> tuple[int, dict[str, int]]:
        super().reset(seed=seed)
        initial = self.model.initial
        self._state = int(self.np_random.choice(initial.shape[0], p=initial / initial.sum()))
        self._step = 0
        self._done = False
        return self._state, {"step": 0}

    def step(self, action: int | np.int64) -> tuple[int, float, bool, bool, dict[str, int]]:
        if self._done:
            raise gym.error.ResetNeeded("TabularEnv.step called before reset or after the episode ended; call reset().")
        if not self.action_space.contains(action):
            raise param_error("action", "TabularEnv.step", f"an int in [0, {self.model.n_actions - 1}]", action)
        m, h, s, a = self.model, self._step, self._state, int(action)
        if m.is_episodic:
            p, reward = m.P[h, s, a], m.r[h, s, a]
        else:
            p, reward = m.P[s, a], m.r[s, a]
        nxt = int(self.np_random.choice(p.shape[0], p=p / p.sum()))
        self._state, self._step = nxt, h + 1
        terminated = bool(m.terminal_states[nxt])
        truncated = bool(m.horizon is not None and self._step >= m.horizon and not terminated)
        self._done = terminated or truncated
        return nxt, float(reward), terminated, truncated, {"step": self._step}
