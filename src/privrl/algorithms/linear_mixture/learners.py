"""LinOpt-VI-Reg (Algorithm 1; private UCRL-VTR) and LinOpt-PO-Reg (Algorithm 2; private OPPO).

Both learners are thin shells over one kernel, :func:`~privrl.algorithms.linear_mixture.engine.fit_many`
(the online loop of Algorithms 1–2, for one run or many in lockstep; see that module for the
per-episode steps). The learner sees the data only through the regularizer's releases (billboard
lemma, Thm 6.4); the rollout is the user's side. Regret is the exact pseudo-regret
``V_1^*(s_1^k) − V_1^{π^k}(s_1^k)`` by dynamic programming on the true model every episode.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privrl._rng import RngLike
from privrl._validation import check_option, check_scalar, param_error
from privrl.algorithms.linear_mixture import calibration as cal
from privrl.algorithms.linear_mixture.engine import fit_many, plan_once, softmax
from privrl.algorithms.linear_mixture.regularizers import Regularizer, make_regularizer
from privrl.base import Estimator
from privrl.envs.linear_mixture import LinearMixtureMDP
from privrl.errors import InvalidDataError
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["LinOptVI", "LinOptPO", "optimistic_q", "resolve_model", "fit_many", "softmax"]

PRIVATIZERS = ("central", "local", "none")


def optimistic_q(Lam_p: np.ndarray, u_p: np.ndarray, Lam_r: np.ndarray, u_r: np.ndarray, psi_t: np.ndarray,
                 phi: np.ndarray, beta_p: float, beta_r: float, policy: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimistic backward induction (Algorithm 1 lines 3–11; Algorithm 2 lines 4–12) for one run.

    ``psi_t`` is ψ as ``(S, A, d1, S)``; ``policy`` ``(H, S, A)`` switches ``V`` from max (VI) to
    ``⟨π, Q⟩`` (PO). Returns ``(Q (H,S,A), V (H+1,S), feat (H,S,A,d1))``. The learners use the
    batched kernel of :mod:`.engine`; this is the same computation for a single set of statistics.
    """
    return plan_once((Lam_p, u_p, Lam_r, u_r), np.moveaxis(psi_t, 3, 2), phi, beta_p, beta_r, policy)


def resolve_model(env_or_model: Any, features: LinearMixtureMDP | None = None) -> tuple[LinearMixtureMDP, Any]:
    """``(linear mixture model with the known features, gym env or None)``.

    Accepts a :class:`LinearMixtureMDP`, or a gymnasium env whose ``unwrapped`` carries the known
    ``linear_mixture`` (the ``privrl/...LinearMixture...`` ids) or whose ``model`` is one; otherwise
    pass ``features=``.
    """
    if isinstance(env_or_model, LinearMixtureMDP):
        return env_or_model, None
    unwrapped = getattr(env_or_model, "unwrapped", None)
    if unwrapped is None or not hasattr(env_or_model, "step"):
        raise param_error("env", "LinOpt fit", "a LinearMixtureMDP or a gymnasium env", type(env_or_model).__name__)
    model = features or getattr(unwrapped, "linear_mixture", None)
    if model is None and isinstance(getattr(unwrapped, "model", None), LinearMixtureMDP):
        model = unwrapped.model
    if not isinstance(model, LinearMixtureMDP):
        raise param_error("features", "LinOpt fit",
                          "a LinearMixtureMDP with the env's known features (env.unwrapped.linear_mixture)",
                          model)
    return model, env_or_model


