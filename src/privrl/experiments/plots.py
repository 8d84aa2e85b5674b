"""Shared plotting helpers for the paper figures (issue #3 §4).

Every experiment's ``plot(df, out_dir)`` uses these so that figures look alike:

* :func:`mean_se_band` — mean ± one standard error over seeds, optional log axes, and a visible
  "(paper calibration)" label on curves made with ``calibration="paper"``;
* :func:`save_figure` — PNG and PDF, written atomically, under ``out_dir``;
* :func:`paper_label` — the label rule on its own;
* :func:`new_figure` — a figure on the non-interactive Agg backend (safe in worker processes).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from privrl._io import atomic_write_bytes  # noqa: E402
from privrl.errors import InvalidDataError, InvalidParameterError  # noqa: E402

__all__ = ["PAPER_SUFFIX", "paper_label", "is_paper_calibration", "mean_se", "mean_se_band",
           "new_figure", "save_figure"]

#: appended to the label of every curve made in paper calibration
PAPER_SUFFIX = " (paper calibration)"


def is_paper_calibration(calibration: Any) -> bool:
    """True when ``calibration`` (a string, or an iterable/Series of strings) contains ``"paper"``."""
    if calibration is None:
        return False
    if isinstance(calibration, str):
        return calibration == "paper"
    try:
        values = list(calibration)
    except TypeError:
        return False
    return any(v == "paper" for v in values)


def paper_label(label: str | None, calibration: Any = None) -> str | None:
    """``label`` with " (paper calibration)" appended when the curve was made in paper mode."""
    if not is_paper_calibration(calibration):
        return label
    base = "" if label is None else str(label)
    if base.endswith(PAPER_SUFFIX):
        return base
    return (base + PAPER_SUFFIX).strip() if base else PAPER_SUFFIX.strip()


def mean_se(df: Any, x: str, y: str = "value", seed_col: str = "seed"):
    """Per ``x``: mean of ``y`` over seeds, its standard error and the number of seeds.

    Rows with the same (``x``, seed) are first averaged (a seed counts once). Returns a pandas
    DataFrame with columns ``<x>, mean, se, n_seeds`` sorted by ``x``; ``se`` is 0 for one seed.
    """
    for col in (x, y):
        if col not in df.columns:
            raise InvalidDataError(f"mean_se: column {col!r} is missing; columns are {list(df.columns)}.")
    if seed_col in df.columns:
        per_seed = df.groupby([x, seed_col], sort=True)[y].mean().reset_index()
    else:
        per_seed = df[[x, y]]
    grouped = per_seed.groupby(x, sort=True)[y]
    means = grouped.mean()
    counts = grouped.count().to_numpy(dtype=float)
    std = np.nan_to_num(grouped.std(ddof=1).to_numpy(dtype=float))
    se = np.where(counts > 1, std / np.sqrt(np.maximum(counts, 1.0)), 0.0)
    return pd.DataFrame({x: means.index.to_numpy(), "mean": means.to_numpy(dtype=float),
                         "se": se, "n_seeds": counts.astype(int)})


def mean_se_band(ax: Any, df: Any, x: str, y: str = "value", label: str | None = None,
                 calibration: Any = None, logx: bool = False, logy: bool = False,
                 color: Any = None, alpha: float = 0.2, marker: str | None = None,
                 linestyle: str | None = None, seed_col: str = "seed", band: str = "se",
                 **plot_kwargs: Any):
    """Plot the mean of ``y`` over seeds against ``x`` with a ± 1 standard-error band
    (``band="se"``, default) or a ± 1 standard-deviation band (``band="std"``, as in
    Wang & Hegde 2019, Figures 1–2).

    ``calibration`` may be ``"sound"``/``"paper"``/``None``; when omitted and ``df`` has a
    ``calibration`` column, that column decides. Curves in paper calibration get a visible
    "(paper calibration)" suffix and a dashed line. ``logx``/``logy`` set log axes. Returns the
    ``Line2D`` of the mean curve.
    """
    if df is None or len(df) == 0:
        raise InvalidDataError(f"mean_se_band: no rows to plot for {label!r}.")
    if calibration is None and "calibration" in getattr(df, "columns", ()):
        calibration = df["calibration"].dropna().unique()
    stats = mean_se(df, x, y, seed_col=seed_col)
    xs = stats[x].to_numpy()
    mean = stats["mean"].to_numpy(dtype=float)
    if band not in ("se", "std"):
        raise InvalidDataError(f"mean_se_band: band must be 'se' or 'std'. Got {band!r} instead.")
    se = stats["se"].to_numpy(dtype=float)
    if band == "std":
        se = se * np.sqrt(stats["n_seeds"].to_numpy(dtype=float))
    paper = is_paper_calibration(calibration)
    if linestyle is None:
        linestyle = "--" if paper else "-"
    (line,) = ax.plot(xs, mean, label=paper_label(label, calibration), color=color,
                      marker=marker, linestyle=linestyle, **plot_kwargs)
    lower, upper = mean - se, mean + se
    if logy:
        floor = np.finfo(float).tiny
        lower = np.maximum(lower, floor)
    ax.fill_between(xs, lower, upper, color=line.get_color(), alpha=alpha, linewidth=0)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    return line


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 5.0, height: float = 3.6, **kwargs: Any):
    """``plt.subplots`` with a size per panel; returns ``(fig, axes)``."""
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)


def _atomic_savefig(fig: Any, path: Path, fmt: str) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, bbox_inches="tight")
    atomic_write_bytes(path, buffer.getvalue())


def save_figure(fig: Any, out_dir: str | os.PathLike, name: str,
                formats: Iterable[str] = ("png", "pdf"), close: bool = True) -> list[Path]:
    """Save ``fig`` as ``out_dir/<name>.png`` and ``.pdf`` (atomically) and return the paths."""
    if not name or os.sep in name or (os.altsep and os.altsep in name):
        raise InvalidParameterError(f"The 'name' parameter of save_figure must be a plain file stem. "
                                    f"Got {name!r} instead.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        _atomic_savefig(fig, path, fmt)
        paths.append(path)
    if close:
        plt.close(fig)
    return paths
