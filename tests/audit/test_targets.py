"""Fast audits of every registered release and every negative control.

Each real target must be *consistent* (ε_lower ≤ claimed ε); each negative control marked
``caught`` must be a VIOLATION (a control that is not caught is a failed audit design); controls
that do not touch privacy (e.g. a public shift removed) must stay consistent.
Release-point audits (a quick subset here, every target in ``test_slow_audits.py``) must be sharp
— ε_lower ≥ 0.3 × the claimed ε at ε = 1 — and catch noise ÷ 2.
Seeds are fixed (the same ``audit_seed(0, name, broken, sharp)`` as ``privrl audit --seed 0``).
"""

import numpy as np
import pytest

from privrl import registry
from privrl.audit.registry import all_targets, audit_seed, run_target

#: targets whose fast audit still takes about a CPU-minute (whole training runs with OpenDP's samplers, 2 x 40
#: fits per row): slow here, and in test_slow_audits.py at full size
LONG = {"dp-bc-canary-secure"}
CASES = [pytest.param(name, broken, caught, id=f"{name}-{broken or 'real'}",
                      marks=(pytest.mark.slow,) if name in LONG else ())
         for name, broken, caught in [(t.name, None, None) for t in all_targets()] + [
             (t.name, v.name, v.caught) for t in all_targets() for v in t.variants if not v.sharp]]

#: the release-point audits of the default suite: at least one per family and shared layer, each a
#: few CPU seconds (vectorised releases); every target's is in test_slow_audits.py
QUICK_SHARP = ("gaussian", "laplace", "tree-counter", "blt-counter", "dp-lsw", "dp-lsl", "dp-monte-carlo",
               "dp-monte-carlo-groups", "dp-apvi-gaussian", "dp-apvi-laplace", "dp-apvi-pooled", "dp-apvi-groups",
               "dp-apvi-logged", "dp-apvi-logging-counts", "linopt-central", "linopt-local",
               "tabular-online-central-laplace",
               "tabular-online-central-tree", "tabular-online-central-blt", "tabular-online-local-laplace",
               "tabular-online-central-blt-pooled", "dp-bc-step", "dp-iql-step", "dp-td3bc-step",
               "dp-vapvi-release",
               "dp-vapvi-release-paper")
#: targets without a release-point audit: dp-lsw-counts (its release is dp-lsw's); the DP-VAPVI transcripts
#: (the whole adaptive kernel, black-box; DP-VAPVI's releases are audited at the release point by
#: dp-vapvi-release and dp-vapvi-release-paper); the canary audits of whole DP-BC fits (black-box by design: their
#: step is audited at the release point by dp-bc-step)
NO_RELEASE_POINT = {"dp-lsw-counts", "dp-vapvi", "dp-vapvi-paper", "dp-bc-canary", "dp-bc-canary-secure"}


def test_every_release_has_a_sharp_audit_and_a_noise_div_2_control():
    for t in all_targets():
        if not t.build.__module__.startswith("privrl."):   # a test family's target (tests/example_family)
            continue
        if t.name in NO_RELEASE_POINT:
            assert t.optimal is None, t.name
            continue
        assert t.optimal is not None, t.name
        assert t.epsilon == 1.0 and t.sharp_trials >= 100_000, t.name
        assert any(v.name == "noise-div-2" and v.sharp and v.caught for v in t.variants), t.name


@pytest.mark.parametrize("name", QUICK_SHARP)
def test_release_point_audit(name, check_release_point):
    check_release_point(name)


def test_every_area_is_audited():
    """Every family (by its record) and every shared mechanism module registers audit targets."""
    for family in registry.families():
        assert registry.registered_by("audit", family), family.name
    for module in registry.SHARED["audit"]:
        assert registry.registered_by("audit", module), module
    for t in all_targets():  # every target has at least one control that must be caught
        assert any(v.caught for v in t.variants), t.name


