"""Plot helpers: mean ± standard error over seeds, paper-calibration labels, PNG + PDF output."""


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
