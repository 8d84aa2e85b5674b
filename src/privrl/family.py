"""The record of one algorithm family: what a paper's package brings to privrl.

Each family package (``privrl.policy_evaluation``, ``privrl.offline``, ...) states in its
``__init__.py``::

    FAMILY = Family(
        __name__,
        paper="Qiao & Wang (2023)",
        estimators=("APVI", "DPAPVI"),
        algorithms=(Algorithm("APVI, DP-APVI", ("APVI", "DPAPVI"), "offline tabular RL"),),
        docs="docs/offline.md",
        experiments=("experiments",), frontiers=("experiments",), fit=("fit",), audit=("audit",),
        plans=("plan",), bench=("privrl.bench.entries.offline",),
    )

and :data:`privrl.registry.FAMILIES` lists the package once. Everything that used to be a
hand-kept list is read from the records: the modules the registry imports for each kind of entry
(:meth:`Family.modules`), the estimators of the flat API (``privrl.DPAPVI``, :func:`public_api`),
the README's algorithm table (:func:`algorithm_table`), the benchmark's entries (``privrl bench``)
and, in the test suite, the contract cases and the audit targets each family must provide.

This module imports nothing of privrl, so records are cheap to build.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["Algorithm", "Family", "KIND_FIELDS", "algorithm_table", "public_api"]

#: registry kind -> the field of :class:`Family` naming the modules that register entries of it
KIND_FIELDS: dict[str, str] = {
    "experiment": "experiments",
    "frontier": "frontiers",
    "fit": "fit",
    "audit": "audit",
    "env": "envs",
    "plan": "plans",
    "bench-entry": "bench",
}


@dataclass(frozen=True)
class Algorithm:
    """One row of the README's algorithm table: a label, the classes (public estimator names),
    the setting and, when it differs from the family's, the papers to cite."""

    label: str
    classes: tuple[str, ...]
    setting: str
    paper: str | None = None


@dataclass(frozen=True)
class Family:
    """One paper's package.

    * ``package`` — the package's import name (pass ``__name__`` from its ``__init__.py``);
    * ``paper`` — the citation (authors, venue, year);
    * ``estimators`` — the public estimator classes the package exports (``privrl.<name>`` for each);
    * ``algorithms`` — the README rows (every class of a row must be among ``estimators``);
    * ``experiments`` / ``frontiers`` / ``fit`` / ``audit`` / ``envs`` / ``plans`` — the package's
      submodules (names relative to ``package``) that register experiments, frontiers, ``privrl
      fit`` commands, audit targets, Gymnasium ids and ``privrl plan`` planners
      (:class:`privrl.planning.Planner`, the family's planning functions, which read the noise
      from its calibration) (a module may appear under several kinds: the
      experiment modules of privrl's families also register their frontiers);
    * ``bench`` — the modules that register the family's ``privrl bench`` entries
      (:class:`privrl.bench.spec.Entry`). The benchmark sits on top of the families, so privrl's
      own families keep them in ``privrl.bench.entries`` and name them in full
      (``"privrl.bench.entries.offline"``); a family outside privrl may name a submodule of its own;
    * in every field a name with a dot is a full module name, any other one a submodule of ``package``;
    * ``docs`` — the family's page, relative to the repository root;
    * ``extra`` — the optional extra of privrl some of its features need (``pip install
      'privrl[extra]'``), or None.
    """

    package: str
    paper: str
    estimators: tuple[str, ...]
    algorithms: tuple[Algorithm, ...]
    docs: str
    experiments: tuple[str, ...] = ()
    frontiers: tuple[str, ...] = ()
    fit: tuple[str, ...] = ()
    audit: tuple[str, ...] = ()
    envs: tuple[str, ...] = ()
    plans: tuple[str, ...] = ()
    bench: tuple[str, ...] = ()
    #: why a family has no benchmark entry yet (no task of its setting): the one way to leave ``bench`` empty
    no_bench_reason: str = field(default="", compare=False)
    extra: str | None = None
    extra_reason: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.package or not self.paper or not self.estimators:
            raise ValueError(f"Family {self.package!r}: package, paper and estimators must be given")
        for name in ("estimators", "algorithms", *KIND_FIELDS.values()):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        unknown = sorted({c for a in self.algorithms for c in a.classes} - set(self.estimators))
        if unknown:
            raise ValueError(f"Family {self.package!r}: the algorithm table names classes that are not "
                             f"among its estimators: {', '.join(unknown)}")

    @property
    def name(self) -> str:
        """The package's last component (``"offline"`` for ``privrl.offline``)."""
        return self.package.rpartition(".")[2]

    def modules(self, kind: str) -> tuple[str, ...]:
        """The full names of the modules that register entries of ``kind`` (none for the kind no
        family registers: the benchmark's tasks)."""
        name = KIND_FIELDS.get(kind)
        return () if name is None else tuple(m if "." in m else f"{self.package}.{m}" for m in getattr(self, name))


def public_api(families: Iterable[Family]) -> dict[str, str]:
    """``estimator name -> package`` for the flat API (``privrl.<name>`` imports the package on
    first use); a name exported by two families is an error."""
    api: dict[str, str] = {}
    for family in families:
        for name in family.estimators:
            if name in api:
                raise ValueError(f"{name} is exported by both {api[name]} and {family.package}")
            api[name] = family.package
    return api


def algorithm_table(families: Sequence[Family]) -> str:
    """The README's algorithm table (Markdown), one row per :class:`Algorithm` of each family."""
    lines = ["| algorithm | class | paper | setting | docs |", "|---|---|---|---|---|"]
    for family in families:
        docs = f"[{family.docs.rpartition('/')[2]}]({family.docs})"
        if family.extra:
            docs += f" (extra `{family.extra}`{': ' + family.extra_reason if family.extra_reason else ''})"
        for row in family.algorithms:
            classes = ", ".join(f"`privrl.{c}`" for c in row.classes)
            lines.append(f"| {row.label} | {classes} | {row.paper or family.paper} | {row.setting} | {docs} |")
    return "\n".join(lines) + "\n"
