"""Sparse tabular MDPs of realistic size: :class:`SparseTabularMDP` and the clinic-shaped benchmark
task :func:`sparse_tabular`.

A :class:`SparseTabularMDP` is episodic (horizon ``H``) and time-homogeneous, and lists for every
pair ``(s, a)`` at most ``k`` next states with their probabilities (``next_states``, ``probs``
``(S, A, k)``), so a model with 750 states and 25 actions takes a few MB where the dense
``(S, A, S)`` kernel would take 112 MB and the ``(H, S, A, S)`` one 2.2 GB. Rewards are *outcome*
rewards: ``entry_reward[s']`` is received on entering ``s'`` from a non-terminal state (1 on
reaching success); the expected reward table is ``r(s, a) = Σ_{s'} P(s'|s, a)·entry_reward[s']``
(0 in terminal states, which are absorbing). Episodes end on entering a terminal state or after
``H`` steps, so sampled datasets have variable-length episodes; ``pad_to_horizon=H`` gives the
fixed-horizon form the offline algorithms need.

Exact solvers run the shared finite-horizon kernel (:func:`privrl.envs.finite.backward_induction`)
on the sparse kernel: ``P V`` is a gather over the ``k`` listed next states, ``O(H·S·A·k)`` time and
``O(H·S·A)`` memory (the ``(H, S, A)`` Q-table). Policies are the arrays of
:class:`~privrl.envs.tabular.TabularMDP`: int ``(S,)``/``(H, S)`` or float ``(S, A)``/``(H, S, A)``.

:func:`sparse_tabular` builds the benchmark task (module docstring of the function): a clinic with
latent severity levels, a public state grouping (the level), clinicians' logging policy close to
uniform over a few admissible actions, and an optimal policy about 0.09 better in success
probability.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from privrl._rng import RngLike, as_generator
from privrl._validation import check_scalar, param_error
from privrl.data.trajectories import TrajectoryDataset
from privrl.envs.finite import backward_induction
from privrl.envs.sampling import sample_dataset
from privrl.envs.tabular import (
    PROBABILITY_ATOL,
    TabularMDP,
    _check_distribution_rows,
    _data_array,
    policy_probabilities,
)
from privrl.errors import InvalidDataError

__all__ = ["SparseTabularMDP", "sparse_tabular", "DENSE_LIMIT"]

_OWNER = "SparseTabularMDP"

#: Largest dense kernel ``S·A·S`` (entries) that :meth:`SparseTabularMDP.to_tabular` builds by default.
DENSE_LIMIT = 10_000_000


class SparseTabularMDP:
    """A time-homogeneous episodic MDP with a sparse kernel and outcome rewards (module docstring).

    Parameters
    ----------
    next_states, probs
        ``(S, A, k)``: the next states each pair can reach and their probabilities (rows sum to
        one; a listed state with probability 0 is never drawn; a state may be listed twice).
    horizon
        Episode length ``H``.
    entry_reward
        ``(S,)`` reward received on entering each state from a non-terminal state.
    initial
        ``(S,)`` initial distribution (default uniform over non-terminal states).
    terminal_states
        ``(S,)`` bool mask of absorbing states (every action stays; episodes end on entering one).
    groups
        Optional public ``(S,)`` int map of states to groups (fixed by the model, never by data).
    logging_policy, admissible
        Optional ``(S, A)`` behaviour policy of the logged data and bool mask of the actions it uses
        (public descriptions of the task; :func:`sparse_tabular` sets both).
    name
        A label for ``repr`` and dataset metadata.
    """

    def __init__(self, next_states: ArrayLike, probs: ArrayLike, *, horizon: int, entry_reward: ArrayLike,
                 initial: ArrayLike | None = None, terminal_states: ArrayLike | None = None,
                 groups: ArrayLike | None = None, logging_policy: ArrayLike | None = None,
                 admissible: ArrayLike | None = None, name: str | None = None) -> None:
        probs = _data_array(probs, "probs", owner=_OWNER, ndim=3)
        S, A, k = probs.shape
        nxt = np.asarray(next_states)
        if nxt.shape != (S, A, k) or nxt.dtype.kind not in "iu" or (nxt.size and (nxt.min() < 0 or nxt.max() >= S)):
            raise InvalidDataError(f"The 'next_states' field of {_OWNER} must be an int array of shape {(S, A, k)} "
                                   f"with states in [0, {S - 1}]. Got {nxt.dtype} of shape {nxt.shape} instead.")
        _check_distribution_rows(probs, "probs", _OWNER)
        self._H = check_scalar(horizon, "horizon", owner=_OWNER, kind=int, low=1)
        reward = _data_array(entry_reward, "entry_reward", owner=_OWNER, shape=(S,))
        term = np.zeros(S, dtype=bool) if terminal_states is None else np.asarray(terminal_states)
        if term.dtype != bool or term.shape != (S,):
            raise InvalidDataError(f"The 'terminal_states' field of {_OWNER} must be a bool array of shape ({S},). "
                                   f"Got dtype {term.dtype} and shape {term.shape} instead.")
        idx = np.flatnonzero(term)
        stay = (probs[idx] * (nxt[idx] == idx[:, None, None])).sum(axis=-1)
        if not np.allclose(stay, 1.0, atol=PROBABILITY_ATOL, rtol=0):
            raise InvalidDataError(f"The 'terminal_states' field of {_OWNER} must mark absorbing states (every "
                                   "action stays with probability 1). Got a terminal state that is not absorbing "
                                   "instead.")
        if term.all():
            raise InvalidDataError(f"The 'terminal_states' field of {_OWNER} must leave a non-terminal state.")
        if initial is None:
            initial = (~term).astype(float) / float((~term).sum())
        init = _data_array(initial, "initial", owner=_OWNER, shape=(S,))
        _check_distribution_rows(init, "initial", _OWNER)
        if np.any(init[term] > 0):
            raise InvalidDataError(f"The 'initial' field of {_OWNER} must put zero mass on terminal states.")
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (S,) or groups.dtype.kind not in "iu" or groups.min() < 0:
                raise InvalidDataError(f"The 'groups' field of {_OWNER} must be a non-negative int array of shape "
                                       f"({S},). Got {groups.dtype} of shape {groups.shape} instead.")
            groups = _readonly(groups.astype(np.int64))
        self._next = _readonly(nxt.astype(np.int64))
        self._probs = _readonly(probs / probs.sum(axis=-1, keepdims=True))
        self._entry = _readonly(reward)
        r = (self._probs * reward[self._next]).sum(axis=-1)
        r[term] = 0.0
        self._r = _readonly(r)
        self._initial = _readonly(init / init.sum())
        self._terminal = _readonly(term)
        self._groups = groups
        self.logging_policy = None if logging_policy is None else _readonly(
            policy_probabilities(np.asarray(logging_policy, dtype=float), S, A, None, owner=_OWNER))
        if admissible is not None:
            admissible = np.asarray(admissible)
            if admissible.shape != (S, A) or admissible.dtype != bool:
                raise InvalidDataError(f"The 'admissible' field of {_OWNER} must be a bool array of shape ({S}, {A}).")
            admissible = _readonly(admissible)
        self.admissible = admissible
        self._reward_bounds = (min(0.0, float(reward.min())), max(0.0, float(reward.max())))
        self.name = name
        self._optimal: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def n_states(self) -> int:
        """The number of states S."""
        return int(self._probs.shape[0])

    @property
    def n_actions(self) -> int:
        """The number of actions A."""
        return int(self._probs.shape[1])

    @property
    def horizon(self) -> int:
        """Episode length H."""
        return self._H

    @property
    def gamma(self) -> None:
        """None: the model is episodic (undiscounted)."""
        return None

    @property
    def is_episodic(self) -> bool:
        """True: episodes have the horizon H."""
        return True

    @property
    def is_stationary(self) -> bool:
        """True: the dynamics do not depend on the step."""
        return True

    @property
    def next_states(self) -> np.ndarray:
        """``(S, A, k)`` listed next states."""
        return self._next

    @property
    def probs(self) -> np.ndarray:
        """``(S, A, k)`` their probabilities."""
        return self._probs

    @property
    def entry_reward(self) -> np.ndarray:
        """``(S,)`` reward of entering each state."""
        return self._entry

    @property
    def reward_table(self) -> np.ndarray:
        """``(S, A)`` expected reward ``E[entry_reward(s')|s, a]``."""
        return self._r

    @property
    def initial(self) -> np.ndarray:
        """``(S,)`` initial-state distribution."""
        return self._initial

    @property
    def terminal_states(self) -> np.ndarray:
        """``(S,)`` bool mask of absorbing states."""
        return self._terminal

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """``(low, high)`` of the logged rewards."""
        return self._reward_bounds

    @property
    def groups(self) -> np.ndarray | None:
        """Public ``(S,)`` state groups (or None)."""
        return self._groups

    @property
    def n_groups(self) -> int:
        return 0 if self._groups is None else int(self._groups.max()) + 1

    @property
    def r(self) -> np.ndarray:
        """Expected rewards ``(H, S, A)`` (a read-only broadcast view of :attr:`reward_table`)."""
        return np.broadcast_to(self._r, (self._H, *self._r.shape))

    @property
    def max_next_states(self) -> int:
        return int(self._probs.shape[2])

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"SparseTabularMDP({label}S={self.n_states}, A={self.n_actions}, horizon={self._H})"

    def transition_matrix(self) -> object:
        """The kernel as a ``scipy.sparse`` CSR matrix ``(S·A, S)`` (row ``s·A + a``)."""
        from scipy.sparse import csr_matrix

        S, A, k = self._probs.shape
        rows = np.repeat(np.arange(S * A), k)
        out = csr_matrix((self._probs.ravel(), (rows, self._next.ravel())), shape=(S * A, S))
        out.eliminate_zeros()
        return out

    # ------------------------------------------------------------------ exact solvers
    def policy_probabilities(self, policy: object) -> np.ndarray:
        """The policy as ``(H, S, A)`` action probabilities (a stationary one broadcast, no copy)."""
        return policy_probabilities(policy, self.n_states, self.n_actions, self._H, owner=_OWNER)

    def _expect(self, V: np.ndarray) -> np.ndarray:
        """``P V`` ``(S, A)``: a gather over the listed next states."""
        return np.einsum("sak,sak->sa", self._probs, V[self._next])

    def _solve(self, policy: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        Q, V = backward_induction([self._expect] * self._H, [self._r] * self._H, policy)
        V[self._H] = np.zeros(self.n_states)   # callables leave V_H to the caller
        return np.stack(Q), np.stack(V)

    def evaluate_q(self, policy: object) -> np.ndarray:
        """Q^π ``(H, S, A)`` by backward induction."""
        return self._solve(self.policy_probabilities(policy))[0]

    def evaluate(self, policy: object) -> np.ndarray:
        """V^π ``(H+1, S)`` (last row 0) by backward induction."""
        return self._solve(self.policy_probabilities(policy))[1]

    def value(self, policy: object) -> float:
        """Expected return (success probability) from the initial distribution: ``initial · V^π_0``."""
        return float(self._initial @ self.evaluate(policy)[0])

    def _optimum(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._optimal is None:
            Q, V = self._solve()
            self._optimal = (_readonly(Q), _readonly(V), _readonly(Q.argmax(axis=2)))
        return self._optimal

    def optimal_q(self) -> np.ndarray:
        return self._optimum()[0].copy()

    def optimal_values(self) -> np.ndarray:
        return self._optimum()[1].copy()

    def optimal_policy(self) -> np.ndarray:
        """A deterministic optimal policy ``(H, S)`` (lowest action index among ties)."""
        return self._optimum()[2].copy()

    def optimal_value(self) -> float:
        return float(self._initial @ self._optimum()[1][0])

    # ------------------------------------------------------------------ sampling and conversion
    def sample(self, policy: object, n_episodes: int, *, rng: RngLike = None, max_steps: int | None = None,
               pad_to_horizon: int | None = None) -> TrajectoryDataset:
        """``n_episodes`` episodes of ``policy`` as a :class:`~privrl.data.TrajectoryDataset`.

        Episodes end on entering a terminal state (flagged in ``terminals``) or after ``max_steps``
        (default ``H``) steps; the logged reward is the outcome reward ``entry_reward[s']``.
        ``pad_to_horizon=H`` pads episodes that terminated early with absorbing zero-reward steps
        (the fixed-horizon form of APVI/DP-APVI). A callable policy ``(obs, step, rng) -> action``
        is called per episode and step. Draw order as :class:`~privrl.envs.tabular.TabularMDP`."""
        kernel = {"cum_P": np.cumsum(self._probs, axis=-1)[None], "next_states": self._next[None],
                  "reward_at": None, "entry_reward": self._entry}
        return sample_dataset(self, policy, n_episodes, kernel, rng=rng, max_steps=max_steps,
                              pad_to_horizon=pad_to_horizon, owner="SparseTabularMDP.sample")

    def to_tabular(self, *, max_entries: int = DENSE_LIMIT) -> TabularMDP:
        """The same model as a dense :class:`~privrl.envs.tabular.TabularMDP` (stationary ``(S, A, S)``
        kernel, expected rewards ``r``; its sampler logs expected rather than outcome rewards, the
        values are the same). Refused when ``S·A·S > max_entries``."""
        S, A = self.n_states, self.n_actions
        max_entries = check_scalar(max_entries, "max_entries", owner=f"{_OWNER}.to_tabular", kind=int, low=1)
        if S * A * S > max_entries:
            raise param_error("max_entries", f"{_OWNER}.to_tabular",
                              f"at least S·A·S = {S * A * S} for a dense kernel of this model "
                              f"({S * A * S * 8 / 2**20:.0f} MB; the sparse model solves and samples without it)",
                              max_entries)
        P = np.zeros((S, A, S))
        np.add.at(P, (np.arange(S)[:, None, None], np.arange(A)[None, :, None], self._next), self._probs)
        return TabularMDP(P, self._r, horizon=self._H, initial=self._initial, terminal_states=self._terminal,
                          reward_bounds=self._reward_bounds, name=self.name)


def _unit_uniform(gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform on [−√3, √3]: mean 0, variance 1."""
    return math.sqrt(3.0) * (2.0 * gen.random(shape) - 1.0)


def _readonly(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, copy=True)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------- the benchmark task
#: Outcome logits of a transient state at severity x ∈ [0, 19] under an action of quality q:
#: success a_s − b_s·x + q, better level a_b + q, same level 0, worse level a_w − q, failure
#: a_f + b_f·x − q (tuned once so that the logging policy succeeds about 0.76 of the time, the
#: optimum about 0.85, and a certainty-equivalence planner on 10⁵ logged episodes finds +0.08).
_LOGITS = {"a_s": 2.3, "b_s": 0.35, "a_b": 0.3, "a_w": -0.6, "a_f": -4.0, "b_f": 0.12}
#: listed next states per (s, a): one better level, the same level, one worse level (+ success, failure)
_SLOTS = (3, 2, 3)
_BAD_ACTION = -1.5       # mean quality of a non-admissible action
_STATE_JITTER = 0.15     # per-(s, a) deviation of the quality from its level's


def sparse_tabular(*, n_states: int = 750, n_actions: int = 25, horizon: int = 20, n_levels: int = 20,
                   n_admissible: int = 4, quality_spread: float = 0.25, logging_tilt: float = 0.3,
                   rng: RngLike = 0) -> SparseTabularMDP:
    """A clinic-shaped benchmark task of realistic size (seeded by ``rng``).

    * **States**: ``n_states − 2`` patient states in ``n_levels`` latent severity levels (level 0
      the mildest; states ordered by level), then the absorbing **success** (``n_states − 2``) and
      **failure** (``n_states − 1``) states. Reward 1 on reaching success (an outcome reward).
    * **Dynamics** (time-homogeneous): from a state of level ℓ, action ``a`` leads to success, to a
      better level ℓ−1, the same level, a worse level ℓ+1, or failure with probabilities from
      logits that depend on the severity and on the action's quality ``q(ℓ, a)`` (plus a small
      per-state deviation); within a level the next state is one of 3 (better), 2 (same) or 3
      (worse) states drawn for the pair, with Dirichlet weights: at most 10 next states per pair.
      Reaching the better level from level 0 is success, the worse level from the last is failure.
    * **Groups** (public, fixed by the construction): ``groups[s]`` is the level of ``s``, success
      is group ``n_levels`` and failure ``n_levels + 1``. States of a group share their actions'
      qualities, so aggregating by group is a sensible public choice.
    * **Admissible actions**: ``n_admissible`` actions per level (``admissible`` ``(S, A)`` bool),
      of quality uniform with mean 0 and standard deviation ``quality_spread``; the others are
      markedly worse (mean −1.5).
    * **Logging policy** (the clinicians'): ``logging_policy`` ``(S, A)``, ``∝ exp(logging_tilt·q)``
      over the admissible actions — barely better than uniform over them (action 0 in the
      absorbing states, as padding uses).
    * **Initial states** uniform over the patient states.

    With the defaults (S = 750, A = 25, H = 20, 20 levels, ``rng=0``) the logging policy's success
    probability is 0.760 (uniform over the admissible actions: 0.753) and the optimum's 0.853; a
    non-private certainty-equivalence planner on 10⁵ logged episodes (about 6 steps each; counts
    pooled over steps) reaches 0.844.
    """
    owner = "sparse_tabular"
    S = check_scalar(n_states, "n_states", owner=owner, kind=int, low=8)
    A = check_scalar(n_actions, "n_actions", owner=owner, kind=int, low=1)
    H = check_scalar(horizon, "horizon", owner=owner, kind=int, low=1)
    L = check_scalar(n_levels, "n_levels", owner=owner, kind=int, low=2)
    k_adm = check_scalar(n_admissible, "n_admissible", owner=owner, kind=int, low=1, high=A)
    spread = check_scalar(quality_spread, "quality_spread", owner=owner, low=0.0)
    tilt = check_scalar(logging_tilt, "logging_tilt", owner=owner, low=0.0)
    T = S - 2
    if T < max(_SLOTS) * L:
        raise param_error("n_states", owner, f"an int >= {max(_SLOTS) * L + 2} (at least {max(_SLOTS)} patient "
                          f"states per level with n_levels={L})", S)
    gen = as_generator(rng)
    level = np.repeat(np.arange(L), np.diff(np.linspace(0, T, L + 1).round().astype(int)))
    admissible_level, q = _action_qualities(gen, level, A, k_adm, spread)
    nxt, prob = _sparse_kernel(gen, level, _outcome_probabilities(level, q))
    entry = np.zeros(S)
    entry[T] = 1.0                                                          # success
    terminal = np.zeros(S, dtype=bool)
    terminal[[T, T + 1]] = True
    groups = np.concatenate([level, [L, L + 1]])
    admissible = np.zeros((S, A), dtype=bool)
    admissible[:T] = admissible_level[level]
    admissible[T:, 0] = True
    label = f", rng={int(rng)}" if isinstance(rng, (int, np.integer)) else ""
    return SparseTabularMDP(nxt, prob, horizon=H, entry_reward=entry, terminal_states=terminal, groups=groups,
                            logging_policy=_logging_policy(admissible, q, tilt), admissible=admissible,
                            name=f"sparse_tabular(S={S}, A={A}, H={H}{label})")


def _action_qualities(gen: np.random.Generator, level: np.ndarray, A: int, k_adm: int,
                      spread: float) -> tuple[np.ndarray, np.ndarray]:
    """``(admissible_level (L, A) bool, q (T, A))``: ``k_adm`` admissible actions drawn per level, the
    level's action qualities (mean 0 if admissible, :data:`_BAD_ACTION` if not, standard deviation
    ``spread``) and each patient state's qualities (its level's plus :data:`_STATE_JITTER` noise)."""
    L = int(level.max()) + 1
    admissible_level = np.zeros((L, A), dtype=bool)
    for lv in range(L):
        admissible_level[lv, gen.choice(A, k_adm, replace=False)] = True
    # centred uniform draws of the stated standard deviations (data of the model, not privacy noise)
    quality = np.where(admissible_level, 0.0, _BAD_ACTION) + spread * _unit_uniform(gen, (L, A))
    q = quality[level] + _STATE_JITTER * _unit_uniform(gen, (level.size, A))
    return admissible_level, q


def _outcome_probabilities(level: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``(T, A, 5)`` probabilities of success, better level, same level, worse level and failure
    (softmax of :data:`_LOGITS` at each state's severity and action quality)."""
    L = int(level.max()) + 1
    x = (level * (19.0 / (L - 1)))[:, None]                                 # severity on the tuned scale
    c = _LOGITS
    logits = np.stack(np.broadcast_arrays(c["a_s"] - c["b_s"] * x + q, c["a_b"] + q, np.zeros_like(q),
                                          c["a_w"] - q, c["a_f"] + c["b_f"] * x - q), axis=-1)
    outcome = np.exp(logits - logits.max(axis=-1, keepdims=True))
    outcome /= outcome.sum(axis=-1, keepdims=True)
    return outcome


def _sparse_kernel(gen: np.random.Generator, level: np.ndarray, outcome: np.ndarray,
                   widths: tuple[int, ...] = _SLOTS) -> tuple[np.ndarray, np.ndarray]:
    """``(next_states, probs)`` ``(S, A, k)`` with ``S = T + 2``: slot 0 success, slot 1 failure, then
    ``widths`` (default :data:`_SLOTS`) next states drawn in the better, same and worse level with
    Dirichlet weights of the outcome's mass (moving past level 0 is success, past the last level
    failure). Shared with :func:`privrl.envs.real_shaped.real_shaped`."""
    T, A = outcome.shape[:2]
    L = int(level.max()) + 1
    S, success, failure = T + 2, T, T + 1
    members = [np.flatnonzero(level == lv) for lv in range(L)]
    k = 2 + sum(widths)
    nxt = np.empty((S, A, k), dtype=np.int64)
    prob = np.zeros((S, A, k))
    nxt[:] = np.arange(S)[:, None, None]                                   # unused slots: probability 0
    nxt[:T, :, 0], prob[:T, :, 0] = success, outcome[..., 0]
    nxt[:T, :, 1], prob[:T, :, 1] = failure, outcome[..., 4]
    prob[success, :, 0] = prob[failure, :, 0] = 1.0                         # absorbing
    col = 2
    for shift, width, which in zip((-1, 0, 1), widths, (1, 2, 3)):
        for lv in range(L):
            rows = members[lv]
            mass = outcome[rows, :, which]                                  # (m, A)
            target = lv + shift
            if target < 0:
                prob[rows, :, 0] += mass
                continue
            if target >= L:
                prob[rows, :, 1] += mass
                continue
            pool = members[target]
            pick = gen.random((rows.size, A, pool.size)).argsort(axis=-1)[..., :width]
            nxt[rows, :, col:col + width] = pool[pick]
            prob[rows, :, col:col + width] = mass[..., None] * gen.dirichlet(np.ones(width), size=(rows.size, A))
        col += width
    return nxt, prob


def _logging_policy(admissible: np.ndarray, q: np.ndarray, tilt: float) -> np.ndarray:
    """``(S, A)`` clinicians' policy: ``∝ exp(tilt·q)`` over the admissible actions of each patient
    state, action 0 in the absorbing states."""
    T = q.shape[0]
    logging = np.zeros(admissible.shape)
    weight = np.where(admissible[:T], np.exp(tilt * (q - q.max(axis=1, keepdims=True))), 0.0)
    logging[:T] = weight / weight.sum(axis=1, keepdims=True)
    logging[T:, 0] = 1.0
    return logging
