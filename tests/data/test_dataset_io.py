"""save/load: .npz with a JSON header; atomic writes; corrupt or foreign files raise."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

import privrl.data.trajectories as trajectories
from privrl.data import FORMAT_NAME, FORMAT_VERSION, TrajectoryDataset, load_dataset
from privrl.errors import InvalidDataError, InvalidParameterError


@pytest.fixture
def dataset():
    g = np.random.default_rng(0)
    n = 12
    return TrajectoryDataset(
        g.integers(0, 4, n), g.integers(0, 2, n), g.random(n) * 2 - 1, g.integers(0, 4, n), [0, 4, 8, 12],
        terminals=np.r_[np.zeros(11, bool), True], n_states=4, n_actions=2, horizon=4,
        reward_bounds=(-1.0, 1.0), metadata={"env": "test", "seed": 3},
    )


def assert_same(a: TrajectoryDataset, b: TrajectoryDataset):
    for k in ("observations", "actions", "rewards", "next_observations", "episode_starts", "terminals"):
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
    for k in ("n_states", "n_actions", "horizon", "reward_bounds", "metadata"):
        assert getattr(a, k) == getattr(b, k)


def test_round_trip(tmp_path, dataset):
    path = dataset.save(tmp_path / "d.npz")
    assert path == tmp_path / "d.npz"
    assert_same(dataset, TrajectoryDataset.load(path))
    assert_same(dataset, load_dataset(str(path)))
    assert os.listdir(tmp_path) == ["d.npz"]  # no temporary file left behind


def test_round_trip_features_without_terminals_or_bounds(tmp_path):
    g = np.random.default_rng(1)
    d = TrajectoryDataset(g.normal(size=(5, 3)), [0, 1, 0, 1, 0], g.normal(size=5), g.normal(size=(5, 3)), [0, 2, 5],
                          reward_bounds=None)
    assert_same(d, TrajectoryDataset.load(d.save(tmp_path / "f.data")))  # suffix kept as given


def test_header_records_format_and_version(tmp_path, dataset):
    with np.load(dataset.save(tmp_path / "d.npz")) as z:
        header = json.loads(str(z["__privrl_header__"]))
    assert header["format"] == FORMAT_NAME == "privrl.TrajectoryDataset"
    assert header["version"] == FORMAT_VERSION == 1
    assert header["reward_bounds"] == [-1.0, 1.0] and header["horizon"] == 4


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path, dataset, monkeypatch):
    path = dataset.save(tmp_path / "d.npz")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(trajectories.np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        dataset.subset([0]).save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["d.npz"]


def test_truncated_file(tmp_path, dataset):
    path = dataset.save(tmp_path / "d.npz")
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) - 30, 10):
        bad = tmp_path / f"cut{cut}.npz"
        bad.write_bytes(data[:cut])
        with pytest.raises(InvalidDataError, match=r"not a valid privrl.TrajectoryDataset archive"):
            TrajectoryDataset.load(bad)


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.npz"
    path.write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(InvalidDataError, match="cannot read it"):
        TrajectoryDataset.load(path)


def test_corrupted_member_bytes(tmp_path, dataset):
    # flip bytes inside the stored rewards array: the zip CRC check fails
    path = dataset.save(tmp_path / "d.npz")
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("rewards.npy")
    start = info.header_offset + 30 + len(info.filename) + 140
    raw[start : start + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    with pytest.raises(InvalidDataError, match="not a valid"):
        TrajectoryDataset.load(path)


def test_single_npy_file(tmp_path):
    path = tmp_path / "a.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.arange(3))
    with pytest.raises(InvalidDataError, match="single .npy array"):
        TrajectoryDataset.load(path)


def test_foreign_npz(tmp_path):
    path = tmp_path / "foreign.npz"
    np.savez(path, x=np.arange(3))
    with pytest.raises(InvalidDataError, match="no privrl header"):
        TrajectoryDataset.load(path)


def write_with_header(path, dataset, **changes):
    arrays = {**dataset._arrays(), "episode_starts": dataset.episode_starts}
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "n_states": 4, "n_actions": 2,
              "horizon": 4, "reward_bounds": [-1.0, 1.0], "metadata": {}}
    header.update(changes.pop("header", {}))
    for k in changes.pop("drop", ()):
        arrays.pop(k)
    arrays.update(changes)
    arrays["__privrl_header__"] = np.array(header if isinstance(header, str) else json.dumps(header))
    np.savez(path, **arrays)
    return path


def test_missing_fields(tmp_path, dataset):
    path = write_with_header(tmp_path / "m.npz", dataset, drop=["rewards", "actions"])
    with pytest.raises(InvalidDataError, match=r"arrays \['actions', 'rewards'\] are missing"):
        TrajectoryDataset.load(path)


def test_wrong_format_version(tmp_path, dataset):
    path = write_with_header(tmp_path / "v.npz", dataset, header={"version": 99})
    with pytest.raises(InvalidDataError, match="format version 99 is not supported"):
        TrajectoryDataset.load(path)


def test_wrong_format_name(tmp_path, dataset):
    path = write_with_header(tmp_path / "n.npz", dataset, header={"format": "other"})
    with pytest.raises(InvalidDataError, match="its format is 'other'"):
        TrajectoryDataset.load(path)


def test_header_not_json(tmp_path, dataset):
    arrays = {**dataset._arrays(), "episode_starts": dataset.episode_starts, "__privrl_header__": np.array("{not json")}
    np.savez(tmp_path / "j.npz", **arrays)
    with pytest.raises(InvalidDataError, match="not valid JSON"):
        TrajectoryDataset.load(tmp_path / "j.npz")


def test_pickled_object_arrays_are_refused(tmp_path, dataset):
    path = write_with_header(tmp_path / "p.npz", dataset, rewards=np.array([object()] * 12))
    with pytest.raises(InvalidDataError, match="cannot read it"):
        TrajectoryDataset.load(path)


def test_contents_failing_validation(tmp_path, dataset):
    path = write_with_header(tmp_path / "c.npz", dataset, rewards=np.full(12, 5.0))
    with pytest.raises(InvalidDataError, match=r"fail validation.*'rewards' field.*reward_bounds"):
        TrajectoryDataset.load(path)


def test_missing_file_and_bad_source(tmp_path):
    with pytest.raises(FileNotFoundError):
        TrajectoryDataset.load(tmp_path / "absent.npz")
    with pytest.raises(FileNotFoundError):
        load_dataset(str(tmp_path / "absent.npz"))
    with pytest.raises(InvalidParameterError, match="'source' parameter of load_dataset"):
        load_dataset(3)
