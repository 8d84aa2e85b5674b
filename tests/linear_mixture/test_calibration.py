"""Constants, radii and accounting against the spec's reference numbers (§7.2, tests 8–13)."""

import math

import numpy as np
import pytest

from privrl.errors import InvalidDataError
from privrl.linear_mixture import CentralTreePrivatizer, LocalPrivatizer, NonPrivate
from privrl.linear_mixture import calibration as cal
from privrl.privacy import Ledger, zcdp_to_approx_dp

K, H, D1, D2, EPS, DELTA, ALPHA = 1000, 5, 4, 4, 1.0, 1e-5, 0.01
REL = 1e-6


def _constants(calibration, *, depth=None, terms=None):
    m = cal.tree_depth(K)
    sens = cal.sensitivities(D1, H, calibration=calibration)
    sig = cal.noise_stds(sens, horizon=H, epsilon=EPS, delta=DELTA, depth=depth or m)
    c = cal.regularity_constants(sig, d1=D1, d2=D2, n_episodes=K, horizon=H, alpha=ALPHA, n_noise_terms=terms or m)
    beta = cal.confidence_radii(c, d1=D1, d2=D2, n_episodes=K, horizon=H, alpha=ALPHA)
    return sig, c, beta


def test_reference_numbers_paper_mode():
    sig, c, (bp, br) = _constants("paper")
    assert cal.tree_depth(K) == 10
    for got, want in [(sig.p1, 34068.939), (sig.p2, 17034.470), (sig.r1, 340.68939), (sig.r2, 340.68939),
                      (c.upsilon_p, 2049978.60), (c.upsilon_r, 20499.786), (c.nu_p, 277.91287),
                      (c.nu_r, 55.582574), (bp, 5246.5566), (br, 553.33005)]:
        assert got == pytest.approx(want, rel=REL)
    assert c.shift_p == 2 * c.upsilon_p and c.lambda_max_p == 3 * c.upsilon_p and c.lambda_min_p == c.upsilon_p
    bound = cal.vi_regret_bound(c, bp, br, d1=D1, d2=D2, n_episodes=K, horizon=H, alpha=ALPHA)
    assert bound == pytest.approx(7.90168e5, rel=1e-5)


def test_reference_numbers_replace_mode():
    sig, c, (bp, br) = _constants("sound")
    for got, want in [(sig.p1, 48180.756), (sig.p2, 34068.939), (sig.r1, 481.80756), (sig.r2, 681.37878),
                      (bp, 6374.4625), (br, 685.06803)]:
        assert got == pytest.approx(want, rel=REL)


def test_reference_numbers_non_private_ldp_and_step():
    c = NonPrivate(1.0).constants(ALPHA)
    bp, br = cal.confidence_radii(c, d1=D1, d2=D2, n_episodes=K, horizon=H, alpha=ALPHA)
    assert (bp, br) == (pytest.approx(20.189265, rel=REL), pytest.approx(4.9381554, rel=REL))
    assert cal.vi_regret_bound(c, bp, br, d1=D1, d2=D2, n_episodes=K, horizon=H, alpha=ALPHA) == \
        pytest.approx(1.10449e5, rel=1e-5)
    sig, c, (bp, _) = _constants("paper", depth=1, terms=K)          # derived LDP (§3.4)
    assert sig.p1 == pytest.approx(10773.545, rel=REL)
    assert c.upsilon_p == pytest.approx(6482601.5, rel=REL)
    assert bp == pytest.approx(9322.959, rel=REL)
    assert cal.po_step_size(16, 1000, 5) == pytest.approx(0.01489319, rel=REL)


def test_paper_closed_form_accounting():
    rho = cal.paper_rho_total(EPS, DELTA, H)
    assert rho == pytest.approx(8.6155e-4, rel=1e-4)
    assert cal.paper_epsilon_total(EPS, DELTA, H) == pytest.approx(1.0008616, rel=REL)
    per_counter = EPS / (4 * H) + EPS**2 / (64 * H**2 * math.log(4 * H / DELTA))
    assert per_counter == pytest.approx(0.05004308, rel=REL)
    assert zcdp_to_approx_dp(rho, DELTA, method="bun_steinke") == pytest.approx(0.2000500, rel=1e-5)


