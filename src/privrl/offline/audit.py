"""Audit targets of DP-APVI (both variants) and DP-VAPVI (Qiao & Wang 2023, Algorithms 1 and 2).

DP-APVI (``dp-apvi-gaussian``, ``dp-apvi-laplace``). The audit calls the module's own
:func:`~privrl.offline.tabular.release_counts` (Eq. 2, the only step that touches the
data; the rest of Algorithm 1 is post-processing) on the counts of two neighbouring datasets built
with :func:`~privrl.offline.tabular.count_statistics`. H = S = A = 2, K = 7 trajectories
with unequal pair counts; D' replaces a trajectory by :func:`~privrl.audit.neighbors.rarest_episode`
— the least-visited pair at every step — chosen so that at every step both families move in two
entries (‖Δn_sa‖₂ = ‖Δn_sas'‖₂ = √(2H), the sensitivity of Lemma C.1: the worst case). The output
audited is the pair of released count tables. Gaussian: ρ = approx_dp_to_zcdp(ε, δ) and the
claimed ε is the PLD ε(δ) of the two Gaussian events; Laplace: ε split over the two families, the
claimed ε the sum of the Laplace events' ε (pure DP, δ = 0). ``dp-apvi-dataset`` does the same
on a dataset sampled from a seeded random MDP, with the neighbour made by the generic
:func:`~privrl.audit.neighbors.replace_one_trajectory` (``strategy="rarest"``).

DP-VAPVI (``dp-vapvi``, ``dp-vapvi-paper``). Algorithm 2 releases 5H statistics adaptively (step h
uses Ṽ_{h+1}, itself computed from released values). The audit runs the module's own
:func:`~privrl.offline.linear.linear_pessimistic_vi` with the module's own
:func:`linear_mechanisms`, wrapped only to *record* every released statistic: the audited output is
the whole transcript (every noisy statistic; the policy and values are post-processing of it).
H = 2, S = A = 2, d = 2, unit-norm features φ(0,0) = e₁, φ(1,1) = e₂, no split (``split=False``,
both stages read the same data, so one trajectory enters every statistic; with the split it would
enter only one stage's and the audit would be weaker). D: K = 4 trajectories all on (0, 0) with
reward 0; D' replaces the first by one on (1, 1) with reward 1 (orthogonal features: ‖φφᵀ − ψψᵀ‖_F = √2, the replace-one sensitivity of spec A-L3).
The paper calibration (``calibration="paper"``) records its true replace-one cost (1.4ρ) in the
events, so its claimed ε is the honest one for what it spends.

Negative controls: ``noise-div-10`` (Gaussian: the noise of ρ·100, Laplace: of ε·10, same claimed
events; DP-VAPVI: every mechanism's noise divided by 10 in a copy).
"""

from __future__ import annotations

import copy

import dp_accounting
import numpy as np

from privrl.offline.linear import LinearNoise, linear_mechanisms, linear_pessimistic_vi
from privrl.offline.tabular import count_statistics, release_counts
from privrl.audit.broken import NOISE_DIVISOR
from privrl.audit.neighbors import rarest_episode
from privrl.audit.registry import AuditPair, AuditTarget, register_target, stack
from privrl.audit.targets_mechanisms import NOISE_DIV_10, claimed_epsilon
from privrl.privacy import approx_dp_to_zcdp

H, S, A = 2, 2, 2


