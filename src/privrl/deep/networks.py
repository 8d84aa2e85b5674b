"""Q-networks and their optimisers, for many runs at once (DP Q-learning, Wang & Hegde 2019, Alg. 1).

The networks are tiny (1→16→16→2), so per-operation overhead dominates a run: the learner is a
float64 NumPy ReLU MLP with hand-written backward passes, and ``R`` runs of one lockstep batch keep
their networks *stacked* — layer ``l`` of every run in one ``(R, out, in)`` array — so one batched
matrix product advances all of them (:class:`StackedMLP`; :class:`MLP` is one network). Each run's
slice goes through the same products as a network of its own, so a run's numbers do not depend
on the other runs of its batch. The TD learner's hot path (acting, the target values and the TD
gradient) runs in compiled kernels (:mod:`privrl.deep._kernels`: one run's minibatch at a
time through the whole network, the same arithmetic up to the order of the sums).

DP-SGD's per-sample gradients are closed-form: for a ReLU MLP the per-sample gradient of layer
``l`` is the outer product ``delta_l,i ⊗ a_{l-1,i}``, so its squared norm is
``|delta_l,i|^2 (|a_{l-1,i}|^2 + 1)`` with the bias, and the clipped sum is one matrix product with
the rows of ``delta`` scaled. The same learner runs on PyTorch (``backend="torch"``, one run: the
reference with autograd, ``torch.func`` per-sample gradients and ``torch.optim``); tests check that
both give the same runs to floating-point tolerance.

Nothing here draws privacy noise: DP-SGD's noisy sum is the run's ``release_gradient`` (its
releaser).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.deep.dpsgd import clip_factors

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["MLP", "StackedMLP", "build_network"]

_RMS_ALPHA = 0.99  # RMSprop's smoothing constant (PyTorch's default, as in the authors' code)


def _init_params(sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """PyTorch's default ``nn.Linear`` init (``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weight and
    bias) drawn from ``rng``, flattened in parameter order."""
    parts = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(a)
        parts.append(rng.uniform(-bound, bound, (b, a)).ravel())
        parts.append(rng.uniform(-bound, bound, b))
    return np.concatenate(parts)


class StackedMLP:
    """``R`` ReLU MLPs of the same sizes in float64 NumPy. All parameters live in one ``(R, P)``
    array ``params`` (per row: W1, b1, W2, b2, ... as PyTorch's ``named_parameters``); ``W[l]``
    (``(R, out, in)``) and ``b[l]`` (``(R, out)``) are views into it. Inputs carry the run axis
    first: ``forward`` maps ``(R, n, in)`` states to ``(R, n, out)`` values."""

    def __init__(self, sizes: Sequence[int], params: np.ndarray) -> None:
        self.sizes = tuple(int(s) for s in sizes)
        self.params = params
        R = params.shape[0]
        self.W: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        off = 0
        for a, b in zip(self.sizes[:-1], self.sizes[1:]):
            self.W.append(params[:, off:off + a * b].reshape(R, b, a))
            off += a * b
            self.b.append(params[:, off:off + b])
            off += b
        self._WT = [W.transpose(0, 2, 1) for W in self.W]

    @property
    def n_runs(self) -> int:
        return int(self.params.shape[0])

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Outputs ``(R, n, out)`` and the layer inputs ``[x, h1, h2, ...]`` (post-ReLU) for
        :meth:`deltas` and :meth:`grads`."""
        acts = [x]
        h = x
        last = len(self.W) - 1
        for i, (WT, b) in enumerate(zip(self._WT, self.b)):
            # one input coordinate: the product is one multiplication per entry (no sum)
            h = h * WT if WT.shape[1] == 1 else np.matmul(h, WT)
            h += b[:, None, :]
            if i < last:
                np.maximum(h, 0.0, out=h)
                acts.append(h)
        return h, acts

    def point(self, x: np.ndarray) -> np.ndarray:
        """Outputs ``(R, out)`` at one state per network, ``x`` of shape ``(R, in)``."""
        if len(x) == 1:     # one network (a single fit): matrix-vector products, no run axis
            h = x[0]
            for i, (W, b) in enumerate(zip(self.W, self.b)):
                h = W[0] @ h + b[0]
                if i < len(self.W) - 1:
                    h = np.maximum(h, 0.0)
            return h[None]
        h = x[:, :, None]
        last = len(self.W) - 1
        for i, (W, b) in enumerate(zip(self.W, self.b)):
            h = np.matmul(W, h)
            h += b[:, :, None]
            if i < last:
                np.maximum(h, 0.0, out=h)
        return h[:, :, 0]

    def deltas(self, acts: list[np.ndarray], dout: np.ndarray) -> list[np.ndarray]:
        """Per-sample gradients of the loss w.r.t. each layer's pre-activation (first layer first)."""
        out = [dout]
        d = dout
        for layer in range(len(self.W) - 1, 0, -1):
            d = np.matmul(d, self.W[layer])
            d *= acts[layer] > 0
            out.append(d)
        return out[::-1]

    def grads(self, acts: list[np.ndarray], deltas: list[np.ndarray]) -> np.ndarray:
        """Summed parameter gradients ``(R, P)`` (parameter order) from the layer inputs and deltas."""
        R = self.n_runs
        parts = []
        for a, d in zip(acts, deltas):
            parts.append(np.matmul(d.transpose(0, 2, 1), a).reshape(R, -1))
            parts.append(d.sum(1))
        return np.concatenate(parts, axis=1)


class MLP:
    """One ReLU MLP in float64 NumPy (a :class:`StackedMLP` of one run): its parameters are one
    flat vector ``params`` (W1, b1, W2, b2, ...), ``W`` and ``b`` views into it. ``net(x)`` maps
    ``(n, in)`` states to ``(n, out)`` values."""

    def __init__(self, sizes: Sequence[int], params: np.ndarray) -> None:
        self.params = params
        self._stack = StackedMLP(sizes, params[None, :])
        self.sizes = self._stack.sizes
        self.W = [W[0] for W in self._stack.W]
        self.b = [b[0] for b in self._stack.b]

    @classmethod
    def init(cls, sizes: Sequence[int], rng: np.random.Generator) -> MLP:
        return cls(sizes, _init_params(tuple(sizes), rng))

    def copy(self) -> MLP:
        return MLP(self.sizes, self.params.copy())

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        out, acts = self._stack.forward(x[None])
        return out[0], [a[0] for a in acts]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.forward(np.asarray(x, float))[0]

    def point(self, x: np.ndarray) -> np.ndarray:
        """Outputs at one state ``x`` of shape ``(in,)``."""
        return self._stack.point(np.asarray(x, float)[None])[0]

    def to_torch(self) -> nn.Sequential:
        """The same network as a ``torch.nn.Sequential`` (float64)."""
        import torch

        net = _torch_mlp(self.sizes)
        with torch.no_grad():
            for lin, W, b in zip([m for m in net if isinstance(m, torch.nn.Linear)], self.W, self.b):
                lin.weight.copy_(torch.from_numpy(W))
                lin.bias.copy_(torch.from_numpy(b))
        return net


def _torch_mlp(sizes: tuple[int, ...]) -> nn.Sequential:
    from torch import nn

    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b).double())
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def build_network(in_dim: int, hidden: tuple[int, ...], out_dim: int, rng: np.random.Generator) -> nn.Sequential:
    """ReLU MLP (torch) with PyTorch's default uniform init drawn from ``rng`` (no global torch seed);
    the same draws as :meth:`MLP.init`."""
    sizes = (in_dim, *hidden, out_dim)
    return MLP(sizes, _init_params(sizes, rng)).to_torch()


