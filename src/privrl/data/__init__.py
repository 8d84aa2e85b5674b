"""Trajectory datasets (issue #2): validated arrays, collection, files and Minari import/export."""

from privrl.data.minari_io import from_minari, to_minari
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

