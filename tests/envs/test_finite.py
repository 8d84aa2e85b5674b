"""The shared finite-horizon kernels (privrl.envs.finite): one backward induction and one sampler for
TabularMDP, LinearMDP and the LinOpt engine; seeded outputs pinned from the implementations before
the merge (three solvers, two samplers)."""

import hashlib

import numpy as np
import pytest

from privrl.envs.finite import backward_induction, inverse_cdf
from privrl.envs.random_tabular import random_tabular_mdp
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp
from privrl.envs.tabular import TabularMDP


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes())
    return h.hexdigest()[:16]


def test_seeded_samples_and_solutions_are_those_of_the_separate_implementations():
    """Digests recorded with TabularMDP's and LinearMDP's own samplers and solvers before they shared
    the kernel: the merge changed no seeded sample and no exact solution (bit for bit)."""
    m = random_tabular_mdp(n_states=5, n_actions=3, horizon=4, seed=3)
    pol = np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 5))
    keys = ("observations", "actions", "rewards", "next_observations")
    d = m.sample(pol, 200, rng=1)
    assert _digest(*(d[k] for k in keys)) == "d39b06f20065be27"
    d = m.sample(m.optimal_policy(), 200, rng=2)
    assert _digest(*(d[k] for k in keys)) == "471b30b6b2c1c9e2"
    t = m.to_tabular()
    d = t.sample(pol, 200, rng=1)
    assert _digest(d.observations, d.actions, d.rewards, d.next_observations) == "d39b06f20065be27"
    d = t.sample(t.optimal_policy(), 200, rng=2)
    assert _digest(d.observations, d.actions, d.rewards, d.next_observations) == "871ae364c7e25d54"
    P = np.random.default_rng(4).dirichlet(np.ones(4), size=(4, 2))
    r = np.random.default_rng(5).uniform(size=(4, 2))
    P[3] = 0
    P[3, :, 3] = 1
    r[3] = 0
    dm = TabularMDP(P, r, gamma=0.9, terminal_states=np.array([False, False, False, True]),
                    initial=np.array([0.5, 0.5, 0, 0]))
    d = dm.sample(np.full((4, 2), 0.5), 50, rng=3, max_steps=20)
    assert _digest(d.observations, d.actions, d.next_observations, d.episode_starts) == "761d72d93c4ea258"
    assert _digest(t.optimal_q(), t.optimal_values()) == "d47090704be89227"
    assert _digest(t.evaluate(pol)) == "3722ebca01191e81"
    lm = synthetic_linear_mdp(horizon=5, seed=0)
    s = lm.sample(synthetic_behaviour_policy(), 100, rng=5)
    assert _digest(*(s[k] for k in keys)) == "2162bed58179a95a"
    assert _digest(lm.optimal_q(), lm.optimal_values()) == "6c48a47939be72b6"


def test_batched_and_per_step_induction_equal_the_plain_one():
    """A leading batch axis, per-step state subsets and a callable step give what each run's plain
    backward induction gives (the engine evaluates many runs' policies on reachable states this way)."""
    rng = np.random.default_rng(0)
    R, H, S, A = 3, 4, 5, 2
    P = rng.dirichlet(np.ones(S), size=(R, H, S, A))
    r = rng.uniform(size=(R, H, S, A))
    pol = rng.integers(0, A, size=(R, H, S))
    Q, V = backward_induction(P, r, pol)
    for i in range(R):
        Qi, Vi = backward_induction(P[i], r[i], pol[i])
        np.testing.assert_allclose(Q[i], Qi, rtol=1e-12)
        np.testing.assert_allclose(V[i], Vi, rtol=1e-12)
    # states reachable at step h only: an absorbing-free chain where step h reaches states 0..h+1
    keep = [np.arange(min(S, h + 2)) for h in range(H + 1)]
    Pm = P[0].copy()
    for h in range(H):
        Pm[h][:, :, keep[h + 1].size:] = 0
        Pm[h] /= Pm[h].sum(-1, keepdims=True)
    steps = [Pm[h][keep[h]][:, :, keep[h + 1]] for h in range(H)]
    rewards = [r[0, h][keep[h]] for h in range(H)]
    Qs, Vs = backward_induction(steps, rewards)
    Qf, Vf = backward_induction(Pm, r[0])
    for h in range(H):
        np.testing.assert_allclose(Vs[h], Vf[h][keep[h]], rtol=1e-12)
    call = [lambda V, M=M: M @ V for M in steps]
    _, Vc = backward_induction(call, rewards)
    np.testing.assert_allclose(Vc[0], Vs[0], rtol=1e-12)


def test_inverse_cdf_never_draws_a_zero_probability_entry():
    cum = np.cumsum(np.array([[0.0, 0.5, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0]]), axis=-1)
    u = np.array([[0.0, 0.4999, 0.5, 0.9999999], [0.0, 0.3, 0.7, 0.9999999]])
    got = inverse_cdf(np.broadcast_to(cum[:, None, :], (2, 4, 4)), u)
    np.testing.assert_array_equal(got, [[1, 1, 3, 3], [0, 0, 0, 0]])
    with pytest.raises(ValueError):
        inverse_cdf(cum, np.zeros(3))                                    # shapes must broadcast


def test_inverse_cdf_rows_is_inverse_cdf_of_the_picked_rows():
    """The binary search within each row of a wide table (a policy over many actions) draws exactly
    what comparing against the picked rows draws — also at u = 0, u → 1 and zero-weight entries —
    and a row that is not non-decreasing takes the comparison route."""
    from privrl.envs.finite import inverse_cdf, inverse_cdf_rows

    rng = np.random.default_rng(0)
    for n in (3, 8, 100):
        probs = rng.dirichlet(np.ones(n) * 0.3, size=2)
        probs[:, 1] = 0.0
        table = np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)
        rows = rng.integers(0, 2, size=4000)
        u = rng.random(4000)
        u[:5], u[5:10] = 0.0, np.nextafter(1.0, 0.0)
        got = inverse_cdf_rows(table, rows, u)
        np.testing.assert_array_equal(got, inverse_cdf(table[rows], u))
        assert got.dtype == inverse_cdf(table[rows], u).dtype and not np.any(got == 1)
    table[0, 5] = table[0, 4] - 1e-13                    # rounding below a previous entry
    np.testing.assert_array_equal(inverse_cdf_rows(table, rows, u), inverse_cdf(table[rows], u))
