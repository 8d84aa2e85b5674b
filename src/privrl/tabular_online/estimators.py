"""Online exploration in tabular episodic MDPs: UCBVI (Azar et al. 2017), DP-UCBVI (Qiao & Wang
2023, through DP-Nash-VI at B = 1), Private-UCB-VI and Private-UCB-PO (after Chowdhury & Zhou 2022).

Every learner sees the data only through the count streams ``N_h(s, a)`` and ``N_h(s, a, s′)``
(:mod:`.calibration`: the privatizers, their sensitivities, ledger events and E_{ε,β}); private
counts are post-processed (§5.3, :func:`._kernels.project_row`) to ``Ñ`` satisfying Assumption 3.1,
then ``P̃ = Ñ(s, a, ·)/Ñ(s, a)`` (eq. 1). Regret is the exact pseudo-regret ``V*_1 − V^{π_k}_1`` on the
true model every episode. The loop is :func:`.engine.fit_many` (numba, many runs in lockstep).

* :class:`UCBVI` — Azar, Osband & Munos (2017), Algorithm 1 with the Chernoff–Hoeffding bonus
  ``b = 7HL/√N``, ``L = ln(5SAT/δ)`` (UCBVI-CH), δ = ``beta``; non-private, the reference.
* :class:`DPUCBVI` — spec §3: Bernstein-type bonus ``γ + Γ``, ``γ = (C₁/H)·P̃(V̄ − V̲)``,
  ``Γ = C₂√(Var·ι/Ñ) + C₂·H·S·E·ι/Ñ + C₂·H²·S·ι/Ñ``, ``ι = log(30HSAK/β)``; upper and lower values
  clipped to ``[0, H]``; greedy policy (the CCE at B = 1).
* :class:`PrivateUCBVI` — Hoeffding-type optimism on the private counts, our own write-up (only the
  paper's regret table is reachable): bonus ``c·(H√(2ι)/√Ñ + 2HS·E/Ñ)`` — the Hoeffding radius of
  ``(P̂ − P)V`` for ``V ∈ [0, H]`` (union over ``(h, s, a, k)``), plus the ℓ1 distance
  ``‖P̃ − P̂‖₁ ≤ 2SE/Ñ`` that ``|Ñ − N| ≤ E`` allows, times H.
* :class:`PrivateUCBPO` — the same optimistic evaluation of the current stochastic policy
  (``V̄_h = ⟨π_h, Q̄_h⟩``) and mirror ascent ``π_{k+1} ∝ π_k exp(η Q̄^k)``, ``η = √(2 ln A/(H²K))``.

C₁, C₂ (DP-UCBVI) are "universal constants" the paper proves exist (Lemma B.7) without values, so
there is no ``paper`` form to offer. ``constants="theory"``: C₁ = C₂ = 1 and the other bonuses'
derivation constants as written above (unit constants: the proof's chain was not tracked);
``"practical"``: the bonuses scaled down (:data:`PRESETS`: UCBVI × 0.002 — between the grid's best
non-private points 0.001 and 0.003 —, Private-UCB-VI/PO × 0.002, DP-UCBVI C₁ = 0.1, C₂ = 0.001),
chosen on a held-out instance (RiverSwim S = 5, H = 10, K = 2 000, seeds 990000–990002, per-step and
pooled counts; never the reported instances) from the grid 3e-4 … 3e-2, by the non-private regret
(at ε = 1 every scale is equally bad there: the privacy terms dominate). Privacy never depends on them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from privrl._rng import RngLike
from privrl._validation import param_error
from privrl.base import CONSTANTS, Estimator, PrivateEstimator, param
from privrl.envs.tabular import TabularMDP
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.tabular_online import _kernels as kern
from privrl.tabular_online import calibration as cal
from privrl.tabular_online.engine import fit_many, resolve_model

if TYPE_CHECKING:  # annotations only (typing.Self: Python 3.11)
    from typing_extensions import Self

__all__ = ["UCBVI", "DPUCBVI", "PrivateUCBVI", "PrivateUCBPO", "PRESETS", "log_term"]

#: utility presets: the multiplier of each learner's bonus (DP-UCBVI: C₁ and C₂)
PRESETS: dict[str, dict[str, float]] = {
    "theory": {"c1": 1.0, "c2": 1.0, "bonus_scale": 1.0},
    "practical": {"c1": 0.1, "c2": 0.001, "bonus_scale": 0.002},
}


def log_term(horizon: int, n_states: int, n_actions: int, n_episodes: int, beta: float) -> float:
    """``ι = log(30·H·S·A·K/β)`` (spec §3, B = 1)."""
    return math.log(30.0 * horizon * n_states * n_actions * n_episodes / beta)


#: the count model: per step h (the spec's non-stationary MDP) or pooled over the steps
POOLED = param("pool the counts over the steps h (one N(s, a), N(s, a, s') for all h: for time-homogeneous MDPs, as "
               "Chowdhury & Zhou's learners; l2 sensitivity 2H instead of 2 sqrt(H)); False: one count per step, "
               "the non-stationary model of the spec", default=False, kind="bool")


def _knob(help_text: str, **kw: Any) -> Any:
    return param(f"{help_text} (None: from the 'constants' preset; never changes the noise)", default=None,
                 none_ok=True, low=0.0, **kw)


class _Learner:
    """What every tabular learner shares: the run's settings, the fitted attributes."""

    _algo: ClassVar[int] = kern.HOEFFDING

    def _noise(self, model: TabularMDP, p: dict[str, Any]) -> cal.CountNoise:
        return cal.count_noise("none", PrivacyBudget.non_private(), n_episodes=p["n_episodes"],
                               horizon=int(model.horizon or 0), n_states=model.n_states, n_actions=model.n_actions,
                               beta=p["beta"], pooled=p["pooled"])

    def _checked(self) -> dict[str, Any]:
        return self._validated()  # type: ignore[attr-defined]  # a mixin: the Estimator base provides it

    def knobs(self) -> dict[str, float]:
        """The utility constants in force: each given value, else the ``constants`` preset's."""
        p = self._checked()
        preset = PRESETS[p["constants"]]
        return {k: (preset[k] if p.get(k) is None else float(p[k])) for k in preset if k in p}

    def _settings(self, model: TabularMDP) -> dict[str, Any]:
        """The run's public settings: its noise plan and the kernel's bonus coefficients."""
        p = self._checked()
        noise = self._noise(model, p)
        out = {"noise": noise, "error_bound": noise.error_bound, "c_gap": 0.0, "eta": 0.0}
        out.update(self._bonus(model, p, noise))
        return out

    def _bonus(self, model: TabularMDP, p: dict[str, Any], noise: cal.CountNoise) -> dict[str, float]:
        raise NotImplementedError

    def fit(self, model: TabularMDP, *, rng: RngLike = None) -> Self:
        """Run K episodes online on ``model`` (an episodic :class:`~privrl.envs.tabular.TabularMDP`,
        rewards known, in [0, 1]); sets ``regret_`` (per-episode exact pseudo-regret),
        ``cumulative_regret_``, ``noise_`` (the public noise plan), ``error_bound_`` (E_{ε,β}), ``privacy_ledger_``.
        Many runs at once: :func:`~privrl.tabular_online.engine.fit_many`."""
        fit_many([self], model, [rng])
        return self

    def _finish(self, regret: np.ndarray, gap: np.ndarray, pac_policy: np.ndarray, model: TabularMDP,
                plan: cal.CountNoise, settings: dict[str, Any]) -> None:
        self.regret_ = regret.copy()
        self.cumulative_regret_ = np.cumsum(regret)
        self.noise_ = plan
        self.error_bound_ = float(plan.error_bound)
        self.bonus_ = {k: float(settings[k]) for k in ("c_sqrt", "c_lin", "c_gap", "eta")}
        self.n_episodes_ = int(regret.size)
        if self._algo == kern.BERNSTEIN:
            self.value_gap_ = gap.copy()
            self.pac_policy_ = pac_policy.copy()


