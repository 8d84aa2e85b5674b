"""DP-APVI / APVI (Qiao & Wang 2023, Algorithm 1): calibration, post-processing, utility."""

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from privrl import InvalidDataError, InvalidParameterError, Ledger, PrivacyBudget
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.offline import APVI, DPAPVI
from privrl.offline.calibration import count_noise
from privrl.offline.tabular import (
    consistent_counts,
    count_statistics,
    dp_apvi_from_counts,
    private_transitions,
    release_counts,
)
from privrl.privacy import Releaser, make_noise


def _sound(H, S, A, rho=None, epsilon=None, delta=0.05):
    budget = PrivacyBudget(rho=rho) if rho is not None else PrivacyBudget(epsilon=epsilon)
    return count_noise(H, S, A, budget, calibration="sound", delta_fail=delta)


def gaussian_noise_bound(H, S, A, rho, delta):
    return _sound(H, S, A, rho=rho, delta=delta).bound[0]


def laplace_noise_bound(H, S, A, epsilon, delta):
    return _sound(H, S, A, epsilon=epsilon, delta=delta).bound[0]


def _release(n_sa, n_sas, rng, **budget):
    H, S, A = n_sa.shape
    led = Ledger()
    a, b = release_counts(n_sa, n_sas, _sound(H, S, A, **budget), Releaser(make_noise(rng), led))
    return a, b, list(led.events)


@pytest.fixture(scope="module")
def small():
    mdp = random_tabular_mdp(n_states=3, n_actions=2, horizon=4, rng=3)
    mu = covering_behaviour_policy(mdp.optimal_policy(), 2)
    return mdp, mu


# ----------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("rho,var", [(1.0, 40.0), (0.1, 400.0), (5.0, 8.0), (25.0, 1.6)])
def test_gaussian_count_noise_variance(rho, var):
    plan = _sound(20, 2, 100, rho=rho)
    assert plan.scale[0] ** 2 == pytest.approx(var, rel=1e-12) and plan.scale[1] == plan.scale[0]
    assert plan.sensitivity[0] == pytest.approx(math.sqrt(40.0))


@pytest.mark.parametrize("H,rho", [(1, 0.3), (20, 1.0), (7, 25.0)])
def test_gaussian_counts_spend_exactly_rho(H, rho):
    n_sa, n_sas = np.zeros((H, 2, 2)), np.zeros((H, 2, 2, 2))
    _, _, events = _release(n_sa, n_sas, 0, rho=rho)
    assert Ledger(events).zcdp_rho() == pytest.approx(rho, rel=1e-12)


def test_dpapvi_ledger_matches_budget(small):
    mdp, mu = small
    data = mdp.sample(mu, 50, rng=0)
    est = DPAPVI(budget=PrivacyBudget(rho=0.7)).fit(data, mdp.rewards, rng=1)
    assert est.privacy_ledger_.zcdp_rho() == pytest.approx(0.7, rel=1e-8)
    from privrl.privacy import zcdp_to_approx_dp
    assert est.privacy_spent(1e-5) <= zcdp_to_approx_dp(0.7, 1e-5) + 1e-9


def test_laplace_scale_and_epsilon(small):
    assert _sound(20, 2, 100, epsilon=1.0).scale == (80.0, 80.0)
    mdp, mu = small
    data = mdp.sample(mu, 50, rng=0)
    est = DPAPVI(budget=PrivacyBudget(epsilon=2.0), calibration="sound").fit(data, mdp.rewards, rng=1)
    events = est.privacy_ledger_.events
    assert sum(1.0 / e.noise_multiplier for e in events) == pytest.approx(2.0)   # pure ε adds up
    assert est.privacy_spent(1e-6) <= 2.0 + 1e-3
    assert est.guarantee == "(epsilon, delta)-DP"
    assert est.noise_bound_ == pytest.approx(laplace_noise_bound(4, 3, 2, 2.0, 0.05))


@pytest.mark.parametrize("rho,expected", [(0.1, 206.8369), (1.0, 65.40758), (5.0, 29.25116), (25.0, 13.08152)])
def test_noise_bound_values(rho, expected):
    assert gaussian_noise_bound(20, 2, 100, rho, 0.05) == pytest.approx(expected, rel=1e-6)


