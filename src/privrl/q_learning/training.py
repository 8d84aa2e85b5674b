"""The Q-learning loop shared by DPQLearning and its baselines (Wang & Hegde 2019, Alg. 1).

One loop, three places where privacy enters (a :class:`Privatizer`):

* functional noise (Alg. 1 lines 12, 18–20): ``Q~(s, a) = Q_theta(s, a) + g_a(s)`` for acting,
  in the target ``y = r + gamma max_a [Q(s', a) + g_a(s')]`` and in the loss
  ``(Q(s, a) + g_a(s) - y)^2 / 2``; the noise paths never receive gradients. In the ``reference``
  configuration the target network has its own independent paths (``target_noise="separate"``,
  as in the authors' code), reset on the same schedule. The paths draw their normals in
  :mod:`privrl.q_learning.gaussian_process` from the fit's noise source (the release seam);
* input perturbation: every reward is released through the fit's releaser as it is received
  (``Privatizer.release_reward``);
* DP-SGD: per-sample clipped gradients, their sum released through the fit's releaser
  (``Privatizer.release_gradient``).

Nothing in this module draws privacy noise itself: the estimators hand it release callables and
noise paths built on their :class:`~privrl.privacy.release.Releaser`.

The networks are tiny (1→16→16→2), so per-operation overhead dominates: the learner is a float64
NumPy MLP with hand-written backward passes (:class:`MLP`), and DP-SGD's per-sample gradients are
closed-form (for a ReLU MLP the per-sample gradient of layer ``l`` is the outer product
``delta_l,i ⊗ a_{l-1,i}``, so its squared norm is ``|delta_l,i|^2 (|a_{l-1,i}|^2 + 1)`` with the bias,
and the clipped sum is one matrix product with the rows of ``delta`` scaled). The same loop runs on
PyTorch (``backend="torch"``, the reference: autograd, ``torch.func`` per-sample gradients,
``torch.optim``); tests check that both give the same runs to floating-point tolerance.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privrl.errors import InvalidDataError
from privrl.q_learning.gaussian_process import OUNoise, ProductKernelField

__all__ = ["MLP", "Privatizer", "TrainResult", "train", "build_network", "functional_noise"]


@dataclass
class Privatizer:
    """What the loop privatises. All fields default to "nothing" (non-private Q-learning).

    ``release_reward(r) -> noisy r`` and ``release_gradient(sum) -> noisy sum`` are the fit's
    releases (input perturbation, DP-SGD): the loop never draws privacy noise itself."""

    noise: Any = None                  # callable states (n, d) -> (n, m), with reset()
    target_noise: Any = None           # independent paths for the target network (if separate)
    reset: str = "iteration"           # "iteration" | "episode" | "never"
    release_reward: Callable[[float], float] | None = None          # input perturbation
    clip_norm: float | None = None     # DP-SGD per-sample clipping
    release_gradient: Callable[[np.ndarray], np.ndarray] | None = None  # DP-SGD noisy clipped-gradient sum


@dataclass
class TrainResult:
    network: Any
    returns: np.ndarray
    n_updates: int
    n_samples: int
    trace: list = field(default_factory=list)


# ------------------------------------------------------------------------------ networks
def _init_params(sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """PyTorch's default ``nn.Linear`` init (``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weight and
    bias) drawn from ``rng``, flattened in parameter order."""
    parts = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(a)
        parts.append(rng.uniform(-bound, bound, (b, a)).ravel())
        parts.append(rng.uniform(-bound, bound, b))
    return np.concatenate(parts)


class MLP:
    """ReLU MLP in float64 NumPy; all parameters live in one flat vector ``params`` (W1, b1, W2, b2,
    ... as PyTorch's ``named_parameters``), ``W`` and ``b`` are views into it. ``net(x)`` maps
    ``(n, in)`` states to ``(n, out)`` values."""

    def __init__(self, sizes: tuple[int, ...], params: np.ndarray) -> None:
        self.sizes = tuple(int(s) for s in sizes)
        self.params = params
        self.W: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        off = 0
        for a, b in zip(self.sizes[:-1], self.sizes[1:]):
            self.W.append(params[off:off + a * b].reshape(b, a))
            off += a * b
            self.b.append(params[off:off + b])
            off += b

    @classmethod
    def init(cls, sizes: tuple[int, ...], rng: np.random.Generator) -> MLP:
        return cls(sizes, _init_params(tuple(sizes), rng))

    def copy(self) -> MLP:
        return MLP(self.sizes, self.params.copy())

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Outputs and the layer inputs ``[x, h1, h2, ...]`` (post-ReLU) for :meth:`backward`."""
        acts = [x]
        h = x
        last = len(self.W) - 1
        for i, (W, b) in enumerate(zip(self.W, self.b)):
            h = h @ W.T + b
            if i < last:
                h = np.maximum(h, 0.0)
                acts.append(h)
        return h, acts

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.forward(np.asarray(x, float))[0]

    def point(self, x: np.ndarray) -> np.ndarray:
        """Outputs at one state ``x`` of shape ``(in,)``."""
        h = x
        last = len(self.W) - 1
        for i, (W, b) in enumerate(zip(self.W, self.b)):
            h = W @ h + b
            if i < last:
                h = np.maximum(h, 0.0)
        return h

    def deltas(self, acts: list[np.ndarray], dout: np.ndarray) -> list[np.ndarray]:
        """Per-sample gradients of the loss w.r.t. each layer's pre-activation (output first)."""
        out = [dout]
        d = dout
        for layer in range(len(self.W) - 1, 0, -1):
            d = (d @ self.W[layer]) * (acts[layer] > 0)
            out.append(d)
        return out[::-1]

    def grads(self, acts: list[np.ndarray], deltas: list[np.ndarray]) -> np.ndarray:
        """Summed parameter gradient (flat, parameter order) from the layer inputs and deltas."""
        parts = []
        for a, d in zip(acts, deltas):
            parts.append((d.T @ a).ravel())
            parts.append(d.sum(0))
        return np.concatenate(parts)

    def to_torch(self):
        """The same network as a ``torch.nn.Sequential`` (float64)."""
        import torch

        net = _torch_mlp(self.sizes)
        with torch.no_grad():
            for lin, W, b in zip([m for m in net if isinstance(m, torch.nn.Linear)], self.W, self.b):
                lin.weight.copy_(torch.from_numpy(W))
                lin.bias.copy_(torch.from_numpy(b))
        return net


def _torch_mlp(sizes: tuple[int, ...]):
    from torch import nn

    layers: list[Any] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b).double())
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def build_network(in_dim: int, hidden: tuple[int, ...], out_dim: int, rng: np.random.Generator):
    """ReLU MLP (torch) with PyTorch's default uniform init drawn from ``rng`` (no global torch seed);
    the same draws as :meth:`MLP.init`."""
    sizes = (in_dim, *hidden, out_dim)
    return MLP(sizes, _init_params(sizes, rng)).to_torch()


