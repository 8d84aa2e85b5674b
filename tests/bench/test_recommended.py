"""Recommended configurations beside the defaults: ``dp-apvi[auto]`` (and its counterpart ``apvi[auto]``) run
DP-APVI on the route docs/offline.md recommends (``route="auto"``, which sets ``baseline="logging"``), over the
task's public state groups, and are scored on the stochastic policy to deploy."""

from __future__ import annotations

import warnings

import numpy as np

from privrl.bench.entries import get_entry
from privrl.bench.running import instance
from privrl.bench.spec import Budget
from privrl.bench.tasks import get_task
from privrl.commands.bench import select_entries


def _fit(name: str, task: str, budget: Budget | None):
    inst = instance(task, "quick", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = get_entry(name).fit(inst.input, None if budget is None else budget.privacy_budget(inst.input.delta),
                                     np.random.default_rng(0), None)
    return inst, fitted


def test_the_auto_route_entries_fit_the_recommended_route():
    private, public = get_entry("dp-apvi[auto]"), get_entry("apvi[auto]")
    assert private.counterpart == "apvi[auto]" and public.role == "non-private"
    assert {"dp-apvi", "dp-apvi[paper]", "dp-apvi[auto]"} <= {e.name for e in select_entries("dp-apvi")}
    inst, fitted = _fit("dp-apvi[auto]", "clinic", Budget("eps", 1.0))
    est = fitted.estimator
    assert est.route == "auto" and est.route_["baseline"] == "logging"
    groups = inst.input["groups"]
    assert est.route_["state_groups"] is None or np.array_equal(est.route_["state_groups"], groups)
    assert fitted.output.policy.shape == est.policy_probs_.shape and fitted.output.policy.ndim == 3
    np.testing.assert_allclose(fitted.output.policy.sum(axis=-1), 1.0, atol=1e-9)
    assert 0.9 < fitted.ledger.epsilon(inst.input.delta) <= 1.0 + 1e-6
    assert np.isfinite(get_task("clinic").score(inst.truth, fitted.output)["gap"])
    _, plain = _fit("apvi[auto]", "clinic", None)
    assert plain.ledger is None and plain.estimator.route_["baseline"] == "logging"

