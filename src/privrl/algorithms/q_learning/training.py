"""The Q-learning loop shared by DPQLearning and its baselines (Wang & Hegde 2019, Alg. 1).

One loop, three places where privacy enters (a :class:`Privatizer`):

* functional noise (Alg. 1 lines 12, 18–20): ``Q~(s, a) = Q_theta(s, a) + g_a(s)`` for acting,
  in the target ``y = r + gamma max_a [Q(s', a) + g_a(s')]`` and in the loss
  ``(Q(s, a) + g_a(s) - y)^2 / 2``; the noise paths never receive gradients. In the ``reference``
  configuration the target network has its own independent paths (``target_noise="separate"``,
  as in the authors' code), reset on the same schedule;
* input perturbation: Gaussian noise on every reward as it is received;
* DP-SGD: per-sample clipped gradients plus Gaussian noise on their sum.

torch is imported here only (extra ``deep``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl.errors import InvalidDataError

__all__ = ["Privatizer", "TrainResult", "train", "build_network", "make_noise"]


@dataclass
class Privatizer:
    """What the loop privatises. All fields default to "nothing" (non-private Q-learning)."""

    noise: Any = None                  # callable states (n, d) -> (n, m), with reset()
    target_noise: Any = None           # independent paths for the target network (if separate)
    reset: str = "iteration"           # "iteration" | "episode" | "never"
    reward_std: float = 0.0            # input perturbation
    clip_norm: float | None = None     # DP-SGD per-sample clipping
    grad_noise_std: float = 0.0        # DP-SGD std of the noise on the clipped-gradient sum


@dataclass
class TrainResult:
    network: Any
    returns: np.ndarray
    n_updates: int
    n_samples: int
    trace: list = field(default_factory=list)


def build_network(in_dim: int, hidden: tuple[int, ...], out_dim: int, rng: np.random.Generator):
    """ReLU MLP with PyTorch's default uniform init drawn from ``rng`` (no global torch seed)."""
    import torch
    from torch import nn

    sizes = (in_dim, *hidden, out_dim)
    layers: list[Any] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b).double()
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, (b, a))))
            lin.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, b)))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class _OUNoise1D:
    def __init__(self, n_paths: int, beta: float, sigma: float, rng: np.random.Generator) -> None:
        from privrl.privacy.gaussian_process import OUNoise

        self._noise = OUNoise(n_paths=n_paths, beta=beta, sigma=sigma, rng=rng)

    def reset(self) -> None:
        self._noise.reset()

    def __call__(self, states: np.ndarray) -> np.ndarray:
        return self._noise(np.asarray(states, float)[:, 0])


def make_noise(dim: int, n_actions: int, beta: float, sigma: float, rng: np.random.Generator):
    """OU paths for 1-D states; the exact product-kernel field for d > 1."""
    if dim == 1:
        return _OUNoise1D(n_actions, beta, sigma, rng)
    from privrl.privacy.gaussian_process import ProductKernelField

    return ProductKernelField(dim=dim, beta=beta, sigma=sigma, n_paths=n_actions, rng=rng)


def _check_reward(r: float, bounds: tuple[float, float]) -> float:
    r = float(r)
    if not (bounds[0] <= r <= bounds[1]):
        raise InvalidDataError(
            f"Received reward {r!r} outside the declared reward_bounds {tuple(bounds)}; the privacy "
            "analysis relies on this bound. Declare wider bounds.")
    return r


