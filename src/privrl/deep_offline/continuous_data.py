"""Pendulum-v1 behaviour data (continuous actions), generated locally and written and read as Minari
datasets.

The behaviour policy (:func:`pendulum_expert`) on the state ``(cos θ, sin θ, θ̇)`` (θ = 0 upright) of the
dynamics ``θ̈ = (3g / 2l) sin θ + 3u / (m l²)`` (g = 10, m = l = 1, torque ``|u| ≤ 2``):

* swing-up by energy pumping away from the top: with the energy ``E = θ̇²/2 + 15 cos θ`` (15 at rest
  upright) ``dE/dt = 3 u θ̇``, so ``u = (15 − E) θ̇`` drives ``E`` to the upright's;
* a PD controller near the top (``cos θ > 0.8``): ``u = −(10 θ + 2 θ̇)`` (the linearised closed loop
  ``θ̈ = −15 θ − 6 θ̇`` is stable);
* the torque plus Gaussian noise of std ``noise`` (the data's exploration), clipped to ``[−2, 2]``.

Its noiseless return over 200 steps is about −133 (the random policy's is about −1200).

The transitions are held as :class:`ContinuousTransitions` (flat arrays as a
:class:`~privrl.data.TrajectoryDataset`, but ``(n, 1)`` float actions, which the trajectory dataset — made
for discrete actions — does not hold); :func:`write_minari` stores them with Minari's
``create_dataset_from_buffers`` (``T + 1`` observations per episode, a ``Box`` action space) and
:func:`read_minari` loads them back.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar
from privrl.data.minari_io import env_spec

if TYPE_CHECKING:  # annotations only
    from gymnasium.envs.registration import EnvSpec

__all__ = ["PENDULUM_OBS_BOUNDS", "ContinuousTransitions", "pendulum_expert", "pendulum_dataset", "write_minari",
           "read_minari"]

#: public (low, high) bounds of Pendulum's state: the cosine and sine, and the velocity limit 8
PENDULUM_OBS_BOUNDS = (np.array([-1.0, -1.0, -8.0]), np.array([1.0, 1.0, 8.0]))
MAX_TORQUE = 2.0


@dataclass(frozen=True)
class ContinuousTransitions:
    """Flat transitions of ``E`` episodes with continuous actions: ``observations`` and
    ``next_observations`` ``(n, k)``, ``actions`` ``(n, d)``, ``rewards`` and ``terminals`` ``(n,)``,
    ``episode_starts`` the CSR offsets ``(E + 1,)``."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    episode_starts: np.ndarray

    @property
    def n_episodes(self) -> int:
        return len(self.episode_starts) - 1

    def episode_returns(self) -> np.ndarray:
        """``(E,)``: each episode's undiscounted return."""
        return np.add.reduceat(self.rewards, self.episode_starts[:-1])


def pendulum_expert(noise: float = 0.3) -> Callable[[np.ndarray, np.random.Generator], float]:
    """The swing-up and stabilising policy with Gaussian action noise ``(obs, rng) -> torque``."""
    noise = check_scalar(noise, "noise", owner="pendulum_expert", low=0.0)

    def act(obs: np.ndarray, rng: np.random.Generator) -> float:
        cos, sin, speed = (float(v) for v in obs)
        if cos > 0.8:
            u = -(10.0 * np.arctan2(sin, cos) + 2.0 * speed)
        else:
            u = (15.0 - (0.5 * speed * speed + 15.0 * cos)) * speed
        if noise > 0:
            u += noise * rng.normal()
        return float(np.clip(u, -MAX_TORQUE, MAX_TORQUE))
    return act


