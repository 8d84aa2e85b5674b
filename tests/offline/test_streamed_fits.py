"""APVI / DP-APVI fitted from streamed statistics (privrl.offline.stream_statistics): the statistics
record the route they were built with (state groups, pooling, the visit cap, the horizon), a fit
from them equals the in-memory fit bit for bit on every route, and statistics built on another
route than the fit's are refused (the sensitivity, so the guarantee, depends on the route)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.data.streaming import dataset_chunks
from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.offline import APVI, DPAPVI, DPVAPVI, offline_statistics, route_statistics, stream_statistics
from privrl.offline._common import one_hot_features
from real_shaped_cases import A, H, S, local_ray, model_fixture, padded_fixture, parquet_parts

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-6)
CHUNK_ROWS = (1, 7, 37, 10**6)            # 1 row, inside episodes, not a multiple of H, one chunk


model = model_fixture()
padded = padded_fixture(300)


def _routes(model):
    return {"per-step": {}, "groups": {"state_groups": model.groups}, "pooled": {"stationary": True},
            "groups-pooled-mv1": {"state_groups": model.groups, "stationary": True, "max_visits": 1}}


def _fitted(est):
    return (est.policy_, est.values_, est.q_values_, est.counts_)


def _assert_same_fit(a, b):
    for x, y in zip(_fitted(a), _fitted(b)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("rows", CHUNK_ROWS)
@pytest.mark.parametrize("route", ["per-step", "groups", "pooled", "groups-pooled-mv1"])
def test_a_fit_from_streamed_statistics_equals_the_in_memory_fit(model, padded, rows, route):
    kw = _routes(model)[route]
    stats = stream_statistics(dataset_chunks(padded, rows), S, A, horizon=H, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda: DPAPVI(budget=BUDGET, constants="practical", F_max=1.0, **kw),
                     lambda: APVI(constants="practical", F_max=1.0, **kw)):
            want = make().fit(padded, rng=4)           # logged (0/1 outcome) rewards: the reward sums too
            got = make().fit(stats, rng=4)
            _assert_same_fit(got, want)
            _assert_same_fit(make().fit(stats, reward=model, rng=4), make().fit(padded, reward=model, rng=4))


def test_streamed_statistics_record_their_route(model, padded):
    stats = stream_statistics(dataset_chunks(padded, 37), S, A, horizon=H, state_groups=model.groups,
                              stationary=True, max_visits=1)
    route = stats.route
    assert (route.stationary, route.max_visits, route.horizon, route.n_states) == (True, 1, H, S)
    np.testing.assert_array_equal(route.state_groups, model.groups)
    assert stats.shape == (1, int(model.groups.max()) + 1, A)
    want = route_statistics(padded, S, A, state_groups=model.groups, stationary=True, max_visits=1)
    np.testing.assert_array_equal(stats.keys, want.keys)
    np.testing.assert_array_equal(stats.values, want.values)
    assert offline_statistics(padded, S, A).route.per_step


@pytest.mark.parametrize(("built", "asked", "named"), [
    ({"stationary": True}, {"stationary": True, "max_visits": 1}, "max_visits (None / 1)"),
    ({"stationary": True, "max_visits": 2}, {"stationary": True, "max_visits": 1}, "max_visits (2 / 1)"),
    ({"stationary": True, "max_visits": 1}, {"stationary": True}, "max_visits (1 / None)"),
    ({"stationary": True}, {}, "stationary (True / False)"),
    ({"state_groups": "model"}, {}, "state_groups (a group map / None)"),
    ({"state_groups": "model"}, {"state_groups": "other"}, "state_groups (a group map / a different group map)"),
    ({}, {"stationary": True, "max_visits": 1}, "max_visits (None / 1)"),
])
def test_statistics_of_another_route_are_refused(model, padded, built, asked, named):
    other = np.arange(S) % 3

    def resolve(kw):
        return {k: (model.groups if v == "model" else other if v == "other" else v) for k, v in kw.items()}

    stats = stream_statistics(dataset_chunks(padded, 50), S, A, horizon=H, **resolve(built))
    for est in (DPAPVI(budget=BUDGET, F_max=1.0, **resolve(asked)), APVI(F_max=1.0, **resolve(asked))):
        with pytest.raises(InvalidDataError, match="another route") as info:
            est.fit(stats, rng=0)
        assert named in str(info.value)


def test_per_step_statistics_are_still_grouped_and_pooled_by_the_fit(model, padded):
    kw = {"state_groups": model.groups, "stationary": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = DPAPVI(budget=BUDGET, constants="practical", F_max=1.0, **kw).fit(padded, rng=1)
        got = DPAPVI(budget=BUDGET, constants="practical", F_max=1.0, **kw).fit(offline_statistics(padded, S, A),
                                                                                 rng=1)
    _assert_same_fit(got, want)


def test_routed_statistics_are_validated(model, padded):
    stats = stream_statistics(dataset_chunks(padded, 50), S, A, horizon=H, stationary=True)
    with pytest.raises(InvalidDataError, match="horizon"):
        APVI(stationary=True).fit(stats, reward=np.zeros((H + 1, S, A)))
    with pytest.raises(InvalidDataError, match="per-step statistics"):       # the linear family: per step only
        DPVAPVI(budget=BUDGET, split=False).fit(stats, one_hot_features(S, A))
    with pytest.raises(InvalidParameterError, match="max_visits"):           # the estimators' own rule
        stream_statistics(dataset_chunks(padded, 50), S, A, horizon=H, max_visits=1)
    with pytest.raises(InvalidParameterError, match="horizon"):
        stream_statistics(dataset_chunks(padded, 50), S, A)


def test_the_ray_stream_fits_like_the_in_memory_data(tmp_path, model, padded):
    pytest.importorskip("pyarrow")
    paths = parquet_parts(padded, tmp_path)
    kw = _routes(model)["groups-pooled-mv1"]
    with local_ray():
        stats = stream_statistics(paths, S, A, ray=True, horizon=H, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = DPAPVI(budget=BUDGET, constants="practical", F_max=1.0, **kw).fit(padded, rng=2)
        got = DPAPVI(budget=BUDGET, constants="practical", F_max=1.0, **kw).fit(stats, rng=2)
    _assert_same_fit(got, want)