class UCBVI(_Learner, Estimator):
    """UCBVI-CH (Azar, Osband & Munos 2017, Alg. 1 with bonus_1): non-private, the reference.

    Bonus ``bonus_scale · 7HL/√N(s, a)``, ``L = ln(5SAT/δ)``, ``δ = beta``, ``Q = min(r + P̂V + b, H)``;
    an unvisited ``(s, a)`` has ``Q = H``."""

    privacy_unit = PrivacyUnit.USER_EPISODE
    neighboring = Neighboring.REPLACE_ONE
    _algo = kern.HOEFFDING

    n_episodes: int = param("number of episodes K (one user each)", default=1000, kind="int", low=1)
    pooled: bool = POOLED
    constants: str = CONSTANTS
    beta: float = param("failure probability δ of the confidence bounds (utility)", default=0.05, low=0.0,
                        high=1.0, closed="neither")
    bonus_scale: float | None = _knob("multiplier of the bonus 7HL/√N")

    def _bonus(self, model: TabularMDP, p: dict[str, Any], noise: cal.CountNoise) -> dict[str, float]:
        H, S, A, K = int(model.horizon or 0), model.n_states, model.n_actions, p["n_episodes"]
        L = math.log(5.0 * S * A * H * K / p["beta"])
        return {"c_sqrt": self.knobs()["bonus_scale"] * 7.0 * H * L, "c_lin": 0.0}