def _plan(kind="central", calibration="sound", eps=EPS, **kw):
    from privrl import PrivacyBudget
    budget = PrivacyBudget(epsilon=eps, delta=DELTA) if math.isfinite(eps) else PrivacyBudget.non_private()
    return cal.noise_plan(kind, budget, calibration, n_episodes=K, horizon=H, d1=D1, d2=D2, **kw)


def _start(cls, calibration="sound", eps=EPS, **kw):
    reg = cls(_plan("central" if cls is CentralTreePrivatizer else "local", calibration, eps), alpha=ALPHA, **kw)
    reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rng=0)
    return reg


@pytest.mark.parametrize("calibration", ["paper", "sound"])
def test_ledger_matches_closed_form_and_stays_within_target(calibration):
    """Central: each user's item is in m nodes of each of the 4H counters; the ledger composes
    exactly those Gaussians. Its zCDP equals the paper's ρ = ε²/(16H ln(4H/δ)) with the sound σ
    (replace-one Δ in σ and ledger); paper mode computes σ from the printed Δ (1/√2 and 1/2 of the
    replacement ones) while the ledger keeps the replacement Δ: ρ is (2+4+2+4)/4 = 3× larger."""
    reg = _start(CentralTreePrivatizer, calibration)
    ledger = reg.rel.ledger
    assert ledger.events == tuple(reg.events())
    rho_paper = cal.paper_rho_total(EPS, DELTA, H)
    if calibration == "sound":
        assert ledger.zcdp_rho() == pytest.approx(rho_paper, rel=1e-9)
    else:
        assert ledger.zcdp_rho() == pytest.approx(3 * rho_paper, rel=1e-9)
    eps = ledger.epsilon(DELTA)
    assert eps <= zcdp_to_approx_dp(ledger.zcdp_rho(), DELTA, method="bun_steinke") + 1e-6
    assert eps <= EPS
    assert eps <= cal.paper_epsilon_total(EPS, DELTA, H)


def test_ldp_ledger_is_one_message_per_stream_and_step():
    reg = _start(LocalPrivatizer)
    assert Ledger(reg.events()).zcdp_rho() == pytest.approx(cal.paper_rho_total(EPS, DELTA, H), rel=1e-9)
    assert len(reg.events()) == 4 and all(len(e.events) == H for e in reg.events())


@pytest.mark.parametrize("kind", ["central", "local"])
def test_tight_plan_is_one_gaussian_mechanism_at_the_budget(kind):
    """Tight: count·Σ Δ²/σ² = μ² with μ the exact analytic Gaussian μ of (ε, δ), so the ledger's ε is
    the target (within [0.99, 1]); the last step's p-streams release nothing (ϕ ≡ 0, V ≡ 0)."""
    from privrl import PrivacyBudget
    from privrl.privacy.calibration import gaussian_mu
    plan = _plan(kind, "tight")
    assert plan.mu == pytest.approx(gaussian_mu(PrivacyBudget(epsilon=EPS, delta=DELTA)), rel=1e-8)
    assert plan.std[0, -1] == plan.std[1, -1] == plan.sensitivity[0, -1] == plan.sensitivity[1, -1] == 0
    assert np.all(plan.std[:, :-1] > 0) and np.all(plan.std[2:] > 0)
    eps = Ledger(plan.events()).epsilon(DELTA)
    assert 0.99 * EPS <= eps <= EPS
    # the split minimises the bound's private part: no better than the even split (σ ∝ Δ) it starts from
    on = plan.sensitivity > 0
    even = plan.sensitivity * np.sqrt(plan.count * on.sum()) / plan.mu        # σ = tΔ with the same μ
    assert cal.split_objective(plan.std, d1=D1, d2=D2, n_episodes=K) <= \
        cal.split_objective(even, d1=D1, d2=D2, n_episodes=K) * (1 + 1e-9)


