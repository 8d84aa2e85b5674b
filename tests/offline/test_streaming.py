"""DP-APVI streamed (memory that grows with the data): the mechanism is unchanged.

* the noise of each transition-count cell has the stated variance, cells are independent, blocks
  do not depend on the order they are drawn in, and the ledger records the dense release's event;
* given the same noise (a noise source that is a function of the cell index, or constant noise),
  the streaming kernel — whatever its block size — equals a dense reference implementation of
  Algorithm 1 (the pre-streaming code, kept here as the oracle);
* APVI and DP-APVI never build an (H, S, A, S) array: the fitted state is O(H·S·A).
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats as scipy_stats

from privrl import Ledger, PrivacyBudget, UtilityWarning
from privrl.envs import sparse_tabular
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.offline import APVI, DPAPVI, offline_statistics
from privrl.offline.calibration import count_noise
from privrl.offline.tabular import dp_apvi, key_states, release_counts
from privrl.privacy import ConstantNoise, NumpyNoise, Releaser, events
from privrl.privacy.noise import KeyedNoise, NoiseSource
from privrl.testing import use_noise


# ----------------------------------------------------------------------------- the dense oracle
def _oracle_consistent(noisy_sa, noisy_sas, bound):
    """Eq. (3) by a full sort of every row (the code before streaming)."""
    S = noisy_sas.shape[-1]
    total = noisy_sas.sum(axis=-1)
    lo, hi = noisy_sa - bound / 2.0, noisy_sa + bound / 2.0
    out = noisy_sas.copy()
    low = total < lo
    out[low] += ((lo - total)[low] / S)[:, None]
    high = total > hi
    if np.any(high):
        rows = noisy_sas[high]
        u = -np.sort(-rows, axis=1)
        levels = (np.cumsum(u, axis=1) - hi[high][:, None]) / np.arange(1, S + 1)
        k = np.maximum((u > levels).sum(axis=1), 1)
        out[high] = np.maximum(rows - levels[np.arange(len(rows)), k - 1][:, None], 0.0)
    return out.sum(axis=-1), out


def _oracle(noisy_sa, noisy_sas, reward, *, gap_bound, penalty, threshold, delta_fail, c1, c2, c_unvisited):
    """Algorithm 1 on dense released counts: Eq. (3), Eq. (5), lines 3–9 (dense (H, S, A, S) P̃)."""
    H, S, A = noisy_sa.shape
    n, x = _oracle_consistent(noisy_sa, noisy_sas, gap_bound)
    ok = n > threshold
    P = np.where(ok[..., None], x / np.where(ok, n, 1.0)[..., None], 1.0 / S)
    iota = math.log(H * S * A / delta_fail)
    V, Q = np.zeros((H + 1, S)), np.zeros((H, S, A))
    bounded = ok & (n > gap_bound)
    for h in range(H - 1, -1, -1):
        pv = P[h] @ V[h + 1]
        var = np.maximum(P[h] @ V[h + 1] ** 2 - pv**2, 0.0)
        gamma = np.where(bounded[h], c1 * np.sqrt(var * iota / np.where(bounded[h], n[h] - gap_bound, 1.0))
                         + c2 * S * H * penalty * iota / np.where(ok[h], n[h], 1.0), c_unvisited * H)
        Q[h] = np.clip(reward[h] + pv - gamma, 0.0, H - h)
        V[h] = Q[h].max(axis=-1)
    return Q, V, P, n


class CellNoise(NoiseSource):
    """Deterministic noise that is a function of the cell: dense draws are a function of the call
    number, keyed blocks of ``(key, position)`` — so a dense reference can rebuild every cell's noise."""

    def __init__(self):
        self.calls = 0

    @staticmethod
    def values(seed, shape):
        return np.random.default_rng(seed).standard_normal(shape)

    def _standard(self, kind, shape):
        self.calls += 1
        return self.values(10**6 + self.calls, shape)

    def keyed(self):
        self.calls += 1
        base = 10**7 * self.calls
        return KeyedNoise(lambda kind, key, shape, scale: scale * self.values(base + key, shape))


def _dense_noise(H, S, A, plan):
    """The noise CellNoise gives a fit: n_sa from the first dense draw, n_sas from the first keyed
    release (one key group per step here: S·A·S cells ≤ KEY_CELLS)."""
    assert key_states(A, S) >= S
    sa = CellNoise.values(10**6 + 1, (H, S, A)) * plan.scale[0]
    sas = np.stack([CellNoise.values(2 * 10**7 + h, (S * A, S)).reshape(S, A, S) for h in range(H)])
    return sa, sas * plan.scale[1]


@pytest.fixture(scope="module")
def problem():
    mdp = random_tabular_mdp(n_states=6, n_actions=3, horizon=4, rng=2)
    data = mdp.sample(covering_behaviour_policy(mdp.optimal_policy(), 3), 400, rng=0)
    return mdp, offline_statistics(data, 6, 3)


@pytest.mark.parametrize("params", [{"constants": "practical", "budget": PrivacyBudget(rho=2.0)},
                                    {"constants": "theory", "c2": 0.01, "budget": PrivacyBudget(rho=20.0)}],
                         ids=["practical", "theory"])
