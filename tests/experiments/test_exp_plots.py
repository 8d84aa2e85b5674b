"""Plot helpers: mean ± s.e. or std over seeds with a legend that says which, paper-calibration labels,
consistent curve colours, small PNG + PDF output with constrained layout."""


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from privrl.errors import InvalidDataError, InvalidParameterError
from privrl.experiments.plots import mean_se, mean_se_band, paper_label, save_figure


def _frame(calibration="sound"):
    # x=1: seeds give 1 and 3 -> mean 2, se = std(ddof=1)/sqrt(2) = sqrt(2)/sqrt(2) = 1
    # x=2: seed 0 has two rows (2, 4) averaged to 3 first; seed 1 gives 5 -> mean 4, se 1
    return pd.DataFrame({"x": [1, 1, 2, 2, 2], "seed": [0, 1, 0, 0, 1],
                         "value": [1.0, 3.0, 2.0, 4.0, 5.0], "calibration": calibration})


def test_mean_se_averages_within_seed_then_over_seeds():
    stats = mean_se(_frame(), "x")
    assert stats["x"].tolist() == [1, 2]
    np.testing.assert_allclose(stats["mean"], [2.0, 4.0])
    np.testing.assert_allclose(stats["se"], [1.0, 1.0])
    assert stats["n_seeds"].tolist() == [2, 2]


def test_mean_se_single_seed_has_zero_se_and_x_may_be_named_n():
    df = pd.DataFrame({"n": [10, 20], "seed": [0, 0], "value": [1.0, 2.0]})
    stats = mean_se(df, "n")
    assert stats["se"].tolist() == [0.0, 0.0]
    assert list(stats.columns) == ["n", "mean", "se", "n_seeds"]


def test_mean_se_missing_column_is_an_error():
    with pytest.raises(InvalidDataError, match="'y'"):
        mean_se(_frame(), "x", "y")


def test_paper_label():
    assert paper_label("DP-LSW", "sound") == "DP-LSW"
    assert paper_label("DP-LSW", "paper") == "DP-LSW (paper calibration)"
    assert paper_label("DP-LSW (paper calibration)", "paper") == "DP-LSW (paper calibration)"
    assert paper_label("a", ["sound", "paper"]) == "a (paper calibration)"
    assert paper_label(None, "paper") == "(paper calibration)"


def test_band_labels_paper_curves_and_sets_log_axes():
    fig, ax = plt.subplots()
    sound = mean_se_band(ax, _frame("sound"), "x", label="sound curve", logx=True, logy=True)
    paper = mean_se_band(ax, _frame("paper"), "x", label="paper curve")  # from the column
    assert sound.get_label() == "sound curve"
    assert paper.get_label() == "paper curve (paper calibration)"
    assert paper.get_linestyle() == "--"
    np.testing.assert_allclose(sound.get_ydata(), [2.0, 4.0])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(1.0) and band[:, 1].max() == pytest.approx(5.0)
    plt.close(fig)


def test_band_refuses_empty_frame():
    fig, ax = plt.subplots()
    with pytest.raises(InvalidDataError):
        mean_se_band(ax, _frame().iloc[:0], "x", label="empty")
    plt.close(fig)


