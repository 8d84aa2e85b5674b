"""Gymnasium ids of privrl's environments (CONTRIBUTING.md, "Models").

Each id is an entry of kind ``"env"`` in :mod:`privrl.registry`, whose value is the entry point.
Entry points are strings, so registering imports nothing: each environment's module is imported
by ``gymnasium.make``. :func:`register_envs` hands every ``env`` entry to Gymnasium; it is
idempotent and is called on ``import privrl.envs`` and when Gymnasium is imported after
``import privrl`` (see :mod:`privrl`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from privrl import registry as _registry

__all__ = ["ENV_IDS", "register_envs", "make_registered"]

#: id -> entry point (``module:callable``).
ENV_IDS: dict[str, str] = {
    "privrl/Chain-v0": "privrl.envs.chain:make_chain_env",
    "privrl/SyntheticLinearMDP-v0": "privrl.envs.synthetic_linear:make_synthetic_linear_env",
    "privrl/RandomTabularMDP-v0": "privrl.envs.random_tabular:make_random_tabular_env",
    "privrl/LinearMixtureHard-v0": "privrl.envs.linear_mixture:make_hard_env",
    "privrl/RandomLinearMixture-v0": "privrl.envs.linear_mixture:make_random_env",
    "privrl/CenterWalk-v0": "privrl.envs.center_walk:CenterWalkEnv",
}

for _env_id, _entry_point in ENV_IDS.items():
    _registry.register("env", _env_id, _entry_point)


def register_envs() -> list[str]:
    """Register every ``env`` entry of :mod:`privrl.registry` not yet in ``gymnasium.registry``;
    return the ids registered by this call."""
    import gymnasium as gym  # here, not at module level: ``import privrl`` registers through a hook

    added = []
    for env_id, entry_point in _registry.entries("env").items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)
            added.append(env_id)
    return added


def make_registered(env_id: str, error: Callable[[str], Exception], *, quiet: bool = False, **kwargs: Any) -> Any:
    """``gymnasium.make(env_id, **kwargs)`` with privrl's ids registered first. An unknown,
    deprecated or uninstallable id (Gymnasium's ``module:Env-v0`` form imports ``module``) raises
    ``error(why)``, ``why`` Gymnasium's own reason on one line — so each caller names its own
    parameter or command-line option. ``quiet`` silences Gymnasium's warnings while making (the
    command line: its error already says why)."""
    import gymnasium as gym

    register_envs()
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        try:
            return gym.make(env_id, **kwargs)
        except (gym.error.Error, ModuleNotFoundError) as exc:
            raise error(" ".join(str(exc).split()).replace("`", "'")) from None
