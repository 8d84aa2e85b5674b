"""LSW, LSL, DP-LSW, DP-LSL on the spec's toy dataset (spec §6, T2–T10, T14) and input validation."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event

from policy_evaluation.conftest import PHI_AGG, PHI_TAB, TOY_EPISODES, W, make_dataset
from privrl.certificate import make_certificate
from privrl.errors import InvalidDataError, InvalidParameterError, PrivacyLeakWarning
from privrl.least_squares.smooth_sensitivity import smoothing_constants
from privrl.policy_evaluation import (
    DPLSL,
    DPLSW,
    LSL,
    LSW,
    DPLSLMechanism,
    DPLSWMechanism,
    DPMonteCarlo,
    discounted_returns,
    first_visit_statistics,
    lsl_solve,
    lsw_solve,
)
from privrl.privacy import ApproxDpEvent, Neighboring, NumpyNoise, PrivacyBudget, PrivacyUnit

BUDGET = PrivacyBudget(epsilon=1.0, delta=0.1)


def _stats(ds, gamma=0.9):
    return first_visit_statistics(ds.observations, ds.rewards, ds.episode_starts, 4, gamma)


# --------------------------------------------------------------------------- data processing
def test_first_visit_returns_and_counts(toy):
    """T2: first-visit returns per trajectory, counts (2, 2, 3, 0) and F_X."""
    st = _stats(toy)
    np.testing.assert_array_equal(st.counts, [2, 2, 3, 0])
    np.testing.assert_allclose(st.mean_returns, [0.8145, 0.855, 1.27, 0.0], rtol=1e-12)
    g = discounted_returns(toy.rewards, toy.episode_starts, 0.9)
    np.testing.assert_allclose(g, [0.729, 0.81, 0.9, 1.0, 0.9, 1.0, 1.81, 0.9, 1.0], rtol=1e-12)


def _loop_returns(rewards, starts, gamma):
    out = np.zeros(len(rewards))
    for e in range(len(starts) - 1):
        acc = 0.0
        for t in range(starts[e + 1] - 1, starts[e] - 1, -1):
            acc = rewards[t] + gamma * acc
            out[t] = acc
    return out


def test_discounted_returns_scan_matches_backward_loop():
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.integers(1, 40, 200), [1000, 1, 3]])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    rewards = rng.uniform(0, 1, starts[-1])
    np.testing.assert_allclose(discounted_returns(rewards, starts, 0.97),
                               _loop_returns(rewards, starts, 0.97), rtol=1e-12)


def test_signature_changes_by_at_most_one_per_state():
    """T3: replacing one trajectory moves every first-visit count by at most 1."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        eps = [(rng.integers(0, 6, rng.integers(1, 12)), rng.uniform(0, 1, 1)) for _ in range(8)]
        eps = [(s, np.resize(r, s.size)) for s, r in eps]
        a = make_dataset(eps, n_states=6)
        i = int(rng.integers(0, 8))
        new = rng.integers(0, 6, rng.integers(1, 12))
        b = make_dataset(eps[:i] + [(new, np.zeros(new.size))] + eps[i + 1:], n_states=6)
        ca = first_visit_statistics(a.observations, a.rewards, a.episode_starts, 6, 0.9).counts
        cb = first_visit_statistics(b.observations, b.rewards, b.episode_starts, 6, 0.9).counts
        assert np.max(np.abs(ca - cb)) <= 1


# --------------------------------------------------------------------------- estimators
def test_lsw_toy(toy):
    """T4: θ^w with aggregation; tabular gives F_X; pseudo-inverse and normal equations agree."""
    st = _stats(toy)
    np.testing.assert_allclose(lsw_solve(st.mean_returns, PHI_AGG, W), [0.83475, 0.635], rtol=1e-9)
    np.testing.assert_allclose(lsw_solve(st.mean_returns, PHI_TAB, W), st.mean_returns, rtol=1e-9)
    G = np.diag(W)
    normal = np.linalg.solve(PHI_AGG.T @ G @ PHI_AGG, PHI_AGG.T @ G @ st.mean_returns)
    np.testing.assert_allclose(lsw_solve(st.mean_returns, PHI_AGG, W), normal, rtol=1e-12)
    est = LSW(gamma=0.9, features=PHI_AGG, weights=W).fit(toy)
    np.testing.assert_allclose(est.theta_, [0.83475, 0.635], rtol=1e-9)
    np.testing.assert_allclose(est.values_, PHI_AGG @ est.theta_)


