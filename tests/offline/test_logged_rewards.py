"""APVI / DP-APVI with logged (outcome) rewards: the reward sums are a third released family whose
sensitivity follows from the declared r_max and F_max; the accountant sees exactly the plan."""

import math

import numpy as np
import pytest

from offline.clinic_cases import quiet as _quiet
from privrl import InvalidDataError, InvalidParameterError, PrivacyBudget
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.offline import APVI, DPAPVI, DPVAPVI, Statistics, offline_statistics
from privrl.offline.calibration import count_noise, reward_sensitivity
from privrl.privacy import ConstantNoise, zcdp_to_approx_dp
from privrl.testing import use_noise


# ----------------------------------------------------------------------------- sensitivity
@pytest.mark.parametrize("r_max,F_max,H,expected", [(1.0, 1.0, 20, math.sqrt(2)), (1.0, None, 20, math.sqrt(40)),
                                                    (0.5, 1.2, 10, math.sqrt(2 * (2 * 0.25 + 0.04))),
                                                    (1.0, 50.0, 4, math.sqrt(8))])
def test_reward_sensitivity(r_max, F_max, H, expected):
    assert reward_sensitivity(H, r_max, F_max, "gaussian") == pytest.approx(expected)
    assert reward_sensitivity(H, r_max, F_max, "laplace") == pytest.approx(2 * min(F_max or H * r_max, H * r_max))


def test_replacing_one_trajectory_moves_the_reward_sums_by_at_most_the_sensitivity(clinic):
    """Outcome rewards (F_max = 1): random neighbours stay within √2 (ℓ2) and 2 (ℓ1); two
    successful trajectories on disjoint cells attain √2."""
    model, data = clinic
    H = model.horizon
    padded = data.as_padded()
    base = offline_statistics(data, 26, 5).reward_sums
    other = model.sample(np.full((26, 5), 0.2), 300, rng=3, pad_to_horizon=H).as_padded()
    rng = np.random.default_rng(0)
    worst2 = worst1 = 0.0
    for j in range(300):
        i = int(rng.integers(3000))
        nb = {k: v.copy() for k, v in padded.items()}
        for k in nb:
            nb[k][i] = other[k][j]
        diff = offline_statistics(nb, 26, 5).reward_sums - base
        worst2, worst1 = max(worst2, np.linalg.norm(diff)), max(worst1, np.abs(diff).sum())
    assert worst2 <= math.sqrt(2) + 1e-12 and worst1 <= 2 + 1e-12
    won = np.flatnonzero(padded["rewards"].sum(axis=1) == 1)
    a, b = padded["rewards"][won[0]].argmax(), padded["observations"][won[0]]
    later = [w for w in won if padded["observations"][w][padded["rewards"][w].argmax()] != b[a]]
    nb = {k: v.copy() for k, v in padded.items()}
    donor = {k: v.copy() for k, v in padded.items()}
    for k in nb:
        nb[k][won[0]] = donor[k][later[0]]
    diff = offline_statistics(nb, 26, 5).reward_sums - base
    assert np.linalg.norm(diff) == pytest.approx(math.sqrt(2))


# ----------------------------------------------------------------------------- accountant
@pytest.mark.parametrize("F_max", [1.0, None])
def test_tight_plan_spends_the_budget_with_the_reward_family(clinic, F_max):
    model, data = clinic
    est = _quiet(lambda: DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), F_max=F_max).fit(data, rng=0))
    plan = est.count_noise(6, 26, 5, 3000, logged_rewards=True)
    assert plan.reward_sensitivity == pytest.approx(math.sqrt(2) if F_max == 1.0 else math.sqrt(12))
    events = est.privacy_ledger_.events
    assert [e.noise_multiplier for e in events] == pytest.approx(
        [plan.scale[0] / plan.sensitivity[0], plan.scale[1] / plan.sensitivity[1],
         plan.reward_scale / plan.reward_sensitivity])
    assert 0.99 <= est.privacy_spent(1e-6) <= 1.0
    public = _quiet(lambda: DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-6)).fit(data, model, rng=0))
    assert len(public.privacy_ledger_.events) == 2                      # a public reward releases nothing more
    assert public.count_noise(6, 26, 5, 3000).scale[1] < plan.scale[1]  # the third family costs budget


