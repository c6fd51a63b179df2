"""Adapter behaviour the conformance suite does not cover (see tests/test_conformance.py for the cases)."""

import numpy as np
import pytest

import solvers


@pytest.mark.needs("linrax")
def test_linrax_dtype_is_honoured_within_one_process():
    """float32 and float64 solves in one process compute in their own precision."""
    problem = ([1.0], [[3.0]], [1.0], np.zeros((0, 1)), np.zeros(0))  # x = 1/3
    s32 = solvers.get("linrax", dtype="float32").solve(*problem)
    s64 = solvers.get("linrax", dtype="float64").solve(*problem)
    assert s64.x[0] == pytest.approx(1.0 / 3.0, abs=1e-15)
    assert s32.x[0] == float(np.float32(1.0) / np.float32(3.0))  # rounded to float32
    assert s32.x[0] != s64.x[0]


@pytest.mark.parametrize("family, kind", [("planar-box", "lp1"), ("quadruped", "qp")])
# (proxsuite is left out: it answers one case in about 20 solves of the same input in the same
# order differently, whatever came before it; see docs/adapter-findings.md)
@pytest.mark.parametrize("name", [n for n, cls in solvers.adapters().items()
                                  if not cls.CAPABILITIES.batched and n not in ("exact-planar", "proxsuite")])
def test_a_loop_adapters_answer_does_not_depend_on_the_case_solved_before_it(name, family, kind):
    """Each timed repeat sees the cases in a fresh order: an adapter that carries a warm start
    from one case to the next (OSQP's ``update`` did) answers differently per order."""
    import numpy as np

    import problems
    from solvers import check_standard_form
    from solvers.timing import repeat_orders

    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    caps = solvers.adapters()[name].CAPABILITIES
    if not (caps.qp if kind == "qp" else caps.lp):
        pytest.skip(f"{name} solves no {kind} problems")
    batch = problems.generate(family, 16, 0, kind=kind)
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    adapter = solvers.get(name)
    first = adapter.solve_batch_checked(problem)
    for order in repeat_orders(16, 2, 0):
        again = adapter.solve_batch_checked(problem.take(order)).take(np.argsort(order))
        assert (again.status == first.status).all()
        np.testing.assert_allclose(again.x, first.x, atol=1e-6, rtol=1e-6)


@pytest.mark.serial
def test_cpu_share_is_one_alone_and_about_half_beside_a_busy_process_on_the_same_cpu():
    """``solvers.timing.cpu_share`` over this thread's runnable time: near 1 spinning alone
    on a CPU and spinning after a sleep (a sleep is no contention), about 1/2 spinning
    beside a CPU-bound process on the same CPU. (Serial: it needs the CPU to itself.)"""
    import os
    import subprocess
    import sys
    import time

    from solvers.timing import cpu_share, scheduler_times

    def share(sleep: float = 0.0) -> float:
        before = scheduler_times()
        time.sleep(sleep)
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return cpu_share(before, scheduler_times())

    if scheduler_times() is None:
        pytest.skip("this kernel gives no per-thread scheduler times (/proc/self/task/*/schedstat)")
    affinity = os.sched_getaffinity(0)
    cpu = min(affinity)
    os.sched_setaffinity(0, {cpu})
    try:
        alone, after_sleep = share(), share(sleep=0.5)
        hog = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
        try:
            time.sleep(0.2)  # (the interpreter started)
            beside = share()
        finally:
            hog.kill()
            hog.wait()
    finally:
        os.sched_setaffinity(0, affinity)
    assert alone > 0.9 and after_sleep > 0.9, (alone, after_sleep)
    assert 0.3 < beside < 0.7, beside
    assert np.isnan(cpu_share(None, scheduler_times())) and np.isnan(cpu_share((0, {}), (0, {})))
