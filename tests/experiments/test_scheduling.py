"""The local pool's order: largest first, and the first group of a compile key alone (so that each
compiled kernel compiles in one worker, the others loading it from numba's cache)."""

import concurrent.futures as cf
import threading

from privrl.experiments import runner
from privrl.experiments.scheduling import GroupQueue, WarmUp, largest_first, schedule, warm_up


def test_largest_groups_come_first_ties_in_planned_order():
    assert largest_first([["a"], ["b", "b"], ["c"], ["d", "d", "d"]]) == [["d", "d", "d"], ["b", "b"], ["a"], ["c"]]


def test_a_key_being_compiled_holds_its_other_groups_until_its_first_group_finished():
    queue = GroupQueue([frozenset("a"), frozenset("a"), frozenset("b"), frozenset(), frozenset("ab")])
    assert [queue.take(), queue.take(), queue.take()] == [0, 2, 3]   # 1 and 4 wait for 'a' (4 also for 'b')
    assert queue.take() is None and len(queue) == 2
    queue.finished(2)                                                # 'b' compiled, 'a' still compiling
    assert queue.take() is None
    queue.finished(0)
    assert [queue.take(), queue.take(), queue.take()] == [1, 4, None]
    assert len(queue) == 0


def test_a_group_starting_on_a_compiled_key_holds_nothing():
    queue = GroupQueue([frozenset("a"), frozenset("a"), frozenset("a")])
    assert queue.take() == 0
    queue.finished(0)
    assert [queue.take(), queue.take()] == [1, 2]                    # both at once: 'a' is in the cache
    queue.finished(2)
    queue.finished(1)
    assert queue.take() is None and len(queue) == 0


def test_groups_without_keys_run_as_before():
    queue = GroupQueue([frozenset(), frozenset()])
    assert [queue.take(), queue.take(), queue.take()] == [0, 1, None]


def test_the_pool_starts_a_keys_second_group_only_after_its_first(monkeypatch):
    """Two workers, two groups needing kernel 'a' and one needing 'b': the second 'a' group waits for
    the first (which runs beside the 'b' group), where handing groups out in order would have run
    the two 'a' groups side by side, both compiling 'a'."""
    groups = [["a1", "a1", "a1"], ["a2", "a2"], ["b1"]]
    events: list[str] = []
    lock, b_started = threading.Lock(), threading.Event()

    def execute_runs(group, commit):
        name = group[0]
        with lock:
            events.append(f"start {name}")
        if name == "b1":
            b_started.set()
        if name == "a1":  # the first 'a' group ends only once 'b1' runs beside it (or after 30 s)
            b_started.wait(30)
        with lock:
            events.append(f"end {name}")
        return [name]

    monkeypatch.setattr(runner, "group_runs", lambda specs: [list(g) for g in groups])
    monkeypatch.setattr(runner, "compile_key", lambda spec: spec[0], raising=False)
    monkeypatch.setattr(runner, "execute_runs", execute_runs)
    monkeypatch.setattr(runner.cf, "ProcessPoolExecutor",
                        lambda max_workers, **kwargs: cf.ThreadPoolExecutor(max_workers))
    out = list(runner._iter_local([], 2, None))
    assert sorted(out) == ["a1", "a2", "b1"]
    assert events.index("start a2") > events.index("end a1"), events
    assert events.index("start b1") < events.index("end a1"), events


def _noop() -> None:
    pass


def _other() -> None:
    pass


def test_warm_ups_come_first_and_a_keys_groups_wait_for_all_of_them():
    warm = {"a": (_noop, _other), "b": ()}
    units, queue = schedule([["b1"], ["a1", "a1"], ["a2"]], lambda spec: spec[0], lambda k: warm[k])
    assert [u.compile if isinstance(u, WarmUp) else u for u in units] == [_noop, _other, ["a1", "a1"], ["b1"], ["a2"]]
    assert [queue.take(), queue.take(), queue.take(), queue.take()] == [0, 1, 3, None]   # both warm-ups, then b1
    queue.finished(0)
    assert queue.take() is None                                  # 'a' still has a warm-up running
    queue.finished(1)
    assert [queue.take(), queue.take()] == [2, None]             # a1 compiles the rest of 'a'; a2 waits for it
    queue.finished(2)
    assert queue.take() == 4


def test_a_failing_warm_up_is_left_to_the_runs():
    def broken() -> None:
        raise RuntimeError("no compiler here")

    assert warm_up(WarmUp("a", broken)) is None


def test_the_pool_runs_each_warm_up_once_before_its_keys_runs(monkeypatch):
    events: list[str] = []
    lock = threading.Lock()

    def execute_runs(group, commit):
        with lock:
            events.append(f"run {group[0]}")
        return list(group)

    monkeypatch.setattr(runner, "group_runs", lambda specs: [["a1", "a1"], ["a2"], ["b1"]])
    monkeypatch.setattr(runner, "compile_key", lambda spec: spec[0], raising=False)
    monkeypatch.setattr(runner, "warm_ups", lambda key: (_recorder(events, lock, key),) if key == "a" else (),
                        raising=False)
    monkeypatch.setattr(runner, "execute_runs", execute_runs)
    monkeypatch.setattr(runner.cf, "ProcessPoolExecutor",
                        lambda max_workers, **kwargs: cf.ThreadPoolExecutor(max_workers))
    assert sorted(runner._iter_local([], 2, None)) == ["a1", "a1", "a2", "b1"]
    assert events.count("warm a") == 1
    assert events.index("warm a") < events.index("run a1") < events.index("run a2"), events


def _recorder(events, lock, key):
    def compile_() -> None:
        with lock:
            events.append(f"warm {key}")
    return compile_
