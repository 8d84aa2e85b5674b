"""DP-OneStep: the sensitivities of its three releases, the spend against the accountant, the
validation of the bounds privacy relies on, the baseline and the warnings."""

import math
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget, UtilityWarning
from privrl.data import TrajectoryDataset
from privrl.envs.real_shaped import real_shaped
from privrl.errors import InvalidDataError
from privrl.offline import DPOneStep
from privrl.offline.one_step import _pair_sums, stream_stds
from privrl.privacy.calibration import gaussian_mu

L = 5


def _episode_sums(states, actions, u, A=4, S=12):
    """(Σu, Σ(1 − u)) of one trajectory's first visits to its pairs, as one vector."""
    starts = np.array([0, len(states)])
    succ, fail, _ = _pair_sums(np.asarray(states) * A + np.asarray(actions), np.asarray(u, dtype=float), starts,
                               S * A, L)
    return np.concatenate([succ, fail])


def test_replacing_a_trajectory_moves_the_pair_sums_by_at_most_sqrt_2L_and_disjoint_ones_attain_it():
    gen = np.random.default_rng(0)
    worst = 0.0
    for _ in range(300):
        a = _episode_sums(gen.integers(0, 12, L), gen.integers(0, 4, L), gen.random(L))
        b = _episode_sums(gen.integers(0, 12, L), gen.integers(0, 4, L), gen.random(L))
        worst = max(worst, float(np.linalg.norm(a - b)))
    assert worst <= math.sqrt(2 * L) + 1e-12
    # L distinct pairs with u = 1 against L other distinct pairs with u = 0: exactly √(2L)
    a = _episode_sums(np.arange(L), np.zeros(L, int), np.ones(L))
    b = _episode_sums(np.arange(L, 2 * L), np.zeros(L, int), np.zeros(L))
    assert np.linalg.norm(a - b) == pytest.approx(math.sqrt(2 * L))
    # a pair visited twice counts once (first visit): the second visit's target is not read
    c = _episode_sums([0, 0, 1], [0, 0, 0], [1.0, 0.0, 1.0])
    assert c[0] == 1.0 and c[48] == 0.0


@pytest.mark.parametrize("budget", [PrivacyBudget(epsilon=1.0, delta=1e-6), PrivacyBudget(rho=0.3)])
def test_the_three_streams_compose_to_exactly_the_budget(budget):
    stds = stream_stds(budget, 20, 0.2, 0.02)
    sens = np.array([math.sqrt(40), math.sqrt(40), 20.0])
    assert float(np.sum((sens / stds) ** 2)) == pytest.approx(gaussian_mu(budget) ** 2, rel=1e-12)


def _model():
    return real_shaped(n_states=42, n_actions=6, horizon=6, n_levels=4, n_next=5, n_admissible=3, rng=0)


@pytest.mark.parametrize("secure", [False, True])
def test_the_ledger_spends_the_budget_seeded_and_secure(secure):
    model = _model()
    data = model.sample(model.logging_policy, 300, rng=1, pad_to_horizon=model.horizon)
    est = DPOneStep(budget=PrivacyBudget(epsilon=2.0, delta=1e-5), F_max=1.0, secure=secure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(data, rng=None if secure else 0)
    assert len(est.privacy_ledger_.events) == 3
    assert est.privacy_spent(1e-5) == pytest.approx(2.0, rel=1e-6)


def test_a_return_above_F_max_is_an_error_not_clipped():
    model = _model()
    data = model.sample(model.logging_policy, 50, rng=1, pad_to_horizon=model.horizon)
    tripled = TrajectoryDataset(data.observations, data.actions, np.asarray(data.rewards) * 3.0,
                                data.next_observations, episode_starts=data.episode_starts,
                                terminals=data.terminals, n_states=data.n_states, n_actions=data.n_actions,
                                horizon=data.horizon, reward_bounds=(0.0, 3.0))
    with pytest.raises(InvalidDataError):
        DPOneStep(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), r_max=1.0, F_max=1.0).fit(tripled, rng=0)


