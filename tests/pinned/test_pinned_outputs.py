"""Seeded outputs pinned before a structural change (structure-only work must not move them).

Every contract case is fitted once with a fixed seed under its own budget; every registered
experiment runs its smoke grid's first setting with seed 0; the names registered by privrl's
modules (experiments, fit commands, audit targets, ...) are pinned too. The released output is summarised by
its length, sum, sum of squares and first entries (rounded to 9 significant digits) and compared
with ``pinned_outputs.json``. A deliberate change of a seeded output (e.g. a new noise stream)
regenerates the file with ``PYTHONPATH=tests python tests/pinned/test_pinned_outputs.py --update`` and says why in
the commit message.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from family_contracts import all_cases

PINS = Path(__file__).with_name("pinned_outputs.json")
SEED = 12345


def _round(x: float) -> float:
    return float(f"{x:.9g}") if math.isfinite(x) else x


def summary(values) -> dict:
    a = np.asarray(values, dtype=float).ravel()
    return {"n": int(a.size), "sum": _round(float(np.sum(a))), "sumsq": _round(float(np.sum(a * a))),
            "head": [_round(float(v)) for v in a[:4]]}


def case_output(case) -> dict:
    est = case.make(case.budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case.fit(est, np.random.default_rng(SEED))
    return summary(case.output(est))


CASES = all_cases()


def _load() -> dict:
    return json.loads(PINS.read_text()) if PINS.exists() else {}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_contract_case_output_is_pinned(case):
    pins = _load().get("cases", {})
    assert case.name in pins, f"no pin for {case.name}: run this file with --update"
    got = case_output(case)
    want = pins[case.name]
    assert got["n"] == want["n"]
    np.testing.assert_allclose([got["sum"], got["sumsq"], *got["head"]],
                               [want["sum"], want["sumsq"], *want["head"]], rtol=1e-7, atol=1e-9)


def experiment_output(exp_id: str) -> dict:
    """The smoke grid's first setting with seed 0: every numeric metric column, summarised."""
    from privrl.experiments.runner import execute_run, plan_runs

    spec = plan_runs(exp_id, "smoke", seeds=[0])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = execute_run(spec)
    assert outcome.status == "ok", outcome.manifest.get("error")
    columns: dict[str, list[float]] = {}
    for row in outcome.rows or []:
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "wall_time_s":
                columns.setdefault(key, []).append(float(value))
    return {key: summary(values) for key, values in sorted(columns.items())}


def _experiments():
    from privrl.experiments import all_experiments

    return sorted(all_experiments())


EXPERIMENTS = _experiments()


@pytest.mark.parametrize("exp_id", EXPERIMENTS)
def test_experiment_smoke_output_is_pinned(exp_id):
    pins = _load().get("experiments", {})
    assert exp_id in pins, f"no pin for {exp_id}: run this file with --update"
    got, want = experiment_output(exp_id), pins[exp_id]
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key]["n"] == want[key]["n"], key
        np.testing.assert_allclose([got[key]["sum"], got[key]["sumsq"], *got[key]["head"]],
                                   [want[key]["sum"], want[key]["sumsq"], *want[key]["head"]],
                                   rtol=1e-7, atol=1e-9, err_msg=f"{exp_id}: {key}")


def registered_names() -> dict[str, list[str]]:
    """The names privrl's own modules register, by kind (entries of test plugins left out)."""
    from privrl import registry

    return {kind: sorted(name for name in registry.entries(kind)
                         if (registry.origin(kind, name) or "").startswith("privrl."))
            for kind in registry.KINDS}


def test_registered_names_are_pinned():
    """No experiment, frontier, fit command, audit target or environment id goes missing."""
    assert registered_names() == _load().get("names"), "run this file with --update"


def update() -> None:
    pins = {"cases": {case.name: case_output(case) for case in CASES},
            "experiments": {exp_id: experiment_output(exp_id) for exp_id in EXPERIMENTS},
            "names": registered_names()}
    PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    print(f"pinned {len(pins['cases'])} outputs in {PINS}")


if __name__ == "__main__":
    if "--update" in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        update()
