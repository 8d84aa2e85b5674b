"""privrl.experiments.frontier: re-gridding a frontier experiment's settings, the table, the plot."""

import math

import numpy as np
import pandas as pd
import pytest

from privrl.errors import InvalidParameterError
from privrl.experiments.frontier import Frontier, frontier_settings, frontier_table, plot_frontier

SETTINGS = [{"calibration": c, "epsilon": 1.0, "n": 10} for c in ("paper", "sound", "tight")] + [
    {"calibration": "none", "epsilon": math.inf, "n": 10}]


def test_settings_are_regridded_over_epsilon_and_the_reference_kept_once():
    out = frontier_settings(SETTINGS, epsilons=[0.1, 10.0], overrides={"n": 50})
    assert len(out) == 3 * 2 + 1
    assert {(s["calibration"], s["epsilon"]) for s in out if s["calibration"] != "none"} == {
        (c, e) for c in ("paper", "sound", "tight") for e in (0.1, 10.0)}
    assert all(s["n"] == 50 for s in out)
    assert frontier_settings(SETTINGS) == SETTINGS  # no re-gridding: the experiment's own grid
    with pytest.raises(InvalidParameterError, match="'epsilons' parameter of privrl frontier"):
        frontier_settings(SETTINGS, epsilons=[0.0])
    with pytest.raises(InvalidParameterError, match="need 'calibration' and 'epsilon'"):
        frontier_settings([{"epsilon": 1.0}])


def _results():
    rows = []
    for seed in range(3):
        for c, shift in (("paper", 3.0), ("sound", 2.0), ("tight", 1.0)):
            for eps in (0.1, 1.0):
                rows.append({"calibration": c, "epsilon": eps, "seed": seed, "metric": "rmse",
                             "value": shift / eps + seed * 0.1, "epsilon_spent": eps})
        rows.append({"calibration": "none", "epsilon": math.inf, "seed": seed, "metric": "rmse",
                     "value": 0.5, "epsilon_spent": np.nan})
    return pd.DataFrame(rows)


def test_table_means_and_standard_errors():
    table = frontier_table(_results(), "rmse")
    tight = table[(table.calibration == "tight") & (table.epsilon == 1.0)].iloc[0]
    assert tight["mean"] == pytest.approx(1.1) and tight["n_seeds"] == 3
    assert tight["se"] == pytest.approx(np.std([1.0, 1.1, 1.2], ddof=1) / math.sqrt(3))
    assert set(table.calibration) == {"paper", "sound", "tight", "none"}


def test_plot_draws_one_line_per_calibration_and_the_reference(tmp_path):
    import matplotlib.pyplot as plt

    captured = {}
    original = plt.Figure.savefig

    def spy(fig, *args, **kwargs):
        ax = fig.axes[0]
        legend = fig.legends[0] if fig.legends else ax.get_legend()     # the legend below the axes
        captured["labels"] = [t.get_text() for t in legend.get_texts()]
        captured["hlines"] = [line.get_ydata()[0] for line in ax.get_lines() if line.get_label() == "non-private"]
        return original(fig, *args, **kwargs)

    plt.Figure.savefig = spy
    try:
        paths = plot_frontier(_results(), tmp_path, Frontier("dp-x", "frontier-x", "rmse"))
    finally:
        plt.Figure.savefig = original
    assert any(p.suffix == ".png" for p in paths)
    assert sorted(captured["labels"]) == ["non-private", "paper calibration (as printed)", "sound calibration",
                                          "tight calibration"]
    assert captured["hlines"] == [pytest.approx(0.5)]
