"""DP-BC (privrl.deep_offline): the per-trajectory gradient and its clipping bound, the ledger's
Poisson-subsampled accounting against dp-accounting, the noise drawn per step, and a pinned seeded fit."""

import functools
import math

import numpy as np
import pytest
import torch

from deep_offline_cases import quiet_fit
from privrl.deep.dpsgd import clipped_sum
from privrl.deep.networks import MLP
from privrl.deep_offline import BC, DPBC, _learner
from privrl.deep_offline.audit import CLIP, step_sums
from privrl.deep_offline.datasets import cartpole_dataset
from privrl.errors import InvalidDataError
from privrl.privacy import ConstantNoise, PrivacyBudget
from privrl.privacy.draws import release_problems
from privrl.testing import use_noise

DATA = cartpole_dataset(8, max_steps=12, rng=3)
SMALL = dict(hidden=(4,), n_steps=4, sampling_rate=0.5)
BUDGET = PrivacyBudget(epsilon=2.0, delta=1e-5)


_quiet_fit = functools.partial(quiet_fit, data=DATA)


def _per_transition_grads(theta, obs, actions, sizes):
    """Each transition's BC gradient by plain autograd (the reference for the vmap'd unit gradients)."""
    out = []
    for x, a in zip(obs, actions):
        t = torch.tensor(theta, requires_grad=True)
        logp = torch.log_softmax(_learner.forward(t, torch.tensor(x[None]), sizes), -1)
        (-logp[0, a]).backward()
        out.append(t.grad.numpy().copy())
    return np.array(out)


def test_a_unit_gradient_is_the_sum_of_its_transitions_gradients():
    obs, actions = np.asarray(DATA.observations), np.asarray(DATA.actions)
    sizes = (4, 4, 2)
    theta = MLP.init(sizes, np.random.default_rng(0)).params
    starts = DATA.episode_starts
    rows = [np.arange(starts[u], starts[u + 1]) for u in (0, 3, 5)]
    got = _learner.unit_gradients(theta, rows, obs, actions, sizes)
    for g, r in zip(got, rows):
        np.testing.assert_allclose(g, _per_transition_grads(theta, obs[r], actions[r], sizes).sum(0), rtol=1e-10,
                                   atol=1e-12)


def test_a_trajectorys_total_contribution_is_clipped_not_each_transition():
    a, b = step_sums()                     # one step's clipped sums without and with one more trajectory
    assert np.linalg.norm(b - a) == pytest.approx(CLIP, rel=1e-9)   # its whole (long) gradient, clipped to C
    obs, actions = np.asarray(DATA.observations), np.asarray(DATA.actions)
    sizes = (4, 4, 2)
    theta = MLP.init(sizes, np.random.default_rng(0)).params
    rows = np.arange(DATA.episode_starts[0], DATA.episode_starts[1])
    per_transition = _per_transition_grads(theta, obs[rows], actions[rows], sizes)
    total = _learner.unit_gradients(theta, [rows], obs, actions, sizes)
    largest = np.linalg.norm(per_transition, axis=1).max()
    assert largest < np.linalg.norm(total)
    clip = 0.5 * (largest + np.linalg.norm(total))   # no single transition reaches C, the trajectory's sum does
    assert np.linalg.norm(clipped_sum(total, clip)) == pytest.approx(clip, rel=1e-9)
    assert np.linalg.norm(clipped_sum(per_transition, clip)) > clip  # per-example clipping would not bound it


