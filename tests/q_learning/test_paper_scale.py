"""Paper-scale learning-curve shapes (spec T31–T33), reference configuration, 5000 samples,
seeds 0–9 (0–19 for T32). Slow (about 5 CPU-minutes).

Where the thresholds come from. The paper states no return values (spec §5.3): its Figure-1 claims
are qualitative — more noise needs more samples for the same return, and with a fresh noise path
every round (J = T/B) learning converges with limited sub-optimality, especially for sigma < 0.4;
Figure 2: functional noise significantly beats input perturbation and DP-SGD, which do not improve
over training at eps = 0.45. Each test below turns one claim into a statistical test over the 10
seeds (standard errors from the seeds themselves), anchored on two exact properties of the MDP
(spec T29): uniform random play returns 10.86, the optimum 20.71. Where a quantitative reference
is needed it comes from two independent re-implementations of the authors' released loop: the
spec's (§5.7) and a line-by-line port of the authors' script (float32, 10 seeds), whose final returns
at sigma = 0.2 with a reset every episode are 19.5 (median 19.6, seed sd 0.5) with a correct OU
sampler and 19.1 (median 19.8) with the authors' sampler (its right extension conditions on the
leftmost stored value); privrl gives 19.7 on the 9 of 10 seeds that do not lock onto a wall.

A known failure mode of this DQN: a run may lock onto a wall (final return < 5; the uniform
policy gets 10.86). It happens in about 1 run in 10 at sigma >= 0.2 here (seed 2: 2.6 at
sigma = 0.2) and in the authors' loop too (its float64 port, sigma = 0, one seed of 10 at 8.6).
One such seed moves a 10-seed mean by ~1.7, so the sub-optimality comparisons use the median over
seeds (unaffected by up to 4 such seeds); its standard error is taken as 1.25 sd / sqrt(10).
"""

import math

import numpy as np
import pytest

from privrl.privacy import PrivacyBudget
from privrl.q_learning import DPQLearning, InputPerturbationQLearning

pytestmark = pytest.mark.slow
SEEDS = range(10)
RANDOM_RETURN = 10.86   # uniform random policy on CenterWalk (spec T29, tested in test_env.py)


def _runs(seeds=SEEDS, **kw):
    """Seeds of the reference loop: input perturbation when a budget is given, else functional
    noise with the given sigma (uncertified, no budget)."""
    out = []
    for seed in seeds:
        est = InputPerturbationQLearning(config="reference", **kw) if "budget" in kw else \
            DPQLearning(budget=None, config="reference", **kw)
        out.append(est.fit(rng=seed).returns_)
    return np.array(out)


def _se(x) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(len(x)))


def test_noise_level_ordering():  # T31 (noise reset every episode, as in the authors' code)
    curves = {s: _runs(noise_std=s, kernel_beta=1.0, reset="episode") for s in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)}
    sigmas = sorted(curves)
    # (1) Paper §4, "with the increase of the noise level, the algorithm requires more samples to
    # achieve the same return": the mean return over training (AUC) is non-increasing in sigma. An
    # inversion counts only beyond the two standard errors combined; one is allowed because at
    # sigma >= 0.6 the curve has flattened near random play (spec §5.7: 12.6, 10.6, 9.2), where
    # neighbouring levels differ by about one standard error.
    auc = {s: c.mean(1) for s, c in curves.items()}
    means = [auc[s].mean() for s in sigmas]
    ses = [_se(auc[s]) for s in sigmas]
    inversions = sum(means[i + 1] > means[i] + ses[i] + ses[i + 1] for i in range(len(means) - 1))
    assert inversions <= 1
    # (2) Limited sub-optimality at low noise. The paper claims it for J = T/B; for this per-episode
    # schedule the references are the re-implementations: 96-97% of the non-private return at
    # sigma = 0.2 (spec; authors' loop), 85% at sigma = 0.4 (spec, seed sd 2.8).
    # Threshold = reference - 3 standard errors of a 10-seed median: sigma = 0.2, sd 0.6 -> 0.7
    # (3.5%): >= 0.90; sigma = 0.4, sd 2.8 -> 3.3 (16%): >= 0.68. (Measured: 98%, 82%.)
    final = {s: np.median(c[:, -10:].mean(1)) for s, c in curves.items()}
    assert final[0.2] >= 0.90 * final[0.0]
    assert final[0.4] >= 0.68 * final[0.0]
    # (3) High noise destroys learning: with beta = 1 the noise difference g_1(s) - g_0(s) has sd
    # sqrt(2) sigma >= 1.13 at sigma >= 0.8, while the learned gaps |Q(s, 1) - Q(s, 0)| have median
    # 0.24-0.53 over states (non-private runs, seeds 0-4), so at a typical state the noise flips the
    # greedy action with probability >= P(|Z| > 0.53 / 1.13) = 0.64: acting is noise-driven and the
    # final return is not significantly above uniform random play (one-sided, 2 standard errors).
    for s in (0.8, 1.0):
        last = curves[s][:, -10:].mean(1)
        assert last.mean() <= RANDOM_RETURN + 2 * _se(last)


def test_fresh_path_per_update_beats_no_reset():  # T32
    # Paper §4 recommends J = T/B (a fresh path every round): a path that is never reset is a fixed
    # offset function the agent's greedy choices follow for the whole run. One-sided: the fresh-path
    # final return exceeds the no-reset one by more than one standard error of the difference (the
    # no-reset runs have seed sd ~7-8: spec 6.9, so a larger margin would test the seeds more than
    # the claim), and the seed-to-seed spread is smaller (spec 0.45 vs 6.9). Twenty seeds: with the
    # no-reset runs' seed sd of about 6, ten give a standard error of the difference of about 2 —
    # the seeds 0-9 gave 17.1 vs 10.1 (2.6 SE) with the target paths of the implementation before the
    # release seam and 15.6 vs 13.5 (0.98 SE) with the releaser's (equally distributed) draws.
    fresh = _runs(range(20), noise_std=0.4, kernel_beta=1.0, reset="iteration")[:, -10:].mean(1)
    never = _runs(range(20), noise_std=0.4, kernel_beta=1.0, reset="never")[:, -10:].mean(1)
    assert fresh.mean() - never.mean() > math.hypot(_se(fresh), _se(never))
    assert fresh.std() < never.std()


def test_functional_noise_beats_input_perturbation():  # T33 (paper calibration sigma = 0.32)
    fn = _runs(noise_std=0.32, kernel_beta=2222.2, reset="iteration")
    ip = _runs(budget=PrivacyBudget(epsilon=0.9, delta=1e-4))
    # Paper §4: "our algorithm significantly outperforms them": one-sided two-sample test at
    # 2 pooled standard errors (~2.3% level).
    f, i = fn[:, -10:].mean(1), ip[:, -10:].mean(1)
    assert f.mean() - i.mean() > 2 * math.hypot(_se(f), _se(i))
    # Paper §4: the baselines "do not improve over the training": the change from the first to the
    # last 10 episodes is within 2 standard errors.
    first, last = ip[:, :10].mean(1), ip[:, -10:].mean(1)
    assert last.mean() - first.mean() <= 2 * math.hypot(_se(first), _se(last))