def test_with_much_data_it_improves_on_the_logging_policy_and_with_little_it_warns():
    model = _model()
    logging = model.value(model.logging_policy)
    data = model.sample(model.logging_policy, 20_000, rng=2, pad_to_horizon=model.horizon)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        exact = DPOneStep(budget=PrivacyBudget.non_private(), F_max=1.0).fit(data, rng=0)
        private = DPOneStep(budget=PrivacyBudget(epsilon=10.0, delta=1e-6), F_max=1.0).fit(data, rng=0)
    optimum = model.optimal_value()
    assert model.value(exact.policy_probs_) - logging > 0.3 * (optimum - logging)
    assert model.value(private.policy_probs_) - logging > 0.3 * (optimum - logging)
    tiny = model.sample(model.logging_policy, 30, rng=3, pad_to_horizon=model.horizon)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        DPOneStep(budget=PrivacyBudget(epsilon=0.5, delta=1e-6), F_max=1.0).fit(tiny, rng=0)
    said = " ".join(str(w.message) for w in caught)
    assert "off by about 0.59 in total variation" in said and "no improvement" in said
    public = model.policy_probabilities(model.logging_policy)
    with pytest.warns(UtilityWarning, match="no improvement|may be noise"):
        DPOneStep(budget=PrivacyBudget(epsilon=0.5, delta=1e-6), F_max=1.0, behaviour_policy=public).fit(tiny, rng=0)


def test_a_public_behaviour_policy_is_the_baseline_of_every_state_that_does_not_switch():
    model = _model()
    data = model.sample(model.logging_policy, 2000, rng=4, pad_to_horizon=model.horizon)
    public = model.policy_probabilities(model.logging_policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est = DPOneStep(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), F_max=1.0,
                        behaviour_policy=public).fit(data, rng=0)
    kept = ~est.switched_
    assert np.array_equal(est.policy_probs_[:, kept], public[:, kept])
    assert np.all(est.policy_probs_[:, est.switched_].max(axis=-1) == 1.0)


def test_privrl_fit_dp_one_step_writes_the_policy_and_certifies_the_budget(tmp_path):
    from privrl import cli

    model = _model()
    model.sample(model.logging_policy, 500, rng=5, pad_to_horizon=model.horizon).save(tmp_path / "log.npz")
    args = ["fit", "dp-one-step", "--data", str(tmp_path / "log.npz"), "--reward", "logged", "--F-max", "1",
            "--epsilon", "2", "--delta", "1e-6", "--seed", "0", "--out", str(tmp_path / "out"), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        assert cli.main(args) == 0
    result = np.load(tmp_path / "out" / "result.npz")
    assert result["policy"].shape == (model.horizon, model.n_states)
    assert result["policy_probs"].shape == (model.horizon, model.n_states, model.n_actions)   # the deployed policy
    assert "dp-one-step" in (tmp_path / "out" / "certificate.json").read_text()
    table = tmp_path / "r.npy"
    np.save(table, np.zeros((model.n_states, model.n_actions)))
    assert cli.main([*args[:5], str(table), *args[6:], "--force"]) != 0   # a public reward table is refused


def test_the_plan_verdict_agrees_with_the_committed_grid_measurements():
    """``privrl plan dp-one-step`` at the grid's public sizes: useful exactly where the measured
    median fraction of the best non-private gain over the instances is at least 0.25."""
    import json
    from pathlib import Path

    from privrl.planning import plan

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "one_step_grid.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    summary = [r for r in rows if r["name"] == "one-step-summary" and r["route"] == "dp/one-step"]
    assert len(summary) == 4
    for row in summary:
        budget = PrivacyBudget(epsilon=row["epsilon"], delta=1e-6)
        verdict = plan("dp-one-step", budget=budget, n=row["n"], states=700, actions=25, horizon=20).verdict
        assert (verdict == "useful") == (row["median_fraction"] >= 0.25), row
