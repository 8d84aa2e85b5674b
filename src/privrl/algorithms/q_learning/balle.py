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

from typing import Any

import numpy as np

from privrl._rng import child_rngs
from privrl._validation import check_scalar, param_error
from privrl.base import Estimator, check_is_fitted
from privrl.privacy.accounting import ApproxDpEvent, Ledger
from privrl.privacy.budget import Neighboring, PrivacyBudget, PrivacyUnit

__all__ = ["BalleQLearning"]


class BalleQLearning(Estimator):
    """Utility reference of Figure 2 (module docstring). ``budget=None`` or infinite: LSW."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"
    label = "not DP under the reward-function model"

    def __init__(self, *, budget: PrivacyBudget | None = None, env: Any = "privrl/CenterWalk-v0",
                 n_samples: int = 5000, n_rounds: int = 10, n_bins: int = 10, gamma: float = 0.9,
                 explore: float = 0.1, r_max: float = 0.5) -> None:
        self.budget = budget
        self.env = env
        self.n_samples = n_samples
        self.n_rounds = n_rounds
        self.n_bins = n_bins
        self.gamma = gamma
        self.explore = explore
        self.r_max = r_max

    @property
    def is_private(self) -> bool:
        return self.budget is not None and self.budget.is_private

    def fit(self, env: Any = None, *, rng: Any = None) -> BalleQLearning:
        from privrl.algorithms.policy_evaluation import DPLSW, LSW
        from privrl.data import TrajectoryDataset
        from privrl.envs.center_walk import make_unit_env

        owner = "BalleQLearning"
        n = check_scalar(self.n_samples, "n_samples", owner=owner, kind=int, low=1)
        rounds = check_scalar(self.n_rounds, "n_rounds", owner=owner, kind=int, low=1, high=n)
        bins = check_scalar(self.n_bins, "n_bins", owner=owner, kind=int, low=1)
        gamma = check_scalar(self.gamma, "gamma", owner=owner, low=0.0, high=1.0, closed="left")
        explore = check_scalar(self.explore, "explore", owner=owner, low=0.0, high=1.0)
        r_max = check_scalar(self.r_max, "r_max", owner=owner, low=0.0, closed="neither")
        if self.budget is not None and not isinstance(self.budget, PrivacyBudget):
            raise param_error("budget", owner, "a PrivacyBudget or None", self.budget)
        env = make_unit_env(self.env) if env is None and isinstance(self.env, str) else (env or self.env)
        m = int(env.action_space.n)
        rngs = child_rngs(rng, "env", "policy", "privacy")
        f_max = r_max / (1.0 - gamma)
        q = np.zeros((bins, m))
        obs, _ = env.reset(seed=int(rngs["env"].integers(2**31 - 1)))
        returns, ep_ret = [], 0.0
        per_round = [len(c) for c in np.array_split(np.arange(n), rounds)]

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
                if not 0.0 <= r <= r_max:
                    from privrl.errors import InvalidDataError
                    raise InvalidDataError(f"Received reward {r!r} outside [0, r_max={r_max!r}].")
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
                if self.budget is not None and self.budget.is_private:
                    est = DPLSW(budget=self.budget, gamma=0.0, r_max=f_max, F_max=f_max, record_terminal=False)
                else:
                    est = LSW(gamma=0.0, r_max=f_max, F_max=f_max, record_terminal=False)
                est.fit(data, rng=rngs["privacy"])
                new_q[:, a] = est.values_
            q = new_q
        self.q_table_ = q
        self.returns_ = np.asarray(returns)
        budget = self.budget
        self.privacy_ledger_ = Ledger([ApproxDpEvent(float(budget.epsilon or 0.0), float(budget.delta or 0.0))]
                                      if budget is not None and budget.is_private else [])
        return self

    def release_q(self, states: Any) -> np.ndarray:
        check_is_fitted(self, "q_table_")
        x = np.asarray(states, float).reshape(-1)
        return self.q_table_[np.minimum((x * self.n_bins).astype(int), self.n_bins - 1)]
