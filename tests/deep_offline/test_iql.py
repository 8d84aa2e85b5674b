"""(DP-)IQL for discrete actions (privrl.deep_offline.iql): each network's per-trajectory gradient against a
per-transition autograd reference of the paper's losses (eqs. 5-7), the per-network clipping and the step's
sensitivity √3 C, the noise std, the ledger against dp-accounting, the Polyak target, the infinite budget,
and a pinned seeded fit."""

import functools
import math

import numpy as np
import pytest
import torch

from deep_offline_cases import quiet_fit
from privrl._rng import child_rngs
from privrl.deep.networks import MLP
from privrl.deep_offline import DPIQL, IQL, _iql_learner
from privrl.deep_offline._learner import forward
from privrl.deep_offline.audit import IQL_CLIP, iql_step_sums
from privrl.deep_offline.datasets import CARTPOLE_OBS_BOUNDS, cartpole_dataset
from privrl.privacy import ConstantNoise, PrivacyBudget
from privrl.privacy.draws import release_problems
from privrl.testing import use_noise

DATA = cartpole_dataset(8, max_steps=12, rng=3)
SMALL = dict(hidden=(4,), n_steps=4, sampling_rate=0.5)
BUDGET = PrivacyBudget(epsilon=2.0, delta=1e-5)


_quiet_fit = functools.partial(quiet_fit, data=DATA)


def _setup(**kw):
    est = IQL(hidden=(4,), **kw)
    cfg, data = est._transitions(est._validated(), DATA)
    rng = np.random.default_rng(0)
    theta = np.concatenate([MLP.init(s, rng).params for s in (cfg.q_sizes, cfg.v_sizes, cfg.pi_sizes)])
    target = _iql_learner.split(theta, cfg)[0] + 0.1 * rng.normal(size=cfg.blocks[0])
    return cfg, data, theta, target


def _reference(cfg, data, theta, target, row):
    """One transition's gradients of the paper's three losses by plain autograd."""
    q, v, pi = (torch.tensor(p, requires_grad=True) for p in _iql_learner.split(theta, cfg))
    x, x2 = torch.tensor(data.obs[row:row + 1]), torch.tensor(data.next_obs[row:row + 1])
    a = int(data.actions[row])
    q_hat = float(forward(torch.tensor(target), x, cfg.q_sizes)[0, a])
    v_s, v_next = (float(forward(v.detach(), z, cfg.v_sizes)[0, 0]) for z in (x, x2))
    u = q_hat - forward(v, x, cfg.v_sizes)[0, 0]                                        # eq. (5)
    (abs(cfg.expectile - float(u < 0)) * u ** 2).backward()
    y = data.rewards[row] + cfg.gamma * data.not_done[row] * v_next                      # eq. (6)
    ((y - forward(q, x, cfg.q_sizes)[0, a]) ** 2).backward()
    weight = min(math.exp(cfg.temperature * (q_hat - v_s)), 100.0)                     # eq. (7)
    (-weight * torch.log_softmax(forward(pi, x, cfg.pi_sizes), -1)[0, a]).backward()
    return q.grad.numpy(), v.grad.numpy(), pi.grad.numpy()


def test_each_networks_unit_gradient_is_the_sum_of_the_papers_per_transition_gradients():
    cfg, data, theta, target = _setup(temperature=1.0)
    units = (0, 3, 5)
    got = _iql_learner.unit_gradients(theta, target, data.rows(units), data, cfg)
    for i, rows in enumerate(data.rows(units)):
        want = [sum(parts) for parts in zip(*(_reference(cfg, data, theta, target, r) for r in rows))]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[i], w, rtol=1e-9, atol=1e-12)


def test_a_terminal_transition_has_no_bootstrap_term():
    cfg, data, theta, target = _setup()
    data_terminal = _iql_learner.Transitions(data.obs, data.actions, data.rewards, data.next_obs,
                                             np.zeros_like(data.not_done), data.starts)
    rows = data.rows([0])
    with_v = _iql_learner.unit_gradients(theta, target, rows, data, cfg)[0]
    without = _iql_learner.unit_gradients(theta, target, rows, data_terminal, cfg)[0]
    q = torch.tensor(_iql_learner.split(theta, cfg)[0], requires_grad=True)
    x, a, r = (torch.tensor(v[rows[0]]) for v in (data.obs, data.actions, data.rewards))
    ((r - forward(q, x, cfg.q_sizes).gather(-1, a[:, None])[:, 0]) ** 2).sum().backward()
    np.testing.assert_allclose(without[0], q.grad.numpy(), rtol=1e-10)
    assert not np.allclose(with_v, without)


def test_each_network_is_clipped_on_its_own_so_a_trajectory_moves_the_step_by_sqrt3_C():
    a, b = iql_step_sums()
    cfg = DPIQL(budget=BUDGET, hidden=(4,))._transitions(DPIQL(budget=BUDGET, hidden=(4,))._validated(), DATA)[0]
    parts = np.split(b - a, np.cumsum(cfg.blocks)[:-1])
    np.testing.assert_allclose([np.linalg.norm(p) for p in parts], IQL_CLIP, rtol=1e-9)   # each block at C
    assert np.linalg.norm(b - a) == pytest.approx(math.sqrt(3) * IQL_CLIP, rel=1e-9)
    assert DPIQL.sensitivity_factor == pytest.approx(math.sqrt(3))


