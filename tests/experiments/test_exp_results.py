"""Result files: atomic writes, JSON conversion, finished-run detection, load_results."""

import json
import math
import os

import numpy as np
import pytest

from privrl.errors import InvalidDataError
from privrl.experiments import results as R
from privrl.privacy import PrivacyBudget, PrivacyUnit


def test_atomic_write_keeps_old_file_when_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "manifest.json"
    R.atomic_write_json(target, {"status": "ok"})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(R.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        R.atomic_write_json(target, {"status": "failed"})
    assert json.loads(target.read_text()) == {"status": "ok"}
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # temp file removed


def test_atomic_write_never_exposes_a_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "metrics.csv"
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src) == str(tmp_path), target.exists()))
        real_replace(src, dst)

    monkeypatch.setattr(R.os, "replace", spy)
    R.write_metrics(target, [{"metric": "m", "value": 1.0}])
    assert seen == [(True, False)]  # written beside the target, and the target appeared only at rename
    assert target.read_text().splitlines() == ["metric,value", "m,1.0"]


def test_write_metrics_requires_metric_and_value(tmp_path):
    with pytest.raises(InvalidDataError, match="'metric' and 'value'"):
        R.write_metrics(tmp_path / "m.csv", [{"metric": "x"}])


def test_to_jsonable():
    out = R.to_jsonable({"a": np.float64(1.5), "b": np.int64(3), "c": math.inf, "d": np.arange(2),
                         "e": PrivacyBudget(epsilon=1.0, delta=1e-5), "f": PrivacyUnit.TRAJECTORY,
                         "g": (np.bool_(True),)})
    assert out == {"a": 1.5, "b": 3, "c": "inf", "d": [0, 1], "e": {"epsilon": 1.0, "delta": 1e-5},
                   "f": "trajectory", "g": [True]}
    json.dumps(out, allow_nan=False)


def _fake_run(out, exp, setting, seed, status="ok", params=None, rows=None, eps=0.5, scale="smoke"):
    params = params or {"epsilon": 1.0}
    d = R.run_dir(out, exp, R.run_key(exp, scale, setting, params), seed)
    manifest = {"experiment": exp, "setting": setting, "seed": seed, "scale": scale, "params": params,
                "status": status, "calibration": "sound", "epsilon_spent": eps}
    if status == "ok":
        rows = rows or [{"step": 0, "metric": "err", "value": float(seed)}]
        data = R.metrics_csv(rows)
        R.atomic_write_bytes(d / R.METRICS, data)
        manifest.update(n_rows=len(rows), metrics_sha256=R.sha256_bytes(data))
    R.atomic_write_json(d / R.MANIFEST, manifest)
    return d


def test_is_finished(tmp_path):
    d = _fake_run(tmp_path, "e", 0, 0)
    assert R.is_finished(d) and R.is_finished(d, {"epsilon": 1.0})
    assert not R.is_finished(d, {"epsilon": 2.0})  # stale: params changed
    (d / R.METRICS).unlink()
    assert not R.is_finished(d)  # manifest ok but no metrics
    assert not R.is_finished(_fake_run(tmp_path, "e", 1, 0, status="failed"))
    d2 = _fake_run(tmp_path, "e", 2, 0)
    (d2 / R.MANIFEST).write_text("{not json")
    assert not R.is_finished(d2)


