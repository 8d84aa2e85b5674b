"""A small clinic-shaped task (``privrl.envs.sparse_tabular``) shared by the logged-reward and the
route tests (the module fixture ``clinic`` is in ``conftest.py``): 26 states in 4 levels, 5
actions (2 admissible per level), H = 6, 3000 logged episodes."""

import warnings

from privrl import UtilityWarning
from privrl.envs import sparse_tabular

SMALL = dict(n_states=26, n_actions=5, horizon=6, n_levels=4, n_admissible=2)


def small_clinic():
    """(model, 3000 logged episodes padded to H = 6)."""
    model = sparse_tabular(**SMALL, rng=1)
    return model, model.sample(model.logging_policy, 3000, rng=2, pad_to_horizon=6)


def quiet(fit):
    """``fit()`` with UtilityWarnings silenced (the tests that need them catch them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        return fit()
