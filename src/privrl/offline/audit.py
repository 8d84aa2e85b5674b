"""Audit targets of DP-APVI (both variants) and DP-VAPVI (Qiao & Wang 2023, Algorithms 1 and 2).

Every target audits the estimator's own release path and its own claim: the noise plan comes from
the estimator (``DPAPVI.count_noise`` / ``DPVAPVI.linear_noise``, default calibration "tight"),
the samplers call the module's own kernels (:func:`~privrl.offline.tabular.release_counts`,
:func:`~privrl.offline.linear.linear_pessimistic_vi`) through a
:class:`~privrl.privacy.release.Releaser`, and the claimed ε is ``privacy_spent(δ)`` of the
estimator fitted on D (its ledger). Negative controls draw the same releases from
``ScaledNoise(·, 1/2)`` and ``ScaledNoise(·, 1/10)`` (noise ÷ 2, ÷ 10, same claim).

The DP-APVI samplers are the release point (:func:`batched_counts`): ``n`` releases in one call
of :func:`~privrl.offline.tabular.release_counts` — the ``n`` count tables side by side on the
action axis (Eq. (2) adds independent noise of one scale to every entry, so ``n`` tables side by
side are ``n`` independent releases), shifted by a public constant of 60 noise scales so that the
``{·}^+`` post-processing never clips (what is audited is the noisy count itself). Their
release-point statistic is the Gaussian (``"lda"``) or Laplace (``"laplace-llr"``) likelihood ratio.

DP-APVI (``dp-apvi-gaussian``, ``dp-apvi-laplace``). Eq. (2) is the only step that touches the
data; the rest of Algorithm 1 is post-processing. H = S = A = 2, K = 7 trajectories with unequal
pair counts; D' replaces a trajectory by :func:`~privrl.audit.neighbors.rarest_episode` — the
least-visited pair at every step — chosen so that at every step both families move in two entries
(‖Δn_sa‖₂ = ‖Δn_sas'‖₂ = √(2H), the sensitivity of Lemma C.1: the worst case). The output audited is
the pair of released count tables. ``dp-apvi-dataset`` does the same on a dataset sampled from a
seeded random MDP, with the neighbour made by the generic
:func:`~privrl.audit.neighbors.replace_one_trajectory` (``strategy="rarest"``).

``dp-apvi-pooled`` audits the route for coverage-limited data: counts pooled over the steps with
at most one visit per pair and trajectory (``stationary=True, max_visits=1``; sensitivity
:func:`~privrl.offline.calibration.count_sensitivity`, √(2H) again). H = S = A = 2; D holds
trajectories that repeat a pair (the cap drops the repeat); D' replaces one on pairs (0, 0), (0, 1)
by one on (1, 0), (1, 1): disjoint cells in both families, ‖Δ‖₂ = √(2H), the worst case.

DP-VAPVI (``dp-vapvi``, ``dp-vapvi-paper``). Algorithm 2 releases its statistics adaptively (step h
uses Ṽ_{h+1}, itself computed from released values). The audit runs the module's own kernel with a
releaser that also *records* every released statistic: the audited output is the whole transcript
(the policy and values are post-processing of it). H = 2, S = A = 2, d = 2, unit-norm features
φ(0,0) = e₁, φ(1,1) = e₂, no split (``split=False``: one trajectory enters every statistic). D: K = 4
trajectories all on (0, 0) with reward 0; D' replaces the first by one on (1, 1) with reward 1
(orthogonal features: ‖φφᵀ − ψψᵀ‖_F = √2, the replace-one sensitivity of spec A-L3). The paper
calibration records its true replace-one cost (1.4ρ) in the ledger, so its claim is honest for what
it spends.

DP-VAPVI's release-point audit (``dp-vapvi-release``, ``dp-vapvi-release-paper``) samples the releases
themselves: every statistic the plan releases at every step, through the kernel's own
:func:`~privrl.offline.linear.release_statistic`, on a base value and on the neighbour that moves each
statistic by its full sensitivity (a vector along e₁; a Gram matrix in its first diagonal entry, one
coordinate of T(M)). The releases compose (adaptively, in the kernel), so the claim for the pair is the
ledger's ε of the whole fit; the audited vector is the upper triangles and vectors of all releases.
(The transcript audits above run the whole kernel: on their pair even the exact likelihood ratio sees
a shift of only 0.65 of what the claim allows, docs/audit.md.)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from privrl.audit.broken import scaled_source
from privrl.audit.core import Sampler
from privrl.audit.neighbors import rarest_episode, replace_one_trajectory
from privrl.audit.registry import AuditPair, AuditTarget, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_2, NOISE_DIV_10
from privrl.data import TrajectoryDataset
from privrl.envs.random_tabular import random_tabular_mdp
from privrl.errors import PrivacyLeakWarning, UtilityWarning
from privrl.offline import DPAPVI, DPVAPVI, tabular
from privrl.offline._common import Statistics, padded_episodes, transition_statistics
from privrl.offline.calibration import CountNoise
from privrl.offline.grouping import grouped_statistics
from privrl.offline.linear import MATRIX_STREAMS, linear_pessimistic_vi, release_statistic
from privrl.offline.tabular import count_statistics, release_counts
from privrl.privacy import Ledger, PrivacyBudget, Releaser
from privrl.privacy.draws import NoiseDeclaration
from privrl.privacy.noise import NoiseSource
from privrl.privacy.release import Release

H, S, A = 2, 2, 2
#: the public shift of the batched count releases, in noise scales (no clipping at 0)
CLIP_SHIFT = 60.0


def batched_counts(counts: tuple[np.ndarray, np.ndarray], plan: CountNoise, n: int, rng: np.random.Generator,
                   broken: str | None) -> np.ndarray:
    """``n`` independent releases of Eq. (2) on ``counts = (n_sa, n_sas)`` ``(H, S, A[, S])``, as
    ``(n, H·S·A + H·S·A·S)`` rows, drawn in one call of the family's own
    :func:`~privrl.offline.tabular.release_counts` (module docstring)."""
    n_sa, n_sas = (np.asarray(c, dtype=float) for c in counts)
    h, s, a = n_sa.shape
    shift = CLIP_SHIFT * max(plan.scale)
    wide_sa = np.repeat(n_sa[:, :, None], n, axis=2).reshape(h, s, n * a) + shift
    wide_sas = np.repeat(n_sas[:, :, None], n, axis=2).reshape(h, s, n * a, n_sas.shape[-1]) + shift
    noisy_sa, noisy_sas = release_counts(wide_sa, wide_sas, plan, Releaser(scaled_source(rng, broken), Ledger()))
    rows_sa = noisy_sa.reshape(h, s, n, a).transpose(2, 0, 1, 3).reshape(n, -1)
    rows_sas = noisy_sas.reshape(h, s, n, a, -1).transpose(2, 0, 1, 3, 4).reshape(n, -1)
    return np.concatenate([rows_sa, rows_sas], axis=1) - shift


def _budget(epsilon: float, delta: float) -> PrivacyBudget:
    return PrivacyBudget(epsilon=epsilon, delta=delta or 0.0)


# --------------------------------------------------------------------------- DP-APVI
def _tabular_datasets() -> tuple[dict, dict]:
    """(D, D') as ``(K, H)`` arrays — see module docstring."""
    pairs = [(0, 0)] * 3 + [(0, 1)] * 2 + [(1, 0), (1, 1)]
    obs = np.array([[s] * H for s, _ in pairs])
    act = np.array([[a] * H for _, a in pairs])
    nxt = obs.copy()
    n_sa, _ = count_statistics(obs, act, nxt, S, A)
    ep = rarest_episode(n_sa, reward=1.0)
    differs = [(obs[k] != ep["observations"]) | (act[k] != ep["actions"]) for k in range(len(pairs))]
    k = next(i for i, d in enumerate(differs) if d.all())
    obs2, act2, nxt2 = obs.copy(), act.copy(), nxt.copy()
    obs2[k], act2[k], nxt2[k] = ep["observations"], ep["actions"], ep["next_observations"]
    zeros = np.zeros(obs.shape)
    return ({"observations": obs, "actions": act, "next_observations": nxt, "rewards": zeros},
            {"observations": obs2, "actions": act2, "next_observations": nxt2, "rewards": zeros})


def _counts(data: dict, n_states: int = S, n_actions: int = A) -> tuple[np.ndarray, np.ndarray]:
    return count_statistics(data["observations"], data["actions"], data["next_observations"], n_states, n_actions)


def tabular_neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``((n_sa, n_sas) of D, (n_sa, n_sas) of D')`` — see module docstring."""
    d, d2 = _tabular_datasets()
    return _counts(d), _counts(d2)


def _dataset_pair() -> tuple[dict, dict]:
    """A sampled dataset (30 episodes of a seeded random MDP, S = 3, A = 2, H = 3, uniform policy)
    and its worst-case neighbour from the generic generator (``"rarest"``), as ``(K, H)`` arrays."""
    mdp = random_tabular_mdp(n_states=3, n_actions=2, horizon=3, rng=0).to_tabular()
    data = mdp.sample(np.full((3, 2), 0.5), 30, rng=0)
    neighbour, _, _ = replace_one_trajectory(data, strategy="rarest", n_states=3, n_actions=2)
    return tuple(padded_episodes(d, "dp-apvi-dataset audit", n_states=3, n_actions=2)  # type: ignore[return-value]
                 for d in (data, neighbour))


def dataset_neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Counts of :func:`_dataset_pair`'s two datasets."""
    d, d2 = _dataset_pair()
    return _counts(d, 3, 2), _counts(d2, 3, 2)


def _logged_datasets() -> tuple[dict, dict]:
    """:func:`_tabular_datasets` with every logged reward 1 (= R_max): the replaced trajectory's
    reward sums leave two cells per step and the replacement's enter two others, ‖Δ‖₂ = √(2H)
    (F_max = H·R_max: the sensitivity of the reward sums)."""
    d, d2 = _tabular_datasets()
    for data in (d, d2):
        data["rewards"] = np.ones(data["rewards"].shape)
    return d, d2


def batched_logged(stats: Statistics, plan: CountNoise, n: int, rng: np.random.Generator,
                   broken: str | None) -> np.ndarray:
    """``n`` releases of Eq. (2) with the logged reward sums, as :func:`batched_counts` (rows:
    ``n_sa``, reward sums, ``n_sas``): ``tabular._release`` draws ``n_sa``, opens the transition
    counts' stream and draws the reward sums in the fit's order; the stream's rows are drawn as
    ``release_counts`` draws them."""
    n_sa, sums, n_sas = (np.asarray(x, dtype=float) for x in (stats.n_sa, stats.reward_sums, stats.counts))
    h, s, a = n_sa.shape
    shift = CLIP_SHIFT * max(plan.scale)

    def wide(x: np.ndarray) -> np.ndarray:     # the n tables side by side on the action axis
        return np.repeat(x[:, :, None], n, axis=2).reshape(h, s, n * a, *x.shape[3:])

    out = tabular._release(wide(n_sa) + shift, wide(sums), plan, Releaser(scaled_source(rng, broken), Ledger()))
    rows = np.stack([tabular._noisy_rows(out.stream, wide(n_sas + shift)[k].reshape(s * n * a, s), k, range(s), s)
                     for k in range(h)])
    assert out.reward_sums is not None                       # logged rewards: the sums are released
    parts = (out.n_sa - shift, out.reward_sums, rows.reshape(h, s, n * a, s) - shift)
    return np.concatenate([x.reshape(h, s, n, a, -1).transpose(2, 0, 1, 3, 4).reshape(n, -1) for x in parts], axis=1)


def _apvi_logged(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    d, d2 = _logged_datasets()
    est = DPAPVI(budget=_budget(epsilon, delta), constants="practical")
    episodes = [{key: d[key][k] for key in ("observations", "actions", "rewards", "next_observations")}
                for k in range(len(d["actions"]))]
    est.fit(TrajectoryDataset.from_episodes(episodes, n_states=S, n_actions=A, horizon=H), None, rng=0)
    plan = est.count_noise(H, S, A, d["actions"].shape[0], logged_rewards=True)
    def on(data: dict) -> Sampler:
        stats = grouped_statistics(data, None, S, A)
        return lambda n, rng: batched_logged(stats, plan, n, rng, broken)
    return AuditPair(on(d), on(d2), est.privacy_spent(delta), delta,
                     note="logged rewards: counts and reward sums released")


def _apvi(epsilon: float, delta: float, broken: str | None,
          pair: Callable[[], tuple[dict, dict]] = _tabular_datasets, n_states: int = S,
          n_actions: int = A) -> AuditPair:
    d, d2 = pair()
    est = DPAPVI(budget=_budget(epsilon, delta), constants="practical")
    horizon = d["actions"].shape[1]
    est.fit(d, np.zeros((horizon, n_states, n_actions)), rng=0)
    plan = est.count_noise(horizon, n_states, n_actions, d["actions"].shape[0])
    if delta:
        claimed = est.privacy_spent(delta)
    else:   # pure ε-DP: the ledger's Laplace events compose additively
        claimed = float(sum(1.0 / e.noise_multiplier for e in est.privacy_ledger_.events))

    def on(data: dict) -> Sampler:
        counts = _counts(data, n_states, n_actions)
        return lambda n, rng: batched_counts(counts, plan, n, rng, broken)
    return AuditPair(on(d), on(d2), claimed, delta or 0.0,
                     note=f"{plan.mechanism}, calibration {est.calibration}")


def _apvi_gaussian(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, delta, broken)


def _apvi_dataset(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, delta, broken, _dataset_pair, 3, 2)


def _apvi_laplace(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, 0.0, broken)


def _pooled_datasets() -> tuple[dict, dict]:
    """(D, D') for ``dp-apvi-pooled`` as ``(K, H)`` arrays — see module docstring."""
    obs = np.array([[0, 0], [0, 0], [1, 1], [0, 1], [1, 0], [0, 0]])
    act = np.array([[0, 0], [0, 1], [1, 1], [1, 0], [0, 1], [0, 1]])
    nxt = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [0, 0], [0, 0]])
    d = {"observations": obs, "actions": act, "next_observations": nxt, "rewards": np.zeros(obs.shape)}
    d2 = {k: v.copy() for k, v in d.items()}
    d2["observations"][5], d2["actions"][5], d2["next_observations"][5] = [1, 1], [0, 1], [1, 1]
    return d, d2


def _apvi_pooled(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    d, d2 = _pooled_datasets()
    est = DPAPVI(budget=_budget(epsilon, delta), constants="practical", stationary=True, max_visits=1)
    est.fit(d, np.zeros((H, S, A)), rng=0)
    plan = est.count_noise(H, S, A, d["actions"].shape[0])
    claimed = est.privacy_spent(delta)

    def on(data: dict) -> Sampler:
        stats = grouped_statistics(data, None, S, A, stationary=True, max_visits=1)
        counts = (stats.n_sa, stats.counts)
        return lambda n, rng: batched_counts(counts, plan, n, rng, broken)
    return AuditPair(on(d), on(d2), claimed, delta, note="pooled over steps, max_visits=1")


#: ``dp-apvi-groups``: S = 4 states in two public groups {0, 1}, {2, 3}
STATE_GROUPS = np.array([0, 0, 1, 1])


def _grouped_datasets() -> tuple[dict, dict]:
    """(D, D') for ``dp-apvi-groups`` as ``(K, H)`` arrays: D' replaces a trajectory in group 0 with
    action 0 by one in group 1 with action 1, so at every step two cells of each family of grouped
    counts move: ‖Δn_sa‖₂ = ‖Δn_sas‖₂ = √(2H), the worst case."""
    obs = np.array([[0, 1], [1, 0], [2, 3], [0, 2], [3, 1]])
    act = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [1, 0]])
    nxt = np.array([[1, 0], [0, 2], [3, 2], [2, 1], [1, 0]])
    d = {"observations": obs, "actions": act, "next_observations": nxt, "rewards": np.zeros(obs.shape)}
    d2 = {k: v.copy() for k, v in d.items()}
    d2["observations"][0], d2["actions"][0], d2["next_observations"][0] = [2, 3], [1, 1], [3, 2]
    return d, d2


