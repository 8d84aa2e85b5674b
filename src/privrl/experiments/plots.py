"""Shared plotting helpers for the paper figures.

Every experiment's ``plot(df, out_dir)`` uses these so that figures look alike:

* :func:`mean_se_band` — the mean over seeds with a band of ± 1 standard error (``band="se"``)
  or ± 1 standard deviation (``band="std"``, as Wang & Hegde 2019 draw it); the legend gets one
  entry per axes that says which (:func:`band_text`), optional log axes, and a visible
  "(paper calibration)" label on curves made with ``calibration="paper"``;
* :func:`curve_colors` — one colour per curve label, the same in every panel and figure;
* :func:`save_figure` — small PNGs (110 dpi) and PDFs, written atomically, under ``out_dir``;
  ``PRIVRL_FIGURE_FORMATS=png`` in the environment skips the PDFs (committed evidence);
* :func:`paper_label` — the label rule on its own;
* :func:`new_figure` — a figure with constrained layout (suptitles and axis labels never overlap
  the panels) on the non-interactive Agg backend (safe in worker processes).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg", force=False)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

from privrl._io import atomic_write_bytes  # noqa: E402
from privrl.errors import InvalidDataError, InvalidParameterError  # noqa: E402

__all__ = ["PAPER_SUFFIX", "BANDS", "paper_label", "is_paper_calibration", "mean_se", "mean_se_band",
           "band_text", "curve_colors", "new_figure", "save_figure", "DPI", "FORMATS_ENV"]

#: appended to the label of every curve made in paper calibration
PAPER_SUFFIX = " (paper calibration)"

#: band kind -> what the band is, in words
BANDS = {"se": "± 1 s.e.", "std": "± 1 std"}

#: resolution of the PNGs (small files for the committed evidence)
DPI = 110

#: environment variable with the comma-separated formats save_figure writes by default
FORMATS_ENV = "PRIVRL_FIGURE_FORMATS"

_BAND_ENTRY = "_privrl_band_entries"


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


def paper_label(label: str | None, calibration: object = None) -> str | None:
    """``label`` with " (paper calibration)" appended when the curve was made in paper mode (and
    the label does not say so already, e.g. "(paper calibration: printed noise, ...)")."""
    if not is_paper_calibration(calibration):
        return label
    base = "" if label is None else str(label)
    if base.endswith(PAPER_SUFFIX) or "paper calibration" in base:
        return base
    return (base + PAPER_SUFFIX).strip() if base else PAPER_SUFFIX.strip()


def mean_se(df: pd.DataFrame, x: str, y: str = "value", seed_col: str = "seed") -> pd.DataFrame:
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


def band_text(band: str = "se", n_seeds: int | Iterable[int] | None = None) -> str:
    """What a band is, in words: "mean ± 1 std over 10 seeds" (``n_seeds`` an int or the seed
    counts of several curves, shown as a range)."""
    if band not in BANDS:
        raise InvalidParameterError(f"The 'band' parameter of band_text must be one of "
                                    f"{', '.join(map(repr, BANDS))}. Got {band!r} instead.")
    text = f"shaded: mean {BANDS[band]}"
    if n_seeds is None:
        return text + " over seeds"
    counts = sorted({int(n) for n in ([n_seeds] if isinstance(n_seeds, (int, np.integer)) else n_seeds)})
    if not counts:
        return text + " over seeds"
    if counts[-1] <= 1:
        return "one seed: no band"
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{text} over {span} seeds"


def _band_legend_entry(ax: Axes, band: str, n_seeds: int) -> None:
    """One legend entry per axes and band kind that says what the shaded band is; its seed count
    follows every curve drawn on the axes."""
    entries = ax.__dict__.setdefault(_BAND_ENTRY, {})
    if band in entries:
        artist, counts = entries[band]
        counts.add(int(n_seeds))
        artist.set_label(band_text(band, counts))
        return
    # an outlined light-grey swatch: it reads as "a band", not as one more (grey) curve
    artist = ax.fill_between([], [], facecolor="0.85", edgecolor="0.35", linewidth=0.6,
                             label=band_text(band, n_seeds))
    entries[band] = (artist, {int(n_seeds)})


def mean_se_band(ax: Axes, df: pd.DataFrame, x: str, y: str = "value", label: str | None = None,
                 calibration: Any = None, logx: bool = False, logy: bool = False,
                 color: Any = None, alpha: float = 0.2, marker: str | None = None,
                 linestyle: str | None = None, seed_col: str = "seed", band: str = "se",
                 band_legend: bool = True, **plot_kwargs: Any) -> Line2D:
    """Plot the mean of ``y`` over seeds against ``x`` with a shaded band of ± 1 standard error
    (``band="se"``, default) or ± 1 standard deviation (``band="std"``, as in Wang & Hegde 2019,
    Figures 1–2).

    With ``band_legend`` (default) the axes' legend gets one entry saying what the band is and
    over how many seeds (:func:`band_text`), so no caption can contradict the figure.
    ``calibration`` may be ``"sound"``/``"paper"``/``None``; when omitted and ``df`` has a
    ``calibration`` column, that column decides. Curves in paper calibration get a visible
    "(paper calibration)" suffix and a dashed line. ``logx``/``logy`` set log axes. Returns the
    ``Line2D`` of the mean curve.
    """
    if df is None or len(df) == 0:
        raise InvalidDataError(f"mean_se_band: no rows to plot for {label!r}.")
    if band not in BANDS:
        raise InvalidParameterError(f"The 'band' parameter of mean_se_band must be one of "
                                    f"{', '.join(map(repr, BANDS))}. Got {band!r} instead.")
    if calibration is None and "calibration" in getattr(df, "columns", ()):
        calibration = df["calibration"].dropna().unique()
    stats = mean_se(df, x, y, seed_col=seed_col)
    xs = stats[x].to_numpy()
    mean = stats["mean"].to_numpy(dtype=float)
    half = stats["se"].to_numpy(dtype=float)
    if band == "std":
        half = half * np.sqrt(stats["n_seeds"].to_numpy(dtype=float))
    paper = is_paper_calibration(calibration)
    if linestyle is None:
        linestyle = "--" if paper else "-"
    (line,) = ax.plot(xs, mean, label=paper_label(label, calibration), color=color,
                      marker=marker, linestyle=linestyle, **plot_kwargs)
    lower, upper = mean - half, mean + half
    if logy:
        floor = np.finfo(float).tiny
        lower = np.maximum(lower, floor)
    ax.fill_between(xs, lower, upper, color=line.get_color(), alpha=alpha, linewidth=0)
    if band_legend:
        _band_legend_entry(ax, band, int(stats["n_seeds"].max()))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    return line


def curve_colors(labels: Iterable[object], palette: str | Sequence[object] = "tab10") -> dict[object, object]:
    """A colour per curve label, identical in every panel and figure that passes the same labels.

    Labels are sorted (the paper-calibration suffix is ignored, so a curve and its paper-mode twin
    share a colour and differ by line style); ``palette`` is a Matplotlib colormap name or a list
    of colours, cycled when there are more labels. Returns ``{label: colour}`` for every label given
    (with and without the suffix).
    """
    given = [lab for lab in dict.fromkeys(labels) if lab is not None]
    base = sorted({str(lab).removesuffix(PAPER_SUFFIX) for lab in given})
    colors: list[object]
    if isinstance(palette, str):
        cmap = matplotlib.colormaps[palette]
        n = getattr(cmap, "N", 10)
        colors = [cmap(i) for i in range(min(n, 256))] if n <= 20 else [cmap(i / 9) for i in range(10)]
    else:
        colors = list(palette)
    if not colors:
        raise InvalidParameterError("The 'palette' parameter of curve_colors must name at least one colour. Got none.")
    by_base = {b: colors[i % len(colors)] for i, b in enumerate(base)}
    out = {lab: by_base[str(lab).removesuffix(PAPER_SUFFIX)] for lab in given}
    for b, c in by_base.items():
        out.setdefault(b, c)
        out.setdefault(b + PAPER_SUFFIX, c)
    return out


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 5.0, height: float = 3.6,
               **kwargs: Any) -> tuple[Figure, Any]:
    """``plt.subplots`` with a size per panel and constrained layout (a suptitle, panel titles
    and axis labels never overlap); returns ``(fig, axes)``: an ``Axes``, or an array of them
    (as ``plt.subplots``, whose type the axes keep)."""
    kwargs.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kwargs)


def _atomic_savefig(fig: Figure, path: Path, fmt: str, dpi: float) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, bbox_inches="tight", dpi=dpi)
    atomic_write_bytes(path, buffer.getvalue())


def _default_formats() -> tuple[str, ...]:
    raw = os.environ.get(FORMATS_ENV, "").strip()
    if not raw:
        return ("png", "pdf")
    formats = tuple(f.strip().lower() for f in raw.split(",") if f.strip())
    bad = [f for f in formats if f not in ("png", "pdf", "svg")]
    if bad or not formats:
        raise InvalidParameterError(f"The {FORMATS_ENV} environment variable must be a comma-separated "
                                    f"list of png, pdf, svg. Got {raw!r} instead.")
    return formats


def save_figure(fig: Figure, out_dir: str | os.PathLike, name: str,
                formats: Iterable[str] | None = None, close: bool = True, *, dpi: float = DPI) -> list[Path]:
    """Save ``fig`` as ``out_dir/<name>.png`` and ``.pdf`` (atomically) and return the paths.

    ``formats`` defaults to PNG and PDF, or to the list in ``$PRIVRL_FIGURE_FORMATS`` (e.g.
    ``png`` for the committed evidence). PNGs are written at ``dpi`` (110: small files). A figure
    without a layout engine gets constrained layout, so its suptitle cannot overlap the panels.
    """
    if not name or os.sep in name or (os.altsep and os.altsep in name):
        raise InvalidParameterError(f"The 'name' parameter of save_figure must be a plain file stem. "
                                    f"Got {name!r} instead.")
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in (_default_formats() if formats is None else formats):
        path = out / f"{name}.{fmt}"
        _atomic_savefig(fig, path, fmt, dpi)
        paths.append(path)
    if close:
        plt.close(fig)
    return paths