def test_laplace_bound_formula():
    assert laplace_noise_bound(20, 2, 100, 1.0, 0.05) == pytest.approx(160 * math.log(2 * 20 * 4 * 100 / 0.05))


def _replace_one(data, i, other, j):
    out = {k: v.copy() for k, v in data.items()}
    for k in out:
        out[k][i] = other[k][j]
    return out


def test_count_sensitivity_replace_one(small):
    mdp, mu = small
    rng = np.random.default_rng(0)
    data = mdp.sample(mu, 30, rng=1)
    other = mdp.sample(np.full((3, 2), 0.5), 200, rng=2)
    H = 4
    worst2, worst1 = 0.0, 0.0
    for j in range(200):
        d2 = _replace_one(data, rng.integers(30), other, j)
        a = count_statistics(data["observations"], data["actions"], data["next_observations"], 3, 2)
        b = count_statistics(d2["observations"], d2["actions"], d2["next_observations"], 3, 2)
        for x, y in zip(a, b):
            worst2 = max(worst2, np.linalg.norm((x - y).ravel()))
        worst1 = max(worst1, sum(np.abs(x - y).sum() for x, y in zip(a, b)))
    assert worst2 <= math.sqrt(2 * H) + 1e-12
    assert worst1 <= 4 * H
    # adversarial: a trajectory on entirely different pairs attains the bound
    adv = {k: np.zeros((1, H), dtype=int) for k in ("observations", "actions", "next_observations")}
    adv2 = {k: np.ones((1, H), dtype=int) for k in adv}
    a = count_statistics(adv["observations"], adv["actions"], adv["next_observations"], 3, 2)
    b = count_statistics(adv2["observations"], adv2["actions"], adv2["next_observations"], 3, 2)
    assert np.linalg.norm((a[0] - b[0]).ravel()) == pytest.approx(math.sqrt(2 * H))


def test_noise_scale_is_data_independent(small):
    mdp, mu = small
    a = DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(mdp.sample(mu, 20, rng=0), mdp.rewards, rng=1)
    b = DPAPVI(budget=PrivacyBudget(rho=1.0), delta_fail=0.3, c2=1.0).fit(mdp.sample(mu, 900, rng=5),
                                                                        mdp.rewards, rng=1)
    assert a.privacy_ledger_.events == b.privacy_ledger_.events


# ----------------------------------------------------------------------------- post-processing
def _lp_value(n_sas, n_sa, E):
    S = len(n_sas)
    c = np.zeros(S + 1)
    c[-1] = 1.0
    eye = np.eye(S)
    # x_i − t <= n_i, −x_i − t <= −n_i, Σx <= n_sa + E/2, −Σx <= −(n_sa − E/2)
    A_ub = np.vstack([np.c_[eye, -np.ones(S)], np.c_[-eye, -np.ones(S)],
                      np.r_[np.ones(S), 0.0], np.r_[-np.ones(S), 0.0]])
    b_ub = np.r_[n_sas, -n_sas, n_sa + E / 2, -(n_sa - E / 2)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(0, None)] * (S + 1), method="highs")
    assert res.status == 0
    return res.fun


def test_consistency_closed_form_matches_linprog():
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(1000):
        S = int(rng.integers(1, 7))
        n_sas = np.maximum(rng.normal(5, 6, S), 0) * (rng.random() > 0.1)
        n_sa = max(rng.normal(n_sas.sum(), 15), 0.0) * (rng.random() > 0.1)
        cases.append((n_sas, n_sa, float(rng.uniform(0, 20))))
    cases += [(np.zeros(3), 0.0, 4.0), (np.zeros(1), 7.0, 1.0), (np.array([9.0]), 0.0, 2.0),
              (np.zeros(4), 30.0, 0.0), (np.array([3.0, 1.0]), 0.0, 0.0)]
    for n_sas, n_sa, E in cases:
        _, x = consistent_counts(np.array([n_sa]), n_sas[None], E)
        x = x[0]
        assert x.min() >= 0
        assert abs(x.sum() - n_sa) <= E / 2 + 1e-9
        assert np.abs(x - n_sas).max() == pytest.approx(_lp_value(n_sas, n_sa, E), abs=1e-9)