def test_save_figure_writes_png_and_pdf(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    paths = save_figure(fig, tmp_path / "sub", "fig1")
    assert [p.name for p in paths] == ["fig1.png", "fig1.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["fig1.pdf", "fig1.png"]  # no temp files
    assert not plt.fignum_exists(fig.number)


def test_save_figure_rejects_paths_as_names(tmp_path):
    fig, _ = plt.subplots()
    with pytest.raises(InvalidParameterError, match="'name'"):
        save_figure(fig, tmp_path, "../escape")
    plt.close(fig)


def test_std_band_is_sqrt_n_times_the_se_band():
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from privrl.experiments.plots import mean_se_band

    df = pd.DataFrame({"x": [1, 1, 1, 1], "seed": [0, 1, 2, 3], "value": [0.0, 2.0, 4.0, 6.0]})
    widths = {}
    for band in ("se", "std"):
        fig, ax = plt.subplots()
        mean_se_band(ax, df, "x", label="c", band=band)
        verts = ax.collections[0].get_paths()[0].vertices[:, 1]
        widths[band] = verts.max() - verts.min()
        plt.close(fig)
    std = np.std([0.0, 2.0, 4.0, 6.0], ddof=1)
    assert np.isclose(widths["std"], 2 * std)
    assert np.isclose(widths["se"], 2 * std / 2.0)


def _legend_texts(ax):
    return [t.get_text() for t in ax.legend().get_texts()]


@pytest.mark.parametrize("band,words", [("se", "± 1 s.e."), ("std", "± 1 std")])
def test_band_legend_says_what_the_band_is(band, words):
    import pandas as pd

    df = pd.DataFrame({"x": [1, 1, 1, 2, 2, 2], "seed": [0, 1, 2] * 2, "value": [0.0, 1, 2, 3, 4, 5]})
    fig, ax = plt.subplots()
    mean_se_band(ax, df, "x", label="a", band=band)
    mean_se_band(ax, df[df.seed < 2], "x", label="b", band=band)
    texts = _legend_texts(ax)
    assert f"shaded: mean {words} over 2–3 seeds" in texts
    assert sum(t.startswith("shaded:") for t in texts) == 1  # one entry per axes, not per curve
    plt.close(fig)
    fig, ax = plt.subplots()
    mean_se_band(ax, df, "x", label="a", band=band, band_legend=False)
    assert _legend_texts(ax) == ["a"]
    plt.close(fig)


def test_band_text_and_bad_band():
    from privrl.experiments.plots import band_text

    assert band_text("std", 10) == "shaded: mean ± 1 std over 10 seeds"
    assert band_text("se", [1]) == "one seed: no band"
    with pytest.raises(InvalidParameterError, match="'band' parameter of mean_se_band"):
        fig, ax = plt.subplots()
        mean_se_band(ax, _frame(), "x", band="ci")
    plt.close("all")


def test_curve_colors_are_the_same_across_figures_and_calibrations():
    from privrl.experiments.plots import PAPER_SUFFIX, curve_colors

    a = curve_colors(["DP-SGD", "Functional", "Non-private"])
    b = curve_colors(["Non-private", "Functional" + PAPER_SUFFIX, "DP-SGD", "Functional"])
    assert a["Functional"] == b["Functional"] == b["Functional" + PAPER_SUFFIX]
    assert a["DP-SGD"] == b["DP-SGD"] and a["Non-private"] == b["Non-private"]
    assert len({a[k] for k in ("DP-SGD", "Functional", "Non-private")}) == 3
    assert curve_colors(["x", "y", "z"], palette=["r", "g"]) ["z"] == "r"  # cycled


def test_save_figure_is_small_constrained_and_can_skip_the_pdf(tmp_path, monkeypatch):
    from privrl.experiments.plots import DPI, FORMATS_ENV

    fig, axes = plt.subplots(1, 2, figsize=(8, 3))  # no layout engine
    for ax in axes:
        ax.set_title("panel title")
    fig.suptitle("A suptitle that must not overlap the panel titles")
    monkeypatch.setenv(FORMATS_ENV, "png")
    captured = {}
    real_save = plt.Figure.savefig

    def spy(f, *args, **kwargs):
        captured["dpi"], captured["engine"] = kwargs.get("dpi"), type(f.get_layout_engine()).__name__
        return real_save(f, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", spy)
    paths = save_figure(fig, tmp_path, "small", close=False)
    assert [p.name for p in paths] == ["small.png"]
    assert captured == {"dpi": DPI, "engine": "ConstrainedLayoutEngine"}
    # the suptitle sits above both panel titles once laid out
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    sup = fig._suptitle.get_window_extent(renderer)
    assert all(sup.y0 >= ax.title.get_window_extent(renderer).y1 - 0.5 for ax in axes)
    plt.close(fig)
    monkeypatch.setenv(FORMATS_ENV, "png,gif")
    with pytest.raises(InvalidParameterError, match=FORMATS_ENV):
        save_figure(plt.figure(), tmp_path, "bad")
    plt.close("all")
