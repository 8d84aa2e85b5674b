"""Behaviour datasets generated locally (no downloads, no pretrained weights) from documented scripted
policies, written and read as Minari datasets.

* ``CartPole-v1`` (4-D states, 2 actions): the expert pushes towards the side the pole falls to,
  ``a = 1[θ + 0.5 θ̇ > 0]`` (a proportional-derivative rule on the pole angle θ, which balances the
  pole for the full 500 steps from every start we tried), played ε-greedily: with probability
  ``epsilon`` a uniformly random action instead (:func:`cartpole_expert`).
* ``Acrobot-v1`` (6-D states ``cos θ₁, sin θ₁, cos θ₂, sin θ₂, θ̇₁, θ̇₂``; actions 0, 1, 2 = torque −1, 0,
  +1 on the second joint): energy pumping, the torque in the direction of the second joint's velocity,
  ``a = 2 if θ̇₂ > 0 else 0`` (the injected power ``τ θ̇₂`` is then positive; it reaches the goal height in
  about 80 steps), played ε-greedily (:func:`acrobot_expert`).
* ``Pendulum-v1`` (continuous torque): an energy-based swing-up with a stabilising PD controller near the
  top and Gaussian action noise — :mod:`privrl.deep_offline.continuous_data` (its transitions are not a
  :class:`~privrl.data.TrajectoryDataset`, which holds discrete actions).

:func:`cartpole_dataset` and :func:`acrobot_dataset` collect episodes (each reset seeded from ``rng``: the
same ``rng``, the same dataset); :func:`write_minari` / :func:`read_minari` store and load them with
:mod:`privrl.data.minari_io` (extra ``minari``). One command writes each::

    python -m privrl.deep_offline.datasets --env cartpole --episodes N --id privrl/cartpole-expert-v0
    python -m privrl.deep_offline.datasets --env acrobot --episodes N --id privrl/acrobot-expert-v0
    python -m privrl.deep_offline.datasets --env pendulum --episodes N --id privrl/pendulum-expert-v0

The public observation bounds used to scale the networks' inputs (:data:`CARTPOLE_OBS_BOUNDS`,
:data:`ACROBOT_OBS_BOUNDS`) are fixed constants of the tasks, not statistics of the data.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar
from privrl.data import TrajectoryDataset, collect
from privrl.data.minari_io import env_spec

__all__ = ["CARTPOLE_OBS_BOUNDS", "ACROBOT_OBS_BOUNDS", "cartpole_expert", "cartpole_dataset", "acrobot_expert",
           "acrobot_dataset", "write_minari", "read_minari", "mean_return"]

#: public (low, high) scaling bounds of CartPole's state (x, ẋ, θ, θ̇): the termination limits of x
#: and θ, and typical speed ranges (a bound, not a clip: states outside are allowed)
CARTPOLE_OBS_BOUNDS = (np.array([-2.4, -3.0, -0.21, -3.5]), np.array([2.4, 3.0, 0.21, 3.5]))
#: public (low, high) bounds of Acrobot's state: the cosines and sines, and the environment's velocity
#: limits 4π and 9π
ACROBOT_OBS_BOUNDS = (np.array([-1.0, -1.0, -1.0, -1.0, -4 * np.pi, -9 * np.pi]),
                      np.array([1.0, 1.0, 1.0, 1.0, 4 * np.pi, 9 * np.pi]))


def cartpole_expert(epsilon: float = 0.1) -> Callable[[np.ndarray, int, np.random.Generator], int]:
    """The ε-greedy scripted CartPole policy ``(obs, step, rng) -> action`` (module docstring)."""
    epsilon = check_scalar(epsilon, "epsilon", owner="cartpole_expert", low=0.0, high=1.0)

    def act(obs: np.ndarray, step: int, rng: np.random.Generator) -> int:
        if epsilon > 0 and rng.random() < epsilon:
            return int(rng.integers(2))
        return int(obs[2] + 0.5 * obs[3] > 0)
    return act


def acrobot_expert(epsilon: float = 0.1) -> Callable[[np.ndarray, int, np.random.Generator], int]:
    """The ε-greedy energy-pumping Acrobot policy ``(obs, step, rng) -> action`` (module docstring)."""
    epsilon = check_scalar(epsilon, "epsilon", owner="acrobot_expert", low=0.0, high=1.0)

    def act(obs: np.ndarray, step: int, rng: np.random.Generator) -> int:
        if epsilon > 0 and rng.random() < epsilon:
            return int(rng.integers(3))
        return 2 if obs[5] > 0 else 0
    return act


def _collected(env_id: str, policy: Any, n_episodes: int, max_steps: int, reward_bounds: tuple[float, float],
               rng: RngLike) -> TrajectoryDataset:
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    env = gym.make(env_id)
    try:
        return collect(env, policy, n_episodes, rng=as_generator(rng), max_steps=max_steps,
                       reward_bounds=reward_bounds)
    finally:
        env.close()


def cartpole_dataset(n_episodes: int, *, epsilon: float = 0.1, max_steps: int = 200,
                     rng: RngLike = None) -> TrajectoryDataset:
    """``n_episodes`` episodes of :func:`cartpole_expert` on ``CartPole-v1``, each cut at ``max_steps``
    (rewards 1 per step, declared bounds [0, 1])."""
    return _collected("CartPole-v1", cartpole_expert(epsilon), n_episodes, max_steps, (0.0, 1.0), rng)


def acrobot_dataset(n_episodes: int, *, epsilon: float = 0.1, max_steps: int = 500,
                    rng: RngLike = None) -> TrajectoryDataset:
    """``n_episodes`` episodes of :func:`acrobot_expert` on ``Acrobot-v1``, each cut at ``max_steps``
    (rewards −1 per step until the goal, declared bounds [−1, 0]; reaching the goal is terminal)."""
    return _collected("Acrobot-v1", acrobot_expert(epsilon), n_episodes, max_steps, (-1.0, 0.0), rng)


def write_minari(dataset: TrajectoryDataset, dataset_id: str, *, env_id: str, max_steps: int,
                 description: str) -> object:
    """Store ``dataset`` as the local Minari dataset ``dataset_id`` (under ``$MINARI_DATASETS_PATH``), recording
    ``env_id`` with the data's episode cut ``max_steps`` as its time limit (``recover_environment`` gives the
    environment the returns are on)."""
    from privrl.data.minari_io import to_minari  # the 'minari' extra

    return to_minari(dataset, dataset_id, env=env_spec(env_id, max_episode_steps=max_steps),
                     algorithm_name="scripted behaviour policy", description=description)


def read_minari(dataset_id: str) -> TrajectoryDataset:
    """The local Minari dataset ``dataset_id`` as a :class:`~privrl.data.TrajectoryDataset`."""
    from privrl.data.minari_io import from_minari  # the 'minari' extra

    return from_minari(dataset_id)


#: per --env: the Gymnasium id, the collector, the default episode cut and id, and the policy's description
_ENVS: dict[str, tuple[str, Any, int, str, str]] = {
    "cartpole": ("CartPole-v1", cartpole_dataset, 200, "privrl/cartpole-expert-v0",
                 "scripted expert 1[theta + 0.5 theta_dot > 0], epsilon-greedy"),
    "acrobot": ("Acrobot-v1", acrobot_dataset, 500, "privrl/acrobot-expert-v0",
                "energy pumping, torque sign(theta2_dot), epsilon-greedy"),
}


def main(argv: list[str] | None = None) -> None:
    """Generate a behaviour dataset (CartPole, Acrobot or Pendulum) and write it as a local Minari dataset."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--env", choices=(*_ENVS, "pendulum"), default="cartpole")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=0.1, help="probability of a random action (discrete)")
    parser.add_argument("--noise", type=float, default=0.3, help="std of the Gaussian action noise (pendulum)")
    parser.add_argument("--max-steps", type=int, default=None, help="episode cut (default: 200, 500, 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--id", default=None, help="Minari dataset id (default: privrl/<env>-expert-v0)")
    args = parser.parse_args(argv)
    if args.env == "pendulum":
        from privrl.deep_offline import continuous_data  # loaded only for this environment

        continuous_data.main(args)
        return
    env_id, make, steps, default_id, policy = _ENVS[args.env]
    max_steps, dataset_id = args.max_steps or steps, args.id or default_id
    data = make(args.episodes, epsilon=args.epsilon, max_steps=max_steps, rng=args.seed)
    write_minari(data, dataset_id, env_id=env_id, max_steps=max_steps,
                 description=f"{env_id}, {policy} (epsilon = {args.epsilon}), {args.episodes} episodes of at most "
                             f"{max_steps} steps, seed {args.seed}")
    print(f"wrote {dataset_id}: {data.n_episodes} episodes, {data.n_transitions} transitions, mean return "
          f"{float(np.sum(data.rewards)) / data.n_episodes:.1f}")


if __name__ == "__main__":
    main()


def mean_return(policy: Callable[[np.ndarray], Any], env_id: str, n_episodes: int, *, max_steps: int,
                rng: RngLike = None) -> float:
    """The mean return of ``policy`` (``(n, k) observations -> (n,) actions``, or ``(n, d)`` continuous
    actions, e.g. a fitted estimator's ``predict``) over ``n_episodes`` episodes of ``env_id``, each cut at
    ``max_steps``."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    gen = as_generator(rng)
    env = gym.make(env_id)
    total = 0.0
    try:
        for _ in range(n_episodes):
            obs, _info = env.reset(seed=int(gen.integers(0, 2**31 - 1)))
            for _step in range(max_steps):
                action = np.asarray(policy(obs[None])[0])
                obs, reward, terminated, truncated, _info = env.step(int(action) if action.ndim == 0 else action)
                total += float(reward)
                if terminated or truncated:
                    break
    finally:
        env.close()
    return total / n_episodes