def grouped_neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The grouped counts ``(n_sa, n_sas)`` of :func:`_grouped_datasets`' D and D'."""
    stats = [grouped_statistics(d, STATE_GROUPS, 4, A) for d in _grouped_datasets()]
    return (stats[0].n_sa, stats[0].counts), (stats[1].n_sa, stats[1].counts)


def _apvi_groups(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    d, _ = _grouped_datasets()
    est = DPAPVI(budget=_budget(epsilon, delta), constants="practical", state_groups=STATE_GROUPS)
    est.fit(d, np.zeros((H, 4, A)), rng=0)
    plan = est.count_noise(H, int(STATE_GROUPS.max()) + 1, A, d["actions"].shape[0])
    def on(counts: tuple[np.ndarray, np.ndarray]) -> Sampler:
        return lambda n, rng: batched_counts(counts, plan, n, rng, broken)
    c, c2 = grouped_neighbours()
    return AuditPair(on(c), on(c2), est.privacy_spent(delta), delta, note="counts of 2 public state groups (S = 4)")


#: ``dp-apvi-logging-counts``: the share of the budget the per-state logging counts take
LOGGING_SHARE = 0.5


def _logging_datasets() -> tuple[dict, dict]:
    """(D, D') for ``dp-apvi-logging-counts`` as ``(K, H)`` arrays (S = 4 in the groups of
    :data:`STATE_GROUPS`): D' replaces a trajectory on (state, action) (0, 0), (2, 1) by one on (1, 1),
    (3, 0) — distinct (group, action) pairs, so the cap keeps every visit, on disjoint per-state cells:
    ‖Δn(s, a)‖₂ = √(2H), the sensitivity of the pooled, capped counts."""
    obs = np.array([[0, 2], [1, 0], [2, 3], [0, 2], [3, 1]])
    act = np.array([[0, 1], [1, 0], [1, 1], [0, 1], [1, 0]])
    d = {"observations": obs, "actions": act, "next_observations": obs[:, ::-1].copy(), "rewards": np.zeros(obs.shape)}
    d2 = {k: v.copy() for k, v in d.items()}
    d2["observations"][0], d2["actions"][0], d2["next_observations"][0] = [1, 3], [1, 0], [3, 1]
    return d, d2


def _apvi_logging(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    """The per-state logging counts of ``DPAPVI(logging_share=...)`` on public groups, pooled, one visit
    per (group, action) and trajectory: ``n`` releases side by side through a
    :class:`~privrl.privacy.release.Releaser` with the estimator's own plan (:meth:`DPAPVI.logging_noise`);
    the claim is the ε of that release alone (its ledger event)."""
    d, d2 = _logging_datasets()
    est = DPAPVI(budget=_budget(epsilon, delta), constants="practical", state_groups=STATE_GROUPS, stationary=True,
                 max_visits=1, baseline="logging", logging_share=LOGGING_SHARE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(d, np.zeros((H, 4, A)), rng=0)
    plan = est.logging_noise(H)
    assert plan is not None                      # a private budget and a share: the release is planned
    claimed = Ledger([est.privacy_ledger_.events[-1]]).epsilon(delta)

    def on(data: dict) -> Sampler:
        visits = grouped_statistics(data, STATE_GROUPS, 4, A, stationary=True, max_visits=1).state_visits
        assert visits is not None

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            wide = np.repeat(np.asarray(visits, dtype=float)[None], n, axis=0)
            rel = Releaser(scaled_source(rng, broken), Ledger())
            return rel.gaussian(wide, sensitivity=plan.sensitivity, std=plan.scale).reshape(n, -1)
        return sample
    return AuditPair(on(d), on(d2), claimed, delta, note=f"per-state logging counts, share {LOGGING_SHARE:g} of the "
                     "budget (S = 4 in 2 public groups, pooled, max_visits=1)")


# --------------------------------------------------------------------------- DP-VAPVI
D_FEAT = 2
K_HALF = 4


def linear_features() -> np.ndarray:
    """``φ(s, a)`` ``(S, A, d)``: φ(0,0) = e₁, φ(1,1) = e₂, φ(0,1) = φ(1,0) = (e₁ + e₂)/2."""
    phi = np.zeros((S, A, D_FEAT))
    phi[0, 0], phi[1, 1] = [1.0, 0.0], [0.0, 1.0]
    phi[0, 1] = phi[1, 0] = [0.5, 0.5]
    return phi


def linear_neighbours() -> tuple[dict, dict]:
    """``(D, D')`` as ``(K, H)`` arrays (see module docstring); without the split (``split=False``)
    both stages read the same K trajectories, so the replaced trajectory enters every statistic."""
    zeros = np.zeros((K_HALF, H), dtype=int)
    data = {"observations": zeros, "actions": zeros.copy(), "rewards": np.zeros((K_HALF, H)),
            "next_observations": zeros.copy()}
    changed = {k: v.copy() for k, v in data.items()}
    changed["observations"][0] = changed["actions"][0] = changed["next_observations"][0] = 1
    changed["rewards"][0] = 1.0
    return data, changed


class _Recording(Releaser):
    """A releaser that also keeps every released value (the audited transcript)."""

    def __init__(self, noise: NoiseSource, ledger: Ledger) -> None:
        super().__init__(noise, ledger)
        self.log: list[np.ndarray] = []

    def _keep(self, release: Release, declared: NoiseDeclaration | None = None) -> np.ndarray:
        out = super()._keep(release, declared)
        self.log.append(np.asarray(out, float).ravel())
        return out


def _vapvi(epsilon: float, delta: float, broken: str | None, calibration: str) -> AuditPair:
    import warnings


    phi = linear_features()
    d, d2 = linear_neighbours()
    est = DPVAPVI(budget=_budget(epsilon, delta), calibration=calibration, split=False, lam=1.0, C=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (PrivacyLeakWarning, UtilityWarning))
        est.fit(d, phi, rng=0)
    claimed = est.privacy_spent(delta)
    plan = est.linear_noise(H, D_FEAT)

    def on(data: dict) -> Sampler:
        stats = transition_statistics(data, S, A)

        def once(rng: np.random.Generator) -> np.ndarray:
            rel = _Recording(scaled_source(rng, broken), Ledger())
            linear_pessimistic_vi(phi, stats, stats, lam=1.0, penalty_coef=0.0, additive=0.0, noise=plan, rel=rel)
            return np.concatenate(rel.log)
        return lambda n, rng: stack(once, n, rng)
    note = ("paper calibration (labelled): the claim is the ledger's true replace-one cost" if calibration == "paper"
            else "")
    return AuditPair(on(d), on(d2), claimed, delta, note=note)


def _vapvi_release_point(epsilon: float, delta: float, broken: str | None, calibration: str) -> AuditPair:
    import warnings

    est = DPVAPVI(budget=_budget(epsilon, delta), calibration=calibration, split=False, lam=1.0, C=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (PrivacyLeakWarning, UtilityWarning))
        est.fit(linear_neighbours()[0], linear_features(), rng=0)
    plan = est.linear_noise(H, D_FEAT)
    releases = [(k, h) for h in range(H) for k in range(plan.std.shape[0]) if plan.released(k, h)]
    upper = np.triu_indices(D_FEAT)

    def on(shifted: bool) -> Sampler:
        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            rel, parts = Releaser(scaled_source(rng, broken), Ledger()), []
            for k, h in releases:
                matrix = k in MATRIX_STREAMS
                value = np.zeros((n, D_FEAT, D_FEAT) if matrix else (n, D_FEAT))
                if shifted:
                    value[(slice(None), 0, 0) if matrix else (slice(None), 0)] = plan.sensitivity[k, h]
                out = release_statistic(rel, plan, k, h, value)
                parts.append(out[:, upper[0], upper[1]] if matrix else out)
            return np.concatenate(parts, axis=1)
        return sample
    note = "the releases of every step at the worst-case shift (their composition is the fit's ledger)"
    return AuditPair(on(False), on(True), est.privacy_spent(delta), delta, note=note)


def _vapvi_tight(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _vapvi(epsilon, delta, broken, "tight")


def _vapvi_paper(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _vapvi(epsilon, delta, broken, "paper")


register_target(AuditTarget(
    name="dp-apvi-gaussian", description="DP-APVI count release, Gaussian (tight calibration), H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_gaussian, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-apvi-laplace", description="DP-APVI count release, Laplace (pure DP, tight split), H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_laplace, epsilon=1.0, delta=0.0,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="laplace-llr",
))
register_target(AuditTarget(
    name="dp-apvi-dataset",
    description="DP-APVI count release (Gaussian) on a sampled dataset, rarest-trajectory neighbour",
    privacy_unit="one trajectory (replace-one)", build=_apvi_dataset, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-apvi-pooled",
    description="DP-APVI count release pooled over steps, one visit per pair and trajectory (Gaussian), H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_pooled, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-apvi-logged",
    description="DP-APVI release with logged rewards: counts and reward sums (Gaussian), H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_logged, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-apvi-groups", description="DP-APVI count release on public state groups (S=4, G=2, Gaussian), H=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_groups, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-apvi-logging-counts", description="DP-APVI's per-state logging counts (logging_share, Gaussian) on "
                                               "public groups, pooled, max_visits=1, S=4, H=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_logging, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-vapvi-release", description="DP-VAPVI's releases of every step at the worst-case shift (tight "
                                         "calibration), H=2, d=2",
    privacy_unit="one trajectory (replace-one)",
    build=lambda epsilon, delta, broken: _vapvi_release_point(epsilon, delta, broken, "tight"),
    epsilon=1.0, delta=1e-5, variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-vapvi-release-paper", description="DP-VAPVI's releases at the worst-case shift, calibration='paper' "
                                               "(labelled; the claim is the ledger's true cost), H=2, d=2",
    privacy_unit="one trajectory (replace-one)",
    build=lambda epsilon, delta, broken: _vapvi_release_point(epsilon, delta, broken, "paper"),
    epsilon=1.0, delta=1e-5, variants=(NOISE_DIV_10, NOISE_DIV_2), trials=10_000, fast_trials=3_000, optimal="lda",
))
register_target(AuditTarget(
    name="dp-vapvi", description="DP-VAPVI transcript of all released statistics (tight calibration), H=2, d=2",
    privacy_unit="one trajectory (replace-one)", build=_vapvi_tight, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=2_000,
))
register_target(AuditTarget(
    name="dp-vapvi-paper", description="DP-VAPVI with calibration='paper' (labelled), H=2, d=2",
    privacy_unit="one trajectory (replace-one)", build=_vapvi_paper, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=2_000,
))
