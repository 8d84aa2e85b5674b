"""The privacy–utility frontier: utility against ε for each calibration
(paper / sound / tight) with the non-private reference, for one algorithm.

A family registers a *frontier experiment* (an ordinary :class:`~privrl.experiments.spec.Experiment`
with id ``frontier-<family>``) whose settings carry ``calibration`` (``"paper"``, ``"sound"``,
``"tight"``, or ``"none"`` for the non-private reference) and ``epsilon``, and whose rows carry
``metric``/``value``; then it calls :func:`register_frontier` to name the algorithm, the metric and
the setting keys through which a user's own environment or dataset enters. ``privrl frontier``
(:func:`frontier_specs`) re-grids ε, plans the runs and, after the sweep, :func:`frontier_table`
and :func:`plot_frontier` turn the results into a CSV and a figure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from privrl import registry as _registry
from privrl._validation import param_error
from privrl.errors import InvalidParameterError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Frontier", "register_frontier", "get_frontier", "all_frontiers", "frontier_settings",
           "frontier_table", "plot_frontier", "CALIBRATION_ORDER", "REFERENCE"]

#: The non-private reference's ``calibration`` value in a frontier experiment's settings.
REFERENCE = "none"
CALIBRATION_ORDER = ("paper", "sound", "tight")
_COLORS = {"paper": "tab:red", "sound": "tab:orange", "tight": "tab:blue"}
_LABELS = {"paper": "paper calibration (as printed)", "sound": "sound calibration", "tight": "tight calibration"}
#: the paper's curve is drawn dashed with hollow markers on top, so it stays visible where it coincides with another
class _Style(TypedDict, total=False):
    linestyle: str
    marker: str
    markerfacecolor: str
    markersize: float
    zorder: float


_STYLES: dict[str, _Style] = {
    "paper": {"linestyle": "--", "marker": "s", "markerfacecolor": "none", "markersize": 8, "zorder": 3},
    "sound": {"linestyle": "-", "marker": "o", "zorder": 2}, "tight": {"linestyle": "-", "marker": "o", "zorder": 2}}


def calibration_curve(ax: Axes, calibration: str, x: ArrayLike, mean: ArrayLike, se: ArrayLike,
                      label: str | None = None) -> None:
    """One calibration's frontier (mean ± 1 s.e. against ε) in the shared colours and styles."""
    ax.errorbar(x, mean, yerr=se, capsize=3, color=_COLORS[calibration], label=label or _LABELS[calibration],
                **_STYLES[calibration])


def finish_frontier(fig: Figure, ax: Axes, levels: Sequence[float]) -> None:
    """Room inside the frame for every horizontal reference ``levels`` (the trivial answer, the
    non-private value: never drawn on the frame), and the legend below the axes, off the data."""
    finite = [float(v) for v in levels if np.isfinite(v)]
    if finite:
        lo, hi = ax.get_ylim()
        top, bottom = max(finite), min(finite)
        if ax.get_yscale() in ("log", "symlog"):          # a factor of 2 of room on a log axis
            hi = max(hi, top * 2.0 if top > 0 else top)
            lo = min(lo, bottom / 2.0) if bottom > 0 and ax.get_yscale() == "log" else lo
        else:
            pad = 0.08 * (max(hi, top) - min(lo, bottom))
            hi, lo = max(hi, top + pad), min(lo, bottom - pad)
        ax.set_ylim(lo, hi)
    fig.legend(loc="outside lower center", ncol=2, fontsize=8, frameon=False)


@dataclass(frozen=True)
class Frontier:
    """How ``privrl frontier <algorithm>`` runs one frontier experiment.

    ``metric`` is the row metric plotted (``lower_is_better`` says which way is good);
    ``env_key``/``data_key`` are the setting keys that take ``--env ID`` / ``--data FILE`` (None
    when the frontier cannot take them).
    """

    algorithm: str
    experiment_id: str
    metric: str
    lower_is_better: bool = True
    env_key: str | None = None
    data_key: str | None = None
    description: str = ""


def register_frontier(frontier: Frontier) -> Frontier:
    """Register ``frontier`` (kind ``"frontier"`` of :mod:`privrl.registry`; a different frontier
    under a taken algorithm name is an error)."""
    return _registry.register("frontier", frontier.algorithm, frontier, stacklevel=2)


def all_frontiers() -> dict[str, Frontier]:
    """Every registered frontier, sorted by algorithm (the experiment modules register them)."""
    return dict(sorted(_registry.entries("frontier").items()))


def get_frontier(algorithm: str) -> Frontier:
    """The frontier of ``algorithm``, matched case-insensitively (``dp-lsw`` finds the frontier
    registered as ``DP-LSW``, which keeps its display name); an unknown or ambiguous name is a
    one-line error listing the known ones."""
    known = _registry.entries("frontier")
    if isinstance(algorithm, str) and algorithm not in known:
        matches = [name for name in known if name.lower() == algorithm.lower()]
        if len(matches) == 1:
            return known[matches[0]]
    return _registry.get("frontier", algorithm, parameter="algorithm", owner="privrl frontier")


