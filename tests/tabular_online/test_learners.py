"""The tabular online learners: lockstep = one by one, the infinite budget, learning without noise,
the released counts as the only channel (constant noise), a pinned regret, and the family's fit,
plan and experiment entries."""

import math

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.envs.river_swim import river_swim
from privrl.errors import InvalidParameterError
from privrl.privacy import ConstantNoise
from privrl.tabular_online import DPUCBVI, UCBVI, PrivateUCBPO, PrivateUCBVI, engine, fit_many
from privrl.testing import use_noise

SMALL = river_swim(3, 4)


@pytest.mark.parametrize("cls", [DPUCBVI, PrivateUCBVI, PrivateUCBPO])
def test_lockstep_equals_one_run_at_a_time(cls):
    make = lambda: cls(n_episodes=600, budget=PrivacyBudget(epsilon=2.0), constants="practical")  # noqa: E731
    batch = fit_many([make(), make(), make()], SMALL, [1, 2, 3])
    for est, seed in zip(batch, (1, 2, 3)):
        alone = make().fit(SMALL, rng=seed)
        np.testing.assert_array_equal(est.regret_, alone.regret_)


@pytest.mark.parametrize("privatizer, budget", [("central", PrivacyBudget(epsilon=1.0)),
                                                ("central", PrivacyBudget(rho=0.5)),
                                                ("local", PrivacyBudget(epsilon=1.0))])
def test_the_chunk_size_changes_no_draw(monkeypatch, privatizer, budget):
    """Runs split into chunks of 16 episodes (many kernel calls, many noise draws per run) give the
    regrets of chunks of 512: every stream is read in order."""
    make = lambda: DPUCBVI(n_episodes=700, budget=budget, privatizer=privatizer)  # noqa: E731
    whole = [e.regret_ for e in fit_many([make(), make()], SMALL, [4, 5])]
    monkeypatch.setattr(engine, "CHUNK_NUMBERS", 1)
    assert engine.chunk_size(2, 10**4) == 16
    split = [e.regret_ for e in fit_many([make(), make()], SMALL, [4, 5])]
    for a, b in zip(whole, split):
        np.testing.assert_array_equal(a, b)


def test_regret_is_the_exact_pseudo_regret_and_the_stuck_learner_is_trivial():
    est = UCBVI(n_episodes=5).fit(SMALL, rng=0)
    v_star = float(SMALL.initial @ SMALL.optimal_values()[0])
    assert np.all(est.regret_ >= -1e-12) and np.all(est.regret_ <= v_star + 1e-12)


def test_non_private_learners_learn_riverswim():
    """Sublinear regret without noise: the last 500 episodes cost a small fraction of the first 500."""
    model = river_swim(6, 20)
    for est in (UCBVI(n_episodes=3000, pooled=True, constants="practical"),
                DPUCBVI(n_episodes=3000, pooled=True, constants="practical", budget=PrivacyBudget.non_private())):
        r = est.fit(model, rng=0).regret_
        assert r[-500:].mean() < 0.1 * r[:500].mean(), type(est).__name__


def test_infinite_budget_draws_nothing_and_uses_the_exact_counts():
    est = DPUCBVI(n_episodes=200, budget=PrivacyBudget.non_private(), constants="practical").fit(SMALL, rng=4)
    assert est.error_bound_ == 0.0 and est.privacy_ledger_.draws.total() == 0
    assert not est.is_private and est.privacy_spent() == math.inf


def test_zero_noise_changes_regret_only_through_the_post_processing():
    """With ConstantNoise(0) the released counts are exact; E > 0 still shifts them (§5.3), so the
    private fit differs from the non-private one — and equals it once E is forced to 0."""
    private = DPUCBVI(n_episodes=300, budget=PrivacyBudget(epsilon=1.0), constants="practical")
    use_noise(private, ConstantNoise(0.0))
    private.fit(SMALL, rng=5)
    assert private.error_bound_ > 0
    base = DPUCBVI(n_episodes=300, budget=PrivacyBudget.non_private(), constants="practical").fit(SMALL, rng=5)
    assert not np.array_equal(private.regret_, base.regret_)


def test_pinned_regret_on_a_small_instance():
    """Seeded outputs (change only with a stated reason)."""
    got = [
        UCBVI(n_episodes=300, constants="practical").fit(SMALL, rng=0).cumulative_regret_[-1],
        DPUCBVI(n_episodes=300, budget=PrivacyBudget(epsilon=1.0)).fit(SMALL, rng=0).cumulative_regret_[-1],
        DPUCBVI(n_episodes=300, budget=PrivacyBudget(rho=1.0), constants="practical").fit(
            SMALL, rng=0).cumulative_regret_[-1],
        PrivateUCBVI(n_episodes=300, budget=PrivacyBudget(epsilon=1.0), privatizer="local",
                     constants="practical").fit(SMALL, rng=0).cumulative_regret_[-1],
        PrivateUCBPO(n_episodes=300, budget=PrivacyBudget(epsilon=1.0), constants="practical").fit(
            SMALL, rng=0).cumulative_regret_[-1],
    ]
    np.testing.assert_allclose(got, PINNED, rtol=1e-9)


