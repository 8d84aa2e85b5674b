"""``privrl audit``: audit one release (or ``--all``) and print/write the table.

The main command line calls :func:`add_parser` on its sub-parsers; the parsed namespace carries
``func`` (:func:`run`), which returns the exit code::

    privrl audit ALGORITHM [--sharp] [--trials N] [--epsilon E --delta D] [--broken VARIANT] [--out DIR]
                 [--seed S]
    privrl audit --all [--fast] [--out DIR] [--quiet]
    privrl audit --list

``--all`` audits every target black-box and, when it has an optimal statistic, at the release point
(``--sharp``), then every negative control (the ``noise-div-2`` ones at the release point). Exit code
1 when a real (non-broken) target shows a VIOLATION, a release-point audit is not sharp, or a
negative control that must be caught is not (a failed audit design); 0 otherwise. On a terminal,
``--all`` shows a progress bar over its rows (:mod:`privrl._progress`; none with ``--quiet``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from privrl._progress import progress
from privrl.audit.core import RELEASE_POINT, VIOLATION, AuditResult
from privrl.audit.registry import (
    SHARPNESS,
    all_targets,
    audit_seed,
    get_target,
    reaches_sharpness,
    run_target,
)
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
    p.add_argument("--sharp", action="store_true", help="the release-point audit: the release's optimal "
                   f"statistic on many releases (must reach eps_lower >= {SHARPNESS:g} x claimed eps)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of epsilon_lower (default 0.95)")
    p.add_argument("--fast", action="store_true", help="use the small trial counts of the test suite")
    p.add_argument("--out", default=None, help="output directory (reports go to OUT/audit/)")
    p.add_argument("--seed", type=int, default=0, help="seed (each target derives its own stream)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def _expected() -> dict[tuple[str, str | None], bool]:
    return {(t.name, v.name): v.caught for t in all_targets() for v in t.variants}


def _one(name: str, broken: str | None, args: argparse.Namespace, sharp: bool = False) -> AuditResult:
    return run_target(name, trials=args.trials, epsilon=args.epsilon, delta=args.delta, broken=broken,
                      confidence=args.confidence, fast=args.fast, sharp=sharp,
                      rng=audit_seed(args.seed, name, broken, sharp))


def _rows(target) -> list[tuple[str | None, bool]]:
    """``(broken, sharp)`` of every row ``--all`` audits for ``target``."""
    rows = [(None, False)] + ([(None, True)] if target.optimal else [])
    return rows + [(v.name, v.sharp) for v in target.variants]


def _command_line(args: argparse.Namespace) -> str:
    """The command that reproduces this audit (recorded in ``audit.md``)."""
    parts = ["privrl", "audit", "--all" if args.all else args.algorithm]
    if args.sharp:
        parts.append("--sharp")
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
        elif r.broken is None and r.mode == RELEASE_POINT and not reaches_sharpness(r):
            out.append(f"release-point audit not sharp: {r.algorithm} (epsilon_lower {r.epsilon_lower:.3f} < "
                       f"{SHARPNESS:g} x claimed {r.claimed_epsilon:.3f})")
        elif r.broken is not None and expected.get((r.algorithm, r.broken), True) and r.verdict != VIOLATION:
            out.append(f"negative control not caught: {r.algorithm} --broken {r.broken}")
    return out


def _audit_all(args: argparse.Namespace, expected: dict[tuple[str, str | None], bool]) -> list[AuditResult]:
    """Every row of ``--all``, each printed as it finishes (above the progress bar)."""
    rows = [(t.name, broken, sharp) for t in all_targets() for broken, sharp in _rows(t)]
    results = []
    with progress(len(rows), "audit", args.quiet) as bar:
        for name, broken, sharp in rows:
            results.append(_one(name, broken, args, sharp))
            bar.write(format_table(results[-1:], expected).splitlines()[-1])
            sys.stdout.flush()
            bar.update(1)
    return results


def run(args: argparse.Namespace) -> int:
    """Execute the parsed ``audit`` command; return the exit code."""
    if args.list:
        for t in all_targets():
            variants = ", ".join(v.name + ("" if v.caught else " (must stay consistent)")
                                 + (" (release point)" if v.sharp else "") for v in t.variants)
            point = f"release point: {t.optimal}" if t.optimal else "no release-point audit"
            print(f"{t.name:<24} {t.description} [unit: {t.privacy_unit}; eps={t.epsilon:g}, delta={t.delta:g}; "
                  f"{point}]\n{'':<24} broken variants: {variants or '-'}")
        return 0
    if args.all == (args.algorithm is not None):
        raise InvalidParameterError("The 'algorithm' parameter of privrl audit must be given exactly when "
                                    f"--all is not. Got algorithm={args.algorithm!r}, all={args.all!r} instead.")
    expected = _expected()
    if args.all:
        results = _audit_all(args, expected)
    else:
        get_target(args.algorithm)
        results = [_one(args.algorithm, args.broken, args, args.sharp)]
    print(format_table(results, expected))
    if args.out is not None:
        md, js = write_report(results, args.out, expected=expected, command=_command_line(args))
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
