"""Paper experiments: specs, registry, runner, results, plots and report."""

from privrl.experiments.registry import all_experiments, get_experiment, register
from privrl.experiments.spec import SCALES, Claim, Experiment, RunContext, RunResult

__all__ = ["SCALES", "Claim", "Experiment", "RunContext", "RunResult", "all_experiments",
           "get_experiment", "register"]
