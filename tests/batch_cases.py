"""The check every experiment with a ``run_batch`` owes (``privrl.experiments.spec``): the runner's
groups, run through ``run_batch``, give each run exactly what ``run`` gives it alone."""

import numpy as np

from privrl.experiments import get_experiment
from privrl.experiments.runner import group_runs, plan_runs, run_seed
from privrl.experiments.spec import RunContext


def _ctx(spec):
    return RunContext(spec.experiment, spec.setting, spec.seed, spec.scale,
                      np.random.default_rng(run_seed(spec.experiment, spec.setting, spec.seed)))


def check_batches_equal_single_runs(experiment_id, seeds=(0, 1), scale="smoke"):
    """One group per seed holding every setting of it; each batched result equals ``run``'s, row
    for row, with the same ledger events, calibration and extra fields."""
    exp = get_experiment(experiment_id)
    specs = plan_runs(experiment_id, scale, list(seeds))
    groups = group_runs(specs)
    assert len(groups) == len(seeds)
    assert all(len({s.seed for s in g}) == 1 and len(g) == len(exp.settings_for(scale)) for g in groups)
    for group in groups:
        batched = exp.run_batch([dict(s.params) for s in group], [_ctx(s) for s in group])
        assert len(batched) == len(group)
        for spec, res in zip(group, batched):
            alone = exp.run(dict(spec.params), _ctx(spec))
            assert res.rows == alone.rows
            assert res.calibration == alone.calibration and res.extra == alone.extra
            assert (res.ledger is None) == (alone.ledger is None)
            if res.ledger is not None:
                assert res.ledger.events == alone.ledger.events
