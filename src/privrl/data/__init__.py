"""Trajectory datasets: validated arrays, collection, files and Minari import/export."""

from privrl.data.minari_io import from_minari, to_minari
from privrl.data.sources import load_dataset
from privrl.data.trajectories import (
    FORMAT_NAME,
    FORMAT_VERSION,
    TrajectoryDataset,
    collect,
    max_episode_length,
    pad_to_horizon,
    rescale_rewards,
    truncate_to_horizon,
)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "TrajectoryDataset", "collect", "load_dataset", "max_episode_length",
           "pad_to_horizon", "rescale_rewards", "truncate_to_horizon", "from_minari", "to_minari"]