def _loss_grad(td: np.ndarray, kind: str) -> np.ndarray:
    """Derivative of the per-sample TD loss: ``td`` (squared, ``td^2 / 2``) or ``clip(td, -1, 1)``
    (Huber / smooth-L1 with threshold 1)."""
    return td if kind == "squared" else np.clip(td, -1.0, 1.0)


_RMS_ALPHA = 0.99  # RMSprop's smoothing constant (PyTorch's default, as in the authors' code)


class _NumpyLearner:
    """Online (and target) network with its optimiser, in NumPy."""

    def __init__(self, sizes: tuple[int, ...], rng: np.random.Generator, cfg, has_target: bool) -> None:
        self.net = MLP.init(sizes, rng)
        self.target = self.net.copy() if has_target else None
        self.cfg = cfg
        self._sq = np.zeros_like(self.net.params) if cfg.optimizer == "rmsprop" else None
        self.network = self.net

    def act_q(self, obs: np.ndarray) -> np.ndarray:
        return self.net.point(obs)

    def target_q(self, s2: np.ndarray) -> np.ndarray:
        return (self.target or self.net).forward(s2)[0]

    def sync_target(self) -> None:
        if self.target is not None:
            self.target.params[:] = self.net.params

    def _dout(self, q: np.ndarray, a: np.ndarray, dtd: np.ndarray) -> np.ndarray:
        dq = np.zeros_like(q)
        dq[np.arange(len(a)), a] = dtd
        return dq

    def td_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, g_sa: np.ndarray) -> None:
        """One step on the mean TD loss (Alg. 1 line 20)."""
        q, acts = self.net.forward(s)
        n = len(a)
        td = q[np.arange(n), a] + g_sa - y
        dtd = _loss_grad(td, self.cfg.loss) * (1.0 / n)
        grad = self.net.grads(acts, self.net.deltas(acts, self._dout(q, a, dtd)))
        self._apply(grad)

    def dpsgd_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, priv: Privatizer) -> None:
        """Per-sample gradients clipped to ``clip_norm`` in l2, summed, released
        (``priv.release_gradient``: plus Gaussian noise), divided by the batch size (Abadi et al.
        2016); closed form (module docstring). Gradient coordinates in parameter order (W1, b1, ...)."""
        q, acts = self.net.forward(s)
        n = len(a)
        dtd = _loss_grad(q[np.arange(n), a] - y, self.cfg.loss)
        deltas = self.net.deltas(acts, self._dout(q, a, dtd))
        sq = sum((d * d).sum(1) * ((x * x).sum(1) + 1.0) for x, d in zip(acts, deltas))
        factor = np.minimum(float(priv.clip_norm or 0.0) / (np.sqrt(sq) + 1e-12), 1.0)
        grad = self.net.grads(acts, [d * factor[:, None] for d in deltas])
        if priv.release_gradient is not None:
            grad = priv.release_gradient(grad)
        self._apply(grad / n)

    def _apply(self, grad: np.ndarray) -> None:
        cfg = self.cfg
        if cfg.grad_clamp is not None:
            np.clip(grad, -cfg.grad_clamp, cfg.grad_clamp, out=grad)
        p = self.net.params
        if self._sq is None:  # SGD
            p += -cfg.learning_rate * grad
        else:  # RMSprop as torch.optim.RMSprop(alpha=0.99, eps=1e-8)
            sq = self._sq
            sq *= _RMS_ALPHA
            sq += ((1.0 - _RMS_ALPHA) * grad) * grad
            p += (-cfg.learning_rate * grad) / (np.sqrt(sq) + 1e-8)


