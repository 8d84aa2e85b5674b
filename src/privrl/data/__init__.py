"""Trajectory datasets (issue #2): validated arrays, collection, files and Minari import/export."""

from privrl.data.sources import load_dataset
from privrl.data.trajectories import (
    FORMAT_NAME,
    FORMAT_VERSION,
    TrajectoryDataset,
    collect,
    pad_to_horizon,
    rescale_rewards,
)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "TrajectoryDataset", "collect", "load_dataset", "pad_to_horizon",
           "rescale_rewards", "from_minari", "to_minari"]


def __getattr__(name: str):
    # Minari is an optional extra: import it only when asked for.
    if name in ("from_minari", "to_minari"):
        from privrl.data import minari_io

        return getattr(minari_io, name)
    raise AttributeError(f"module 'privrl.data' has no attribute {name!r}")