def _loss_grad(td: np.ndarray, kind: str) -> np.ndarray:
    """Derivative of the per-sample TD loss: ``td`` (squared, ``td^2 / 2``) or ``clip(td, -1, 1)``
    (Huber / smooth-L1 with threshold 1)."""
    return td if kind == "squared" else np.clip(td, -1.0, 1.0)


# ------------------------------------------------------------------------------ learners
class NumpyLearner:
    """The online (and target) networks of ``R`` runs with their optimiser, in NumPy.

    ``rngs`` are the runs' ``init`` streams (one network each); ``learning_rates`` one step size per
    run (the rest of ``cfg`` is shared). States carry the run axis first: ``(R, n, in)``; actions
    ``(R, n)``. ``network(r)`` is run ``r``'s trained network (an :class:`MLP`)."""

    def __init__(self, sizes: tuple[int, ...], rngs: Sequence[np.random.Generator], cfg: Any,
                 has_target: bool, learning_rates: Sequence[float] | None = None) -> None:
        # here, not at the top: numba loads on the first fit only, never on ``import privrl``
        from privrl.deep import _kernels

        params = np.stack([_init_params(tuple(sizes), rng) for rng in rngs])
        self._kernels = _kernels
        self._layout = _kernels.layout_of(tuple(sizes))
        self.net = StackedMLP(sizes, params)
        self.target = StackedMLP(sizes, params.copy()) if has_target else None
        self.cfg = cfg
        lr = [cfg.learning_rate] * len(rngs) if learning_rates is None else list(learning_rates)
        self._neg_lr = -np.asarray(lr, float)[:, None]
        self._sq = np.zeros_like(params) if cfg.optimizer == "rmsprop" else None

    def network(self, r: int) -> MLP:
        return MLP(self.net.sizes, self.net.params[r].copy())

    def _forward(self, net: StackedMLP, x: np.ndarray) -> np.ndarray:
        """``(R, n, in)`` states → ``(R, n, m)`` values (the compiled kernel)."""
        out = np.empty((*x.shape[:2], net.sizes[-1]))
        self._kernels.forward(net.params, self._layout, np.ascontiguousarray(x, dtype=float), out)
        return out

    def act_q(self, obs: np.ndarray) -> np.ndarray:
        """Q at one state per run: ``(R, in)`` → ``(R, m)``."""
        return self._forward(self.net, obs[:, None, :])[:, 0]

    def target_q(self, s2: np.ndarray) -> np.ndarray:
        return self._forward(self.target or self.net, s2)

    def sync_target(self, rows: np.ndarray) -> None:
        """Copy the online networks of ``rows`` (indices) into their target networks."""
        if self.target is not None and len(rows):
            self.target.params[rows] = self.net.params[rows]

    @staticmethod
    def _dout(q: np.ndarray, a: np.ndarray, dtd: np.ndarray) -> np.ndarray:
        dq = np.zeros_like(q)
        R, n = a.shape
        dq[np.arange(R)[:, None], np.arange(n), a] = dtd
        return dq

    @staticmethod
    def _taken(q: np.ndarray, a: np.ndarray) -> np.ndarray:
        R, n = a.shape
        return q[np.arange(R)[:, None], np.arange(n), a]

    def td_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, g_sa: np.ndarray) -> None:
        """One step on the mean TD loss (Alg. 1 line 20), every run on its own batch (the compiled
        kernel: forward, TD error, backward and gradient sums in one pass per run)."""
        grad = np.empty_like(self.net.params)
        c = np.ascontiguousarray
        self._kernels.td_gradients(self.net.params, self._layout, c(s, dtype=float), c(a, dtype=np.int64),
                                   c(g_sa, dtype=float), c(y, dtype=float), self.cfg.loss != "squared", grad)
        self._apply(grad)

    def dpsgd_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, clip_norms: np.ndarray,
                   releases: Sequence[Callable[[np.ndarray], np.ndarray] | None]) -> None:
        """Per-sample gradients clipped to each run's ``clip_norm`` in l2, summed, released
        (``releases[r]``: plus Gaussian noise), divided by the batch size (Abadi et al. 2016);
        closed form (module docstring). Gradient coordinates in parameter order (W1, b1, ...)."""
        q, acts = self.net.forward(s)
        n = a.shape[1]
        dtd = _loss_grad(self._taken(q, a) - y, self.cfg.loss)
        deltas = self.net.deltas(acts, self._dout(q, a, dtd))
        sq = sum((d * d).sum(2) * ((x * x).sum(2) + 1.0) for x, d in zip(acts, deltas))
        factor = clip_factors(sq, clip_norms[:, None])
        grad = self.net.grads(acts, [d * factor[:, :, None] for d in deltas])
        for r, release in enumerate(releases):
            if release is not None:
                grad[r] = release(grad[r])
        self._apply(grad / n)

    def _apply(self, grad: np.ndarray) -> None:
        cfg = self.cfg
        if cfg.grad_clamp is not None:
            np.clip(grad, -cfg.grad_clamp, cfg.grad_clamp, out=grad)
        p = self.net.params
        if self._sq is None:  # SGD
            p += self._neg_lr * grad
        else:  # RMSprop as torch.optim.RMSprop(alpha=0.99, eps=1e-8)
            sq = self._sq
            sq *= _RMS_ALPHA
            sq += ((1.0 - _RMS_ALPHA) * grad) * grad
            p += (self._neg_lr * grad) / (np.sqrt(sq) + 1e-8)


