"""LinOpt-VI-Reg (Algorithm 1; private UCRL-VTR) and LinOpt-PO-Reg (Algorithm 2; private OPPO).

Both learners are thin shells over one kernel, :func:`~privrl.linear_mixture.engine.fit_many`
(the online loop of Algorithms 1–2, for one run or many in lockstep; see that module for the
per-episode steps). The learner sees the data only through the regularizer's releases (billboard
lemma, Thm 6.4); the rollout is the user's side. Regret is the exact pseudo-regret
``V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` by dynamic programming on the true model every episode.

Parameters are declared once, as the fields of the shared shell (``LinOptVI.params``): the budget
(required; an infinite budget is exactly the non-private learner), ``privatizer`` (``"central"``
JDP, ``"local"`` LDP, ``"none"``), ``calibration`` (tight / sound / paper,
:mod:`~privrl.linear_mixture.calibration`), ``secure``, and the utility knobs ``beta_scale``,
``noise_term_scale``, ``upsilon``, ``shift_scale``, ``lam`` with presets
``constants="theory"|"practical"`` (:data:`LINOPT_PRESETS`); privacy never depends on the knobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike
from privrl._validation import param_error
from privrl.base import CONSTANTS, PrivateEstimator, param
from privrl.envs.linear_mixture import LinearMixtureMDP
from privrl.errors import InvalidDataError
from privrl.linear_mixture import calibration as cal
from privrl.linear_mixture.engine import fit_many, plan_once, resolve_model, softmax
from privrl.linear_mixture.regularizers import (
    UPSILON_RULES,
    CentralFactorizationPrivatizer,
    CentralTreePrivatizer,
    LocalPrivatizer,
    NonPrivate,
    Regularizer,
)
from privrl.privacy.budget import Neighboring, PrivacyUnit

__all__ = ["LinOptVI", "LinOptPO", "optimistic_q", "resolve_model", "fit_many", "softmax", "LINOPT_PRESETS",
           "PRIVATIZERS"]

PRIVATIZERS = ("central", "local", "none")

#: Utility presets (privacy never depends on them). ``theory``: the paper's constants — β of
#: Lemma 3.1, Υ of Lemma B.4, shift 2Υ (c = 1), λ = 1. ``practical``: β × 0.1 with the regulariser's
#: terms √(d λ_max) + ν of β halved, the Monte-Carlo Υ, shift 1.2·Υ (c = 0.6), λ = 1 — constants (no
#: data, no budget enter them), chosen on held-out E2 instances (model seeds 990000–990009; never the
#: benchmark's, the experiments' or the figures') by ``benchmarks/tune_linear_mixture.py`` in four
#: passes, the last for the default counter; see ``docs/linear_mixture.md``.
LINOPT_PRESETS: dict[str, dict[str, object]] = {
    "theory": {"beta_scale": 1.0, "noise_term_scale": 1.0, "upsilon": "theory", "shift_scale": 1.0, "lam": 1.0},
    "practical": {"beta_scale": 0.1, "noise_term_scale": 0.5, "upsilon": "monte_carlo", "shift_scale": 0.6, "lam": 1.0},
}


def optimistic_q(Lam_p: np.ndarray, u_p: np.ndarray, Lam_r: np.ndarray, u_r: np.ndarray, psi_t: np.ndarray,
                 phi: np.ndarray, beta_p: ArrayLike, beta_r: ArrayLike, policy: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimistic backward induction (Algorithm 1 lines 3–11; Algorithm 2 lines 4–12) for one run.

    ``psi_t`` is ψ as ``(S, A, d1, S)``; ``beta_p``/``beta_r`` one radius or one per step ``(H,)``;
    ``policy`` ``(H, S, A)`` switches ``V`` from max (VI) to ``⟨π, Q⟩`` (PO). Returns
    ``(Q (H,S,A), V (H+1,S), feat (H,S,A,d1))``. The learners use the batched kernel of
    :mod:`.engine`; this is the same computation for a single set of statistics.
    """
    return plan_once((Lam_p, u_p, Lam_r, u_r), np.moveaxis(psi_t, 3, 2), phi, beta_p, beta_r, policy)


