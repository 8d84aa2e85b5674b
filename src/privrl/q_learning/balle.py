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

from typing import TYPE_CHECKING, Any

import numpy as np

from privrl._rng import child_rngs
from privrl._validation import param_error
from privrl.base import BUDGET, PrivateEstimator, check_is_fitted, param, use_noise
from privrl.data import TrajectoryDataset
from privrl.envs.center_walk import make_unit_env
from privrl.errors import InvalidDataError
from privrl.policy_evaluation import DPLSW, LSW
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit
from privrl.privacy.draws import NoiseDeclaration

if TYPE_CHECKING:
    import gymnasium as gym

__all__ = ["BalleQLearning"]


def _check_budget(value: Any, name: str, owner: str) -> Any:
    if value.is_private and (value.is_zcdp or not value.delta):
        raise param_error(name, owner, "an (epsilon, delta) budget with delta > 0 (DP-LSW, Lemma 1)", value)
    return value


class BalleQLearning(PrivateEstimator):
    """Utility reference of Figure 2 (module docstring). An infinite budget gives LSW regressions.

    Its noise is DP-LSW's own (the policy-evaluation family's release seam): every regression runs
    the estimator :class:`~privrl.policy_evaluation.DPLSW` (a noise source set with
    :func:`privrl.base.use_noise` is handed on to it), and by parallel composition over the
    disjoint transitions the run's ledger holds one regression's events."""

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
        override = self._noise_override
        extra = {k: p[k] for k in ("calibration", "secure") if k in p}
        f_max = r_max / (1.0 - gamma)
        q = np.zeros((bins, m))
        obs, _ = env.reset(seed=int(rngs["env"].integers(2**31 - 1)))
        returns, ep_ret = [], 0.0
        per_round = [len(c) for c in np.array_split(np.arange(n), rounds)]
        recorded = False

        def to_bin(x: Any) -> int:
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
                data = TrajectoryDataset(s, np.zeros(len(rows), int), y, s, np.arange(len(rows) + 1),
                                         n_states=bins, n_actions=1, reward_bounds=(0.0, f_max))
                est: Any
                if budget.is_private:
                    est = DPLSW(budget=budget, gamma=0.0, r_max=f_max, F_max=f_max, record_terminal=False, **extra)
                    if override is not None:
                        use_noise(est, override)
                else:
                    est = LSW(gamma=0.0, r_max=f_max, F_max=f_max, record_terminal=False)
                est.fit(data, rng=None if secure else rngs["privacy"])
                if budget.is_private and not recorded:   # parallel composition: one regression's events
                    for event in est.privacy_ledger_.events:   # drawn (and checked) in that fit's ledger
                        rel.record(event, noise=NoiseDeclaration("gaussian", None, None, external=True))
                    recorded = True
                new_q[:, a] = est.values_
            q = new_q
        self.q_table_ = q
        self.returns_ = np.asarray(returns)
        return self

    def release_q(self, states: Any) -> np.ndarray:
        """The released Q-table at states in [0, 1] (``(n,)`` or ``(n, 1)``): ``(n, m)``, the row of
        each state's bin."""
        check_is_fitted(self, "q_table_")
        x = np.asarray(states, float).reshape(-1)
        return self.q_table_[np.minimum((x * self.n_bins).astype(int), self.n_bins - 1)]

    def bin_centres(self) -> np.ndarray:
        """The centre of every state bin, ``(n_bins,)``: one state per row of the Q-table."""
        return (np.arange(self.n_bins) + 0.5) / self.n_bins

    def greedy_action(self, states: Any) -> np.ndarray:
        """argmax of :meth:`release_q` at ``states`` (post-processing of the release; ties go to the
        first action, where training breaks them at random)."""
        return np.argmax(self.release_q(states), axis=1)
