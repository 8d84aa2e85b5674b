"""MDP models and Gymnasium environments (issue #2).

Importing this package registers the ``privrl/<Name>-v0`` Gymnasium ids (lazy entry points; see
:mod:`privrl.envs.registration`).
"""

from privrl.envs.registration import register_envs
from privrl.envs.tabular import TabularMDP, from_gymnasium_toy_text

__all__ = ["TabularMDP", "from_gymnasium_toy_text", "register_envs"]

register_envs()