def _knob(help_text: str, **kw: Any) -> Any:
    return param(f"{help_text} (None: from the 'constants' preset; never changes the noise)", default=None,
                 none_ok=True, **kw)


class _LinOpt(PrivateEstimator):
    """Shared shell of LinOptVI / LinOptPO (see module doc); declares the parameters they share."""

    privacy_unit = PrivacyUnit.USER_EPISODE
    neighboring = Neighboring.REPLACE_ONE
    _algorithm = "linopt"

    n_episodes: int = param("number of episodes K (one user each)", default=1000, kind="int", low=1)
    privatizer: str = param("'central' (JDP, binary-tree counters; trusted agent), 'local' (LDP, each user "
                            "randomises her own messages; derived) or 'none' (UCRL-VTR / OPPO; needs an infinite "
                            "budget)", default="central", kind="option", options=PRIVATIZERS)
    counter: str = param("the central (JDP) privatizer's continual counter: 'tree' (the paper's binary tree, "
                         "Lemma 6.1), 'factorization' (the square-root factorization of the prefix-sum matrix, "
                         "Fichtenberger et al. 2023: one Gaussian release per item, less noise, memory growing "
                         "with K), 'blt' (a buffered linear Toeplitz factorization, Dvijotham et al. 2024: the "
                         "square root's noise within 0.2% at K <= 1e5, memory independent of K); both 'tight' "
                         "calibration only; or 'auto' (the BLT under 'tight', the tree under 'sound' and "
                         "'paper'); ignored by 'local' and 'none'", default="auto", kind="option",
                         options=cal.COUNTERS)
    constants: str = CONSTANTS
    alpha: float = param("confidence level α of Lemma 3.1 (utility: the radii and the shift's failure "
                         "probability; never changes the noise)", default=0.05, low=0.0, high=1.0, closed="right")
    beta_scale: float | None = _knob("multiplier of the confidence radii β_p, β_r", low=0.0)
    noise_term_scale: float | None = _knob("multiplier, within the radii, of the privatizer's terms √(d λ_max) "
                                           "+ ν (the bias of the noisy shift and the moment noise; 1 is Lemma "
                                           "3.1; no effect without privacy noise)", low=0.0)
    upsilon: str | None = _knob("operator-norm bound Υ of the noise: 'theory' (Lemma B.4) or 'monte_carlo' (a "
                                "tighter public Monte-Carlo bound)", kind="option", options=UPSILON_RULES)
    shift_scale: float | None = _knob("c > 1/2 in the shift 2c·Υ·I (λ_min = (2c−1)Υ, λ_max = (2c+1)Υ)", low=0.5,
                                      closed="neither")
    lam: float | None = _knob("ridge λ of the non-private regularizer (and of steps that release no noise)",
                              low=0.0, closed="neither")
    clip_inputs: bool = param("project contributions outside the bounds privacy relies on instead of raising",
                              default=False, kind="bool")

    # -- privacy declaration follows the privatizer (a property of the parameters, never of a fit)
    @property
    def guarantee(self) -> str | None:  # type: ignore[override]
        privatizer: Any = getattr(self, "privatizer", None)
        return {"central": "JDP", "local": "LDP"}.get(privatizer)

    # -- validation and public, data-independent pieces
    def _checked(self) -> dict[str, Any]:
        p = self._validated()
        owner = type(self).__name__
        budget = p["budget"]
        if p["privatizer"] == "none" and budget.is_private:
            raise param_error("budget", owner, "an infinite budget (PrivacyBudget.non_private()) when the 'privatizer' "
                              "parameter is 'none' (the non-private learner)", budget)
        if budget.is_private and budget.rho is None and not budget.delta:
            raise param_error("budget", owner, "an (epsilon, delta) budget with delta > 0 or a rho budget (Gaussian "
                              "noise cannot give pure DP)", budget)
        if p["privatizer"] == "central" and p["counter"] in cal.FACTORIZATIONS and p["calibration"] != "tight":
            raise param_error("counter", owner, "'tree' or 'auto' when the 'calibration' parameter is "
                              f"{p['calibration']!r} (Thm 6.4's closed form is the binary tree's)", p["counter"])
        if budget.is_private and budget.rho is not None and p["calibration"] != "tight":
            raise param_error("budget", owner, f"an (epsilon, delta) budget when the 'calibration' parameter is "
                              f"{p['calibration']!r} (Thm 6.4's closed form; 'tight' also takes rho)", budget)
        return p

    def knobs(self) -> dict[str, Any]:
        """The utility knobs in force: each given value, else the ``constants`` preset's."""
        p = self._checked()
        preset = LINOPT_PRESETS[p["constants"]]
        return {k: (preset[k] if p[k] is None else p[k]) for k in preset}

    def noise_plan(self, model: LinearMixtureMDP) -> cal.NoisePlan | None:
        """The noise of a fit on ``model`` (public: sizes, K, the budget and the calibration; None
        for ``privatizer='none'``)."""
        return self.noise_plan_for(model.horizon, model.d1, model.d2)

    def noise_plan_for(self, horizon: int, d1: int, d2: int) -> cal.NoisePlan | None:
        """The noise of a fit on a model of horizon H and feature dimensions d1, d2 (public sizes
        only: what :meth:`noise_plan` and ``privrl plan`` read); None for ``privatizer='none'``."""
        p = self._checked()
        if p["privatizer"] == "none":
            return None
        return cal.noise_plan(p["privatizer"], p["budget"], p["calibration"], n_episodes=p["n_episodes"],
                              horizon=int(horizon), d1=int(d1), d2=int(d2),
                              value_feature_bound=math.sqrt(d1) * horizon, counter=p["counter"],
                              owner=type(self).__name__)

    def regularizer(self, model: LinearMixtureMDP) -> Regularizer:
        """A fresh regularizer for a fit on ``model`` (what ``fit`` starts; audits start it on their
        own neighbouring inputs)."""
        p = self._checked()
        L_phi = math.sqrt(model.d1) * model.horizon
        bound = model.value_feature_bound()
        if bound > L_phi * (1 + 1e-9):
            raise InvalidDataError(f"{type(self).__name__}: the model's value-targeted features can exceed the "
                                   "bound sqrt(d1) H of Assumption 1, which the sensitivity relies on.")
        knobs = self.knobs()
        kw: dict[str, Any] = {"clip_inputs": p["clip_inputs"]}
        plan = self.noise_plan(model)
        if plan is None:
            return NonPrivate(knobs["lam"], **kw)
        cls: type[CentralTreePrivatizer | LocalPrivatizer] = LocalPrivatizer
        if p["privatizer"] == "central":
            cls = CentralFactorizationPrivatizer if plan.counter in cal.FACTORIZATIONS else CentralTreePrivatizer
        return cls(plan, upsilon=knobs["upsilon"], shift_scale=knobs["shift_scale"], alpha=p["alpha"],
                   lam=knobs["lam"], **kw)

    def regret_bound(self, model: LinearMixtureMDP, n_episodes: int | None = None) -> float:
        """The explicit regret bound of Thm 4.1 / 5.1 (Thm 6.5 for JDP, the derived LDP rate for
        local) with this estimator's noise plan and the *theory* constants (β unscaled, Lemma B.4 Υ,
        shift 2Υ), for a run of ``n_episodes`` (default ``n_episodes``) on ``model``: public."""
        p = self._checked()
        K = p["n_episodes"] if n_episodes is None else int(n_episodes)
        theory = self.get_params()
        theory.update(n_episodes=K, constants="theory", beta_scale=None, noise_term_scale=None, upsilon=None,
                      shift_scale=None, lam=None)
        est = type(self)(**theory)
        reg = est.regularizer(model)
        reg.start(n_episodes=K, horizon=model.horizon, d1=model.d1, d2=model.d2, rng=0)
        c = reg.constants(p["alpha"])
        bp, br = cal.confidence_radii(c, d1=model.d1, d2=model.d2, n_episodes=K, horizon=model.horizon,
                                      alpha=p["alpha"], value_feature_bound=reg.bounds[0])
        return self._bound(c, bp, br, model, K, p["alpha"])

    def _bound(self, consts: cal.RegularityConstants, beta_p: ArrayLike, beta_r: ArrayLike, model: LinearMixtureMDP,
               K: int, alpha: float) -> float:
        return cal.vi_regret_bound(consts, beta_p, beta_r, d1=model.d1, d2=model.d2, n_episodes=K,
                                   horizon=model.horizon, alpha=alpha)

    # -- the online loop
    def fit(self, env: object, *, rng: RngLike = None, features: LinearMixtureMDP | None = None,
            callback: Callable[..., object] | None = None) -> _LinOpt:
        """Run K episodes online on ``env`` (a :class:`LinearMixtureMDP` or a gymnasium env with known
        features); sets ``regret_`` (per-episode exact pseudo-regret), ``cumulative_regret_``,
        ``policy_``, ``theta_p_``, ``theta_r_``, ``beta_p_``, ``beta_r_`` (per step), ``constants_``,
        ``regret_bound_``, ``saturated_``, ``near_uniform_`` and ``policy_tv_from_uniform_`` (PO: the
        last policy within total variation ``engine.NEAR_UNIFORM_TV`` of uniform everywhere; NaN for
        VI), ``privatizer_parameters_``, ``noise_std_``,
        ``privacy_ledger_``. ``callback(k, Q=, V=, policy=, stats=)``, if given, sees what the learner
        holds in episode k (released statistics only) — for diagnostics and tests. Many runs at once:
        :func:`~privrl.linear_mixture.engine.fit_many`."""
        fit_many([self], [env], [rng], features=features, callback=callback)
        return self

    # -- hooks overridden by PO
    def _begin(self, model: LinearMixtureMDP, K: int, p: dict[str, Any]) -> None:
        pass