# --------------------------------------------------------------------------- DP-APVI
def tabular_neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``((n_sa, n_sas) of D, (n_sa, n_sas) of D')`` — see module docstring."""
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
    return count_statistics(obs, act, nxt, S, A), count_statistics(obs2, act2, nxt2, S, A)


def dataset_neighbours() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Counts of a sampled dataset and of its worst-case neighbour from the generic generator:
    30 episodes of a seeded random MDP (S = 3, A = 2, H = 3) under the uniform policy, one
    trajectory replaced by :func:`~privrl.audit.neighbors.replace_one_trajectory` (``"rarest"``)."""
    from privrl.offline._common import padded_episodes
    from privrl.audit.neighbors import replace_one_trajectory
    from privrl.envs.random_tabular import random_tabular_mdp

    mdp = random_tabular_mdp(n_states=3, n_actions=2, horizon=3, seed=0).to_tabular()
    data = mdp.sample(np.full((3, 2), 0.5), 30, rng=0)
    neighbour, _, _ = replace_one_trajectory(data, strategy="rarest", n_states=3, n_actions=2)
    out = []
    for d in (data, neighbour):
        p = padded_episodes(d, "dp-apvi-dataset audit", n_states=3, n_actions=2)
        out.append(count_statistics(p["observations"], p["actions"], p["next_observations"], 3, 2))
    return out[0], out[1]


def _pure_epsilon(events) -> float:
    """Total ε of a list of Laplace events (pure DP composes additively)."""
    return float(sum(1.0 / e.noise_multiplier for e in events))


def _apvi(epsilon: float, delta: float, broken: str | None, mechanism: str, pair=tabular_neighbours) -> AuditPair:
    d_counts, d2_counts = pair()
    if mechanism == "gaussian":
        rho = approx_dp_to_zcdp(epsilon, delta)
        kwargs = {"rho": rho * (NOISE_DIVISOR**2 if broken == "noise-div-10" else 1.0)}
        _, _, events = release_counts(*d_counts, rho=rho, rng=0)
        claimed = claimed_epsilon(dp_accounting.ComposedDpEvent(events), delta)
    else:
        kwargs = {"epsilon": epsilon * (NOISE_DIVISOR if broken == "noise-div-10" else 1.0)}
        _, _, events = release_counts(*d_counts, epsilon=epsilon, rng=0)
        claimed = _pure_epsilon(events)

    def on(counts):
        def once(rng):
            noisy_sa, noisy_sas, _ = release_counts(*counts, rng=rng, **kwargs)
            return np.concatenate([noisy_sa.ravel(), noisy_sas.ravel()])
        return lambda n, rng: stack(once, n, rng)
    return AuditPair(on(d_counts), on(d2_counts), claimed, delta)


def _apvi_gaussian(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, delta, broken, "gaussian")


def _apvi_dataset(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, delta, broken, "gaussian", dataset_neighbours)


def _apvi_laplace(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _apvi(epsilon, 0.0 if delta is None else delta, broken, "laplace")


# --------------------------------------------------------------------------- DP-VAPVI
D_FEAT = 2
K_HALF = 4


def linear_features() -> np.ndarray:
    """``φ(s, a)`` ``(S, A, d)``: φ(0,0) = e₁, φ(1,1) = e₂, φ(0,1) = φ(1,0) = (e₁ + e₂)/2."""
    phi = np.zeros((S, A, D_FEAT))
    phi[0, 0], phi[1, 1] = [1.0, 0.0], [0.0, 1.0]
    phi[0, 1] = phi[1, 0] = [0.5, 0.5]
    return phi


def linear_neighbours() -> tuple[tuple[dict, dict], tuple[dict, dict]]:
    """``((data, data_bar) of D, (data, data_bar) of D')``, without the split (``split=False``: both
    stages read the same K trajectories), so the replaced trajectory enters all 5H statistics."""
    zeros = np.zeros((K_HALF, H), dtype=int)
    half = {"observations": zeros, "actions": zeros.copy(), "rewards": np.zeros((K_HALF, H)),
            "next_observations": zeros.copy()}
    changed = {k: v.copy() for k, v in half.items()}
    changed["observations"][0] = changed["actions"][0] = changed["next_observations"][0] = 1
    changed["rewards"][0] = 1.0
    return (half, half), (changed, changed)


_MECHANISMS = ("gram_bar", "second_moment", "first_moment", "gram", "target")


def _recording(noise: LinearNoise, log: list) -> LinearNoise:
    """Copies of the five mechanisms whose ``release`` also appends every released value to ``log``
    (the type is kept: ``linear_pessimistic_vi`` dispatches on the matrix mechanism's type)."""
    def wrap(mech):
        rec = copy.copy(mech)

        def release(value, *, rng=None):
            out, event = mech.release(value, rng=rng)
            log.append(np.asarray(out, float).ravel())
            return out, event
        rec.release = release
        return rec
    return noise._replace(**{k: wrap(getattr(noise, k)) for k in _MECHANISMS})


def _divide(noise: LinearNoise) -> LinearNoise:
    """Copies of the five mechanisms with noise std / 10 (their events are not used: the claim is
    computed from the unbroken mechanisms)."""
    def divided(mech):
        m = copy.copy(mech)
        m.noise_multiplier = mech.noise_multiplier / NOISE_DIVISOR
        return m
    return noise._replace(**{k: divided(getattr(noise, k)) for k in _MECHANISMS})


def _vapvi(epsilon: float, delta: float, broken: str | None, calibration: str) -> AuditPair:
    rho = approx_dp_to_zcdp(epsilon, delta)
    noise = linear_mechanisms(H, D_FEAT, rho, calibration=calibration)
    phi = linear_features()
    (d_data, d_bar), (d2_data, d2_bar) = linear_neighbours()
    probe = linear_pessimistic_vi(phi, d_data, d_bar, lam=1.0, penalty_coef=0.0, additive=0.0,
                                  noise=noise, rng=np.random.default_rng(0))
    claimed = claimed_epsilon(dp_accounting.ComposedDpEvent(probe.events), delta)
    if broken == "noise-div-10":
        noise = _divide(noise)

    def on(data, data_bar):
        def once(rng):
            log: list = []
            linear_pessimistic_vi(phi, data, data_bar, lam=1.0, penalty_coef=0.0, additive=0.0,
                                  noise=_recording(noise, log), rng=rng)
            return np.concatenate(log)
        return lambda n, rng: stack(once, n, rng)
    note = "paper calibration (labelled): the claim is the ledger's true replace-one cost" if calibration == "paper" else ""
    return AuditPair(on(d_data, d_bar), on(d2_data, d2_bar), claimed, delta, note=note)


def _vapvi_sound(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _vapvi(epsilon, delta, broken, "sound")


def _vapvi_paper(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _vapvi(epsilon, delta, broken, "paper")


register_target(AuditTarget(
    name="dp-apvi-gaussian", description="DP-APVI count release, Gaussian (zCDP) variant, H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_gaussian, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="dp-apvi-laplace", description="DP-APVI count release, Laplace (pure DP) variant, H=S=A=2",
    privacy_unit="one trajectory (replace-one)", build=_apvi_laplace, epsilon=1.0, delta=0.0,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="dp-apvi-dataset", description="DP-APVI count release (Gaussian) on a sampled dataset, rarest-trajectory neighbour",
    privacy_unit="one trajectory (replace-one)", build=_apvi_dataset, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=3_000,
))
register_target(AuditTarget(
    name="dp-vapvi", description="DP-VAPVI transcript of all 5H released statistics, H=2, d=2",
    privacy_unit="one trajectory (replace-one)", build=_vapvi_sound, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=2_000,
))
register_target(AuditTarget(
    name="dp-vapvi-paper", description="DP-VAPVI with calibration='paper' (labelled), H=2, d=2",
    privacy_unit="one trajectory (replace-one)", build=_vapvi_paper, epsilon=1.0, delta=1e-5,
    variants=(NOISE_DIV_10,), trials=10_000, fast_trials=2_000,
))
