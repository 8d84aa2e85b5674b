"""Audit targets of DP-LSW and DP-LSL (Balle, Gomrokchi & Precup 2016, Algorithms 1 and 2) and of
DPMonteCarlo (``dp-monte-carlo``, ``dp-monte-carlo-groups``: the worst-case pairs of
:func:`monte_carlo_statistics`, which attain the derived sensitivities; controls: noise ÷ 10 and,
for the groups, the counts released without noise).

The audit calls the algorithms' own release step (:class:`DPLSWMechanism` /
:class:`DPLSLMechanism` ``.release(theta, counts, m, noise=...)``, a pure function of the public
parameters, the signature ⟨X⟩ and θ) on the first-visit statistics of two neighbouring datasets,
computed by the module's own :func:`first_visit_statistics` and solvers.

Neighbours (privacy unit: one trajectory replaced; worst cases, not random ones). γ = 1/2,
rewards in [0, 1], F_max = 1/(1 − γ) = 2. Three pairs:

* *tight* (target ``dp-lsw``): one state, m = 1000 trajectories of return 0; D' replaces one by a
  trajectory earning the maximal reward for 40 steps (return 2(1 − 2⁻⁴⁰) ≈ F_max). The counts do
  not move, θ moves by the most any replacement can (F_max/m, the bound of Corollary 3 is
  attained), and with counts ≥ 2/β the smooth bound equals the local one.
* *single* (target ``dp-lsl``): the same with m = 1 trajectory and λ = 1000. Corollary 8's bound
  2F_max‖Φ‖/(λ − λ_min)·√φ^λ(⟨X⟩) is tightest for few trajectories and a large λ: on this pair the
  release's Gaussian shift (Δθ/σ) is 0.85 of what the claimed ε allows, on the m = λ = 1000 pair
  only 0.17 (there even noise ÷ 2 is private; measured with ``DPLSLMechanism.solve`` and
  ``noise_scale``).
* *counts* (target ``dp-lsw-counts``): three states, tabular features; D has m = 10 trajectories,
  one visiting only state 0 with return 0 and nine visiting states 1 and 2 with return 0. D'
  replaces one of the nine by a trajectory staying in the *rarest* state 0 with the *maximal*
  reward, so the counts move from (1, 9, 9) to (2, 8, 8) and the local sensitivity by a factor
  ≈ 1.9 — what breaks the ``local-sensitivity`` control (its σ then reveals the counts; the
  ``norm`` statistic sees it).

Claims and negative controls. Every pair uses the algorithms' defaults (tight calibration) and
claims the ε that the release's own event states (``ApproxDpEvent(ε spent, δ)``). The release point
of ``dp-lsw`` and ``dp-lsl`` (:mod:`privrl.audit.registry`) is the 1-D Gaussian release of θ: its
likelihood ratio is the projection (``"lda"``), on 10⁶ releases per input; ``noise-div-2``,
``noise-div-10``, ``noise-div-100`` (:class:`~privrl.privacy.ScaledNoise`, one generic wrapper; the
event still claims the unscaled noise) must be caught. (Under the printed Lemma 1 constants —
``calibration="paper"`` — α was ≈ 6× the needed multiplier and noise ÷ 10 stayed near-private;
that slack is what the tight calibration removes.) ``local-sensitivity`` replaces ψ^w by φ^w (a
broken copy of the mechanism, not a noise scaling).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from privrl.audit.broken import scaled_source
from privrl.audit.core import Sampler
from privrl.audit.registry import AuditPair, AuditTarget, BrokenVariant, register_target
from privrl.audit.targets_mechanisms import NOISE_DIV_2, claimed_epsilon
from privrl.least_squares.mechanism import DPLSLMechanism, DPLSWMechanism
from privrl.least_squares.smooth_sensitivity import phi_w, psi_w
from privrl.least_squares.statistics import VisitStatistics, first_visit_statistics
from privrl.privacy import PrivacyBudget

if TYPE_CHECKING:
    from privrl.policy_evaluation.monte_carlo import ReturnStatistics

GAMMA = 0.5
F_MAX = 1.0 / (1.0 - GAMMA)
LONG = 40
M_TIGHT = 1000
#: the DP-LSL pair: one trajectory, λ = 1000 (module docstring)
M_SINGLE, LAM_LSL = 1, 1000.0


def _flat(episodes: list[tuple[list[int], list[float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs = np.concatenate([np.asarray(o, int) for o, _ in episodes])
    rew = np.concatenate([np.asarray(r, float) for _, r in episodes])
    starts = np.concatenate([[0], np.cumsum([len(o) for o, _ in episodes])])
    return obs, rew, starts


def neighbouring_statistics(kind: str = "tight") -> list[VisitStatistics]:
    """First-visit statistics of D and of its worst-case neighbour D' (see module docstring)."""
    if kind in ("tight", "single"):
        base, n_states = [([0], [0.0])] * (M_TIGHT if kind == "tight" else M_SINGLE), 1
        neighbour = [([0] * LONG, [1.0] * LONG), *base[1:]]
    else:
        base, n_states = [([0], [0.0])] + [([1, 2], [0.0, 0.0])] * 9, 3
        neighbour = [base[0], ([0] * LONG, [1.0] * LONG), *base[2:]]
    out = []
    for episodes in (base, neighbour):
        obs, rew, starts = _flat(episodes)
        out.append(first_visit_statistics(obs, rew, starts, n_states, GAMMA, return_bound=F_MAX))
    return out


