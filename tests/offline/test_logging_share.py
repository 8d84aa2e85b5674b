"""DP-APVI's per-state logging counts (``logging_share``): on public groups a declared share of the
budget releases the per-state action visit counts pooled over the steps (the route's cap applied),
the rest of the fit gets the remainder so the total is the budget, the release goes through the
fit's releaser (declared, seeded and secure), streamed statistics carry the same counts, and the
counts are the finest level of the estimated logging policy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privrl import PrivacyBudget
from privrl.data.streaming import dataset_chunks
from privrl.errors import InvalidParameterError
from privrl.offline import DPAPVI, route_statistics, stream_statistics
from privrl.offline._common import padded_episodes
from privrl.offline.calibration import count_sensitivity, split_logging_share
from privrl.offline.grouping import grouped_statistics
from privrl.privacy.calibration import gaussian_mu
from privrl.privacy.draws import release_problems
from real_shaped_cases import A, H, S, model_fixture, padded_fixture

ROUTE = {"stationary": True, "max_visits": 1, "baseline": "logging", "constants": "practical"}
BUDGETS = [PrivacyBudget(epsilon=1.0, delta=1e-6), PrivacyBudget(rho=0.5), PrivacyBudget(epsilon=2.0)]


model = model_fixture()
padded = padded_fixture(400)


def _fit(est, data, model, rng=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(data, model, rng=rng)


def _visits(model, padded, cap=1):
    """The per-state visit counts pooled over the steps of the visits the route keeps, by hand."""
    data = padded_episodes(padded, "test", n_states=S, n_actions=A)
    obs, act = data["observations"], data["actions"]
    out = np.zeros((S, A))
    for k in range(obs.shape[0]):
        seen: dict[tuple[int, int], int] = {}
        for h in range(H):
            key = (int(model.groups[obs[k, h]]), int(act[k, h]))
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= cap:
                out[obs[k, h], act[k, h]] += 1
    return out


def test_the_counts_are_the_visits_the_route_keeps(model, padded):
    data = padded_episodes(padded, "test", n_states=S, n_actions=A)
    stats = grouped_statistics(data, model.groups, S, A, stationary=True, max_visits=1)
    np.testing.assert_array_equal(stats.state_visits, _visits(model, padded))
    assert stats.state_visits.sum() == stats.n_sa.sum()
    assert grouped_statistics(data, None, S, A, stationary=True).state_visits is None


@pytest.mark.parametrize("rows", [1, 37, 10**6])
def test_streamed_statistics_carry_the_same_counts(model, padded, rows):
    kw = {"state_groups": model.groups, "stationary": True, "max_visits": 1}
    streamed = stream_statistics(dataset_chunks(padded, rows), S, A, horizon=H, **kw)
    np.testing.assert_array_equal(streamed.state_visits, route_statistics(padded, S, A, **kw).state_visits)
    budget = BUDGETS[0]
    a = _fit(DPAPVI(budget=budget, state_groups=model.groups, logging_share=0.2, **ROUTE), streamed, model, 3)
    b = _fit(DPAPVI(budget=budget, state_groups=model.groups, logging_share=0.2, **ROUTE), padded, model, 3)
    np.testing.assert_array_equal(a.policy_probs_, b.policy_probs_)
    np.testing.assert_array_equal(a.logging_policy_, b.logging_policy_)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("secure", [False, True])
def test_the_total_spent_is_the_budget(model, padded, budget, secure):
    """One more ledger event (the logging counts, σ/Δ from the share), and the ledger's ε at the
    reporting δ equals that of the fit without the share (the budget exactly, tight), in seeded and
    secure mode; every release declared what it drew."""
    rng = None if secure else 0
    make = lambda share: DPAPVI(budget=budget, state_groups=model.groups, logging_share=share,  # noqa: E731
                                secure=secure, **ROUTE)
    with_share = _fit(make(0.2), padded, model, rng)
    without = _fit(make(0.0), padded, model, rng)
    events, base = with_share.privacy_ledger_.events, without.privacy_ledger_.events
    assert len(events) == len(base) + 1
    assert with_share.privacy_spent() == pytest.approx(without.privacy_spent(), rel=1e-6)
    assert with_share.privacy_spent() <= without.privacy_spent() * (1 + 1e-9)
    if budget.epsilon is not None and budget.delta:
        assert 0.99 * budget.epsilon <= with_share.privacy_spent() <= budget.epsilon
    assert release_problems(with_share.privacy_ledger_) == []
    sens = count_sensitivity(H, "gaussian" if budget.delta or budget.rho else "laplace", max_visits=1,
                             stationary=True)
    last = events[-1]
    if budget.epsilon is not None and not budget.delta:           # Laplace: b = Δ₁/(s·ε)
        assert last.noise_multiplier == pytest.approx(1 / (0.2 * budget.epsilon), rel=1e-6)
    else:                                                          # Gaussian: μ_L = √s·μ
        assert last.noise_multiplier == pytest.approx(1 / (math.sqrt(0.2) * gaussian_mu(budget)), rel=1e-6)
    assert sens == pytest.approx(math.sqrt(2 * H) if budget.delta or budget.rho else 2 * H)


def test_the_split_keeps_mu(model):
    budget = BUDGETS[0]
    main, plan = split_logging_share(budget, 0.3, H, max_visits=1)
    assert gaussian_mu(main) ** 2 + (plan.sensitivity / plan.scale) ** 2 == pytest.approx(
        gaussian_mu(budget) ** 2, rel=1e-6)
    loose, _ = split_logging_share(budget, 0.3, H, max_visits=None)
    assert _.sensitivity == pytest.approx(math.sqrt(2) * H)
    assert gaussian_mu(loose) == pytest.approx(gaussian_mu(main))


@pytest.mark.parametrize("secure", [False, True])
def test_the_release_is_the_only_data_dependent_input(model, padded, monkeypatch, secure):
    """The per-state counts reach the policy only through their release: on data whose states are
    relabelled within their groups (the grouped statistics identical, the per-state visits not), a fit
    handed the first fit's released logging counts plays the first fit's policy exactly, while the
    released counts themselves differ (seeded: the same seed; secure: fresh noise, so the group-level
    release is shared through the seam too)."""
    perm = np.arange(S)
    for g in range(int(model.groups.max()) + 1):
        members = np.flatnonzero(model.groups == g)
        perm[members] = np.roll(members, 1)
    moved = padded_episodes(padded, "test", n_states=S, n_actions=A)
    moved = {**moved, "observations": perm[moved["observations"]], "next_observations":
             perm[moved["next_observations"]]}
    make = lambda: DPAPVI(budget=BUDGETS[0], state_groups=model.groups, logging_share=0.2,  # noqa: E731
                          secure=secure, **ROUTE)
    released: list = []
    original = DPAPVI._release_logging

    def capture(self, plan, stats, rel):
        out = original(self, plan, stats, rel)
        released.append((stats.state_visits.copy(), out))
        return out

    monkeypatch.setattr(DPAPVI, "_release_logging", capture)
    first = _fit(make(), padded, model, None if secure else 0)
    monkeypatch.setattr(DPAPVI, "_release_logging", lambda self, plan, stats, rel: (original(self, plan, stats, rel),
                                                                                released[0][1])[1])
    if secure:        # the group-level release is fresh noise: hand the second fit the first's fit too
        from privrl.offline import estimators

        kept: list = []
        real = estimators.dp_apvi
        monkeypatch.setattr(estimators, "dp_apvi", lambda *a, **k: kept[0] if kept else kept.append(real(*a, **k))
                            or kept[0])
        first = _fit(make(), padded, model, None)
        second = _fit(make(), moved, model, None)
    else:
        second = _fit(make(), moved, model, 0)
    a = grouped_statistics(padded_episodes(padded, "test", n_states=S, n_actions=A), model.groups, S, A,
                           stationary=True, max_visits=1)
    b = grouped_statistics(moved, model.groups, S, A, stationary=True, max_visits=1)
    np.testing.assert_array_equal(a.values, b.values)                        # the grouped counts are the same
    assert not np.array_equal(a.state_visits, b.state_visits)                # the per-state visits are not
    np.testing.assert_array_equal(second.policy_probs_, first.policy_probs_)
    np.testing.assert_array_equal(second.logging_policy_, first.logging_policy_)


def test_the_share_is_refused_where_it_serves_nothing(model, padded):
    for kw in ({"logging_share": 0.1}, {"logging_share": 0.1, "state_groups": model.groups},
               {"logging_share": 0.1, "stationary": True, "baseline": "logging"}):
        with pytest.raises(InvalidParameterError, match="'logging_share' parameter of DPAPVI"):
            _fit(DPAPVI(budget=BUDGETS[0], **kw), padded, model)
    with pytest.raises(InvalidParameterError, match="'logging_share' parameter of DPAPVI"):
        _fit(DPAPVI(budget=BUDGETS[0], logging_share=1.0, state_groups=model.groups, **ROUTE), padded, model)


@pytest.mark.parametrize("budget", [PrivacyBudget(epsilon=1.0, delta=1e-6), PrivacyBudget(rho=200.0)])
def test_auto_takes_the_default_share_where_a_state_row_is_measured(model, padded, budget):
    """route='auto' spends AUTO_LOGGING_SHARE on the per-state counts when it plays a grouped route and
    the typical state's n·H/S visits exceed its level's prior strength PRIOR_VISITS + σ√A (public),
    nothing otherwise; the total spent is the budget either way."""
    from privrl.offline.baseline import AUTO_LOGGING_SHARE, PRIOR_VISITS

    auto = _fit(DPAPVI(budget=budget, constants="practical", route="auto", state_groups=[model.groups]),
                padded, model)
    off = _fit(DPAPVI(budget=budget, constants="practical", route="auto", state_groups=[model.groups],
                      logging_share=0.0), padded, model)
    plan = split_logging_share(budget, AUTO_LOGGING_SHARE or 0.5, H, max_visits=auto.route_["max_visits"])[1]
    measured = 400 * H / S >= PRIOR_VISITS + plan.noise_std * math.sqrt(A)
    grouped = auto.route_["state_groups"] is not None
    assert len(auto.privacy_ledger_.events) == 2 + (grouped and measured and AUTO_LOGGING_SHARE > 0)
    assert len(off.privacy_ledger_.events) == 2
    assert auto.privacy_spent() == pytest.approx(off.privacy_spent(), rel=1e-6)
