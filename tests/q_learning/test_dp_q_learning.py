"""DPQLearning (Algorithm 1) and its baselines: the release seam, certification, the ledger, the
release, Box observations."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

from privrl.envs.center_walk import CenterWalkEnv, UnitBoxObservation
from privrl.errors import (
    CertificationError,
    InvalidDataError,
    InvalidParameterError,
    PrivacyLeakWarning,
    UtilityWarning,
)
from privrl.privacy import ConstantNoise, NumpyNoise, PrivacyBudget, ScaledNoise
from privrl.privacy.budget import Neighboring, PrivacyUnit
from privrl.q_learning import (
    DPQLearning,
    DPSGDQLearning,
    InputPerturbationQLearning,
    QLearning,
    rkhs_sensitivity,
)
from privrl.q_learning.calibration import spent_epsilon
from privrl.q_learning.training import functional_noise
from privrl.testing import use_noise

BUDGET = PrivacyBudget(epsilon=0.9, delta=1e-4)
SMALL = dict(n_samples=320, hidden=(8,))
pytestmark = pytest.mark.filterwarnings("ignore::privrl.errors.UtilityWarning")


def test_privacy_unit():
    assert DPQLearning.privacy_unit is PrivacyUnit.REWARD_FUNCTION
    assert DPQLearning.neighboring is Neighboring.SUP_NORM_ONE


def test_paper_mode_reproduces_e3_but_does_not_certify_what_it_spends():  # spec A1, A10; issue #13 §3
    with pytest.warns(PrivacyLeakWarning, match="does not certify") as caught:
        est = DPQLearning(budget=BUDGET, calibration="paper", n_samples=5000, hidden=(8,)).fit(rng=0)
    message = str(caught[0].message)
    assert "side condition" in message and "certified_ is False" in message
    assert est.noise_std_ == pytest.approx(0.3132, abs=1e-4)
    assert est.kernel_beta_ == pytest.approx(2222.2, abs=0.1)
    cal = est.calibration_
    assert cal.calibration == "paper" and not cal.side_condition_holds and cal.delta_g_claimed == 1.0
    assert est.n_updates_ == 79   # ceil(5000/64): the partial last batch is an update too
    # the ledger: 79 releases at the corrected RKHS sensitivity of the paper's (k, beta), not C
    assert cal.sensitivity == pytest.approx(rkhs_sensitivity(4.0, 3e-4, 23.0, cal.beta), rel=1e-12)
    assert cal.claimed_sensitivity == pytest.approx(cal.C) and cal.C < cal.sensitivity / 100
    spent = est.privacy_spent()
    assert spent == pytest.approx(spent_epsilon(cal, 79, 1e-4), rel=1e-9) and spent > 1000
    assert est.certified_ is False


def test_sound_mode_ledger_counts_updates_and_spends_at_most_budget():  # T35
    est = DPQLearning(budget=BUDGET, calibration="sound", **SMALL).fit(rng=1)
    assert est.n_updates_ == math.ceil(320 / 64)
    gauss, tail = est.privacy_ledger_.events
    assert gauss.count == est.n_updates_
    assert gauss.event.noise_multiplier == pytest.approx(est.noise_std_ / est.calibration_.sensitivity)
    assert tail.delta == est.calibration_.delta_g <= 5e-5
    assert est.privacy_spent(1e-4) <= 0.9 * (1 + 1e-6) and est.certified_


def test_tight_mode_is_the_default_and_spends_the_budget_with_less_noise():
    tight = DPQLearning(budget=BUDGET, **SMALL).fit(rng=1)
    sound = DPQLearning(budget=BUDGET, calibration="sound", **SMALL).fit(rng=1)
    assert tight.calibration_.calibration == "tight" and tight.certified_
    assert 0.99 * 0.9 <= tight.privacy_spent() <= 0.9
    assert tight.noise_std_ < sound.noise_std_ / 3   # 16.1 vs 63.2 at 5 updates; 1.2e3 vs 2.0e4 at 79


@pytest.mark.parametrize("override, reason", [
    (dict(kappa=23, calibration="sound"), "side condition"),
    (dict(kappa=1.0), "set kappa to 'auto'"),
    (dict(config="reference"), "'paper' config"),
    (dict(reset="episode"), "fresh noise path"),
])
def test_refuses_to_certify(override, reason):
    with pytest.raises(CertificationError, match=reason) as info:
        DPQLearning(budget=BUDGET, **{**SMALL, **override}).fit(rng=0)
    assert "kappa='auto'" not in str(info.value) and "budget=None" not in str(info.value)


def test_infinite_budget_equals_non_private_exactly():
    a = DPQLearning(budget=PrivacyBudget.non_private(), config="reference", **SMALL).fit(rng=4)
    b = QLearning(config="reference", **SMALL).fit(rng=4)
    grid = np.linspace(0, 1, 7)
    np.testing.assert_array_equal(a.release_q(grid), b.release_q(grid))
    np.testing.assert_array_equal(a.returns_, b.returns_)


def test_rewards_outside_declared_bounds_raise_without_showing_them():
    with pytest.raises(InvalidDataError, match="reward_bounds") as info:
        DPQLearning(budget=None, noise_std=0.1, reward_bounds=(0.0, 0.2), **SMALL).fit(rng=0)
    assert not any(ch.isdigit() for ch in str(info.value).split("reward_bounds")[0])  # no reward value shown


def test_bad_parameters():
    for kw, name in [(dict(reset="sometimes"), "'reset'"), (dict(calibration="x"), "'calibration'"),
                     (dict(noise_std=-1.0), "'noise_std'"), (dict(config="fast"), "'config'"),
                     (dict(n_samples=0), "'n_samples'"), (dict(hidden=(0,)), "'hidden'"),
                     (dict(reward_bounds=(1.0, 0.0)), "'reward_bounds'")]:
        with pytest.raises(InvalidParameterError, match=name):
            DPQLearning(budget=None, **{**SMALL, **kw}).fit(rng=0)
    with pytest.raises(InvalidParameterError, match="'budget'"):
        DPQLearning(budget=PrivacyBudget(rho=1.0), **SMALL).fit(rng=0)
    with pytest.raises(InvalidParameterError, match="'budget'"):
        InputPerturbationQLearning(budget=None, **SMALL).fit(rng=0)


# --------------------------------------------------------------------------- the release seam
def test_structure_with_constant_noise():
    """Every standard normal = 1: the release at a fresh state is Q + sigma on both paths, the next
    state one OU step further (rho sigma + sigma sqrt(1 - rho^2)): the noise scale is the calibrated
    sigma and the kernel the calibrated beta; the ledger is the calibration's."""
    est = use_noise(DPQLearning(budget=BUDGET, **SMALL), ConstantNoise(1.0)).fit(rng=0)
    sigma, beta = est.noise_std_, est.kernel_beta_
    noise = est.release_q([0.3]) - est._q([0.3])
    np.testing.assert_allclose(noise, [[sigma, sigma]], rtol=1e-12)
    rho = math.exp(-beta * 0.2)
    step = est.release_q([0.5]) - est._q([0.5])
    np.testing.assert_allclose(step, [[sigma * (rho + math.sqrt(1 - rho * rho))] * 2], rtol=1e-9)
    gauss, tail = est.privacy_ledger_.events
    assert gauss.event.noise_multiplier == pytest.approx(sigma / est.calibration_.sensitivity, rel=1e-12)
    assert tail.delta == est.calibration_.delta_g


