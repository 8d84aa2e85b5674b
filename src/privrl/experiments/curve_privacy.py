"""The report's "Privacy per curve" (:mod:`privrl.experiments.report`): each run's privacy status
(:func:`privacy_status`), the runs grouped into curves (:func:`curves`: settings that differ only in
the x-axis parameters) and the section's table."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from privrl.experiments._markdown import _budget_text, _is_float, _num, _params_text, _spent_text, _table

__all__ = ["privacy_status", "curves", "NOISE_KEYS"]

#: keys of a run's params or manifest ``extra`` that carry a noise scale (a run with noise and no ε
#: spent is "uncertified")
NOISE_KEYS = ("sigma", "noise_std", "noise_multiplier", "noise_scale")


def _positive(value: Any) -> bool:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    return x > 0 and not math.isnan(x)


def privacy_status(manifest: Mapping[str, Any]) -> str:
    """What a run's privacy is: ``"refused"`` (the calibration could not certify: status
    ``refused`` or ``extra.refused`` recorded), ``"epsilon"`` (an ε spent from its ledger),
    ``"uncertified"`` (noise without a claimed ε: ``extra.certified`` false, or a positive noise
    scale in its params/extra, :data:`NOISE_KEYS`) or ``"non-private"``."""
    extra = manifest.get("extra") or {}
    if not isinstance(extra, Mapping):
        extra = {}
    if manifest.get("status") == "refused" or manifest.get("refused") or extra.get("refused"):
        return "refused"
    eps = manifest.get("epsilon_spent")
    if eps is not None and _is_float(eps) and not math.isnan(float(eps)):
        return "epsilon"
    params = manifest.get("params") or {}
    if extra.get("certified") is False or extra.get("uncertified"):
        return "uncertified"
    if any(_positive(src.get(k)) for src in (params, extra) for k in NOISE_KEYS):
        return "uncertified"
    return "non-private"


def curves(manifests: Sequence[Mapping[str, Any]], curve_x: Sequence[str]) -> list[dict[str, Any]]:
    """Group the runs into curves: settings whose params are equal once the x-axis parameters
    ``curve_x`` (K, batch size...) are removed. Each curve: ``params`` (without the x-axis ones),
    ``x`` (x-axis name -> sorted values), ``settings`` and ``manifests``; in setting order."""
    groups: dict[str, dict[str, Any]] = {}
    for m in sorted(manifests, key=lambda m: (int(m.get("setting", -1)), int(m.get("seed", -1)))):
        params = dict(m.get("params") or {})
        key_params = {k: v for k, v in params.items() if k not in curve_x}
        key = json.dumps(key_params, sort_keys=True, default=str)
        group = groups.setdefault(key, {"params": key_params, "x": defaultdict(set), "settings": [],
                                        "manifests": []})
        for k in curve_x:
            if k in params:
                group["x"][k].add(json.dumps(params[k], default=str))
        setting = int(m.get("setting", -1))
        if setting not in group["settings"]:
            group["settings"].append(setting)
        group["manifests"].append(m)
    out = []
    for g in groups.values():
        xs = {}
        for k, values in g["x"].items():
            decoded = [json.loads(v) for v in values]
            try:
                xs[k] = sorted(decoded)
            except TypeError:
                xs[k] = sorted(decoded, key=str)
        out.append({**g, "x": xs})
    return out


def _x_text(xs: Mapping[str, Sequence[object]]) -> str:
    parts = []
    for k, values in xs.items():
        if len(values) == 1:
            parts.append(f"{k} = {_num(values[0])}")
        else:
            parts.append(f"{k} = {_num(values[0])}…{_num(values[-1])} ({len(values)} points)")
    return "; ".join(parts) or "—"


def _privacy_text(manifests: Sequence[Mapping[str, Any]]) -> str:
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for m in manifests:
        by_kind[privacy_status(m)].append(m)
    texts = {"non-private": "non-private",
             "uncertified": "uncertified (noise, no ε claimed)",
             "refused": "**refused** (calibration could not certify)"}
    parts = []
    for kind in ("epsilon", "uncertified", "refused", "non-private"):
        ms = by_kind.get(kind)
        if not ms:
            continue
        text = f"ε = {_spent_text(ms)}" if kind == "epsilon" else texts[kind]
        if len(by_kind) > 1:
            n = len({int(m.get('setting', -1)) for m in ms})
            text += f" ({n} setting{'s' if n != 1 else ''})"
        parts.append(text)
    return "; ".join(parts) or "—"


def _joined(values: Iterable[object]) -> str:
    seen = [str(v) for v in dict.fromkeys(values) if v not in (None, "")]
    return ", ".join(seen) or "—"


def _privacy_section(manifests: Sequence[Mapping[str, Any]], curve_x: Sequence[str]) -> list[str]:
    lines = ["### Privacy per curve", "",
             "One row per curve (settings that differ only in "
             + (", ".join(f"`{k}`" for k in curve_x) or "nothing") + "). *Uncertified*: noise "
             "without a claimed ε; *refused*: the calibration could not certify the budget, so the "
             "curve is absent from the figure.", ""]
    found = curves(manifests, curve_x)
    common: dict[str, object] = {}
    if len(found) > 1:  # parameters equal on every curve are stated once, above the table
        first = found[0]["params"]
        common = {k: v for k, v in first.items() if k != "calibration"
                  and all(k in c["params"] and c["params"][k] == v for c in found[1:])}
    if common:
        lines += [f"Common to every curve: {_params_text(common)}.", ""]
    rows = []
    for c in found:
        ms = c["manifests"]
        seeds_per_setting = [len({int(m.get("seed", -1)) for m in ms if int(m.get("setting", -1)) == s})
                             for s in c["settings"]]
        lo, hi = min(seeds_per_setting), max(seeds_per_setting)
        own = {k: v for k, v in c["params"].items() if k not in common}
        rows.append((_params_text(own) or "—", _x_text(c["x"]), _joined(m.get("calibration") for m in ms),
                     _privacy_text(ms), _joined(_budget_text(m.get("budget")) for m in ms),
                     _joined(m.get("accountant") for m in ms), _joined(m.get("privacy_unit") for m in ms),
                     _joined(m.get("neighboring") for m in ms), str(lo) if lo == hi else f"{lo}–{hi}"))
    if not rows:
        return lines + ["*No successful run.*", ""]
    return lines + _table(["Curve", "x", "Calibration", "Privacy", "Budget", "Accountant",
                           "Privacy unit", "Neighbours", "Seeds"], rows) + [""]