@pytest.mark.parametrize("phi,lam,expected", [
    (PHI_AGG, 1.0, [0.5565, 0.762]),
    (PHI_AGG, 3.0, [0.3339, 0.4233333333]),
    (PHI_TAB, 1.0, [0.40725, 0.4275, 0.762, 0.0]),
])
def test_lsl_toy(toy, phi, lam, expected):
    """T5: θ^λ values; the gradient of J^λ_X vanishes there (finite differences on eq. 10)."""
    st = _stats(toy)
    theta = lsl_solve(st.mean_returns, st.counts, 3, phi, W, lam)
    np.testing.assert_allclose(theta, expected, rtol=1e-8)

    def objective(t):
        total = 0.0
        for states, rewards in TOY_EPISODES:
            g = _loop_returns(np.array(rewards), np.array([0, len(rewards)]), 0.9)
            seen = set()
            for s, f in zip(states, g):
                if s not in seen:
                    seen.add(s)
                    total += W[s] * (f - phi[s] @ t) ** 2
        return total / 3 + lam / 6 * t @ t

    for j in range(theta.size):
        e = np.zeros(theta.size)
        e[j] = 1e-6
        assert abs(objective(theta + e) - objective(theta - e)) / 2e-6 < 1e-7
    est = LSL(gamma=0.9, lam=lam, features=phi, relevance=W).fit(toy)
    np.testing.assert_allclose(est.theta_, expected, rtol=1e-8)


# --------------------------------------------------------------------------- noise scales
def test_dp_lsw_noise_scale_toy(toy):
    """T6: σ_X = 164.63351 (aggregation) and 236.18185 (tabular)."""
    st = _stats(toy)
    agg = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1, delta=0.1, calibration="paper")
    assert agg.pinv_norm == pytest.approx(math.sqrt(2), rel=1e-12)
    assert agg.noise_scale(st.counts, 3) == pytest.approx(164.63351, rel=1e-7)
    tab = DPLSWMechanism.create(features=PHI_TAB, weights=W, F_max=10, epsilon=1, delta=0.1, calibration="paper")
    assert tab.noise_scale(st.counts, 3) == pytest.approx(236.18185, rel=1e-7)


@pytest.mark.parametrize("phi,lam,sigma", [(PHI_AGG, 1.0, 604.51352), (PHI_AGG, 3.0, 98.341335),
                                           (PHI_TAB, 1.0, 249.89991)])
def test_dp_lsl_noise_scale_toy(toy, phi, lam, sigma):
    """T7."""
    st = _stats(toy)
    mech = DPLSLMechanism.create(features=phi, relevance=W, lam=lam, F_max=10, epsilon=1, delta=0.1,
                                 calibration="paper")
    assert mech.noise_scale(st.counts, 3) == pytest.approx(sigma, rel=1e-7)


def test_appendix_a_constants_change_sigma_by_the_formula(toy):
    st = _stats(toy)
    main = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1, delta=0.1, calibration="paper")
    app = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1, delta=0.1,
                                calibration="paper", smoothing="appendix_a")
    from privrl.least_squares.smooth_sensitivity import psi_w
    alpha, beta = smoothing_constants(1, 0.1, 2, "appendix_a")
    assert app.noise_scale(st.counts, 3) == pytest.approx(
        alpha * 10 * math.sqrt(2) * math.sqrt(psi_w(st.counts, W, beta)))
    assert app.noise_scale(st.counts, 3) > main.noise_scale(st.counts, 3)