@pytest.mark.parametrize("name,broken,caught", CASES)
def test_fast_audit(name, broken, caught):
    res = run_target(name, broken=broken, fast=True, rng=audit_seed(0, name, broken))
    assert np.isfinite(res.claimed_epsilon) and res.claimed_epsilon > 0
    assert res.ci[0] == res.epsilon_lower <= res.ci[1]
    if broken is None or caught is False:
        assert res.verdict == "consistent", res
    else:
        assert res.verdict == "VIOLATION", f"negative control not caught: {res}"
        assert res.epsilon_lower > res.claimed_epsilon


def test_tabular_neighbours_attain_the_sensitivity():
    from privrl.offline.audit import H, tabular_neighbours

    (sa, sas), (sa2, sas2) = tabular_neighbours()
    assert np.linalg.norm(sa - sa2) == pytest.approx(np.sqrt(2 * H))
    assert np.linalg.norm(sas - sas2) == pytest.approx(np.sqrt(2 * H))


def test_generic_trajectory_generator_attains_the_sensitivity_on_sampled_data():
    from privrl.offline.audit import dataset_neighbours

    (sa, sas), (sa2, sas2) = dataset_neighbours()
    assert sa.sum() == sa2.sum() == 90  # same size: 30 episodes of H = 3
    assert np.linalg.norm(sa - sa2) == pytest.approx(np.sqrt(2 * 3))
    assert np.linalg.norm(sas - sas2) == pytest.approx(np.sqrt(2 * 3))


def test_dp_lsw_pairs():
    from privrl.policy_evaluation.audit import F_MAX, LONG, M_TIGHT, neighbouring_statistics

    d, d2 = neighbouring_statistics("tight")
    assert d.counts.tolist() == d2.counts.tolist() == [M_TIGHT]
    assert d2.mean_returns[0] - d.mean_returns[0] == pytest.approx(F_MAX * (1 - 0.5**LONG) / M_TIGHT)
    c, c2 = neighbouring_statistics("counts")
    assert c.counts.tolist() == [1, 9, 9] and c2.counts.tolist() == [2, 8, 8]


def test_monte_carlo_pairs_attain_the_sensitivities():
    from privrl import PrivacyBudget
    from privrl.policy_evaluation.audit import MC_CAP, MC_GROUPS, monte_carlo_statistics
    from privrl.policy_evaluation.monte_carlo import MonteCarloMechanism

    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    d, d2 = monte_carlo_statistics("value")
    mech = MonteCarloMechanism.create(budget, 1.0, mechanism="gaussian")
    assert mech.statistic(d2)[0] - mech.statistic(d)[0] == pytest.approx([mech.sensitivities[0]])
    g, g2 = monte_carlo_statistics("groups")
    mech = MonteCarloMechanism.create(budget, 1.0, n_groups=MC_GROUPS, max_groups=MC_CAP, mechanism="gaussian")
    diff = mech.statistic(g2)[1] - mech.statistic(g)[1]
    assert np.linalg.norm(diff) == pytest.approx(mech.sensitivities[1]) == pytest.approx(np.sqrt(8.0))
    assert mech.statistic(g2)[0] == pytest.approx(mech.statistic(g)[0])


def test_linear_mixture_neighbours_attain_the_sensitivity_within_the_bounds():
    """The audited neighbours are accepted by the privatizer's bound check and move the released
    moments by exactly the plan's replace-one sensitivities at step 0 (2bc and 2), the Grams not at
    all (d = 1); 1% beyond the bound is refused. Zero noise (ConstantNoise(0)) isolates the data part."""
    from privrl.errors import InvalidDataError
    from privrl.linear_mixture.audit import D1, D2, H, K, privatizer, user_contributions
    from privrl.privacy import ConstantNoise, Ledger, Releaser

    released = []
    for which in (0, 1):
        _, reg = privatizer("central", 1.0, 1e-5)
        reg.start(n_episodes=K, horizon=H, d1=D1, d2=D2, rel=Releaser(ConstantNoise(0.0), Ledger()))
        released.append(reg.update(*user_contributions(which, *reg.bounds)))
    (Lp, up, Lr, ur), (Lp2, up2, Lr2, ur2) = released
    plan = reg.plan
    np.testing.assert_allclose(np.abs(up - up2)[0], plan.sensitivity[1, 0], rtol=1e-12)
    np.testing.assert_allclose(np.abs(ur - ur2)[:, 0], plan.sensitivity[3], rtol=1e-12)
    np.testing.assert_array_equal(Lp, Lp2)
    np.testing.assert_array_equal(Lr, Lr2)
    x_p, y_p, x_r, y_r = user_contributions(0, *reg.bounds)
    with pytest.raises(InvalidDataError):
        reg.update(x_p * 1.01, y_p, x_r, y_r)


