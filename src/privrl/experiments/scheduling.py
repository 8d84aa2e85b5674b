"""The order in which the local process pool starts groups of runs (:func:`privrl.experiments.runner.run_sweep`).

Two rules.

* **Largest first.** Larger groups (lockstep batches, the long units of work) start first, so that
  single runs fill the workers' time around them instead of one long batch starting last and running
  alone (ties keep the planned order).
* **One compile per kernel.** numba compiles a kernel in every process that calls it before its
  on-disk cache holds it: two workers starting runs that need the same uncompiled kernel each pay
  the whole compilation (a cold ``privrl bench --quick --jobs 2`` paid its ≈ 110 CPU-seconds of
  compilation twice). An experiment's ``compile_key(params)`` names the compiled code a run needs
  (runs with equal keys use the same kernels; ``None``: none worth holding for); the first group
  holding a key starts alone, the key's other groups start once it has finished and load the kernels
  it compiled from the cache, and meanwhile the other workers take groups of other keys. The first
  group of each key is the warm-up: no extra work runs, and on a warm cache the rule costs nothing
  but the order. A key whose kernels take long to compile may also name ``warm_ups``: functions that
  each compile a part of them (numba caches each compiled kernel on its own, and a kernel calling a
  cached one loads it): they run first, each as a unit of its own (so in parallel), and the key's
  first group starts after all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from privrl.experiments.registry import get_experiment

__all__ = ["GroupQueue", "WarmUp", "compile_key", "largest_first", "schedule", "warm_up", "warm_ups"]

G = TypeVar("G", bound=Sequence[object])
T = TypeVar("T")


class _Run(Protocol):
    @property
    def experiment(self) -> str: ...
    @property
    def params(self) -> Mapping[str, object]: ...


def compile_key(spec: _Run) -> tuple[str, Hashable] | None:
    """The compiled kernels a run needs: its experiment's ``compile_key`` (None: none to hold for)."""
    key = get_experiment(spec.experiment).compile_key
    value = None if key is None else key(spec.params)
    return None if value is None else (spec.experiment, value)


def warm_ups(key: Hashable) -> Sequence[Callable[[], object]]:
    """The warm-ups of a :func:`compile_key`: its experiment's ``warm_ups``."""
    if not isinstance(key, tuple):
        return ()
    found = get_experiment(key[0]).warm_ups
    return () if found is None else found(key[1])


def largest_first(groups: list[G]) -> list[G]:
    """``groups`` in the order workers take them: the larger first, ties in the planned order."""
    return sorted(groups, key=len, reverse=True)


class GroupQueue:
    """Groups (indices into the planned list, in start order) waiting for a worker, with the compile
    keys each needs: :meth:`take` the next group that may start now, :meth:`finished` when it ended
    (however it ended: a failed group's kernels may be cached all the same)."""

    def __init__(self, keys: Sequence[frozenset[Hashable]]) -> None:
        self._keys = list(keys)
        self._waiting = list(range(len(self._keys)))
        self._compiling: dict[Hashable, int] = {}   # key -> the group compiling it
        self._compiled: set[Hashable] = set()

    def __len__(self) -> int:
        return len(self._waiting)

    def take(self) -> int | None:
        """The first waiting group none of whose keys is being compiled by a running group (it then
        compiles its keys not yet compiled), or None when every waiting group must wait."""
        for pos, i in enumerate(self._waiting):
            if not any(k in self._compiling for k in self._keys[i]):
                del self._waiting[pos]
                self._compiling.update((k, i) for k in self._keys[i] - self._compiled)
                return i
        return None

    def finished(self, i: int) -> None:
        """Group ``i`` ended: the keys it compiled are in the cache."""
        for k in self._keys[i]:
            if self._compiling.get(k) == i:
                del self._compiling[k]
                self._compiled.add(k)


@dataclass(frozen=True)
class WarmUp:
    """One warm-up of a compile key: ``compile()`` compiles part of the key's kernels (a module-level
    function, so that a worker process can run it)."""

    key: Hashable
    compile: Callable[[], object]


def warm_up(unit: WarmUp) -> None:
    """Run a warm-up (in a worker). A failure is left to the runs themselves (they compile what they
    need and report their own errors): the warm-up only saves time."""
    try:
        unit.compile()
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def schedule(groups: list[list[T]], key: Callable[[T], Hashable | None],
             warm_ups: Callable[[Hashable], Sequence[Callable[[], object]]],
             ) -> tuple[list[WarmUp | list[T]], GroupQueue]:
    """The units of work in start order — the warm-ups of every key the groups need, then the groups
    largest first — and their queue: a key's groups wait for its warm-ups, then for its first group."""
    groups = largest_first(groups)
    group_keys = [frozenset(k for k in map(key, group) if k is not None) for group in groups]
    warm: list[WarmUp] = []
    unit_keys: list[frozenset[Hashable]] = []
    needs: dict[Hashable, frozenset[Hashable]] = {}
    for k in dict.fromkeys(k for keys in group_keys for k in keys):   # in order of first use
        compiles = warm_ups(k)
        tags = [("warm-up", k, j) for j in range(len(compiles))]
        warm += [WarmUp(k, f) for f in compiles]
        unit_keys += [frozenset({tag}) for tag in tags]
        needs[k] = frozenset(tags)
    unit_keys += [keys.union(*(needs[k] for k in keys)) for keys in group_keys]
    return [*warm, *groups], GroupQueue(unit_keys)