class _LinOpt(Estimator):
    """Shared shell of LinOptVI / LinOptPO (see module doc)."""

    privacy_unit = PrivacyUnit.USER_EPISODE
    neighboring = Neighboring.REPLACE_ONE
    _algorithm = "linopt"

    def __init__(self, *, n_episodes: int = 1000, privatizer: str = "central",
                 budget: PrivacyBudget = PrivacyBudget(epsilon=1.0, delta=1e-5), calibration: str = "sound",
                 alpha: float = 0.05, lam: float = 1.0, beta_scale: float = 1.0, shift_scale: float = 1.0,
                 upsilon: str = "theory", sigma_rule: str = "paper", tie_break: str = "lowest",
                 clip_inputs: bool = False) -> None:
        self.n_episodes = n_episodes
        self.privatizer = privatizer
        self.budget = budget
        self.calibration = calibration
        self.alpha = alpha
        self.lam = lam
        self.beta_scale = beta_scale
        self.shift_scale = shift_scale
        self.upsilon = upsilon
        self.sigma_rule = sigma_rule
        self.tie_break = tie_break
        self.clip_inputs = clip_inputs

    # -- privacy declaration follows the privatizer (instance-level override of the class attribute)
    @property
    def guarantee(self) -> str | None:  # type: ignore[override]
        if isinstance(self.privatizer, Regularizer):
            return self.privatizer.guarantee
        return {"central": "JDP", "local": "LDP"}.get(self.privatizer)

    # -- validation
    def _validate(self) -> None:
        owner = type(self).__name__
        check_scalar(self.n_episodes, "n_episodes", owner=owner, kind=int, low=1)
        if not isinstance(self.privatizer, Regularizer):
            check_option(self.privatizer, "privatizer", PRIVATIZERS, owner=owner)
        if not isinstance(self.budget, PrivacyBudget) or self.budget.rho is not None:
            raise param_error("budget", owner, "a PrivacyBudget(epsilon, delta)", self.budget)
        if self.budget.is_private and not 0 < (self.budget.delta or 0.0) < 1:
            raise param_error("budget", owner, "a budget with delta in (0, 1) (Gaussian noise)", self.budget)
        check_option(self.calibration, "calibration", ("sound", "paper"), owner=owner)
        check_scalar(self.alpha, "alpha", owner=owner, low=0.0, high=1.0, closed="right")
        check_scalar(self.lam, "lam", owner=owner, low=0.0, closed="neither")
        check_scalar(self.beta_scale, "beta_scale", owner=owner, low=0.0)
        check_scalar(self.shift_scale, "shift_scale", owner=owner, low=0.5, closed="neither")
        check_option(self.upsilon, "upsilon", ("theory", "monte_carlo"), owner=owner)
        check_option(self.sigma_rule, "sigma_rule", ("paper", "zcdp"), owner=owner)
        check_option(self.tie_break, "tie_break", ("lowest", "random"), owner=owner)

    def _make_regularizer(self, model: LinearMixtureMDP) -> Regularizer:
        if isinstance(self.privatizer, Regularizer):
            return self.privatizer
        L_phi = math.sqrt(model.d1) * model.horizon
        bound = model.value_feature_bound()
        if bound > L_phi * (1 + 1e-9):
            raise InvalidDataError(f"{type(self).__name__}: the model's value-targeted features reach norm {bound:g} "
                                   f"> sqrt(d1) H = {L_phi:g} (Assumption 1), which the sensitivity relies on.")
        kw: dict[str, Any] = {"clip_inputs": self.clip_inputs}
        if self.privatizer != "none":
            kw.update(calibration=self.calibration, sigma_rule=self.sigma_rule, upsilon=self.upsilon,
                      shift_scale=self.shift_scale, alpha=self.alpha)
        return make_regularizer(self.privatizer, budget=self.budget, lam=self.lam, **kw)

    # -- the online loop
    def fit(self, env: Any, *, rng: RngLike = None, features: LinearMixtureMDP | None = None,
            callback: Any = None) -> _LinOpt:
        """Run K episodes online on ``env`` (a :class:`LinearMixtureMDP` or a gymnasium env with known
        features); sets ``regret_`` (per-episode exact pseudo-regret), ``cumulative_regret_``,
        ``policy_``, ``theta_p_``, ``theta_r_``, ``beta_p_``, ``beta_r_``, ``constants_``,
        ``regret_bound_``, ``privacy_ledger_``. ``callback(k, Q=, V=, policy=, stats=)``, if given, sees
        what the learner holds in episode k (released statistics only) — for diagnostics and tests.
        Many runs at once: :func:`~privrl.algorithms.linear_mixture.engine.fit_many`."""
        fit_many([self], [env], [rng], features=features, callback=callback)
        return self

    def _bound(self, consts, beta_p, beta_r, model, K) -> float:
        return cal.vi_regret_bound(consts, beta_p, beta_r, d1=model.d1, d2=model.d2, n_episodes=K,
                                   horizon=model.horizon, alpha=self.alpha)

    # -- hooks overridden by PO
    def _begin(self, model: LinearMixtureMDP, K: int) -> None:
        pass


class LinOptVI(_LinOpt):
    """Private-LinOpt-VI (Zhou 2022, Algorithm 1 + Def 6.2): UCRL-VTR with a Regularizer.

    ``privatizer``: ``"central"`` (JDP, binary-tree counters, Sec 6.1), ``"local"`` (LDP, derived —
    spec §3.4) or ``"none"`` (UCRL-VTR with ``λ = lam``); an infinite ``budget`` is exactly
    UCRL-VTR. ``calibration="paper"`` uses the printed add/remove sensitivities (labelled).
    Data-independent knobs that do not touch privacy: ``beta_scale`` (multiplies β_p, β_r),
    ``shift_scale`` (shift ``2c·Υ``, c > 1/2), ``upsilon="monte_carlo"`` (tighter public Υ);
    ``sigma_rule="zcdp"`` changes σ but still meets the budget (tighter accountant).
    """

    _algorithm = "linopt-vi"