def test_the_ledger_is_one_poisson_subsampled_composition_over_all_three_networks():
    import dp_accounting

    est = _quiet_fit(DPIQL(budget=BUDGET, **SMALL))
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(est.noise_multiplier_)), 4)
    assert est.privacy_spent(1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert 2.0 * 0.99 < est.privacy_spent(1e-5) <= 2.0
    assert release_problems(est.privacy_ledger_) == []
    n_params = est.q_params_.size + est.v_params_.size + est.params_.size
    assert est.privacy_ledger_.draws.total() == 4 * n_params      # every network's step is in the release


def test_each_step_adds_noise_of_std_z_sqrt3_C_to_every_networks_clipped_sum(monkeypatch):
    from privrl.deep import dpsgd

    seen = []
    release = dpsgd.SubsampledGaussianSteps.release

    def spy(self, clipped):
        out = release(self, clipped)
        seen.append((np.linalg.norm(clipped), out - clipped))
        return out

    monkeypatch.setattr(dpsgd.SubsampledGaussianSteps, "release", spy)
    clip = 1e-3
    est = _quiet_fit(use_noise(DPIQL(budget=BUDGET, clip_norm=clip, **{**SMALL, "sampling_rate": 1.0}),
                               ConstantNoise(1.0)))
    assert len(seen) == est.n_steps
    for norm, noise in seen:
        np.testing.assert_allclose(noise, est.noise_multiplier_ * math.sqrt(3) * clip, rtol=1e-12)
        assert 0.5 * DATA.n_episodes * clip < norm <= math.sqrt(3) * DATA.n_episodes * clip * (1 + 1e-9)


def test_the_target_network_is_the_polyak_average_of_the_released_q_parameters():
    est = _quiet_fit(IQL(hidden=(4,), n_steps=1, sampling_rate=1.0, polyak=0.25))
    cfg = est._transitions(est._validated(), DATA)[0]
    q0 = MLP.init(cfg.q_sizes, child_rngs(0, "init", "batches", "privacy")["init"]).params
    np.testing.assert_allclose(est.target_params_, 0.75 * q0 + 0.25 * est.q_params_, rtol=1e-12)


def test_infinite_budget_is_iql_exactly_and_spends_infinity():
    private = _quiet_fit(DPIQL(budget=PrivacyBudget.non_private(), **SMALL))
    base = _quiet_fit(IQL(**SMALL))
    for name in ("params_", "q_params_", "v_params_", "target_params_"):
        np.testing.assert_array_equal(getattr(private, name), getattr(base, name))
    assert private.privacy_spent(1e-5) == math.inf and private.privacy_ledger_.is_empty


#: DP-IQL at seed 0 on DATA (8 CartPole episodes, ≤ 12 steps), SMALL settings, ε = 2: Q's first parameters
PINNED = [0.18340541846894648, -0.2849607609882394, -0.11141841791002263, 0.1915801316559115,
          0.049037865488427944, 0.005142346494935164]


def test_pinned_seeded_fit():
    est = _quiet_fit(DPIQL(budget=BUDGET, **SMALL))
    assert PINNED is not None, est.q_params_[:6].tolist()
    np.testing.assert_allclose(est.q_params_[:6], PINNED, rtol=0, atol=1e-10)


@pytest.mark.slow
def test_iql_learns_the_expert_on_cartpole():
    data = cartpole_dataset(30, max_steps=100, rng=0)
    low, high = CARTPOLE_OBS_BOUNDS
    est = IQL(hidden=(16, 16), n_steps=300, sampling_rate=0.3, obs_low=low, obs_high=high).fit(data, rng=0)
    states = np.asarray(data.observations)
    expert = (states[:, 2] + 0.5 * states[:, 3] > 0).astype(int)
    assert np.mean(est.predict(states) == expert) > 0.9
    assert np.all(est.values(states[:50]) > 1.0)            # rewards of 1 per step: V grows towards 1/(1-γ)


def test_the_planner_reads_the_noise_from_the_estimators_calibration_and_sensitivity():
    from privrl.deep_offline.estimators import noise_multiplier
    from privrl.deep_offline.plan import n_parameters, plan_dp_iql
    from privrl.planning import Public

    params = (("n_steps", 4), ("sampling_rate", 0.5))
    out = plan_dp_iql(Public(budget=BUDGET, n=100, features=4, actions=2, params=params))
    z = noise_multiplier(BUDGET, 0.5, 4)
    sizes = {"Q": n_parameters(4, (32, 32), 2), "V": n_parameters(4, (32, 32), 1)}
    for row in out.rows[:2]:
        name = row.name.split()[0]
        assert row.noise_std == pytest.approx(z * math.sqrt(3) * 1.0 * math.sqrt(sizes[name]), rel=1e-12)
        assert row.signal == pytest.approx(0.5 * 100 * 1.0)
