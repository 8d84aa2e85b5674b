"""The one registry: every kind resolves, unknown names are one-line errors, a module that fails to
import is an error naming it (never a silent skip), and the family records name the registering
modules (the benchmark's entries too)."""

from __future__ import annotations

import sys

import pytest

from privrl import registry
from privrl.errors import InvalidParameterError, PrivrlError
from privrl.family import Algorithm, Family


@pytest.fixture
def fresh_kind(monkeypatch):
    """Kind "fit" with its own empty store, no family and no module (so the real fit modules never
    register into the temporary store), restored afterwards."""
    monkeypatch.setitem(registry._ENTRIES, "fit", {})
    monkeypatch.setitem(registry._ORIGINS, "fit", {})
    monkeypatch.setattr(registry, "FAMILIES", [])
    monkeypatch.setitem(registry.SHARED, "fit", ())
    monkeypatch.setattr(registry, "_LOADED", set())
    return "fit"


def _write_module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_a_module_that_raises_on_import_is_named(tmp_path, monkeypatch, fresh_kind):
    bad = _write_module(tmp_path, monkeypatch, "privrl_test_bad_module",
                        "raise RuntimeError('boom at import')\n")
    monkeypatch.setitem(registry.SHARED, "fit", (bad,))
    with pytest.raises(registry.RegistryImportError) as info:
        registry.entries("fit")
    msg = str(info.value)
    assert isinstance(info.value, PrivrlError)
    assert "privrl_test_bad_module" in msg and "RuntimeError: boom at import" in msg
    assert "\n" not in msg
    # not remembered as loaded: the next call fails the same way instead of returning nothing
    with pytest.raises(registry.RegistryImportError, match="privrl_test_bad_module"):
        registry.get("fit", "anything")


def test_a_missing_optional_extra_names_the_extra(tmp_path, monkeypatch, fresh_kind):
    mod = _write_module(tmp_path, monkeypatch, "privrl_test_needs_torch",
                        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    monkeypatch.setitem(registry.SHARED, "fit", (mod,))
    with pytest.raises(registry.RegistryImportError) as info:
        registry.entries("fit")
    msg = str(info.value)
    assert "privrl_test_needs_torch" in msg and "'deep'" in msg and "privrl[deep]" in msg


def test_a_missing_unknown_dependency_is_not_blamed_on_an_extra(tmp_path, monkeypatch, fresh_kind):
    mod = _write_module(tmp_path, monkeypatch, "privrl_test_missing_dep",
                        "import privrl_no_such_package_xyz\n")
    monkeypatch.setitem(registry.SHARED, "fit", (mod,))
    with pytest.raises(registry.RegistryImportError) as info:
        registry.entries("fit")
    msg = str(info.value)
    assert "privrl_test_missing_dep" in msg and "privrl_no_such_package_xyz" in msg
    assert "extra" not in msg


def test_modules_are_imported_on_first_use_only(tmp_path, monkeypatch, fresh_kind):
    mod = _write_module(tmp_path, monkeypatch, "privrl_test_good_module",
                        "from privrl import registry\nregistry.register('fit', 'good', 42)\n")
    monkeypatch.setitem(registry.SHARED, "fit", (mod,))
    assert mod not in sys.modules
    assert registry.storage("fit") == {}
    assert registry.get("fit", "good") == 42
    assert mod in sys.modules


def test_each_kind_registers_and_resolves():
    import privrl.envs  # noqa: F401 - registers the env ids
    from privrl.audit.registry import get_target
    from privrl.experiments.registry import get_experiment
    from privrl.fitters import get_fit_command

    for family in registry.families():
        for exp_id in registry.registered_by("experiment", family):
            assert get_experiment(exp_id).id == exp_id
            assert registry.get("experiment", exp_id) is get_experiment(exp_id)
    assert get_target("laplace").name == "laplace"
    assert registry.get("audit", "laplace") is get_target("laplace")
    assert registry.get("env", "privrl/Chain-v0") == "privrl.envs.chain:make_chain_env"
    assert get_fit_command("lsw").name == "lsw"
    assert registry.get("fit", "lsw") is get_fit_command("lsw")


def test_family_wrappers_register_into_the_one_registry(fresh_kind):
    from privrl.fitters import FitCommand, get_fit_command, register_fit

    cmd = FitCommand("test-cmd", "help", lambda p: None, lambda a: None)
    assert register_fit(cmd) is cmd
    assert registry.storage("fit") == {"test-cmd": cmd}
    assert get_fit_command("test-cmd") is cmd


def test_fit_modules_register_real_commands():
    from privrl.fitters import all_fit_commands

    names = set(all_fit_commands())
    assert {"lsw", "dp-lsw", "apvi", "dp-vapvi", "linopt-vi", "dp-q-learning"} <= names


@pytest.mark.parametrize("kind,label", [("experiment", "experiment id"), ("fit", "fit algorithm"),
                                        ("audit", "audit target"), ("env", "environment id")])
def test_unknown_names_are_one_line_errors_listing_known_ones(kind, label):
    import privrl.envs  # noqa: F401

    with pytest.raises(InvalidParameterError) as info:
        registry.get(kind, "no-such-name")
    msg = str(info.value)
    assert msg.startswith(f"Unknown {label} 'no-such-name'. Known: ") and "\n" not in msg
    known = sorted(registry.entries(kind))
    assert known and ", ".join(known) in msg


def test_unknown_kind_is_an_error():
    with pytest.raises(InvalidParameterError, match="'kind' parameter .* Got 'plots'"):
        registry.entries("plots")


def test_a_different_object_under_a_taken_name_is_an_error(fresh_kind):
    registry.register("fit", "x", ("a",))
    registry.register("fit", "x", ("a",))  # equal: a no-op
    with pytest.raises(InvalidParameterError, match="'x' is registered twice"):
        registry.register("fit", "x", ("b",))
    registry.register("fit", "x", ("b",), replace=True)
    assert registry.storage("fit")["x"] == ("b",)


def test_audit_names_keep_the_parameter_message():
    from privrl.audit.registry import get_target

    with pytest.raises(InvalidParameterError) as info:
        get_target("nope")
    msg = str(info.value)
    assert msg.startswith("The 'algorithm' parameter of privrl audit must be one of ")
    assert "laplace" in msg and msg.endswith("Got 'nope' instead.")


def test_a_record_names_submodules_or_full_modules_and_the_benchmark_entries():
    """A record's names are submodules of its package, or full module names when dotted (privrl's
    families keep their benchmark entries on top of them, in privrl.bench.entries); the benchmark's
    plugins come after every family's entries."""
    family = Family("plugin_pkg.fam", paper="P", estimators=("E",), algorithms=(Algorithm("E", ("E",), "s"),),
                    docs="d.md", fit=("fit",), bench=("bench", "privrl.bench.entries.offline"))
    assert family.modules("fit") == ("plugin_pkg.fam.fit",)
    assert family.modules("bench-entry") == ("plugin_pkg.fam.bench", "privrl.bench.entries.offline")
    assert family.modules("bench-task") == ()
    listed = registry.modules("bench-entry")
    assert listed[-1] == "privrl.bench.plugins" and "privrl.bench.entries.offline" in listed
    assert listed.index("privrl.bench.entries.offline") > listed.index("privrl.bench.entries.baselines")
