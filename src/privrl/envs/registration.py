"""Gymnasium ids of privrl's environments (CONTRIBUTING.md, "Models").

Each id is an entry of kind ``"env"`` in :mod:`privrl.registry`, whose value is the entry point.
Entry points are strings, so registering imports nothing: each environment's module is imported
by ``gymnasium.make``. :func:`register_envs` hands every ``env`` entry to Gymnasium; it is
idempotent and is called on ``import privrl.envs`` and when Gymnasium is imported after
``import privrl`` (see :mod:`privrl`).
"""

from __future__ import annotations

from privrl import registry as _registry

__all__ = ["ENV_IDS", "register_envs"]

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