def test_sound_and_laplace_plans_split_the_budget_in_thirds(clinic):
    model, data = clinic
    rho = 0.5
    est = _quiet(lambda: DPAPVI(budget=PrivacyBudget(rho=rho), calibration="sound", F_max=1.0).fit(data, rng=0))
    assert est.privacy_ledger_.zcdp_rho() == pytest.approx(rho, rel=1e-12)
    assert est.privacy_spent(1e-5) <= zcdp_to_approx_dp(rho, 1e-5) + 1e-9
    for e in est.privacy_ledger_.events:                                 # ρ/3 per family
        assert 1 / (2 * e.noise_multiplier**2) == pytest.approx(rho / 3)
    sound_plan = est.count_noise(6, 26, 5, logged_rewards=True)
    assert sound_plan.reward_scale == pytest.approx(math.sqrt(2) * math.sqrt(3 / (2 * rho)))
    for calibration in ("sound", "tight"):
        lap = _quiet(lambda c=calibration: DPAPVI(budget=PrivacyBudget(epsilon=2.0), calibration=c, F_max=1.0)
                     .fit(data, rng=0))
        assert sum(1.0 / e.noise_multiplier for e in lap.privacy_ledger_.events) == pytest.approx(2.0, rel=1e-6)
        assert lap.privacy_spent(1e-9) <= 2.0 + 1e-6
    with pytest.raises(InvalidParameterError, match="'calibration'.*logged"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), calibration="paper").fit(data, rng=0)


# ----------------------------------------------------------------------------- structure and utility
def test_released_reward_sums_enter_the_last_step_exactly(clinic):
    """With constant noise c and no privacy penalty, Q̄_{H−1} = clip(clip((R + c·σ_R)/ñ, 0, r_max) −
    E_R/(2ñ), 0, 1) on pairs above E_sa (V_H = 0: no variance term; E_R/(2ñ) the reward's pessimism)."""
    model, data = clinic
    c = 0.7
    est = use_noise(DPAPVI(budget=PrivacyBudget(rho=50.0), F_max=1.0, c2=0.0), ConstantNoise(c))
    est.fit(data, rng=0)
    plan = est.count_noise(6, 26, 5, 3000, logged_rewards=True)
    R = offline_statistics(data, 26, 5).reward_sums[-1]
    n = est.counts_[-1]
    bounded = n > plan.bound[0]
    assert bounded.sum() >= 5
    safe = np.where(bounded, n, 1.0)
    expected = np.clip(np.clip((R + c * plan.reward_scale) / safe, 0.0, 1.0) - plan.reward_bound / (2 * safe), 0, 1)
    assert np.any(expected[bounded] > 0)
    np.testing.assert_allclose(est.q_values_[-1][bounded], expected[bounded], rtol=1e-12)
    assert np.all(est.q_values_[-1][~bounded] == 0)


def test_apvi_with_logged_mean_rewards_equals_the_public_reward():
    """Data logging the mean reward r(s, a): R/n = r on every visited pair, so APVI is unchanged."""
    mdp = random_tabular_mdp(n_states=5, n_actions=3, horizon=4, rng=4)
    data = mdp.to_tabular().sample(covering_behaviour_policy(mdp.optimal_policy(), 3), 500, rng=0)
    public = APVI().fit(data, mdp.rewards)
    logged = APVI().fit(data)
    np.testing.assert_allclose(logged.q_values_, public.q_values_, atol=1e-12)


def test_outcome_rewards_learn_as_well_as_the_public_reward(clinic):
    model, data = clinic
    public = model.value(APVI(constants="practical").fit(data, model).policy_)
    logged = model.value(APVI(constants="practical").fit(data).policy_)
    assert abs(public - logged) < 0.03
    assert logged > model.value(model.logging_policy) - 0.03


