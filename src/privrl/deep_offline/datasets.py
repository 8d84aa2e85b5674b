"""Behaviour datasets generated locally (no downloads, no pretrained weights) from documented scripted
policies, written and read as Minari datasets.

* ``CartPole-v1`` (4-D states, 2 actions): the expert pushes towards the side the pole falls to,
  ``a = 1[θ + 0.5 θ̇ > 0]`` (a proportional-derivative rule on the pole angle θ, which balances the
  pole for the full 500 steps from every start we tried), played ε-greedily: with probability
  ``epsilon`` a uniformly random action instead (:func:`cartpole_expert`).

:func:`cartpole_dataset` collects episodes (each reset seeded from ``rng``: the same ``rng``, the same
dataset); :func:`write_minari` / :func:`read_minari` store and load them with
:mod:`privrl.data.minari_io` (extra ``minari``). ``python -m privrl.deep_offline.datasets --episodes N
--id privrl/cartpole-expert-v0`` writes one.

The public observation bounds used to scale the network's inputs (:data:`CARTPOLE_OBS_BOUNDS`) are
fixed constants of the task, not statistics of the data.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar
from privrl.data import TrajectoryDataset, collect

__all__ = ["CARTPOLE_OBS_BOUNDS", "cartpole_expert", "cartpole_dataset", "write_minari", "read_minari",
           "mean_return"]

#: public (low, high) scaling bounds of CartPole's state (x, ẋ, θ, θ̇): the termination limits of x
#: and θ, and typical speed ranges (a bound, not a clip: states outside are allowed)
CARTPOLE_OBS_BOUNDS = (np.array([-2.4, -3.0, -0.21, -3.5]), np.array([2.4, 3.0, 0.21, 3.5]))


def cartpole_expert(epsilon: float = 0.1) -> Callable[[np.ndarray, int, np.random.Generator], int]:
    """The ε-greedy scripted CartPole policy ``(obs, step, rng) -> action`` (module docstring)."""
    epsilon = check_scalar(epsilon, "epsilon", owner="cartpole_expert", low=0.0, high=1.0)

    def act(obs: np.ndarray, step: int, rng: np.random.Generator) -> int:
        if epsilon > 0 and rng.random() < epsilon:
            return int(rng.integers(2))
        return int(obs[2] + 0.5 * obs[3] > 0)
    return act


def cartpole_dataset(n_episodes: int, *, epsilon: float = 0.1, max_steps: int = 200,
                     rng: RngLike = None) -> TrajectoryDataset:
    """``n_episodes`` episodes of :func:`cartpole_expert` on ``CartPole-v1``, each cut at ``max_steps``
    (rewards 1 per step, declared bounds [0, 1])."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    env = gym.make("CartPole-v1")
    try:
        data = collect(env, cartpole_expert(epsilon), n_episodes, rng=as_generator(rng), max_steps=max_steps,
                       reward_bounds=(0.0, 1.0))
    finally:
        env.close()
    return data


def write_minari(dataset: TrajectoryDataset, dataset_id: str, *, env_id: str, description: str) -> object:
    """Store ``dataset`` as the local Minari dataset ``dataset_id`` (under ``$MINARI_DATASETS_PATH``)."""
    from privrl.data.minari_io import to_minari  # the 'minari' extra

    return to_minari(dataset, dataset_id, env=env_id, algorithm_name="scripted behaviour policy",
                     description=description)


def read_minari(dataset_id: str) -> TrajectoryDataset:
    """The local Minari dataset ``dataset_id`` as a :class:`~privrl.data.TrajectoryDataset`."""
    from privrl.data.minari_io import from_minari  # the 'minari' extra

    return from_minari(dataset_id)


def main(argv: list[str] | None = None) -> None:
    """Generate a CartPole behaviour dataset and write it as a local Minari dataset."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=0.1, help="probability of a random action")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--id", default="privrl/cartpole-expert-v0", help="Minari dataset id")
    args = parser.parse_args(argv)
    data = cartpole_dataset(args.episodes, epsilon=args.epsilon, max_steps=args.max_steps, rng=args.seed)
    write_minari(data, args.id, env_id="CartPole-v1",
                 description=f"CartPole-v1, scripted expert 1[theta + 0.5 theta_dot > 0], epsilon-greedy "
                             f"(epsilon = {args.epsilon}), {args.episodes} episodes of at most {args.max_steps} "
                             f"steps, seed {args.seed}")
    print(f"wrote {args.id}: {data.n_episodes} episodes, {data.n_transitions} transitions")


if __name__ == "__main__":
    main()


def mean_return(policy: Callable[[np.ndarray], Any], env_id: str, n_episodes: int, *, max_steps: int,
                rng: RngLike = None) -> float:
    """The mean return of ``policy`` (``(n, k) observations -> (n,) actions``, e.g. a fitted
    estimator's ``predict``) over ``n_episodes`` episodes of ``env_id``, each cut at ``max_steps``."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    gen = as_generator(rng)
    env = gym.make(env_id)
    total = 0.0
    try:
        for _ in range(n_episodes):
            obs, _info = env.reset(seed=int(gen.integers(0, 2**31 - 1)))
            for _step in range(max_steps):
                obs, reward, terminated, truncated, _info = env.step(int(policy(obs[None])[0]))
                total += float(reward)
                if terminated or truncated:
                    break
    finally:
        env.close()
    return total / n_episodes
