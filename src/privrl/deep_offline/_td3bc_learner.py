"""The torch side of (DP-)TD3+BC for continuous actions (Fujimoto & Gu, NeurIPS 2021, "A minimalist approach
to offline reinforcement learning"): each sampled trajectory's gradients of its summed critic and actor
losses, and the Adam loop with TD3's target networks, target policy smoothing and delayed actor updates.

The networks (ReLU MLPs on flat parameter vectors, :func:`privrl.deep_offline._learner.forward`): the twin
critics ``Q_θ1(s, a)``, ``Q_θ2(s, a)`` (one parameter vector ``θ = (θ1, θ2)``: *the critic*, clipped as one
network), the actor ``π_φ(s) = a_max tanh(f_φ(s))``, and their targets ``θ'``, ``φ'``. A trajectory ``u``'s
losses are sums over its transitions ``t`` (its whole contribution to a step is one gradient per network):

* critic (TD3's clipped double Q): ``L_Q(θ) = Σ_t Σ_{i=1,2} (y_t − Q_θi(s_t, a_t))²`` with the target
  ``y_t = r_t + γ (1 − d_t) min_i Q_θ'i(s'_t, ã_t)`` and the smoothed target action
  ``ã_t = clip(π_φ'(s'_t) + clip(ε_t, −c, c), −a_max, a_max)``, ``ε_t ~ N(0, σ²)``;
* actor, eq. (3): ``L_π(φ) = Σ_t [−λ_u Q_θ1(s_t, π_φ(s_t)) + ‖π_φ(s_t) − a_t‖²]`` with
  ``λ_u = α / mean_{t ∈ u} |Q_θ1(s_t, π_φ(s_t))|`` — the paper's normaliser (``α`` over the mean ``|Q|``),
  taken over the trajectory's own transitions rather than the batch (a batch-wide mean would make each
  trajectory's gradient depend on the other sampled trajectories, and its clipped contribution would no
  longer bound what adding or removing it changes), as a constant of the step (no gradient through it).

Every quantity inside the losses but the differentiated network is a constant of the step, computed from the
parameters at the step's start (released by earlier steps) and the sampled transitions. The critic is updated
every step; the actor and both targets every ``d``-th step (``policy_delay``), the actor's gradient taken at the
step's start critic (one joint release per step; TD3 lets the actor see the critic updated in the same step).

Imported only inside the estimators' ``fit`` (torch is the ``deep`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad, vmap

from privrl._progress import loop_progress
from privrl.deep.dpsgd import clipped_block_sums, poisson_sample
from privrl.deep_offline._iql_learner import Transitions, _n_params
from privrl.deep_offline._learner import _one_torch_thread, forward

__all__ = ["TD3BCConfig", "Transitions", "is_actor_step", "unit_gradients", "clipped_step", "train"]

#: floor of the normaliser mean |Q| of λ (a critic at exactly 0 on a trajectory would divide by zero)
MIN_MEAN_ABS_Q = 1e-6


@dataclass(frozen=True)
class TD3BCConfig:
    """The public settings of the losses: discount ``γ``, Polyak rate of the targets, the BC weight ``α`` of
    eq. (3), the action bound ``a_max``, the target smoothing noise std ``σ`` and its clip ``c`` (in action
    units), the actor's delay ``d``, and the layer sizes of one Q-network and of the actor."""

    gamma: float
    polyak: float
    alpha: float
    max_action: float
    smoothing_std: float
    smoothing_clip: float
    policy_delay: int
    q_sizes: tuple[int, ...]
    actor_sizes: tuple[int, ...]

    @property
    def blocks(self) -> tuple[int, int]:
        """The parameter counts of the critic (both Q-networks) and of the actor."""
        return 2 * _n_params(self.q_sizes), _n_params(self.actor_sizes)


def is_actor_step(t: int, delay: int) -> bool:
    """Whether step ``t`` (0-based) also updates the actor and the targets: every ``d``-th step, as TD3."""
    return (t + 1) % delay == 0


