"""The NumPy learner equals the PyTorch reference (autograd, torch.func, torch.optim) run for run.

Both backends consume the same random streams, so the episodes (actions, hence returns) must be
identical and the trained networks equal up to floating-point reassociation in float64 (stated
tolerance 1e-10 absolute on Q; observed about 1e-15).
"""

import math

import numpy as np
import pytest
import torch

from privrl._rng import child_rngs
from privrl.deep.networks import MLP, NumpyLearner, _dpsgd_grads, build_network
from privrl.envs.center_walk import CenterWalkEnv
from privrl.privacy import Ledger, NumpyNoise, Releaser
from privrl.q_learning.configs import get_config
from privrl.q_learning.training import Privatizer, functional_noise, train

STREAMS = ("env", "init", "policy", "replay", "dpsgd", "reward", "privacy", "privacy_target")


def _privatizer(kind: str, rngs) -> Privatizer:
    """The privatizer of ``kind`` on a releaser of the run's own streams (same draws on both backends)."""
    if kind == "functional":
        return Privatizer(noise=functional_noise(1, 2, 1.0, 0.4, NumpyNoise(rngs["privacy"])),
                          target_noise=functional_noise(1, 2, 1.0, 0.4, NumpyNoise(rngs["privacy_target"])),
                          reset="episode")
    if kind == "input":
        rel = Releaser(NumpyNoise(rngs["reward"]), Ledger())
        return Privatizer(release_reward=lambda r: float(rel.gaussian(r, sensitivity=1.0, std=3.0)))
    if kind == "dpsgd":
        rel = Releaser(NumpyNoise(rngs["dpsgd"]), Ledger())
        return Privatizer(clip_norm=1.0, release_gradient=lambda g: rel.gaussian(g, sensitivity=2.0, std=5.0))
    return Privatizer()


def _release_gradient(std: float, seed: int):
    rel = Releaser(NumpyNoise(seed), Ledger())
    return lambda g: rel.gaussian(g, sensitivity=1.0, std=std)


def _run(backend: str, config: str, kind: str):
    cfg = get_config(config, n_samples=300 if config == "reference" else 400)
    rngs = child_rngs(7, *STREAMS)
    res = train(CenterWalkEnv(), cfg, _privatizer(kind, rngs), rngs, reward_bounds=(-1.0, 1.0), backend=backend)
    x = np.linspace(0, 1, 7)[:, None]
    net = res.network
    q = net(x) if backend == "numpy" else net(torch.from_numpy(x)).detach().numpy()
    return res, q


@pytest.mark.parametrize("config", ["reference", "paper"])
@pytest.mark.parametrize("kind", ["none", "functional", "input", "dpsgd"])
def test_numpy_learner_equals_torch_reference(config, kind):
    a, qa = _run("numpy", config, kind)
    b, qb = _run("torch", config, kind)
    assert a.n_updates == b.n_updates > 0
    np.testing.assert_array_equal(a.returns, b.returns)
    np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-10)
    assert np.abs(qa).max() > 0.05   # the networks did move away from tiny values


@pytest.mark.parametrize("loss", ["huber", "squared"])
def test_closed_form_dpsgd_step_equals_per_sample_autograd(loss):
    """One DP-SGD step: closed-form per-sample norms and clipped sum (NumPy) against torch.func's
    per-sample gradients (same noise draws), for a two-hidden-layer network."""
    rng = np.random.default_rng(0)
    s = rng.random((32, 1))
    a = rng.integers(0, 2, 32)
    y = rng.normal(scale=3.0, size=32)
    cfg = get_config("reference", hidden=(16, 16), loss=loss)
    ref = build_network(1, (16, 16), 2, np.random.default_rng(1))
    _dpsgd_grads(ref, torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(y), loss, 0.7,
                 _release_gradient(2.0, 2))
    want = np.concatenate([p.grad.numpy().ravel() for p in ref.parameters()])
    learner = NumpyLearner((1, 16, 16, 2), [np.random.default_rng(1)], cfg, has_target=False)
    got = {}
    learner._apply = lambda g: got.__setitem__("g", g[0].copy())   # capture the gradient handed to the optimiser
    clip = np.array([0.7])
    learner.dpsgd_step(s[None], a[None], y[None], clip, [_release_gradient(2.0, 2)])
    np.testing.assert_allclose(got["g"], want, rtol=0, atol=1e-12)
    # without noise the averaged clipped step has l2 norm at most clip_norm
    learner.dpsgd_step(s[None], a[None], y[None], clip, [None])
    assert math.sqrt(float((got["g"] ** 2).sum())) <= 0.7 + 1e-12


def test_mlp_matches_torch_forward_and_init():
    net = MLP.init((1, 16, 16, 2), np.random.default_rng(3))
    ref = build_network(1, (16, 16), 2, np.random.default_rng(3))
    x = np.linspace(-0.5, 1.5, 11)[:, None]
    np.testing.assert_allclose(net(x), ref(torch.from_numpy(x)).detach().numpy(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(net.point(x[4]), net(x[4:5])[0], rtol=0, atol=1e-14)
    assert net.params.shape == (1 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2,)