def test_input_perturbation_structure_with_constant_noise():
    """Zero noise through the releaser gives exactly the non-private run (the noise enters only
    through the reward releases); one event per reward, multiplier std / 1."""
    private = use_noise(InputPerturbationQLearning(budget=BUDGET, **SMALL), ConstantNoise(0.0)).fit(rng=2)
    plain = InputPerturbationQLearning(budget=PrivacyBudget.non_private(), **SMALL).fit(rng=2)
    np.testing.assert_array_equal(private.returns_, plain.returns_)
    np.testing.assert_array_equal(private._q(np.linspace(0, 1, 5)), plain._q(np.linspace(0, 1, 5)))
    events = private.privacy_ledger_.events
    assert len(events) == 320 and {e.noise_multiplier for e in events} == {private.reward_noise_std_}


def test_dpsgd_structure_with_constant_noise():
    """Zero noise: exactly clipped SGD; one Gaussian event per update with the true sensitivity 2 B C."""
    private = use_noise(DPSGDQLearning(budget=BUDGET, clip_norm=0.5, **SMALL), ConstantNoise(0.0)).fit(rng=2)
    plain = DPSGDQLearning(budget=PrivacyBudget.non_private(), clip_norm=0.5, **SMALL).fit(rng=2)
    np.testing.assert_array_equal(private.returns_, plain.returns_)
    events = private.privacy_ledger_.events
    assert len(events) == private.n_updates_ == 320 - 128 + 1
    assert events[0].noise_multiplier == pytest.approx(private.noise_std_ / (2 * 128 * 0.5), rel=1e-12)


