"""The count privatizers of the tabular online family: noise scales from the stated sensitivities,
the ledger against the accountant, the kernel's counters against privrl's own counters, E_{ε,β}'s
tail bounds, and the §5.3 post-processing (Lemma 5.8) against an LP solver."""

import math

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.envs.river_swim import river_swim
from privrl.privacy import NumpyNoise
from privrl.privacy.draws import release_problems
from privrl.privacy.factorization import BLTCounter, blt_factorization
from privrl.privacy.tree import BinaryCounter, max_membership
from privrl.tabular_online import DPUCBVI, PrivateUCBVI
from privrl.tabular_online import _kernels as kern
from privrl.tabular_online.calibration import count_noise, gaussian_quantile, laplace_sum_quantile

MODEL = river_swim(3, 4)
K, H, S, A = 50, 4, 3, 2


def _plan(budget, **kw):
    kw.setdefault("privatizer", "central")
    return count_noise(kw.pop("privatizer"), budget, n_episodes=K, horizon=H, n_states=S, n_actions=A, **kw)


# ----------------------------------------------------------------------------- noise scales and ledgers
def test_laplace_tree_scale_is_4Hm_over_epsilon_and_the_ledger_spends_epsilon():
    est = DPUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=0.7)).fit(MODEL, rng=0)
    m = max_membership(K - 1)
    assert est.noise_.kind == "laplace" and est.noise_.counter == "tree"
    assert est.noise_.scale == pytest.approx(4 * H * m / 0.7, rel=1e-12)
    assert est.privacy_spent(0.0) == pytest.approx(0.7, rel=1e-9)
    assert release_problems(est.privacy_ledger_) == []


def test_laplace_paper_calibration_is_printed_and_the_ledger_says_what_it_costs():
    est = DPUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=1.0), calibration="paper").fit(MODEL, rng=0)
    assert est.noise_.scale == pytest.approx(2 * H * math.log2(K) / 1.0)
    # replace-one ℓ1 sensitivity 4H in m nodes: ε = 4H m / b (> the budget: the printed form is add/remove)
    assert est.privacy_spent(0.0) == pytest.approx(4 * H * max_membership(K - 1) / est.noise_.scale, rel=1e-9)
    assert est.privacy_spent(0.0) > 1.0


def test_local_laplace_scale_is_4H_over_epsilon():
    est = PrivateUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=2.0), privatizer="local").fit(MODEL, rng=0)
    assert est.guarantee == "LDP"
    assert est.noise_.scale == pytest.approx(4 * H / 2.0)
    assert est.privacy_spent(0.0) == pytest.approx(2.0, rel=1e-9)


@pytest.mark.parametrize("counter", ["tree", "blt"])
def test_gaussian_counters_spend_exactly_rho(counter):
    est = DPUCBVI(n_episodes=K, budget=PrivacyBudget(rho=0.3), counter=counter).fit(MODEL, rng=0)
    assert est.privacy_ledger_.zcdp_rho() == pytest.approx(0.3, rel=1e-9)
    sens = 2 * math.sqrt(H)
    if counter == "tree":
        assert est.noise_.scale == pytest.approx(math.sqrt(max_membership(K - 1)) * sens / math.sqrt(0.6))
    else:
        s_c = math.sqrt(blt_factorization(K - 1).column_norm2(K - 1))
        assert est.noise_.scale == pytest.approx(s_c * sens / math.sqrt(0.6))
    assert release_problems(est.privacy_ledger_) == []


def test_pooled_counts_use_the_pooled_l2_sensitivity():
    plan = _plan(PrivacyBudget(rho=0.5), counter="tree", pooled=True)
    assert plan.sensitivity == 2 * H and plan.dim == S * A * (S + 1)
    assert _plan(PrivacyBudget(epsilon=1.0), pooled=True).sensitivity == 4 * H   # ℓ1 unchanged


