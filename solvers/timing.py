"""The one timed-solve routine: the runner, asv and pytest-benchmark all time through it.

``PreparedSolve`` validates and prepares a batched problem (untimed: dtype conversion,
device placement, solver objects); its ``run`` is one timed solve of the whole batch
(JAX adapters block until the results are ready inside ``run``); ``finish`` turns the raw
answer into a float64 ``BatchSolution`` under the base class's status contract.
``timed_solve`` is prepare, one warm-up run (JIT compile included), ``repeats`` timed runs
and finish.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Adapter
from .errors import ProblemError
from .types import BatchSolution, StandardForm


class PreparedSolve:
    """An adapter with a validated, prepared batch: ``run`` is what a benchmark times."""

    def __init__(self, adapter: Adapter, problem: StandardForm) -> None:
        adapter.validate(problem)
        self.adapter = adapter
        self.prepared: Any = adapter.prepare(problem)

    def run(self) -> Any:
        """One solve of the whole batch; returns when the results are ready."""
        return self.adapter.run(self.prepared)

    def finish(self, raw: Any) -> BatchSolution:
        """The float64 ``BatchSolution`` of a ``run`` (untimed)."""
        return self.adapter.finish(raw, self.prepared)

    def solution(self) -> BatchSolution:
        """``run`` then ``finish``."""
        return self.finish(self.run())


@dataclass(frozen=True)
class TimedSolve:
    """``solution`` of the last timed run; ``first_s`` the first run's seconds (JIT compile
    and warm-up included); ``times_s`` (repeats,) the timed runs' seconds."""

    solution: BatchSolution
    first_s: float
    times_s: np.ndarray


def timed_solve(adapter: Adapter, problem: StandardForm, repeats: int) -> TimedSolve:
    """Prepare ``problem`` (batched, validated by ``check_standard_form``), run it once to
    warm up, then ``repeats`` (>= 1) timed runs; ``perf_counter`` seconds."""
    if not isinstance(repeats, int) or repeats < 1:
        raise ProblemError(f"repeats: expected an integer >= 1, got {repeats!r}")
    ready = PreparedSolve(adapter, problem)
    t0 = time.perf_counter()
    raw = ready.run()
    first = time.perf_counter() - t0
    times = np.empty(repeats)
    for i in range(repeats):
        t0 = time.perf_counter()
        raw = ready.run()
        times[i] = time.perf_counter() - t0
    return TimedSolve(ready.finish(raw), first, times)
