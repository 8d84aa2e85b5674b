"""APVI / DP-APVI routes for coverage-limited data: public state groups, pooling over steps, the
per-trajectory visit cap (its sensitivity against neighbours and the accountant), the cell threshold,
the behaviour-cloned fallback, and the UtilityWarning on trivial outputs."""

import math
import warnings

import numpy as np
import pytest

from offline.clinic_cases import SMALL
from offline.clinic_cases import quiet as _quiet
from privrl import InvalidDataError, InvalidParameterError, PrivacyBudget, UtilityWarning
from privrl.envs import sparse_tabular
from privrl.offline import APVI, DPAPVI, offline_statistics
from privrl.offline._common import padded_episodes
from privrl.offline.calibration import contribution_sensitivity, count_noise, count_sensitivity
from privrl.offline.grouping import first_visits, group_reward, grouped_statistics
from privrl.privacy import ConstantNoise
from privrl.privacy.calibration import gaussian_mu
from privrl.testing import use_noise

ROUTE = dict(stationary=True, max_visits=1, cell_threshold=3.0, fallback="behaviour")



# ----------------------------------------------------------------------------- sensitivity
@pytest.mark.parametrize("H,c,stationary,expected", [(20, None, False, math.sqrt(40)), (20, 5, False, math.sqrt(40)),
                                                     (20, None, True, math.sqrt(2) * 20), (20, 1, True, math.sqrt(40)),
                                                     (20, 3, True, math.sqrt(2 * (9 * 6 + 4))),
                                                     (4, 10, True, math.sqrt(2) * 4)])
def test_count_sensitivity(H, c, stationary, expected):
    assert count_sensitivity(H, "gaussian", max_visits=c, stationary=stationary) == pytest.approx(expected)
    assert count_sensitivity(H, "laplace", max_visits=c, stationary=stationary) == 2 * H
    assert contribution_sensitivity(1.0, H, "gaussian") == pytest.approx(math.sqrt(2 * H))   # Lemma C.1


@pytest.mark.parametrize("c", [None, 1, 2])
def test_replacing_one_trajectory_moves_the_pooled_counts_by_at_most_the_sensitivity(clinic, c):
    """Grouped, pooled (and capped) counts of random neighbours move by at most Δ₂ in each family;
    a trajectory that stays in one pair against one elsewhere attains it."""
    model, data = clinic
    H, A = model.horizon, model.n_actions
    padded = padded_episodes(data, "test", n_states=26, n_actions=A)
    groups = model.groups

    def families(arrays):
        st = grouped_statistics(arrays, groups, 26, A, stationary=True, max_visits=c)
        return st.n_sa.ravel(), st.counts.ravel()

    base = families(padded)
    other = model.sample(np.full((26, A), 0.2), 200, rng=3, pad_to_horizon=H)
    other = padded_episodes(other, "test", n_states=26, n_actions=A)
    delta = count_sensitivity(H, "gaussian", max_visits=c, stationary=True)
    rng = np.random.default_rng(0)
    for j in range(200):
        i = int(rng.integers(3000))
        nb = {k: v.copy() for k, v in padded.items()}
        for k in nb:
            nb[k][i] = other[k][j]
        for old, new in zip(base, families(nb)):
            assert np.linalg.norm(new - old) <= delta + 1e-9
    # worst case: an absorbed trajectory (H visits of the padding pair) against one that never repeats
    absorbed = np.flatnonzero(padded["observations"][:, 0] >= 24)
    moving = np.flatnonzero(np.all(padded["observations"] < 24, axis=1) & np.all(
        np.diff(groups[padded["observations"]], axis=1) != 0, axis=1))
    if absorbed.size and moving.size:
        nb = {k: v.copy() for k, v in padded.items()}
        for k in nb:
            nb[k][absorbed[0]] = padded[k][moving[0]]
        move = np.linalg.norm(families(nb)[0] - base[0])
        assert move <= delta + 1e-9 and move >= 0.8 * delta