class _LocalSensitivity(DPLSWMechanism):
    """DP-LSW with σ from the local bound φ^w(⟨X⟩) instead of its smooth bound ψ^w (the bug the
    smoothing exists to prevent): σ_local = σ_X · √(φ^w/ψ^w)."""

    def noise_scale(self, counts: np.ndarray, m: int) -> float:
        ratio = phi_w(counts, self.weights) / psi_w(counts, self.weights, self.smoothed.beta)
        return super().noise_scale(counts, m) * math.sqrt(ratio)


def _pair(mech: DPLSWMechanism | DPLSLMechanism, broken: str | None, delta: float, kind: str) -> AuditPair:
    stats = neighbouring_statistics(kind)
    claimed = claimed_epsilon(mech.event, delta)
    if broken == "local-sensitivity":
        mech = _LocalSensitivity(**{f.name: getattr(mech, f.name) for f in dataclasses.fields(mech)})

    def on(st: VisitStatistics) -> Sampler:
        theta = mech.solve(st)

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            return mech.release(np.broadcast_to(theta, (n, theta.size)), st.counts, st.n_trajectories,
                                noise=scaled_source(rng, broken)).value
        return sample
    return AuditPair(on(stats[0]), on(stats[1]), claimed, delta)


def _lsw_mech(epsilon: float, delta: float, n_states: int) -> DPLSWMechanism:
    return DPLSWMechanism.create(features=np.eye(n_states), weights=np.ones(n_states), F_max=F_MAX,
                                 epsilon=epsilon, delta=delta)