def test_sigma_linear_in_F_max_and_decreasing_in_epsilon(toy):
    """T9, T10."""
    st = _stats(toy)
    s = [DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=f, epsilon=1, delta=0.1,
                               calibration="paper").noise_scale(st.counts, 3) for f in (1.0, 10.0)]
    assert s[1] == pytest.approx(10 * s[0], rel=1e-12)
    sig = [DPLSLMechanism.create(features=PHI_AGG, relevance=W, lam=1.0, F_max=10, epsilon=e,
                                 delta=0.1, calibration="paper").noise_scale(st.counts, 3)
           for e in (0.1, 0.5, 1.0, 2.0, 10.0)]
    assert all(a > b for a, b in zip(sig, sig[1:]))
    big_w = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1e9, delta=0.1, calibration="paper")
    big_l = DPLSLMechanism.create(features=PHI_AGG, relevance=W, lam=1.0, F_max=10, epsilon=1e9, delta=0.1,
                                  calibration="paper")
    assert big_w.noise_scale(st.counts, 3) == pytest.approx(1.0985e-7, rel=1e-4)
    assert big_l.noise_scale(st.counts, 3) == pytest.approx(5.7513e-7, rel=1e-4)


def test_huge_epsilon_is_close_and_infinite_budget_is_exact(toy):
    """T10 and the contract: a huge ε adds only the certified (small) noise, ε = ∞ returns exactly
    the non-private θ. The printed constants at ε = 10⁹ (σ = 5.75e-7 above) are *not* certified —
    Lemma 1 fails at large ε — so the paper calibration warns and its ledger says so."""
    budget = PrivacyBudget(epsilon=1e9, delta=0.1)
    dp = DPLSL(budget=budget, gamma=0.9, lam=1.0, features=PHI_AGG, relevance=W).fit(toy, rng=0)
    sigma = DPLSLMechanism.create(features=PHI_AGG, relevance=W, lam=1.0, F_max=10, epsilon=1e9,
                                  delta=0.1).noise_scale(_stats(toy).counts, 3)
    assert sigma < 5e-3                                       # certified: α ≈ 1/√(2ε) up to the scale part
    assert np.max(np.abs(dp.theta_ - [0.5565, 0.762])) <= 5 * sigma
    with pytest.warns(PrivacyLeakWarning, match="not"):
        paper = DPLSL(budget=budget, gamma=0.9, lam=1.0, features=PHI_AGG, relevance=W,
                      calibration="paper").fit(toy, rng=0)
    np.testing.assert_allclose(paper.theta_, [0.5565, 0.762], atol=1e-5)
    assert paper.privacy_spent(0.1) == math.inf              # nothing certified up to ε = 10¹²
    inf = DPLSW(budget=PrivacyBudget.non_private(), gamma=0.9, features=PHI_AGG, weights=W).fit(toy, rng=0)
    base = LSW(gamma=0.9, features=PHI_AGG, weights=W).fit(toy)
    np.testing.assert_array_equal(inf.theta_, base.theta_)
    assert isinstance(inf.privacy_ledger_.events[0], dp_event.NonPrivateDpEvent)
    assert inf.privacy_spent(0.1) == math.inf
    assert len(base.privacy_ledger_) == 0


def test_invariances(toy):
    """T14: permuting trajectories and rescaling w or (ρ, λ) change neither θ nor σ_X."""
    perm = make_dataset([TOY_EPISODES[i] for i in (2, 0, 1)])
    for ds in (toy, perm):
        st = _stats(ds)
        for scale in (1.0, 7.0):
            mw = DPLSWMechanism.create(features=PHI_AGG, weights=scale * W, F_max=10, epsilon=1, delta=0.1,
                                       calibration="paper")
            assert mw.noise_scale(st.counts, 3) == pytest.approx(164.63351, rel=1e-7)
            np.testing.assert_allclose(mw.solve(st), [0.83475, 0.635], rtol=1e-9)
            ml = DPLSLMechanism.create(features=PHI_AGG, relevance=W * scale / 7, lam=scale / 7,
                                       F_max=10, epsilon=1, delta=0.1, calibration="paper")
            assert ml.noise_scale(st.counts, 3) == pytest.approx(604.51352, rel=1e-7)
            np.testing.assert_allclose(ml.solve(st), [0.5565, 0.762], rtol=1e-8)


