"""Where a dataset comes from: a privrl ``.npz`` file or a local Minari dataset id.

Kept apart from :mod:`privrl.data.trajectories` (the dataset type) and
:mod:`privrl.data.minari_io` (the Minari conversion, which imports the dataset type), so that no
import runs in a circle.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from privrl._validation import param_error
from privrl.data.minari_io import from_minari
from privrl.data.trajectories import TrajectoryDataset

__all__ = ["load_dataset"]


def load_dataset(source: str | os.PathLike[str], **minari_options: Any) -> TrajectoryDataset:
    """A dataset from a ``.npz`` file written by :meth:`TrajectoryDataset.save`, or from a local
    Minari dataset id (extra ``minari``; never downloads). ``minari_options`` (``reward_bounds``,
    ``n_states``, ``n_actions``) go to :func:`~privrl.data.from_minari`: a Minari dataset not
    written by privrl needs ``reward_bounds``."""
    if not isinstance(source, (str, os.PathLike)):
        raise param_error("source", "load_dataset", "a .npz path or a Minari dataset id", type(source).__name__)
    path = Path(source)
    if path.suffix == ".npz" or path.is_file():
        if minari_options:
            raise param_error("minari_options", "load_dataset", "empty for a .npz file", sorted(minari_options))
        return TrajectoryDataset.load(path)
    return from_minari(str(source), **minari_options)