def test_first_visits_keeps_the_first_c_of_each_pair_in_step_order():
    pairs = np.array([[3, 1, 3, 3, 1], [2, 2, 2, 2, 2]])
    assert first_visits(pairs, 1).tolist() == [[True, True, False, False, False], [True, False, False, False, False]]
    assert first_visits(pairs, 2).tolist() == [[True, True, True, False, True], [True, True, False, False, False]]


def test_grouped_statistics_pool_the_per_step_counts(clinic):
    model, data = clinic
    A, G = model.n_actions, model.n_groups
    stats = offline_statistics(data, 26, A)
    padded = padded_episodes(data, "test", n_states=26, n_actions=A)
    pooled = grouped_statistics(padded, model.groups, 26, A, stationary=True)
    from_stats = grouped_statistics(stats, model.groups, 26, A, stationary=True)
    per_state = stats.counts.sum(axis=0)                                  # (S, A, S)
    expected = np.zeros((G, A, G))
    np.add.at(expected, (model.groups[:, None, None], np.arange(A)[None, :, None], model.groups[None, None, :]),
              per_state)
    assert np.array_equal(pooled.counts[0], expected) and np.array_equal(from_stats.counts[0], expected)
    assert np.allclose(pooled.reward_sums, from_stats.reward_sums)
    per_step = grouped_statistics(padded, model.groups, 26, A)
    assert np.array_equal(per_step.counts.sum(axis=0), expected)
    capped = grouped_statistics(padded, model.groups, 26, A, stationary=True, max_visits=1)
    assert capped.n_sa.max() <= 3000 and capped.n_sa.sum() < pooled.n_sa.sum()
    with pytest.raises(InvalidDataError, match="max_visits needs the trajectories"):
        grouped_statistics(stats, model.groups, 26, A, stationary=True, max_visits=1)
    assert group_reward(np.ones((2, 3, 2)), np.array([0, 0, 2])).tolist() == [[[1, 1], [0, 0], [1, 1]]] * 2


# ----------------------------------------------------------------------------- accountant
@pytest.mark.parametrize("c", [None, 1, 3])
def test_route_noise_matches_the_accountant(clinic, c):
    """The ledger of a routed fit has the plan's σ/Δ with the re-derived Δ, spends the budget (tight,
    within [0.99, 1]) and the σ is what the accountant needs for that Δ."""
    model, data = clinic
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    est = _quiet(lambda: DPAPVI(budget=budget, state_groups=model.groups, stationary=True, max_visits=c,
                                split_power=0.0).fit(data, model, rng=0))
    plan = est.count_noise(6, 26, 5, 3000)
    assert plan.sensitivity[0] == pytest.approx(count_sensitivity(6, "gaussian", max_visits=c, stationary=True))
    assert [e.noise_multiplier for e in est.privacy_ledger_.events] == pytest.approx(
        [plan.scale[0] / plan.sensitivity[0], plan.scale[1] / plan.sensitivity[1]])
    assert 0.99 <= est.privacy_ledger_.epsilon(1e-6) <= 1.0 and 0.99 <= est.privacy_spent() <= 1.0
    # even split of μ over two families of equal Δ: σ = Δ·√2/μ
    mu = gaussian_mu(budget)
    assert plan.scale[0] == pytest.approx(plan.sensitivity[0] * math.sqrt(2) / mu, rel=1e-6)
    per_step = count_noise(6, model.n_groups, 5, budget)
    assert plan.scale[0] / per_step.scale[0] == pytest.approx(plan.sensitivity[0] / math.sqrt(12), rel=1e-6)


def test_logged_route_releases_three_families(clinic):
    model, data = clinic
    est = _quiet(lambda: DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), F_max=1.0, state_groups=model.groups,
                                **ROUTE).fit(data, rng=0))
    assert len(est.privacy_ledger_.events) == 3 and 0.99 <= est.privacy_spent() <= 1.0


