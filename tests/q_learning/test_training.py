"""Runs advanced in lockstep (``fit_many`` / ``train_many``) are the runs fitted one by one: the same
episodes, the same networks up to floating-point reassociation, the same ledgers."""

import warnings

import numpy as np

from privrl.privacy import PrivacyBudget
from privrl.q_learning import DPQLearning, DPSGDQLearning, InputPerturbationQLearning, QLearning
from privrl.q_learning.estimators import fit_many

B = PrivacyBudget(epsilon=0.9, delta=1e-4)
STATES = np.linspace(0.0, 1.0, 7)


def _runs(n):
    """One lockstep group per configuration and update kind, each mixing privatizers and resets."""
    small = dict(n_samples=n, hidden=(8,))
    fn = dict(budget=None, kernel_beta=1.0, **small)
    return [
        QLearning(config="reference", **small),
        DPQLearning(noise_std=0.4, config="reference", reset="iteration", **fn),
        DPQLearning(noise_std=0.7, config="reference", reset="episode", **fn),
        DPQLearning(noise_std=0.3, config="reference", reset="never", **fn),
        DPQLearning(budget=None, noise_std=0.3, kernel_beta=2222.0, config="reference", **small),
        InputPerturbationQLearning(budget=B, calibration="paper", config="reference", **small),
        InputPerturbationQLearning(budget=B, constants="practical", config="reference", **small),
        QLearning(config="paper", **small),
        DPQLearning(budget=B, calibration="paper", config="paper", **small),
        DPQLearning(noise_std=0.5, config="paper", reset="never", **fn),
        DPSGDQLearning(budget=B, calibration="paper", config="reference", **small),
        DPSGDQLearning(budget=B, config="reference", clip_norm=0.3, **small),
    ]


def test_lockstep_runs_equal_single_runs():
    seeds = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = [est for seed in seeds for est in _runs(400)]
        fit_many(together, rngs=[seed for seed in seeds for _ in _runs(400)])
        alone = [est.fit(rng=seed) for seed in seeds for est in _runs(400)]
    for a, b in zip(together, alone):
        np.testing.assert_array_equal(a.returns_, b.returns_)
        np.testing.assert_allclose(a._q(STATES), b._q(STATES), rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.release_q(STATES), b.release_q(STATES), rtol=0, atol=1e-12)
        assert a.n_updates_ == b.n_updates_ > 0
        assert a.privacy_ledger_ == b.privacy_ledger_
        assert getattr(a, "certified_", None) == getattr(b, "certified_", None)


def test_lockstep_runs_keep_the_trace_of_each_run():
    kw = dict(budget=None, noise_std=0.5, kernel_beta=1.0, config="reference", n_samples=200, batch_size=16,
              hidden=(4,))
    alone = DPQLearning(reset="never", **kw)
    alone.fit(rng=5, trace=True)
    together = [DPQLearning(reset="never", **kw), DPQLearning(reset="iteration", **kw)]
    from privrl.q_learning.training import train_many

    fits = [est._start(None, seed, trace=True) for est, seed in zip(together, (5, 6))]
    for fit, res in zip(fits, train_many([f.run for f in fits])):
        fit.finish(res)
    assert len(together[0]._trace) == len(alone._trace) == alone.n_updates_
    for x, y in zip(together[0]._trace, alone._trace):
        np.testing.assert_allclose(x["g_sa"], y["g_sa"], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(x["states"], y["states"])


def test_max_over_actions_is_numpys_max():
    from privrl.q_learning.training import _max_over_actions

    q = np.random.default_rng(0).normal(size=(4, 7, 3))
    q[1, 2, 1] = np.nan
    np.testing.assert_array_equal(_max_over_actions(q), q.max(-1))
    np.testing.assert_array_equal(_max_over_actions(q[..., :1]), q[..., 0])
