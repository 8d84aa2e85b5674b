"""The small real-shaped model shared by the streaming and offline-statistics tests: 40 states on
public groups, 6 actions, horizon 6, and the episodes its logging policy logs.

A test module takes its fixtures with ``model = model_fixture()`` and ``padded = padded_fixture(n)``
(pytest collects fixtures from the module's names); :func:`parquet_parts` and :func:`local_ray` serve
the Ray streams."""

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest

from privrl.data.streaming import write_parquet
from privrl.envs import real_shaped

S, A, H = 40, 6, 6


def small_model():
    """The shared model (seed 2)."""
    return real_shaped(n_states=S, n_actions=A, horizon=H, n_levels=4, n_next=12, n_admissible=3,
                       heterogeneity=0.5, rng=2)


def model_fixture():
    """A module-scoped fixture ``model``: :func:`small_model`."""

    @pytest.fixture(scope="module")
    def model():
        return small_model()

    return model


def padded_fixture(n_episodes):
    """A module-scoped fixture ``padded``: ``n_episodes`` episodes of ``model``'s logging policy (seed 5),
    padded to the horizon."""

    @pytest.fixture(scope="module")
    def padded(model):
        return model.sample(model.logging_policy, n_episodes, rng=5, pad_to_horizon=H)

    return padded


def parquet_parts(padded, folder):
    """``padded`` written to Parquet files of 110 episodes each, in row groups of 101 rows: the files and
    the row groups end inside trajectories. Returns the paths."""
    return [write_parquet(padded.subset(np.arange(lo, min(lo + 110, padded.n_episodes))),
                          folder / f"part{lo}.parquet", row_group_size=101, first_episode=lo)
            for lo in range(0, padded.n_episodes, 110)]


@contextlib.contextmanager
def local_ray():
    """Ray on one CPU for the block (the test is skipped without Ray); a Ray already running is used
    and left running."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # the workers unpickle the tests' map functions by reference: their modules import this one, so the
        # tests root must be on the workers' path too (pytest puts it on this process's path only)
        here = str(Path(__file__).resolve().parent)
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