def test_operator_norm_pd_and_chi_square_bounds():
    """Tests 8–10 with K = 1024, H = 3, d1 = 4, α = 0.05, σ = 1 (50 seeds × all k, h):
    ‖N‖ ≤ Υ_p, mean ‖N‖ ≤ 4√(popcount(k−1) d1)σ, λ_min(Λ) ≥ Υ_p, ‖Z‖ ≤ 3Υ_p, ‖z‖ ≤ chi bound."""
    K1, H1, d1, alpha = 1024, 3, 4, 0.05
    m = cal.tree_depth(K1)
    ups = cal.upsilon_theory(1.0, n_noise_terms=m, dim=d1, n_episodes=K1, horizon=H1, alpha=alpha)
    chi = math.sqrt(m) * (math.sqrt(d1) + math.sqrt(2 * math.log(4 * K1 * H1 / alpha)))
    from privrl.privacy.tree import BinaryCounter
    n_seeds = 50
    N = BinaryCounter((n_seeds, H1, d1, d1), n_items=K1 - 1, sigma=1.0, symmetric=True, rng=1)
    z = BinaryCounter((n_seeds, H1, d1), n_items=K1 - 1, sigma=1.0, rng=2)
    max_norm, max_z = 0.0, 0.0
    for t in range(1, K1):
        N.insert(np.zeros(N.shape))
        z.insert(np.zeros(z.shape))
        if t % 7 and t != K1 - 1:
            continue
        norms = np.linalg.norm(N.release(), ord=2, axis=(-2, -1))
        max_norm = max(max_norm, norms.max())
        assert norms.mean() <= 4 * math.sqrt(bin(t).count("1") * d1)
        max_z = max(max_z, np.linalg.norm(z.release(), axis=-1).max())
        lam = np.linalg.eigvalsh(N.release() + 2 * ups * np.eye(d1))
        assert lam[..., 0].min() >= ups and lam[..., -1].max() <= 3 * ups
    assert max_norm <= ups and max_z <= chi


def test_pd_floor_is_noop_on_good_event_and_fixes_bad_one():
    from privrl.linear_mixture.regularizers import _floor_eigenvalues
    good = np.stack([5 * np.eye(3), np.diag([4.0, 6.0, 9.0])])
    assert _floor_eigenvalues(good, 4.0) is good
    bad = np.stack([np.diag([1.0, 6.0, 9.0])])
    fixed = _floor_eigenvalues(bad, 4.0)
    assert np.linalg.eigvalsh(fixed)[0, 0] == pytest.approx(4.0)


def test_monte_carlo_upsilon_is_tighter_and_valid():
    kw = dict(n_noise_terms=10, dim=3, n_episodes=10**5, horizon=5, alpha=0.05)
    theory = cal.upsilon_theory(1.0, **kw)
    mc = cal.upsilon_monte_carlo(1.0, **kw)
    assert mc < theory
    x = np.linalg.norm(__import__("privrl").privacy.tree.symmetric_gaussian(
        np.random.default_rng(1), (20000, 3, 3), math.sqrt(10)), ord=2, axis=(1, 2))
    assert x.max() < mc   # far in the tail


def test_inputs_outside_bounds_raise_or_are_clipped():
    reg = NonPrivate(1.0)
    reg.start(n_episodes=10, horizon=2, d1=2, d2=2)
    ok = (np.zeros((2, 2)), np.zeros(2), np.zeros((2, 2)), np.zeros(2))
    reg.update(*ok)
    with pytest.raises(InvalidDataError, match="clip_inputs"):
        reg.update(ok[0], ok[1], ok[2], np.array([0.5, 1.5]))
    with pytest.raises(InvalidDataError):
        reg.update(np.full((2, 2), 10.0), *ok[1:])
    from privrl import PrivacyBudget
    plan = cal.noise_plan("central", PrivacyBudget.non_private(), "sound", n_episodes=10, horizon=2, d1=2, d2=2)
    clip = CentralTreePrivatizer(plan, clip_inputs=True)
    clip.start(n_episodes=10, horizon=2, d1=2, d2=2)
    Lp, up, Lr, ur = clip.update(np.full((2, 2), 10.0), np.array([3.0, -1.0]), np.full((2, 2), 3.0),
                                 np.array([2.0, 0.5]))
    L = math.sqrt(2) * 2
    np.testing.assert_allclose(np.trace(Lp - np.eye(2), axis1=1, axis2=2), L**2)   # ‖x‖² after clipping
    np.testing.assert_allclose(np.linalg.norm(up, axis=1), [L * 2.0, 0.0])          # y clipped to [0, H]
    np.testing.assert_allclose(ur[:, 0], [1.0 / math.sqrt(2), 0.5 / math.sqrt(2)])  # r clipped to [0, 1]


