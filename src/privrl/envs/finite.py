"""The finite-horizon kernels every model shares: backward induction and inverse-CDF sampling.

* :func:`backward_induction` — ``Q_h = r_h + P_h V_{h+1}``, ``V_h = value(h, Q_h)``, ``V_H = 0``:
  the optimum (max over actions), the evaluation of a deterministic or stochastic policy, or any
  per-step choice (``value``). Steps may differ in their state sets (``P_h`` ``(…, S_h, A, S_{h+1})``)
  and carry leading batch axes (many runs at once); a step may also be given as a callable
  ``V_{h+1} ↦ P_h V_{h+1}`` in the caller's own layout. Used by :class:`~privrl.envs.tabular.TabularMDP`,
  :class:`~privrl.envs.linear.LinearMDP`, :class:`~privrl.envs.linear_mixture.LinearMixtureMDP` and
  the LinOpt lockstep engine (its per-episode exact pseudo-regret).
* :func:`inverse_cdf` — one draw per row of cumulative probabilities: the first index whose
  cumulative mass exceeds ``u·total`` (zero-probability entries are never drawn, rounding in the
  last cumulative sum cannot select past the end).
* :func:`sample_paths` — the episode sampler of the models (array policies in lockstep over
  episodes, or a callable per episode and step; terminal states end episodes; dense kernels, or
  sparse ones listing each pair's next states; mean rewards and/or rewards on entering a state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["backward_induction", "optimal_values", "evaluate_policy", "inverse_cdf", "inverse_cdf_rows", "sample_paths"]


Step = np.ndarray | Callable[[np.ndarray], np.ndarray]


def _expect(step: Step, V_next: np.ndarray) -> np.ndarray:
    """``P_h V_{h+1}`` ``(…, S_h, A)``."""
    if callable(step):
        return step(V_next)
    if V_next.ndim == 1:
        return step @ V_next
    lead, (S, A, S2) = step.shape[:-3], step.shape[-3:]
    return (step.reshape(*lead, S * A, S2) @ V_next[..., None])[..., 0].reshape(*lead, S, A)


def backward_induction(P: np.ndarray | Sequence[Step], r: np.ndarray | Sequence[np.ndarray],
                       policy: ArrayLike | None = None, *, value: Callable[[int, np.ndarray], np.ndarray] | None = None
                       ) -> tuple[Any, Any]:
    """Exact finite-horizon backward induction.

    ``P`` is ``(…, H, S, A, S)`` with ``r`` ``(…, H, S, A)`` — then ``Q`` ``(…, H, S, A)`` and ``V``
    ``(…, H+1, S)`` (last row 0) are returned as arrays — or sequences of per-step
    ``P_h`` ``(…, S_h, A, S_{h+1})`` (or callables) and ``r_h`` ``(…, S_h, A)`` — then lists.
    ``V_h`` is ``max_a Q_h`` (``policy=None``), ``Q_h[s, π_h(s)]`` for an int policy ``(…, H, S)``,
    ``⟨π_h(·|s), Q_h(s, ·)⟩`` for probabilities ``(…, H, S, A)``, or ``value(h, Q_h)``.
    """
    arrays = isinstance(P, np.ndarray)
    steps: list[Step]
    if isinstance(P, np.ndarray):
        H = P.shape[-4]
        steps = [P[..., h, :, :, :] for h in range(H)]
    else:
        steps = list(P)
        H = len(steps)
    rewards = [r[..., h, :, :] for h in range(H)] if isinstance(r, np.ndarray) and arrays else list(r)
    if value is None:
        if policy is None:
            value = lambda h, q: q.max(axis=-1)  # noqa: E731
        else:
            pol = np.asarray(policy)
            if pol.dtype.kind in "iu":
                value = lambda h, q: np.take_along_axis(q, pol[..., h, :, None], axis=-1)[..., 0]  # noqa: E731
            else:
                value = lambda h, q: np.einsum("...sa,...sa->...s", pol[..., h, :, :], q)  # noqa: E731
    last = rewards[-1]
    S_end = steps[-1].shape[-1] if not callable(steps[-1]) else None
    V_next = np.zeros((*last.shape[:-2], S_end)) if S_end is not None else None
    Qs: list[np.ndarray] = []               # built from h = H-1 down, then reversed
    Vs: list[np.ndarray | None] = [V_next]  # V_H: None when the last step is a callable
    for h in range(H - 1, -1, -1):
        q = rewards[h] + _expect(steps[h], V_next) if V_next is not None else rewards[h].copy()
        V_next = value(h, q)
        Qs.append(q)
        Vs.append(V_next)
    Qs.reverse()
    Vs.reverse()
    if not arrays:
        return Qs, Vs
    return np.stack(Qs, axis=-3), np.stack(cast("list[np.ndarray]", Vs), axis=-2)  # arrays: no V_h is None


def optimal_values(P: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Q*, V*)`` with shapes ``(…, H, S, A)`` and ``(…, H+1, S)`` (last row 0)."""
    return backward_induction(P, r)


