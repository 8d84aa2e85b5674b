"""Feature maps (one-hot, state aggregation, user matrices with a declared spectral-norm bound)."""

import math

import numpy as np
import pytest

from privrl.data.features import feature_matrix, one_hot, spectral_norm, state_aggregation
from privrl.errors import InvalidParameterError


def test_feature_maps():
    np.testing.assert_array_equal(one_hot(3), np.eye(3))
    agg = state_aggregation(5, 2)
    np.testing.assert_array_equal(agg, [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]])
    assert spectral_norm(state_aggregation(40, 2)) == pytest.approx(math.sqrt(2))
    assert spectral_norm(state_aggregation(40, 4)) == pytest.approx(2.0)
    m = np.array([[3.0, 0.0], [0.0, 1.0]])
    assert spectral_norm(m) == pytest.approx(3.0)  # operator norm, not Frobenius (√10)
    np.testing.assert_array_equal(feature_matrix(m, n_states=2, max_norm=3.0), m)
    with pytest.raises(InvalidParameterError, match="spectral norm"):
        feature_matrix(m, max_norm=2.9)
    with pytest.raises(InvalidParameterError, match="n_states"):
        feature_matrix(m, n_states=3)
    with pytest.raises(InvalidParameterError, match="group_size"):
        state_aggregation(4, 0)
    with pytest.raises(InvalidParameterError, match="finite"):
        feature_matrix([[np.nan, 1.0]])
