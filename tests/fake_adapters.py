"""Test doubles loaded through CONTACTBENCH_PLUGINS: adapters that misbehave on purpose.

They exist to prove the harness survives them; none is ever reported as a real solver.
"""

from __future__ import annotations

import os
import time

import numpy as np

from solvers import Adapter, BatchSolution, Capabilities, Status
from solvers.highs_ import HighsAdapter


class HangingAdapter(Adapter):
    """Never returns from ``run`` (a solver stuck in a loop)."""

    NAME = "fake-hang"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        while True:
            time.sleep(1)


class CrashingAdapter(Adapter):
    """Kills its process from native code's point of view (no Python exception)."""

    NAME = "fake-crash"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        print("fake-crash: about to die", flush=True)
        os._exit(13)


class RaisingAdapter(Adapter):
    """Raises a Python exception from ``run``."""

    NAME = "fake-raise"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        raise FloatingPointError("fake-raise: pivot on zero")


class OverconfidentAdapter(Adapter):
    """Claims OPTIMAL with lam = 0 and y = 0 for every case: must never verify."""

    NAME = "fake-overconfident"
    CAPABILITIES = Capabilities(dtypes=("float64",))

    def run(self, prepared):
        return prepared

    def collect(self, raw, prepared):
        b = prepared.batch
        return BatchSolution(
            x=np.zeros((b, prepared.n)), y_eq=np.zeros((b, prepared.m_eq)), y_ub=np.zeros((b, prepared.m_ub)),
            objective=np.zeros(b), status=np.array([Status.OPTIMAL] * b, dtype=object),
            iterations=np.zeros(b, dtype=np.int64), native_status=np.array(["ok"] * b, dtype=object),
            message=np.array([""] * b, dtype=object),
        )


class SleepyHighs(HighsAdapter):
    """HiGHS that first sleeps ``$FAKE_SLEEP_S`` seconds per ``run`` (to be killed mid-run)."""

    NAME = "fake-sleepy"

    def run(self, prepared):
        time.sleep(float(os.environ.get("FAKE_SLEEP_S", "0")))
        return super().run(prepared)


ADAPTERS = [HangingAdapter, CrashingAdapter, RaisingAdapter, OverconfidentAdapter, SleepyHighs]