def evaluate_policy(P: np.ndarray, r: np.ndarray, policy: ArrayLike) -> np.ndarray:
    """``V^π`` ``(…, H+1, S)`` of a deterministic ``(…, H, S)`` int or stochastic ``(…, H, S, A)`` policy."""
    return backward_induction(P, r, policy)[1]


def inverse_cdf(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: for cumulative weights ``cum`` ``(…, n)`` and uniforms ``u`` ``(…)`` in
    [0, 1), the first index whose cumulative weight exceeds ``u·cum[…, −1]`` (clipped to ``n − 1``)."""
    x = u * cum[..., -1]
    return np.minimum((cum <= x[..., None]).sum(axis=-1), cum.shape[-1] - 1)


def inverse_cdf_rows(table: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``inverse_cdf(table[rows], u)`` — the draws of rows of a table of cumulative weights ``(R, n)``
    picked by ``rows`` ``(m,)`` — with the same result, by binary search within each distinct row
    when the table is wide and has few rows (a behaviour policy over many actions: comparing every
    draw against all n entries costs O(m·n), the search O(m·(R + log n))). A row that is not
    non-decreasing (negative weights within rounding) takes the comparison route."""
    R, n = table.shape
    if 2 * R > n or not np.all(table[:, 1:] >= table[:, :-1]):
        return inverse_cdf(table[rows], u)
    out = np.empty(rows.shape, dtype=np.intp)
    for r in range(R):
        pick = rows == r
        if pick.any():
            # for a non-decreasing row, the number of entries <= x is the right insertion point
            out[pick] = np.searchsorted(table[r], u[pick] * table[r, -1], side="right")
    return np.minimum(out, n - 1)


def sample_paths(cum_P: np.ndarray, reward_at: Callable[[int], np.ndarray] | None, cum_initial: np.ndarray, n: int,
                 rng: np.random.Generator, *, actions_at: np.ndarray | None = None,
                 cum_policy: np.ndarray | None = None,
                 act: Callable[[np.ndarray, int, np.ndarray], np.ndarray] | None = None,
                 terminal: np.ndarray | None = None, limit: int, stop_at: int | None = None,
                 on_limit: Callable[[], Exception] | None = None, next_states: np.ndarray | None = None,
                 entry_reward: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """``n`` episodes in lockstep: the model's sampler.

    ``cum_P`` ``(H', S, A, S)`` cumulative kernels (step h uses ``min(h, H'−1)``) — or, for a sparse
    kernel, ``(H', S, A, k)`` cumulative over the ``k`` next states listed in ``next_states``
    ``(H', S, A, k)``. Rewards: ``reward_at(h)`` ``(S, A)`` (mean rewards; None: 0) plus
    ``entry_reward[s']`` ``(S,)`` on entering ``s'`` (outcome rewards), if given.
    ``cum_initial`` ``(S,)``. Actions: ``actions_at`` ``(H'', S)`` int (no draw),
    ``cum_policy`` ``(H'', S, A)`` (one inverse-CDF draw per step) or ``act(states, h, active)``.
    Draw order: the initial states, then per step the actions (stochastic policies) and the next
    states, ``n`` uniforms each. Episodes end on entering a ``terminal`` state, after ``stop_at``
    steps, or — still running at ``limit`` steps — with ``on_limit()`` raised.

    Returns ``(n, T)`` arrays ``observations``, ``actions``, ``rewards``, ``next_observations`` and
    the bool mask ``active`` of the steps each episode took.
    """
    S = cum_initial.shape[-1]
    state = inverse_cdf(np.broadcast_to(cum_initial, (n, S)), rng.random(n))
    active = np.ones(n, dtype=bool)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("observations", "actions", "rewards",
                                                        "next_observations", "active")}
    h = 0
    while active.any():
        if h >= limit:
            raise on_limit() if on_limit is not None else RuntimeError("episodes did not end")
        if act is not None:
            action = act(state, h, active)
        elif actions_at is not None:
            action = actions_at[min(h, actions_at.shape[0] - 1)][state]
        else:
            assert cum_policy is not None
            action = inverse_cdf_rows(cum_policy[min(h, cum_policy.shape[0] - 1)], state, rng.random(n))
        step = min(h, cum_P.shape[0] - 1)
        nxt = inverse_cdf(cum_P[step][state, action], rng.random(n))
        if next_states is not None:
            nxt = next_states[step][state, action, nxt]
        reward = np.zeros(n) if reward_at is None else reward_at(h)[state, action]
        if entry_reward is not None:
            reward = reward + entry_reward[nxt]
        for key, value in (("observations", state), ("actions", action), ("rewards", reward),
                           ("next_observations", nxt), ("active", active)):
            rows[key].append(value)
        if terminal is not None:
            active = active & ~terminal[nxt]
        state = nxt
        h += 1
        if h == stop_at:
            break
    return {k: np.stack(v, axis=1) for k, v in rows.items()}
