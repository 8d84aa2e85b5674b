"""MDP models and Gymnasium environments.

Importing this package registers the ``privrl/<Name>-v0`` Gymnasium ids (lazy entry points; see
:mod:`privrl.envs.registration`).
"""

from privrl.envs.real_shaped import real_shaped, real_shaped_instance
from privrl.envs.registration import register_envs
from privrl.envs.sparse_tabular import SparseTabularMDP, sparse_tabular
from privrl.envs.tabular import TabularMDP, from_gymnasium_toy_text

__all__ = ["SparseTabularMDP", "TabularMDP", "from_gymnasium_toy_text", "real_shaped", "real_shaped_instance",
           "register_envs", "sparse_tabular"]

register_envs()
