"""The BLAS thread limit around the library's tiny linear algebra."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from privrl._threads import single_threaded_blas


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_single_threaded_blas_limits_every_loaded_blas_and_restores_it():
    import scipy.linalg  # noqa: F401 - SciPy's own BLAS, loaded as the library loads it

    before = _blas_threads()
    assert before, "NumPy's BLAS is loaded"
    with single_threaded_blas():
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before


def test_tight_noise_split_runs_under_one_blas_thread(monkeypatch):
    from privrl.linear_mixture import calibration as cal

    seen = []
    real_minimize = __import__("scipy.optimize", fromlist=["minimize"]).minimize

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real_minimize(*args, **kwargs)

    monkeypatch.setattr("scipy.optimize.minimize", spy)
    cal._noise_plan.cache_clear()
    cal._noise_plan("central", (1.0, 1e-5, None), "tight", 1234, 3, 2, 2, 3.0)
    cal._noise_plan.cache_clear()
    assert seen and all(n == 1 for threads in seen for n in threads)


def test_workers_spawned_in_the_block_load_a_one_thread_blas(monkeypatch):
    import multiprocessing
    import os

    from privrl._threads import BLAS_THREADS, one_blas_thread_in_workers

    for key in BLAS_THREADS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")                               # the user's own setting stays
    with one_blas_thread_in_workers():
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            seen = tuple(pool.apply(os.getenv, (key,)) for key in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    assert seen == ("1", "3")
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"

