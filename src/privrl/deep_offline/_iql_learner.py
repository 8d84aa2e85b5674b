"""The torch side of (DP-)IQL for discrete actions (Kostrikov, Nair & Levine, ICLR 2022, "Offline
reinforcement learning with implicit Q-learning"): each sampled trajectory's gradients of its three summed
losses, and the Adam loop with the Polyak-averaged target Q-network.

The three networks (ReLU MLPs on flat parameter vectors, :func:`privrl.deep_offline._learner.forward`):
``Q_θ(s, ·)`` (one output per action), ``V_ψ(s)`` (one output) and the policy logits ``π_φ(· | s)``; the
target ``Q_θ̂``. A trajectory ``u``'s losses are sums over its transitions (so one trajectory's whole
contribution to a step is the sum of its transitions' per-example gradients, clipped as one):

* value, eq. (5): ``L_V(ψ) = Σ_t L₂^τ(Q_θ̂(s_t, a_t) − V_ψ(s_t))`` with the expectile loss
  ``L₂^τ(u) = |τ − 1(u < 0)| u²``;
* Q, eq. (6): ``L_Q(θ) = Σ_t (r_t + γ (1 − d_t) V_ψ(s'_t) − Q_θ(s_t, a_t))²`` (``d_t`` the terminal flag);
* policy, eq. (7): ``L_π(φ) = −Σ_t min(exp(β (Q_θ̂(s_t, a_t) − V_ψ(s_t))), w_max) log π_φ(a_t | s_t)``
  (advantage-weighted regression; the weight capped at ``w_max`` = 100 as in the authors' code).

Every quantity inside the losses but the differentiated network is a constant of the step, computed from
the parameters at the step's start (public: released by earlier steps) and the sampled transitions; the
three gradients are taken at the step's start parameters (one joint release per step).

Imported only inside the estimators' ``fit`` (torch is the ``deep`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad, vmap

from privrl._progress import loop_progress
from privrl.deep.dpsgd import clipped_block_sums, poisson_sample
from privrl.deep_offline._learner import _one_torch_thread, forward, padding

__all__ = ["IQLConfig", "Transitions", "unit_gradients", "clipped_step", "train"]

#: cap of the advantage weight exp(β A) (the authors' code clips it at 100)
MAX_WEIGHT = 100.0


@dataclass(frozen=True)
class IQLConfig:
    """The public settings of the losses: discount ``γ``, expectile ``τ``, inverse temperature ``β``,
    Polyak rate ``α`` of the target Q-network, and the layer sizes of the Q, V and policy networks."""

    gamma: float
    expectile: float
    temperature: float
    polyak: float
    q_sizes: tuple[int, ...]
    v_sizes: tuple[int, ...]
    pi_sizes: tuple[int, ...]

    @property
    def blocks(self) -> tuple[int, int, int]:
        """The parameter counts of Q, V and π (the order of the flat parameter vector)."""
        return _n_params(self.q_sizes), _n_params(self.v_sizes), _n_params(self.pi_sizes)


def _n_params(sizes: Sequence[int]) -> int:
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


@dataclass(frozen=True)
class Transitions:
    """The flat transition arrays of a dataset (scaled observations) and its CSR episode offsets."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    not_done: np.ndarray
    starts: np.ndarray

    def rows(self, units: Iterable[int]) -> list[np.ndarray]:
        return [np.arange(self.starts[u], self.starts[u + 1]) for u in units]

    def padded(self, rows_of: list[np.ndarray]) -> dict[str, torch.Tensor]:
        """The trajectories' transitions padded to the longest (``(B, L, ...)``) with their mask."""
        idx, mask = padding(rows_of)
        fields = {"x": self.obs, "a": self.actions, "r": self.rewards, "x2": self.next_obs, "nd": self.not_done}
        out = {k: torch.from_numpy(np.ascontiguousarray(v[idx])) for k, v in fields.items()}
        out["mask"] = torch.from_numpy(mask)
        return out


def split(theta: np.ndarray | torch.Tensor, cfg: IQLConfig) -> tuple:
    """``theta`` cut into its Q, V and π parameters."""
    pq, pv, _ = cfg.blocks
    return theta[:pq], theta[pq:pq + pv], theta[pq + pv:]