PINNED = [11.444029999999925, 137.11067999999997, 97.84836999999997, 113.25779000000027, 128.0279753242266]


def test_model_must_be_an_episodic_tabular_mdp_with_rewards_in_0_1():
    with pytest.raises(InvalidParameterError, match="'model'"):
        UCBVI(n_episodes=3).fit(object(), rng=0)
    from privrl.envs.tabular import TabularMDP
    from privrl.errors import InvalidDataError

    P = np.full((2, 1, 2), 0.5)
    bad = TabularMDP(P, np.array([[2.0], [0.0]]), horizon=2, reward_bounds=(0.0, 2.0))
    with pytest.raises(InvalidDataError, match=r"\[0, 1\]"):
        DPUCBVI(n_episodes=3, budget=PrivacyBudget(epsilon=1.0)).fit(bad, rng=0)


def test_secure_mode_runs_on_opendp_noise():
    pytest.importorskip("opendp")
    est = DPUCBVI(n_episodes=20, budget=PrivacyBudget(epsilon=1.0), secure=True).fit(SMALL)
    assert est.privacy_ledger_.draws.total() == 19 * SMALL.horizon * 3 * 2 * 4
    with pytest.raises(InvalidParameterError, match="'rng'"):
        DPUCBVI(n_episodes=20, budget=PrivacyBudget(epsilon=1.0), secure=True).fit(SMALL, rng=0)


# ----------------------------------------------------------------------------- fit, plan, experiment
def test_fit_command_runs_on_a_privrl_tabular_env(tmp_path):
    from privrl.cli import main

    out = tmp_path / "fit"
    code = main(["fit", "dp-ucbvi", "--env", "privrl/RandomTabularMDP-v0", "--episodes", "30", "--epsilon", "1",
                 "--seed", "0", "--out", str(out)])
    assert code in (0, None)
    assert any(out.iterdir())


def test_plan_reads_the_estimators_noise():
    from privrl.planning import Public
    from privrl.tabular_online.plan import plan_counts

    budget = PrivacyBudget(epsilon=1.0)
    a = plan_counts(Public(budget=budget, n=2000, states=6, actions=2, horizon=20))
    noise = DPUCBVI(budget=budget, n_episodes=2000).noise_for(20, 6, 2)
    assert a.rows[0].noise_std == pytest.approx(noise.std_per_release())
    assert a.rows[1].noise_std == pytest.approx(noise.error_bound)


def test_experiment_smoke_rows():
    from privrl.experiments.spec import RunContext
    from privrl.tabular_online import experiments as ex

    settings = ex.settings("smoke")
    assert {s["algorithm"] for s in settings} == {"ucbvi", "dp-ucbvi", "private-ucb-vi", "private-ucb-po"}
    assert all(s["K"] == 200 for s in settings)
    assert max(s["K"] for s in ex.settings("paper")) == 20_000
    one = dict(settings[2])
    res = ex.run(one, RunContext(experiment_id=ex.EXPERIMENT.id, setting_index=2, seed=0, scale="smoke",
                                 rng=np.random.default_rng(0)))
    reg = [r for r in res.rows if r["metric"] == "cumulative_regret"]
    assert reg[-1]["episodes"] == 200 and reg[-1]["value"] > 0


def test_smoke_grid_in_lockstep_equals_one_run_at_a_time_and_feeds_the_claims():
    import pandas as pd

    from privrl.experiments.spec import RunContext
    from privrl.tabular_online import experiments as ex

    settings = ex.settings("smoke")

    def ctx(i, seed):
        return RunContext(experiment_id=ex.EXPERIMENT.id, setting_index=i, seed=seed, scale="smoke",
                          rng=np.random.default_rng([i, seed]))
    params = [s for s in settings for _ in (0, 1)]
    ctxs = [ctx(i // 2, i % 2) for i in range(len(params))]
    batch = ex.run_batch(params, ctxs)
    alone = ex.run(params[5], ctx(2, 1))
    assert batch[5].rows == alone.rows
    rows = [{**p, **row, "seed": c.seed, "scale": "smoke"}
            for p, c, res in zip(params, ctxs, batch) for row in res.rows]
    claims = ex.claims(pd.DataFrame(rows))
    assert claims and all(c.verdict == "undecided" for c in claims)      # 2 seeds: never decided


def test_pac_output_is_the_policy_of_the_smallest_gap_and_is_near_optimal_without_noise():
    model = river_swim(6, 20)
    est = DPUCBVI(n_episodes=1500, pooled=True, constants="practical", budget=PrivacyBudget.non_private())
    est.fit(model, rng=1)
    k = int(np.argmin(est.value_gap_))
    assert est.value_gap_[k] < model.horizon
    pi = est.pac_policy_
    assert pi.shape == (20, 6, 2) and np.allclose(pi.sum(axis=2), 1.0)
    v_star = float(model.initial @ model.optimal_values()[0])
    assert v_star - model.value(pi) == pytest.approx(est.regret_[k], abs=1e-9)   # π^out = π_k of the least gap
    assert v_star - model.value(pi) < 0.05 * v_star