class _Private(_Learner, PrivateEstimator):
    """Shared shell of the private learners: the privatizer's parameters."""

    privacy_unit = PrivacyUnit.USER_EPISODE
    neighboring = Neighboring.REPLACE_ONE

    n_episodes: int = param("number of episodes K (one user each)", default=1000, kind="int", low=1)
    privatizer: str = param("'central' (JDP: a trusted agent privatizes the count streams with a continual "
                            "counter) or 'local' (LDP: each user adds noise to her own trajectory's indicators)",
                            default="central", kind="option", options=("central", "local"))
    counter: str = param("the central privatizer's counter: 'tree' (the binary mechanism, §5.1: Laplace under "
                         "a pure epsilon budget, Gaussian under (epsilon, delta) or rho), 'blt' (the buffered "
                         "linear Toeplitz factorization, Gaussian, tight calibration only) or 'auto' (BLT for "
                         "Gaussian budgets under 'tight', else the tree); ignored by 'local'", default="auto",
                         kind="option", options=cal.COUNTERS)
    pooled: bool = POOLED
    constants: str = CONSTANTS
    beta: float = param("failure probability β of Assumption 3.1 and the bonuses (utility: sets E; never "
                        "changes the noise)", default=0.05, low=0.0, high=1.0, closed="neither")

    @property
    def guarantee(self) -> str | None:  # type: ignore[override]
        privatizer: Any = getattr(self, "privatizer", None)
        return {"central": "JDP", "local": "LDP"}.get(privatizer)

    def _noise(self, model: TabularMDP, p: dict[str, Any]) -> cal.CountNoise:
        return self.noise_for(int(model.horizon or 0), model.n_states, model.n_actions)

    def noise_for(self, horizon: int, n_states: int, n_actions: int) -> cal.CountNoise:
        """The public noise of a fit on an MDP of these sizes (what ``privrl plan`` reads)."""
        p = self._checked()
        owner = type(self).__name__
        if p["privatizer"] == "local" and p["counter"] == "blt":
            raise param_error("counter", owner, "'auto' or 'tree' with the local privatizer", p["counter"])
        return cal.count_noise(p["privatizer"], p["budget"], p["calibration"], p["counter"],
                               n_episodes=p["n_episodes"], horizon=int(horizon), n_states=int(n_states),
                               n_actions=int(n_actions), beta=p["beta"], pooled=p["pooled"], owner=owner)

    def fit(self, model: TabularMDP, *, rng: RngLike = None) -> Self:
        resolve_model(model, type(self).__name__)
        return super().fit(model, rng=rng)


class DPUCBVI(_Private):
    """DP-UCBVI (Qiao & Wang 2023; DP-Nash-VI Algorithm 1 at B = 1, spec §3) with the central (JDP,
    §5.1) or local (LDP, §5.2) privatizer; an infinite budget is the non-private Bernstein learner.

    Fitted beyond the shared attributes: ``value_gap_`` (``(V̄_1 − V̲_1)(s_1)`` per episode) and
    ``pac_policy_`` (``(H, S, A)``: Algorithm 1's output π^out, the policy of the last episode that
    lowered the gap below every earlier one, from Δ = H; uniform if none did)."""

    _algo = kern.BERNSTEIN
    c1: float | None = _knob("C₁ of γ = (C₁/H)·P̃(V̄ − V̲)")
    c2: float | None = _knob("C₂ of the bonus Γ")

    def _bonus(self, model: TabularMDP, p: dict[str, Any], noise: cal.CountNoise) -> dict[str, float]:
        H, S, A, K = int(model.horizon or 0), model.n_states, model.n_actions, p["n_episodes"]
        iota = log_term(H, S, A, K, p["beta"])
        k = self.knobs()
        c2 = k["c2"]
        return {"c_sqrt": c2 * math.sqrt(iota), "c_lin": c2 * (H * S * noise.error_bound * iota + H * H * S * iota),
                "c_gap": k["c1"] / H}


class PrivateUCBVI(_Private):
    """Private-UCB-VI (after Chowdhury & Zhou 2022; our write-up, module doc): Hoeffding-type
    optimism on the post-processed private counts, JDP (central) or LDP (local)."""

    _algo = kern.HOEFFDING
    bonus_scale: float | None = _knob("multiplier of the bonus H√(2ι/Ñ) + 2HS·E/Ñ")

    def _bonus(self, model: TabularMDP, p: dict[str, Any], noise: cal.CountNoise) -> dict[str, float]:
        H, S, A, K = int(model.horizon or 0), model.n_states, model.n_actions, p["n_episodes"]
        iota = log_term(H, S, A, K, p["beta"])
        c = self.knobs()["bonus_scale"]
        return {"c_sqrt": c * H * math.sqrt(2.0 * iota), "c_lin": c * 2.0 * H * S * noise.error_bound}


class PrivateUCBPO(PrivateUCBVI):
    """Private-UCB-PO (after Chowdhury & Zhou 2022; module doc): optimistic evaluation of the current
    policy and mirror ascent with step ``eta`` (None: ``√(2 ln A/(H²K))``)."""

    _algo = kern.POLICY_OPT
    eta: float | None = param("mirror-ascent step η (None: √(2 ln A/(H²K)))", default=None, low=0.0, none_ok=True)

    def _bonus(self, model: TabularMDP, p: dict[str, Any], noise: cal.CountNoise) -> dict[str, float]:
        out = super()._bonus(model, p, noise)
        H, A, K = int(model.horizon or 0), model.n_actions, p["n_episodes"]
        out["eta"] = math.sqrt(2.0 * math.log(A) / (H * H * K)) if p["eta"] is None else float(p["eta"])
        return out