def _constants(q_target: torch.Tensor, v: torch.Tensor, b: dict[str, torch.Tensor], cfg: IQLConfig
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The step's constants on the padded batch: ``Q_θ̂(s, a)``, the TD target ``r + γ (1 − d) V_ψ(s')``
    and the advantage weight ``min(exp(β (Q_θ̂(s, a) − V_ψ(s))), w_max)``."""
    with torch.no_grad():
        q_hat = forward(q_target, b["x"], cfg.q_sizes).gather(-1, b["a"][..., None])[..., 0]
        v_s = forward(v, b["x"], cfg.v_sizes)[..., 0]
        y = b["r"] + cfg.gamma * b["nd"] * forward(v, b["x2"], cfg.v_sizes)[..., 0]
        weight = torch.clamp(torch.exp(cfg.temperature * (q_hat - v_s)), max=MAX_WEIGHT)
    return q_hat, y, weight


def _value_loss(psi: torch.Tensor, x: torch.Tensor, q_hat: torch.Tensor, mask: torch.Tensor,
                sizes: tuple[int, ...], tau: float) -> torch.Tensor:
    """Eq. (5) summed over one trajectory: the expectile loss of ``Q_θ̂(s, a) − V_ψ(s)``."""
    u = q_hat - forward(psi, x, sizes)[:, 0]
    return (torch.abs(tau - (u < 0).double()) * u * u * mask).sum()


def _q_loss(theta: torch.Tensor, x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
            sizes: tuple[int, ...]) -> torch.Tensor:
    """Eq. (6) summed over one trajectory: the squared TD error against the value target."""
    q = forward(theta, x, sizes).gather(-1, a[:, None])[:, 0]
    return ((y - q) ** 2 * mask).sum()


def _policy_loss(phi: torch.Tensor, x: torch.Tensor, a: torch.Tensor, weight: torch.Tensor, mask: torch.Tensor,
                 sizes: tuple[int, ...]) -> torch.Tensor:
    """Eq. (7) summed over one trajectory: the advantage-weighted negative log-likelihood."""
    logp = torch.log_softmax(forward(phi, x, sizes), dim=-1).gather(-1, a[:, None])[:, 0]
    return -(weight * logp * mask).sum()


def unit_gradients(theta: np.ndarray, target: np.ndarray, rows_of: list[np.ndarray], data: Transitions,
                   cfg: IQLConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each trajectory (its rows ``rows_of[i]``) the gradients of its summed Q, V and π losses at the
    parameters ``theta`` (Q, V, π) with the target Q-network ``target``: ``(B, P_Q)``, ``(B, P_V)``,
    ``(B, P_π)``."""
    if not rows_of:
        pq, pv, ppi = cfg.blocks
        return np.zeros((0, pq)), np.zeros((0, pv)), np.zeros((0, ppi))
    b = data.padded(rows_of)
    q, v, pi = (torch.from_numpy(np.ascontiguousarray(p)) for p in split(theta, cfg))
    q_hat, y, weight = _constants(torch.from_numpy(target), v, b, cfg)
    x, a, mask = b["x"], b["a"], b["mask"]
    g_q = vmap(grad(_q_loss), in_dims=(None, 0, 0, 0, 0, None))(q, x, a, y, mask, cfg.q_sizes)
    g_v = vmap(grad(_value_loss), in_dims=(None, 0, 0, 0, None, None))(v, x, q_hat, mask, cfg.v_sizes,
                                                                        cfg.expectile)
    g_pi = vmap(grad(_policy_loss), in_dims=(None, 0, 0, 0, 0, None))(pi, x, a, weight, mask, cfg.pi_sizes)
    return g_q.numpy(), g_v.numpy(), g_pi.numpy()


def clipped_step(grads: Sequence[np.ndarray], clip: float | None) -> np.ndarray:
    """The step's sum over trajectories, network by network: ``(Σ_u clip(g_u^Q), Σ_u clip(g_u^V),
    Σ_u clip(g_u^π))`` with each network's per-trajectory gradient clipped to ℓ2 norm ``clip`` (None: the
    plain sums; :func:`privrl.deep.dpsgd.clipped_block_sums`). One trajectory's contribution, the
    concatenation of its three clipped gradients, has ℓ2 norm at most ``√3 C``."""
    return clipped_block_sums(grads, clip)


def train(theta0: np.ndarray, data: Transitions, cfg: IQLConfig, *, steps: int, sampling_rate: float,
          learning_rate: float, rng: np.random.Generator, clip: float | None,
          privatize: Callable[[np.ndarray], np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` Adam steps from ``theta0`` (Q, V, π; the target starts as Q's part). Step ``t`` draws a
    Poisson-sampled batch of trajectories from ``rng``, takes :func:`clipped_step` of their gradients, hands
    it to ``privatize`` (the noisy release; None: the sum itself) and moves the target towards the updated
    Q: ``θ̂ ← (1 − α) θ̂ + α θ`` (post-processing of released parameters). Returns the parameters and the
    target."""
    with _one_torch_thread():
        theta = torch.tensor(theta0, dtype=torch.float64)
        theta.grad = torch.zeros_like(theta)
        opt = torch.optim.Adam([theta], lr=learning_rate)
        target = np.array(split(theta0, cfg)[0], dtype=np.float64)
        with loop_progress(steps, "step") as bar:
            for _ in range(steps):
                units = poisson_sample(len(data.starts) - 1, sampling_rate, rng)
                grads = unit_gradients(theta.detach().numpy(), target, data.rows(units), data, cfg)
                total = clipped_step(grads, clip)
                if privatize is not None:
                    total = privatize(total)
                theta.grad = torch.from_numpy(np.asarray(total, dtype=np.float64))
                opt.step()
                target = (1.0 - cfg.polyak) * target + cfg.polyak * split(theta.detach().numpy(), cfg)[0]
                bar.update(1)
        return theta.detach().numpy().copy(), target
