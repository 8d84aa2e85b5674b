"""One registry for everything privrl looks up by name (issue #14 §2).

Five kinds of entries share it:

* ``experiment`` — :class:`privrl.experiments.spec.Experiment`, by
  ``privrl.experiments.registry.register``;
* ``fit`` — :class:`privrl.fitters.FitCommand`, by ``privrl.fitters.register_fit``;
* ``audit`` — :class:`privrl.audit.registry.AuditTarget`, by
  ``privrl.audit.registry.register_target``;
* ``env`` — a Gymnasium entry point ``"module:callable"``, by ``privrl.envs.registration``;
* ``frontier`` — :class:`privrl.experiments.frontier.Frontier`, by
  ``privrl.experiments.frontier.register_frontier`` (called from the experiment modules).

The modules that register entries are listed once, in :data:`MODULES`, and are imported the
first time an entry of their kind is asked for. A module that fails to import is an error naming
the module and the cause (:class:`RegistryImportError`), never a silent skip; when the cause is an
optional extra that is not installed (torch for DP Q-learning), the message names the extra.

Gymnasium ids stay lazy: the ``env`` entries are entry-point strings, so registering them with
Gymnasium imports no environment module.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from privrl.errors import InvalidParameterError, PrivrlError

__all__ = ["KINDS", "MODULES", "EXTRAS", "RegistryImportError", "register", "get", "entries",
           "load", "storage"]

#: the kinds of entries, with the word used for them in messages
KINDS: dict[str, str] = {
    "experiment": "experiment id",
    "fit": "fit algorithm",
    "audit": "audit target",
    "env": "environment id",
    "frontier": "frontier algorithm",
}

#: kind -> the modules that register entries of that kind (imported on first use, in this order)
MODULES: dict[str, tuple[str, ...]] = {
    "experiment": (
        "privrl.experiments.example",
        "privrl.policy_evaluation.experiments",
        "privrl.offline.experiments",
        "privrl.linear_mixture.experiments",
        "privrl.q_learning.experiments",
    ),
    "fit": (
        "privrl.policy_evaluation.fit",
        "privrl.offline.fit",
        "privrl.linear_mixture.fit",
        "privrl.q_learning.fit",
    ),
    "audit": (
        "privrl.audit.targets_mechanisms",
        "privrl.audit.targets_tree",
        "privrl.policy_evaluation.audit",
        "privrl.offline.audit",
        "privrl.linear_mixture.audit",
        "privrl.q_learning.audit",
    ),
    "env": ("privrl.envs.registration",),
}
#: frontier experiments are registered by the experiment modules (privrl.experiments.frontier)
MODULES["frontier"] = MODULES["experiment"]

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


def register(kind: str, name: str, obj: Any, *, replace: bool = False) -> Any:
    """Register ``obj`` under ``name`` in ``kind`` and return it.

    Registering the same object (or an equal one) again is a no-op; a *different* object under a
    taken name is an error unless ``replace=True``.
    """
    store = storage(kind)
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
                                        f"(by {_origin(old)} and {_origin(obj)}).")
    store[name] = obj
    return obj


def _origin(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "?")
    if isinstance(obj, str):  # entry points name their module
        module = obj.partition(":")[0]
    return str(module)


def _import_error(module: str, kind: str, exc: BaseException) -> RegistryImportError:
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    top = (missing or "").partition(".")[0]
    if top in EXTRAS:
        extra = EXTRAS[top]
        return RegistryImportError(
            f"{module} (which registers {kind} entries) needs the optional extra {extra!r}, which "
            f"is not installed: pip install 'privrl[{extra}]' (import of {missing!r} failed)."
        )
    text = " ".join(str(exc).split())
    return RegistryImportError(f"{module} (which registers {kind} entries) failed to import: "
                               f"{type(exc).__name__}: {text}")


def load(kind: str) -> None:
    """Import every module of :data:`MODULES` for ``kind`` (once).

    Raises :class:`RegistryImportError` naming the first module that fails to import; the next
    call tries again.
    """
    _check_kind(kind)
    if kind in _LOADED or kind in _LOADING:
        return
    _LOADING.add(kind)
    try:
        for module in MODULES[kind]:
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
            from privrl._validation import param_error

            raise param_error(parameter, owner, f"one of {listed}", name)
        raise InvalidParameterError(f"Unknown {KINDS[kind]} {name!r}. Known: {listed}.")
    return known[name]
