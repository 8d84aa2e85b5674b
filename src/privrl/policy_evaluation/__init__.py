"""Differentially private policy evaluation (Balle, Gomrokchi & Precup, ICML 2016).

One family, one package, on the shared layer :mod:`privrl.least_squares` (first-visit statistics,
smooth sensitivity, the (α, β) calibrations, utility diagnostics, the solvers and the release steps,
which Wang & Hegde's Balle-style baseline uses too; the old paths ``privrl.policy_evaluation.statistics``,
``.smooth_sensitivity``, ``.calibration``, ``.mechanism`` and ``.diagnostics`` re-export them):

* :mod:`~privrl.policy_evaluation.estimators` — LSW, LSL, DPLSW, DPLSL;
* :mod:`~privrl.policy_evaluation.monte_carlo` — MonteCarlo, DPMonteCarlo: the value J(π) of the
  logging policy (and of public state groups) from on-policy logs;
* :mod:`~privrl.data.bounds` — the public reward and return bounds, shared;
* :mod:`~privrl.policy_evaluation.experiments` — ``balle2016-fig1`` and
  ``frontier-policy-evaluation``; :mod:`~privrl.policy_evaluation.audit` — the audit targets.

Data path: dataset → :func:`first_visit_statistics` (private) → ``mechanism.solve`` (θ) →
``release_with_event(θ, std=σ_X, event=ApproxDpEvent(ε spent, δ))`` through the fit's Releaser →
``privacy_ledger_``.
"""

from privrl.family import Algorithm, Family
from privrl.least_squares.calibration import SmoothedGaussian, smoothed_gaussian
from privrl.least_squares.mechanism import (
    DPLSLMechanism,
    DPLSWMechanism,
    lambda_min,
    lsl_solve,
    lsw_solve,
)
from privrl.least_squares.smooth_sensitivity import SMOOTHINGS, smoothing_constants
from privrl.least_squares.statistics import (
    VisitStatistics,
    discounted_returns,
    first_visit_statistics,
)
from privrl.policy_evaluation.estimators import (
    DPLSL,
    DPLSW,
    LSL,
    LSW,
    lambda_schedule,
    sqrt_lambda_schedule,
)
from privrl.policy_evaluation.monte_carlo import DPMonteCarlo, MonteCarlo, MonteCarloMechanism

FAMILY = Family(
    __name__,
    paper="Balle, Gomrokchi & Precup (ICML 2016)",
    estimators=("LSW", "LSL", "DPLSW", "DPLSL", "MonteCarlo", "DPMonteCarlo"),
    algorithms=(
        Algorithm("LSW, LSL", ("LSW", "LSL"), "policy evaluation (non-private)"),
        Algorithm("DP-LSW, DP-LSL", ("DPLSW", "DPLSL"),
                  "first-visit Monte Carlo policy evaluation, smooth-sensitivity output perturbation"),
        Algorithm("Monte Carlo, DP Monte Carlo", ("MonteCarlo", "DPMonteCarlo"),
                  "the logging policy's value J (and public state-group values) from on-policy logs, "
                  "output perturbation calibrated by the tight accountant",
                  paper="privrl (the mean-return mechanism; sensitivities in docs/policy_evaluation.md)"),
    ),
    docs="docs/policy_evaluation.md",
    experiments=("experiments",),
    frontiers=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
    bench=("privrl.bench.entries.policy_evaluation",),
)

__all__ = ["LSW", "LSL", "DPLSW", "DPLSL", "MonteCarlo", "DPMonteCarlo", "MonteCarloMechanism", "DPLSWMechanism",
           "DPLSLMechanism", "SmoothedGaussian",
           "smoothed_gaussian", "smoothing_constants", "SMOOTHINGS", "VisitStatistics", "discounted_returns",
           "first_visit_statistics", "lsw_solve", "lsl_solve", "lambda_min", "lambda_schedule",
           "sqrt_lambda_schedule"]