class _TorchLearner:
    """The same learner on PyTorch (reference implementation: autograd, ``torch.func``, ``torch.optim``)."""

    def __init__(self, sizes: tuple[int, ...], rng: np.random.Generator, cfg, has_target: bool) -> None:
        import torch

        self.net = build_network(sizes[0], tuple(sizes[1:-1]), sizes[-1], rng)
        self.target = copy.deepcopy(self.net) if has_target else None
        self.cfg = cfg
        self.opt: torch.optim.Optimizer
        if cfg.optimizer == "sgd":
            self.opt = torch.optim.SGD(self.net.parameters(), lr=cfg.learning_rate)
        else:
            self.opt = torch.optim.RMSprop(self.net.parameters(), lr=cfg.learning_rate, alpha=_RMS_ALPHA, eps=1e-8)
        self.network = self.net

    def act_q(self, obs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net(torch.from_numpy(obs[None, :]))[0].numpy()

    def target_q(self, s2: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return (self.target or self.net)(torch.from_numpy(s2)).numpy()

    def sync_target(self) -> None:
        if self.target is not None:
            self.target.load_state_dict(self.net.state_dict())

    def td_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, g_sa: np.ndarray) -> None:
        import torch

        self.opt.zero_grad()
        ta = torch.from_numpy(a)
        q = self.net(torch.from_numpy(s)).gather(1, ta[:, None])[:, 0]
        _td_loss(q + torch.from_numpy(g_sa) - torch.from_numpy(y), self.cfg.loss).mean().backward()
        self._apply()

    def dpsgd_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, priv: Privatizer) -> None:
        import torch

        self.opt.zero_grad()
        _dpsgd_grads(self.net, torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(y), self.cfg.loss, priv)
        self._apply()

    def _apply(self) -> None:
        import torch

        if self.cfg.grad_clamp is not None:
            torch.nn.utils.clip_grad_value_(self.net.parameters(), self.cfg.grad_clamp)
        self.opt.step()