def test_the_fit_draws_exactly_the_declared_rows():
    est = DPUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=1.0)).fit(MODEL, rng=1)
    assert est.privacy_ledger_.draws.total() == (K - 1) * H * S * A * (S + 1)


def test_bad_budget_and_counter_combinations_are_refused():
    from privrl.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="'counter'"):
        DPUCBVI(n_episodes=K, budget=PrivacyBudget(epsilon=1.0), counter="blt").fit(MODEL, rng=0)
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        DPUCBVI(n_episodes=K, budget=PrivacyBudget(rho=1.0), calibration="paper").fit(MODEL, rng=0)


# ----------------------------------------------------------------------------- the kernel's counters
def test_kernel_tree_releases_equal_privrl_binary_counter_with_laplace_nodes():
    rng = np.random.default_rng(3)
    n, D = 13, 5
    Z = rng.laplace(size=(n, D))
    rows = iter(Z)
    counter = BinaryCounter((D,), n_items=n, noise=lambda shape, sym: next(rows))
    ours = kern.noise_releases(kern.TREE, Z, max(1, n.bit_length()), np.zeros(1), np.zeros(1))
    for t in range(n):
        counter.insert(np.zeros(D))
        np.testing.assert_array_equal(ours[t], counter.release())      # the same additions, bit for bit


def test_kernel_blt_releases_equal_privrl_blt_counter():
    n, D = 17, 4
    counter = BLTCounter((1, D), n_items=n, sigma=1.0, source=NumpyNoise(5), sensitivity=1.0)
    Z = NumpyNoise(5).gaussian((n, 1, D), 1.0)[:, 0]
    blt = counter.blt
    ours = kern.noise_releases(kern.BLT, Z, 1, np.array(blt.theta), np.array(blt.omega))
    for t in range(n):
        counter.insert(np.zeros((1, D)))
        np.testing.assert_allclose(ours[t], counter.release()[0], rtol=1e-12, atol=1e-12)


def test_local_noise_is_the_running_sum_of_messages():
    Z = np.random.default_rng(0).normal(size=(6, 3))
    out = kern.noise_releases(kern.LOCAL, Z, 1, np.zeros(1), np.zeros(1))
    np.testing.assert_allclose(out, np.cumsum(Z, axis=0))


# ----------------------------------------------------------------------------- E_{ε,β}
def test_laplace_sum_quantile_bounds_the_empirical_tail():
    rng = np.random.default_rng(0)
    b, m, failure = 2.0, 5, 0.01
    x = laplace_sum_quantile(b, m, 1.0, failure)
    sums = rng.laplace(scale=b, size=(200_000, m)).sum(axis=1)
    tail = np.mean(np.abs(sums) > x)
    assert tail <= failure                     # a union-bound quantile must not be too small
    assert tail >= failure / 20                # and Chernoff is not absurdly loose here


def test_gaussian_quantile_is_exact():
    x = gaussian_quantile(1.0, 1.0, 0.05)
    assert x == pytest.approx(1.959964, rel=1e-6)


def test_error_bound_holds_for_every_released_count_of_a_run():
    """|N̂ − N| ≤ E/4 over the whole run (all coordinates, all episodes) for the tree counter."""
    plan = _plan(PrivacyBudget(epsilon=1.0))
    Z = NumpyNoise(4).laplace((K - 1, plan.dim), plan.scale)
    rel = kern.noise_releases(kern.TREE, Z, max(1, (K - 1).bit_length()), np.zeros(1), np.zeros(1))
    assert np.abs(rel).max() <= plan.error_bound / 4


