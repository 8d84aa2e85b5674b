"""Balle-style baseline of Wang & Hegde (2019, App. E.2): DP-LSW regressions inside policy iteration.

**Not differentially private under the reward-function model** (neighbours ``||r - r'||_inf <= 1``):
DP-LSW (Balle, Gomrokchi & Precup 2016, Algorithm 1) protects one *trajectory* replaced, and it
does not protect the values released at newly visited states ([N §4]). It is a utility reference.

Reconstruction (spec §5.5, A21): states are aggregated into ``n_bins`` equal bins of [0, 1]
(one-hot features); training runs ``n_rounds`` rounds of generalised policy iteration. In each
round the agent collects ``n_samples / n_rounds`` samples epsilon-greedily (``explore``) on the
current Q-table, then for every action ``a`` fits DP-LSW on the round's transitions with action
``a``, each transition a one-step trajectory (the "one-step MDP" of App. E.2, gamma = 0 inside
DP-LSW) whose reward is the bootstrapped target ``r + gamma_b max_a' Q(s', a')``, clipped to
``[0, F_max]`` with ``F_max = r_max / (1 - gamma_b)`` (public). Every transition is used in exactly
one regression, so by parallel composition the run is (epsilon, delta)-DP per transition — the
ledger holds one ``ApproxDpEvent(epsilon, delta)``, under ``PrivacyUnit.TRAJECTORY``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, child_rngs
from privrl._validation import param_error
from privrl.base import BUDGET, PrivateEstimator, check_is_fitted, param
from privrl.envs.center_walk import make_unit_env
from privrl.errors import InvalidDataError
from privrl.least_squares.mechanism import DPLSWMechanism, release_utility, warn_if_overspent, warn_utility
from privrl.least_squares.statistics import first_visit_statistics
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.draws import NoiseDeclaration
from privrl.privacy.noise import NoiseSource, make_noise
from privrl.privacy.release import Releaser

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = ["BalleQLearning"]


def _epsilon_delta(budget: PrivacyBudget, name: str, owner: str) -> tuple[float, float]:
    """(ε, δ) of a DP-LSW regression under ``budget``: the budget's, which must be an (ε, δ) budget
    with δ > 0 (Lemma 1), or (∞, 0.5) without privacy (δ then unused)."""
    if not budget.is_private:
        return math.inf, 0.5
    if budget.is_zcdp or budget.epsilon is None or not budget.delta:
        raise param_error(name, owner, "an (epsilon, delta) budget with delta > 0 (DP-LSW, Lemma 1)", budget)
    return float(budget.epsilon), float(budget.delta)


def _check_budget(value: Any, name: str, owner: str) -> Any:
    _epsilon_delta(value, name, owner)
    return value


def lsw_regression(states: np.ndarray, targets: np.ndarray, n_bins: int, f_max: float, budget: PrivacyBudget,
                   calibration: str, noise: NoiseSource | None, owner: str) -> tuple[np.ndarray, Ledger]:
    """One DP-LSW regression (Balle, Gomrokchi & Precup 2016, Algorithm 1) of ``targets`` in
    [0, F_max] on one-hot state bins, each transition a one-step trajectory (γ = 0, no terminal
    state): the bins' mean targets F_X (eq. 4), the uniformly weighted least-squares fit θ^w_X
    (eq. 8) and, under a private budget, θ^w_X + N(0, σ_X² I) with σ_X = α C √ψ^w_X, the smooth
    sensitivity bound of one trajectory replaced (Lemma 1; (α, β) by ``calibration``), drawn from
    ``noise`` into a ledger of its own, with DP-LSW's warnings (a ``PrivacyLeakWarning`` when the
    paper calibration overspends, a ``UtilityWarning`` for a degenerate release). An infinite budget
    gives the exact fit (LSW), an empty ledger. Returns (θ, ledger); with one-hot features θ is the
    bins' values."""
    m = len(states)
    stats = first_visit_statistics(states, targets, np.arange(m + 1), n_bins, 0.0, return_bound=f_max)
    epsilon, delta = _epsilon_delta(budget, "budget", owner)
    mech = DPLSWMechanism.create(features=np.eye(n_bins), weights=np.full(n_bins, 1.0 / n_bins), F_max=f_max,
                                 epsilon=epsilon, delta=delta, calibration=calibration, owner=owner)
    ledger = Ledger()
    if not budget.is_private:
        return mech.solve(stats), ledger
    if noise is None:   # pragma: no cover - the caller's error
        raise ValueError("a private regression needs a noise source")
    sigma = mech.noise_scale(stats.counts, m)   # data-dependent: drawn with, never stored
    theta = Releaser(noise, ledger).with_event(mech.solve(stats), std=sigma, event=mech.event)
    warn_if_overspent(mech, owner, stacklevel=3)   # as a DP-LSW fit warns: overspending, then utility
    warn_utility(release_utility(theta, f_max, mech, m, 1), mech, m, owner, stacklevel=3)
    return theta, ledger


