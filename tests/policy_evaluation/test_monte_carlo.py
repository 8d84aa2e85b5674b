"""MonteCarlo and DPMonteCarlo: statistics, sensitivities (against brute force and the
accountant), the release structure, bounds, warnings and accuracy."""

import itertools
import math
import warnings

import numpy as np
import pytest

from privrl import ConstantNoise, PrivacyBudget
from privrl.certificate import make_certificate
from privrl.data import TrajectoryDataset, truncate_to_horizon
from privrl.envs.chain import sample_chain
from privrl.errors import InvalidDataError, InvalidParameterError, UtilityWarning
from privrl.policy_evaluation import DPMonteCarlo, MonteCarlo, MonteCarloMechanism
from privrl.policy_evaluation.monte_carlo import group_sensitivity, return_statistics
from privrl.privacy.calibration import gaussian_multiplier
from privrl.testing import use_noise

from .conftest import TOY_EPISODES, make_dataset

EPS_DELTA = PrivacyBudget(epsilon=1.0, delta=1e-6)
GROUPS4 = np.array([0, 0, 1, 1])


def _returns(rewards, gamma):
    return sum(gamma**t * r for t, r in enumerate(rewards))


def test_non_private_values_by_hand(toy):
    est = MonteCarlo(gamma=0.9, groups=GROUPS4, F_max=3.0).fit(toy)
    assert est.value_ == pytest.approx(np.mean([_returns(r, 0.9) for _, r in TOY_EPISODES]))
    # first-visit returns per group: group 0 = states {0, 1}, group 1 = states {2, 3}
    g0 = [_returns([0, 0, 0, 1], 0.9), _returns([0, 1], 0.9), _returns([0, 1], 0.9)]   # ep 3 enters at step 1
    g1 = [_returns([1], 0.9), _returns([1], 0.9), _returns([1, 0, 1], 0.9)]
    np.testing.assert_allclose(est.group_values_, [np.mean(g0), np.mean(g1)])
    np.testing.assert_array_equal(est.group_counts_, [3, 3])
    np.testing.assert_allclose(est.values_, est.group_values_[GROUPS4])
    assert est.value_std_ == 0.0 and len(est.privacy_ledger_) == 0


def test_group_cap_keeps_the_first_groups_each_trajectory_enters(toy):
    capped = MonteCarlo(gamma=0.9, groups=np.arange(4), F_max=3.0, max_groups_per_trajectory=1).fit(toy)
    np.testing.assert_array_equal(capped.group_counts_, [1, 1, 1, 0])   # the first state of each episode


def _brute_force(n_groups: int, k: int, replace: bool) -> float:
    """max over the group sets A, B (|A|, |B| ≤ k) of the old and new trajectory and first-visit
    returns in {0, F_max} of ‖Δ(S_g/F_max, N_g)‖₁ (= ‖Δ‖₂² here: entries are 0 or ±1)."""
    best = 0.0
    sets = [c for r in range(k + 1) for c in itertools.combinations(range(n_groups), r)]
    for a in sets:
        for b in (sets if replace else [()]):
            for ra, rb in ((0.0, 1.0), (1.0, 0.0), (1.0, 1.0)):
                ds = np.zeros(n_groups)
                dn = np.zeros(n_groups)
                ds[list(a)] -= ra
                dn[list(a)] -= 1
                ds[list(b)] += rb
                dn[list(b)] += 1
                best = max(best, np.abs(ds).sum() + np.abs(dn).sum())
    return best


@pytest.mark.parametrize("n_groups,k", [(1, 1), (3, 1), (4, 2), (3, 2), (5, 5), (6, 2)])
def test_group_sensitivity_is_the_brute_force_maximum(n_groups, k):
    assert group_sensitivity(n_groups, k, "replace_one") == _brute_force(n_groups, k, True)
    assert group_sensitivity(n_groups, k, "add_or_remove_one") == _brute_force(n_groups, k, False)


def test_replacing_a_logged_trajectory_never_exceeds_the_sensitivities():
    data = sample_chain(60, n_states=6, rng=3)
    groups = np.array([0, 0, 1, 1, 2, 2])
    other = sample_chain(30, n_states=6, rng=4)
    mech = MonteCarloMechanism.create(EPS_DELTA, 1.0, n_groups=3, max_groups=3, mechanism="gaussian")

    def stat(d):
        s = return_statistics(np.asarray(d.rewards), d.episode_starts, 1.0, 1.0,
                              state_groups=groups[d.observations], n_groups=3, max_groups=3)
        return mech.statistic(s)

    base_v, base_g = stat(data)
    for j in range(30):
        v, g = stat(data.replace_episode(j % 60, other.episode(j)))
        assert abs(v[0] - base_v[0]) <= mech.sensitivities[0] + 1e-12
        assert np.sum((g - base_g) ** 2) <= mech.sensitivities[1] ** 2 + 1e-12