def train(env, cfg, privatizer: Privatizer, rngs: dict[str, np.random.Generator], *,
          reward_bounds: tuple[float, float], on_update: Callable[[int], None] | None = None,
          trace: bool = False) -> TrainResult:
    """Run ``cfg.n_samples`` environment steps. ``rngs`` has streams env, init, policy, replay,
    dpsgd, reward (each used only by its own part, so a noiseless run is identical across the
    privatizers)."""
    import torch

    obs_dim = int(np.prod(env.observation_space.shape))
    m = int(env.action_space.n)
    net = build_network(obs_dim, cfg.hidden, m, rngs["init"])
    target = copy.deepcopy(net) if cfg.target_sync_episodes else None
    opt: Any
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=cfg.learning_rate)
    else:
        opt = torch.optim.RMSprop(net.parameters(), lr=cfg.learning_rate, alpha=0.99, eps=1e-8)
    noise = privatizer.noise
    t_noise = privatizer.target_noise if cfg.target_noise == "separate" else None
    noises = [x for x in (noise, t_noise) if x is not None]
    cap = cfg.replay_size or cfg.batch_size
    S = np.zeros((cap, obs_dim))
    S2 = np.zeros((cap, obs_dim))
    A = np.zeros(cap, dtype=np.int64)
    R = np.zeros(cap)
    TERM = np.zeros(cap)
    size = ptr = 0
    obs, _ = env.reset(seed=int(rngs["env"].integers(0, 2**31 - 1)))
    obs = np.asarray(obs, float).ravel()
    returns: list[float] = []
    ep_ret = 0.0
    episodes = updates = 0
    log: list = []
    for x in noises:
        x.reset()

    def update(idx: np.ndarray) -> None:
        nonlocal updates
        s = torch.from_numpy(S[idx])
        s2 = torch.from_numpy(S2[idx])
        a = torch.from_numpy(A[idx])
        y = torch.from_numpy(R[idx])
        n = len(idx)
        g_sa = torch.zeros(n, dtype=torch.float64)
        with torch.no_grad():
            nxt = (target or net)(s2)
            if noise is not None:  # one batch query: the law does not depend on the order
                g = noise(np.concatenate([S[idx], S2[idx]]))
                g_next = g[n:] if t_noise is None else t_noise(S2[idx])
                nxt = nxt + torch.from_numpy(g_next)
                g_sa = torch.from_numpy(g[np.arange(n), A[idx]])
            y = y + cfg.gamma * (1.0 - torch.from_numpy(TERM[idx])) * nxt.max(1).values
        if trace:
            log.append({"update": updates, "g_sa": g_sa.numpy().copy(), "states": S[idx].copy()})
        opt.zero_grad()
        if privatizer.clip_norm is None:
            loss = _td_loss(net(s).gather(1, a[:, None])[:, 0] + g_sa - y, cfg.loss).mean()
            loss.backward()
        else:
            _dpsgd_grads(net, s, a, y, cfg.loss, privatizer, rngs["dpsgd"])
        if cfg.grad_clamp is not None:
            torch.nn.utils.clip_grad_value_(net.parameters(), cfg.grad_clamp)
        opt.step()
        updates += 1
        if on_update is not None:
            on_update(updates)
        if privatizer.reset == "iteration":
            for x in noises:
                x.reset()

    for t in range(cfg.n_samples):
        with torch.no_grad():
            q = net(torch.from_numpy(obs[None, :]))[0].numpy()
        if noise is not None:
            q = q + noise(obs[None, :])[0]
        if cfg.exploration is not None:
            start, end, decay = cfg.exploration
            eps = end + (start - end) * math.exp(-t / decay)
            explore = rngs["policy"].random() < eps
            action = int(rngs["policy"].integers(m)) if explore else int(np.argmax(q))
        else:
            action = int(np.argmax(q))
        obs2, r, term, trunc, _ = env.step(action)
        obs2 = np.asarray(obs2, float).ravel()
        r = _check_reward(r, reward_bounds)
        ep_ret += r
        r_used = r + (privatizer.reward_std * rngs["reward"].standard_normal() if privatizer.reward_std else 0.0)
        S[ptr], A[ptr], R[ptr], S2[ptr], TERM[ptr] = obs, action, r_used, obs2, float(term)
        ptr = (ptr + 1) % cap
        size = min(size + 1, cap)
        if term or trunc:
            returns.append(ep_ret)
            ep_ret = 0.0
            episodes += 1
            o, _ = env.reset()
            obs = np.asarray(o, float).ravel()
            if privatizer.reset == "episode":
                for x in noises:
                    x.reset()
            if target is not None and episodes % cfg.target_sync_episodes == 0:
                target.load_state_dict(net.state_dict())
        else:
            obs = obs2
        if cfg.update_every == "batch":
            if size == cap or t == cfg.n_samples - 1:
                update(np.arange(size))
                size = ptr = 0
        elif size >= cfg.batch_size:
            update(rngs["replay"].choice(size, cfg.batch_size, replace=False))
    return TrainResult(net, np.asarray(returns), updates, cfg.n_samples, log)


def _td_loss(td, kind: str):
    import torch

    if kind == "squared":
        return 0.5 * td * td
    return torch.nn.functional.smooth_l1_loss(td, torch.zeros_like(td), reduction="none")


def _dpsgd_grads(net, s, a, y, loss_kind: str, priv: Privatizer, rng: np.random.Generator) -> None:
    """Per-sample gradients (torch.func), each clipped to ``clip_norm`` in l2, summed, plus
    ``N(0, grad_noise_std^2)`` per coordinate, divided by the batch size (Abadi et al. 2016)."""
    import torch
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss_one(p, si, onehot, yi):
        q = (functional_call(net, p, (si[None, :],))[0] * onehot).sum()
        return _td_loss((q - yi)[None], loss_kind)[0]

    onehot = torch.nn.functional.one_hot(a, int(net[-1].out_features)).double()
    grads = vmap(grad(loss_one), in_dims=(None, 0, 0, 0))(params, s, onehot, y)
    n = s.shape[0]
    norms = torch.sqrt(sum((g.reshape(n, -1) ** 2).sum(1) for g in grads.values()))
    factor = torch.clamp(float(priv.clip_norm or 0.0) / (norms + 1e-12), max=1.0)
    for name, p in net.named_parameters():
        g = (grads[name] * factor.reshape(-1, *([1] * (grads[name].dim() - 1)))).sum(0)
        if priv.grad_noise_std:
            g = g + torch.from_numpy(priv.grad_noise_std * rng.standard_normal(tuple(g.shape)))
        p.grad = g / n
