"""Adding a family is one folder plus one line: the example family of ``tests/example_family/``,
added at run time with ``privrl.registry.add_family``, shows up in ``privrl list``, ``privrl fit
--help``, ``privrl audit --list``, ``privrl plan --help`` and ``privrl bench --list``, fits and plans
from the command line, runs in the benchmark, and passes the contract checks and its audit, with
nothing else edited; ``make lint`` checks it as it checks privrl's families."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from family_contracts import cases_of
from privrl import PrivacyBudget, cli, plan, registry
from privrl.audit.registry import run_target
from privrl.bench.entries import get_entry
from privrl.bench.instances import PETruth, policy_evaluation_instance
from privrl.data import TrajectoryDataset
from privrl.errors import InvalidParameterError
from privrl.experiments.runner import execute_run, plan_runs
from privrl.family import algorithm_table
from privrl.testing import check_contract


@pytest.fixture(scope="module")
def family():
    """The example family added for this module's tests; the registry is restored afterwards."""
    for kind in registry.KINDS:   # every kind loaded first: restored entries then stay loaded (their modules
        registry.entries(kind)    # are imported once, so a kind cleared after the test would stay empty)
    saved = {kind: (dict(registry._ENTRIES[kind]), dict(registry._ORIGINS[kind])) for kind in registry.KINDS}
    loaded = set(registry._LOADED)
    families = list(registry.FAMILIES)
    yield registry.add_family("example_family")
    registry.FAMILIES[:] = families
    registry._LOADED.clear()
    registry._LOADED.update(loaded)
    for kind, (entries, origins) in saved.items():
        registry._ENTRIES[kind].clear()
        registry._ENTRIES[kind].update(entries)
        registry._ORIGINS[kind].clear()
        registry._ORIGINS[kind].update(origins)
    for name in [m for m in sys.modules if m == "example_family" or m.startswith("example_family.")]:
        del sys.modules[name]


def _cli(capsys, *argv) -> str:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # --help
        code = exc.code
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_the_family_is_found_by_every_command(family, capsys):
    assert family in registry.families() and family.name == "example_family"
    assert "example-family-mean" in _cli(capsys, "list")
    assert "example-mean" in _cli(capsys, "fit", "--help")
    assert "--return-bound" in _cli(capsys, "fit", "example-mean", "--help")  # from the declared Param
    assert "example-mean" in _cli(capsys, "audit", "--list")
    assert "example-mean" in _cli(capsys, "plan", "--help")
    assert registry.registered_by("experiment", family) == ["example-family-mean"]
    assert "`privrl.PrivateMeanReturn`" in algorithm_table([family])


def test_the_family_passes_the_contract(family):
    cases = cases_of(family)
    assert {type(c.make(c.budget)).__name__ for c in cases} == set(family.estimators)
    for case in cases:
        check_contract(case)


def test_the_family_fits_from_the_command_line(family, capsys, tmp_path):
    data = sys.modules["example_family.experiments"].one_step_episodes(np.linspace(0.0, 1.0, 200))
    data.save(tmp_path / "returns.npz")
    _cli(capsys, "fit", "example-mean", "--data", str(tmp_path / "returns.npz"), "--epsilon", "1",
         "--delta", "1e-5", "--seed", "0", "--out", str(tmp_path / "fit"))
    cert = json.loads((tmp_path / "fit" / "certificate.json").read_text())
    assert cert["algorithm"] == "example-mean" and cert["private"] and cert["epsilon_spent"] <= 1.0
    assert abs(float(np.load(tmp_path / "fit" / "result.npz")["mean"][0]) - 0.5) < 0.05


def test_the_family_experiment_runs_and_its_audit_catches_the_control(family):
    outcome = execute_run(plan_runs("example-family-mean", "smoke", seeds=[0])[0])
    assert outcome.status == "ok" and outcome.rows[0]["metric"] == "abs_error"
    assert run_target("example-mean", fast=True, rng=0).verdict == "consistent"
    assert run_target("example-mean", broken="noise-div-10", fast=True, rng=0).verdict == "VIOLATION"


def test_the_family_plans_from_the_command_line(family, capsys):
    """A new family's planner: found by name, its noise is the estimator's own."""
    noise_std = sys.modules["example_family.estimators"].noise_std
    out = _cli(capsys, "plan", "example-mean", "--n", "1000", "--epsilon", "1", "--delta", "1e-5")
    result = plan("PrivateMeanReturn", n=1000, epsilon=1.0, delta=1e-5)
    assert result.row("mean").noise_std == noise_std(PrivacyBudget(epsilon=1.0, delta=1e-5), 1.0 / 1000, "tight")
    assert f"verdict: {result.verdict.upper()}" in out and result.verdict == "useful"


def test_the_family_is_in_the_benchmark(family, capsys):
    """The record's ``bench`` module is all ``privrl bench`` needs: the entry is listed and fits an
    undiscounted policy-evaluation instance through the benchmark's seam (a discounted one is refused)."""
    assert registry.registered_by("bench-entry", family) == ["example-mean"]
    assert "example-mean" in _cli(capsys, "bench", "--list")
    zeros = np.zeros(201, dtype=int)   # 201 one-step episodes of one state, returns evenly spread on [0, 1]
    data = TrajectoryDataset(zeros, zeros, np.linspace(0.0, 1.0, 201), zeros, np.arange(202), n_states=1, n_actions=1)
    truth = PETruth(np.array([0.5]), np.array([1.0]))
    inst = policy_evaluation_instance("example", data, truth, gamma=1.0, return_bound=1.0, target="value")
    budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    fitted = get_entry("example-mean").fit(inst.input, budget, np.random.default_rng(0))
    assert abs(fitted.output.value - 0.5) < 0.05 and fitted.ledger is fitted.estimator.privacy_ledger_
    assert fitted.estimator.privacy_spent(1e-5) <= 1.0 + 1e-9
    discounted = policy_evaluation_instance("example", data, truth, gamma=0.99, return_bound=1.0, target="value")
    with pytest.raises(InvalidParameterError, match="'gamma'"):
        get_entry("example-mean").fit(discounted.input, budget, np.random.default_rng(0))


def test_the_template_is_linted_like_a_family():
    """``make lint`` runs mypy on ``tests/example_family`` too (ruff checks every test file), so a
    copy of the template starts clean."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "tests/example_family" in config["tool"]["mypy"]["files"]
