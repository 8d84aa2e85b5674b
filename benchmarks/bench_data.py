"""Benchmarks of models and datasets. Prints one JSON line per measurement.

Run: ``.venv/bin/python benchmarks/bench_data.py`` (``make bench`` runs every bench_*.py).
"""

from __future__ import annotations

import os
import sys
import tempfile

import gymnasium as gym
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import emit, measure  # noqa: E402

from privrl.data import TrajectoryDataset, collect  # noqa: E402
from privrl.envs import TabularMDP, from_gymnasium_toy_text  # noqa: E402


def random_model(S: int, A: int, H: int) -> TabularMDP:
    g = np.random.default_rng(0)
    return TabularMDP(g.dirichlet(np.ones(S), size=(H, S, A)), g.random((H, S, A)), horizon=H)


def bench_sample(S: int = 10, A: int = 4, H: int = 20, n_episodes: int = 100_000) -> None:
    m = random_model(S, A, H)
    pi = np.full((S, A), 1.0 / A)
    t = measure(lambda: m.sample(pi, n_episodes, rng=0))
    emit("tabular_sample", S=S, A=A, H=H, n_episodes=n_episodes, seconds=t["seconds"], cpu_seconds=t["cpu_seconds"],
         transitions_per_second=n_episodes * H / t["seconds"], peak_mb=t["peak_mb"])


def bench_solvers(env_id: str = "Taxi-v4", horizon: int = 200, gamma: float = 0.99) -> None:
    env = gym.make(env_id)
    t = measure(lambda: from_gymnasium_toy_text(env, horizon=horizon).optimal_values())
    emit("backward_induction", env=env_id, horizon=horizon, seconds=t["seconds"],
         cpu_seconds=t["cpu_seconds"], peak_mb=t["peak_mb"])
    t = measure(lambda: from_gymnasium_toy_text(env, gamma=gamma).optimal_values())
    emit("policy_iteration", env=env_id, gamma=gamma, seconds=t["seconds"],
         cpu_seconds=t["cpu_seconds"], peak_mb=t["peak_mb"])


def bench_collect_gym(env_id: str = "FrozenLake-v1", n: int = 1000) -> None:
    env = gym.make(env_id)
    t = measure(lambda: collect(env, lambda o, s, rng: int(rng.integers(4)), n, rng=0), memory=False)
    emit("collect_gymnasium", env=env_id, n_trajectories=n, seconds=t["seconds"],
         cpu_seconds=t["cpu_seconds"], peak_mb=t["peak_mb"])


def bench_save_load(n_episodes: int = 10_000, H: int = 20) -> None:
    d = random_model(10, 4, H).sample(np.zeros(10, dtype=int), n_episodes, rng=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "d.npz")
        t = measure(lambda: d.save(path))
        emit("dataset_save", n_transitions=len(d), seconds=t["seconds"],
             cpu_seconds=t["cpu_seconds"], peak_mb=t["peak_mb"])
        t = measure(lambda: TrajectoryDataset.load(path))
        emit("dataset_load", n_transitions=len(d), seconds=t["seconds"],
             cpu_seconds=t["cpu_seconds"], peak_mb=t["peak_mb"])


if __name__ == "__main__":
    bench_sample()
    bench_solvers()
    bench_collect_gym()
    bench_save_load()
