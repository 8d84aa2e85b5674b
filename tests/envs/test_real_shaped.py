"""The real-shaped task family (privrl.envs.real_shaped): every grid instance measures as its name
says, the grid spans each knob from the clinic shape to the real task's, the knobs move the measured
quantities, the models are exact (sparse planning = dense planning, the exact value = sampled returns)
and seeded."""

import numpy as np
import pytest

from privrl.envs.real_shaped import (
    BANDS,
    INSTANCES,
    REAL_LIKE,
    measure_knobs,
    occupancy,
    real_shaped,
    real_shaped_instance,
)
from privrl.errors import InvalidParameterError

SMALL = dict(n_states=40, n_actions=6, horizon=6, n_levels=4, n_next=12, n_admissible=3)


@pytest.fixture(scope="module")
def knobs():
    return {name: measure_knobs(inst.build()) for name, inst in INSTANCES.items()}


def test_every_instance_measures_as_its_name_says(knobs):
    for name, inst in INSTANCES.items():
        for knob, label in inst.labels.items():
            lo, hi = BANDS[knob][label]
            assert lo <= knobs[name][knob] <= hi, (name, knob, knobs[name][knob])
        assert knobs[name]["optimal_value"] - knobs[name]["logging_value"] > 0.05, name   # a gain to find


def test_the_grid_spans_each_knob_and_holds_the_real_shaped_task(knobs):
    assert len(INSTANCES) >= 6
    for knob, bands in BANDS.items():
        labels = {inst.labels[knob] for inst in INSTANCES.values()}
        extremes = {"agreement": {"high", "low"}, "density": {"sparse", "dense"}, "spread": {"narrow", "wide"},
                    "clone_quality": {"good", "weak"}}[knob]
        assert extremes <= labels <= set(bands), knob
    real = real_shaped_instance(REAL_LIKE)
    assert (real.n_states, real.n_actions, real.horizon) == (700, 25, 20)
    k = knobs[REAL_LIKE]
    # the held-out task: ~26 % agreement, ~82 next states, ~13 actions, a clone barely better than logging
    assert 0.2 <= k["agreement"] <= 0.3 and 78 <= k["density"] <= 86 and k["spread"] == pytest.approx(13)
    assert 0.0 < k["clone_quality"] < 0.25
    # the clinic shape: groups describe the dynamics, sparse, 4 actions, the clone nearly optimal
    clinic = knobs["high-agreement/sparse/narrow/good-clone"]
    assert clinic["agreement"] == 1.0 and clinic["density"] <= 10 and clinic["clone_quality"] > 0.99


def test_the_knobs_move_what_they_name():
    base = dict(SMALL, n_states=200, n_levels=5, n_admissible=6, horizon=10)
    agreement = [measure_knobs(real_shaped(**base, heterogeneity=h))["agreement"] for h in (0.0, 0.5, 1.0)]
    assert agreement[0] == 1.0 and agreement[0] > agreement[1] > agreement[2]
    assert measure_knobs(real_shaped(**dict(base, n_next=8)))["density"] < measure_knobs(
        real_shaped(**dict(base, n_next=30)))["density"]
    assert measure_knobs(real_shaped(**dict(base, n_admissible=2)))["spread"] == pytest.approx(2)
    clone = [measure_knobs(real_shaped(**base, heterogeneity=0.5, habit_rank=r))["clone_quality"]
             for r in (0.0, 1.0)]
    assert clone[0] < 0 < 0.9 < clone[1] <= 1.0   # the worst / the best-quality habit


def test_sparse_planning_equals_dense_planning():
    m = real_shaped(**SMALL, heterogeneity=0.7, habit_rank=0.5, rng=4)
    dense = m.to_tabular()
    np.testing.assert_allclose(m.optimal_q(), dense.optimal_q(), rtol=0, atol=1e-12)
    for pol in (m.logging_policy, m.logging_policy.argmax(axis=1)):
        assert m.value(pol) == pytest.approx(dense.value(pol), abs=1e-12)


def test_exact_value_and_occupancy_match_sampled_episodes():
    m = real_shaped(**SMALL, heterogeneity=0.5, rng=1)
    data = m.sample(m.logging_policy, 20000, rng=7)
    returns = np.add.reduceat(data.rewards, data.episode_starts[:-1])
    # 20000 Bernoulli outcomes: standard error <= 0.0036; 4 standard errors
    assert returns.mean() == pytest.approx(m.value(m.logging_policy), abs=0.015)
    d = occupancy(m, m.logging_policy)
    visits = np.bincount(data.observations, minlength=m.n_states) / 20000
    np.testing.assert_allclose(visits, d.sum(axis=0), atol=0.02)


def test_seeded_and_validated():
    a, b, c = (real_shaped(**SMALL, rng=s) for s in (3, 3, 4))
    for name in ("next_states", "probs", "logging_policy", "groups"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.probs, c.probs)
    grid = INSTANCES[REAL_LIKE].build()
    np.testing.assert_array_equal(grid.probs, real_shaped_instance(REAL_LIKE).probs)
    with pytest.raises(InvalidParameterError, match="n_next"):
        real_shaped(**dict(SMALL, n_next=3))
    with pytest.raises(InvalidParameterError, match="heterogeneity"):
        real_shaped(**SMALL, heterogeneity=1.5)
    with pytest.raises(InvalidParameterError, match="name"):
        real_shaped_instance("clinic")
