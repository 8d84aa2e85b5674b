"""Episodes of an online learner: its streams, acting, and rolling out one episode.

A run keeps three independent streams, children of its ``rng`` (:func:`run_streams`): ``env`` (the
environment's randomness: initial state and transitions), ``policy`` (a stochastic policy's draws and
random tie-breaks) and ``privacy`` (the fit's releaser). Drawing the environment's uniforms of a block
of episodes at once — ``(n, H + 1, 2)`` per block — is bit-identical to drawing them episode by episode,
so a run's episodes do not depend on how the loop batches them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._rng import RngLike, child_rngs
from privrl.envs.finite import inverse_cdf

__all__ = ["STREAMS", "run_streams", "act", "GymRollout", "tabular_episode"]

#: the streams of an online run, in order
STREAMS = ("env", "policy", "privacy")


def run_streams(rng: RngLike) -> dict[str, np.random.Generator]:
    """The run's ``env``, ``policy`` and ``privacy`` streams (independent children of ``rng``)."""
    return child_rngs(rng, *STREAMS)


def act(policy: np.ndarray, h: int, x: int, act_u: np.ndarray | None) -> int:
    """The action at step ``h`` in state ``x``: ``policy[h, x]`` for a deterministic ``(H, S)`` policy,
    else the inverse-CDF draw of ``policy[h, x]`` (``(H, S, A)`` probabilities) at ``act_u[h]``."""
    if act_u is None:
        return int(policy[h, x])
    cdf = np.cumsum(policy[h, x])
    return min(int(np.searchsorted(cdf, act_u[h] * cdf[-1], side="right")), len(cdf) - 1)


class GymRollout:
    """The user's side on a gym env: runs one episode of a policy. The env is reset with a seed drawn
    from the run's ``env`` stream on the first episode only (then it keeps its own stream)."""

    def __init__(self, horizon: int, env: Any, rng: np.random.Generator) -> None:
        self.horizon, self.env = int(horizon), env
        self._reset_seed: int | None = int(rng.integers(2**31))

    def episode(self, policy: np.ndarray, prng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """States ``(H + 1,)``, actions ``(H,)`` and rewards ``(H,)`` of one episode of ``policy``
        (a stochastic one draws its ``H`` uniforms from ``prng``)."""
        H = self.horizon
        stochastic = policy.ndim == 3
        act_u = prng.random(H) if stochastic else None
        s = np.empty(H + 1, dtype=np.intp)
        a = np.empty(H, dtype=np.intp)
        rew = np.empty(H)
        obs, _ = self.env.reset(seed=self._reset_seed)
        self._reset_seed = None
        s[0] = int(obs)
        for h in range(H):
            a[h] = act(policy, h, s[h], act_u)
            obs, reward, _, _, _ = self.env.step(int(a[h]))
            s[h + 1], rew[h] = int(obs), float(reward)
        return s, a, rew


def tabular_episode(cum_P: np.ndarray, cum_initial: np.ndarray, rewards: np.ndarray, policy: np.ndarray,
                    env_u: np.ndarray, act_u: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One episode on a tabular model from pre-drawn uniforms: ``cum_P`` ``(H, S, A, S)`` cumulative
    transition weights, ``cum_initial`` ``(S,)``, ``rewards`` ``(H, S, A)`` (mean rewards: the learner
    observes them), ``env_u`` ``(H + 1, 2)`` (``env_u[0, 0]`` the initial state's, ``env_u[h + 1, 0]`` the
    transition's at step ``h``), ``act_u`` ``(H,)`` for a stochastic policy. Returns states ``(H + 1,)``,
    actions ``(H,)`` and rewards ``(H,)``."""
    H = cum_P.shape[0]
    s = np.empty(H + 1, dtype=np.intp)
    a = np.empty(H, dtype=np.intp)
    rew = np.empty(H)
    s[0] = int(inverse_cdf(cum_initial, np.asarray(env_u[0, 0])))
    for h in range(H):
        a[h] = act(policy, h, int(s[h]), act_u)
        rew[h] = rewards[h, s[h], a[h]]
        s[h + 1] = int(inverse_cdf(cum_P[h, s[h], a[h]], np.asarray(env_u[h + 1, 0])))
    return s, a, rew