def test_streaming_equals_the_dense_oracle_given_the_same_noise(problem, params):
    mdp, stats = problem
    H, S, A = stats.shape
    est = DPAPVI(**params)
    plan = est.count_noise(H, S, A, stats.n_episodes)
    knobs = est._constants(est._validated())
    knobs.pop("split_power")
    sa, sas = _dense_noise(H, S, A, plan)
    noisy_sa = np.maximum(stats.n_sa + sa, 0.0)
    noisy_sas = np.maximum(stats.counts + sas, 0.0)
    Q, V, P, n = _oracle(noisy_sa, noisy_sas, mdp.rewards, gap_bound=plan.bound[0], penalty=plan.penalty_bound,
                         threshold=knobs["threshold_multiplier"] * plan.bound[0], delta_fail=0.05, c1=knobs["c1"],
                         c2=knobs["c2"], c_unvisited=knobs["c_unvisited"])
    assert np.any(Q > 0) and np.any(Q[:-1] == 0)                # both branches of the penalty are exercised
    for block in (1, 4, S):
        rel = Releaser(CellNoise(), Ledger())
        fit = dp_apvi(stats, mdp.rewards, noise=plan, rel=rel, block_states=block, keep_transitions=True, **knobs)
        np.testing.assert_allclose(fit.q_values, Q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit.values, V, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit.transitions, P, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit.counts, n, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(fit.policy, Q.argmax(axis=-1))
    # the estimator is this kernel: the same fit through use_noise
    fitted = use_noise(DPAPVI(**params), CellNoise()).fit(stats, mdp.rewards, rng=0)
    np.testing.assert_allclose(fitted.q_values_, Q, rtol=0, atol=1e-12)


def test_constant_noise_dense_release_and_stream_agree(problem):
    mdp, stats = problem
    H, S, A = stats.shape
    plan = count_noise(H, S, A, PrivacyBudget(rho=1.0), split_power=1.0)
    a, b = release_counts(stats.n_sa, stats.counts, plan, Releaser(ConstantNoise([-0.5, 0.25]), Ledger()))
    np.testing.assert_allclose(a, np.maximum(stats.n_sa - 0.5 * plan.scale[0], 0.0), atol=1e-12)
    np.testing.assert_allclose(b, np.maximum(stats.counts + 0.25 * plan.scale[1], 0.0), atol=1e-12)
    Q, *_ = _oracle(a, b, mdp.rewards, gap_bound=plan.bound[0], penalty=plan.penalty_bound, threshold=plan.bound[0],
                    delta_fail=0.05, c1=math.sqrt(2), c2=16.0, c_unvisited=2.0)
    fit = dp_apvi(stats, mdp.rewards, noise=plan, rel=Releaser(ConstantNoise([-0.5, 0.25]), Ledger()), block_states=2)
    np.testing.assert_allclose(fit.q_values, Q, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- the noise itself
def test_keyed_noise_has_the_stated_variance_and_independent_cells():
    sigma = 3.0
    rel = Releaser(NumpyNoise(7), Ledger())
    stream = rel.gaussian_stream(sensitivity=2.0, std=sigma, size=10**6)
    assert rel.ledger.events == (events.gaussian(1.5),)          # the event of the dense release
    keys = range(400)
    z = np.stack([stream.noise(k, (5, 50)) for k in keys]) / sigma   # 100 000 cells
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    assert abs(z.var() - 1.0) < 0.02                              # SE of the variance ≈ 0.0045
    assert scipy_stats.kstest(z.ravel(), "norm").pvalue > 0.01
    flat = z.reshape(len(keys), -1)
    # no correlation between neighbouring cells of a block, nor between consecutive blocks (|r| < 4/√n)
    assert abs(np.corrcoef(flat[:, :-1].ravel(), flat[:, 1:].ravel())[0, 1]) < 4 / math.sqrt(flat[:, 1:].size)
    assert abs(np.corrcoef(flat[:-1].ravel(), flat[1:].ravel())[0, 1]) < 4 / math.sqrt(flat[1:].size)
    # a block's noise does not depend on the order blocks are drawn in; a second release is independent
    again = np.stack([stream.noise(k, (5, 50)) for k in reversed(keys)])[::-1] / sigma
    np.testing.assert_array_equal(again, z)
    other = np.stack([rel.gaussian_stream(sensitivity=2.0, std=sigma, size=10**6).noise(k, (5, 50)) for k in keys[:40]])
    assert abs(np.corrcoef(other.ravel(), z[:40].ravel())[0, 1]) < 4 / math.sqrt(other.size)
    laplace = Releaser(NumpyNoise(8), Ledger()).laplace_stream(sensitivity=1.0, scale=2.0, size=10**6)
    w = np.stack([laplace.noise(k, 500) for k in range(100)]) / 2.0
    assert scipy_stats.kstest(w.ravel(), "laplace").pvalue > 0.01


def test_released_zero_counts_follow_the_clipped_gaussian():
    """Cells with zero count: {N(0, σ²)}^+ — half are 0, the others half-normal."""
    H, S, A = 2, 30, 4
    plan = count_noise(H, S, A, PrivacyBudget(rho=0.5), calibration="sound")
    _, b = release_counts(np.zeros((H, S, A)), np.zeros((H, S, A, S)), plan, Releaser(NumpyNoise(3), Ledger()))
    z = b.ravel() / plan.scale[1]
    assert abs((z == 0).mean() - 0.5) < 4 * 0.5 / math.sqrt(z.size)
    assert scipy_stats.kstest(z[z > 0], "halfnorm").pvalue > 0.01


def test_ledger_and_noise_plan_are_those_of_the_dense_release(problem):
    mdp, stats = problem
    est = DPAPVI(budget=PrivacyBudget(epsilon=1.0, delta=1e-6), constants="practical").fit(stats, mdp.rewards, rng=0)
    plan = est.count_noise(*stats.shape, stats.n_episodes)
    assert est.privacy_ledger_.events == (events.gaussian(plan.scale[0] / plan.sensitivity[0]),
                                          events.gaussian(plan.scale[1] / plan.sensitivity[1]))
    assert 0.99 <= est.privacy_spent(1e-6) <= 1.0


# ----------------------------------------------------------------------------- memory
@pytest.mark.parametrize("cls,shape", [(APVI, (750, 25, 20)), (DPAPVI, (400, 10, 3))])
def test_no_dense_array_is_kept(cls, shape):
    """Above 2^22 cells (APVI at S = 750, A = 25, H = 20, where a dense (H, S, A, S) array takes
    2.2 GB; DP-APVI on a smaller task, to stay fast) the statistics and the fitted state are
    O(K·H + H·S·A) and transitions_ is not kept. Peak memory is measured by
    benchmarks/bench_real_size.py."""
    S, A, H = shape
    model = sparse_tabular(n_states=S, n_actions=A, horizon=H, rng=0)
    data = model.sample(model.logging_policy, 200, rng=1, pad_to_horizon=H)
    stats = offline_statistics(data, S, A)
    assert stats.keys.nbytes + stats.values.nbytes <= 200 * H * 16
    kwargs = {"budget": PrivacyBudget(epsilon=1.0, delta=1e-6)} if cls is DPAPVI else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)            # n = 200: DP-APVI's output is degenerate
        est = cls(constants="practical", **kwargs).fit(stats, model.r, **({"rng": 0} if kwargs else {}))
    assert H * S * A * S > 2**22 and est.transitions_ is None
    held = sum(getattr(est, a).nbytes for a in ("policy_", "values_", "q_values_", "counts_"))
    assert held < 8 * H * S * A * 3


def test_key_groups_cut_by_blocks_give_the_same_release(problem, monkeypatch):
    """With several key groups per step (groups of 4 of the 6 states) and blocks that cut them, every
    block size gives the same fit: a group's noise is drawn whole and cut, never redrawn differently."""
    import privrl.offline.tabular as tabular

    mdp, stats = problem
    H, S, A = stats.shape
    monkeypatch.setattr(tabular, "KEY_CELLS", 4 * A * S)
    assert tabular.key_states(A, S) == 4
    plan = count_noise(H, S, A, PrivacyBudget(rho=2.0), split_power=1.0)
    fits = [dp_apvi(stats, mdp.rewards, noise=plan, rel=Releaser(NumpyNoise(3), Ledger()), block_states=b,
                    keep_transitions=True) for b in (1, 3, 4, 5, None)]
    for fit in fits[1:]:   # (the water-filling's sums over a block's rows round differently: 1e-16)
        np.testing.assert_allclose(fit.transitions, fits[0].transitions, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit.q_values, fits[0].q_values, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_states", [4, 60])
def test_prefix_statistics_count_exactly_what_a_sort_counts(n_states):
    """Prefix statistics (dense counting of few cells, S = 4; a sort per prefix when the cells
    outnumber the visits, S = 60) equal the sorted unique cells of each prefix; a step's sparse
    matrix is built once and read-only."""
    from privrl.offline._common import transition_statistics

    rng = np.random.default_rng(1)
    K, H, A = 300, 3, 2
    data = {"observations": rng.integers(0, n_states, (K, H)), "actions": rng.integers(0, A, (K, H)),
            "next_observations": rng.integers(0, n_states, (K, H)), "rewards": rng.random((K, H))}
    flat = ((np.arange(H)[None, :] * n_states + data["observations"]) * A + data["actions"]) * n_states \
        + data["next_observations"]
    for k, st in zip((1, 50, 300), transition_statistics(data, n_states, A, [1, 50, 300])):
        keys, counts = np.unique(flat[:k].ravel(), return_counts=True)
        np.testing.assert_array_equal(st.keys, keys)
        np.testing.assert_array_equal(st.values, counts)
        assert st.step(1) is st.step(1) and not st.step(1).data.flags.writeable
        np.testing.assert_array_equal(st.step(1).toarray(), st.counts[1].reshape(n_states * A, n_states))
