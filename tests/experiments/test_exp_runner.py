"""The runner: seeds, layout and manifests, skipping finished runs, failure isolation, backends."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from privrl._rng import derive_seed
from privrl.errors import InvalidParameterError
from privrl.experiments import RunContext, get_experiment
from privrl.experiments.results import MANIFEST_KEYS, load_manifests, load_results, run_dir, run_key
from privrl.experiments.runner import (
    LOCK_FILE,
    RunLockedError,
    check_overrides,
    execute_run,
    parse_seeds,
    plan_runs,
    run_seed,
    run_sweep,
    sweep_lock,
)

EXP = "example-gaussian"


def test_parse_seeds():
    assert parse_seeds(None) is None
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("5:8") == [5, 6, 7]
    for bad in ("0", "x", "4:2", "-1:3", "1:x"):
        with pytest.raises(InvalidParameterError, match="'seeds'"):
            parse_seeds(bad)


def test_plan_covers_every_setting_and_seed_once():
    exp = get_experiment(EXP)
    specs = plan_runs(EXP, "smoke")
    n_settings = len(exp.settings_for("smoke"))
    assert len(specs) == n_settings * exp.n_seeds("smoke")
    assert len({(s.setting, s.seed) for s in specs}) == len(specs)
    assert all(s.params["sleep"] == 1 for s in plan_runs(EXP, "smoke", [7], {"sleep": 1}))
    assert {s.seed for s in plan_runs(EXP, "smoke", [7, 9])} == {7, 9}
    with pytest.raises(InvalidParameterError, match="Unknown experiment"):
        plan_runs("no-such-experiment", "smoke")
    with pytest.raises(InvalidParameterError, match="'scale'"):
        plan_runs(EXP, "huge")


def test_plan_runs_each_setting_at_its_own_seed_count(monkeypatch):
    """A setting declared with fewer seeds (``setting_seeds``) runs only the seeds below its count,
    by default and under an explicit seed list; the others run every seed."""
    import dataclasses

    from privrl.experiments import registry

    base = get_experiment(EXP)
    few = base.settings_for("smoke")[0]
    exp = dataclasses.replace(base, id="per-setting-seeds", seeds={**base.seeds, "smoke": 4},
                              setting_seeds=lambda params, scale: 2 if params == few else 99)
    monkeypatch.setitem(registry._registry.storage("experiment"), exp.id, exp)
    n_settings = len(exp.settings_for("smoke"))
    assert exp.seeds_for(few, "smoke") == 2 and exp.seeds_for(exp.settings_for("smoke")[1], "smoke") == 4
    specs = plan_runs(exp.id, "smoke")
    assert len(specs) == 2 + 4 * (n_settings - 1)
    assert {s.seed for s in specs if s.setting == 0} == {0, 1}
    assert {s.seed for s in specs if s.setting == 1} == {0, 1, 2, 3}
    explicit = plan_runs(exp.id, "smoke", [1, 3, 7])
    assert {s.seed for s in explicit if s.setting == 0} == {1}
    assert {s.seed for s in explicit if s.setting == 1} == {1, 3, 7}
    assert base.seeds_for(few, "smoke") == base.n_seeds("smoke")   # no setting_seeds: one count


def test_seed_derivation_is_per_run_and_data_is_shared_across_settings():
    assert run_seed(EXP, 1, 2) == derive_seed(EXP, 1, 2)
    seeds = {run_seed(EXP, i, s) for i in range(6) for s in range(4)}
    assert len(seeds) == 24  # no two runs share a generator
    assert run_seed(EXP, 0, 0) != run_seed("other", 0, 0)
    spec = plan_runs(EXP, "smoke")[0]
    outcome = execute_run(spec)
    assert outcome.manifest["run_seed"] == run_seed(EXP, spec.setting, spec.seed)
    # what the run drew equals a run with ctx.rng seeded from derive_seed(id, setting, seed)
    ctx = RunContext(EXP, spec.setting, spec.seed, "smoke",
                     np.random.default_rng(derive_seed(EXP, spec.setting, spec.seed)))
    again = get_experiment(EXP).run(spec.params, ctx)
    assert again.rows == outcome.rows
    # the shared data stream depends on (experiment, seed, name) only
    a = RunContext(EXP, 0, 3, "smoke", np.random.default_rng(0)).shared_rng("data").random(3)
    b = RunContext(EXP, 5, 3, "smoke", np.random.default_rng(1)).shared_rng("data").random(3)
    np.testing.assert_array_equal(a, b)


def test_layout_and_manifest(tmp_path):
    specs = plan_runs(EXP, "smoke")
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    assert summary.success and summary.ok == len(specs) and summary.skipped == 0
    exp = get_experiment(EXP)
    settings = exp.settings_for("smoke")
    for spec in specs:
        d = run_dir(tmp_path, EXP, spec.setting, spec.seed)
        assert d == tmp_path / EXP / spec.key / f"seed={spec.seed}"
        assert spec.key == run_key(EXP, "smoke", spec.setting, spec.params)
        assert (d / "metrics.csv").is_file()
        manifest = json.loads((d / "manifest.json").read_text())
        assert set(MANIFEST_KEYS) <= set(manifest)
        assert manifest["run_key"] == spec.key and manifest["scale"] == "smoke"
        assert manifest["n_rows"] == len(pd.read_csv(d / "metrics.csv"))
        assert manifest["metrics_sha256"] == hashlib.sha256((d / "metrics.csv").read_bytes()).hexdigest()
        assert manifest["status"] == "ok" and "error" not in manifest
        assert manifest["setting"] == spec.setting and manifest["seed"] == spec.seed
        params = settings[spec.setting]
        assert manifest["calibration"] == params["calibration"]
        assert manifest["privacy_unit"] == "trajectory" and manifest["neighboring"] == "replace_one"
        assert manifest["accountant"] == "pld"
        assert {"privrl", "numpy", "dp-accounting", "gymnasium"} <= set(manifest["versions"])
        assert manifest["wall_time_s"] >= 0
        if np.isinf(params["epsilon"]):
            assert manifest["epsilon_spent"] is None and manifest["budget"] == {"epsilon": "inf", "delta": 0.0}
        elif params["calibration"] == "sound":
            # calibrated to the target with the same accountant: spent within [0.999 ε, ε]
            assert 0.999 * params["epsilon"] <= manifest["epsilon_spent"] <= params["epsilon"]
            assert manifest["delta"] == 1e-5
        else:
            assert manifest["epsilon_spent"] > 0
    df = load_results(tmp_path)
    assert len(df) == len(specs)
    assert set(df["status"]) == {"ok"}


def test_rerun_skips_finished_and_reruns_failed_or_stale(tmp_path):
    specs = plan_runs(EXP, "smoke", [0])
    run_sweep(specs, tmp_path, jobs=1, quiet=True)
    first = {d: (d / "manifest.json").read_bytes() for d in tmp_path.glob(f"{EXP}/*/seed=0")}
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    assert summary.skipped == len(specs) and summary.ok == 0
    assert {d: (d / "manifest.json").read_bytes() for d in first} == first  # untouched
    victim = run_dir(tmp_path, EXP, 1, 0)
    manifest = json.loads((victim / "manifest.json").read_text())
    manifest["status"] = "failed"
    (victim / "manifest.json").write_text(json.dumps(manifest))
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    assert (summary.ok, summary.skipped) == (1, len(specs) - 1)
    # a truncated metrics file is recomputed, not counted as done
    victim = run_dir(tmp_path, EXP, 2, 0)
    metrics = (victim / "metrics.csv").read_bytes()
    (victim / "metrics.csv").write_bytes(metrics[: len(metrics) // 2])
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    assert (summary.ok, summary.skipped) == (1, len(specs) - 1)
    assert (victim / "metrics.csv").read_bytes() == metrics
    # changed parameters are another run (a new directory): the earlier results stay
    summary = run_sweep(plan_runs(EXP, "smoke", [0], {"sleep": 0.0}), tmp_path, jobs=1, quiet=True)
    assert summary.ok == len(specs)


def test_other_overrides_or_scale_never_replace_earlier_results(tmp_path):
    first = plan_runs(EXP, "smoke", [0])
    run_sweep(first, tmp_path, jobs=1, quiet=True)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.csv")}
    run_sweep(plan_runs(EXP, "smoke", [0], {"n": 50}), tmp_path, jobs=1, quiet=True)
    run_sweep(plan_runs(EXP, "quick", [0])[:3], tmp_path, jobs=1, quiet=True)
    assert {p: p.read_bytes() for p in before} == before  # untouched
    manifests = load_manifests(tmp_path, EXP)
    assert len(manifests) == 2 * len(first) + 3
    by_key = {m["run_key"]: m for m in manifests}
    assert len(by_key) == len(manifests)
    assert {m["params"]["n"] for m in manifests if m["scale"] == "smoke"} >= {50, 100, 1000}
    df = load_results(tmp_path, EXP)
    assert set(df["scale"]) == {"smoke", "quick"} and (df.loc[df["scale"] == "smoke", "n"] == 50).sum() == len(first)


def test_overrides_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(InvalidParameterError, match=r"'epsilom' is not a parameter of experiment "
                       r"example-gaussian\. Known keys: calibration, epsilon, fail_seeds, n, sleep\."):
        plan_runs(EXP, "smoke", [0], {"epsilom": 2.0})
    with pytest.raises(InvalidParameterError, match=r"'--set n' value of experiment example-gaussian must be an int "
                       r"\(as in its settings\)\. Got \"ten\" instead\."):
        check_overrides(EXP, {"n": "ten"})
    with pytest.raises(InvalidParameterError, match="'--set fail_seeds'.*must be a list"):
        check_overrides(EXP, {"fail_seeds": 1})
    with pytest.raises(InvalidParameterError, match="'--set fail_seeds'.*must be an int"):
        check_overrides(EXP, {"fail_seeds": ["x"]})
    with pytest.raises(InvalidParameterError, match="'--set calibration'.*must be a string"):
        check_overrides(EXP, {"calibration": 1})
    # values take the settings' types
    assert check_overrides(EXP, {"epsilon": 2, "n": 1e3, "sleep": 0}) == {"epsilon": 2.0, "n": 1000, "sleep": 0.0}
    assert check_overrides(EXP, {"epsilon": "inf"})["epsilon"] == float("inf")
    assert not tmp_path.joinpath(EXP).exists()


def test_one_sweep_at_a_time_per_out(tmp_path):
    with sweep_lock(tmp_path):
        info = json.loads((tmp_path / LOCK_FILE).read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        with pytest.raises(RunLockedError, match=rf"pid {os.getpid()} on host .* started .* --out"):
            run_sweep(plan_runs(EXP, "smoke", [0])[:1], tmp_path, jobs=1, quiet=True)
    assert not (tmp_path / LOCK_FILE).exists()  # released
    assert run_sweep(plan_runs(EXP, "smoke", [0])[:1], tmp_path, jobs=1, quiet=True).ok == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX")
def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                                  "started_at": "2020-01-01T00:00:00+00:00"}))
    assert run_sweep(plan_runs(EXP, "smoke", [0])[:1], tmp_path, jobs=1, quiet=True).ok == 1
    # a live holder in another process (killed later) blocks, and its lock goes with it
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from privrl.experiments.runner import sweep_lock\n"
         "with sweep_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid} on host"):
            run_sweep(plan_runs(EXP, "smoke", [1])[:1], tmp_path, jobs=1, quiet=True)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert run_sweep(plan_runs(EXP, "smoke", [1])[:1], tmp_path, jobs=1, quiet=True).ok == 1


def test_failure_isolation(tmp_path):
    specs = plan_runs(EXP, "smoke", [0, 1], {"fail_seeds": [1]})
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    n_per_seed = len(specs) // 2
    assert summary.ok == n_per_seed and len(summary.failed) == n_per_seed
    assert not summary.success
    assert "failing on purpose at seed 1" in summary.line()
    manifests = load_manifests(tmp_path, EXP)
    failed = [m for m in manifests if m["status"] == "failed"]
    assert len(failed) == n_per_seed and all(m["seed"] == 1 for m in failed)
    assert all("Traceback" in m["error"] and "RuntimeError" in m["error"] for m in failed)
    assert all(not (run_dir(tmp_path, EXP, m["setting"], 1) / "metrics.csv").exists() for m in failed)
    assert set(load_results(tmp_path)["seed"]) == {0}


def test_process_pool_gives_the_same_results_as_in_process(tmp_path):
    specs = plan_runs(EXP, "smoke", [0])
    run_sweep(specs, tmp_path / "serial", jobs=1, quiet=True)
    summary = run_sweep(specs, tmp_path / "pool", jobs=2, quiet=True)
    assert summary.ok == len(specs)
    pd.testing.assert_frame_equal(load_results(tmp_path / "serial"), load_results(tmp_path / "pool"))


def test_ray_backend_gives_the_same_results_as_local(tmp_path):
    pytest.importorskip("ray")
    specs = plan_runs(EXP, "smoke", [1])[:4]
    run_sweep(specs, tmp_path / "local", jobs=1, quiet=True)
    summary = run_sweep(specs, tmp_path / "ray", jobs=1, backend="ray", quiet=True)
    assert summary.ok == len(specs), summary.line()
    local, ray = load_results(tmp_path / "local"), load_results(tmp_path / "ray")
    assert len(local) == len(specs)
    pd.testing.assert_frame_equal(local, ray)
    assert [m["run_seed"] for m in load_manifests(tmp_path / "ray")] == \
        [m["run_seed"] for m in load_manifests(tmp_path / "local")]


def test_bad_sweep_arguments(tmp_path):
    with pytest.raises(InvalidParameterError, match="'backend'"):
        run_sweep([], tmp_path, backend="slurm")
    with pytest.raises(InvalidParameterError, match="'jobs'"):
        run_sweep([], tmp_path, jobs=0)


def test_metrics_are_committed_before_the_manifest(tmp_path, monkeypatch):
    from privrl.experiments import results as R

    order = []
    real_replace = R.os.replace

    def spy(src, dst):
        order.append(os.path.basename(dst))
        real_replace(src, dst)

    monkeypatch.setattr(R.os, "replace", spy)
    run_sweep(plan_runs(EXP, "smoke", [0])[:2], tmp_path, jobs=1, quiet=True)
    assert order == ["metrics.csv", "manifest.json"] * 2


def test_progress_bar_only_on_a_terminal(tmp_path, capsys, monkeypatch):
    specs = plan_runs(EXP, "smoke", [0])[:2]
    run_sweep(specs, tmp_path / "a", jobs=1)  # pytest's stdout is not a terminal
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    run_sweep(specs, tmp_path / "b", jobs=1, quiet=True)
    assert capsys.readouterr().err == ""
    run_sweep(specs, tmp_path / "c", jobs=1)
    bar = capsys.readouterr().err
    assert "2/2" in bar and "<" in bar and "run/s" in bar  # count, ETA and rate


def test_example_noise_scale_matches_the_accountant():
    """σ = Δ · multiplier(ε, δ): the PLD ledger of one release at σ/Δ spends ε (to 1e-3), for any Δ;
    the classical (paper) formula is Δ·√(2 ln(1.25/δ))/ε."""
    import dp_accounting

    from privrl.experiments.example import classical_gaussian_sigma, sound_gaussian_sigma
    from privrl.privacy import Ledger, calibrate_gaussian

    eps = 1.0  # the smoke grid's ε: its calibration is usually cached already
    assert sound_gaussian_sigma(eps, 1e-5, 1e-3) == pytest.approx(
        calibrate_gaussian(eps, 1e-5, sensitivity=1e-3), rel=1e-6)
    for n in (7, 100, 1000):
        sigma = sound_gaussian_sigma(eps, 1e-5, 1.0 / n)
        spent = Ledger([dp_accounting.GaussianDpEvent(sigma * n)]).epsilon(1e-5, accountant="pld")
        assert eps * 0.999 <= spent <= eps
    assert classical_gaussian_sigma(1.0, 1e-5, 0.5) == pytest.approx(0.5 * np.sqrt(2 * np.log(1.25e5)))


def test_ray_connection_is_bounded_in_time():
    import threading

    from privrl.experiments import runner

    release = threading.Event()

    class HangingRay:
        def init(self, **kwargs):
            release.wait(60)  # a cluster that never answers

    class FailingRay:
        def init(self, **kwargs):
            raise ConnectionError("no GCS\nat that address")

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)  # accepts TCP, speaks no Ray
    address = f"127.0.0.1:{server.getsockname()[1]}"
    try:
        with pytest.raises(InvalidParameterError, match=rf"'--ray-address' .* Got '{address}' instead "
                           r"\(no answer within 0.2 s\)"):
            runner._connect_ray(HangingRay(), address, 0.2)
        with pytest.raises(InvalidParameterError, match=r"\(no GCS at that address\)"):
            runner._connect_ray(FailingRay(), address, 5.0)
    finally:
        release.set()
        server.close()
    with pytest.raises(InvalidParameterError, match="cannot connect"):
        runner._connect_ray(HangingRay(), address, 5.0)  # the port is closed now: refused at once


def test_runs_of_the_former_layout_are_not_listed_twice(tmp_path):
    specs = plan_runs(EXP, "smoke", [0])[:2]
    run_sweep(specs, tmp_path, jobs=1, quiet=True)
    for spec in specs:  # turn them into runs of the former layout: OUT/<id>/<index>/seed=<s>, no checksum
        new = run_dir(tmp_path, EXP, spec.key, spec.seed)
        manifest = json.loads((new / "manifest.json").read_text())
        del manifest["metrics_sha256"], manifest["run_key"]
        (new / "manifest.json").write_text(json.dumps(manifest))
        old = tmp_path / EXP / str(spec.setting) / f"seed={spec.seed}"
        old.parent.mkdir(parents=True)
        os.replace(new, old)
        new.parent.rmdir()
    assert len(load_manifests(tmp_path, EXP)) == 2
    summary = run_sweep(specs, tmp_path, jobs=1, quiet=True)
    assert summary.ok == 2  # recomputed: an old manifest proves nothing about its metrics
    manifests = load_manifests(tmp_path, EXP)
    assert len(manifests) == 2 and all("metrics_sha256" in m for m in manifests)
    assert sorted(p.name for p in (tmp_path / EXP).iterdir()) == sorted(s.key for s in specs)
