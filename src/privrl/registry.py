"""One registry for everything privrl looks up by name.

Eight kinds of entries share it:

* ``experiment`` — :class:`privrl.experiments.spec.Experiment`, by
  ``privrl.experiments.registry.register``;
* ``fit`` — :class:`privrl.fitters.FitCommand`, by ``privrl.fitters.register_fit``;
* ``audit`` — :class:`privrl.audit.registry.AuditTarget`, by
  ``privrl.audit.registry.register_target``;
* ``env`` — a Gymnasium entry point ``"module:callable"``, by ``privrl.envs.registration``;
* ``frontier`` — :class:`privrl.experiments.frontier.Frontier`, by
  ``privrl.experiments.frontier.register_frontier`` (called from the experiment modules);
* ``plan`` — :class:`privrl.planning.Planner`, by ``privrl.planning.register_plan`` (the
  families' ``plan`` modules);
* ``bench-task`` and ``bench-entry`` — the benchmark's :class:`privrl.bench.spec.Task` and
  :class:`privrl.bench.spec.Entry`, registered by :mod:`privrl.bench.tasks`, the entry modules the
  family records name (``Family.bench``: privrl's own are in :mod:`privrl.bench.entries`, on top of
  the families), the trivial baselines and the ``privrl.bench`` entry points (plugins).

The family packages are listed once, in :data:`FAMILIES`; each package's ``FAMILY`` record
(:class:`privrl.family.Family`) names the modules that register its entries, and :data:`SHARED`
(and :data:`SHARED_LAST`) name the few registering modules outside the families. :func:`modules`
reads them all; the modules of a kind are imported the first time an entry of that kind is asked
for. A family outside privrl (a plugin, or the test suite's example family) joins at run time with
:func:`add_family`. A module
that fails to import is an error naming the module and the cause (:class:`RegistryImportError`),
never a silent skip; when the cause is an optional extra that is not installed (torch for DP
Q-learning), the message names the extra.

Gymnasium ids stay lazy: the ``env`` entries are entry-point strings, so registering them with
Gymnasium imports no environment module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

from privrl.errors import InvalidParameterError, PrivrlError
from privrl.family import Family

__all__ = ["KINDS", "FAMILIES", "SHARED", "SHARED_LAST", "EXTRAS", "RegistryImportError", "register", "get",
           "entries", "load", "storage", "families", "add_family", "modules", "origin", "registered_by"]

#: the kinds of entries, with the word used for them in messages
KINDS: dict[str, str] = {
    "experiment": "experiment id",
    "fit": "fit algorithm",
    "audit": "audit target",
    "env": "environment id",
    "frontier": "frontier algorithm",
    "plan": "plan algorithm",
    "bench-task": "benchmark task",
    "bench-entry": "benchmark entry",
}

#: the family packages, one line each (a new family is one new folder and one line here); each
#: package's ``FAMILY`` record (:class:`privrl.family.Family`) names its registering modules
FAMILIES: list[str] = [
    "privrl.policy_evaluation",
    "privrl.offline",
    "privrl.linear_mixture",
    "privrl.q_learning",
    "privrl.tabular_online",
    "privrl.deep_offline",
]

#: kind -> the modules outside the families that register entries of that kind
SHARED: dict[str, tuple[str, ...]] = {
    "experiment": ("privrl.experiments.example", "privrl.bench.running"),
    "frontier": (),
    "fit": (),
    "audit": ("privrl.audit.targets_mechanisms", "privrl.audit.targets_tree"),
    "env": ("privrl.envs.registration",),
    "plan": (),
    "bench-task": ("privrl.bench.tasks",),
    "bench-entry": ("privrl.bench.entries.baselines",),
}

#: kind -> the modules outside the families imported after the families' (the benchmark's plugins:
#: outside entries come after privrl's own)
SHARED_LAST: dict[str, tuple[str, ...]] = {"bench-entry": ("privrl.bench.plugins",)}

#: top-level third-party package -> the optional extra of privrl that installs it (pyproject.toml)
EXTRAS: dict[str, str] = {
    "torch": "deep",
    "opacus": "deep",
    "ray": "ray",
    "minari": "minari",
    "h5py": "minari",
    "opendp": "secure",
}


class RegistryImportError(PrivrlError, ImportError):
    """A module that registers entries could not be imported."""


_ENTRIES: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
#: kind -> name -> the module that registered the entry
_ORIGINS: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
_LOADED: set[str] = set()
_LOADING: set[str] = set()


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidParameterError(
            f"The 'kind' parameter of privrl.registry must be one of {', '.join(KINDS)}. Got {kind!r} instead."
        )
    return kind


def storage(kind: str) -> dict[str, Any]:
    """The live ``name -> entry`` dict of ``kind`` (for the families' thin wrappers and tests;
    it is not loaded: use :func:`entries` to read)."""
    return _ENTRIES[_check_kind(kind)]


def register(kind: str, name: str, obj: Any, *, replace: bool = False, stacklevel: int = 1) -> Any:
    """Register ``obj`` under ``name`` in ``kind`` and return it.

    Registering the same object (or an equal one) again is a no-op; a *different* object under a
    taken name is an error unless ``replace=True``. The module that registers is remembered
    (:func:`origin`): the caller's, or with ``stacklevel=2`` its caller's (for the thin wrappers
    such as ``register_fit``).
    """
    store = storage(kind)
    caller = str(sys._getframe(stacklevel).f_globals.get("__name__", "?"))
    if not isinstance(name, str) or not name:
        raise InvalidParameterError(f"The 'name' parameter of privrl.registry.register must be a "
                                    f"non-empty string. Got {name!r} instead.")
    old = store.get(name)
    if old is not None and old is not obj and not replace:
        try:
            same = bool(old == obj)
        except Exception:  # noqa: BLE001 - objects without a usable equality are different
            same = False
        if not same:
            raise InvalidParameterError(f"The {KINDS[kind]} {name!r} is registered twice "
                                        f"(by {_ORIGINS[kind].get(name, '?')} and {caller}).")
    store[name] = obj
    _ORIGINS[kind][name] = caller
    return obj


def origin(kind: str, name: str) -> str | None:
    """The module that registered the entry ``name`` of ``kind`` (None for an unknown name)."""
    return _ORIGINS[_check_kind(kind)].get(name)


def registered_by(kind: str, registering: Family | str) -> list[str]:
    """The names of the ``kind`` entries registered by a family's modules (or by one module),
    loading ``kind`` first."""
    load(kind)
    mods = set(registering.modules(kind)) if isinstance(registering, Family) else {registering}
    return [name for name in storage(kind) if _ORIGINS[kind].get(name) in mods]


def _family_record(package: str) -> Family:
    try:
        module = importlib.import_module(package)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none skipped
        raise _import_error(package, "family", exc) from exc
    family = getattr(module, "FAMILY", None)
    if not isinstance(family, Family) or family.package != package:
        raise RegistryImportError(f"{package} is listed as a family but does not define FAMILY = "
                                  f"privrl.family.Family(__name__, ...) in its __init__.py.")
    return family


def families() -> list[Family]:
    """The record of every family of :data:`FAMILIES`, in order (importing their packages)."""
    return [_family_record(package) for package in FAMILIES]


def add_family(package: str) -> Family:
    """Add the family package ``package`` (importable, with a ``FAMILY`` record) at run time: its
    experiments, fit commands and audit targets are found like privrl's own from then on."""
    family = _family_record(package)
    if package not in FAMILIES:
        FAMILIES.append(package)
        _LOADED.clear()  # the next use of each kind imports the new family's modules too
    return family


