"""A minimal algorithm family, kept in the test suite to show that adding a family is one folder
plus one line (CONTRIBUTING.md, "Adding a family").

The package holds one private estimator (:class:`PrivateMeanReturn`, the Gaussian mean of bounded
returns), one experiment (``example-family-mean``), one ``privrl fit`` command
(``example-mean``), one audit target (``example-mean``), one ``privrl plan`` planner (``example-mean``), one
``privrl bench`` entry (``example-mean``) and its contract cases. Its modules import each other
relatively, so that a copy under ``src/privrl/`` needs no renaming (``make lint`` checks the folder). The "one line" is
``privrl.registry.add_family("example_family")`` in the test (a family inside privrl is one line of
``privrl.registry.FAMILIES`` instead).
"""

from privrl.family import Algorithm, Family

from .estimators import PrivateMeanReturn

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
    bench=("bench",),   # privrl's own families: bench=("privrl.bench.entries.<family>",)
)

__all__ = ["PrivateMeanReturn"]
