"""RunResult.from_estimator / from_estimators: a run's privacy claim is the fitted estimator's own
(privacy unit, neighbouring relation, budget, calibration, ledger), never restated by the experiment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import privrl
from privrl.experiments.spec import RunResult
from privrl.policy_evaluation import DPLSW, LSW, VisitStatistics
from privrl.privacy import Neighboring, PrivacyBudget, PrivacyUnit

BUDGET = PrivacyBudget(epsilon=1.0, delta=1e-3)
STATS = VisitStatistics(counts=np.array([50, 40, 30]), mean_returns=np.array([0.2, 0.5, 0.9]), n_trajectories=60)


def _fit(cls, **kw):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(gamma=0.9, F_max=1.0, **kw).fit_statistics(STATS, rng=np.random.default_rng(0))


def test_from_estimator_takes_the_claim_from_the_estimator():
    dp = _fit(DPLSW, budget=BUDGET, calibration="sound")
    res = RunResult.from_estimator(dp, [{"metric": "x", "value": 1.0}], accountant="pld", extra={"k": 1})
    assert (res.privacy_unit, res.neighboring) == (PrivacyUnit.TRAJECTORY, Neighboring.REPLACE_ONE)
    assert res.budget is BUDGET and res.ledger is dp.privacy_ledger_ and res.calibration == "sound"
    assert (res.accountant, res.extra, res.rows) == ("pld", {"k": 1}, [{"metric": "x", "value": 1.0}])
    plain = RunResult.from_estimator(_fit(LSW), [])
    assert plain.ledger is None and plain.budget is None and plain.calibration == "none"
    assert plain.privacy_unit is PrivacyUnit.TRAJECTORY
    unclaimed = RunResult.from_estimator(DPLSW, [], claim=False, calibration="paper")   # the class: no fit
    assert unclaimed.ledger is None and unclaimed.calibration == "paper"
    assert unclaimed.neighboring is Neighboring.REPLACE_ONE


def test_from_estimators_needs_one_shared_claim():
    a, b = _fit(DPLSW, budget=BUDGET), _fit(DPLSW, budget=BUDGET)
    assert RunResult.from_estimators([a, b], []).ledger == a.privacy_ledger_
    other = _fit(DPLSW, budget=PrivacyBudget(epsilon=2.0, delta=1e-3))
    with pytest.raises(ValueError, match="different privacy claim"):
        RunResult.from_estimators([a, other], [])
    with pytest.raises(ValueError, match="at least one"):
        RunResult.from_estimators([], [])


def test_no_family_experiment_restates_a_privacy_unit():
    """The family experiments build their results from the estimators: none names a privacy unit
    or neighbouring relation, nor a reporting δ, itself."""
    root = Path(privrl.__file__).parent
    for path in sorted(root.glob("*/experiments.py")):
        text = path.read_text()
        for word in ("PrivacyUnit.", "Neighboring.", "RunResult(", "Ledger("):
            assert word not in text, f"{path.relative_to(root)} uses {word}"


def test_balle_figure_claim_is_the_estimators():
    """balle2016-fig1: the manifest's ε is the ledger of its DP-LSW/DP-LSL fits (one release of a
    batch: every point's ledger is the same)."""
    from privrl.experiments.runner import execute_run, plan_runs
    from privrl.policy_evaluation.experiments import _features

    spec = plan_runs("balle2016-fig1", "smoke", seeds=[0])[0]
    outcome = execute_run(spec)
    assert outcome.status == "ok", outcome.manifest.get("error")
    params = spec.params
    est = DPLSW(budget=PrivacyBudget(epsilon=params["epsilon"], delta=params["delta"]), gamma=params["gamma"],
                features=_features(params["features"], params["n_states"]), F_max=params["F_max"],
                calibration=params["calibration"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit_statistics(VisitStatistics(counts=np.ones(params["n_states"], int), mean_returns=np.zeros(40),
                                           n_trajectories=10), rng=0)
    m = outcome.manifest
    assert m["n_events"] == 1 and m["delta"] == params["delta"] and m["privacy_unit"] == "trajectory"
    assert m["epsilon_spent"] == est.privacy_ledger_.epsilon(params["delta"], accountant="pld")