# --------------------------------------------------------------------------- privacy bookkeeping
def _all_keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _all_keys(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _all_keys(v)


@pytest.mark.parametrize("cls,kw", [(DPLSW, {}), (DPLSL, {"lam": 1.0})])
def test_ledger_and_no_sigma_in_public_state(toy, cls, kw):
    est = cls(budget=BUDGET, gamma=0.9, features=PHI_AGG, F_max=10, **kw).fit(toy, rng=3)
    assert cls.privacy_unit is PrivacyUnit.TRAJECTORY
    assert cls.neighboring is Neighboring.REPLACE_ONE
    assert cls.guarantee == "(epsilon, delta)-DP"
    (event,) = est.privacy_ledger_.events
    assert isinstance(event, ApproxDpEvent) and event.delta == 0.1
    assert 0.99 <= event.epsilon <= 1.0                     # tight: the certified ε spent
    assert est.privacy_spent(0.1) == pytest.approx(event.epsilon, abs=1e-3)
    assert est.F_max_ == 10
    cert = make_certificate(est, algorithm=cls.__name__, extra={"F_max": est.F_max_})
    keys = set(vars(est)) | set(_all_keys(cert))
    for word in ("sigma", "noise", "psi_", "count", "mean_returns", "stats"):
        assert not any(word in k.lower() for k in keys), (word, keys)
    # and no fitted float equals the data-dependent σ
    st = _stats(toy)
    if cls is DPLSW:
        mech = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1, delta=0.1)
    else:
        mech = DPLSLMechanism.create(features=PHI_AGG, relevance=W, lam=1.0, F_max=10, epsilon=1, delta=0.1)
    sigma = mech.noise_scale(st.counts, 3)
    for value in vars(est).values():
        if isinstance(value, float):
            assert value != pytest.approx(sigma, rel=1e-6)


def test_release_is_pure_function_of_public_params_signature_and_noise(toy):
    st = _stats(toy)
    mech = DPLSWMechanism.create(features=PHI_AGG, weights=W, F_max=10, epsilon=1, delta=0.1)
    theta = mech.solve(st)
    a = mech.release(theta, st.counts, 3, noise=NumpyNoise(5))
    b = mech.release(theta, st.counts, 3, noise=NumpyNoise(5))
    np.testing.assert_array_equal(a.value, b.value)
    assert a.event == mech.event == ApproxDpEvent(mech.smoothed.epsilon_spent, 0.1)
    est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG, weights=W, F_max=10).fit(toy, rng=11)
    est2 = DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG, weights=W, F_max=10).fit(toy, rng=11)
    np.testing.assert_array_equal(est.theta_, est2.theta_)


def test_default_F_max_is_r_max_over_one_minus_gamma(toy):
    est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG).fit(toy, rng=0)
    assert est.F_max_ == pytest.approx(10.0)
    est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG, r_max=2.0).fit(toy, rng=0)
    assert est.F_max_ == pytest.approx(20.0)


# --------------------------------------------------------------------------- bad input (T8)
@pytest.mark.parametrize("cls,kw,match", [
    (DPLSL, {"lam": 0.5, "features": PHI_AGG}, "lam"),            # λ = ‖Φ‖²‖ρ‖∞ = 0.5
    (DPLSL, {"lam": 0.3, "features": PHI_AGG}, "lam"),
    (DPLSW, {"weights": np.array([0.25, 0.25, 0.0, 0.0]), "features": PHI_AGG}, "full column rank"),
    (DPLSW, {"weights": np.array([0.25, -0.25, 0.25, 0.25])}, "weights"),
    (DPLSW, {"features": np.array([[1.0, 1.0], [1.0, 1.0], [0, 0], [0, 0]])}, "full column rank"),
    (DPLSL, {"lam": 2.0, "relevance": np.array([0.5, 0.5, 1.5, 0.5])}, "relevance"),
    (DPLSW, {"budget": PrivacyBudget(epsilon=1.0, delta=0.0)}, "delta"),
    (DPLSW, {"budget": PrivacyBudget(rho=1.0)}, "budget"),
    (DPLSW, {"budget": PrivacyBudget(epsilon=6.0, delta=0.1), "smoothing": "appendix_a",
             "calibration": "sound"}, "epsilon"),
    (DPLSW, {"constants": "nope"}, "constants"),
    (DPLSW, {"constants": "main_text"}, "constants"),   # the old meaning of 'constants' is now 'smoothing'
    (DPLSW, {"smoothing": "nope"}, "smoothing"),
    (DPLSW, {"calibration": "loose"}, "calibration"),
    (DPLSW, {"gamma": 1.0}, "gamma"),
    (DPLSW, {"F_max": -1.0}, "F_max"),
])
def test_bad_parameters_raise(toy, cls, kw, match):
    params = {"budget": BUDGET, "gamma": 0.9, **kw}
    if cls is DPLSL:
        params.setdefault("lam", 2.0)
    with pytest.raises(InvalidParameterError, match=match):
        cls(**params).fit(toy, rng=0)


