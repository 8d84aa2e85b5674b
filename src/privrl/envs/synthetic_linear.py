"""The synthetic linear MDP of Qiao & Wang (2023), Appendix F (after Min et al. 2021, Yin et al. 2022).

* ``S = {0, 1}``, ``A = {0, …, 99}``, ``d = 10``, horizon ``H`` (20 in the paper);
* ``φ(s, a) = (a⃗, δ(s,a), 1 − δ(s,a))`` where ``a⃗ ∈ {0,1}^8`` is the binary code of ``a`` —
  ``bit_order="msb"`` (default): ``a⃗_1`` is the 2⁷ bit (``numpy.unpackbits`` order);
  ``"lsb"``: ``a⃗_1`` is the 2⁰ bit — and ``δ(s,a) = 1`` iff ``1{s=0} = 1{a=0}``;
* ``ν_h(0) = (0,…,0, α_{h,1}, α_{h,2})``, ``ν_h(1) = (0,…,0, 1−α_{h,1}, 1−α_{h,2})``;
* ``θ_h = (r_h/8, 0, r_h/8, 1/2 − r_h/2, r_h/8, 0, r_h/8, 0, r_h/2, 1/2 − r_h/2)`` (minus signs
  reconstructed so that rewards lie in [0, 1], spec A-E3);
* ``α_{h,1}, α_{h,2}, r_h ~ Uniform[0,1]`` i.i.d., drawn from ``rng`` (an int seed — the same
  instance as ``numpy.random.default_rng(seed)`` — or a Generator) in the order
  ``alpha = rng.random((H, 2))`` then ``r = rng.random(H)``;
* behaviour policy ``µ(0) = p = 0.6``, ``µ(a) = (1−p)/99`` otherwise; uniform initial state.

The raw features have ``||φ||_2 <= sqrt(7)`` (6 bits + one indicator), which breaks the paper's
``||φ||_2 <= 1``. With ``normalize=True`` (default) the features are divided by the public constant
``FEATURE_SCALE = sqrt(7)`` and ``ν, θ`` multiplied by it, which leaves ``P`` and ``r`` unchanged and
makes ``||φ||_2 <= 1`` true, so the DP sensitivities hold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privrl._rng import RngLike, as_generator, rng_or_deprecated_seed
from privrl._validation import check_option, check_scalar
from privrl.envs.gym import TabularEnv
from privrl.envs.linear import LinearMDP

__all__ = ["FEATURE_SCALE", "synthetic_features", "synthetic_linear_mdp", "synthetic_behaviour_policy",
           "make_synthetic_linear_env"]

FEATURE_SCALE = math.sqrt(7.0)
N_STATES, N_ACTIONS, DIM = 2, 100, 10


def synthetic_features(bit_order: str = "msb") -> np.ndarray:
    """The raw ``(2, 100, 10)`` feature table of Appendix F."""
    check_option(bit_order, "bit_order", ("msb", "lsb"), owner="synthetic_features")
    bits = np.unpackbits(np.arange(N_ACTIONS, dtype=np.uint8)[:, None], axis=1).astype(float)  # MSB first
    if bit_order == "lsb":
        bits = bits[:, ::-1]
    s = np.arange(N_STATES)[:, None]
    a = np.arange(N_ACTIONS)[None, :]
    delta = ((s == 0) == (a == 0)).astype(float)
    phi = np.empty((N_STATES, N_ACTIONS, DIM))
    phi[:, :, :8] = bits[None]
    phi[:, :, 8] = delta
    phi[:, :, 9] = 1.0 - delta
    return phi


def synthetic_linear_mdp(*, horizon: int = 20, rng: RngLike = 0, bit_order: str = "msb",
                         normalize: bool = True, seed: int | None = None) -> LinearMDP:
    """One instance of the Appendix F MDP: ``rng`` (an int seed, default 0 — the instance of
    ``privrl/SyntheticLinearMDP-v0`` — or a Generator) draws ``α`` and ``r_h``. ``seed`` is the
    deprecated name of an int ``rng``."""
    rng = rng_or_deprecated_seed(rng, seed, "synthetic_linear_mdp", default=0)
    horizon = check_scalar(horizon, "horizon", kind=int, owner="synthetic_linear_mdp", low=1)
    gen = as_generator(rng)
    alpha = gen.random((horizon, 2))
    rh = gen.random(horizon)
    nu = np.zeros((horizon, N_STATES, DIM))
    nu[:, 0, 8:] = alpha
    nu[:, 1, 8:] = 1.0 - alpha
    theta = np.zeros((horizon, DIM))
    theta[:, [0, 2, 4, 6]] = rh[:, None] / 8.0
    theta[:, 3] = 0.5 - rh / 2.0
    theta[:, 8] = rh / 2.0
    theta[:, 9] = 0.5 - rh / 2.0
    phi = synthetic_features(bit_order)
    label = f"seed={int(rng)}, " if isinstance(rng, (int, np.integer)) else ""
    if normalize:
        phi, nu, theta = phi / FEATURE_SCALE, nu * FEATURE_SCALE, theta * FEATURE_SCALE
    return LinearMDP(phi, nu, theta, feature_norm_bound=1.0 if normalize else None,
                     name=f"SyntheticLinearMDP({label}bit_order={bit_order})")


def synthetic_behaviour_policy(p: float = 0.6) -> np.ndarray:
    """``µ`` as ``(2, 100)`` probabilities: action 0 with probability ``p``, the others uniformly."""
    p = check_scalar(p, "p", owner="synthetic_behaviour_policy", low=0.0, high=1.0)
    mu = np.full((N_STATES, N_ACTIONS), (1.0 - p) / (N_ACTIONS - 1))
    mu[:, 0] = p
    return mu


def make_synthetic_linear_env(**kwargs: Any) -> Any:
    """Entry point of ``privrl/SyntheticLinearMDP-v0``: a :class:`privrl.envs.gym.TabularEnv` over
    :func:`synthetic_linear_mdp` (keyword arguments, e.g. ``rng=3``, are passed on)."""
    mdp = synthetic_linear_mdp(**kwargs)
    env = TabularEnv(mdp.to_tabular())
    env.linear_model = mdp  # type: ignore[attr-defined]  # the exact linear model (features for `privrl fit dp-vapvi --model`)
    return env