# ------------------------------------------------------------------------------ noise paths
class _OUNoise1D:
    def __init__(self, n_paths: int, beta: float, sigma: float, noise: Any) -> None:
        self._noise = OUNoise(n_paths=n_paths, beta=beta, sigma=sigma, noise=noise)

    def reset(self) -> None:
        self._noise.reset()

    def point(self, state: np.ndarray) -> np.ndarray:
        """The ``(m,)`` noise values at one state of shape ``(1,)``."""
        return self._noise.point(float(state[0]))

    def __call__(self, states: np.ndarray) -> np.ndarray:
        return self._noise(np.asarray(states, float)[:, 0])


def functional_noise(dim: int, n_actions: int, beta: float, sigma: float, noise: Any):
    """Functional noise ``g_a ~ G(0, sigma^2 K)`` for the ``n_actions`` actions, its standard normals
    drawn from ``noise`` (a :class:`~privrl.privacy.noise.NoiseSource`: the fit's ``rel.noise``):
    OU paths for 1-D states (one spawned source per action); the exact product-kernel field for d > 1."""
    if dim == 1:
        return _OUNoise1D(n_actions, beta, sigma, noise)

    return ProductKernelField(dim=dim, beta=beta, sigma=sigma, n_paths=n_actions, noise=noise)


# ------------------------------------------------------------------------------ the loop
def _check_reward(r: float, bounds: tuple[float, float]) -> float:
    r = float(r)
    if not (bounds[0] <= r <= bounds[1]):  # the reward is private: the message never shows it
        raise InvalidDataError(
            f"A received reward is outside the declared reward_bounds {tuple(bounds)}; the analysis relies "
            "on this bound. Declare bounds that contain every reward the environment can give (the "
            "'reward_bounds' parameter).")
    return r