def actor_steps(steps: int, delay: int) -> int:
    """How many of ``steps`` steps update the actor (public: a function of ``T`` and ``d``)."""
    return steps // delay


def _actor(phi: torch.Tensor, x: torch.Tensor, cfg: TD3BCConfig) -> torch.Tensor:
    return cfg.max_action * torch.tanh(forward(phi, x, cfg.actor_sizes))


def _q(theta_i: torch.Tensor, x: torch.Tensor, a: torch.Tensor, cfg: TD3BCConfig) -> torch.Tensor:
    return forward(theta_i, torch.cat([x, a], dim=-1), cfg.q_sizes)[..., 0]


def _twin(critic: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    half = critic.shape[0] // 2
    return critic[:half], critic[half:]


def _td_target(critic_target: torch.Tensor, actor_target: torch.Tensor, b: dict[str, torch.Tensor],
               eps: torch.Tensor, cfg: TD3BCConfig) -> torch.Tensor:
    """``y = r + γ (1 − d) min_i Q_θ'i(s', ã)`` with the smoothed target action ``ã`` (``eps`` standard normal)."""
    with torch.no_grad():
        noise = torch.clamp(cfg.smoothing_std * eps, -cfg.smoothing_clip, cfg.smoothing_clip)
        a2 = torch.clamp(_actor(actor_target, b["x2"], cfg) + noise, -cfg.max_action, cfg.max_action)
        q1, q2 = (_q(t, b["x2"], a2, cfg) for t in _twin(critic_target))
        return b["r"] + cfg.gamma * b["nd"] * torch.minimum(q1, q2)


def _lambdas(critic: torch.Tensor, phi: torch.Tensor, b: dict[str, torch.Tensor], cfg: TD3BCConfig
             ) -> torch.Tensor:
    """``(B,)``: each trajectory's ``λ_u = α / mean_{t ∈ u} |Q_θ1(s_t, π_φ(s_t))|`` (a constant of the step)."""
    with torch.no_grad():
        q = _q(_twin(critic)[0], b["x"], _actor(phi, b["x"], cfg), cfg)
        mean_abs = (q.abs() * b["mask"]).sum(-1) / b["mask"].sum(-1)
        return cfg.alpha / torch.clamp(mean_abs, min=MIN_MEAN_ABS_Q)


def _critic_loss(critic: torch.Tensor, x: torch.Tensor, a: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                 cfg: TD3BCConfig) -> torch.Tensor:
    """One trajectory's critic loss: both Q-networks' squared errors against the target, summed."""
    q1, q2 = (_q(t, x, a, cfg) for t in _twin(critic))
    return (((y - q1) ** 2 + (y - q2) ** 2) * mask).sum()


def _actor_loss(phi: torch.Tensor, theta1: torch.Tensor, x: torch.Tensor, a: torch.Tensor, lam: torch.Tensor,
                mask: torch.Tensor, cfg: TD3BCConfig) -> torch.Tensor:
    """Eq. (3) summed over one trajectory: ``−λ_u Q_θ1(s, π_φ(s)) + ‖π_φ(s) − a‖²``."""
    pi = _actor(phi, x, cfg)
    return ((-lam * _q(theta1, x, pi, cfg) + ((pi - a) ** 2).sum(-1)) * mask).sum()


def unit_gradients(critic: np.ndarray, actor: np.ndarray, targets: tuple[np.ndarray, np.ndarray],
                   rows_of: list[np.ndarray], data: Transitions, eps: np.ndarray, cfg: TD3BCConfig, *,
                   with_actor: bool) -> tuple[np.ndarray, ...]:
    """For each trajectory (its rows ``rows_of[i]``) the gradient of its summed critic loss ``(B, P_critic)``
    and, ``with_actor``, of its summed actor loss ``(B, P_actor)``, at the step's parameters with the targets
    ``(θ', φ')``; ``eps`` ``(B, L, d)`` the standard normal draws of the target smoothing."""
    p_critic, p_actor = cfg.blocks
    if not rows_of:
        return (np.zeros((0, p_critic)), np.zeros((0, p_actor))) if with_actor else (np.zeros((0, p_critic)),)
    b = data.padded(rows_of)
    theta, phi = torch.from_numpy(np.ascontiguousarray(critic)), torch.from_numpy(np.ascontiguousarray(actor))
    y = _td_target(torch.from_numpy(targets[0]), torch.from_numpy(targets[1]), b, torch.from_numpy(eps), cfg)
    g_critic = vmap(grad(_critic_loss), in_dims=(None, 0, 0, 0, 0, None))(theta, b["x"], b["a"], y, b["mask"], cfg)
    if not with_actor:
        return (g_critic.numpy(),)
    lam = _lambdas(theta, phi, b, cfg)
    g_actor = vmap(grad(_actor_loss), in_dims=(None, None, 0, 0, 0, 0, None))(phi, _twin(theta)[0], b["x"], b["a"],
                                                                           lam, b["mask"], cfg)
    return g_critic.numpy(), g_actor.numpy()


def clipped_step(grads: Sequence[np.ndarray], clip: float | None) -> np.ndarray:
    """The step's sum over trajectories, network by network (critic, and actor on an actor step), each
    network's per-trajectory gradient clipped to ``clip`` on its own (:func:`privrl.deep.dpsgd.clipped_block_sums`):
    a trajectory moves it by at most ``C`` on a critic-only step and ``√2 C`` on an actor step."""
    return clipped_block_sums(grads, clip)


def _polyak(target: np.ndarray, new: torch.Tensor, rate: float) -> np.ndarray:
    return (1.0 - rate) * target + rate * new.detach().numpy()


def train(critic0: np.ndarray, actor0: np.ndarray, data: Transitions, cfg: TD3BCConfig, *, steps: int,
          sampling_rate: float, learning_rate: float, rng: np.random.Generator, clip: float | None,
          privatize: Callable[[np.ndarray, bool], np.ndarray] | None) -> dict[str, np.ndarray]:
    """``steps`` steps from ``(critic0, actor0)``, the targets starting equal to them. Step ``t`` draws a
    Poisson-sampled batch of trajectories and the target smoothing draws from ``rng``, takes
    :func:`clipped_step` of its gradients (the actor's only on an actor step, :func:`is_actor_step`), hands it
    to ``privatize(total, actor_step)`` (the noisy release; None: the sum itself) and moves each network with its
    own Adam; on an actor step the targets move by Polyak averaging (post-processing of released
    parameters). Returns the ``critic``, ``actor``, ``critic_target`` and ``actor_target`` parameters."""
    with _one_torch_thread():
        theta, phi = (torch.tensor(p, dtype=torch.float64) for p in (critic0, actor0))
        opts = [torch.optim.Adam([p], lr=learning_rate) for p in (theta, phi)]
        targets = (np.array(critic0, dtype=np.float64), np.array(actor0, dtype=np.float64))
        n_units, width = len(data.starts) - 1, data.actions.shape[1]
        with loop_progress(steps, "step") as bar:
            for t in range(steps):
                with_actor = is_actor_step(t, cfg.policy_delay)
                rows_of = data.rows(poisson_sample(n_units, sampling_rate, rng))
                longest = max((len(r) for r in rows_of), default=0)
                eps = rng.standard_normal((len(rows_of), longest, width))
                grads = unit_gradients(theta.numpy(), phi.numpy(), targets, rows_of, data, eps, cfg,
                                       with_actor=with_actor)
                total = clipped_step(grads, clip)
                if privatize is not None:
                    total = privatize(total, with_actor)
                for param, opt, g in zip((theta, phi), opts, np.split(np.asarray(total, dtype=np.float64),
                                                                       [cfg.blocks[0]])):
                    if g.size:
                        param.grad = torch.from_numpy(g.copy())
                        opt.step()
                if with_actor:
                    targets = (_polyak(targets[0], theta, cfg.polyak), _polyak(targets[1], phi, cfg.polyak))
                bar.update(1)
        return {"critic": theta.numpy().copy(), "actor": phi.numpy().copy(), "critic_target": targets[0],
                "actor_target": targets[1]}