class LinOptVI(_LinOpt):
    """Private-LinOpt-VI (Zhou 2022, Algorithm 1 + Def 6.2): UCRL-VTR with a private regularizer.

    ``privatizer``: ``"central"`` (JDP, binary-tree counters, Sec 6.1), ``"local"`` (LDP, derived —
    spec §3.4) or ``"none"`` (UCRL-VTR with ``λ = lam``, infinite budget); an infinite budget with
    any privatizer is exactly UCRL-VTR. ``calibration``: ``"tight"`` (default; the whole run as one
    Gaussian mechanism calibrated exactly, split across streams and steps to minimise the regret
    bound), ``"sound"`` (Thm 6.4's σ with replace-one sensitivities), ``"paper"`` (the printed
    sensitivities; labelled). ``tie_break``: lowest index or seeded random among maximisers.
    """

    _algorithm = "linopt-vi"
    tie_break: str = param("greedy tie-break among maximising actions (Algorithm 1 line 12)", default="lowest",
                           kind="option", options=("lowest", "random"))


class LinOptPO(_LinOpt):
    """Private-LinOpt-PO (Zhou 2022, Algorithm 2 + Def 6.3): OPPO with a private regularizer.

    Mirror-descent step ``eta`` (default ``√(2 ln|A|/(H²K))``, Sec 8). ``π^1`` uniform;
    ``π_h^{k+1}(·|s) ∝ π_h^k(·|s) exp(η Q_h^k(s,·))`` at every state, kept as
    ``softmax(η Σ_{j≤k} Q_h^j)`` with log-sum-exp. Other parameters as :class:`LinOptVI`.
    """

    _algorithm = "linopt-po"
    eta: float | None = param("mirror-descent step η (None: √(2 ln|A|/(H²K)), Sec 8)", default=None, low=0.0,
                              none_ok=True)

    def _begin(self, model: LinearMixtureMDP, K: int, p: dict[str, Any]) -> None:
        self.eta_ = cal.po_step_size(model.n_actions, K, model.horizon) if p["eta"] is None else float(p["eta"])

    def _bound(self, consts: cal.RegularityConstants, beta_p: ArrayLike, beta_r: ArrayLike, model: LinearMixtureMDP,
               K: int, alpha: float) -> float:
        return cal.po_regret_bound(consts, beta_p, beta_r, d1=model.d1, d2=model.d2, n_episodes=K,
                                   horizon=model.horizon, alpha=alpha, n_actions=model.n_actions)