def test_scaled_noise_scales_every_path_value():
    xs = np.array([[0.7], [0.1], [0.4], [0.9]])
    base = functional_noise(1, 2, 3.0, 0.8, NumpyNoise(5))(xs)
    scaled = functional_noise(1, 2, 3.0, 0.8, ScaledNoise(NumpyNoise(5), 0.1))(xs)
    np.testing.assert_allclose(scaled, 0.1 * base, rtol=1e-12)


def test_secure_fit_runs_and_refuses_a_seed():
    pytest.importorskip("opendp")
    est = DPQLearning(budget=BUDGET, secure=True, n_samples=128, hidden=(4,))
    with pytest.raises(InvalidParameterError, match="'rng'"):
        est.fit(rng=0)
    est.fit()
    assert est.certified_ and 0.99 * 0.9 <= est.privacy_spent() <= 0.9
    assert np.all(np.isfinite(est.release_q([0.2, 0.8])))


def test_knobs_do_not_change_the_ledger():
    """The step size (constants preset or explicit) is post-processing for the baselines: the same
    ledger and ε whatever it is."""
    runs = [InputPerturbationQLearning(budget=BUDGET, constants=c, learning_rate=lr, **SMALL).fit(rng=0)
            for c, lr in (("theory", None), ("practical", None), ("theory", 0.05))]
    assert runs[0].training_config_.learning_rate != runs[1].training_config_.learning_rate
    assert runs[0].privacy_ledger_ == runs[1].privacy_ledger_ == runs[2].privacy_ledger_
    sgd = [DPSGDQLearning(budget=BUDGET, constants=c, **SMALL).fit(rng=0) for c in ("theory", "practical")]
    assert sgd[0].privacy_ledger_ == sgd[1].privacy_ledger_
    assert sgd[0].privacy_spent() == sgd[1].privacy_spent()


def test_utility_warning_names_the_cause_and_knob():
    with pytest.warns(UtilityWarning, match="noise std .* reward range.*larger budget"):
        InputPerturbationQLearning(budget=BUDGET, **SMALL).fit(rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)   # a non-private run never warns
        QLearning(**SMALL).fit(rng=0)


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