# ----------------------------------------------------------------------------- parameters and outputs
def test_state_groups_are_validated(clinic):
    model, data = clinic
    with pytest.raises(InvalidParameterError, match="state_groups"):
        APVI(state_groups=np.array([0.5, 1.0]))._validated()
    with pytest.raises(InvalidParameterError, match="state_groups"):
        APVI(state_groups=-np.ones(26))._validated()
    with pytest.raises(InvalidParameterError, match=r"shape \(26,\)"):
        APVI(state_groups=np.zeros(25, dtype=int)).fit(data, model)
    with pytest.raises(InvalidParameterError, match="max_visits"):
        APVI(max_visits=0)._validated()


@pytest.mark.parametrize("make", [lambda g: APVI(state_groups=g),
                                  lambda g: DPAPVI(budget=PrivacyBudget(rho=1.0), state_groups=g)])
def test_group_ids_beyond_the_states_are_refused(clinic, make):
    """A group id >= S would make the grouped grid (and its noise) larger than the states' for
    nothing (ids up to 5250 ran for minutes): refused before the data are read, as privrl plan does."""
    model, data = clinic
    groups = model.groups.copy()
    groups[3] = 26
    with pytest.raises(InvalidParameterError, match=r"'state_groups'.*\[0, 26\).*Got 26 instead"):
        make(groups).fit(data, model)
    with pytest.raises(InvalidParameterError, match=r"'state_groups'.*shape \(26,\)"):
        make(np.zeros(27, dtype=int)).fit(data, model)


def test_max_visits_is_refused_without_pooling(clinic):
    """Per step a trajectory visits a pair at most once: a cap without stationary=True would change
    nothing (neither counts nor sensitivity), so it is refused rather than silently ignored."""
    model, data = clinic
    for est in (APVI(max_visits=1), DPAPVI(budget=PrivacyBudget(rho=1.0), max_visits=1)):
        with pytest.raises(InvalidParameterError, match="'max_visits'.*stationary=True"):
            est.fit(data, model)
    with pytest.raises(InvalidParameterError, match="'max_visits'.*stationary=True"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), max_visits=2).count_noise(6, 26, 5)


def test_group_policy_is_mapped_back_to_states(clinic):
    model, data = clinic
    est = _quiet(lambda: APVI(constants="practical", state_groups=model.groups, stationary=True).fit(data, model))
    assert est.policy_.shape == (6, 26) and est.q_values_.shape == (6, 26, 5) and est.transitions_ is None
    for g in range(model.n_groups):
        members = est.policy_[:, model.groups == g]
        assert np.all(members == members[:, :1])


def test_defaults_keep_the_plain_algorithm(clinic):
    model, data = clinic
    plain = APVI(constants="practical").fit(data, model)
    same = APVI(constants="practical", state_groups=np.arange(26), fallback="tie-break").fit(data, model)
    assert np.array_equal(plain.policy_, same.policy_) and np.allclose(plain.q_values_, same.q_values_)


def test_fallback_breaks_ties_by_the_released_visit_counts(clinic):
    """With fallback='behaviour' a tied greedy step (e.g. every Q-value clipped to 0 where nothing
    is confident) plays the tied action with the largest released visit count (here under zero
    constant noise: the raw counts) instead of the lowest index; untied cells and values are unchanged."""
    model, data = clinic
    budget = PrivacyBudget(rho=0.5)
    make = lambda fb: use_noise(DPAPVI(budget=budget, constants="practical", fallback=fb), ConstantNoise(0.0))  # noqa: E731
    tie = _quiet(lambda: make("tie-break").fit(data, model, rng=0))
    fb = _quiet(lambda: make("behaviour").fit(data, model, rng=0))
    counts = offline_statistics(data, 26, 5).n_sa
    q = tie.q_values_
    tied = q == q.max(axis=-1, keepdims=True)
    several = tied.sum(axis=-1) > 1
    expected = np.where(several, np.argmax(np.where(tied, counts, -np.inf), axis=-1), tie.policy_)
    assert np.array_equal(fb.policy_, expected) and np.any(fb.policy_ != tie.policy_)
    unconfident = tie.counts_.max(axis=-1) <= tie.count_noise(6, 26, 5, 3000).bound[0]
    assert np.array_equal(fb.policy_[unconfident], counts.argmax(axis=-1)[unconfident])
    assert np.array_equal(fb.values_, tie.values_)                   # the fallback never changes the values