def test_epsilon_zero_is_rejected_by_the_budget():
    with pytest.raises(InvalidParameterError, match="epsilon"):
        PrivacyBudget(epsilon=0.0, delta=0.1)


def test_states_outside_the_feature_matrix_raise():
    ds = make_dataset([([0, 5], [0.0, 1.0])], n_states=6)
    with pytest.raises(InvalidDataError, match="outside the feature matrix"):
        DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG).fit(ds, rng=0)


def test_rewards_and_returns_validated_against_bounds(toy):
    # return 1.81 > F_max = 1.5 raises unless clipping is asked for
    with pytest.raises(InvalidDataError, match="F_max"):
        DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG, F_max=1.5).fit(toy, rng=0)
    clipped = LSW(gamma=0.9, features=PHI_TAB, F_max=1.5, clip_returns=True).fit(toy)
    assert clipped.theta_[2] == pytest.approx((1.0 + 1.0 + 1.5) / 3)
    ds = make_dataset([([0, 1], [0.0, 2.0])], reward_bounds=(0.0, 2.0))
    with pytest.raises(InvalidDataError, match="reward of the dataset lies outside"):
        DPLSW(budget=BUDGET, gamma=0.9, r_max=1.0).fit(ds, rng=0)
    ok = LSW(gamma=0.9, r_max=1.0, clip_returns=True).fit(ds)
    assert ok.theta_[1] == pytest.approx(1.0)


def test_terminal_state_is_recorded_with_return_zero():
    ds = make_dataset([([0, 1], [0.0, 1.0])], n_states=3, terminal_last=True)
    # the episode's last transition enters state 1 (next_observations) in make_dataset
    ds2 = type(ds)(ds.observations, ds.actions, ds.rewards, np.array([1, 2]), ds.episode_starts,
                   terminals=np.array([False, True]), n_states=3, reward_bounds=(0.0, 1.0))
    est = LSW(gamma=0.5).fit(ds2)
    np.testing.assert_allclose(est.theta_, [0.5, 1.0, 0.0])
    assert LSW(gamma=0.5, record_terminal=False).fit(ds2).theta_[2] == 0.0


def test_number_of_states_is_never_inferred_from_the_data(toy):
    """d would otherwise reveal the largest visited state: without n_states, features are required."""
    bare = type(toy)(toy.observations, toy.actions, toy.rewards, toy.next_observations,
                     toy.episode_starts, reward_bounds=(0.0, 1.0))
    assert bare.n_states is None
    with pytest.raises(InvalidParameterError, match="features"):
        DPLSW(budget=BUDGET, gamma=0.9).fit(bare, rng=0)
    est = DPLSW(budget=BUDGET, gamma=0.9, features=PHI_TAB).fit(bare, rng=0)
    assert est.theta_.shape == (4,)


