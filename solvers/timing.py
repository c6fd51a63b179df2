"""The one timed-solve routine: the runner, asv and pytest-benchmark all time through it.

``PreparedSolve`` validates and prepares a batched problem (dtype, host to device, solver
objects); its ``run`` is one solve of the whole batch (JAX adapters block until the results
are ready); ``finish`` turns the raw answer into a float64 ``BatchSolution`` on the host under
the base class's status contract.

``timed_solve`` makes two timings of every repeat, in seconds: ``solve`` (``run`` alone, on
data already prepared and, for JAX, on the device) and ``end_to_end`` (host NumPy arrays in,
``BatchSolution`` on the host out: validate, prepare, run and finish, every conversion and
transfer: what a controller pays on every tick). Each repeat prepares afresh, so ``solve``
never reuses what an earlier run left; the first call (compile and warm-up) is timed apart.
``cpu_share`` says whether the machine let the repeats run: see ``cpu_share``."""

from __future__ import annotations

import os
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
    """``solution`` of the last timed repeat; ``first_s`` the first end-to-end call's
    seconds (JIT compile and warm-up included); ``times_s`` (repeats,) the ``solve``
    seconds and ``end_to_end_s`` (repeats,) the end-to-end seconds of each repeat;
    ``solutions`` every timed repeat's answers, each in the problem's own case order;
    ``cpu_share`` the share of the repeats' runnable time this process ran (``cpu_share``)."""

    solution: BatchSolution
    first_s: float
    times_s: np.ndarray
    end_to_end_s: np.ndarray
    solutions: tuple = ()
    cpu_share: float = float("nan")


def scheduler_times() -> tuple[int, dict[int, int]] | None:
    """``(ns of CPU this process used, {thread id: ns it was runnable but waited for a
    CPU})``: the CPU time from the process's clock, the waits from Linux's
    ``/proc/self/task/*/schedstat`` (a thread's waits are counted when it gets the CPU back);
    None where the kernel gives no waits."""
    cpu = time.process_time_ns()
    waits = {}
    try:
        tasks = list(os.scandir("/proc/self/task"))
    except OSError:
        return None
    for task in tasks:
        try:
            with open(os.path.join(task.path, "schedstat")) as file:
                waits[int(task.name)] = int(file.read().split()[1])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile, or no statistics
            continue
    return (cpu, waits) if waits else None


def cpu_share(before: tuple[int, dict[int, int]] | None, after: tuple[int, dict[int, int]] | None) -> float:
    """The share (0 to 1) of the time this process's threads were runnable between two
    ``scheduler_times`` readings that they spent on a CPU: 1 on an idle machine, about 1/2
    where another busy process shares the CPU. Time a thread sleeps or waits (a GPU, a
    file, a sleeping solver) is not runnable time and does not lower it. NaN where either
    reading is missing or nothing ran."""
    if before is None or after is None:
        return float("nan")
    ran = after[0] - before[0]
    waited = sum(wait - before[1].get(tid, 0) for tid, wait in after[1].items())
    return ran / (ran + waited) if ran > 0 and waited >= 0 else float("nan")


def repeat_orders(batch: int, repeats: int, seed: int = 0) -> list[np.ndarray]:
    """The case order of each timed repeat: a fresh permutation of ``batch`` cases per repeat
    (seeded by ``seed`` and the repeat), so that no repeat sees the batch an earlier one saw
    and an adapter that replays earlier answers is caught by their verification."""
    return [np.random.default_rng([seed, i]).permutation(batch) for i in range(repeats)]


def _end_to_end(adapter: Adapter, problem: StandardForm) -> tuple[BatchSolution, float, float]:
    """One end-to-end solve: ``(solution, end-to-end seconds, run seconds)``."""
    t0 = time.perf_counter()
    ready = PreparedSolve(adapter, problem)
    t1 = time.perf_counter()
    raw = ready.run()
    t2 = time.perf_counter()
    solution = ready.finish(raw)
    return solution, time.perf_counter() - t0, t2 - t1


#: the most timed repeats of a cell
REPEATS_MAX = 100_000


def check_repeats(repeats: int) -> int:
    """``repeats`` (timed repeats of a cell) when an integer from 1 to ``REPEATS_MAX``, else
    ``ProblemError``: the one check, read by ``timed_solve`` and by the grid (``bench.engine.grid``)."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= REPEATS_MAX:
        raise ProblemError(f"repeats: expected an integer from 1 to {REPEATS_MAX:,}, got {repeats!r}")
    return repeats


def timed_solve(adapter: Adapter, problem: StandardForm, repeats: int,
                orders: list[np.ndarray] | None = None) -> TimedSolve:
    """One warm-up end-to-end call, then ``repeats`` (>= 1) timed end-to-end calls of
    ``problem`` (batched, validated by ``check_standard_form``), each timed whole and in its
    ``run``; ``perf_counter`` seconds (see the module docstring). ``orders`` (one index
    permutation per repeat, ``repeat_orders``): repeat ``i`` solves the cases in the order
    ``orders[i]`` (reordered before its clock starts) and its answers are put back in the
    problem's order."""
    check_repeats(repeats)
    if orders is not None and len(orders) != repeats:
        raise ProblemError(f"orders: expected one case order per repeat ({repeats}), got {len(orders)}")
    solution, first, _run = _end_to_end(adapter, problem)
    times, whole = np.empty(repeats), np.empty(repeats)
    solutions = []
    scheduled = scheduler_times()
    for i in range(repeats):
        order = None if orders is None else np.asarray(orders[i])
        seen = problem if order is None else problem.take(order)
        solution, whole[i], times[i] = _end_to_end(adapter, seen)
        if order is not None:
            solution = solution.take(np.argsort(order))
        solutions.append(solution)
    share = cpu_share(scheduled, scheduler_times())
    return TimedSolve(solution, first, times, whole, tuple(solutions), share)