def test_lemmas_c2_c3_monte_carlo(small):
    mdp, mu = small
    data = mdp.sample(mu, 200, rng=0)
    n_sa, n_sas = count_statistics(data["observations"], data["actions"], data["next_observations"], 3, 2)
    rho, delta = 1.0, 0.05
    E = gaussian_noise_bound(4, 3, 2, rho, delta)
    rng = np.random.default_rng(1)
    bad2 = bad3 = 0
    for _ in range(2000):
        a, b, _ = _release(n_sa, n_sas, rng, rho=rho)
        bad2 += max(np.abs(a - n_sa).max(), np.abs(b - n_sas).max()) > E / 2
        ta, tb = consistent_counts(a, b, E)
        bad3 += max(np.abs(ta - n_sa).max(), np.abs(tb - n_sas).max()) > E
    assert bad2 / 2000 <= delta and bad3 / 2000 <= delta


def test_private_transitions_rows_and_fallback():
    rng = np.random.default_rng(2)
    n_sas = np.maximum(rng.normal(3, 5, (4, 3, 2, 3)), 0)
    n_sa, n_sas = consistent_counts(np.maximum(n_sas.sum(-1) + rng.normal(0, 2, (4, 3, 2)), 0), n_sas, 4.0)
    P = private_transitions(n_sa, n_sas, 4.0)
    assert P.min() >= 0 and np.allclose(P.sum(-1), 1.0, atol=1e-12)
    fallback = np.all(P == 1 / 3, axis=-1)
    assert np.array_equal(fallback | (n_sa > 4.0), np.ones_like(fallback)) and np.all(fallback[n_sa <= 4.0])


def test_lemma_c4_transition_error(small):
    mdp, mu = small
    data = mdp.sample(mu, 20000, rng=0)
    n_sa, n_sas = count_statistics(data["observations"], data["actions"], data["next_observations"], 3, 2)
    E = gaussian_noise_bound(4, 3, 2, 1.0, 0.05)
    a, b, _ = _release(n_sa, n_sas, 3, rho=1.0)
    t_sa, t_sas = consistent_counts(a, b, E)
    P_t = private_transitions(t_sa, t_sas, E)
    P_hat = private_transitions(n_sa, n_sas, 0.0)
    ok = t_sa >= 3 * E
    assert ok.any()
    err = np.abs(P_t - P_hat).sum(-1)
    assert np.all(err[ok] <= 5 * 3 * E / t_sa[ok])


def test_value_bounds_and_unvisited_branch():
    rng = np.random.default_rng(4)
    H, S, A = 5, 4, 3
    n_sas = rng.integers(0, 12, (H, S, A, S)).astype(float) * (rng.random((H, S, A, 1)) < 0.7)
    fit = dp_apvi_from_counts(n_sas.sum(-1), n_sas, rng.random((H, S, A)), noise=None, c1=1.4, c2=0.1,
                              c_unvisited=1.5)
    for h in range(H):
        assert fit.q_values[h].min() >= 0 and fit.q_values[h].max() <= H - h
        assert fit.values[h].min() >= 0 and fit.values[h].max() <= H - h
    unvisited = n_sas.sum(-1) == 0
    assert unvisited.any() and np.all(fit.q_values[unvisited] == 0)
    np.testing.assert_allclose(fit.transitions[unvisited], 1 / S)


# ----------------------------------------------------------------------------- reductions and utility
def test_infinite_budget_equals_apvi(small):
    mdp, mu = small
    data = mdp.sample(mu, 300, rng=0)
    base = APVI().fit(data, mdp.rewards)
    for budget in (PrivacyBudget(rho=math.inf), PrivacyBudget.non_private()):
        dp = DPAPVI(budget=budget).fit(data, mdp.rewards, rng=1)
        np.testing.assert_array_equal(dp.policy_, base.policy_)
        np.testing.assert_array_equal(dp.q_values_, base.q_values_)