def test_errors_on_bad_data_never_print_private_values(toy):
    """Issue #13 §3: the message names the broken bound and the fix, never the offending value
    (here the first-visit return 1.81, the reward 7.25 and the visited state 5)."""
    with pytest.raises(InvalidDataError) as ret:
        DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG, F_max=1.5).fit(toy, rng=0)
    assert "F_max" in str(ret.value) and "clip_returns" in str(ret.value) and "1.81" not in str(ret.value)
    ds = make_dataset([([0, 1], [0.0, 7.25])], reward_bounds=(0.0, 10.0))
    with pytest.raises(InvalidDataError) as rew:
        DPLSW(budget=BUDGET, gamma=0.9, r_max=1.0).fit(ds, rng=0)
    assert "r_max" in str(rew.value) and "clip_returns" in str(rew.value) and "7.25" not in str(rew.value)
    far = make_dataset([([0, 5], [0.0, 1.0])], n_states=6)
    with pytest.raises(InvalidDataError) as state:
        DPLSW(budget=BUDGET, gamma=0.9, features=PHI_AGG).fit(far, rng=0)
    assert "5" not in str(state.value).replace("0..3", "")
    from privrl.least_squares.smooth_sensitivity import psi_lambda

    with pytest.raises(InvalidParameterError) as cnt:
        psi_lambda(np.array([37, 1]), np.array([0.5, 0.5]), 1.0, 2, 0.1)
    assert "37" not in str(cnt.value)


# --------------------------------------------------------------------------- fit on statistics
@pytest.mark.parametrize("cls,kw", [(DPLSW, {}), (DPLSL, {"lam": 1.0}), (LSW, {}), (LSL, {"lam": 1.0})])
def test_fit_statistics_is_fit_on_the_dataset_s_statistics(toy, cls, kw):
    """The nested-batch path of the figure: the same release as ``fit`` when the privacy stream is
    the one ``fit`` derives, and the same ledger (one release of this batch)."""
    from privrl._rng import child_rngs

    private = cls in (DPLSW, DPLSL)
    common = {"gamma": 0.9, "features": PHI_AGG, "F_max": 10, **kw, **({"budget": BUDGET} if private else {})}
    with pytest.warns(UserWarning) if private else _no_warning():
        direct = cls(**common).fit(toy, rng=3)
    with pytest.warns(UserWarning) if private else _no_warning():
        stats = cls(**common).fit_statistics(_stats(toy), rng=child_rngs(3, "privacy")["privacy"])
    np.testing.assert_array_equal(stats.theta_, direct.theta_)
    assert stats.privacy_ledger_ == direct.privacy_ledger_ and stats.F_max_ == 10
    assert stats.mechanism_.is_private == private


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_fit_statistics_checks_what_statistics_allow(toy):
    st = _stats(toy)
    est = LSW(gamma=0.9, features=PHI_AGG, F_max=1.0)
    with pytest.raises(InvalidDataError, match=r"outside the public bounds \[0, F_max = 1.0\]"):
        est.fit_statistics(st)               # the toy's mean returns exceed F_max = 1
    with pytest.raises(InvalidParameterError, match="'F_max' parameter of LSW .* carry no reward bounds"):
        LSW(gamma=0.9, features=PHI_AGG).fit_statistics(st)
    assert LSW(gamma=0.9, features=PHI_AGG, r_max=1.0).fit_statistics(st).F_max_ == pytest.approx(10.0)
    with pytest.raises(InvalidDataError, match="one count and one mean return per row"):
        LSW(gamma=0.9, features=PHI_AGG[:3], F_max=10).fit_statistics(st)
    with pytest.raises(InvalidParameterError, match="'statistics' parameter of LSW.fit_statistics"):
        LSW(gamma=0.9, F_max=10).fit_statistics(toy)


@pytest.mark.parametrize("make,names", [
    (lambda: DPLSW(budget=BUDGET, gamma=0.9, F_max=3.0, features=PHI_AGG, weights=W), ("values_", "theta_")),
    (lambda: LSL(gamma=0.9, features=PHI_AGG, lam=1.0), ("values_", "theta_")),
    (lambda: DPMonteCarlo(budget=BUDGET, F_max=3.0), ("value_", "value_std_")),
])
def test_fitted_attributes_before_fit_are_a_not_fitted_error(toy, make, names):
    from privrl.errors import NotFittedError

    est = make()
    for name in names:
        with pytest.raises(NotFittedError, match=f"not fitted yet: call 'fit' before using '{name}'"):
            getattr(est, name)
        assert not hasattr(est, name)
    est.fit(toy, rng=0)
    assert all(hasattr(est, name) for name in names)
