"""``privrl audit``: audit one release (or ``--all``) and print/write the table.

The main command line calls :func:`add_parser` on its sub-parsers; the parsed namespace carries
``func`` (:func:`run`), which returns the exit code::

    privrl audit ALGORITHM [--trials N] [--epsilon E --delta D] [--broken VARIANT] [--out DIR] [--seed S]
    privrl audit --all [--fast] [--out DIR]
    privrl audit --list

Exit code 1 when a real (non-broken) target shows a VIOLATION or a negative control that must be
caught is not (a failed audit design); 0 otherwise.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from privrl._rng import derive_seed
from privrl.audit.core import VIOLATION, AuditResult
from privrl.audit.registry import all_targets, get_target, run_target, unavailable_areas
from privrl.audit.report import format_table, write_report
from privrl.errors import InvalidParameterError, PrivrlError

__all__ = ["add_parser", "run", "main"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``audit`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "audit", help="empirical privacy audit: a lower bound on epsilon from neighbouring inputs",
        description="Run a private release many times on two neighbouring inputs and report a "
                    "Clopper-Pearson lower bound on epsilon beside the claimed epsilon.")
    p.add_argument("algorithm", nargs="?", help="audit target (see --list)")
    p.add_argument("--all", action="store_true", help="audit every target and every negative control; "
                   "writes OUT/audit/audit.md and audit.json")
    p.add_argument("--list", action="store_true", help="list the targets and their broken variants")
    p.add_argument("--trials", type=int, default=None, help="runs per input (default: the target's)")
    p.add_argument("--epsilon", type=float, default=None, help="target epsilon the release is calibrated to")
    p.add_argument("--delta", type=float, default=None, help="delta of the claim")
    p.add_argument("--broken", default=None, help="audit a deliberately broken variant (negative control)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of epsilon_lower (default 0.95)")
    p.add_argument("--fast", action="store_true", help="use the small trial counts of the test suite")
    p.add_argument("--out", default=None, help="output directory (reports go to OUT/audit/)")
    p.add_argument("--seed", type=int, default=0, help="seed (each target derives its own stream)")
    p.set_defaults(func=run)
    return p


def _expected() -> dict[tuple[str, str | None], bool]:
    return {(t.name, v.name): v.caught for t in all_targets() for v in t.variants}


def _one(name: str, broken: str | None, args: argparse.Namespace) -> AuditResult:
    return run_target(name, trials=args.trials, epsilon=args.epsilon, delta=args.delta, broken=broken,
                      confidence=args.confidence, fast=args.fast, rng=derive_seed(args.seed, name, broken))


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this audit (recorded in ``audit.md``)."""
    parts = ["privrl", "audit", "--all" if args.all else args.algorithm]
    for opt in ("trials", "epsilon", "delta", "broken", "confidence", "out", "seed"):
        value = getattr(args, opt)
        if value is not None:
            parts += [f"--{opt}", str(value)]
    if args.fast:
        parts.append("--fast")
    return " ".join(shlex.quote(p) for p in parts)


def _failures(results: Sequence[AuditResult], expected: dict[tuple[str, str | None], bool]) -> list[str]:
    out = []
    for r in results:
        if r.broken is None and r.verdict == VIOLATION:
            out.append(f"VIOLATION: {r.algorithm} (epsilon_lower {r.epsilon_lower:.3f} > claimed "
                       f"{r.claimed_epsilon:.3f})")
        elif r.broken is not None and expected.get((r.algorithm, r.broken), True) and r.verdict != VIOLATION:
            out.append(f"negative control not caught: {r.algorithm} --broken {r.broken}")
    return out


def run(args: argparse.Namespace) -> int:
    """Execute the parsed ``audit`` command; return the exit code."""
    if args.list:
        for t in all_targets():
            variants = ", ".join(v.name + ("" if v.caught else " (must stay consistent)") for v in t.variants)
            print(f"{t.name:<24} {t.description} [unit: {t.privacy_unit}; eps={t.epsilon:g}, delta={t.delta:g}]"
                  f"\n{'':<24} broken variants: {variants or '-'}")
        for mod, why in unavailable_areas().items():
            print(f"(not available) {mod}: {why}")
        return 0
    if args.all == (args.algorithm is not None):
        raise InvalidParameterError("The 'algorithm' parameter of privrl audit must be given exactly when "
                                    f"--all is not. Got algorithm={args.algorithm!r}, all={args.all!r} instead.")
    expected = _expected()
    if args.all:
        results = []
        for t in all_targets():
            for broken in [None, *(v.name for v in t.variants)]:
                results.append(_one(t.name, broken, args))
                print(format_table(results[-1:], expected).splitlines()[-1], flush=True)
    else:
        get_target(args.algorithm)
        results = [_one(args.algorithm, args.broken, args)]
    print(format_table(results, expected))
    if args.out is not None:
        md, js = write_report(results, args.out, expected=expected,
                              unavailable=unavailable_areas() if args.all else None, command=_command_line(args))
        print(f"wrote {md} and {js}")
    failures = _failures(results, expected)
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m privrl.audit.cli ...``)."""
    parser = argparse.ArgumentParser(prog="privrl")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except PrivrlError as exc:
        print(f"privrl audit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