def train(env, cfg, privatizer: Privatizer, rngs: dict[str, np.random.Generator], *,
          reward_bounds: tuple[float, float], on_update: Callable[[int], None] | None = None,
          trace: bool = False, backend: str = "numpy",
          observe: Callable[[Any], np.ndarray] | None = None) -> TrainResult:
    """Run ``cfg.n_samples`` environment steps. ``rngs`` has streams env, init, policy, replay
    (each used only by its own part, so a noiseless run is identical across the privatizers).
    ``backend="torch"`` runs the PyTorch reference learner (same draws). ``observe`` maps a raw
    observation to the learner's state in [0, 1]^d (default: the observation as a float vector)."""
    if observe is None:
        def observe(o: Any) -> np.ndarray:
            return np.asarray(o, float).ravel()
    obs_dim = int(np.prod(env.observation_space.shape))
    m = int(env.action_space.n)
    sizes = (obs_dim, *cfg.hidden, m)
    learner: Any = (_TorchLearner if backend == "torch" else _NumpyLearner)(
        sizes, rngs["init"], cfg, bool(cfg.target_sync_episodes))
    noise = privatizer.noise
    t_noise = privatizer.target_noise if cfg.target_noise == "separate" else None
    noises = [x for x in (noise, t_noise) if x is not None]
    act_noise = None if noise is None else getattr(noise, "point", lambda o: noise(o[None, :])[0])
    cap = cfg.replay_size or cfg.batch_size
    S = np.zeros((cap, obs_dim))
    S2 = np.zeros((cap, obs_dim))
    A = np.zeros(cap, dtype=np.int64)
    R = np.zeros(cap)
    TERM = np.zeros(cap)
    size = ptr = 0
    obs, _ = env.reset(seed=int(rngs["env"].integers(0, 2**31 - 1)))
    obs = observe(obs)
    returns: list[float] = []
    ep_ret = 0.0
    episodes = updates = 0
    log: list = []
    gamma = cfg.gamma
    policy_rng, replay_rng = rngs["policy"], rngs["replay"]
    for x in noises:
        x.reset()

    def update(idx: np.ndarray) -> None:
        nonlocal updates
        s, s2, a = S[idx], S2[idx], A[idx]
        n = len(idx)
        g_sa = np.zeros(n)
        nxt = learner.target_q(s2)
        if noise is not None:  # one batch query: the law does not depend on the order
            g = noise(np.concatenate([s, s2]))
            g_next = g[n:] if t_noise is None else t_noise(s2)
            nxt = nxt + g_next
            g_sa = g[np.arange(n), a]
        y = R[idx] + gamma * (1.0 - TERM[idx]) * nxt.max(1)
        if trace:
            log.append({"update": updates, "g_sa": g_sa.copy(), "states": s.copy()})
        if privatizer.clip_norm is None:
            learner.td_step(s, a, y, g_sa)
        else:
            learner.dpsgd_step(s, a, y, privatizer)
        updates += 1
        if on_update is not None:
            on_update(updates)
        if privatizer.reset == "iteration":
            for x in noises:
                x.reset()

    for t in range(cfg.n_samples):
        q = learner.act_q(obs)
        if act_noise is not None:
            q = q + act_noise(obs)
        if cfg.exploration is not None:
            start, end, decay = cfg.exploration
            eps = end + (start - end) * math.exp(-t / decay)
            explore = policy_rng.random() < eps
            action = int(policy_rng.integers(m)) if explore else int(np.argmax(q))
        else:
            action = int(np.argmax(q))
        obs2, r, term, trunc, _ = env.step(action)
        obs2 = observe(obs2)
        r = _check_reward(r, reward_bounds)
        ep_ret += r
        r_used = r if privatizer.release_reward is None else privatizer.release_reward(r)
        S[ptr], A[ptr], R[ptr], S2[ptr], TERM[ptr] = obs, action, r_used, obs2, float(term)
        ptr = (ptr + 1) % cap
        size = min(size + 1, cap)
        if term or trunc:
            returns.append(ep_ret)
            ep_ret = 0.0
            episodes += 1
            o, _ = env.reset()
            obs = observe(o)
            if privatizer.reset == "episode":
                for x in noises:
                    x.reset()
            if cfg.target_sync_episodes and episodes % cfg.target_sync_episodes == 0:
                learner.sync_target()
        else:
            obs = obs2
        if cfg.update_every == "batch":
            if size == cap or t == cfg.n_samples - 1:
                update(np.arange(size))
                size = ptr = 0
        elif size >= cfg.batch_size:
            update(replay_rng.choice(size, cfg.batch_size, replace=False))
    return TrainResult(learner.network, np.asarray(returns), updates, cfg.n_samples, log)


# ------------------------------------------------------------------------------ torch reference kernels
def _td_loss(td, kind: str):
    import torch

    if kind == "squared":
        return 0.5 * td * td
    return torch.nn.functional.smooth_l1_loss(td, torch.zeros_like(td), reduction="none")


def _dpsgd_grads(net, s, a, y, loss_kind: str, priv: Privatizer) -> None:
    """Per-sample gradients (torch.func), each clipped to ``clip_norm`` in l2, summed, plus the
    noise of ``priv.release_gradient`` (released on zeros: the noise itself, in parameter order),
    divided by the batch size (Abadi et al. 2016). Reference for the closed form of
    :meth:`_NumpyLearner.dpsgd_step`."""
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
    named = list(net.named_parameters())
    noise = priv.release_gradient(np.zeros(sum(p.numel() for _, p in named))) \
        if priv.release_gradient is not None else None
    off = 0
    for name, p in named:
        g = (grads[name] * factor.reshape(-1, *([1] * (grads[name].dim() - 1)))).sum(0)
        if noise is not None:
            g = g + torch.from_numpy(noise[off:off + p.numel()].reshape(tuple(g.shape)))
        off += p.numel()
        p.grad = g / n
