"""A seeded random episodic MDP for DP-APVI (the paper has no tabular experiment).

``P_h(·|s,a) ~ Dirichlet(concentration · 1_S)`` and ``r_h(s,a) ~ Uniform[0,1]`` i.i.d., drawn from
``rng`` (an int seed — the same instance as ``numpy.random.default_rng(seed)`` — or a Generator) in
that order; uniform initial state. The behaviour policy
:func:`covering_behaviour_policy` mixes an optimal policy with the uniform one,
``µ_h(a|s) = w·1{a = π*_h(s)} + (1 − w)/A``, so every state-action pair is covered
(Assumption 2.1 holds with room to spare).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator, rng_or_deprecated_seed
from privrl._validation import check_scalar
from privrl.envs.gym import TabularEnv
from privrl.envs.linear import LinearMDP

__all__ = ["random_tabular_mdp", "covering_behaviour_policy", "make_random_tabular_env"]


def random_tabular_mdp(*, n_states: int = 10, n_actions: int = 5, horizon: int = 10, rng: RngLike = 0,
                       concentration: float = 0.5, seed: int | None = None) -> LinearMDP:
    """The random MDP as a :class:`LinearMDP` with one-hot features (``to_tabular()`` for a TabularMDP).

    ``rng``: the instance's seed (default 0, the instance of ``privrl/RandomTabularMDP-v0``) or a
    Generator. ``seed`` is the deprecated name of an int ``rng``."""
    owner = "random_tabular_mdp"
    rng = rng_or_deprecated_seed(rng, seed, owner, default=0)
    S = check_scalar(n_states, "n_states", kind=int, owner=owner, low=1)
    A = check_scalar(n_actions, "n_actions", kind=int, owner=owner, low=1)
    H = check_scalar(horizon, "horizon", kind=int, owner=owner, low=1)
    conc = check_scalar(concentration, "concentration", owner=owner, low=0.0, closed="neither")
    gen = as_generator(rng)
    P = gen.dirichlet(np.full(S, conc), size=(H, S, A))
    r = gen.random((H, S, A))
    label = f", seed={int(rng)}" if isinstance(rng, (int, np.integer)) else ""
    return LinearMDP.from_tabular(P, r, name=f"RandomTabularMDP(S={S}, A={A}, H={H}{label})")


def covering_behaviour_policy(optimal_policy: np.ndarray, n_actions: int, weight: float = 0.5) -> np.ndarray:
    """``(H, S, A)``: ``weight`` on the optimal action, the rest uniform over all actions."""
    weight = check_scalar(weight, "weight", owner="covering_behaviour_policy", low=0.0, high=1.0, closed="left")
    pi = np.asarray(optimal_policy)
    mu = np.full((*pi.shape, n_actions), (1.0 - weight) / n_actions)
    np.put_along_axis(mu, pi[..., None], mu.take(0) + weight, axis=-1)
    return mu


def make_random_tabular_env(**kwargs: Any) -> Any:
    """Entry point of ``privrl/RandomTabularMDP-v0`` (keyword arguments, e.g. ``rng=3``, go to
    :func:`random_tabular_mdp`)."""
    return TabularEnv(random_tabular_mdp(**kwargs).to_tabular())