# ----------------------------------------------------------------------------- post-processing (§5.3)
def _linprog_t(nhat, total, quarter):
    from scipy.optimize import linprog

    S = len(nhat)
    c = np.zeros(S + 1)
    c[-1] = 1.0
    A_ub, b_ub = [], []
    for j in range(S):
        row = np.zeros(S + 1)
        row[j], row[-1] = 1.0, -1.0
        A_ub.append(row.copy())
        b_ub.append(nhat[j])
        row[j] = -1.0
        A_ub.append(row)
        b_ub.append(-nhat[j])
    A_ub.append(np.r_[np.ones(S), 0.0])
    b_ub.append(total + quarter)
    A_ub.append(np.r_[-np.ones(S), 0.0])
    b_ub.append(-(total - quarter))
    res = linprog(c, A_ub=np.array(A_ub), b_ub=np.array(b_ub), bounds=[(0, None)] * (S + 1))
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(40))
def test_projection_attains_the_lp_optimum_and_is_feasible(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, 7))
    nhat = rng.normal(rng.uniform(-5, 20), rng.uniform(0.1, 15), size=S)
    total = float(nhat.sum() + rng.normal(0, 20))
    quarter = float(rng.uniform(0.0, 10.0))
    x = np.empty(S)
    t = kern.project_row(nhat, total, quarter, x, np.empty(S))
    if total + quarter < 0:
        return                                         # infeasible LP: x = 0 by convention
    assert t == pytest.approx(_linprog_t(nhat, total, quarter), abs=1e-7)
    assert np.all(x >= 0) and np.max(np.abs(x - nhat)) <= t + 1e-9
    assert abs(x.sum() - total) <= quarter + 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_lemma_5_8_post_processed_counts_meet_assumption_3_1(seed):
    rng = np.random.default_rng(100 + seed)
    Hc, S_, A_, E = 2, 4, 2, 12.0
    n_sas = rng.integers(0, 30, size=Hc * S_ * A_ * S_).astype(float)
    n_sa = n_sas.reshape(-1, S_).sum(axis=1)
    noise = rng.uniform(-E / 4, E / 4, size=n_sa.size + n_sas.size)
    if seed % 2:                                        # adversarial: every noise at the bound
        noise = np.sign(noise) * E / 4
    nhat = np.concatenate([n_sa, n_sas]) + noise
    out_sa, out_sas = np.empty(n_sa.size), np.empty(n_sas.size)
    kern.postprocess(nhat, Hc, S_, A_, E, out_sa, out_sas)
    np.testing.assert_allclose(out_sa, out_sas.reshape(-1, S_).sum(axis=1))     # Ñ(s, a) = Σ Ñ(s, a, ·)
    assert np.all(out_sas > 0) and np.all(out_sa >= n_sa - 1e-9)                 # Ñ > 0, Ñ(s, a) ≥ N(s, a)
    assert np.max(np.abs(out_sas - n_sas)) <= E + 1e-9 and np.max(np.abs(out_sa - n_sa)) <= E + 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_post_processing_skips_the_search_for_t_only_where_the_clipped_counts_are_already_feasible(seed):
    """postprocess leaves out project_row's search for t where max(n̂, 0) already meets the sum
    constraint; every Ñ is still project_row's, bit for bit, on rows of both kinds."""
    rng = np.random.default_rng(300 + seed)
    Hc, S_, A_, E = 3, 5, 2, 40.0
    rows = Hc * S_ * A_
    nhat = np.concatenate([rng.normal(20.0, 15.0, size=rows), rng.normal(4.0, 6.0, size=rows * S_)])
    out_sa, out_sas = np.empty(rows), np.empty(rows * S_)
    kern.postprocess(nhat, Hc, S_, A_, E, out_sa, out_sas)
    feasible = 0
    for i in range(rows):
        row, x = nhat[rows + i * S_: rows + (i + 1) * S_].copy(), np.empty(S_)
        feasible += bool(kern._already_feasible(row, nhat[i], E / 4.0, np.empty(S_)))
        kern.project_row(row, nhat[i], E / 4.0, x, np.empty(S_))
        total = 0.0
        for value in x:
            total += value
        np.testing.assert_array_equal(out_sas[i * S_: (i + 1) * S_], x + E / (2.0 * S_))
        assert out_sa[i] == total + E / 2.0
    assert 0 < feasible < rows                         # both paths ran