# ----------------------------------------------------------------------------- declared bounds
def test_declared_bounds_are_checked(clinic):
    model, data = clinic
    twice = data.as_padded()
    twice["rewards"] = twice["rewards"] * 0.0 + 0.5               # returns of 3 > F_max = 1
    with pytest.raises(InvalidDataError, match="F_max=1.0"):
        APVI(F_max=1.0).fit(offline_statistics(twice, 26, 5), reward=None)
    with pytest.raises(InvalidDataError, match=r"rewards must lie in \[0.0, 0.4\]"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), r_max=0.4).fit(data, rng=0)
    with pytest.raises(InvalidParameterError, match="'reward'.*n_states"):
        APVI().fit(twice)
    with pytest.raises(InvalidParameterError, match="'r_max'"):
        APVI(r_max=1.5).fit(data)
    assert count_noise(6, 26, 5, PrivacyBudget(rho=1.0)).reward_scale == 0.0


def _all_ones_statistics(**recorded):
    """Dense statistics of 10 trajectories of H = 4 steps, every reward 1 (returns of 4)."""
    counts = np.zeros((4, 2, 2, 2))
    counts[:, 0, 0, 0] = 10
    sums = np.zeros((4, 2, 2))
    sums[:, 0, 0] = 10
    return Statistics.from_dense(counts, sums, **recorded)


@pytest.mark.parametrize("bounds", [{"r_max": 0.1}, {"F_max": 1.0}, {}])
def test_statistics_without_recorded_maxima_are_refused(bounds):
    """Reward sums within [0, counts] cannot show that every reward is at most r_max nor every
    return at most F_max: hand-built statistics that record neither are refused, naming the bound."""
    with pytest.raises(InvalidDataError, match="'r_max'.*max_reward is None"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), **bounds).fit(_all_ones_statistics(), rng=0)
    with pytest.raises(InvalidDataError, match="'r_max'.*max_reward is None"):
        APVI(**bounds).fit(_all_ones_statistics())


def test_statistics_are_checked_against_their_recorded_maxima():
    dp = DPAPVI(budget=PrivacyBudget(rho=1.0), r_max=0.1)
    with pytest.raises(InvalidDataError, match=r"\[0, r_max=0.1\]"):
        dp.fit(_all_ones_statistics(max_reward=1.0, max_return=4.0), rng=0)
    with pytest.raises(InvalidDataError, match="'F_max'.*max_return is None"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), F_max=1.0).fit(_all_ones_statistics(max_reward=1.0), rng=0)
    with pytest.raises(InvalidDataError, match="F_max=1.0"):
        DPAPVI(budget=PrivacyBudget(rho=1.0), F_max=1.0).fit(_all_ones_statistics(max_reward=1.0, max_return=4.0),
                                                             rng=0)
    fitted = _quiet(lambda: DPAPVI(budget=PrivacyBudget(rho=1.0), F_max=4.0).fit(
        _all_ones_statistics(max_reward=1.0, max_return=4.0), rng=0))
    assert fitted.count_noise(4, 2, 2, logged_rewards=True).reward_sensitivity == pytest.approx(2 * math.sqrt(2))
    # with a public reward the reward sums are not released: no recorded maxima needed
    _quiet(lambda: DPAPVI(budget=PrivacyBudget(rho=1.0)).fit(_all_ones_statistics(), np.ones((4, 2, 2)), rng=0))


def test_linear_fits_check_statistics_rewards_against_one():
    """DP-VAPVI's sensitivities rely on rewards in [0, 1]: Statistics must record it."""
    features = np.eye(4).reshape(2, 2, 4)
    with pytest.raises(InvalidDataError, match="'r_max'.*max_reward is None"):
        DPVAPVI(budget=PrivacyBudget(rho=1.0), split=False).fit(_all_ones_statistics(), features, rng=0)
    with pytest.raises(InvalidDataError, match=r"\[0, r_max=1.0\]"):
        DPVAPVI(budget=PrivacyBudget(rho=1.0), split=False).fit(_all_ones_statistics(max_reward=2.0), features,
                                                                rng=0)


def test_offline_statistics_record_the_maxima(clinic):
    _, data = clinic
    stats = offline_statistics(data, 26, 5)
    padded = data.as_padded()
    assert stats.max_reward == padded["rewards"].max()
    assert stats.max_return == padded["rewards"].sum(axis=1).max()