def _dp_lsw(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(_lsw_mech(epsilon, delta, 1), broken, delta, "tight")


def _dp_lsw_counts(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    return _pair(_lsw_mech(epsilon, delta, 3), broken, delta, "counts")


def _dp_lsl(epsilon: float, delta: float, broken: str | None) -> AuditPair:
    mech = DPLSLMechanism.create(features=np.eye(1), relevance=np.ones(1), lam=LAM_LSL,
                                 F_max=F_MAX, epsilon=epsilon, delta=delta)
    return _pair(mech, broken, delta, "single")


_DIV_10 = BrokenVariant("noise-div-10", "noise std / 10 (ScaledNoise 0.1), same claimed event")
_DIV_100 = BrokenVariant("noise-div-100", "noise std / 100 (ScaledNoise 0.01), same claimed event")
_STATS = ("projection", "norm")

register_target(AuditTarget(
    name="dp-lsw", description="DP-LSW release (Algorithm 1), one state, m = 1000, worst-case replaced trajectory",
    privacy_unit="one trajectory (replace-one)", build=_dp_lsw, epsilon=1.0, delta=1e-5,
    variants=(_DIV_10, _DIV_100, NOISE_DIV_2), statistics=_STATS, optimal="lda", sharp_trials=1_000_000,
))
register_target(AuditTarget(
    name="dp-lsw-counts", description="DP-LSW release, 3 states, replaced trajectory moves the counts (1,9,9)->(2,8,8)",
    privacy_unit="one trajectory (replace-one)", build=_dp_lsw_counts, epsilon=1.0, delta=1e-5,
    variants=(BrokenVariant("local-sensitivity", "sigma from the local bound phi^w instead of the smooth psi^w"),),
))
register_target(AuditTarget(
    name="dp-lsl",
    description="DP-LSL release (Algorithm 2), one state, m = 1, lambda = 1000, worst-case replaced trajectory",
    privacy_unit="one trajectory (replace-one)", build=_dp_lsl, epsilon=1.0, delta=1e-5,
    variants=(_DIV_10, _DIV_100, NOISE_DIV_2), statistics=_STATS, optimal="lda", sharp_trials=1_000_000,
))


# --------------------------------------------------------------------------- Monte Carlo
#: the Monte Carlo pairs: n trajectories, returns in [0, F_max = 1] (γ = 1, reward 1 at the end)
M_MONTE_CARLO = 1000
MC_GROUPS, MC_CAP = 4, 2


def monte_carlo_statistics(kind: str = "value") -> tuple[ReturnStatistics, ReturnStatistics]:
    """The statistics of D and of its worst-case neighbour D' for the Monte Carlo release.

    ``"value"``: every trajectory of D has return 0; D' replaces one by a trajectory of return
    F_max = 1, so S/F_max moves by 1 (the replace-one sensitivity). ``"groups"``: G = 4 groups,
    at most k = 2 per trajectory; the replaced trajectory enters groups {0, 1} with first-visit
    returns 1 (and return 1 from its start), its replacement groups {2, 3} with returns 1, so the
    normalised group statistic moves by 2·min(2k, G) = 8 in squared ℓ2 and in ℓ1 (the bound)."""
    from privrl.policy_evaluation.monte_carlo import return_statistics

    def flat(episodes: list[tuple[list[int], list[float]]]) -> ReturnStatistics:
        obs, rew, starts = _flat(episodes)
        if kind == "value":
            return return_statistics(rew, starts, 1.0, 1.0)
        return return_statistics(rew, starts, 1.0, 1.0, state_groups=obs, n_groups=MC_GROUPS, max_groups=MC_CAP)

    if kind == "value":
        base = [([0], [0.0])] * M_MONTE_CARLO
        return flat(base), flat([([0], [1.0]), *base[1:]])
    base = [([0, 1], [0.0, 1.0])] + [([0], [0.0])] * (M_MONTE_CARLO - 1)
    return flat(base), flat([([2, 3], [0.0, 1.0]), *base[1:]])


def _monte_carlo_pair(kind: str, epsilon: float, delta: float, broken: str | None) -> AuditPair:
    from privrl.policy_evaluation.monte_carlo import MonteCarloMechanism
    from privrl.privacy import Ledger, Releaser

    budget = PrivacyBudget(epsilon=epsilon, delta=delta)
    groups = MC_GROUPS if kind == "groups" else 0
    mech = MonteCarloMechanism.create(budget, 1.0, n_groups=groups, max_groups=MC_CAP,
                                      mechanism="gaussian" if groups else "auto")
    ledger = Ledger()
    for event in mech.events():
        ledger.append(event)
    claimed = float(ledger.epsilon(delta))

    def on(stats: ReturnStatistics) -> Sampler:
        value, group = mech.statistic(stats)

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            v, g = mech.release(np.broadcast_to(value, (n, value.size)),
                                None if group is None else np.broadcast_to(group, (n, group.size)),
                                rel=Releaser(scaled_source(rng, broken), Ledger()))
            if g is None:
                return v
            if broken == "counts-in-the-clear" and group is not None:   # a bug: the counts treated as public
                g[:, MC_GROUPS:] = group[MC_GROUPS:]
            return np.concatenate([v, g], axis=1)
        return sample

    d, d2 = monte_carlo_statistics(kind)
    return AuditPair(on(d), on(d2), claimed, delta)


register_target(AuditTarget(
    name="dp-monte-carlo", description="DPMonteCarlo value release (mean return, n = 1000 public), worst-case "
    "replaced trajectory (return 0 -> F_max)", privacy_unit="one trajectory (replace-one)",
    build=lambda e, d, b: _monte_carlo_pair("value", e, d, b), epsilon=1.0, delta=1e-5,
    variants=(_DIV_10, NOISE_DIV_2), optimal="laplace-llr",
))
register_target(AuditTarget(
    name="dp-monte-carlo-groups", description="DPMonteCarlo value and group release (G = 4, k = 2, Gaussian), "
    "replaced trajectory moves four groups' sums and counts", privacy_unit="one trajectory (replace-one)",
    build=lambda e, d, b: _monte_carlo_pair("groups", e, d, b), epsilon=1.0, delta=1e-5,
    variants=(_DIV_10, NOISE_DIV_2, BrokenVariant("counts-in-the-clear", "group counts released without noise "
                                                  "(treated as public)")), optimal="lda",
))
