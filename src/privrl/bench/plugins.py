"""Outside algorithms in the benchmark: the plugin protocol (``docs/bench.md``).

A plugin is a class with

* ``settings`` — the settings it runs on (a tuple of :data:`~privrl.bench.spec.SETTINGS`);
* ``privacy_unit`` — the unit its guarantee protects (a :class:`~privrl.privacy.PrivacyUnit` or
  its value, e.g. ``"trajectory"``); a task with another unit lists it as refused;
* a keyword constructor ``Class(budget=PrivacyBudget)`` (``budget=None`` for a non-private plugin,
  which declares ``privacy_unit = None``);
* ``fit(task_input, *, rng)`` (a :class:`~privrl.bench.spec.TaskInput`), returning ``self``;
* after ``fit``, its privacy record: ``privacy_ledger_`` (a :class:`~privrl.privacy.Ledger`) or
  ``dp_event_`` (one ``dp_accounting`` ``DpEvent`` for the whole fit) — the benchmark reads ε at
  the task's δ from it, never from the plugin's own claim;
* after ``fit``, its answer: ``values_`` / ``value_`` (policy evaluation), ``policy_`` (offline),
  ``regret_`` or ``policies_`` (online), ``act(observations)`` or ``greedy_action(observations)``
  (control); optionally ``release_``, the numbers the black-box audit compares.

Optional class attributes: ``name`` (default: the class name in kebab case), ``label``,
``budgets`` (``("eps",)`` by default; add ``"rho"`` for a ρ-zCDP guarantee), ``calibration``,
``counterpart`` (the name of its non-private counterpart entry).

**Declaring the release** (the sharp audit, :mod:`privrl.bench.audit`): the audit must be able to
give the plugin its privacy noise — fresh in every trial, scaled by 0 for the noise-free release
point, ÷ 10 for a broken control — while its non-private randomness stays fixed. A subclass of
:class:`privrl.base.PrivateEstimator` that draws its noise through its fit's ``Releaser`` is given
its source with :func:`privrl.testing.use_noise`. A plain class declares a ``noise`` keyword in its
fit, ``fit(task_input, *, rng, noise)``, and draws *every* privacy noise from that
:class:`~privrl.privacy.NoiseSource` (``noise.laplace(shape, scale)``, ``noise.gaussian(shape, std)``),
never from ``rng``; the benchmark always passes one (outside the audit, a stream of its own,
independent of ``rng``). Either way ``release_`` should be the mechanism's noisy statistic. A
plugin that declares neither is audited black-box: refitted with a fresh ``rng`` per trial.

Plugins register through the entry point group ``privrl.bench`` (``name = "module:Class"`` in the
package's metadata) or ``privrl bench --plugin module:Class`` (or ``--plugin path/to/file.py:Class``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from privrl import registry as _registry
from privrl._rng import child_rngs
from privrl.bench.entries import estimator_fit, get_entry, register_entry
from privrl.bench.spec import SETTINGS, Entry, Fitted, Output, TaskInput
from privrl.errors import InvalidParameterError
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import PrivacyUnit
from privrl.privacy.noise import NumpyNoise

__all__ = ["ENTRY_POINT_GROUP", "plugin_entry", "declares_noise", "load_plugin", "load_entry_points",
           "resolve_entry"]

#: the entry point group plugins register under
ENTRY_POINT_GROUP = "privrl.bench"


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _error(spec: str, what: str) -> InvalidParameterError:
    return InvalidParameterError(f"The '--plugin' option must name a benchmark plugin class (module:Class) with "
                                 f"{what}. Got {spec!r} instead.")


def _unit(value: object) -> PrivacyUnit | None:
    if value is None:
        return None
    return PrivacyUnit(getattr(value, "value", value))


def _ledger(est: object) -> Ledger | None:
    ledger = getattr(est, "privacy_ledger_", None)
    if ledger is not None:
        return ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    event = getattr(est, "dp_event_", None)
    return None if event is None else Ledger([event])


def _output(est: Any) -> Output:
    act = getattr(est, "act", None) or getattr(est, "greedy_action", None)
    return Output(values=getattr(est, "values_", None), value=getattr(est, "value_", None),
                  policy=getattr(est, "policy_", None), regret=getattr(est, "regret_", None),
                  policies=getattr(est, "policies_", None), act=act, release=getattr(est, "release_", None))


def declares_noise(cls: Any) -> bool:
    """True when ``cls.fit`` takes a ``noise`` keyword: a plain plugin declaring that it draws its
    privacy noise from the :class:`~privrl.privacy.NoiseSource` it is given (module docstring)."""
    try:
        parameters = inspect.signature(cls.fit).parameters
    except (TypeError, ValueError):         # no signature to read (a builtin): declares nothing
        return False
    noise = parameters.get("noise")
    return noise is not None and noise.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def plugin_entry(cls: type, spec: str | None = None) -> Entry:
    """The :class:`~privrl.bench.spec.Entry` of a plugin class (checked against the protocol)."""
    where = spec or f"{cls.__module__}:{cls.__qualname__}"
    if not isinstance(cls, type) or not callable(getattr(cls, "fit", None)):
        raise _error(where, "a fit(task_input, *, rng) method")
    settings = tuple(getattr(cls, "settings", ()) or ())
    if not settings or set(settings) - set(SETTINGS):
        raise _error(where, f"a 'settings' attribute naming some of {', '.join(SETTINGS)}")
    try:
        unit = _unit(getattr(cls, "privacy_unit", None))
    except ValueError:
        raise _error(where, f"a 'privacy_unit' among {', '.join(u.value for u in PrivacyUnit)} (or None)") from None
    private = unit is not None
    budgets = tuple(getattr(cls, "budgets", ("eps",))) if private else ()

    def fit(task_input: TaskInput, budget: Any, rng: Any, noise: Any = None) -> Fitted:
        est = cls(budget=budget) if private else cls()
        if plain_noise:         # a plain class declaring fit(..., noise): always given a noise source
            source = noise if noise is not None else NumpyNoise(child_rngs(rng, "privacy")["privacy"])
            fitted = estimator_fit(est, lambda e: e.fit(task_input, rng=rng, noise=source), _output)
        else:
            fitted = estimator_fit(est, lambda e: e.fit(task_input, rng=rng), _output,
                                   noise=noise if releaser else None)
        fitted.ledger = _ledger(est) if private else None
        if private and fitted.ledger is None:
            raise InvalidParameterError(f"The plugin {where} recorded no privacy_ledger_ and no dp_event_ in its fit: "
                                        "the benchmark cannot certify its budget.")
        fitted.privacy_unit = unit
        return fitted

    name = str(getattr(cls, "name", None) or _kebab(cls.__name__))
    releaser = callable(getattr(cls, "_privacy", None))   # a privrl PrivateEstimator: noise through its Releaser
    plain_noise = not releaser and declares_noise(cls)
    takes_noise = releaser or plain_noise
    return Entry(name, str(getattr(cls, "label", None) or cls.__name__), settings,
                 "private" if private else "non-private", fit, budgets=budgets,
                 calibration=getattr(cls, "calibration", "tight") if private else None,
                 counterpart=getattr(cls, "counterpart", None), privacy_unit=unit,
                 description=" ".join((cls.__doc__ or "").split(".")[0].split()), plugin=spec,
                 takes_noise=takes_noise)


def _import(module: str, spec: str) -> Any:
    """The module ``module``: an importable name, or the path of a ``.py`` file — imported again
    when its contents changed (the module is named by its path and contents), so that the class
    that runs is the one whose source :func:`~privrl.bench.spec.entry_code` reads."""
    if module.endswith(".py"):
        path = Path(module)
        if not path.is_file():
            raise _error(spec, f"an existing file ({module!r} does not exist)")
        key = hashlib.sha256(str(path.resolve()).encode() + b"\x00" + path.read_bytes()).hexdigest()[:12]
        name = f"privrl_bench_plugin_{key}"
        if name in sys.modules:
            return sys.modules[name]
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise _error(spec, f"a Python file ({module!r} cannot be loaded)")
        mod = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = mod
        try:
            loader_spec.loader.exec_module(mod)
        except Exception as exc:
            del sys.modules[name]
            raise _error(spec, f"a file that imports ({type(exc).__name__}: {exc})") from None
        return mod
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise _error(spec, f"an importable module ({type(exc).__name__}: {exc})") from None


def load_plugin(spec: str) -> Entry:
    """Import ``module:Class`` (or ``path/to/file.py:Class``), check it against the protocol and
    register its entry (again: the same spec replaces its earlier registration). A file path is
    made absolute, so that pool workers started elsewhere import the same file."""
    module, sep, qualname = str(spec).rpartition(":")
    if not sep or not module or not qualname:
        raise _error(spec, "the form module:Class or path/to/file.py:Class")
    if module.endswith(".py"):
        spec = f"{Path(module).resolve()}:{qualname}"
        module = spec.rpartition(":")[0]
    obj: Any = _import(module, spec)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise _error(spec, f"a class {qualname!r} in module {module!r}")
    entry = plugin_entry(obj, spec)
    old = _registry.storage("bench-entry").get(entry.name)
    if old is not None and old.plugin != spec:
        raise InvalidParameterError(f"The plugin {spec} is named {entry.name!r}, which is already a benchmark entry: "
                                    "give the class another 'name' attribute.")
    return register_entry(entry, replace=True)


def resolve_entry(name: str, plugin: str | None = None) -> Entry:
    """The entry ``name``, or the plugin ``plugin`` loaded again — in a pool worker, which did not
    see the driver's ``--plugin``."""
    return load_plugin(plugin) if plugin else get_entry(name)


def load_entry_points() -> list[Entry]:
    """Register every plugin of the ``privrl.bench`` entry point group (a plugin that fails to
    load is an error naming it, never a silent skip)."""
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none skipped
            raise InvalidParameterError(f"The benchmark plugin {ep.name} = {ep.value} (entry point group "
                                        f"{ENTRY_POINT_GROUP}) failed to load: {type(exc).__name__}: {exc}") from None
        found.append(register_entry(plugin_entry(cls, ep.value), replace=True))
    return found


load_entry_points()
