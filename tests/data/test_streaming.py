"""Streamed sufficient statistics (privrl.data.streaming): from chunks cut anywhere — inside
trajectories too — the accumulated statistics equal the in-memory path's (offline_statistics, the
grouped / pooled / capped route, Monte Carlo's return statistics): counts identical, sums to rounding.
Readers: in memory, Parquet (pyarrow), Minari; the Ray Data map/reduce gives the same counts."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from privrl.data import TrajectoryDataset
from privrl.data.streaming import (
    CountReducer,
    SumReducer,
    complete_episodes,
    dataset_chunks,
    minari_chunks,
    parquet_chunks,
    parquet_declarations,
    ray_statistics,
    stream_statistics,
    write_parquet,
)
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.offline import offline_statistics
from privrl.offline._common import padded_episodes
from privrl.offline.grouping import grouped_statistics
from privrl.policy_evaluation import MonteCarlo
from real_shaped_cases import A, H, S, local_ray, model_fixture, padded_fixture, parquet_parts

CHUNK_ROWS = (1, 7, 37, 120, 10**6)        # 1 row, inside episodes, not a multiple of H, one chunk


model = model_fixture()
padded = padded_fixture(300)


def _declared(data):
    return {"n_states": data.n_states, "n_actions": data.n_actions, "horizon": data.horizon}


def assert_same_statistics(got, want):
    np.testing.assert_array_equal(got.keys, want.keys)
    np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(got.n_sa, want.n_sa)
    np.testing.assert_allclose(got.reward_sums, want.reward_sums, rtol=0, atol=1e-12)
    assert (got.shape, got.n_episodes, got.max_reward, got.max_return) == (
        want.shape, want.n_episodes, want.max_reward, want.max_return)


def _offline(batch):
    return offline_statistics(batch, S, A)


def _routed(groups, batch):
    """The grouped, pooled, one-visit-per-pair statistics DP-APVI's real-size route fits."""
    return grouped_statistics(padded_episodes(batch, "test", n_states=S, n_actions=A), groups, S, A,
                              stationary=True, max_visits=1)


@pytest.mark.parametrize("rows", CHUNK_ROWS)
@pytest.mark.parametrize("dense_cells", [0, 1 << 25])       # sparse merging / a dense table
def test_streamed_offline_statistics_equal_the_in_memory_ones(padded, rows, dense_cells):
    want = offline_statistics(padded, S, A)
    got = stream_statistics(dataset_chunks(padded, rows), _offline, reducer=CountReducer(dense_cells),
                            **_declared(padded))
    assert_same_statistics(got, want)


@pytest.mark.parametrize("rows", CHUNK_ROWS)
def test_per_trajectory_caps_see_whole_trajectories_across_chunks(model, padded, rows):
    routed = functools.partial(_routed, model.groups)
    want = routed(padded)
    got = stream_statistics(dataset_chunks(padded, rows), routed, **_declared(padded))
    assert_same_statistics(got, want)
    # the cap binds here (a trajectory revisits a (group, action) pair), so a stream that capped
    # chunk fragments instead of trajectories would keep more visits than the in-memory route
    uncapped = grouped_statistics(padded_episodes(padded, "test", n_states=S, n_actions=A), model.groups, S, A,
                                  stationary=True)
    assert uncapped.values.sum() > want.values.sum()


def _returns(estimator, batch):
    return estimator._statistics(batch, estimator._validated())[0]


@pytest.mark.parametrize("rows", [1, 5, 64, 10**6])
def test_streamed_monte_carlo_statistics_equal_the_estimators(model, rows):
    # variable-length episodes (ending on success / failure), group values with a per-trajectory cap
    data = model.sample(model.logging_policy, 250, rng=9)
    assert data.horizon is None and len(set(data.episode_lengths)) > 1
    est = MonteCarlo(groups=model.groups, max_groups_per_trajectory=2, F_max=1.0)
    want = _returns(est, data)
    got = stream_statistics(dataset_chunks(data, rows), functools.partial(_returns, est), reducer=SumReducer(),
                            n_states=S, n_actions=A, max_episode_length=H)
    assert got.n_trajectories == want.n_trajectories == 250
    np.testing.assert_array_equal(got.group_counts, want.group_counts)
    np.testing.assert_allclose(got.group_sums, want.group_sums, rtol=0, atol=1e-9)
    assert got.return_sum == pytest.approx(want.return_sum, abs=1e-9)