def test_grouped_neighbours_attain_the_sensitivity():
    from privrl.offline.audit import H, grouped_neighbours

    (sa, sas), (sa2, sas2) = grouped_neighbours()
    assert np.linalg.norm(sa - sa2) == pytest.approx(np.sqrt(2 * H))
    assert np.linalg.norm(sas - sas2) == pytest.approx(np.sqrt(2 * H))


def test_logging_neighbours_attain_the_sensitivity():
    from privrl.offline.audit import STATE_GROUPS, _logging_datasets
    from privrl.offline.grouping import grouped_statistics

    a, b = (grouped_statistics(d, STATE_GROUPS, 4, 2, stationary=True, max_visits=1).state_visits
            for d in _logging_datasets())
    assert np.linalg.norm(a - b) == pytest.approx(2.0)            # √(2H), H = 2


def test_batched_count_release_is_the_release_unclipped():
    """``batched_counts`` gives n independent releases of the counts: mean = the counts (no
    clipping at 0 although the noise is ~10x the counts), std = the plan's scale, trials independent."""
    from privrl.offline import DPAPVI
    from privrl.offline.audit import A, H, S, batched_counts, tabular_neighbours
    from privrl.privacy import PrivacyBudget

    (sa, sas), _ = tabular_neighbours()
    plan = DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-5)).count_noise(H, S, A, 7)
    out = batched_counts((sa, sas), plan, 40_000, np.random.default_rng(0), None)
    truth = np.concatenate([sa.ravel(), sas.ravel()])
    scale = np.repeat(plan.scale, [sa.size, sas.size])
    assert out.shape == (40_000, truth.size)
    np.testing.assert_allclose(out.mean(axis=0), truth, atol=5 * scale.max() / np.sqrt(40_000))
    np.testing.assert_allclose(out.std(axis=0), scale, rtol=0.02)
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < 0.02


def test_linopt_worst_pair_beats_the_opposite_features():
    """The chosen neighbour (features −a·b) moves the release more against the plan's noise than
    the opposite features (a = 1) and stays within the privatizer's bounds."""
    from privrl.linear_mixture.audit import privatizer, user_contributions, worst_opposite

    _, reg = privatizer("central", 1.0, 1e-5)
    a = worst_opposite(reg.plan)
    assert 0.0 < a[0] < 1.0 and 0.0 < a[1] < 1.0
    std = np.asarray(reg.plan.std, float)
    inv = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)     # (stream, step)

    def shift2(opposite):   # Σ over streams and steps of (Δ item / σ)²
        d, d2 = (reg.items(*user_contributions(w, *reg.bounds, opposite)) for w in (0, 1))
        return sum(float(np.sum(((x - y).reshape(len(inv[j]), -1) * inv[j][:, None]) ** 2))
                   for j, (x, y) in enumerate(zip(d, d2)))
    assert shift2(a) > 1.02 * shift2((1.0, 1.0))
    x_p, y_p, x_r, y_r = user_contributions(1, *reg.bounds, a)
    reg.start(n_episodes=4, horizon=2, d1=1, d2=1, rng=0)
    reg.update(x_p, y_p, x_r, y_r)   # accepted by the bound check