def modules(kind: str) -> tuple[str, ...]:
    """The modules that register entries of ``kind``: :data:`SHARED`, then each family's, in
    :data:`FAMILIES` order (importing the family packages when the kind has family modules), then
    :data:`SHARED_LAST`."""
    _check_kind(kind)
    found = list(SHARED.get(kind, ()))
    if kind != "env":  # the Gymnasium ids are registered by privrl.envs alone
        found += [m for family in families() for m in family.modules(kind)]
    return (*found, *SHARED_LAST.get(kind, ()))


def _import_error(module: str, kind: str, exc: BaseException) -> RegistryImportError:
    what = "a family package" if kind == "family" else f"which registers {kind} entries"
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    top = (missing or "").partition(".")[0]
    if top in EXTRAS:
        extra = EXTRAS[top]
        return RegistryImportError(
            f"{module} ({what}) needs the optional extra {extra!r}, which "
            f"is not installed: pip install 'privrl[{extra}]' (import of {missing!r} failed)."
        )
    text = " ".join(str(exc).split())
    return RegistryImportError(f"{module} ({what}) failed to import: "
                               f"{type(exc).__name__}: {text}")


def load(kind: str) -> None:
    """Import every module of :func:`modules` for ``kind`` (once).

    Raises :class:`RegistryImportError` naming the first module that fails to import; the next
    call tries again.
    """
    _check_kind(kind)
    if kind in _LOADED or kind in _LOADING:
        return
    _LOADING.add(kind)
    try:
        for module in modules(kind):
            try:
                importlib.import_module(module)
            except RegistryImportError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is reported, none skipped
                raise _import_error(module, kind, exc) from exc
        _LOADED.add(kind)
    finally:
        _LOADING.discard(kind)


def entries(kind: str) -> dict[str, Any]:
    """Every entry of ``kind`` (a copy, in registration order), importing its modules first."""
    load(kind)
    return dict(storage(kind))


def get(kind: str, name: str, *, parameter: str | None = None, owner: str | None = None) -> Any:
    """The entry ``name`` of ``kind``; an unknown name is a one-line error listing the known ones
    ("Unknown experiment id 'x'. Known: ...", or, with ``parameter``, the standard parameter
    message of :func:`privrl._validation.param_error`)."""
    known: Mapping[str, Any] = entries(kind)
    if name not in known:
        listed = ", ".join(sorted(known)) or "(none)"
        if parameter is not None:
            # here, not at the top: _validation loads NumPy, which privrl --help does not
            from privrl._validation import param_error

            raise param_error(parameter, owner, f"one of {listed}", name)
        raise InvalidParameterError(f"Unknown {KINDS[kind]} {name!r}. Known: {listed}.")
    return known[name]
