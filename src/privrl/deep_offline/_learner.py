"""The torch side of the deep offline learners: a ReLU MLP on one flat float64 parameter vector, the
gradient of each sampled trajectory's summed loss (``torch.func``: ``vmap`` over trajectories of ``grad``
of the masked sum over their padded transitions — the per-example gradients summed per unit, without
holding one row per transition), and the Adam loop over Poisson-sampled batches of trajectories.

Own clipping rather than Opacus: Opacus clips per *example* (a row of a batch); here the unit is a
trajectory whose transitions are many rows, and its *total* gradient is what must be clipped
(:func:`privrl.deep.dpsgd.clipped_sum`). The noise is added by the caller's ``privatize`` (the fit's
:class:`~privrl.deep.dpsgd.SubsampledGaussianSteps`), so nothing here draws privacy noise.

Imported only inside the estimators' ``fit`` (torch is the ``deep`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch.func import grad, vmap

from privrl._progress import loop_progress
from privrl.deep.dpsgd import clipped_sum, poisson_sample

__all__ = ["forward", "unit_gradients", "train"]


def forward(theta: torch.Tensor, x: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """The MLP of layer ``sizes`` whose parameters are the flat ``theta`` (W1, b1, W2, b2, ... as
    :class:`privrl.deep.networks.MLP`): ReLU between layers, linear output."""
    off, h = 0, x
    last = len(sizes) - 2
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        W = theta[off:off + a * b].reshape(b, a)
        off += a * b
        h = h @ W.T + theta[off:off + b]
        off += b
        if i < last:
            h = torch.relu(h)
    return h


def _bc_unit_loss(theta: torch.Tensor, x: torch.Tensor, a: torch.Tensor, mask: torch.Tensor,
                  sizes: Sequence[int]) -> torch.Tensor:
    """One trajectory's behaviour-cloning loss: the sum over its (unmasked) transitions of the
    cross-entropy ``-log π_θ(a | s)``."""
    logp = torch.log_softmax(forward(theta, x, sizes), dim=-1)
    return -(logp.gather(-1, a[:, None])[:, 0] * mask).sum()


def padding(rows_of: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(idx, mask)`` ``(B, L)``: the sampled trajectories' row indices padded to the longest (with
    row 0) and the mask of the real rows."""
    longest = max(len(r) for r in rows_of)
    idx = np.zeros((len(rows_of), longest), dtype=np.int64)
    mask = np.zeros((len(rows_of), longest))
    for i, rows in enumerate(rows_of):
        idx[i, :len(rows)] = rows
        mask[i, :len(rows)] = 1.0
    return idx, mask


def _padded(rows_of: list[np.ndarray], obs: np.ndarray, actions: np.ndarray
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The sampled trajectories' transitions padded to the longest: ``(B, L, k)``, ``(B, L)``, mask."""
    idx, mask = padding(rows_of)
    return torch.from_numpy(obs[idx]), torch.from_numpy(actions[idx]), torch.from_numpy(mask)


def unit_gradients(theta: np.ndarray, rows_of: list[np.ndarray], obs: np.ndarray, actions: np.ndarray,
                   sizes: Sequence[int]) -> np.ndarray:
    """``(B, P)``: for each trajectory (its transition rows ``rows_of[i]``) the gradient of its summed
    BC loss at ``theta`` — the sum of its transitions' per-example gradients."""
    if not rows_of:
        return np.zeros((0, theta.size))
    x, a, mask = _padded(rows_of, obs, actions)
    per_unit = vmap(grad(_bc_unit_loss), in_dims=(None, 0, 0, 0, None))
    return per_unit(torch.from_numpy(theta), x, a, mask, tuple(sizes)).numpy()


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Torch's intra-op pool limited to one thread for the block (restored on exit): the networks are
    tiny, and waking a pool of threads per operation costs far more than the arithmetic (a step of
    five trajectories took 0.45 s with two threads on two busy cores, 2.5 ms with one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(theta0: np.ndarray, sizes: Sequence[int], obs: np.ndarray, actions: np.ndarray,
          starts: np.ndarray, *, steps: int, sampling_rate: float, learning_rate: float,
          rng: np.random.Generator, clip: float | None,
          privatize: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    """``steps`` Adam steps from ``theta0``. Step ``t`` draws a Poisson-sampled batch of trajectories
    (``starts``: the dataset's CSR offsets) from ``rng``, sums their per-trajectory gradients — each
    clipped to ℓ2 norm ``clip`` when ``clip`` is given — and hands the sum to ``privatize`` (the noisy
    release; None: the sum itself, the non-private learner). Adam is invariant to the gradient's scale,
    so the (noisy) sum is its input as is: no data-dependent normalisation (e.g. by the batch size)."""
    with _one_torch_thread():
        return _adam_steps(theta0, sizes, obs, actions, starts, steps=steps, sampling_rate=sampling_rate,
                           learning_rate=learning_rate, rng=rng, clip=clip, privatize=privatize)


def _adam_steps(theta0: np.ndarray, sizes: Sequence[int], obs: np.ndarray, actions: np.ndarray,
                starts: np.ndarray, *, steps: int, sampling_rate: float, learning_rate: float,
                rng: np.random.Generator, clip: float | None,
                privatize: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    theta = torch.tensor(theta0, dtype=torch.float64)
    theta.grad = torch.zeros_like(theta)
    opt = torch.optim.Adam([theta], lr=learning_rate)
    n_units = len(starts) - 1
    with loop_progress(steps, "step") as bar:
        for _ in range(steps):
            units = poisson_sample(n_units, sampling_rate, rng)
            rows_of = [np.arange(starts[u], starts[u + 1]) for u in units]
            g = unit_gradients(theta.detach().numpy(), rows_of, obs, actions, sizes)
            total = clipped_sum(g, clip) if clip is not None else g.sum(0)
            if privatize is not None:
                total = privatize(total)
            theta.grad = torch.from_numpy(np.asarray(total, dtype=np.float64))
            opt.step()
            bar.update(1)
    return theta.detach().numpy().copy()
