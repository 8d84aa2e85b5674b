"""The house's layers (CONTRIBUTING.md): no import cycle between privrl's modules, no shared module
imports a family, no family imports another, nothing but the test suites imports ``privrl.testing``,
``privrl.data`` never imports ``privrl.envs``, and the benchmark (``privrl.bench``) sits on top of
the families: only the shell imports it. Imports inside functions count as much as those at the
top."""

from __future__ import annotations

import ast
from pathlib import Path

from privrl import registry

SRC = Path(registry.__file__).parent
FAMILIES = tuple(registry.FAMILIES)
#: the layer on top of the families (it may import them) and the shell that may import it
TOP, SHELL = "privrl.bench", ("privrl.cli", "privrl.commands")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """The privrl modules ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            found.update(subs or [base])
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _cycle() -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle():
    assert len(GRAPH) > 50 and sum(map(len, GRAPH.values())) > 200, "the scan is broken"
    assert _cycle() is None, " -> ".join(_cycle() or [])


def _within(module: str, package: str | tuple[str, ...]) -> bool:
    packages = (package,) if isinstance(package, str) else package
    return any(module == p or module.startswith(p + ".") for p in packages)


def _family_of(module: str) -> str | None:
    return next((f for f in FAMILIES if _within(module, f)), None)


def test_no_shared_module_imports_a_family():
    offenders = {name: sorted(m for m in deps if _family_of(m)) for name, deps in GRAPH.items()
                 if not _family_of(name) and not _within(name, TOP)}
    assert {k: v for k, v in offenders.items() if v} == {}
    assert any(_family_of(m) for deps in GRAPH.values() for m in deps), "no family import found: the scan is broken"


def test_only_the_shell_imports_the_bench():
    """The benchmark is a layer on top of the families: no family and no shared layer imports it
    (the registry names its registering modules as strings, like the families')."""
    offenders = {name: sorted(m for m in deps if _within(m, TOP)) for name, deps in GRAPH.items()
                 if not _within(name, TOP) and not _within(name, SHELL)}
    assert {k: v for k, v in offenders.items() if v} == {}
    assert any(_within(m, TOP) for name, deps in GRAPH.items() if _within(name, SHELL) for m in deps), \
        "the shell imports no benchmark module: the scan is broken"
    assert any(_within(m, FAMILIES) for name, deps in GRAPH.items() if _within(name, TOP) for m in deps), \
        "the benchmark imports no family: the scan is broken"


#: (importing module, imported family) pairs allowed to cross between families: none. A part of a
#: family that another family needs moves to a shared layer below both (CONTRIBUTING.md, "The house")
CROSS_FAMILY_EXCEPTIONS: set[tuple[str, str]] = set()


def test_no_family_imports_another_family():
    """A family stands on the shared layers only: no module of one family imports another family
    (CONTRIBUTING.md, "The house")."""
    crossings = {(name, _family_of(m)) for name, deps in GRAPH.items() if _family_of(name)
                 for m in deps if _family_of(m) not in (None, _family_of(name))}
    assert crossings == CROSS_FAMILY_EXCEPTIONS
    assert sum(1 for name, deps in GRAPH.items() if _family_of(name) for m in deps if _family_of(m)) > 20, \
        "the scan found no import inside a family: it is broken"


def _unit(module: str) -> str:
    """The room of the house a module belongs to: its family, the benchmark, or its top-level
    package or module under privrl (``privrl.privacy``, ``privrl.base``, ...)."""
    return _family_of(module) or (TOP if _within(module, TOP) else ".".join(module.split(".")[:2]))


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """The floor of every room (:func:`_unit`) of ``graph`` (modules → the modules they import): 1
    for a room that imports no other room, else one above the highest room it imports; a cycle
    between rooms is an error."""
    rooms: dict[str, set[str]] = {}
    for name, deps in graph.items():
        rooms.setdefault(_unit(name), set()).update(_unit(m) for m in deps if _unit(m) != _unit(name))
    out: dict[str, int] = {}

    def floor(room: str, path: tuple[str, ...] = ()) -> int:
        if room in path:
            raise AssertionError("rooms in a cycle: " + " -> ".join((*path, room)))
        if room not in out:
            out[room] = 1 + max((floor(r, (*path, room)) for r in rooms.get(room, ())), default=0)
        return out[room]

    for room in rooms:
        floor(room)
    return out


def test_every_family_stands_on_the_same_floor():
    """The families are one floor of the house: each stands on shared layers only, so none sits
    above another (a family importing another would lift it a floor, as Wang & Hegde's Balle-style
    baseline once lifted q_learning). The benchmark stands above all of them."""
    level = floors(GRAPH)
    by_family = {f: level[f] for f in FAMILIES}
    assert len(set(by_family.values())) == 1, by_family
    assert level[TOP] > max(by_family.values()) > level["privrl.privacy"], "the floors are not computed"


def test_floors_see_a_family_that_imports_another():
    """The floor computation is not vacuous: a family that imports another sits one floor above it."""
    a, b = FAMILIES[0], FAMILIES[1]
    lifted = {**GRAPH, f"{a}.extra_baseline": {f"{b}.x"}, f"{b}.x": set()}
    level = floors(lifted)
    assert level[a] == level[b] + 1 > 1


def test_no_production_module_imports_the_test_harness():
    """``privrl.testing`` (the contract checks) is for test suites: nothing else in privrl imports
    it (what production code shares with it, such as ``use_noise``, lives in ``privrl.base``)."""
    offenders = sorted(name for name, deps in GRAPH.items() if "privrl.testing" in deps)
    assert offenders == []
    assert "privrl.base" in GRAPH["privrl.testing"], "the scan does not see privrl.testing's imports: it is broken"


def test_data_never_imports_envs():
    """Models build datasets; the data layer does not know them."""
    offenders = {name: sorted(m for m in deps if m.startswith("privrl.envs"))
                 for name, deps in GRAPH.items() if name.startswith("privrl.data")}
    assert {k: v for k, v in offenders.items() if v} == {}
    assert any(m.startswith("privrl.data") for name, deps in GRAPH.items() if name.startswith("privrl.envs")
               for m in deps), "the scan found no envs -> data import at all: it is broken"


def test_the_shell_is_thin():
    """``cli.py`` parses arguments and dispatches; what a command does lives in ``privrl.commands``
    (the house's rule: the shell stays under 400 lines)."""
    lines = (SRC / "cli.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"cli.py has {lines} lines; move the command's logic to privrl/commands/"


def test_no_empty_package():
    """Every package holds a module besides its ``__init__`` or code in the ``__init__`` itself."""
    for init in SRC.rglob("__init__.py"):
        siblings = [p for p in init.parent.iterdir() if p.suffix == ".py" and p.name != "__init__.py"]
        body = [n for n in ast.parse(init.read_text(encoding="utf-8")).body
                if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert siblings or body or any(p.is_dir() for p in init.parent.iterdir() if p.name != "__pycache__"), init