def test_the_worst_case_pair_attains_the_group_sensitivity():
    """γ = 1, reward F_max at the end: every first-visit return is F_max; the old trajectory
    enters groups {0, 1}, the new one {2, 3} (k = 2, G = 4): ‖Δ‖₂² = 2·min(2k, G) = 8."""
    groups = np.arange(4)
    old = return_statistics(np.array([0.0, 1.0]), np.array([0, 2]), 1.0, 1.0, state_groups=np.array([0, 1]),
                            n_groups=4, max_groups=2)
    new = return_statistics(np.array([0.0, 1.0]), np.array([0, 2]), 1.0, 1.0, state_groups=np.array([2, 3]),
                            n_groups=4, max_groups=2)
    mech = MonteCarloMechanism.create(EPS_DELTA, 1.0, n_groups=groups.size, max_groups=2, mechanism="gaussian")
    lap = MonteCarloMechanism.create(EPS_DELTA, 1.0, n_groups=groups.size, max_groups=2, mechanism="laplace")
    diff = mech.statistic(old)[1] - mech.statistic(new)[1]
    assert mech.sensitivities[1] ** 2 == pytest.approx(8.0) == lap.sensitivities[1]
    assert np.sum(diff**2) == pytest.approx(8.0) == np.sum(np.abs(diff))


@pytest.mark.parametrize("groups", [None, GROUPS4])
@pytest.mark.parametrize("neighboring", ["replace_one", "add_or_remove_one"])
def test_ledger_spends_exactly_the_budget(toy, groups, neighboring):
    for budget in (EPS_DELTA, PrivacyBudget(epsilon=0.5, delta=1e-8)):
        est = DPMonteCarlo(budget=budget, gamma=0.9, F_max=3.0, groups=groups, neighboring=neighboring,
                           mechanism="gaussian").fit(toy, rng=0)
        assert len(est.privacy_ledger_) == (1 if groups is None else 2)
        assert budget.epsilon * (1 - 1e-6) <= est.privacy_spent() <= budget.epsilon
    pure = DPMonteCarlo(budget=PrivacyBudget(epsilon=0.7), gamma=0.9, F_max=3.0, groups=groups,
                        neighboring=neighboring).fit(toy, rng=0)
    assert pure.mechanism_.kind == "laplace" and pure.privacy_ledger_.pure_epsilon() == pytest.approx(0.7, rel=1e-8)
    cert = make_certificate(pure, algorithm="dp-monte-carlo")
    assert cert["guarantee"] == "epsilon-DP" and cert["epsilon_spent"] <= 0.7
    zcdp = DPMonteCarlo(budget=PrivacyBudget(rho=0.3), gamma=0.9, F_max=3.0, groups=groups,
                        neighboring=neighboring).fit(toy, rng=0)
    assert zcdp.guarantee == "rho-zCDP" and zcdp.privacy_ledger_.zcdp_rho() == pytest.approx(0.3, rel=1e-9)


def test_release_structure_with_constant_noise(toy):
    """Replace one: Ĵ = (S + c σ F_max)/n with the public σ of the plan; the event is Gaussian σ/Δ."""
    est = use_noise(DPMonteCarlo(budget=EPS_DELTA, gamma=0.9, F_max=3.0, mechanism="gaussian"),
                    ConstantNoise(2.0)).fit(toy, rng=0)
    exact = MonteCarlo(gamma=0.9, F_max=3.0).fit(toy)
    sigma = gaussian_multiplier(1.0, 1e-6)          # Δ = 1 in units of F_max: the whole μ on J
    assert est.value_ == pytest.approx(exact.value_ + 2.0 * sigma * 3.0 / 3, rel=1e-6)
    assert est.value_std_ == pytest.approx(sigma * 3.0 / 3, rel=1e-6)


def test_auto_picks_the_smaller_noise():
    assert MonteCarloMechanism.create(EPS_DELTA, 1.0).kind == "laplace"            # std √2 < 4.22
    assert MonteCarloMechanism.create(PrivacyBudget(epsilon=30.0, delta=1e-6), 1.0).kind == "laplace"
    assert MonteCarloMechanism.create(EPS_DELTA, 1.0, n_groups=20, max_groups=20).kind == "gaussian"
    assert MonteCarloMechanism.create(PrivacyBudget(rho=1.0), 1.0).kind == "gaussian"
    assert MonteCarloMechanism.create(PrivacyBudget(epsilon=1.0), 1.0).kind == "laplace"
    with pytest.raises(InvalidParameterError, match="'mechanism'"):
        MonteCarloMechanism.create(PrivacyBudget(epsilon=1.0), 1.0, mechanism="gaussian")
    with pytest.raises(InvalidParameterError, match="'mechanism'"):
        MonteCarloMechanism.create(PrivacyBudget(rho=1.0), 1.0, mechanism="laplace")