def test_noise_enters_the_update_only_through_the_td_error():  # T34: the paths are not parameters
    """privrl's learner: a step with noise g at the batch states equals a step on the target y - g
    without noise (the TD error Q + g - y is all the noise touches), and it never changes the paths."""
    from privrl.deep.networks import NumpyLearner
    from privrl.q_learning.configs import get_config

    cfg = get_config("paper")
    rng = np.random.default_rng(0)
    s, a, y = rng.random((16, 1)), rng.integers(0, 2, 16), rng.normal(size=16)
    paths = functional_noise(1, 2, 2.0, 0.7, NumpyNoise(1))
    g = paths(s)[np.arange(16), a]
    stored = paths(s).copy()
    one = NumpyLearner((1, 8, 2), [np.random.default_rng(3)], cfg, False)
    two = NumpyLearner((1, 8, 2), [np.random.default_rng(3)], cfg, False)
    one.td_step(s[None], a[None], y[None], g[None])
    two.td_step(s[None], a[None], (y - g)[None], np.zeros((1, 16)))
    np.testing.assert_allclose(one.net.params, two.net.params, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(paths(s), stored)


def test_release_is_consistent_and_fresh():  # T35 / A11
    est = DPQLearning(budget=None, noise_std=0.5, kernel_beta=1.0, **SMALL).fit(rng=6)
    x = np.array([0.1, 0.5, 0.1, 0.9])
    first = est.release_q(x)
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(est.release_q(x[::-1])[::-1], first)
    diffs = []
    for seed in range(40):
        e = DPQLearning(budget=None, noise_std=0.5, kernel_beta=1.0, n_samples=64, hidden=(4,)).fit(rng=seed)
        diffs.append(e.release_q([0.5])[0] - e._q([0.5])[0])
    diffs = np.array(diffs)
    assert abs(diffs.mean()) < 4 * 0.5 / math.sqrt(40)


def test_input_perturbation_and_dpsgd_accounting():
    ip = InputPerturbationQLearning(budget=BUDGET, **SMALL).fit(rng=0)
    assert len(ip.privacy_ledger_) == 320
    assert 0.99 * 0.9 <= ip.privacy_spent(1e-4) <= 0.9 * (1 + 1e-9)
    ip_paper = InputPerturbationQLearning(budget=BUDGET, calibration="paper", **SMALL).fit(rng=0)
    assert ip_paper.reward_noise_std_ == pytest.approx(math.sqrt(2 * 320 * math.log(math.e + 9000)) / 0.9)
    assert ip_paper.privacy_spent(1e-4) < 0.9 and ip_paper.certified_
    with pytest.warns(PrivacyLeakWarning, match="not an upper bound"):   # the paper's formula is not sound at large ε
        loose = InputPerturbationQLearning(budget=PrivacyBudget(epsilon=20.0, delta=1e-4), calibration="paper",
                                           **SMALL).fit(rng=0)
    assert loose.privacy_spent() > 20.0 and not loose.certified_
    sgd = DPSGDQLearning(budget=BUDGET, **SMALL).fit(rng=0)
    assert len(sgd.privacy_ledger_) == sgd.n_updates_ == 320 - 128 + 1
    assert 0.99 * 0.9 <= sgd.privacy_spent(1e-4) <= 0.9 * (1 + 1e-9)
    with pytest.warns(PrivacyLeakWarning, match="2 B clip_norm"):
        paper = DPSGDQLearning(budget=BUDGET, calibration="paper", **SMALL).fit(rng=0)
    assert paper.privacy_spent(1e-4) > 0.9 and not paper.certified_


def test_dpsgd_per_sample_clipping_matches_explicit_loop():
    """The vmapped per-sample gradients, clipped to clip_norm and averaged, equal an explicit
    per-sample autograd loop; the averaged step then has l2 norm at most clip_norm."""
    torch = pytest.importorskip("torch")
    from privrl.deep.networks import _dpsgd_grads, _td_loss, build_network

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
    _dpsgd_grads(net, s, a, y, "huber", 0.5, None)
    for w, p in zip(want, net.parameters()):
        torch.testing.assert_close(p.grad, w, rtol=1e-10, atol=1e-12)
    assert math.sqrt(sum(float((p.grad ** 2).sum()) for p in net.parameters())) <= 0.5 + 1e-12


def test_env_instance_accepted():
    est = QLearning(config="paper", **SMALL).fit(CenterWalkEnv(), rng=0)
    assert len(est.returns_) == 320 // 50


# --------------------------------------------------------------------------- Box observations (#13 §2)
def _mountain_car():
    return gym.wrappers.TimeLimit(gym.make("MountainCar-v0").unwrapped, 50)


def test_box_environment_rescaled_from_its_bounds_and_raw_observations_released():
    env = _mountain_car()
    with pytest.raises(CertificationError, match="1-D states"):
        DPQLearning(budget=BUDGET, **SMALL).fit(env, rng=0)
    est = DPQLearning(budget=None, noise_std=0.3, kernel_beta=2.0, reward_bounds=(-1, 0), **SMALL).fit(env, rng=0)
    assert not est.is_private and est.privacy_spent(1e-4) == math.inf   # reports no epsilon
    raw = np.array([[-0.5, 0.0], [0.5, 0.05]])
    q = est.release_q(raw)
    assert q.shape == (2, 3) and est.greedy_action(raw).shape == (2,)
    low, high = env.observation_space.low, env.observation_space.high
    np.testing.assert_array_equal(est.obs_low_, low)
    np.testing.assert_allclose(est.obs_high_, high, rtol=1e-15)
    np.testing.assert_allclose(est._q(raw), est._network((raw - low) / (high - low)), rtol=1e-12)
    with pytest.raises(InvalidDataError, match="'obs_low' and 'obs_high'"):
        est.release_q([[5.0, 0.0]])                                    # outside the public bounds
    wrapped = QLearning(reward_bounds=(-1, 0), **SMALL).fit(UnitBoxObservation(_mountain_car()), rng=0)
    plain = QLearning(reward_bounds=(-1, 0), **SMALL).fit(_mountain_car(), rng=0)
    np.testing.assert_array_equal(wrapped.returns_, plain.returns_)   # the wrapper is the same map


def test_unbounded_box_names_the_bounds_parameters():
    with pytest.raises(InvalidParameterError, match="'obs_low'.*finite.*coordinates \\[1, 3\\]"):
        QLearning(env="CartPole-v1", **SMALL).fit(rng=0)
    bounds = dict(obs_low=[-4.8, -5, -0.42, -5], obs_high=[4.8, 5, 0.42, 5])
    est = DPQLearning(budget=None, noise_std=0.2, env="CartPole-v1", config="reference", n_samples=200,
                      hidden=(4,), **bounds).fit(rng=0)
    assert est.release_q(np.zeros((1, 4))).shape == (1, 2)
    with pytest.raises(InvalidParameterError, match="'obs_low'"):
        QLearning(env="CartPole-v1", obs_low=[0.0], obs_high=[1.0], **SMALL).fit(rng=0)
    with pytest.raises(InvalidParameterError, match="'env'"):
        QLearning(env="NoSuchEnv-v0", **SMALL).fit(rng=0)
