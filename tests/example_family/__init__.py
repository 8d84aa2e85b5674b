"""A minimal algorithm family, kept in the test suite to show that adding a family is one folder
plus one line (CONTRIBUTING.md, "Adding a family").

The package holds one private estimator (:class:`PrivateMeanReturn`, the Gaussian mean of bounded
returns), one experiment (``example-family-mean``), one ``privrl fit`` command
(``example-mean``), one audit target (``example-mean``), one ``privrl plan`` planner (``example-mean``) and its
contract cases. The "one line" is
``privrl.registry.add_family("example_family")`` in the test (a family inside privrl is one line of
``privrl.registry.FAMILIES`` instead).
"""

from example_family.estimators import PrivateMeanReturn
from privrl.family import Algorithm, Family

FAMILY = Family(
    __name__,
    paper="Dwork & Roth (2014), Theorem 3.22 (the Gaussian mechanism)",
    estimators=("PrivateMeanReturn",),
    algorithms=(Algorithm("private mean return", ("PrivateMeanReturn",), "the mean return of a batch of episodes"),),
    docs="CONTRIBUTING.md",
    experiments=("experiments",),
    fit=("fit",),
    audit=("audit",),
    plans=("plan",),
)

__all__ = ["PrivateMeanReturn"]