def frontier_settings(settings: Sequence[Mapping[str, object]], *, epsilons: Sequence[float] | None = None,
                      overrides: Mapping[str, object] | None = None) -> list[dict[str, object]]:
    """The settings of a frontier run: the experiment's own ``settings`` re-gridded over
    ``epsilons`` (one setting per distinct non-ε configuration and ε; the reference once), with
    ``overrides`` (e.g. the user's environment) applied to every setting."""
    owner = "privrl frontier"
    if epsilons is not None:
        eps = [float(e) for e in epsilons]
        if not eps or any(not (e > 0) or not np.isfinite(e) for e in eps):
            raise param_error("epsilons", owner, "a non-empty list of finite floats > 0", list(epsilons))
    seen: set[str] = set()
    out: list[dict[str, object]] = []
    for setting in settings:
        if "calibration" not in setting or "epsilon" not in setting:
            raise InvalidParameterError(
                f"A frontier experiment's settings need 'calibration' and 'epsilon' keys; got {sorted(setting)}.")
        grid = [setting["epsilon"]] if epsilons is None or setting["calibration"] == REFERENCE else eps
        for e in grid:
            s = {**setting, **(overrides or {}), "epsilon": e}
            key = json.dumps(s, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(s)
    return out


def frontier_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean, standard error and seed count of ``metric`` per (calibration, ε): a tidy table (the
    reference's ε is its own setting's, plotted as a horizontal line)."""
    import pandas as pd

    rows = df[df["metric"] == metric] if "metric" in df.columns else df.iloc[0:0]
    if rows.empty:
        return pd.DataFrame(columns=["calibration", "epsilon", "mean", "se", "n_seeds", "epsilon_spent"])
    per_seed = rows.groupby(["calibration", "epsilon", "seed"], sort=True).agg(
        value=("value", "mean"), spent=("epsilon_spent", "max")).reset_index()
    grouped = per_seed.groupby(["calibration", "epsilon"], sort=True)
    table = grouped["value"].agg(["mean", "std", "count"]).reset_index()
    table["se"] = np.where(table["count"] > 1, table["std"].fillna(0.0) / np.sqrt(table["count"]), 0.0)
    table["epsilon_spent"] = grouped["spent"].max().to_numpy()
    return table.rename(columns={"count": "n_seeds"}).drop(columns=["std"])


def plot_frontier(df: object, out_dir: str | Path, frontier: Frontier, *, title: str | None = None,
                  logy: bool = False, references: Sequence[tuple[float, str]] = ()) -> list[Path]:
    """Utility against ε (log axis), one line (mean ± 1 s.e. over seeds) per calibration, the
    non-private reference as a horizontal band (``logy``: log utility axis) and ``references``
    (value, label) as grey lines (the trivial answer the verdicts compare with); PNG (+ PDF) under
    ``out_dir``. A calibration whose ledger spends more than the ε it claims (the paper's, where it
    is not sound) is drawn at the ε it spends, and says so."""
    # here, not at the top: matplotlib loads only when a figure is drawn
    from privrl.experiments.plots import new_figure, save_figure

    table = frontier_table(df, frontier.metric)
    fig, ax = new_figure(width=5.2, height=3.6)
    for calibration in CALIBRATION_ORDER:
        part = table[table["calibration"] == calibration].sort_values("epsilon")
        if part.empty:
            continue
        label = _LABELS[calibration]
        x = part["epsilon"].to_numpy(dtype=float)
        spent = part["epsilon_spent"].to_numpy(dtype=float)
        if np.any(np.isfinite(spent) & (spent > x * (1 + 1e-6))):
            x = np.where(np.isfinite(spent), spent, x)
            label += ", at the ε it spends"
        label += _coincides(table, calibration)
        calibration_curve(ax, calibration, x, part["mean"], part["se"], label)
    ref = table[table["calibration"] == REFERENCE]
    if not ref.empty:
        mean, se = float(ref["mean"].mean()), float(ref["se"].max())
        ax.axhline(mean, color="black", linestyle="--", label="non-private")
        ax.axhspan(mean - se, mean + se, color="black", alpha=0.1)
    for value, text in references:
        ax.axhline(float(value), color="grey", linestyle="-.", linewidth=1, label=text)
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("ε (δ fixed; ρ budgets converted by the experiment)")
    ax.set_ylabel(f"{frontier.metric} ({'lower' if frontier.lower_is_better else 'higher'} is better)")
    ax.set_title(title or f"{frontier.algorithm}: privacy–utility frontier")
    finish_frontier(fig, ax, [float(v) for v, _ in references] + ([] if ref.empty else [float(ref["mean"].mean())]))
    return save_figure(fig, out_dir, f"{frontier.experiment_id}")


def _coincides(table: pd.DataFrame, calibration: str) -> str:
    """`` (coincides with sound)`` when the paper's curve has the sound curve's means at every ε."""
    if calibration != "paper":
        return ""
    paper, sound = (table[table["calibration"] == c].set_index("epsilon")["mean"] for c in ("paper", "sound"))
    common = paper.index.intersection(sound.index)
    same = len(common) and np.allclose(paper.loc[common], sound.loc[common], rtol=1e-9, atol=0.0)
    return " — coincides with sound" if same else ""