def test_tight_bounds_are_per_step_and_enforced():
    """Under tight calibration the sensitivities rely on ‖ϕ_h‖ ≤ L_ϕ(H−h−1)/H and V_{h+1} ∈ [0, H−h−1]
    (0-indexed; the last step sends exactly 0): a contribution beyond them raises, never prints it,
    and clip_inputs projects onto them."""
    from privrl import PrivacyBudget
    plan = cal.noise_plan("central", PrivacyBudget(epsilon=1.0, delta=1e-5), "tight", n_episodes=10, horizon=3,
                          d1=2, d2=2)
    L = math.sqrt(2) * 3
    np.testing.assert_allclose(plan.x_bound, [L * 2 / 3, L / 3, 0.0])
    np.testing.assert_allclose(plan.y_bound, [2.0, 1.0, 0.0])
    reg = CentralTreePrivatizer(plan)
    reg.start(n_episodes=10, horizon=3, d1=2, d2=2, rng=0)
    zeros = (np.zeros((3, 2)), np.zeros(3), np.zeros((3, 2)), np.zeros(3))
    reg.update(*zeros)
    y = np.array([0.0, 1.5, 0.0])                                  # V_2 may not exceed H − 2 = 1
    with pytest.raises(InvalidDataError, match="clip_inputs") as info:
        reg.update(zeros[0], y, zeros[2], zeros[3])
    assert "1.5" not in str(info.value)
    x = np.zeros((3, 2))
    x[2, 0] = 1e-6                                                  # the last step's ϕ must be exactly 0
    with pytest.raises(InvalidDataError):
        reg.update(x, *zeros[1:])
    clip = CentralTreePrivatizer(plan, clip_inputs=True)
    clip.start(n_episodes=10, horizon=3, d1=2, d2=2, rng=0)
    got = clip._check(np.full((3, 2), 100.0), np.array([9.0, 9.0, 9.0]), zeros[2], zeros[3])
    np.testing.assert_allclose(np.linalg.norm(got[0], axis=1), plan.x_bound)
    np.testing.assert_allclose(got[1], plan.y_bound)


def test_bad_privatizer_parameters_raise():
    from privrl import PrivacyBudget
    from privrl.errors import InvalidParameterError
    plan = _plan()
    with pytest.raises(InvalidParameterError, match="shift_scale"):
        CentralTreePrivatizer(plan, shift_scale=0.5)
    with pytest.raises(InvalidParameterError, match="plan"):
        LocalPrivatizer(plan)                                      # a central plan
    with pytest.raises(InvalidParameterError, match="calibration"):
        cal.noise_plan("local", PrivacyBudget(epsilon=1.0, delta=1e-5), "wrong", n_episodes=5, horizon=2, d1=1, d2=1)
    with pytest.raises(InvalidParameterError, match="budget"):
        cal.noise_plan("central", PrivacyBudget(rho=1.0), "sound", n_episodes=5, horizon=2, d1=1, d2=1)


def test_shift_scale_and_monte_carlo_knobs_reach_the_constants():
    reg = _start(CentralTreePrivatizer, shift_scale=1.5)
    c = reg.constants(ALPHA)
    np.testing.assert_allclose([c.shift_p, c.lambda_min_p, c.lambda_max_p],
                               [3 * c.upsilon_p, 2 * c.upsilon_p, 4 * c.upsilon_p], rtol=1e-12)
    mc = _start(CentralTreePrivatizer, upsilon="monte_carlo").constants(ALPHA)
    theory = _start(CentralTreePrivatizer).constants(ALPHA)
    assert np.all(mc.upsilon_p < theory.upsilon_p) and np.all(mc.upsilon_r < theory.upsilon_r)
    # knobs are post-processing: the ledger (privacy) is unchanged
    assert _start(CentralTreePrivatizer, upsilon="monte_carlo", shift_scale=3.0).rel.ledger == \
        _start(CentralTreePrivatizer).rel.ledger