def test_complete_episodes_yields_whole_episodes_in_order(padded):
    batches = list(complete_episodes(dataset_chunks(padded, 13), **_declared(padded)))
    assert all(b.horizon == H for b in batches)
    assert sum(b.n_episodes for b in batches) == padded.n_episodes
    joined = TrajectoryDataset.concatenate(batches)
    for key in ("observations", "actions", "rewards", "next_observations", "episode_starts"):
        np.testing.assert_array_equal(getattr(joined, key), getattr(padded, key))


def test_a_broken_stream_is_an_error(padded):
    chunks = list(dataset_chunks(padded, 50))
    with pytest.raises(InvalidDataError, match="steps"):               # a chunk out of place
        stream_statistics([chunks[1], chunks[0]], _offline, **_declared(padded))
    aligned = list(dataset_chunks(padded, 8 * H))                      # whole episodes, out of order
    with pytest.raises(InvalidDataError, match="increase"):
        stream_statistics([aligned[1], aligned[0]], _offline, **_declared(padded))
    dropped = {k: np.delete(v, 3) for k, v in chunks[0].items()}        # a transition lost
    with pytest.raises(InvalidDataError, match="steps"):
        stream_statistics([dropped], _offline, **_declared(padded))
    no_steps = {k: v for k, v in dropped.items() if k != "step"}       # without steps: the horizon catches it
    with pytest.raises(InvalidDataError):
        stream_statistics([no_steps], _offline, **_declared(padded))
    bad = dict(chunks[0], reward=np.where(np.arange(50) == 4, 2.0, chunks[0]["reward"]))
    with pytest.raises(InvalidDataError):                              # outside the declared reward bounds
        stream_statistics([bad], _offline, **_declared(padded))
    with pytest.raises(InvalidParameterError, match="n_state"):
        stream_statistics(chunks, _offline, n_state=S)
    with pytest.raises(InvalidDataError, match="no complete episode"):
        stream_statistics([], _offline, **_declared(padded))


def test_parquet_round_trip(tmp_path, padded):
    pytest.importorskip("pyarrow")
    path = write_parquet(padded, tmp_path / "log.parquet", row_group_size=97)
    assert parquet_declarations(path) == {**_declared(padded), "reward_bounds": [0.0, 1.0],
                                          "max_episode_length": None}
    got = stream_statistics(parquet_chunks(path, batch_rows=41), _offline, **_declared(padded))
    assert_same_statistics(got, offline_statistics(padded, S, A))
    # written piece by piece (a log too large for memory), read back as one stream
    halves = [padded.subset(np.arange(0, 120)), padded.subset(np.arange(120, padded.n_episodes))]
    path2 = write_parquet(iter(halves), tmp_path / "pieces.parquet", row_group_size=50)
    got = stream_statistics(parquet_chunks([path2], batch_rows=1000), _offline, **_declared(padded))
    assert_same_statistics(got, offline_statistics(padded, S, A))


def test_minari_stream(tmp_path, monkeypatch, padded):
    pytest.importorskip("minari")
    from privrl.data import to_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to_minari(padded, "privrl/stream/test-v0")
        got = stream_statistics(minari_chunks("privrl/stream/test-v0", episodes=17), _offline, **_declared(padded))
    assert_same_statistics(got, offline_statistics(padded, S, A))


def test_ray_map_reduce_gives_the_same_counts(tmp_path, model, padded):
    pytest.importorskip("pyarrow")
    paths = parquet_parts(padded, tmp_path)           # blocks end inside trajectories
    routed = functools.partial(_routed, model.groups)
    with local_ray():
        got = ray_statistics(paths, _offline, **_declared(padded))
        got_routed = ray_statistics(paths, routed, **_declared(padded))
    assert_same_statistics(got, offline_statistics(padded, S, A))
    assert_same_statistics(got_routed, routed(padded))
