"""Old import path of the Q-learning family (now :mod:`privrl.q_learning`).

Kept only for ``privrl.fitters.q_learning`` (another change moves the fit commands); delete it then.
"""

from privrl.q_learning import *  # noqa: F403
from privrl.q_learning import (
    __all__,  # noqa: F401
    __getattr__,  # noqa: F401
)