def test_pessimism_and_gap_trends(small):
    mdp, mu = small
    v_star = mdp.optimal_value()
    gaps = {}
    for n in (1000, 100000):
        for rho in (1.0, 100.0):
            g = []
            for seed in range(4):
                data = mdp.sample(mu, n, rng=seed)
                est = DPAPVI(budget=PrivacyBudget(rho=rho)).fit(data, mdp.rewards, rng=10 + seed)
                V_pi = mdp.evaluate(est.policy_)
                assert np.all(est.values_[0] <= V_pi[0] + 1e-9)      # pessimism, Eq. (34)
                g.append(v_star - mdp.value(est.policy_))
            assert min(g) >= -1e-12
            gaps[n, rho] = np.mean(g)
    assert gaps[100000, 1.0] < gaps[1000, 1.0] - 0.1
    assert gaps[100000, 100.0] < gaps[100000, 1.0] - 0.1
    apvi_small = np.mean([v_star - mdp.value(APVI().fit(mdp.sample(mu, 30, rng=s), mdp.rewards).policy_)
                          for s in range(4)])
    apvi_big = np.mean([v_star - mdp.value(APVI().fit(mdp.sample(mu, 3000, rng=s), mdp.rewards).policy_)
                        for s in range(4)])
    assert apvi_big < apvi_small


def test_kernel_matches_estimator(small):
    mdp, mu = small
    data = mdp.sample(mu, 100, rng=0)
    n_sa, n_sas = count_statistics(data["observations"], data["actions"], data["next_observations"], 3, 2)
    est = DPAPVI(budget=PrivacyBudget(rho=2.0)).fit(data, mdp.rewards, rng=np.random.default_rng(5))
    rel = Releaser(make_noise(np.random.default_rng(5)), Ledger())
    fit = dp_apvi_from_counts(n_sa, n_sas, mdp.rewards, noise=est.count_noise(4, 3, 2), rel=rel, c2=16.0)
    assert rel.ledger == est.privacy_ledger_
    np.testing.assert_array_equal(fit.q_values, est.q_values_)


# ----------------------------------------------------------------------------- bad input
def test_bad_inputs(small):
    mdp, mu = small
    data = mdp.sample(mu, 10, rng=0)
    r = mdp.rewards
    ok = DPAPVI(budget=PrivacyBudget(rho=1.0))
    bad_state = {k: v.copy() for k, v in data.items()}
    bad_state["observations"][0, 0] = 3
    with pytest.raises(InvalidDataError, match="observations"):
        ok.fit(bad_state, r, rng=0)
    bad_action = {k: v.copy() for k, v in data.items()}
    bad_action["actions"][0, 0] = -1
    with pytest.raises(InvalidDataError, match="actions"):
        ok.fit(bad_action, r, rng=0)
    with pytest.raises(InvalidDataError, match="horizon"):
        ok.fit({k: v[:, :3] for k, v in data.items()}, r, rng=0)
    with pytest.raises(InvalidDataError, match="empty"):
        ok.fit({k: v[:0] for k, v in data.items()}, r, rng=0)
    with pytest.raises(InvalidParameterError, match="rho"):
        DPAPVI(budget=PrivacyBudget(rho=-1.0))
    with pytest.raises(InvalidParameterError, match="epsilon"):
        DPAPVI(budget=PrivacyBudget(epsilon=0.0))
    with pytest.raises(TypeError, match="budget"):
        DPAPVI()
    with pytest.raises(InvalidParameterError, match="budget"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), mechanism="laplace").fit(data, r, rng=0)
    with pytest.raises(InvalidParameterError, match="delta_fail"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), delta_fail=1.5).fit(data, r, rng=0)
    with pytest.raises(InvalidParameterError, match="c_unvisited"):
        APVI(c_unvisited=1.0).fit(data, r)
    with pytest.raises(InvalidParameterError, match="reward"):
        APVI().fit(data, r + 1.0)


def test_a_public_table_of_the_wrong_shape_is_named(small):
    """The reward (or feature) table sets the public sizes: one of the wrong shape against data that
    declare theirs is blamed, not the data's 'observations' / 'actions'."""
    from privrl.envs.linear import to_dataset
    from privrl.offline import DPVAPVI, offline_statistics

    mdp, mu = small
    data = mdp.sample(mu, 40, rng=0)
    ds = to_dataset(data, n_states=3, n_actions=2)
    stats = offline_statistics(data, 3, 2)
    for reward in (mdp.rewards[:, :2], mdp.rewards[:, :, :1], np.concatenate([mdp.rewards] * 2, axis=1),
                   mdp.rewards[0, :2]):
        for source in (ds, stats):
            with pytest.raises(InvalidParameterError, match=r"The 'reward' parameter of DPAPVI must be an array of "
                                                            r"shape \(H, 3, 2\) or \(3, 2\)"):
                DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(source, reward, rng=0)
    with pytest.raises(InvalidParameterError, match=r"The 'features' parameter of DPVAPVI must be an array of "
                                                    r"shape \(3, 2, d\)"):
        DPVAPVI(budget=PrivacyBudget(rho=1.0)).fit(ds, np.eye(4).reshape(2, 2, 4), rng=0)