class LinOptPO(_LinOpt):
    """Private-LinOpt-PO (Zhou 2022, Algorithm 2 + Def 6.3): OPPO with a Regularizer.

    Mirror-descent step ``eta`` (default ``√(2 ln|A|/(H²K))``, Sec 8). ``π^1`` uniform;
    ``π_h^{k+1}(·|s) ∝ π_h^k(·|s) exp(η Q_h^k(s,·))`` at every state, kept as
    ``softmax(η Σ_{j≤k} Q_h^j)`` with log-sum-exp. Other parameters as :class:`LinOptVI`.
    """

    _algorithm = "linopt-po"

    def __init__(self, *, n_episodes: int = 1000, privatizer: str = "central",
                 budget: PrivacyBudget = PrivacyBudget(epsilon=1.0, delta=1e-5), calibration: str = "sound",
                 alpha: float = 0.05, lam: float = 1.0, beta_scale: float = 1.0, shift_scale: float = 1.0,
                 upsilon: str = "theory", sigma_rule: str = "paper", eta: float | None = None,
                 clip_inputs: bool = False) -> None:
        super().__init__(n_episodes=n_episodes, privatizer=privatizer, budget=budget, calibration=calibration,
                         alpha=alpha, lam=lam, beta_scale=beta_scale, shift_scale=shift_scale, upsilon=upsilon,
                         sigma_rule=sigma_rule, clip_inputs=clip_inputs)
        self.eta = eta

    def _validate(self) -> None:
        super()._validate()
        if self.eta is not None:
            check_scalar(self.eta, "eta", owner="LinOptPO", low=0.0)

    def _begin(self, model: LinearMixtureMDP, K: int) -> None:
        H, S, A = model.horizon, model.n_states, model.n_actions
        self.eta_ = cal.po_step_size(A, K, H) if self.eta is None else float(self.eta)
        self._logits = np.zeros((H, S, A))
        self._pi = np.full((H, S, A), 1.0 / A)

    def _bound(self, consts, beta_p, beta_r, model, K) -> float:
        return cal.po_regret_bound(consts, beta_p, beta_r, d1=model.d1, d2=model.d2, n_episodes=K,
                                   horizon=model.horizon, alpha=self.alpha, n_actions=model.n_actions)


class _Rollout:
    """The user's side: runs one episode of a policy on the model (fast path) or on a gym env."""

    def __init__(self, model: LinearMixtureMDP, env: Any, rng: np.random.Generator) -> None:
        self.model, self.env, self.rng = model, env, rng
        P = model.transitions()
        self.cum_P = np.cumsum(P, axis=-1)
        self.r = model.mean_rewards()
        self.cum_init = np.cumsum(model.initial)
        self.bernoulli = model.reward_noise == "bernoulli"
        self._reset_seed: int | None = int(rng.integers(2**31)) if env is not None else None

    def episode(self, policy: np.ndarray, prng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        H = self.model.horizon
        stochastic = policy.ndim == 3
        act_u = prng.random(H) if stochastic else None
        s = np.empty(H + 1, dtype=np.intp)
        a = np.empty(H, dtype=np.intp)
        rew = np.empty(H)
        if self.env is not None:
            obs, _ = self.env.reset(seed=self._reset_seed)
            self._reset_seed = None
            s[0] = int(obs)
            for h in range(H):
                a[h] = _act(policy, h, s[h], act_u)
                obs, reward, _, _, _ = self.env.step(int(a[h]))
                s[h + 1], rew[h] = int(obs), float(reward)
            return s, a, rew
        u = self.rng.random((H + 1, 2))
        s[0] = min(int(np.searchsorted(self.cum_init, u[H, 0], side="right")), len(self.cum_init) - 1)
        for h in range(H):
            x = s[h]
            act = _act(policy, h, x, act_u)
            a[h] = act
            cp = self.cum_P[h, x, act]
            s[h + 1] = min(int(np.searchsorted(cp, u[h, 0], side="right")), len(cp) - 1)
            mean = self.r[h, x, act]
            rew[h] = float(u[h, 1] < mean) if self.bernoulli else mean
        return s, a, rew


def _act(policy: np.ndarray, h: int, x: int, act_u: np.ndarray | None) -> int:
    if act_u is None:
        return int(policy[h, x])
    cdf = np.cumsum(policy[h, x])
    return min(int(np.searchsorted(cdf, act_u[h] * cdf[-1], side="right")), len(cdf) - 1)