def test_the_ledger_is_the_poisson_subsampled_composition_of_dp_accounting():
    import dp_accounting

    est = _quiet_fit(DPBC(budget=BUDGET, **SMALL))
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(est.noise_multiplier_)), 4)
    assert est.privacy_spent(1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    assert 2.0 * 0.99 < est.privacy_spent(1e-5) <= 2.0                # tight: the least z within 0.1 %
    unsampled = dp_accounting.pld.PLDAccountant().compose(dp_accounting.GaussianDpEvent(est.noise_multiplier_), 4)
    assert unsampled.get_epsilon(1e-5) > 1.3 * est.privacy_spent(1e-5)  # the ledger counts the amplification
    assert release_problems(est.privacy_ledger_) == []
    assert est.privacy_ledger_.draws.total() == 4 * est.params_.size  # one noisy sum per step, no more


def test_each_step_adds_noise_of_std_z_C_to_the_clipped_sum():
    """With one step at q = 1 and constant noise, the update is Adam's first step on clipped sum + z C: the
    noise's sign flips the step against the noiseless one."""
    common = dict(hidden=(4,), n_steps=1, sampling_rate=1.0, clip_norm=0.5)
    quiet = _quiet_fit(use_noise(DPBC(budget=BUDGET, **common), ConstantNoise(0.0)))
    loud = _quiet_fit(use_noise(DPBC(budget=BUDGET, **common), ConstantNoise(1e6)))
    theta0 = MLP.init((4, 4, 2), np.random.default_rng(0)).params
    # Adam's first step is -lr · sign(g): a huge positive noise on every coordinate moves every one down
    start = DPBC(budget=BUDGET, **common)
    assert not np.allclose(quiet.params_, loud.params_)
    moved = loud.params_ - _initial(start)
    np.testing.assert_allclose(moved, -start.learning_rate, rtol=1e-6)
    assert theta0.size == loud.params_.size


def _initial(est):
    """The initial parameters of a fit at rng 0 (the 'init' child stream)."""
    from privrl._rng import child_rngs

    return MLP.init((4, *est.hidden, 2), child_rngs(0, "init", "batches", "privacy")["init"]).params


def test_infinite_budget_is_bc_exactly_and_spends_infinity():
    private = _quiet_fit(DPBC(budget=PrivacyBudget.non_private(), **SMALL))
    base = _quiet_fit(BC(**SMALL))
    np.testing.assert_array_equal(private.params_, base.params_)
    assert private.privacy_spent(1e-5) == math.inf and private.privacy_ledger_.is_empty


def test_bad_data_is_refused():
    flat = DATA.subset(np.arange(2))
    tabular = np.zeros(flat.n_transitions, dtype=int)
    bad = type(flat)(tabular, flat.actions, flat.rewards, tabular, flat.episode_starts, n_actions=2)
    with pytest.raises(InvalidDataError, match="vectors"):
        _quiet_fit(BC(**SMALL), data=bad)
    with pytest.raises(InvalidDataError, match="n_actions"):
        _quiet_fit(BC(n_actions=1, **SMALL))


def test_bc_learns_the_expert_on_cartpole():
    data = cartpole_dataset(30, max_steps=100, rng=0)
    est = BC(hidden=(16, 16), n_steps=150, obs_low=np.array([-2.4, -3.0, -0.21, -3.5]),
             obs_high=np.array([2.4, 3.0, 0.21, 3.5])).fit(data, rng=0)
    states = np.asarray(data.observations)
    expert = (states[:, 2] + 0.5 * states[:, 3] > 0).astype(int)
    assert np.mean(est.predict(states) == expert) > 0.9


#: DP-BC at seed 0 on DATA (8 CartPole episodes, ≤ 12 steps), SMALL settings, ε = 2: the first parameters
PINNED = [0.19723207385287503, -0.24271660204040663, -0.11286217902878788, 0.18393944260803854,
          0.029825882354377754, 0.04747408705402276]


def test_pinned_seeded_fit():
    est = _quiet_fit(DPBC(budget=BUDGET, **SMALL))
    assert PINNED is not None, est.params_[:6].tolist()
    np.testing.assert_allclose(est.params_[:6], PINNED, rtol=0, atol=1e-10)


def test_every_released_step_is_a_sum_of_clipped_trajectory_gradients(monkeypatch):
    """Each sum the fit releases has norm at most (trajectories in the data) · C — with C tiny, an
    unclipped or per-transition-clipped sum would be far larger."""
    from privrl.deep import dpsgd

    seen = []
    release = dpsgd.SubsampledGaussianSteps.release

    def spy(self, clipped):
        seen.append(np.linalg.norm(clipped))
        return release(self, clipped)

    monkeypatch.setattr(dpsgd.SubsampledGaussianSteps, "release", spy)
    est = _quiet_fit(DPBC(budget=BUDGET, clip_norm=1e-3, **{**SMALL, "sampling_rate": 1.0}))
    assert len(seen) == est.n_steps
    assert max(seen) <= DATA.n_episodes * 1e-3 * (1 + 1e-9)
    assert max(seen) > 0.5 * DATA.n_episodes * 1e-3              # every trajectory's gradient reaches C
