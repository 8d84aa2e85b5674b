"""Claims as declarations: what a claim states, whose it is, and how the measurement decides it.

A family's claims are a list of :class:`ClaimSpec` — each one *data*: the statement, the paper's
words and where it says them, the rule (a verdict function of :mod:`privrl.experiments.verdicts`,
or a family's own rule built from them, with its fixed arguments bound by
:func:`functools.partial`) and the inputs (a function reading the rule's arguments from the
results frame). One shared function, :func:`evaluate`, turns a list of them into
:class:`~privrl.experiments.spec.Claim` objects::

    SIMILAR = ClaimSpec(
        "[{config} config] Similar utility to the Balle et al. baseline (final returns within 2).",
        rule=partial(compare_curves, claim="equal", tol=2.0, test="welch"),
        inputs=similar_curves,            # frame -> Case(args={"a": ..., "b": ...}, labels={"config": ...})
        source="paper", where="§4, Figure 2", quote="their approach shares similar performance with ours")
    claims = evaluate([SIMILAR, ...], df)

``inputs(data)`` returns the arguments of one claim (a mapping, or a :class:`Case` when the
statement has ``{placeholders}`` to fill), several (an iterable: one claim each, e.g. one per
configuration) or none (``None``: nothing to judge, no claim). The rule returns a
:class:`~privrl.experiments.verdicts.Verdict` — its detail is the claim's measured text — or an
:class:`Outcome` when the claim's measured text or value cells (``paper_calibration_value``,
``tight_value``, ``headline``...) are computed from the data too. A spec's own value fields are
the claim's unless the outcome sets them.

Each claim's rule is applied again under every perturbed rule setting of
:data:`~privrl.experiments.verdicts.PERTURBED`; a verdict that changes makes the claim fragile, and
its ``robustness`` text lists each other outcome with the settings that give it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from privrl._validation import check_option, param_error
from privrl.experiments.spec import SOURCES, Claim
from privrl.experiments.verdicts import PERTURBED, Verdict, under

__all__ = ["Case", "ClaimSpec", "Outcome", "PaperSource", "evaluate", "paper_source"]

#: the value fields a spec or an outcome may give a claim
VALUE_FIELDS = ("paper_value", "paper_calibration_value", "tight_value", "headline")


@dataclass(frozen=True)
class Case:
    """One claim's inputs: the rule's keyword arguments and the labels that fill the statement's
    ``{placeholders}`` (``str.format``: every statement is formatted, so a literal brace is doubled
    and a placeholder without its label is an error)."""

    args: Mapping[str, Any]
    labels: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """What a rule returns when more than the verdict comes from the data: the claim's measured
    text (``None``: the verdict's detail) and value cells (keys of :data:`VALUE_FIELDS`)."""

    verdict: Verdict
    measured: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.values) - set(VALUE_FIELDS))
        if unknown:
            raise param_error("values", "Outcome", f"keys among {VALUE_FIELDS}", unknown)


@dataclass(frozen=True)
class ClaimSpec:
    """A claim as data (module docstring). ``source="paper"`` needs ``quote`` and ``where``, checked
    when the spec is declared; ``headline`` and the value fields are the claim's unless the rule's
    :class:`Outcome` computes them."""

    statement: str
    rule: Callable[..., Verdict | Outcome]
    inputs: Callable[[Any], Mapping[str, Any] | Case | Iterable[Mapping[str, Any] | Case] | None]
    source: str = "privrl"
    quote: str = ""
    where: str = ""
    headline: bool = False
    paper_value: str = ""
    paper_calibration_value: str = ""
    tight_value: str = ""

    def __post_init__(self) -> None:
        check_option(self.source, "source", SOURCES, owner="ClaimSpec")
        if self.source == "paper":
            for name in ("quote", "where"):
                if not getattr(self, name).strip():
                    raise param_error(name, "ClaimSpec", "the paper's words and their location for a paper "
                                      "claim (source='paper')", getattr(self, name))
        for name in ("rule", "inputs"):
            if not callable(getattr(self, name)):
                raise param_error(name, "ClaimSpec", "a callable", getattr(self, name))

    def cases(self, data: object) -> list[Case]:
        """The claims this spec makes on ``data``: one :class:`Case` each."""
        found = self.inputs(data)
        if found is None:
            return []
        if isinstance(found, (Mapping, Case)):
            found = [found]
        return [c if isinstance(c, Case) else Case(args=c) for c in found]

    def _outcome(self, case: Case) -> Outcome:
        result = self.rule(**case.args)
        outcome = result if isinstance(result, Outcome) else Outcome(result)
        if not isinstance(outcome.verdict, Verdict):
            raise param_error("rule", "ClaimSpec", "a function returning a Verdict or an Outcome", result)
        return outcome

    def robustness(self, case: Case, verdict: str) -> str:
        """``""`` when the rule gives ``verdict`` under every perturbed setting, else "fragile: …"
        with each other verdict and the settings that give it."""
        others: dict[str, list[str]] = {}
        for setting in PERTURBED:
            with under(setting):
                other = self._outcome(case).verdict.verdict
            if other != verdict:
                others.setdefault(other, []).append(setting.name)
        return "" if not others else "fragile: " + "; ".join(
            f"{other} under {', '.join(names)}" for other, names in others.items())

    def claim(self, case: Case) -> Claim:
        """The claim of one case: the rule applied to its arguments, with its robustness."""
        outcome = self._outcome(case)
        values = {name: getattr(self, name) for name in VALUE_FIELDS}
        values.update(outcome.values)
        text = self.statement.format_map(case.labels)
        return outcome.verdict.claim(text, outcome.measured, source=self.source, quote=self.quote,
                                     where=self.where, robustness=self.robustness(case, outcome.verdict.verdict),
                                     **values)


def evaluate(specs: Sequence[ClaimSpec], data: object) -> list[Claim]:
    """The claims of ``specs`` on ``data`` (a results frame, or what a family prepares from one),
    in the order of the specs and, within a spec, of its cases."""
    return [spec.claim(case) for spec in specs for case in spec.cases(data)]


class PaperSource(TypedDict):
    """The fields of a paper's claim, as :func:`paper_source` makes them."""

    source: str
    where: str
    quote: str


def paper_source(where: str, quote: str) -> PaperSource:
    """The fields of a paper's claim (its words and where it says them), to spread into a
    :class:`ClaimSpec`: ``ClaimSpec(..., **paper_source("§6", "the paper's words"))``."""
    return {"source": "paper", "where": where, "quote": quote}
