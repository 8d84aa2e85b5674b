"""LinOpt's central privatizer with the square-root factorization counter (counter="factorization",
tight calibration): release structure, the ledger's spend, knobs that never touch privacy, and an
independent check of the privacy claim μ = √(Σ_{x,h} (s_n Δ_{x,h}/σ_{x,h})²); the same for the BLT
counter (counter="blt", the default under tight)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linear_mixture_cases import B1, MODEL, check_constant_noise_releases
from privrl import PrivacyBudget
from privrl.errors import InvalidParameterError, UtilityWarning
from privrl.linear_mixture import CentralFactorizationPrivatizer, LinOptPO, LinOptVI
from privrl.linear_mixture import calibration as cal
from privrl.privacy import Ledger
from privrl.privacy.factorization import sqrt_coefficients, sqrt_factor_matrix


def test_release_is_prefix_sum_plus_c_sigma_times_partial_sums_of_c():
    """ConstantNoise(c): after t users, every entry is the exact prefix sum plus c·σ_{x,h}·Σ_{k<t} c_k
    (every z_j = c), plus γ_h I on the Grams; the ledger holds the plan's one release per stream/step."""
    K, value = 12, 0.75
    est = LinOptVI(n_episodes=K, budget=B1, counter="factorization")
    reg = est.regularizer(MODEL)
    assert type(reg) is CentralFactorizationPrivatizer and reg.guarantee == "JDP"
    coef = sqrt_coefficients(K - 1)
    check_constant_noise_releases(reg, K, value, lambda t: coef[:t].sum())
    std = reg.plan.std
    assert std[0, -1] == std[1, -1] == 0.0
    assert reg.rel.ledger.events == tuple(reg.plan.events())


def test_privacy_claim_independent_check():
    """The ledger's μ with the square root's matrix A (s_n: its largest column norm)."""
    _check_the_privacy_claim("factorization", sqrt_factor_matrix, rel=1e-12)


def _check_the_privacy_claim(counter, factor_matrix, rel):
    """The ledger's μ (from its Gaussian leaves) equals √(Σ_{x,h} (s Δ_{x,h}/σ_{x,h})²) with Δ the tight
    per-step replace-one sensitivities and s the largest column norm of the counter's n × n noise matrix
    ``factor_matrix(n)`` (n = K − 1) computed here from the matrix itself, with one release per stream and
    step; and it is the budget's μ."""
    for K in (9, 130):
        est = LinOptVI(n_episodes=K, budget=B1, counter=counter, constants="practical").fit(MODEL, rng=3)
        plan = est.noise_plan(MODEL)
        M = factor_matrix(K - 1)
        s = float(np.sqrt(np.max(np.sum(M * M, axis=0))))
        delta = cal.tight_sensitivities(MODEL.d1, MODEL.d2, MODEL.horizon).rows(MODEL.horizon)
        on = delta > 0
        mu_claim = math.sqrt(float(np.sum((s * delta[on] / plan.std[on]) ** 2)))
        leaves = est.privacy_ledger_.leaves()
        mu_ledger = math.sqrt(sum(k / e.noise_multiplier**2 for e, k in leaves if hasattr(e, "noise_multiplier")))
        assert mu_ledger == pytest.approx(mu_claim, rel=rel)
        assert sum(k for e, k in leaves if hasattr(e, "noise_multiplier")) == int(on.sum())   # one release each
        assert mu_ledger == pytest.approx(0.26805, abs=1e-4)                  # the analytic μ of (1, 1e-5)
        assert 0.99 <= est.privacy_spent() <= 1.0


@settings(max_examples=25, deadline=None)
@given(log_eps=st.floats(math.log(0.05), math.log(50.0)), log_delta=st.floats(math.log(1e-9), math.log(1e-3)),
       K=st.integers(2, 5000))
def test_tight_spends_between_99_and_100_percent_of_random_budgets(log_eps, log_delta, K):
    eps, delta = math.exp(log_eps), math.exp(log_delta)
    plan = cal.noise_plan("central", PrivacyBudget(epsilon=eps, delta=delta), "tight", n_episodes=K, horizon=3,
                          d1=2, d2=3, counter="factorization")
    assert plan.count == 1
    spent = Ledger(plan.events()).epsilon(delta)
    assert 0.99 * eps <= spent <= eps


