"""Policy evaluation at real size: the clinic task (``privrl.envs.sparse_tabular``: S = 750, A = 25,
H = 20, 22 public groups — 20 severity levels, success, failure), on-policy logs of the clinicians'
policy, γ = 1, F_max = 1 (the return is 1 on success), δ = 10⁻⁶.

One JSON line per (algorithm, n, ε): ``name``, ``algorithm``, ``n``, ``epsilon``, ``delta``,
``seeds``, ``seconds`` (one fit, mean over seeds), ``peak_mb`` (one fit under tracemalloc),
``metric``, ``value`` (mean over seeds), ``value_max``, ``reference`` (the same metric for the
non-private estimator on the same data) and ``truth`` (the exact J of the logging policy).

* ``DPMonteCarlo`` ``abs_error_J`` — |Ĵ − J| against the exact J (each seed a fresh dataset);
  ``privacy_error_J`` — |Ĵ − Ĵ_non-private| on the same data.
* ``DPMonteCarlo-groups`` ``group_rmse`` — RMSE over the 20 severity levels of the group values
  against their exact values (the mean first-visit return of each level, computed on the model by
  a forward pass of first-entry probabilities); ``abs_error_J`` of the Ĵ released with them.
* ``DPLSW`` / ``DPLSW-groups`` / ``DPLSW-constant`` (``--with-lsw``) ``abs_error_J`` — J = initial·V̂
  from DP-LSW with tabular, level-aggregated or one constant feature (uniform weights): the
  smooth-sensitivity estimator the issue measured.

* ``--weights-table``: DP-LSW with tabular, level-aggregated or constant features and uniform or
  "common-state" weights (:func:`weights_table`): how the public weights and aggregation move σ_X.

    .venv/bin/python benchmarks/bench_policy_evaluation_real_size.py [--seeds 10] [--n 1000 10000 100000]
        [--epsilon 0.1 1 10] [--with-lsw] [--weights-table]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _util import emit, measure  # noqa: E402

from privrl import DPLSW, LSW, DPMonteCarlo, MonteCarlo, PrivacyBudget  # noqa: E402
from privrl.envs.sparse_tabular import sparse_tabular  # noqa: E402
from privrl.errors import UtilityWarning  # noqa: E402

DELTA = 1e-6
LEVELS = 20
#: states the public model expects fewer trajectories than this to visit get weight 0 (weights table)
RARE = (50, 200)


def policy_kernel(model, policy):
    """The (S, S) transition matrix of a stationary policy on the sparse model (scipy CSR)."""
    from scipy.sparse import csr_matrix

    S, A = model.n_states, model.n_actions
    pi = model.policy_probabilities(policy)[0]
    weighted = csr_matrix(model.transition_matrix().multiply(pi.reshape(-1, 1)))   # row s·A + a: π(a|s) P(·|s, a)
    pool = csr_matrix((np.ones(S * A), (np.repeat(np.arange(S), A), np.arange(S * A))), shape=(S, S * A))
    return csr_matrix(pool @ weighted)


def exact_group_values(model, policy) -> np.ndarray:
    """The value of each group under first-visit pooling: Σ_t,s μ_g(t, s) V_t(s) / Σ_t,s μ_g(t, s),
    μ_g(t, s) the probability that a trajectory is first in group g at step t, in state s (a
    forward pass of the state distribution restricted to trajectories not yet in g)."""
    M = policy_kernel(model, policy)
    V = model.evaluate(policy)                                                 # (H+1, S)
    out = np.zeros(model.n_groups)
    for g in range(model.n_groups):
        inside = model.groups == g
        x = np.where(inside, 0.0, model.initial)
        mass, total = float(model.initial[inside].sum()), float(model.initial[inside] @ V[0][inside])
        for t in range(1, model.horizon):
            y = M.T @ x
            mass += float(y[inside].sum())
            total += float(y[inside] @ V[t][inside])
            x = np.where(inside, 0.0, y)
        out[g] = total / mass if mass > 0 else 0.0
    return out


def visit_probabilities(model, policy) -> np.ndarray:
    """P(a trajectory visits s), per state (the same forward pass, all states at once)."""
    M = policy_kernel(model, policy)
    S = model.n_states
    X = np.tile(model.initial, (S, 1))
    seen = np.diag(X).copy()
    np.fill_diagonal(X, 0.0)
    for _ in range(1, model.horizon + 1):
        X = np.asarray((M.T @ X.T).T)
        seen += np.diag(X)
        np.fill_diagonal(X, 0.0)
    return seen


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        return fn()


def _row(algorithm, n, eps, seeds, seconds, peak, metric, values, reference, truth) -> None:
    emit("pe_real_size", algorithm=algorithm, n=n, epsilon=eps, delta=DELTA, seeds=seeds, seconds=seconds,
         peak_mb=peak, metric=metric, value=float(np.mean(values)), value_max=float(np.max(values)),
         reference=float(np.mean(reference)), truth=truth)


def bench(n: int, epsilons: list[float], seeds: int, with_lsw: bool, model, J: float, truth_groups) -> None:
    groups = model.groups
    datasets = [model.sample(model.logging_policy, n, rng=1000 + s) for s in range(seeds)]
    exact = [MonteCarlo(F_max=1.0, groups=groups).fit(d) for d in datasets]
    ref_err = [abs(e.value_ - J) for e in exact]
    ref_rmse = [np.sqrt(np.mean((e.group_values_[:LEVELS] - truth_groups[:LEVELS]) ** 2)) for e in exact]
    for eps in epsilons:
        budget = PrivacyBudget(epsilon=eps, delta=DELTA)
        for name, kwargs in (("DPMonteCarlo", {}), ("DPMonteCarlo-groups", {"groups": groups})):
            err, priv, rmse, secs = [], [], [], []
            for s, (d, e0) in enumerate(zip(datasets, exact)):
                est = DPMonteCarlo(budget=budget, F_max=1.0, **kwargs)
                t = time.perf_counter()
                _quiet(lambda est=est, d=d, s=s: est.fit(d, rng=s))
                secs.append(time.perf_counter() - t)
                err.append(abs(est.value_ - J))
                priv.append(abs(est.value_ - e0.value_))
                if kwargs:
                    rmse.append(np.sqrt(np.mean((est.group_values_[:LEVELS] - truth_groups[:LEVELS]) ** 2)))

            def one_fit(kwargs=kwargs, budget=budget):
                return _quiet(lambda: DPMonteCarlo(budget=budget, F_max=1.0, **kwargs).fit(datasets[0], rng=0))
            peak = measure(one_fit)["peak_mb"]
            common = (name, n, eps, seeds, float(np.mean(secs)), peak)
            _row(*common, "abs_error_J", err, ref_err, J)
            _row(*common, "privacy_error_J", priv, [0.0], J)
            if kwargs:
                _row(*common, "group_rmse", rmse, ref_rmse, J)
        if with_lsw:
            bench_lsw(n, eps, datasets, model, J)


def bench_lsw(n: int, eps: float, datasets, model, J: float) -> None:
    S, L = model.n_states, model.n_groups
    features = {"DPLSW": np.eye(S), "DPLSW-groups": np.eye(L)[model.groups], "DPLSW-constant": np.ones((S, 1))}
    budget = PrivacyBudget(epsilon=eps, delta=DELTA)
    for name, phi in features.items():
        err, ref, secs = [], [], []
        for s, d in enumerate(datasets):
            est = DPLSW(budget=budget, gamma=1.0, F_max=1.0, features=phi)
            t = time.perf_counter()
            _quiet(lambda est=est, d=d, s=s: est.fit(d, rng=s))
            secs.append(time.perf_counter() - t)
            err.append(abs(float(model.initial @ est.values_) - J))
            ref.append(abs(float(model.initial @ LSW(gamma=1.0, F_max=1.0, features=phi).fit(d).values_) - J))
        peak = measure(lambda phi=phi: _quiet(lambda: DPLSW(budget=budget, gamma=1.0, F_max=1.0, features=phi)
                                              .fit(datasets[0], rng=0)))["peak_mb"]
        _row(name, n, eps, len(datasets), float(np.mean(secs)), peak, "abs_error_J", err, ref, J)


def weights_table(n: int, eps: float, seeds: int, model, J: float) -> None:
    """DP-LSW / DP-LSL on the clinic with public weights and aggregation: σ_X (the data-dependent
    noise std of θ̂ — a non-private diagnostic of this synthetic benchmark, never released by
    the estimators), |J − initial·V̂| and the RMSE of V̂_0 over the weighted states against the
    exact values. "visits >= v" weights are 1 on the states the public model expects at least
    v trajectories to visit at this n (v in ``RARE``) (what a public simulator or registry could give;
    never the data), 0 elsewhere; with level features, the levels without a common state are
    dropped (their states then get the value 0)."""
    from privrl.policy_evaluation import DPLSWMechanism, first_visit_statistics

    S = model.n_states
    levels = np.eye(model.n_groups)[model.groups]
    expected = visit_probabilities(model, model.logging_policy) * n
    uniform = np.full(S, 1.0 / S)
    V0 = model.evaluate(model.logging_policy)[0]
    budget = PrivacyBudget(epsilon=eps, delta=DELTA)
    configs = [("tabular", np.eye(S), uniform, "uniform", "theory"),
               ("tabular", np.eye(S), uniform, "uniform", "practical"),
               ("levels", levels, uniform, "uniform", "practical"),
               ("constant", np.ones((S, 1)), uniform, "uniform", "practical")]
    for rare in RARE:
        common = (expected >= rare).astype(float)
        covered = levels[:, (common @ levels) > 0]      # the levels with a common state (full rank)
        name = f"visits >= {rare}"
        configs += [("levels", covered, common / common.sum(), name, "practical"),
                    ("constant", np.ones((S, 1)), common / common.sum(), name, "practical")]
    datasets = [model.sample(model.logging_policy, n, rng=2000 + s) for s in range(seeds)]
    for features_name, phi, w, weights_name, constants in configs:
        sigma, err, rmse, secs = [], [], [], []
        keep = w > 0
        for s, d in enumerate(datasets):
            est = DPLSW(budget=budget, gamma=1.0, F_max=1.0, features=phi, weights=w, constants=constants)
            t = time.perf_counter()
            _quiet(lambda est=est, d=d, s=s: est.fit(d, rng=s))
            secs.append(time.perf_counter() - t)
            stats = first_visit_statistics(d.observations, d.rewards, d.episode_starts, S, 1.0,
                                           terminal_states=np.where(d.terminals[d.episode_starts[1:] - 1],
                                                                    d.next_observations[d.episode_starts[1:] - 1], -1))
            mech = DPLSWMechanism.create(features=phi, weights=w, F_max=1.0, epsilon=eps, delta=DELTA,
                                         constants=constants)
            sigma.append(mech.noise_scale(stats.counts, n))
            err.append(abs(float(model.initial @ est.values_) - J))
            rmse.append(float(np.sqrt(np.mean((est.values_[keep] - V0[keep]) ** 2))))
        for metric, values in (("sigma_X", sigma), ("abs_error_J", err), ("rmse_weighted_states", rmse)):
            emit("pe_weights", algorithm="DPLSW", features=features_name, weights=weights_name,
                 constants=constants, n=n, epsilon=eps, delta=DELTA, seeds=seeds, seconds=float(np.mean(secs)),
                 peak_mb=float("nan"), metric=metric, value=float(np.mean(values)), reference=J,
                 weighted_states=int(keep.sum()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--with-lsw", action="store_true")
    parser.add_argument("--weights-table", action="store_true", help="only the DP-LSW weights/aggregation table")
    args = parser.parse_args()
    model = sparse_tabular(rng=0)
    J = float(model.value(model.logging_policy))
    if args.weights_table:
        for n in args.n:
            for eps in args.epsilon:
                weights_table(n, eps, args.seeds, model, J)
        return
    truth_groups = exact_group_values(model, model.logging_policy)
    for n in args.n:
        bench(n, args.epsilon, args.seeds, args.with_lsw, model, J, truth_groups)


if __name__ == "__main__":
    main()
