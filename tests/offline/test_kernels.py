"""The compiled kernel of DP-APVI's released rows reproduces the NumPy path bit for bit: NumPy's
pairwise row sums, Eq. (3)'s water levels on both of their paths, the low-total shift and the cell
threshold — and so does a whole fit."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix

from privrl import Ledger, PrivacyBudget
from privrl.offline import _kernels, offline_statistics
from privrl.offline.calibration import count_noise
from privrl.offline.tabular import _consistent_rows, _dense_water_levels, _row_sums, dp_apvi
from privrl.privacy import NumpyNoise, Releaser

pytestmark = pytest.mark.skipif(not _kernels.COMPILED, reason="numba kernels not compiled (PRIVRL_NO_JIT)")


@pytest.mark.parametrize("n", [*range(1, 40), 127, 128, 129, 255, 256, 257, 700, 750, 1001, 4099])
def test_pairwise_sum_is_numpys_sum_bit_for_bit(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 5) * 10.0 ** rng.integers(-3, 4, size=n + 5)
    assert _kernels.pairwise_sum(a, 3, n) == np.sum(a[3:3 + n])
    rows = a[:n].reshape(1, n).repeat(2, axis=0)
    assert _kernels.pairwise_sum(rows.ravel(), n, n) == rows.sum(axis=1)[1]


def _numpy_rows(noise, counts, noisy_sa, bound, floor):
    """The NumPy path of ``_released_block``: {n + noise}^+, Eq. (3), the threshold, the row sums."""
    x = counts.toarray()
    x += noise
    x = np.maximum(x, 0.0, out=x)
    x = _consistent_rows(noisy_sa, x, bound)
    if floor > 0:
        x[x <= floor] = 0.0
    return x, _row_sums(x)


@pytest.mark.parametrize("S,sigma,bound,floor,dense", [
    (60, 1.0, 6.0, 0.0, True),       # most entries are water-level candidates: each row sorted (dense path)
    (60, 1.0, 6.0, 3.0, True),       # ... and the cell threshold
    (40, 0.05, 30.0, 0.0, False),    # a handful of candidates per row: one running sum over the block
    (40, 0.05, 30.0, 0.2, False),
    (300, 2.0, 1.0, 6.0, True),      # long rows (pairwise sums over several blocks of 128)
])
def test_release_block_is_the_numpy_path_bit_for_bit(monkeypatch, S, sigma, bound, floor, dense):
    import privrl.offline.tabular as tabular

    paths = []
    monkeypatch.setattr(tabular, "_dense_water_levels", lambda *a: paths.append(1) or _dense_water_levels(*a))
    rng = np.random.default_rng(S)
    m = 90
    counts = rng.poisson(0.3, size=(m, S)) * (rng.random((m, S)) < 0.2)
    counts[: m // 3] *= 40                                     # heavily visited rows: totals below lo
    noisy_sa = np.maximum(counts.sum(axis=1) + rng.normal(0.0, 3.0 * sigma, size=m), 0.0)
    noisy_sa[m // 3: m // 2] *= 3.0                            # released n_sa above the rows' totals
    counts = csr_matrix(counts.astype(float))
    noise = sigma * rng.standard_normal((m, S))
    want, want_n = _numpy_rows(noise, counts, noisy_sa, bound, floor)
    got = noise.copy().ravel()
    got_n = _kernels.release_block(got, S, counts.indptr, counts.indices, counts.data, noisy_sa, bound, floor)
    assert np.array_equal(got.reshape(m, S), want) and np.array_equal(got_n, want_n)
    assert bool(paths) == dense


@pytest.mark.parametrize("cell_threshold", [0.0, 3.0])
def test_a_fit_with_the_kernel_is_the_numpy_fit_bit_for_bit(monkeypatch, cell_threshold):
    """Several blocks per step and several key groups per block: the compiled path and the NumPy path
    (``PRIVRL_NO_JIT``) give the same fit, to the last bit."""
    import privrl.offline.tabular as tabular
    from privrl.envs import sparse_tabular

    model = sparse_tabular(n_states=40, n_actions=4, horizon=5, n_levels=4, n_admissible=2, rng=0)
    stats = offline_statistics(model.sample(model.logging_policy, 400, rng=1, pad_to_horizon=5), 40, 4)
    monkeypatch.setattr(tabular, "KEY_CELLS", 4 * 4 * 40)        # key groups of 4 states, blocks of 8
    plan = count_noise(5, 40, 4, PrivacyBudget(rho=0.5), split_power=1.0)

    def fit():
        return dp_apvi(stats, model.r, noise=plan, rel=Releaser(NumpyNoise(3), Ledger()), block_states=8,
                       cell_threshold=cell_threshold, c1=0.5, c2=0.0, threshold_multiplier=0.25)

    compiled = fit()
    monkeypatch.setattr(_kernels, "COMPILED", False)
    plain = fit()
    for got, want in zip(compiled, plain):
        assert (got is None and want is None) or np.array_equal(got, want)
    assert compiled.counts.sum() > 0