class TorchLearner:
    """The same learner on PyTorch for one run (reference implementation: autograd, ``torch.func``,
    ``torch.optim``); the interface of :class:`NumpyLearner` with ``R = 1``."""

    def __init__(self, sizes: tuple[int, ...], rngs: Sequence[np.random.Generator], cfg: Any,
                 has_target: bool, learning_rates: Sequence[float] | None = None) -> None:
        import torch

        if len(rngs) != 1:
            raise ValueError("the PyTorch reference learner trains one run at a time")
        lr = cfg.learning_rate if learning_rates is None else float(learning_rates[0])
        self.net = build_network(sizes[0], tuple(sizes[1:-1]), sizes[-1], rngs[0])
        self.target = copy.deepcopy(self.net) if has_target else None
        self.cfg = cfg
        self.opt: torch.optim.Optimizer
        if cfg.optimizer == "sgd":
            self.opt = torch.optim.SGD(self.net.parameters(), lr=lr)
        else:
            self.opt = torch.optim.RMSprop(self.net.parameters(), lr=lr, alpha=_RMS_ALPHA, eps=1e-8)

    def network(self, r: int) -> nn.Sequential:
        return self.net

    def act_q(self, obs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.net(torch.from_numpy(obs)).numpy()

    def target_q(self, s2: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return (self.target or self.net)(torch.from_numpy(s2[0])).numpy()[None]

    def sync_target(self, rows: np.ndarray) -> None:
        if self.target is not None and len(rows):
            self.target.load_state_dict(self.net.state_dict())

    def td_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, g_sa: np.ndarray) -> None:
        import torch

        self.opt.zero_grad()
        ta = torch.from_numpy(a[0])
        q = self.net(torch.from_numpy(s[0])).gather(1, ta[:, None])[:, 0]
        _td_loss(q + torch.from_numpy(g_sa[0]) - torch.from_numpy(y[0]), self.cfg.loss).mean().backward()
        self._apply()

    def dpsgd_step(self, s: np.ndarray, a: np.ndarray, y: np.ndarray, clip_norms: np.ndarray,
                   releases: Sequence[Callable[[np.ndarray], np.ndarray] | None]) -> None:
        import torch

        self.opt.zero_grad()
        _dpsgd_grads(self.net, torch.from_numpy(s[0]), torch.from_numpy(a[0]), torch.from_numpy(y[0]),
                     self.cfg.loss, float(clip_norms[0]), releases[0])
        self._apply()

    def _apply(self) -> None:
        import torch

        if self.cfg.grad_clamp is not None:
            torch.nn.utils.clip_grad_value_(self.net.parameters(), self.cfg.grad_clamp)
        self.opt.step()


# ------------------------------------------------------------------------------ torch reference kernels
def _td_loss(td: torch.Tensor, kind: str) -> torch.Tensor:
    import torch

    if kind == "squared":
        return 0.5 * td * td
    return torch.nn.functional.smooth_l1_loss(td, torch.zeros_like(td), reduction="none")


def _dpsgd_grads(net: nn.Sequential, s: torch.Tensor, a: torch.Tensor, y: torch.Tensor, loss_kind: str,
                 clip_norm: float, release: Callable[[np.ndarray], np.ndarray] | None) -> None:
    """Per-sample gradients (torch.func), each clipped to ``clip_norm`` in l2, summed, plus the
    noise of ``release`` (released on zeros: the noise itself, in parameter order), divided by the
    batch size (Abadi et al. 2016). Reference for the closed form of :meth:`NumpyLearner.dpsgd_step`."""
    import torch
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss_one(p: dict[str, torch.Tensor], si: torch.Tensor, onehot: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        q = (functional_call(net, p, (si[None, :],))[0] * onehot).sum()
        return _td_loss((q - yi)[None], loss_kind)[0]

    n_out = int(net[-1].out_features)  # type: ignore[arg-type]  # the last layer is an nn.Linear (_torch_mlp)
    onehot = torch.nn.functional.one_hot(a, n_out).double()
    grads = vmap(grad(loss_one), in_dims=(None, 0, 0, 0))(params, s, onehot, y)
    n = s.shape[0]
    norms = torch.sqrt(sum((g.reshape(n, -1) ** 2).sum(1) for g in grads.values()))
    factor = torch.clamp(float(clip_norm) / (norms + 1e-12), max=1.0)
    named = list(net.named_parameters())
    noise = release(np.zeros(sum(p.numel() for _, p in named))) if release is not None else None
    off = 0
    for name, p in named:
        g = (grads[name] * factor.reshape(-1, *([1] * (grads[name].dim() - 1)))).sum(0)
        if noise is not None:
            g = g + torch.from_numpy(noise[off:off + p.numel()].reshape(tuple(g.shape)))
        off += p.numel()
        p.grad = g / n