def test_add_or_remove_releases_no_trajectory_count(toy):
    est = DPMonteCarlo(budget=EPS_DELTA, gamma=0.9, F_max=3.0, neighboring="add_or_remove_one").fit(toy, rng=0)
    assert est.n_trajectories_ is None and np.isfinite(est.released_count_)
    assert est.neighboring == "add_or_remove_one"
    cert = make_certificate(est, algorithm="dp-monte-carlo")
    assert cert["neighboring"] == "add_or_remove_one"


def test_returns_are_validated_not_clipped():
    big = make_dataset([([0, 1], [1.0, 1.0])], reward_bounds=(0.0, 1.0))
    with pytest.raises(InvalidDataError, match="F_max"):
        MonteCarlo(F_max=1.5).fit(big)
    assert MonteCarlo(F_max=1.5, clip_returns=True).fit(big).value_ == 1.5


def test_gamma_one_needs_a_return_bound(toy):
    with pytest.raises(InvalidParameterError, match="'F_max'"):
        MonteCarlo(gamma=1.0).fit(toy)
    cut = truncate_to_horizon(toy, 3)
    est = MonteCarlo(gamma=1.0).fit(cut)
    assert est.F_max_ == 3.0          # R_max · H
    assert est.value_ == pytest.approx(np.mean([0.0, 1.0, 2.0]))


def test_warnings_fire_only_when_noise_dominates():
    tiny = sample_chain(5, n_states=6, rng=0)
    with pytest.warns(UtilityWarning, match="no better than the constant F_max/2"):
        DPMonteCarlo(budget=PrivacyBudget(epsilon=0.1, delta=1e-3), F_max=1.0).fit(tiny, rng=0)
    with pytest.warns(UtilityWarning, match="group values have a noise std"):
        DPMonteCarlo(budget=PrivacyBudget(epsilon=1.0, delta=1e-3), F_max=1.0,
                     groups=np.arange(6)).fit(sample_chain(10, n_states=6, rng=0), rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        DPMonteCarlo(budget=EPS_DELTA, F_max=1.0, groups=np.arange(6) // 2).fit(
            sample_chain(10_000, n_states=6, rng=0), rng=0)


def test_accuracy_on_the_chain():
    """n = 10⁴, (1, 10⁻⁶): |Ĵ − J_n| ≤ 0.01 and group RMSE ≤ 0.05 against the non-private
    estimate on the same data (10 noise seeds)."""
    data = sample_chain(10_000, n_states=20, rng=5)
    groups = np.arange(20) // 4
    exact = MonteCarlo(F_max=1.0, groups=groups).fit(data)
    errors, rmse = [], []
    for seed in range(10):
        est = DPMonteCarlo(budget=EPS_DELTA, F_max=1.0, groups=groups).fit(data, rng=seed)
        errors.append(abs(est.value_ - exact.value_))
        rmse.append(math.sqrt(np.mean((est.group_values_ - exact.group_values_) ** 2)))
    assert max(errors) <= 0.01 and max(rmse) <= 0.05


def test_continuous_observations_are_fine_without_groups():
    obs = np.zeros((4, 2))
    data = TrajectoryDataset(obs, np.zeros(4, int), np.array([0.0, 1.0, 0.0, 0.0]), obs, np.array([0, 2, 4]))
    assert MonteCarlo(F_max=1.0).fit(data).value_ == 0.5
    with pytest.raises(InvalidDataError, match="tabular"):
        MonteCarlo(F_max=1.0, groups=np.zeros(3)).fit(data)


@pytest.mark.parametrize("make", [lambda g: MonteCarlo(F_max=3.0, groups=g),
                                  lambda g: DPMonteCarlo(budget=EPS_DELTA, F_max=3.0, groups=g)])
def test_group_maps_must_match_the_states(toy, make):
    """One entry per state and ids below the number of states: one id of 10⁶ took 3 GB (a release per
    group). The number of states is the dataset's (4 here), else the map's length."""
    with pytest.raises(InvalidParameterError, match=r"'groups'.*\[0, 4\).*Got 1000000 instead"):
        make(np.array([0, 1, 1, 10**6])).fit(toy, rng=0)
    with pytest.raises(InvalidParameterError, match=r"'groups'.*shape \(4,\)"):
        make(np.zeros(5, dtype=int)).fit(toy, rng=0)
    undeclared = make_dataset(TOY_EPISODES, n_states=None)
    with pytest.raises(InvalidParameterError, match=r"'groups'.*\[0, 4\).*Got 4 instead"):
        make(np.array([0, 1, 2, 4])).fit(undeclared, rng=0)