@pytest.mark.parametrize("make", [lambda: APVI(), lambda: DPAPVI(budget=PrivacyBudget(rho=1.0))])
def test_fitted_attributes_before_fit_are_a_not_fitted_error(small, make):
    from privrl.errors import NotFittedError

    est = make()
    for name in ("policy_", "values_", "q_values_", "privacy_ledger_"):
        with pytest.raises(NotFittedError, match=f"not fitted yet: call 'fit' before using '{name}'"):
            getattr(est, name)
        assert not hasattr(est, name)
    mdp, mu = small
    est.fit(mdp.sample(mu, 40, rng=0), mdp.rewards, rng=0)
    assert est.policy_.shape == (mdp.rewards.shape[0], 3)
    with pytest.raises(AttributeError) as missing:       # fitted: an absent name is the plain error
        _ = est.value_
    assert not isinstance(missing.value, NotFittedError)


def test_kernel_rejects_bad_counts():
    n_sa, n_sas, r = np.ones((2, 2, 1)), np.full((2, 2, 1, 2), 0.5), np.zeros((2, 2, 1))
    plan = _sound(2, 2, 1, rho=1.0)

    def rel():
        return Releaser(make_noise(0), Ledger())
    dp_apvi_from_counts(n_sa, n_sas, r, noise=plan, rel=rel())
    with pytest.raises(InvalidParameterError, match="n_sa"):
        dp_apvi_from_counts(-n_sa, n_sas, r, noise=plan, rel=rel())
    with pytest.raises(InvalidParameterError, match="n_sas"):
        dp_apvi_from_counts(n_sa, n_sas[:, :, :, :1], r, noise=plan, rel=rel())
    with pytest.raises(InvalidParameterError, match="n_sas"):
        dp_apvi_from_counts(n_sa, n_sas * 2, r, noise=plan, rel=rel())
    with pytest.raises(InvalidParameterError, match="noise"):
        dp_apvi_from_counts(n_sa, n_sas, r, noise=1.0, rel=rel())
    with pytest.raises(InvalidParameterError, match="rho"):
        PrivacyBudget(rho=0.0)


def test_accepts_trajectory_dataset(small):
    from privrl.envs.linear import to_dataset

    mdp, mu = small
    data = mdp.sample(mu, 40, rng=0)
    ds = to_dataset(data, n_states=3, n_actions=2)
    a = DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(ds, mdp.rewards, rng=3)
    b = DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(data, mdp.rewards, rng=3)
    np.testing.assert_array_equal(a.q_values_, b.q_values_)


@pytest.mark.parametrize("spread, dense", [(0.05, False), (0.5, True), (5.0, True)])
def test_water_levels_sorted_per_row_and_over_candidates_agree(spread, dense):
    """Eq. (3)'s water level, by the candidates' one lexsort and by sorting every row (the path taken
    when most entries are candidates): the same level, and Σ max(0, x − t) = hi, to 1e-9."""
    from privrl.offline.tabular import _dense_water_levels, _water_levels

    rng = np.random.default_rng(3)
    rows = np.abs(rng.normal(0.0, 10.0, (400, 60)))
    hi = rows.sum(axis=1) * rng.uniform(0.0, 1.0, 400) * spread / 5.0
    top = rows.max(axis=1)
    sparse = (rows > (top - hi)[:, None]).mean()
    t_dense = _dense_water_levels(rows, hi, top)
    t = _water_levels(rows, hi)
    np.testing.assert_allclose(t, t_dense, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.maximum(rows - t[:, None], 0).sum(axis=1), hi, rtol=1e-9, atol=1e-9)
    assert (sparse > 0.25) == dense      # which path _water_levels takes
