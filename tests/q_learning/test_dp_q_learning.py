"""DPQLearning (Algorithm 1) and its baselines: privacy plumbing, certification, release."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from privrl.envs.center_walk import CenterWalkEnv
from privrl.errors import CertificationError, InvalidDataError, InvalidParameterError
from privrl.privacy import PrivacyBudget
from privrl.privacy.budget import Neighboring, PrivacyUnit
from privrl.q_learning import (
    DPQLearning,
    DPSGDQLearning,
    InputPerturbationQLearning,
    QLearning,
    epsilon_exact,
)

BUDGET = PrivacyBudget(epsilon=0.9, delta=1e-4)
SMALL = dict(n_samples=320, hidden=(8,))


def test_privacy_unit():
    assert DPQLearning.privacy_unit is PrivacyUnit.REWARD_FUNCTION
    assert DPQLearning.neighboring is Neighboring.SUP_NORM_ONE


def test_paper_mode_reproduces_e3_and_is_labelled():
    est = DPQLearning(budget=BUDGET, calibration="paper", n_samples=5000, hidden=(8,)).fit(rng=0)
    assert est.noise_std_ == pytest.approx(0.3132, abs=1e-4)
    assert est.kernel_beta_ == pytest.approx(2222.2, abs=0.1)
    assert est.calibration_.calibration == "paper" and not est.calibration_.side_condition_holds
    assert est.n_updates_ == 79   # ceil(5000/64): the partial last batch is an update too
    # ledger = T' Gaussian events at multiplier sigma/C (printed sensitivity), composed exactly
    C = est.calibration_.sensitivity
    assert est.privacy_spent(1e-4) == pytest.approx(epsilon_exact(C, est.noise_std_, 79, 1e-4), rel=2e-3)
    assert est.privacy_spent(1e-4) <= 0.9


def test_sound_mode_ledger_counts_updates_and_spends_at_most_budget():  # T35
    est = DPQLearning(budget=BUDGET, **SMALL).fit(rng=1)
    assert est.n_updates_ == math.ceil(320 / 64)
    gauss = est.privacy_ledger_.events[0]
    assert gauss.count == est.n_updates_
    assert gauss.event.noise_multiplier == pytest.approx(est.noise_std_ / est.calibration_.sensitivity)
    assert est.privacy_spent(1e-4) <= 0.9 * (1 + 1e-6)
    assert est.calibration_.delta_g <= 5e-5


@pytest.mark.parametrize("override, reason", [
    (dict(kappa=23), "side condition"),
    (dict(config="reference"), "config='paper'"),
    (dict(reset="episode"), "fresh noise path"),
])
def test_refuses_to_certify(override, reason):
    with pytest.raises(CertificationError, match=reason):
        DPQLearning(budget=BUDGET, **{**SMALL, **override}).fit(rng=0)


def test_higher_dimensional_states_uncertified():
    env = gym.wrappers.TimeLimit(gym.make("MountainCar-v0").unwrapped, 50)
    from privrl.envs.center_walk import UnitBoxObservation
    env = UnitBoxObservation(env)
    with pytest.raises(CertificationError, match="1-D states"):
        DPQLearning(budget=BUDGET, **SMALL).fit(env, rng=0)
    est = DPQLearning(budget=None, noise_std=0.3, kernel_beta=2.0, reward_bounds=(-1, 0), **SMALL).fit(env, rng=0)
    assert not est.is_private and est.privacy_spent(1e-4) == math.inf   # reports no epsilon
    q = est.release_q(np.full((3, 2), 0.5))
    assert q.shape == (3, 3) and np.all(q == q[0])


def test_infinite_budget_equals_non_private_exactly():
    a = DPQLearning(budget=PrivacyBudget.non_private(), config="reference", **SMALL).fit(rng=4)
    b = QLearning(config="reference", **SMALL).fit(rng=4)
    grid = np.linspace(0, 1, 7)
    np.testing.assert_array_equal(a.release_q(grid), b.release_q(grid))
    np.testing.assert_array_equal(a.returns_, b.returns_)


def test_rewards_outside_declared_bounds_raise():
    with pytest.raises(InvalidDataError, match="reward_bounds"):
        DPQLearning(budget=None, noise_std=0.1, reward_bounds=(0.0, 0.2), **SMALL).fit(rng=0)


def test_bad_parameters():
    for kw, name in [(dict(reset="sometimes"), "'reset'"), (dict(calibration="x"), "'calibration'"),
                     (dict(noise_std=-1.0), "'noise_std'"), (dict(config="fast"), "'config'"),
                     (dict(n_samples=0), "'n_samples'")]:
        with pytest.raises(InvalidParameterError, match=name):
            DPQLearning(**{**SMALL, **kw}).fit(rng=0)
    with pytest.raises(InvalidParameterError, match="'budget'"):
        DPQLearning(budget=PrivacyBudget(rho=1.0), **SMALL).fit(rng=0)


def _trace(reset):
    est = DPQLearning(budget=None, noise_std=0.5, kernel_beta=1.0, config="reference", reset=reset, n_samples=200,
                      batch_size=16, hidden=(8,))
    est.fit(rng=5, trace=True)
    return est._trace


def test_noise_plumbing_reset_schedules():  # T34
    def first_repeat(log):
        seen = {}
        for entry in log:
            for s, g in zip(entry["states"][:, 0], entry["g_sa"]):
                seen.setdefault(s, []).append((entry["update"], g))
        return [v for v in seen.values() if len({u for u, _ in v}) > 1]

    never = first_repeat(_trace("never"))
    assert never and all(len({g for _, g in v}) <= 2 for v in never)  # same path: <= one value per action
    fresh = first_repeat(_trace("iteration"))
    assert any(len({g for _, g in v}) == len(v) for v in fresh)      # a new path after every update


def test_noise_never_receives_gradients():
    from privrl.q_learning.training import build_network
    net = build_network(1, (4,), 2, np.random.default_rng(0))
    s = torch.rand(5, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    g = torch.from_numpy(np.random.default_rng(1).normal(size=5))
    loss = ((net(s)[:, 0] + g) ** 2).mean()
    loss.backward()
    grads1 = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    ((net(s)[:, 0] + g.detach()) ** 2).mean().backward()
    for a, b in zip(grads1, [p.grad for p in net.parameters()]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_release_is_consistent_and_fresh():  # T35 / A11
    est = DPQLearning(budget=None, noise_std=0.5, kernel_beta=1.0, **SMALL).fit(rng=6)
    x = np.array([0.1, 0.5, 0.1, 0.9])
    first = est.release_q(x)
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(est.release_q(x[::-1])[::-1], first)
    # released noise is a fresh path: independent across fits with different seeds
    diffs = []
    for seed in range(40):
        e = DPQLearning(budget=None, noise_std=0.5, kernel_beta=1.0, n_samples=64, hidden=(4,)).fit(rng=seed)
        diffs.append(e.release_q([0.5])[0] - e._q([0.5])[0])
    diffs = np.array(diffs)
    assert abs(diffs.mean()) < 4 * 0.5 / math.sqrt(40)


def test_input_perturbation_and_dpsgd_accounting():
    ip = InputPerturbationQLearning(budget=BUDGET, **SMALL).fit(rng=0)
    assert ip.privacy_ledger_.events[0].count == 320
    assert ip.privacy_spent(1e-4) <= 0.9 * (1 + 1e-6)
    ip_paper = InputPerturbationQLearning(budget=BUDGET, calibration="paper", **SMALL).fit(rng=0)
    assert ip_paper.reward_noise_std_ == pytest.approx(math.sqrt(2 * 320 * math.log(math.e + 9000)) / 0.9)
    sgd = DPSGDQLearning(budget=BUDGET, **SMALL).fit(rng=0)
    assert sgd.privacy_ledger_.events[0].count == sgd.n_updates_ == 320 - 128 + 1
    assert sgd.privacy_spent(1e-4) <= 0.9 * (1 + 1e-6)


def test_dpsgd_per_sample_clipping_matches_explicit_loop():
    """The vmapped per-sample gradients, clipped to clip_norm and averaged, equal an explicit
    per-sample autograd loop; the averaged step then has l2 norm at most clip_norm."""
    from privrl.q_learning.training import (
        Privatizer,
        _dpsgd_grads,
        _td_loss,
        build_network,
    )
    net = build_network(1, (8,), 2, np.random.default_rng(0))
    s = torch.rand(16, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    a = torch.randint(0, 2, (16,), generator=torch.Generator().manual_seed(0))
    y = torch.from_numpy(np.random.default_rng(1).normal(scale=3.0, size=16))
    want = [torch.zeros_like(p) for p in net.parameters()]
    for i in range(16):
        net.zero_grad()
        _td_loss(net(s[i:i + 1])[0, a[i]][None] - y[i], "huber")[0].backward()
        norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in net.parameters()))
        for w, p in zip(want, net.parameters()):
            w += p.grad * min(1.0, 0.5 / norm) / 16
    _dpsgd_grads(net, s, a, y, "huber", Privatizer(clip_norm=0.5), np.random.default_rng(0))
    for w, p in zip(want, net.parameters()):
        torch.testing.assert_close(p.grad, w, rtol=1e-10, atol=1e-12)
    assert math.sqrt(sum(float((p.grad ** 2).sum()) for p in net.parameters())) <= 0.5 + 1e-12


def test_env_instance_accepted():
    est = QLearning(config="paper", **SMALL).fit(CenterWalkEnv(), rng=0)
    assert len(est.returns_) == 320 // 50
