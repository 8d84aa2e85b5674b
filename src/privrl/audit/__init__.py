"""Empirical privacy audits: a lower bound on ε from neighbouring inputs.

* :func:`audit_mechanism` / :func:`audit_samples` — the black-box hypothesis-test auditor with
  Clopper–Pearson bounds (:mod:`privrl.audit.core`);
* :mod:`privrl.audit.neighbors` — neighbouring-input generators per privacy unit;
* :func:`run_target`, :func:`all_targets` — the registered audits of privrl's own releases, each
  with negative controls (:mod:`privrl.audit.registry`, ``targets_*`` modules, imported lazily);
* :mod:`privrl.audit.cli` — ``privrl audit``; :mod:`privrl.audit.report` — ``audit.md``/``audit.json``.

An audit gives a *lower* bound: ε_lower above the claimed ε is a bug; below it is not a proof.
See ``docs/audit.md``.
"""

from privrl.audit.core import (
    AuditResult,
    audit_mechanism,
    audit_samples,
    clopper_pearson,
    epsilon_lower_bound,
)
from privrl.audit.registry import (
    AuditPair,
    AuditTarget,
    BrokenVariant,
    all_targets,
    get_target,
    run_target,
)

__all__ = [
    "AuditPair",
    "AuditResult",
    "AuditTarget",
    "BrokenVariant",
    "all_targets",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "epsilon_lower_bound",
    "get_target",
    "run_target",
]
