"""Privacy certificates: what a fitted algorithm promises, as JSON, with its public inputs exactly.

A certificate never contains data-dependent noise scales (e.g. DP-LSW's σ_X): only public
parameters, the ledger of released events and the privacy spent. It states

* ``guarantee`` — what was actually certified: ``"non-private"``, ``"epsilon-DP"`` (a pure budget:
  every release is pure DP and δ = 0), ``"(epsilon, delta)-DP"``, ``"rho-zCDP"``, ``"JDP"`` or
  ``"LDP"``;
* ``delta`` — the δ at which ``epsilon_spent`` is reported, by the one rule
  :func:`~privrl.privacy.budget.reporting_delta` (the budget's δ; 0 for a pure budget; 1e-5 for a
  ρ budget); ``pure_epsilon`` when δ > 0 and every release is pure DP anyway;
* ``mechanisms`` — the noise distributions the ledger records (``"gaussian"``, ``"laplace"``...),
  i.e. what was chosen, never ``"auto"``;
* ``epsilon_spent`` (and ``rho_spent`` for zCDP budgets) — never above the budget: an excess that is
  float rounding (relative ≤ :data:`ROUNDING`) is reported as the budget and recorded in
  ``spent_rounded_from``; a larger one raises :class:`~privrl.errors.BudgetExceededError`;
* ``inputs`` — SHA-256 fingerprints of the dataset file or the environment spec;
* public array parameters (features, reward tables) by reference: ``{"array": NAME, "shape",
  "dtype", "sha256"}``; the arrays themselves are in :attr:`Certificate.arrays` and
  :func:`write_certificate` stores them exactly in ``certificate.npz`` beside ``certificate.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

import privrl
from privrl._io import atomic_write_bytes, atomic_write_json, npz_bytes
from privrl._jsonable import NOT_SCALAR, json_scalar
from privrl.base import Estimator, check_is_fitted
from privrl.errors import BudgetExceededError, InvalidDataError
from privrl.privacy.accounting import Ledger
from privrl.privacy.budget import PrivacyBudget, reporting_delta

__all__ = ["Certificate", "ROUNDING", "GUARANTEES", "make_certificate", "write_certificate",
           "read_certificate", "file_sha256", "dataset_fingerprint", "env_fingerprint"]

#: relative excess of the spent ε (or ρ) over the budget that counts as float rounding
ROUNDING = 1e-9
#: every value of a certificate's ``guarantee``
GUARANTEES = ("non-private", "epsilon-DP", "(epsilon, delta)-DP", "rho-zCDP", "JDP", "LDP")
CERTIFICATE_JSON = "certificate.json"
CERTIFICATE_NPZ = "certificate.npz"

_EVENT_NAMES = {"GaussianDpEvent": "gaussian", "LaplaceDpEvent": "laplace", "ApproxDpEvent": "approx-dp",
                "ZCDpEvent": "zcdp", "NonPrivateDpEvent": "none (non-private)",
                "SingleEpochTreeAggregationDpEvent": "tree-aggregation (gaussian)",
                "RandomizedResponseDpEvent": "randomized-response"}


class Certificate(dict):
    """A certificate: a JSON-ready ``dict`` plus :attr:`arrays`, the public arrays it refers to
    (name → ndarray), which :func:`write_certificate` stores in ``certificate.npz``."""

    def __init__(self, *args: Any, arrays: dict[str, np.ndarray] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrays: dict[str, np.ndarray] = dict(arrays or {})


def _sha256_array(arr: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(f"{arr.dtype.str}{arr.shape}".encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _public(value: Any, name: str, arrays: dict[str, np.ndarray]) -> Any:
    """``value`` as exact JSON; numeric arrays go to ``arrays`` under ``name`` and a reference stays."""
    if isinstance(value, np.ndarray) and value.dtype != object:
        arrays[name] = value
        return {"array": name, "shape": list(value.shape), "dtype": value.dtype.str,
                "sha256": _sha256_array(value)}
    scalar = json_scalar(value)
    if scalar is not NOT_SCALAR:
        return scalar
    if isinstance(value, PrivacyBudget):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _public(v, f"{name}.{k}", arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_public(v, f"{name}.{i}", arrays) for i, v in enumerate(value)]
    if hasattr(value, "value") and hasattr(value, "name"):  # enums
        return value.value
    if hasattr(value, "to_dict"):
        return _public(value.to_dict(), name, arrays)
    return {"repr": repr(value), "type": type(value).__name__}


def _mechanisms(ledger: Any) -> list[str]:
    return sorted({_EVENT_NAMES.get(type(e).__name__, type(e).__name__) for e, _ in ledger.leaves()})


def _guarantee(estimator: Estimator, delta: float) -> str:
    """The estimator's declared guarantee, or ``"epsilon-DP"`` when it declares (ε, δ)-DP and ε is
    reported at δ = 0 (a pure budget: the releases are then pure DP, or ε is ∞ and no certificate
    is issued)."""
    declared = estimator.guarantee
    if declared == "(epsilon, delta)-DP" and delta == 0.0:
        return "epsilon-DP"
    return str(declared)


def _within(spent: float, target: float, what: str, algorithm: str) -> tuple[float, float | None]:
    """``(reported, rounded_from)``: ``spent`` if within ``target``; ``target`` if the excess is float
    rounding; :class:`BudgetExceededError` otherwise."""
    if spent <= target:
        return spent, None
    if spent - target <= ROUNDING * target:
        return target, spent
    raise BudgetExceededError(
        f"The releases of {algorithm} spend {what} = {spent!r}, more than its budget {target!r} "
        f"(by more than float rounding): no certificate is issued."
    )


def _record_spent(cert: Certificate, estimator: Estimator, ledger: Ledger, budget: Any, algorithm: str) -> None:
    """Write the guarantee and what a private estimator spent into ``cert``: ε at the reporting δ,
    ρ for a ρ budget, the pure ε when every release is pure DP, and the values rounded down to the
    budget (``spent_rounded_from``)."""
    delta = reporting_delta(budget if isinstance(budget, PrivacyBudget) else None)
    cert["guarantee"] = _guarantee(estimator, delta)
    eps = float(estimator.privacy_spent(delta))
    rounded: dict[str, float] = {}
    eps_budget = getattr(budget, "epsilon", None)
    if eps_budget is not None and math.isfinite(eps_budget):
        eps, was = _within(eps, float(eps_budget), "epsilon", algorithm)
        if was is not None:
            rounded["epsilon_spent"] = was
    budget_rho = getattr(budget, "rho", None)
    if budget_rho is not None and math.isfinite(budget_rho):
        try:
            rho: float | None = float(ledger.zcdp_rho())
        except (ValueError, TypeError):
            rho = None
        if rho is not None:
            rho, was = _within(rho, float(budget_rho), "rho", algorithm)
            cert["rho_spent"] = rho
            if was is not None:
                rounded["rho_spent"] = was
    cert["delta"] = delta
    cert["epsilon_spent"] = eps
    pure = ledger.pure_epsilon()
    if delta > 0 and pure is not None:   # every release is pure DP: also (pure ε, 0)-DP
        cert["pure_epsilon"] = pure
    if rounded:
        cert["spent_rounded_from"] = rounded


def make_certificate(estimator: Estimator, *, algorithm: str, inputs: dict[str, Any] | None = None,
                     extra: dict[str, Any] | None = None, mechanism: str | None = None,
                     note: str | None = None) -> Certificate:
    """The certificate of a fitted estimator (see the module docstring), complete: ``privrl fit``
    and anything else that writes a certificate build it here, in one call.

    ε is reported at :func:`~privrl.privacy.budget.reporting_delta` of the estimator's budget (its
    δ; 0 for a pure budget, where ε is the pure ε; 1e-5 for a ρ budget). ``inputs`` holds the
    fingerprints of the data or environment (:func:`dataset_fingerprint`, :func:`env_fingerprint`);
    ``extra`` further *public* facts (e.g. the F_max used; arrays among them are stored exactly);
    ``mechanism`` the noise distribution chosen when the estimator chose it
    (``mechanism="auto"``); ``note`` a sentence for the reader. An estimator with ``certified_ =
    False`` (it added noise but cannot prove a guarantee) gets ``guarantee = "non-private"`` and
    ``certified = False``.
    """
    ledger = check_is_fitted(estimator, "privacy_ledger_")
    budget = getattr(estimator, "budget", None)
    certified = bool(getattr(estimator, "certified_", True))
    private = bool(estimator.is_private) and certified
    arrays: dict[str, np.ndarray] = {}
    params = {k: _public(v, f"params.{k}", arrays) for k, v in estimator.get_params().items() if k != "rng"}
    cert = Certificate({
        "format": "privrl.certificate",
        "version": 2,
        "privrl_version": privrl.__version__,
        "algorithm": algorithm,
        "private": private,
        "certified": private,
        "privacy_unit": _public(estimator.privacy_unit, "privacy_unit", arrays),
        "neighboring": _public(estimator.neighboring, "neighboring", arrays),
        "guarantee": "non-private",
        "mechanisms": _mechanisms(ledger),
        "calibration": getattr(estimator, "calibration", "sound"),
        "budget": _public(budget, "budget", arrays),
        "delta": None,
        "epsilon_spent": None,
        "ledger": json.loads(ledger.to_json()),
        "params": params,
    }, arrays=arrays)
    if mechanism is not None:
        cert["mechanism"] = mechanism
    if private:
        _record_spent(cert, estimator, ledger, budget, algorithm)
    elif not certified:
        cert["uncertified"] = True
        note = note or ("this run may have added noise, but it is not certified: no privacy guarantee is "
                        "claimed")
    if note:
        cert["note"] = note
    if inputs:
        cert["inputs"] = _public(inputs, "inputs", arrays)
    if extra:
        cert["extra"] = _public(extra, "extra", arrays)
    cert.arrays = arrays
    return cert


# --------------------------------------------------------------------------- files
def write_certificate(directory: str | os.PathLike, cert: dict[str, object]) -> Path:
    """Write ``certificate.npz`` (the public arrays, when there are any) and then
    ``certificate.json`` (the commit point), each atomically; a stale ``certificate.npz`` is
    removed. Returns the JSON path."""
    directory = Path(directory)
    arrays = getattr(cert, "arrays", {}) or {}
    npz = directory / CERTIFICATE_NPZ
    if arrays:
        atomic_write_bytes(npz, npz_bytes(arrays))
    elif npz.exists():
        npz.unlink()
    return atomic_write_json(directory / CERTIFICATE_JSON, dict(cert))


def read_certificate(directory: str | os.PathLike) -> Certificate:
    """Read a certificate written by :func:`write_certificate`; array references are checked
    against their SHA-256 (:class:`InvalidDataError` on a mismatch or a missing array)."""
    directory = Path(directory)
    try:
        data = json.loads((directory / CERTIFICATE_JSON).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidDataError(f"Cannot read the certificate in {directory}: {exc}.") from None
    arrays: dict[str, np.ndarray] = {}
    refs: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if set(node) == {"array", "shape", "dtype", "sha256"}:
                refs.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(data)
    if refs:
        try:
            with np.load(directory / CERTIFICATE_NPZ, allow_pickle=False) as npz:
                stored = {k: npz[k] for k in npz.files}
        except (OSError, ValueError) as exc:
            raise InvalidDataError(f"Cannot read {CERTIFICATE_NPZ} in {directory}: {exc}.") from None
        for ref in refs:
            arr = stored.get(ref["array"])
            if arr is None or _sha256_array(arr) != ref["sha256"]:
                raise InvalidDataError(f"The array {ref['array']!r} of the certificate in {directory} is "
                                       "missing or does not match its SHA-256.")
            arrays[ref["array"]] = arr
    return Certificate(data, arrays=arrays)


# --------------------------------------------------------------------------- fingerprints
def file_sha256(path: str | os.PathLike) -> str:
    """The hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dataset_fingerprint(source: str | os.PathLike) -> dict[str, object]:
    """``{"data": source, "kind": "npz"|"minari", "sha256": ...}``: the SHA-256 of a ``.npz`` file,
    or of a local Minari dataset's files (relative paths and contents, in sorted order)."""
    path = Path(source)
    if path.is_file():
        return {"data": os.fspath(source), "kind": "file", "sha256": file_sha256(path)}
    try:
        from minari.storage.datasets_root_dir import get_dataset_path
    except ImportError:  # pragma: no cover - minari is an extra
        return {"data": os.fspath(source), "kind": "minari", "sha256": None}
    try:
        root = Path(get_dataset_path(str(source)))
    except Exception:  # noqa: BLE001 - an id minari cannot place
        return {"data": os.fspath(source), "kind": "minari", "sha256": None}
    h = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(file.relative_to(root).as_posix().encode() + b"\0")
        h.update(file_sha256(file).encode())
    return {"data": os.fspath(source), "kind": "minari", "sha256": h.hexdigest()}


def env_fingerprint(env: object) -> dict[str, object]:
    """``{"env": id, "spec_sha256": ...}``: the SHA-256 of the Gymnasium spec (id, entry point,
    keyword arguments, limits), as JSON with sorted keys; ``env`` an id, a spec or an environment."""
    import gymnasium as gym

    spec = env if isinstance(env, gym.envs.registration.EnvSpec) else (
        gym.spec(env) if isinstance(env, str) else getattr(env, "spec", None))
    if spec is None:
        return {"env": type(getattr(env, "unwrapped", env)).__name__, "spec_sha256": None}
    fields = {"id": spec.id, "entry_point": str(spec.entry_point), "kwargs": spec.kwargs,
              "max_episode_steps": spec.max_episode_steps, "reward_threshold": spec.reward_threshold,
              "nondeterministic": spec.nondeterministic, "order_enforce": spec.order_enforce,
              "disable_env_checker": spec.disable_env_checker}
    text = json.dumps(fields, sort_keys=True, default=repr)
    return {"env": spec.id, "spec_sha256": hashlib.sha256(text.encode()).hexdigest()}
