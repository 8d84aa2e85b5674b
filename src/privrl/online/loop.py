"""The episode loop of an online learner (each episode one user: the privacy unit of joint and local DP).

For ``k = 1, …, K``: the learner plans a policy from what it has released so far
(:meth:`OnlineLearner.policy`), the policy is played for one episode — on a known tabular model from the
run's ``env`` stream (pre-drawn in blocks, bit-identical to one draw per episode), or on a Gymnasium env —
its exact pseudo-regret is recorded (:mod:`privrl.online.regret`), and the learner observes the
trajectory (:meth:`OnlineLearner.observe`: its counters take the episode's contribution and release
their noisy statistics through the learner's releaser). The last episode's trajectory is observed too;
a learner that does not need it may ignore it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from privrl._progress import loop_progress
from privrl.online.episodes import GymRollout, tabular_episode
from privrl.online.regret import RegretTrace, optimal_values, policy_values, pseudo_regret

__all__ = ["OnlineLearner", "TabularModel", "run_episodes", "BLOCK"]

#: episodes of environment uniforms drawn at once
BLOCK = 256


class OnlineLearner(Protocol):
    """What the loop needs of a learner."""

    def policy(self, k: int) -> np.ndarray:
        """The policy of episode ``k``: ``(H, S)`` actions or ``(H, S, A)`` probabilities."""

    def observe(self, k: int, states: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Episode ``k``'s trajectory: states ``(H + 1,)``, actions ``(H,)``, rewards ``(H,)``."""


class TabularModel(Protocol):
    """A known finite-horizon model: ``P`` ``(H, S, A, S)``, ``rewards`` ``(H, S, A)``, ``initial`` ``(S,)``."""

    P: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray


def run_episodes(learner: OnlineLearner, model: TabularModel, n_episodes: int, streams: dict[str, Any], *,
                 env: Any = None, callback: Callable[[int, np.ndarray], None] | None = None) -> RegretTrace:
    """Run ``n_episodes`` of ``learner`` and return the run's :class:`~privrl.online.regret.RegretTrace`.

    ``model`` is the true model (the regret oracle, and the simulator unless ``env`` is given);
    ``streams`` the run's (:func:`~privrl.online.episodes.run_streams`); ``callback(k, policy)`` is
    called after planning each episode."""
    P, R = np.asarray(model.P, dtype=float), np.asarray(model.rewards, dtype=float)
    H = P.shape[0]
    v_star = optimal_values(P, R)
    cum_P, cum_init = np.cumsum(P, axis=-1), np.cumsum(np.asarray(model.initial, dtype=float))
    trace = RegretTrace(n_episodes)
    rollout = GymRollout(H, env, streams["env"]) if env is not None else None
    env_u = np.empty((0, H + 1, 2))
    with loop_progress(n_episodes, "episode") as bar:
        for k in range(n_episodes):
            policy = learner.policy(k)
            if callback is not None:
                callback(k, policy)
            if rollout is not None:
                s, a, rew = rollout.episode(policy, streams["policy"])
            else:
                if k % BLOCK == 0:
                    env_u = streams["env"].random((min(BLOCK, n_episodes - k), H + 1, 2))
                act_u = streams["policy"].random(H) if policy.ndim == 3 else None
                s, a, rew = tabular_episode(cum_P, cum_init, R, policy, env_u[k % BLOCK], act_u)
            trace.add(pseudo_regret(v_star, policy_values(P, R, policy), int(s[0])))
            learner.observe(k, s, a, rew)
            bar.update(1)
    return trace