def test_ledger_and_spend_identical_whatever_the_knobs():
    knob_sets = [{}, {"constants": "practical"}, {"beta_scale": 0.01, "upsilon": "monte_carlo"},
                 {"noise_term_scale": 0.2}, {"shift_scale": 3.0, "lam": 7.0, "alpha": 0.5},
                 {"constants": "practical", "alpha": 0.001}]
    for cls, extra in ((LinOptVI, {"tie_break": "random"}), (LinOptPO, {"eta": 0.3})):
        ledgers, spent = [], []
        for knobs in knob_sets + [extra]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UtilityWarning)
                est = cls(n_episodes=25, budget=B1, counter="factorization", **knobs).fit(MODEL, rng=1)
            ledgers.append(est.privacy_ledger_)
            spent.append(est.privacy_spent())
        assert all(led == ledgers[0] for led in ledgers) and len(set(spent)) == 1


def test_less_noise_than_the_tree_at_the_standard_budget():
    """K = 2·10⁴, E2 sizes, (1, 1e-5): the prefix noise's entry std σ√M (the Υ scale) drops from the
    tree's σ√m (m = 15) to σ√(s_n²) (s_n² ≈ 4.22), ≈ 3.6× at the same μ."""
    kw = dict(n_episodes=20_000, horizon=5, d1=3, d2=3)
    tree, fac = (cal.noise_plan("central", B1, "tight", counter=c, **kw) for c in ("tree", "factorization"))
    assert tree.mu == pytest.approx(fac.mu, rel=1e-12)
    ratio = tree.std[0, 0] * math.sqrt(tree.n_noise_terms) / (fac.std[0, 0] * math.sqrt(fac.n_noise_terms))
    assert ratio == pytest.approx(15 / 4.2186, rel=1e-3)


def test_factorization_needs_tight_calibration_and_local_ignores_it():
    with pytest.raises(InvalidParameterError, match="counter"):
        LinOptVI(n_episodes=10, budget=B1, calibration="sound", counter="factorization").noise_plan(MODEL)
    local = LinOptVI(n_episodes=10, budget=B1, privatizer="local", counter="factorization").noise_plan(MODEL)
    assert local.counter == "tree" and local.count == 1 and local.n_noise_terms == 10


def test_infinite_budget_is_the_non_private_learner():
    a = LinOptVI(n_episodes=30, budget=PrivacyBudget.non_private(), counter="factorization").fit(MODEL, rng=2)
    b = LinOptVI(n_episodes=30, budget=PrivacyBudget.non_private(), privatizer="none").fit(MODEL, rng=2)
    assert np.array_equal(a.regret_, b.regret_) and a.privacy_ledger_.is_empty


# --------------------------------------------------------------------------- the BLT counter (the default)
def _blt_matrix(n):
    from privrl.privacy.factorization import blt_factorization

    c = blt_factorization(n).coefficients(n)
    i, j = np.indices((n, n))
    return np.where(i >= j, c[np.clip(i - j, 0, None)], 0.0)


def test_blt_is_the_default_under_tight_and_releases_prefix_sums_plus_b_partial_sums():
    """counter='auto' under tight is the BLT; ConstantNoise(c): after t users every entry is the
    exact prefix sum plus c·σ_{x,h}·Σ_{k<t} b_k (+ γ_h I on the Grams); the ledger holds the plan's
    one release per stream and step."""
    from privrl.privacy.factorization import BLTCounter, blt_factorization

    assert LinOptVI(n_episodes=12, budget=B1).noise_plan(MODEL).counter == "blt"
    assert LinOptVI(n_episodes=12, budget=B1, calibration="sound").noise_plan(MODEL).counter == "tree"
    K, value = 12, 0.75
    reg = LinOptVI(n_episodes=K, budget=B1).regularizer(MODEL)
    assert type(reg) is CentralFactorizationPrivatizer
    b = blt_factorization(K - 1).noise_coefficients(K - 1)
    check_constant_noise_releases(reg, K, value, lambda t: b[:t].sum())
    assert all(type(c) is BLTCounter for c in reg._counters)
    assert reg.rel.ledger.events == tuple(reg.plan.events())


def test_blt_privacy_claim_independent_check():
    """The same with the BLT's matrix C (s_C: its largest column norm)."""
    _check_the_privacy_claim("blt", _blt_matrix, rel=1e-10)


def test_blt_needs_tight_calibration_and_an_infinite_budget_is_the_non_private_learner():
    with pytest.raises(InvalidParameterError, match="counter"):
        LinOptVI(n_episodes=10, budget=B1, calibration="paper", counter="blt").noise_plan(MODEL)
    a = LinOptVI(n_episodes=30, budget=PrivacyBudget.non_private(), counter="blt").fit(MODEL, rng=2)
    b = LinOptVI(n_episodes=30, budget=PrivacyBudget.non_private(), privatizer="none").fit(MODEL, rng=2)
    assert np.array_equal(a.regret_, b.regret_) and a.privacy_ledger_.is_empty