class BalleQLearning(PrivateEstimator):
    """Utility reference of Figure 2 (module docstring). An infinite budget gives LSW regressions.

    Its noise is DP-LSW's own: every regression is :func:`lsw_regression`, the release step of
    DP-LSW (:class:`~privrl.least_squares.mechanism.DPLSWMechanism`, the shared layer the
    policy-evaluation family's :class:`~privrl.policy_evaluation.DPLSW` stands on too), each drawn
    from its own child of the privacy stream (or from a source set with
    :func:`privrl.base.use_noise`); by parallel composition over the disjoint transitions the run's
    ledger holds one regression's events."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"
    label = "not DP under the reward-function model"
    # 'calibration' and 'secure' (PrivateEstimator's) are DP-LSW's own switches, passed through
    budget: PrivacyBudget = param(like=BUDGET, help="the (epsilon, delta) budget of every DP-LSW regression (per "
                                  "transition); an infinite budget gives LSW", check=_check_budget)
    env: str | gym.Env = param("a Gymnasium id or gymnasium.Env on [0, 1]", default="privrl/CenterWalk-v0",
                               kind="object", cli=False)
    n_samples: int = param("environment samples", default=5000, kind="int", low=1)
    n_rounds: int = param("rounds of generalised policy iteration", default=10, kind="int", low=1)
    n_bins: int = param("equal state bins of [0, 1] (one-hot features)", default=10, kind="int", low=1)
    gamma: float = param("discount of the bootstrapped targets", default=0.9, low=0.0, high=1.0, closed="left")
    explore: float = param("epsilon-greedy exploration rate", default=0.1, low=0.0, high=1.0)
    r_max: float = param("public reward bound (rewards in [0, r_max])", default=0.5, low=0.0, closed="neither")

    def fit(self, env: Any = None, *, rng: Any = None) -> BalleQLearning:
        owner = "BalleQLearning"
        p = self._validated()
        rng = self._fit_rng(rng)
        n, rounds, bins = p["n_samples"], p["n_rounds"], p["n_bins"]
        if rounds > n:
            raise param_error("n_rounds", owner, f"an int in [1, n_samples = {n}]", rounds)
        gamma, explore, r_max = p["gamma"], p["explore"], p["r_max"]
        budget: PrivacyBudget = p["budget"]
        secure = bool(p.get("secure", False))
        env = env if env is not None else p["env"]
        env = make_unit_env(env) if isinstance(env, str) else env
        m = int(env.action_space.n)
        rngs = child_rngs(rng, "env", "policy", "privacy")
        rel = self._privacy(None if secure else rngs["privacy"])
        calibration = str(p.get("calibration", "tight"))
        f_max = r_max / (1.0 - gamma)
        q = np.zeros((bins, m))
        obs, _ = env.reset(seed=int(rngs["env"].integers(2**31 - 1)))
        returns, ep_ret = [], 0.0
        per_round = [len(c) for c in np.array_split(np.arange(n), rounds)]
        recorded = False

        def to_bin(x: ArrayLike) -> int:
            return min(int(float(np.asarray(x).ravel()[0]) * bins), bins - 1)

        for k in per_round:
            trans = []
            for _ in range(k):
                b = to_bin(obs)
                if rngs["policy"].random() < explore:
                    a = int(rngs["policy"].integers(m))
                else:
                    best = np.flatnonzero(q[b] == q[b].max())
                    a = int(rngs["policy"].choice(best))
                obs2, r, term, trunc, _ = env.step(a)
                if not 0.0 <= r <= r_max:   # the reward is private: never shown
                    raise InvalidDataError(f"{owner}: a received reward is outside [0, r_max]; declare a larger "
                                           "public bound (the 'r_max' parameter).")
                ep_ret += r
                trans.append((b, a, float(r), to_bin(obs2), bool(term)))
                if term or trunc:
                    returns.append(ep_ret)
                    ep_ret = 0.0
                    obs, _ = env.reset()
                else:
                    obs = obs2
            new_q = q.copy()
            for a in range(m):
                rows = [t for t in trans if t[1] == a]
                if not rows:
                    continue
                s = np.array([t[0] for t in rows])
                y = np.clip([t[2] + (0.0 if t[4] else gamma * q[t[3]].max()) for t in rows], 0.0, f_max)
                noise = self._regression_noise(rngs["privacy"], secure) if budget.is_private else None
                new_q[:, a], ledger = lsw_regression(s, y, bins, f_max, budget, calibration, noise, owner)
                if budget.is_private and not recorded:   # parallel composition: one regression's events
                    for event in ledger.events:            # drawn (and checked) in that regression's ledger
                        rel.record(event, noise=NoiseDeclaration("gaussian", None, None, external=True))
                    recorded = True
            q = new_q
        self.q_table_ = q
        self.returns_ = np.asarray(returns)
        return self

    def _regression_noise(self, privacy_rng: RngLike, secure: bool) -> NoiseSource:
        """The noise source of one regression: a source set with :func:`privrl.base.use_noise`, else
        OpenDP's (``secure``), else seeded NumPy from a fresh child of the run's privacy stream (one
        per regression, as a DP-LSW fit on that stream derives its own)."""
        own = None if secure else child_rngs(privacy_rng, "privacy")["privacy"]
        if self._noise_override is not None:
            return self._noise_override
        return make_noise(own, secure=secure, owner="BalleQLearning.fit")

    def release_q(self, states: ArrayLike) -> np.ndarray:
        """The released Q-table at states in [0, 1] (``(n,)`` or ``(n, 1)``): ``(n, m)``, the row of
        each state's bin."""
        check_is_fitted(self, "q_table_")
        x = np.asarray(states, float).reshape(-1)
        return self.q_table_[np.minimum((x * self.n_bins).astype(int), self.n_bins - 1)]

    def bin_centres(self) -> np.ndarray:
        """The centre of every state bin, ``(n_bins,)``: one state per row of the Q-table."""
        return (np.arange(self.n_bins) + 0.5) / self.n_bins

    def greedy_action(self, states: ArrayLike) -> np.ndarray:
        """argmax of :meth:`release_q` at ``states`` (post-processing of the release; ties go to the
        first action, where training breaks them at random)."""
        return np.argmax(self.release_q(states), axis=1)