# ----------------------------------------------------------------------------- utility
def test_private_group_route_beats_logging_where_plain_dp_apvi_does_not():
    """Fixed seed, a small clinic (S = 100, 10 levels, H = 10), n = 2·10⁴, ε = 1, δ = 10⁻⁶: plain
    DP-APVI returns the tie-break policy (below logging, warned); grouped, pooled, capped counts with
    the cell threshold and the fallback beat the logging policy by more than half the non-private
    group route's gain."""
    model = sparse_tabular(n_states=100, n_levels=10, horizon=10, rng=0)
    logging = model.value(model.logging_policy)
    data = model.sample(model.logging_policy, 20_000, rng=0, pad_to_horizon=10)
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    with pytest.warns(UtilityWarning):
        plain = DPAPVI(budget=budget, constants="practical").fit(data, model, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        route = DPAPVI(budget=budget, constants="practical", state_groups=model.groups, **ROUTE).fit(data, model, rng=0)
        best = APVI(constants="practical", state_groups=model.groups, stationary=True,
                    fallback="behaviour").fit(data, model)
    assert model.value(plain.policy_) < logging
    gain, best_gain = model.value(route.policy_) - logging, model.value(best.policy_) - logging
    assert best_gain > 0.05 and gain > 0.5 * best_gain


def test_fit_command_takes_the_routes(tmp_path):
    """``privrl fit dp-apvi --state-groups g.npy --stationary true --max-visits 1 ...``: the route's
    parameters reach the estimator and the certificate (the groups by their fingerprint)."""
    import json

    from privrl.cli import main

    model = sparse_tabular(**SMALL, rng=1)
    model.sample(model.logging_policy, 500, rng=2, pad_to_horizon=6).save(tmp_path / "d.npz")
    np.save(tmp_path / "r.npy", np.asarray(model.r))
    np.save(tmp_path / "g.npy", model.groups)
    args = ["fit", "dp-apvi", "--data", str(tmp_path / "d.npz"), "--reward", str(tmp_path / "r.npy"),
            "--state-groups", str(tmp_path / "g.npy"), "--stationary", "true", "--max-visits", "1",
            "--cell-threshold", "3", "--fallback", "behaviour", "--epsilon", "1", "--delta", "1e-6",
            "--out", str(tmp_path / "out"), "--seed", "0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        assert main(args) == 0
    params = json.loads((tmp_path / "out" / "certificate.json").read_text())["params"]
    assert params["stationary"] is True and params["max_visits"] == 1 and params["fallback"] == "behaviour"
    assert params["state_groups"]["shape"] == [26]


@pytest.mark.parametrize("secure", [False, True])
def test_a_pooled_step_is_released_and_post_processed_once(clinic, secure):
    """One pooled step planned over H steps is released, made consistent and thresholded once: every
    block of its stream is read once (none re-read at a later h), seeded and secure (where a second
    read of the unkept stream would be refused), and the release invariant holds."""
    from privrl.privacy.draws import release_problems

    if secure:
        pytest.importorskip("opendp")
    model, data = clinic
    est = DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), constants="practical", state_groups=model.groups,
                 secure=secure, **ROUTE)
    _quiet(lambda: est.fit(data, model.r, rng=None if secure else 0))
    assert model.horizon > 1 and est.privacy_ledger_.draws.rereads == 0
    assert release_problems(est.privacy_ledger_) == []
