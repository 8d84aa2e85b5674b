"""The smoke run of ``deep-offline-bc-cartpole`` (unlisted: the suite's smoke-all test does not run it)."""

import math
import warnings

from privrl.experiments.runner import execute_run, plan_runs


def test_the_smoke_runs_report_agreement_and_return_with_the_estimators_ledger():
    specs = plan_runs("deep-offline-bc-cartpole", "smoke", seeds=[0])
    assert sorted(s.params["epsilon"] for s in specs) == [1.0, 3.0, 8.0, math.inf]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = execute_run(specs[0])
    assert outcome.status == "ok", outcome.manifest.get("error")
    values = {row["metric"]: row["value"] for row in outcome.rows}
    assert 0.0 <= values["agreement"] <= 1.0 and 1.0 <= values["return"] <= 200.0