def test_truncated_or_edited_metrics_are_not_finished(tmp_path):
    rows = [{"step": s, "metric": "err", "value": 0.5 * s} for s in range(50)]
    d = _fake_run(tmp_path, "e", 0, 0, rows=rows)
    data = (d / R.METRICS).read_bytes()
    assert R.is_finished(d)
    (d / R.METRICS).write_bytes(data[: len(data) // 2])  # truncated (e.g. a full disk, a bad copy)
    assert not R.is_finished(d)
    with pytest.raises(InvalidDataError, match="does not match its manifest"):
        R.load_results(tmp_path)
    (d / R.METRICS).write_bytes(data.replace(b"err,", b"eRr,"))  # same length, edited
    assert not R.is_finished(d)
    (d / R.METRICS).write_bytes(data)
    assert R.is_finished(d) and len(R.load_results(tmp_path)) == 50
    manifest = json.loads((d / R.MANIFEST).read_text())
    assert manifest["n_rows"] == 50
    del manifest["metrics_sha256"]  # a manifest without a checksum proves nothing
    (d / R.MANIFEST).write_text(json.dumps(manifest))
    assert not R.is_finished(d)


def test_run_key_is_content_addressed():
    key = R.run_key("e", "smoke", 3, {"epsilon": 1.0, "n": 10})
    assert key.startswith("smoke-3-") and len(key.split("-")[-1]) == 12
    assert key == R.run_key("e", "smoke", 3, {"n": 10, "epsilon": 1.0})  # canonical: key order free
    others = {R.run_key("e", "quick", 3, {"epsilon": 1.0, "n": 10}),
              R.run_key("e", "smoke", 3, {"epsilon": 2.0, "n": 10}),
              R.run_key("e", "smoke", 4, {"epsilon": 1.0, "n": 10}),
              R.run_key("f", "smoke", 3, {"epsilon": 1.0, "n": 10})}
    assert key not in others and len(others) == 4


def test_run_dir_by_index_finds_the_run_or_refuses_ambiguity(tmp_path):
    d = _fake_run(tmp_path, "e", 1, 0)
    assert R.run_dir(tmp_path, "e", 1, 0) == d
    assert R.run_dir(tmp_path, "e", 2, 0) == tmp_path / "e" / "2" / "seed=0"  # none yet
    _fake_run(tmp_path, "e", 1, 0, scale="quick")
    with pytest.raises(InvalidDataError, match="pass the run key"):
        R.run_dir(tmp_path, "e", 1, 0)


def test_written_files_respect_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert R.atomic_write_json(tmp_path / "a.json", {}).stat().st_mode & 0o777 == 0o640
        os.umask(0o002)
        assert R.write_metrics(tmp_path / "m.csv", [{"metric": "m", "value": 1}]).stat().st_mode & 0o777 == 0o664
    finally:
        os.umask(old)


def test_load_results_columns_and_filtering(tmp_path):
    _fake_run(tmp_path, "e", 0, 0, params={"epsilon": "inf", "K": [1, 2], "metric": "shadowed"}, eps=None)
    _fake_run(tmp_path, "e", 0, 1, params={"epsilon": "inf", "K": [1, 2], "metric": "shadowed"}, eps=None)
    _fake_run(tmp_path, "e", 1, 0, params={"epsilon": 1.0, "K": [3], "metric": "shadowed"},
              rows=[{"step": s, "metric": "err", "value": s, "algorithm": "A"} for s in range(3)])
    _fake_run(tmp_path, "f", 0, 0, status="failed")
    df = R.load_results(tmp_path)
    assert list(df.columns[:6]) == ["experiment", "setting", "seed", "status", "calibration", "epsilon_spent"]
    assert {"step", "metric", "value", "epsilon", "K", "algorithm"} <= set(df.columns)
    assert len(df) == 1 + 1 + 3  # failed runs have no rows
    assert set(df["scale"]) == {"smoke"}
    assert set(df["metric"]) == {"err"}  # the run's column wins over a param of the same name
    assert df.loc[df.setting == 0, "epsilon"].map(math.isinf).all()  # "inf" params back to floats
    assert df.loc[df.setting == 0, "epsilon_spent"].isna().all()
    assert df.loc[df.setting == 1, "epsilon_spent"].eq(0.5).all()
    assert df.loc[df.setting == 1, "K"].iloc[0] == "[3]"
    assert len(R.load_results(tmp_path, "f")) == 0
    with_failed = R.load_results(tmp_path, "f", include_failed=True)
    assert len(with_failed) == 1 and with_failed["status"].iloc[0] == "failed"
    assert with_failed["value"].isna().all()


def test_load_results_errors(tmp_path):
    with pytest.raises(InvalidDataError, match="does not exist"):
        R.load_results(tmp_path / "missing")
    d = _fake_run(tmp_path, "e", 0, 0)
    (d / R.MANIFEST).write_text("[]")
    with pytest.raises(InvalidDataError, match="not a privrl run manifest"):
        R.load_results(tmp_path)


def test_label_categories_keeps_every_value_and_turns_only_text_into_categories():
    import pandas as pd

    df = pd.DataFrame({"algorithm": ["DP-LSW", "LSW", "DP-LSW"], "value": [1.0, 2.0, 3.0], "m": [1, 2, 3],
                       "params": ['{"a": 1}', None, '{"a": 2}']})
    out = R.label_categories(df)
    assert isinstance(out["algorithm"].dtype, pd.CategoricalDtype)
    assert out["value"].dtype == float and out["m"].dtype == df["m"].dtype
    assert out["algorithm"].astype(str).tolist() == df["algorithm"].tolist()
    assert (out["algorithm"] == "DP-LSW").tolist() == [True, False, True]
    assert out["params"].isna().tolist() == [False, True, False]
    assert R.label_categories(out) is out          # already categorical: nothing to do