def pendulum_dataset(n_episodes: int, *, noise: float = 0.3, max_steps: int = 200,
                     rng: RngLike = None) -> ContinuousTransitions:
    """``n_episodes`` episodes of :func:`pendulum_expert` on ``Pendulum-v1`` (each reset seeded from ``rng``;
    Pendulum never terminates: episodes end at ``max_steps``)."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium

    n_episodes = check_scalar(n_episodes, "n_episodes", owner="pendulum_dataset", kind=int, low=1)
    max_steps = check_scalar(max_steps, "max_steps", owner="pendulum_dataset", kind=int, low=1)
    gen, policy = as_generator(rng), pendulum_expert(noise)
    env = gym.make("Pendulum-v1")
    episodes = []
    try:
        for _ in range(n_episodes):
            episodes.append(_episode(env, policy, max_steps, gen))
    finally:
        env.close()
    return _flat(episodes)


def _episode(env: Any, policy: Any, max_steps: int, gen: np.random.Generator) -> dict[str, np.ndarray]:
    obs, _info = env.reset(seed=int(gen.integers(0, 2**31 - 1)))
    seen, actions, rewards, terminals = [obs], [], [], []
    for _ in range(max_steps):
        u = policy(obs, gen)
        obs, reward, terminated, truncated, _info = env.step(np.array([u], dtype=np.float32))
        seen.append(obs)
        actions.append([u])
        rewards.append(float(reward))
        terminals.append(bool(terminated))
        if terminated or truncated:
            break
    return {"observations": np.asarray(seen, dtype=np.float64), "actions": np.asarray(actions, dtype=np.float64),
            "rewards": np.asarray(rewards), "terminals": np.asarray(terminals, dtype=bool)}


def _flat(episodes: list[dict[str, np.ndarray]]) -> ContinuousTransitions:
    """Episodes of ``T + 1`` observations each as flat transitions."""
    lengths = [len(e["rewards"]) for e in episodes]
    return ContinuousTransitions(
        observations=np.concatenate([e["observations"][:-1] for e in episodes]),
        actions=np.concatenate([e["actions"] for e in episodes]),
        rewards=np.concatenate([e["rewards"] for e in episodes]),
        next_observations=np.concatenate([e["observations"][1:] for e in episodes]),
        terminals=np.concatenate([e["terminals"] for e in episodes]),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def write_minari(data: ContinuousTransitions, dataset_id: str, *, env: str | EnvSpec | None,
                 description: str) -> Any:
    """Store ``data`` as the local Minari dataset ``dataset_id`` (``$MINARI_DATASETS_PATH``; extra ``minari``)
    with the environment ``env`` they were generated on (an id or a spec, for ``recover_environment``:
    :func:`privrl.data.minari_io.env_spec` with their episode cut)."""
    import gymnasium as gym  # lazy: `import privrl` loads no Gymnasium
    import minari  # the 'minari' extra

    starts = data.episode_starts
    buffers = []
    for e in range(data.n_episodes):
        lo, hi = int(starts[e]), int(starts[e + 1])
        term = data.terminals[lo:hi].copy()
        trunc = np.zeros(hi - lo, dtype=bool)
        trunc[-1] = not term[-1]
        buffers.append(minari.data_collector.EpisodeBuffer(
            id=e, observations=np.concatenate([data.observations[lo:hi], data.next_observations[hi - 1:hi]]),
            actions=data.actions[lo:hi].copy(), rewards=data.rewards[lo:hi].copy(), terminations=term,
            truncations=trunc, infos={}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # Minari warns for every optional field left empty
        return minari.create_dataset_from_buffers(
            dataset_id, buffers, env=env, algorithm_name="scripted behaviour policy",
            action_space=gym.spaces.Box(-MAX_TORQUE, MAX_TORQUE, shape=(1,), dtype=np.float64),
            observation_space=gym.spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64),
            description=description)


def read_minari(dataset_id: str) -> ContinuousTransitions:
    """The local Minari dataset ``dataset_id`` (continuous actions) as :class:`ContinuousTransitions`."""
    import minari  # the 'minari' extra

    episodes = [{"observations": np.asarray(ep.observations, dtype=np.float64),
                 "actions": np.asarray(ep.actions, dtype=np.float64).reshape(len(ep.rewards), -1),
                 "rewards": np.asarray(ep.rewards, dtype=np.float64).reshape(-1),
                 "terminals": np.asarray(ep.terminations, dtype=bool).reshape(-1)}
                for ep in minari.load_dataset(dataset_id).iterate_episodes()]
    return _flat(episodes)


def main(args: argparse.Namespace) -> None:
    """``python -m privrl.deep_offline.datasets --env pendulum``: generate and write the Pendulum data."""
    max_steps, dataset_id = args.max_steps or 200, args.id or "privrl/pendulum-expert-v0"
    data = pendulum_dataset(args.episodes, noise=args.noise, max_steps=max_steps, rng=args.seed)
    write_minari(data, dataset_id, env=env_spec("Pendulum-v1", max_episode_steps=max_steps), description=(
        f"Pendulum-v1, energy swing-up + PD stabiliser with Gaussian action noise (std {args.noise}), "
        f"{args.episodes} episodes of {max_steps} steps, seed {args.seed}"))
    print(f"wrote {dataset_id}: {data.n_episodes} episodes, {len(data.rewards)} transitions, mean return "
          f"{float(np.mean(data.episode_returns())):.1f}")
